//! The extended tables unpacked (feature `prefilter`, on std).
//!
//! A compressed table ([`Delayed`](super::table::Delayed)) finds a
//! transition through a chain of four loads and a comparison; unpacked, it
//! is two loads (the symbol's class, then the transition), one cache line
//! per state. That is 16 KB a table, computed from the compressed tables at
//! first use, on the heap (see [`super::heap`]): too much for a firmware's
//! flash, nothing for a std process.
//!
//! The classic overflow word tables (`dfa::WORDS`), which the extended
//! scan steps too, are unpacked alongside, in the same allocation
//! ([`Unpacked`], 130 KB). For the runs of ASCII characters that the
//! extended scan steps between two reports (`super::extended`), the eight
//! tables are unpacked once more by character rather than by class (256
//! KB): a step there is one load indexed by the state and the character,
//! from one base address, the eight states in registers.

extern crate std;

use std::boxed::Box;
use std::sync::OnceLock;

use super::dfa::{self, EXTENDED, WORDS};
use super::symbol::SYMBOLS;

/// Classes a row holds.
const CLASSES: usize = 64;

/// The tables [`Unpacked`] holds: `EXTENDED`, then `WORDS`.
pub(super) const FAST: usize = dfa::EXTENDED_LEN + dfa::WORDS_LEN;

/// Rows of one table: one per possible state.
const STATES: usize = 256;

/// Bytes of [`Unpacked`]: a row of `CLASSES` per state of each table, then
/// the symbols' classes, eight bytes a symbol.
const LEN: usize = FAST * STATES * CLASSES + 256 * FAST;

/// Bytes of [`Unpacked`]'s ASCII rows: a row of 128 per state of each
/// table.
const ASCII_LEN: usize = FAST * STATES * 128;

/// Where the symbols' classes start in [`Unpacked`].
const CLASSES_AT: usize = FAST * STATES * CLASSES;

// Every table fits in rows of `CLASSES` (and its states are bytes); a
// symbol's classes in the eight tables are eight bytes of a row.
const _: () = {
    assert!(FAST == 8);
    let mut k = 0;
    while k < dfa::EXTENDED_LEN {
        assert!(EXTENDED[k].default.len() <= CLASSES);
        k += 1;
    }
    let mut k = 0;
    while k < dfa::WORDS_LEN {
        assert!(WORDS[k].trans.len() / WORDS[k].states <= CLASSES);
        assert!(WORDS[k].states <= STATES);
        k += 1;
    }
};

/// The first special state of each table of [`Unpacked`].
pub(super) const SPECIAL: [u8; FAST] = {
    let mut special = [0; FAST];
    let mut k = 0;
    while k < dfa::EXTENDED_LEN {
        special[k] = EXTENDED[k].special;
        k += 1;
    }
    let mut k = 0;
    while k < dfa::WORDS_LEN {
        special[dfa::EXTENDED_LEN + k] = WORDS[k].special;
        k += 1;
    }
    special
};

/// `EXTENDED` and `WORDS` unpacked (130 KB), and their ASCII transitions
/// without the classes (256 KB).
pub(super) struct Unpacked {
    /// `rows[(k * STATES + state) * CLASSES + class]`: the state after
    /// `state` of table `k` reads a symbol of `class`; from `CLASSES_AT`
    /// on, the classes: `rows[CLASSES_AT + sym * 8 + k]` is the class of
    /// `sym` in table `k` (0 for the bytes that are no symbol). One flat
    /// array: a loop that steps all eight tables needs one base address.
    rows: Box<Rows>,
    /// `ascii[(k * STATES + state) * 128 + c]`: the state after `state` of
    /// table `k` reads the ASCII character `c` (the same transitions,
    /// without the class: a step is one load, two cache lines a state).
    ascii: Box<AsciiRows>,
}

impl Unpacked {
    fn new() -> Self {
        let mut this = Unpacked {
            rows: super::heap::filled(0),
            ascii: super::heap::filled(0),
        };
        let mut k = 0;
        for t in EXTENDED {
            this.fill(k, t.classes, t.base.len(), |s, sym| t.next(s, sym));
            k += 1;
        }
        for t in WORDS {
            this.fill(k, t.classes, t.states, |s, sym| t.next(s, sym));
            k += 1;
        }
        this
    }

    /// Fills table `k` from `next`, with `states` states.
    fn fill(
        &mut self,
        k: usize,
        classes: &[u8; SYMBOLS],
        states: usize,
        next: impl Fn(u8, u8) -> u8,
    ) {
        // One symbol per class.
        let mut reps = [None; CLASSES];
        for (sym, &class) in classes.iter().enumerate() {
            if let Some(r) = reps.get_mut(usize::from(class)) {
                r.get_or_insert(sym as u8);
            }
            if let Some(c) = self.rows.get_mut(CLASSES_AT + sym * FAST + k) {
                *c = class;
            }
        }
        let rows = self
            .rows
            .chunks_exact_mut(CLASSES)
            .skip(k * STATES)
            .take(states);
        for (s, row) in rows.enumerate() {
            for (t, r) in row.iter_mut().zip(reps) {
                *t = r.map_or(0, |sym| next(s as u8, sym));
            }
        }
        // The ASCII rows from the rows by class just built (a copy, not a
        // step of the compressed table per entry).
        let by_class = self.rows.chunks_exact(CLASSES).skip(k * STATES);
        let rows = self
            .ascii
            .chunks_exact_mut(128)
            .skip(k * STATES)
            .take(states);
        for (row, from) in rows.zip(by_class) {
            for (t, &class) in row.iter_mut().zip(classes) {
                *t = from.get(usize::from(class)).map_or(0, |&to| to);
            }
        }
    }

    /// The state after `state` of table `k` reads `sym`.
    #[inline(always)]
    pub(super) fn step(&self, k: usize, state: u8, sym: u8) -> u8 {
        next(&self.rows, k, state, class(&self.rows, k, sym))
    }
}

/// The rows of [`Unpacked`], for loops that keep one base address.
pub(super) type Rows = [u8; LEN];

/// The ASCII rows of [`Unpacked`].
pub(super) type AsciiRows = [u8; ASCII_LEN];

impl Unpacked {
    /// The rows, to step with [`class`] and [`next`].
    #[cfg(test)]
    pub(super) fn rows(&self) -> &Rows {
        &self.rows
    }

    /// The ASCII rows, to step with [`next_ascii`].
    #[inline(always)]
    pub(super) fn ascii(&self) -> &AsciiRows {
        &self.ascii
    }
}

/// The class of `sym` in table `k` of [`Unpacked`] (its `rows`).
#[inline(always)]
pub(super) fn class(rows: &Rows, k: usize, sym: u8) -> u8 {
    rows[CLASSES_AT + usize::from(sym) * FAST + k % FAST]
}

/// The state after `state` of table `k` of [`Unpacked`] (its `rows`)
/// reads a symbol of `class`.
#[inline(always)]
pub(super) fn next(rows: &Rows, k: usize, state: u8, class: u8) -> u8 {
    rows[((k % FAST) * STATES + usize::from(state)) * CLASSES + usize::from(class) % CLASSES]
}

/// The state after `state` of table `k` of [`Unpacked`] (its `ascii`
/// rows) reads the ASCII character `c`.
#[inline(always)]
pub(super) fn next_ascii(ascii: &AsciiRows, k: usize, state: u8, c: u8) -> u8 {
    ascii[((k % FAST) * STATES + usize::from(state)) * 128 + usize::from(c % 128)]
}

/// The tables unpacked, at first use.
pub(super) fn unpacked() -> &'static Unpacked {
    static U: OnceLock<Unpacked> = OnceLock::new();
    U.get_or_init(Unpacked::new)
}

/// One extended table, unpacked: table `k` of [`Unpacked`].
pub(super) struct Dense {
    tables: &'static Unpacked,
    k: usize,
}

impl Dense {
    /// The state after `state` reads `sym`, as [`super::table::Delayed::next`]
    /// gives it.
    #[inline(always)]
    pub(super) fn next(&self, state: u8, sym: u8) -> u8 {
        self.tables.step(self.k, state, sym)
    }
}

/// The extended tables, unpacked at first use.
pub(super) fn extended() -> &'static [Dense; dfa::EXTENDED_LEN] {
    static D: OnceLock<[Dense; dfa::EXTENDED_LEN]> = OnceLock::new();
    D.get_or_init(|| {
        let tables = unpacked();
        core::array::from_fn(|k| Dense { tables, k })
    })
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
                    if sym < 128 {
                        assert_eq!(next_ascii(unpacked().ascii(), d.k, s, sym), t.next(s, sym));
                    }
                }
            }
        }
        let u = unpacked();
        for (k, t) in WORDS.iter().enumerate() {
            let k = dfa::EXTENDED_LEN + k;
            assert_eq!(SPECIAL[k], t.special);
            for s in 0..t.states as u8 {
                for sym in 0..SYMBOLS as u8 {
                    assert_eq!(u.step(k, s, sym), t.next(s, sym));
                    assert_eq!(
                        next(u.rows(), k, s, class(u.rows(), k, sym)),
                        t.next(s, sym)
                    );
                    if sym < 128 {
                        assert_eq!(next_ascii(u.ascii(), k, s, sym), t.next(s, sym));
                    }
                }
            }
        }
    }
}
