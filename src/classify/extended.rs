//! The extended classifier (spec 10.5): one pass over the symbols of a
//! text that steps the `EXTENDED` tables (retryable, usage limit, the
//! added overflow patterns, the hint names of 10.4 and the window words),
//! the window scanner, and the classic overflow tables without their
//! anchored pattern.

use super::dfa::{self, EXTENDED, HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT, WINDOW_WORD_BITS};
use super::window::Windows;
use super::{overflow_step, Classification, Tails};

/// The labels among `want` (`RETRYABLE`, `USAGE_LIMIT`, `OVERFLOW`, `HINT`)
/// that the symbols have under the extended patterns. `RETRYABLE` is the
/// retryable pattern alone; the usage-limit pattern makes a text
/// retryable in [`labels`].
#[inline(always)]
pub(super) fn scan(mut want: u8, symbols: impl Iterator<Item = u8>) -> u8 {
    let mut found = 0;
    let mut states = [0u8; dfa::EXTENDED_LEN];
    let mut words = [0u8; dfa::WORDS_LEN];
    let mut tails = Tails::default();
    let mut windows = Windows::default();
    // Characters read so far: where a match reported now ends.
    let mut pos: usize = 0;
    for sym in symbols {
        let mut out = 0;
        for (state, table) in states.iter_mut().zip(EXTENDED) {
            if table.labels & want != 0 {
                *state = table.next(*state, sym);
                if *state >= table.special {
                    out |= table.output(*state);
                }
            }
        }
        found |= out & want & !WINDOW_WORD_BITS;
        if out & WINDOW_WORD_BITS != 0 && want & USAGE_LIMIT != 0 && windows.words(out, pos) {
            found |= USAGE_LIMIT;
        }
        if sym == b'\n' {
            windows.line_break();
        }
        // The twenty unanchored overflow patterns of spec 3.3.
        if want & OVERFLOW != 0 && overflow_step(&mut words, &mut tails, sym, OVERFLOW) {
            found |= OVERFLOW;
        }
        want &= !found;
        if want == 0 {
            return found;
        }
        pos = pos.saturating_add(1);
    }
    // Matches that end with the text.
    let mut out = 0;
    for (state, table) in states.iter().zip(EXTENDED) {
        if table.labels & want != 0 {
            out |= table.eoi(*state);
        }
    }
    found |= out & want & !WINDOW_WORD_BITS;
    if out & WINDOW_WORD_BITS != 0 && want & USAGE_LIMIT != 0 && windows.words(out, pos) {
        found |= USAGE_LIMIT;
    }
    found
}

/// The [`Classification`] of an extended scan's findings (spec 10.5: a
/// usage-limit text is retryable too).
pub(super) fn labels(found: u8, empty: bool, hint_ms: Option<u64>) -> Classification {
    let overflow = found & OVERFLOW != 0;
    let usage_limit = found & USAGE_LIMIT != 0;
    Classification {
        retryable: !empty && !overflow && (found & RETRYABLE != 0 || usage_limit),
        overflow,
        usage_limit,
        hint_ms: hint_ms.filter(|_| found & HINT != 0),
    }
}
