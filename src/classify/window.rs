//! The window alternatives of the extended usage-limit pattern (spec 10.5):
//!
//! ```text
//! \baccount(?:'s)?\b[^\n]{0,80}\brate.?limit\b|\brate.?limit\b[^\n]{0,80}\baccount\b
//! ```
//!
//! A DFA would need a state per distance for `[^\n]{0,80}`. Only the
//! nearest preceding first word matters, though: the extended tables
//! report where each whole-word variant ends (`\baccount\b`,
//! `\baccount's\b`, `\bratelimit\b`, `\brate.limit\b`, with its length),
//! and [`Windows`] keeps, per alternative, where its first word last
//! ended on the current line. A second word matches when it starts at most
//! `gap` characters after that end. A later end is always at least as
//! close, and the two words of an alternative never overlap (no variant of
//! one can start inside a variant of the other), so that one end is all
//! the state there is. Positions count characters (one per symbol).

use super::dfa::{WINDOWS, WINDOWS_LEN, WINDOW_WORDS};

/// Per alternative, where its first word last ended on the current line.
#[derive(Default)]
pub(super) struct Windows {
    ends: [Option<usize>; WINDOWS_LEN],
}

impl Windows {
    /// The window words of `out` (output bits of the extended tables)
    /// ended at `pos` (in characters from the start of the text); whether
    /// one of them completes an alternative.
    pub(super) fn words(&mut self, out: u8, pos: usize) -> bool {
        let mut matched = false;
        // Second words first: a word ending here cannot start after itself.
        for w in WINDOW_WORDS.iter().filter(|w| out & w.bit != 0) {
            let Some(start) = pos.checked_sub(usize::from(w.len)) else {
                continue;
            };
            for (end, window) in self.ends.iter().zip(&WINDOWS) {
                if window.second == w.word {
                    matched |= end
                        .is_some_and(|end| start >= end && start - end <= usize::from(window.gap));
                }
            }
        }
        for w in WINDOW_WORDS.iter().filter(|w| out & w.bit != 0) {
            for (end, window) in self.ends.iter_mut().zip(&WINDOWS) {
                if window.first == w.word {
                    *end = Some(pos);
                }
            }
        }
        matched
    }

    /// Whether a first word that ended before `pos` (in characters) can
    /// still complete its alternative with a second word that starts at
    /// `pos` or later.
    #[cfg(feature = "prefilter")]
    #[inline(always)]
    pub(super) fn pending(&self, pos: usize) -> bool {
        let mut any = false;
        for (end, window) in self.ends.iter().zip(&WINDOWS) {
            any |= end.is_some_and(|end| pos.saturating_sub(end) <= usize::from(window.gap));
        }
        any
    }

    /// A `\n`: no window reaches across it.
    pub(super) fn line_break(&mut self) {
        self.ends = [None; WINDOWS_LEN];
    }
}
