//! The extended classifier (spec 10.5): one pass over the symbols of a
//! text that steps the `EXTENDED` tables (retryable, usage limit, the
//! added overflow patterns, the hint names of 10.4 and the window words),
//! the window scanner, and the classic overflow tables without their
//! anchored pattern.

#[cfg(feature = "prefilter")]
extern crate std;

use super::dfa::{self, EXTENDED, HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT, WINDOW_WORD_BITS};
use super::window::Windows;
use super::{overflow_step, Classification, Tails};

/// The labels among `want` (`RETRYABLE`, `USAGE_LIMIT`, `OVERFLOW`, `HINT`)
/// that the symbols have under the extended patterns. `RETRYABLE` is the
/// retryable pattern alone; the usage-limit pattern makes a text
/// retryable in [`labels`].
#[cfg_attr(all(feature = "prefilter", not(test)), allow(dead_code))]
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

/// [`scan`] over the characters of `text`: on std with feature
/// `prefilter`, long texts take the factor search of `super::factors`
/// (or, without Teddy, the skipping scan of `super::prefilter`).
#[inline(always)]
pub(super) fn scan_str(want: u8, text: &str) -> u8 {
    #[cfg(feature = "prefilter")]
    if text.len() >= super::factors::MIN_LEN {
        if let Some(found) = super::factors::scan_with::<Scan>(want, text) {
            return found;
        }
    }
    #[cfg(feature = "prefilter")]
    return if text.len() >= super::prefilter::MIN_LEN {
        super::prefilter::scan(Scan::new(want), text.as_bytes())
    } else {
        Scan::new(want).run(super::table::symbols(text))
    };
    #[cfg(not(feature = "prefilter"))]
    scan(want, super::table::symbols(text))
}

/// [`scan`] over the lossy reading of `bytes`.
#[inline(always)]
pub(super) fn scan_bytes(want: u8, bytes: &[u8]) -> u8 {
    // The factor search needs characters: valid UTF-8 takes it, the rest
    // the skipping scan (the lossy reading of invalid bytes is its own).
    #[cfg(feature = "prefilter")]
    if bytes.len() >= super::factors::MIN_LEN {
        if let Ok(text) = core::str::from_utf8(bytes) {
            return scan_str(want, text);
        }
    }
    #[cfg(feature = "prefilter")]
    return if bytes.len() >= super::prefilter::MIN_LEN {
        super::prefilter::scan(Scan::new(want), bytes)
    } else {
        Scan::new(want).run(super::table::lossy_symbols(bytes))
    };
    #[cfg(not(feature = "prefilter"))]
    scan(want, super::table::lossy_symbols(bytes))
}

/// [`scan`] as a state between two symbols, for the skipping scan of
/// `prefilter` (its tests keep the two equal).
#[cfg(feature = "prefilter")]
pub(super) struct Scan {
    /// The labels still looked for.
    pub(super) want: u8,
    /// The labels found.
    pub(super) found: u8,
    /// States of `EXTENDED`.
    pub(super) states: [u8; dfa::EXTENDED_LEN],
    /// States of `dfa::WORDS`.
    pub(super) words: [u8; dfa::WORDS_LEN],
    /// The running tails.
    pub(super) tails: Tails,
    /// The window alternatives.
    windows: Windows,
    /// Characters read so far: where a match reported now ends.
    pub(super) pos: usize,
    /// `EXTENDED`, unpacked.
    dense: &'static [super::dense::Dense; dfa::EXTENDED_LEN],
}

#[cfg(feature = "prefilter")]
impl Scan {
    #[inline(always)]
    pub(super) fn new(want: u8) -> Self {
        Scan {
            want,
            found: 0,
            states: [0; dfa::EXTENDED_LEN],
            words: [0; dfa::WORDS_LEN],
            tails: Tails::default(),
            windows: Windows::default(),
            pos: 0,
            dense: super::dense::extended(),
        }
    }

    /// Steps the tables still needed on one symbol; whether every label
    /// looked for is found.
    #[inline(always)]
    pub(super) fn step(&mut self, sym: u8) -> bool {
        let want = self.want;
        let mut out = 0;
        for ((state, table), dense) in self.states.iter_mut().zip(EXTENDED).zip(self.dense) {
            if table.labels & want != 0 {
                *state = dense.next(*state, sym);
                if *state >= table.special {
                    out |= table.output(*state);
                }
            }
        }
        self.found |= out & want & !WINDOW_WORD_BITS;
        if out & WINDOW_WORD_BITS != 0
            && want & USAGE_LIMIT != 0
            && self.windows.words(out, self.pos)
        {
            self.found |= USAGE_LIMIT;
        }
        if sym == b'\n' {
            self.windows.line_break();
        }
        // The twenty unanchored overflow patterns of spec 3.3.
        if want & OVERFLOW != 0 && overflow_step(&mut self.words, &mut self.tails, sym, OVERFLOW) {
            self.found |= OVERFLOW;
        }
        self.want &= !self.found;
        self.pos = self.pos.saturating_add(1);
        self.want == 0
    }

    /// Steps on the symbols until every label looked for is found (on
    /// std: the unpacked tables, for texts too short to skip); the labels
    /// found.
    #[inline(always)]
    pub(super) fn run(mut self, symbols: impl Iterator<Item = u8>) -> u8 {
        for sym in symbols {
            if self.step(sym) {
                break;
            }
        }
        self.finish()
    }

    /// The labels found, with the matches that end with the text.
    #[inline(always)]
    pub(super) fn finish(mut self) -> u8 {
        if self.want == 0 {
            return self.found;
        }
        let mut out = 0;
        for (state, table) in self.states.iter().zip(EXTENDED) {
            if table.labels & self.want != 0 {
                out |= table.eoi(*state);
            }
        }
        self.found |= out & self.want & !WINDOW_WORD_BITS;
        if out & WINDOW_WORD_BITS != 0
            && self.want & USAGE_LIMIT != 0
            && self.windows.words(out, self.pos)
        {
            self.found |= USAGE_LIMIT;
        }
        self.found
    }
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

#[cfg(feature = "prefilter")]
impl super::factors::Stepper for Scan {
    const FACTORS: &'static [&'static [(&'static str, Option<u8>)]; 16] = &dfa::EXT_FACTORS;
    const MAX_LEN: usize = dfa::EXT_FACTOR_MAX_LEN;
    /// A second word starts at most `gap` characters, of at most four
    /// bytes each, after its first word.
    const REACH: usize = 4 * (Windows::GAP_MAX + 1);

    fn searches() -> &'static super::factors::Searches {
        static S: super::factors::Searches = [const { std::sync::OnceLock::new() }; 16];
        &S
    }

    #[inline(always)]
    fn start(want: u8) -> Self {
        Scan::new(want)
    }

    #[inline(always)]
    fn want(&self) -> u8 {
        self.want
    }

    #[inline(always)]
    fn step(&mut self, sym: u8) -> bool {
        Scan::step(self, sym)
    }

    #[inline(always)]
    fn restart(&mut self, p: &super::prefilter::Prefilter, before: Option<u8>) {
        match before {
            // `\b` tells a word character before from another.
            Some(before) => {
                self.states = p.extended_idle(before);
                self.words = p.words_idle(before);
            }
            None => {
                self.states = [0; dfa::EXTENDED_LEN];
                self.words = [0; dfa::WORDS_LEN];
            }
        }
        self.tails = Tails::default();
        // No window word pending: a segment starts where no match is
        // under way, window alternatives included.
        self.windows = Windows::default();
    }

    /// Every table the scan steps in its quiet state after `prev`, and no
    /// tail running (a window word may wait for its second word).
    #[inline(always)]
    fn quiet(&self, p: &super::prefilter::Prefilter, prev: u8) -> bool {
        p.extended_quiet(&self.states, self.want, prev)
            && (self.want & OVERFLOW == 0
                || self.words == p.words_idle(prev) && self.tails.active == 0)
    }

    /// A window word that a second word could still follow.
    #[inline(always)]
    fn pending(&self) -> bool {
        self.want & USAGE_LIMIT != 0 && self.windows.pending(self.pos)
    }

    #[inline(never)]
    fn ascii_run(&mut self, bytes: &[u8], mut pos: usize) -> (usize, bool) {
        let mut all = false;
        while let Some(&b) = bytes.get(pos) {
            if b >= 0x80 || b == b'\n' || b == b'\r' {
                break;
            }
            pos += 1;
            if Scan::step(self, b) {
                all = true;
                break;
            }
        }
        (pos, all)
    }

    #[inline(always)]
    fn finish(self) -> u8 {
        Scan::finish(self)
    }
}

#[cfg(feature = "prefilter")]
impl super::prefilter::Skip for Scan {
    #[inline(always)]
    fn step(&mut self, sym: u8) -> bool {
        Scan::step(self, sym)
    }

    #[inline(always)]
    fn key(&self) -> usize {
        let tails = self.want & OVERFLOW != 0 && self.tails.active != 0;
        usize::from(self.want & 15)
            | super::prefilter::KEY_EXTENDED
            | if tails {
                super::prefilter::KEY_TAILS
            } else {
                0
            }
    }

    #[inline(always)]
    fn settled(&self, p: &super::prefilter::Prefilter, prev: [u8; 2]) -> bool {
        p.extended_settled(&self.states, self.want, prev)
            && (self.want & OVERFLOW == 0
                || p.words_settled(&self.words, prev)
                    && p.tails_quiet(&self.tails.states, self.tails.active))
    }

    #[inline(always)]
    fn near(&self, p: &super::prefilter::Prefilter) -> bool {
        p.extended_near(&self.states, self.want)
            && (self.want & OVERFLOW == 0 || p.words_near(&self.words))
    }

    #[inline(always)]
    fn restart(&mut self, p: &super::prefilter::Prefilter, before: u8, skipped: usize) {
        self.states = p.extended_idle(before);
        self.words = p.words_idle(before);
        self.pos = self.pos.saturating_add(skipped);
    }

    #[inline(always)]
    fn finish(self) -> u8 {
        Scan::finish(self)
    }
}

#[cfg(all(test, feature = "prefilter"))]
mod tests {
    extern crate std;

    use super::super::table::lossy_symbols;
    use super::*;

    #[test]
    fn run_is_the_plain_scan() {
        let corpus = include_str!("../../tests/corpus/extended/errors.jsonl");
        let texts = corpus
            .lines()
            .chain(include_str!("../../tests/corpus/errors.jsonl").lines());
        let mut labelled = 0;
        for line in texts {
            // Whole lines (JSON, escapes and all) are texts too.
            for want in [RETRYABLE, USAGE_LIMIT, OVERFLOW, HINT, 15] {
                let bytes = line.as_bytes();
                let plain = scan(want, lossy_symbols(bytes));
                assert_eq!(Scan::new(want).run(lossy_symbols(bytes)), plain, "{line}");
                labelled += usize::from(plain != 0);
            }
        }
        assert!(labelled > 100, "{labelled}");
    }
}
