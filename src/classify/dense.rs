//! The extended tables unpacked (feature `prefilter`, on std).
//!
//! A compressed table ([`Delayed`]) finds a transition through a chain of
//! four loads and a comparison; unpacked, it is two loads (the symbol's
//! class, then the transition), one cache line per state. That is 16 KB a
//! table, computed from the compressed tables at first use, on the heap
//! (see [`super::heap`]): too much for a firmware's flash, nothing for a
//! std process.

extern crate std;

use std::boxed::Box;
use std::sync::OnceLock;

use super::dfa::{self, EXTENDED};
use super::symbol::SYMBOLS;
use super::table::Delayed;

/// Classes a row holds.
const CLASSES: usize = 64;

// Every table fits in rows of `CLASSES` (and its states are bytes).
const _: () = {
    let mut k = 0;
    while k < dfa::EXTENDED_LEN {
        assert!(EXTENDED[k].default.len() <= CLASSES);
        k += 1;
    }
};

/// One extended table, unpacked.
pub(super) struct Dense {
    classes: &'static [u8; SYMBOLS],
    /// `rows[state][class]`: the state after `state` reads a symbol of
    /// `class` (on the heap: see [`super::heap`]).
    rows: Box<[[u8; CLASSES]; 256]>,
}

impl Dense {
    fn new(table: &'static Delayed) -> Self {
        let mut this = Dense {
            classes: table.classes,
            rows: super::heap::filled([0; CLASSES]),
        };
        // One symbol per class.
        let mut reps = [None; CLASSES];
        for sym in 0..SYMBOLS as u8 {
            if let Some(r) = reps.get_mut(usize::from(table.classes[usize::from(sym)])) {
                r.get_or_insert(sym);
            }
        }
        for (s, row) in this.rows.iter_mut().take(table.base.len()).enumerate() {
            for (t, r) in row.iter_mut().zip(reps) {
                *t = r.map_or(0, |sym| table.next(s as u8, sym));
            }
        }
        this
    }

    /// The state after `state` reads `sym`, as [`Delayed::next`] gives it.
    #[inline(always)]
    pub(super) fn next(&self, state: u8, sym: u8) -> u8 {
        let class = self.classes.get(usize::from(sym)).map_or(0, |&c| c);
        self.rows[usize::from(state)][usize::from(class) % CLASSES]
    }
}

/// The extended tables, unpacked at first use.
pub(super) fn extended() -> &'static [Dense; dfa::EXTENDED_LEN] {
    static D: OnceLock<[Dense; dfa::EXTENDED_LEN]> = OnceLock::new();
    D.get_or_init(|| EXTENDED.map(Dense::new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_as_the_compressed_tables() {
        for (d, t) in extended().iter().zip(EXTENDED) {
            for s in 0..t.base.len() as u8 {
                for sym in 0..SYMBOLS as u8 {
                    assert_eq!(d.next(s, sym), t.next(s, sym));
                }
            }
        }
    }
}
