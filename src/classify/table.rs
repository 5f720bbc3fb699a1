//! The classifier's tables (with the extended classifier's window
//! alternatives).
//!
//! A table is a minimized DFA over the symbols of [`super::symbol`], one per
//! character of the text.
//!
//! States are bytes. Those at or above `special` are the dead state (no
//! match can follow) or report the patterns that have a match ending right
//! after the current character.

use super::symbol::SYMBOLS;

/// One table; the start state is 0.
pub(super) struct Table {
    /// Symbol to class.
    pub(super) classes: &'static [u8; SYMBOLS],
    /// Number of states: the length of a column of `trans`.
    pub(super) states: usize,
    /// First special state.
    pub(super) special: u8,
    /// The dead state, when the table has one.
    pub(super) dead: Option<u8>,
    /// Transitions, column by column: `trans[class * states + state]` (the
    /// class part is known before the state is).
    pub(super) trans: &'static [u8],
    /// Outputs of the special states, from `special` on.
    pub(super) out: &'static [u8],
}

impl Table {
    /// The state after `state` reads `sym`. (Out-of-range indexes cannot
    /// come from the generated tables; they would read as the start state.)
    #[inline(always)]
    pub(super) fn next(&self, state: u8, sym: u8) -> u8 {
        let class = self.classes.get(usize::from(sym)).map_or(0, |&c| c);
        self.trans
            .get(usize::from(class) * self.states + usize::from(state))
            .map_or(0, |&s| s)
    }

    /// The output bits of a state.
    #[inline(always)]
    pub(super) fn output(&self, state: u8) -> u8 {
        state
            .checked_sub(self.special)
            .and_then(|i| self.out.get(usize::from(i)))
            .map_or(0, |&o| o)
    }
}

/// A compressed table whose patterns look at the next character (`\b`,
/// spec 10.5): the extended classifier's.
///
/// Its matches are reported one character late: a special state's `out`
/// gives the patterns with a match ending right *before* the character
/// just read, and `eoi` those with a match ending where the text ends, if
/// it ends there.
///
/// Its transitions are compressed: per class a default target, and the
/// transitions that differ from it in a "double array". The one of
/// `(state, class)` is in slot `base[state] + class` when that slot
/// belongs to `state`; a slot is two bytes, its owner and its target, and
/// a free slot's owner is 255 (no state: these tables have at most 255).
#[cfg(feature = "extended")]
pub(super) struct Delayed {
    /// Symbol to class.
    pub(super) classes: &'static [u8; SYMBOLS],
    /// Per class, the target of the transitions that are not in a slot.
    pub(super) default: &'static [u8],
    /// Per state, where its slots start.
    pub(super) base: &'static [u16],
    /// (owner, target) pairs, flattened.
    pub(super) slots: &'static [u8],
    /// First special state.
    pub(super) special: u8,
    /// Outputs of the special states, from `special` on.
    pub(super) out: &'static [u8],
    /// End-of-text outputs of the special states, from `special` on.
    pub(super) eoi: &'static [u8],
    /// The labels the table can report (its window words count as the
    /// usage limit): a scan that wants none of them skips the table.
    pub(super) labels: u8,
}

#[cfg(feature = "extended")]
impl Delayed {
    /// The state after `state` reads `sym`. (Out-of-range indexes cannot
    /// come from the generated tables; they would read as the start state.)
    #[inline(always)]
    pub(super) fn next(&self, state: u8, sym: u8) -> u8 {
        let class = self.classes.get(usize::from(sym)).map_or(0, |&c| c);
        let default = self.default.get(usize::from(class)).map_or(0, |&d| d);
        let base = self.base.get(usize::from(state)).map_or(0, |&b| b);
        let slot = (usize::from(base) + usize::from(class)) * 2;
        match self.slots.get(slot..slot + 2) {
            Some(&[owner, target]) if owner == state => target,
            _ => default,
        }
    }

    /// The output bits of a state (matches that ended before the character
    /// just read).
    #[inline(always)]
    pub(super) fn output(&self, state: u8) -> u8 {
        state
            .checked_sub(self.special)
            .and_then(|i| self.out.get(usize::from(i)))
            .map_or(0, |&o| o)
    }

    /// The end-of-text output bits of a state.
    #[inline(always)]
    pub(super) fn eoi(&self, state: u8) -> u8 {
        state
            .checked_sub(self.special)
            .and_then(|i| self.eoi.get(usize::from(i)))
            .map_or(0, |&o| o)
    }
}

/// A whole-word variant of a window word (spec 10.5, see `super::window`):
/// `\bVARIANT\b` ends where the extended tables show `bit`.
#[cfg(feature = "extended")]
pub(super) struct WindowWord {
    /// The output bit.
    pub(super) bit: u8,
    /// The word (an index shared by `Window::first` and
    /// `Window::second`).
    pub(super) word: u8,
    /// The variant's length in characters.
    pub(super) len: u8,
}

/// A window alternative (see `super::window`): `\bFIRST\b[^\n]{0,GAP}\bSECOND\b`.
#[cfg(feature = "extended")]
pub(super) struct Window {
    /// The first word.
    pub(super) first: u8,
    /// The second word.
    pub(super) second: u8,
    /// The most characters between the end of the first word and the start
    /// of the second.
    pub(super) gap: u8,
}
