//! The curated classifier (spec 13.2): one pass over the symbols of a text
//! that steps the `CURATED` tables (retryable, usage limit, overflow), the
//! `GUARDS` (the never-retried pattern, the throttle pattern and `/too many
//! tokens/i`) and the window words' tables, whose word ends the window
//! scanner pairs; and a search of the text's bytes for the alternatives
//! written in other scripts than ASCII (the tables read every such
//! character as one symbol). A literal of whole characters occurs in the
//! lossy reading of some bytes exactly where it occurs in the bytes: an
//! invalid sequence never swallows a leading byte, so the search is the
//! same on both entry points.

use super::dfa::{
    CURATED, CURATED_LEN, CURATED_LITERALS, CURATED_WINDOWS, CURATED_WINDOWS_LEN, CURATED_WORDS,
    CURATED_WORD_TABLE, CURATED_WORD_TABLES, GUARDS, GUARDS_LEN, NEVER, OVERFLOW, RETRYABLE,
    THROTTLE, TOO_MANY_TOKENS, USAGE_LIMIT,
};
use super::Classification;

use super::LONG_WAIT_MS;

/// Everything the curated patterns find in a text: the bits `RETRYABLE`,
/// `USAGE_LIMIT` and `OVERFLOW` (but `/too many tokens/i`), `NEVER`,
/// `THROTTLE` and `TOO_MANY_TOKENS`. `bytes` are the text's bytes (raw
/// or valid), `symbols` their reading.
pub(super) fn scan(bytes: &[u8], symbols: impl Iterator<Item = u8>) -> u8 {
    let mut found = literals(bytes);
    let mut states = [0u8; CURATED_LEN];
    let mut guards = [0u8; GUARDS_LEN];
    let mut words = [0u8; CURATED_WORD_TABLES];
    let mut windows = Windows::default();
    // Characters read so far: where a match reported now ends.
    let mut pos: usize = 0;
    for sym in symbols {
        for (state, table) in states.iter_mut().zip(CURATED) {
            *state = table.next(*state, sym);
            if *state >= table.special {
                found |= table.output(*state);
            }
        }
        for (state, table) in guards.iter_mut().zip(GUARDS) {
            *state = table.next(*state, sym);
            if *state >= table.special {
                found |= table.output(*state);
            }
        }
        let mut outs = [0u8; CURATED_WORD_TABLES];
        for ((state, table), out) in words.iter_mut().zip(CURATED_WORD_TABLE).zip(&mut outs) {
            *state = table.next(*state, sym);
            if *state >= table.special {
                *out = table.output(*state);
            }
        }
        if outs.iter().any(|&o| o != 0) {
            found |= windows.words(&outs, pos);
        }
        if sym == b'\n' {
            windows.line_break();
        }
        pos = pos.saturating_add(1);
    }
    // Matches that end with the text.
    for (&state, table) in states.iter().zip(CURATED) {
        found |= table.eoi(state);
    }
    for (&state, table) in guards.iter().zip(GUARDS) {
        found |= table.eoi(state);
    }
    let mut outs = [0u8; CURATED_WORD_TABLES];
    for ((&state, table), out) in words.iter().zip(CURATED_WORD_TABLE).zip(&mut outs) {
        *out = table.eoi(state);
    }
    found | windows.words(&outs, pos)
}

/// The bits of the literal alternatives that occur in `bytes`.
fn literals(bytes: &[u8]) -> u8 {
    let mut found = 0;
    for &(literal, bit) in &CURATED_LITERALS {
        let needle = literal.as_bytes();
        if found & bit == 0
            && !needle.is_empty()
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            found |= bit;
        }
    }
    found
}

/// Per window alternative, where a variant of its first word last ended
/// on the current line (in characters). Only the nearest end matters: a
/// later end is at least as close, and the two words of an alternative
/// never overlap.
#[derive(Default)]
struct Windows {
    ends: [Option<usize>; CURATED_WINDOWS_LEN],
}

impl Windows {
    /// The word variants that `outs` (per word table, its output bits)
    /// report ended at `pos`; the labels of the alternatives they complete.
    fn words(&mut self, outs: &[u8; CURATED_WORD_TABLES], pos: usize) -> u8 {
        let reported = |table: u8, bit: u8| {
            outs.get(usize::from(table))
                .is_some_and(|&out| out & bit != 0)
        };
        let mut labels = 0;
        // Second words first: a word ending here cannot start after itself.
        for (id, &(table, bit, len)) in CURATED_WORDS.iter().enumerate() {
            if !reported(table, bit) {
                continue;
            }
            let Some(start) = pos.checked_sub(usize::from(len)) else {
                continue;
            };
            for (end, &(_, second, gap, label)) in self.ends.iter().zip(&CURATED_WINDOWS) {
                if second.iter().any(|&s| usize::from(s) == id)
                    && end.is_some_and(|end| start >= end && start - end <= usize::from(gap))
                {
                    labels |= label;
                }
            }
        }
        for (id, &(table, bit, _)) in CURATED_WORDS.iter().enumerate() {
            if !reported(table, bit) {
                continue;
            }
            for (end, &(first, ..)) in self.ends.iter_mut().zip(&CURATED_WINDOWS) {
                if first.iter().any(|&f| usize::from(f) == id) {
                    *end = Some(pos);
                }
            }
        }
        labels
    }

    /// A `\n`: no window reaches across it.
    fn line_break(&mut self) {
        self.ends = [None; CURATED_WINDOWS_LEN];
    }
}

/// Whether the found bits make an overflow (spec 13.2: `/too many
/// tokens/i` counts only where the throttle pattern does not match).
pub(super) const fn overflow(found: u8) -> bool {
    found & OVERFLOW != 0 || (found & TOO_MANY_TOKENS != 0 && found & THROTTLE == 0)
}

/// Whether the found bits match the retryable test of rule 4 with the
/// sixth rule (the retryable or the usage-limit pattern, and not the
/// never-retried one).
pub(super) const fn retryable(found: u8) -> bool {
    found & (RETRYABLE | USAGE_LIMIT) != 0 && found & NEVER == 0
}

/// The [`Classification`] of a curated scan's findings: a usage-limit
/// text is retryable too, a never-retried text never, and a retryable
/// text whose hint (`hint_ms`, spec 13.2's rules) is at least
/// [`LONG_WAIT_MS`] is a usage limit.
pub(super) fn labels(found: u8, empty: bool, hint_ms: Option<u64>) -> Classification {
    let overflow = overflow(found);
    let retryable = !empty && !overflow && retryable(found);
    Classification {
        retryable,
        overflow,
        usage_limit: found & USAGE_LIMIT != 0
            || retryable && hint_ms.is_some_and(|h| h >= LONG_WAIT_MS),
        hint_ms,
    }
}
