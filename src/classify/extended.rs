//! The extended classifier (spec 10.5): one pass over the symbols of a
//! text that steps the `EXTENDED` tables (retryable, usage limit, the
//! added overflow patterns, the hint names of 10.4 and the window words),
//! the window scanner, and the classic overflow tables without their
//! anchored pattern.

#[cfg(feature = "prefilter")]
extern crate std;

#[cfg(feature = "prefilter")]
use super::dense::{self, Unpacked, FAST, SPECIAL};
use super::dfa::{self, EXTENDED, HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT, WINDOW_WORD_BITS};
use super::overflow::{self, Tails};
use super::window::Windows;
use super::Classification;

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
        if want & OVERFLOW != 0 && overflow::step(&mut words, &mut tails, sym, OVERFLOW) {
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

/// [`scan`] as a state between two symbols, for the long-text paths
/// (their tests keep the two equal).
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
    /// `EXTENDED` and `dfa::WORDS`, unpacked.
    tables: &'static Unpacked,
    /// The labels whose tables step (see [`super::step::Step::set_active`]):
    /// all of them but in the factor search's segments.
    active: u8,
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
            tables: super::dense::unpacked(),
            active: u8::MAX,
        }
    }

    /// Steps the tables still needed on one symbol; whether every label
    /// looked for is found.
    #[inline(always)]
    pub(super) fn step(&mut self, sym: u8) -> bool {
        let want = self.want & self.active;
        let mut out = 0;
        for (k, (state, table)) in self.states.iter_mut().zip(EXTENDED).enumerate() {
            if table.labels & want != 0 {
                *state = self.tables.step(k, *state, sym);
                if *state >= table.special {
                    out |= table.output(*state);
                }
            }
        }
        self.take(out, sym);
        // The twenty unanchored overflow patterns of spec 3.3 (as
        // `overflow_step` steps them, on the unpacked tables).
        if want & OVERFLOW != 0 {
            // Tails first: a tail reads the characters after its head.
            let mut overflow = self.tails.active != 0 && self.tails.step(sym);
            let mut heads = 0;
            for (j, (state, table)) in self.words.iter_mut().zip(dfa::WORDS).enumerate() {
                *state = self.tables.step(dfa::EXTENDED_LEN + j, *state, sym);
                if *state >= table.special {
                    heads |= table.output(*state);
                }
            }
            if heads != 0 {
                overflow |= heads & OVERFLOW != 0;
                self.tails.start(heads / dfa::HEAD);
            }
            if overflow {
                self.found |= OVERFLOW;
            }
        }
        self.want &= !self.found;
        self.pos = self.pos.saturating_add(1);
        self.want == 0
    }

    /// The labels of the outputs `out` of the tables after `sym` (the
    /// window words through the window scanner), and the window scanner
    /// told of a line break.
    #[inline(always)]
    fn take(&mut self, out: u8, sym: u8) {
        let want = self.want;
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
    }

    /// The rest of [`Scan::step`] on `sym`, once the tables it steps have
    /// stepped on it (by [`run_ascii`]), where no tail ran before `sym`:
    /// the outputs, the window words, the heads and the labels.
    #[inline(never)]
    fn settle(&mut self, sym: u8) -> bool {
        let want = self.want & self.active;
        let mut out = 0;
        for (&state, table) in self.states.iter().zip(EXTENDED) {
            if table.labels & want != 0 && state >= table.special {
                out |= table.output(state);
            }
        }
        self.take(out, sym);
        if want & OVERFLOW != 0 {
            let mut heads = 0;
            for (&state, table) in self.words.iter().zip(dfa::WORDS) {
                if state >= table.special {
                    heads |= table.output(state);
                }
            }
            if heads != 0 {
                if heads & OVERFLOW != 0 {
                    self.found |= OVERFLOW;
                }
                self.tails.start(heads / dfa::HEAD);
            }
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
            if table.labels & self.want & self.active != 0 {
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

/// The tables of [`Unpacked`] that the labels of `want` step (bit `k`:
/// table `k`).
#[cfg(feature = "prefilter")]
const fn stepped(want: u8) -> u8 {
    let mut mask = 0;
    let mut k = 0;
    while k < dfa::EXTENDED_LEN {
        if EXTENDED[k].labels & want != 0 {
            mask |= 1 << k;
        }
        k += 1;
    }
    if want & OVERFLOW != 0 {
        mask |= ((1 << dfa::WORDS_LEN) - 1) << dfa::EXTENDED_LEN;
    }
    mask
}

/// [`run_ascii`] for the labels of `want` (the four bits).
#[cfg(feature = "prefilter")]
#[inline(always)]
fn run_ascii_for(
    want: u8,
    tables: &Unpacked,
    states: &mut [u8; FAST],
    bytes: &[u8],
    pos: usize,
) -> (usize, bool) {
    let run = match want & 15 {
        1 => run_ascii::<1>,
        2 => run_ascii::<2>,
        3 => run_ascii::<3>,
        4 => run_ascii::<4>,
        5 => run_ascii::<5>,
        6 => run_ascii::<6>,
        7 => run_ascii::<7>,
        8 => run_ascii::<8>,
        9 => run_ascii::<9>,
        10 => run_ascii::<10>,
        11 => run_ascii::<11>,
        12 => run_ascii::<12>,
        13 => run_ascii::<13>,
        14 => run_ascii::<14>,
        15 => run_ascii::<15>,
        _ => run_ascii::<0>,
    };
    run(tables, states, bytes, pos)
}

/// Steps the tables that the labels of `WANT` step ([`stepped`]) on the
/// ASCII characters of `bytes` from `pos` on, up to a line terminator or
/// another character, or up to and with a character after which one of
/// them is in a special state (`true`), their states in registers; where
/// it stopped.
#[cfg(feature = "prefilter")]
#[inline(never)]
fn run_ascii<const WANT: u8>(
    tables: &Unpacked,
    states: &mut [u8; FAST],
    bytes: &[u8],
    pos: usize,
) -> (usize, bool) {
    let mask = const { stepped(WANT) };
    let ascii = tables.ascii();
    let mut s = *states;
    let mut report = false;
    let mut rest = bytes.get(pos..).unwrap_or_default().iter();
    // 1 where the loop stops before the last byte it looked at.
    let mut back = 0;
    for &b in rest.by_ref() {
        if b >= 0x80 || b == b'\n' || b == b'\r' {
            back = 1;
            break;
        }
        for (k, (state, &special)) in s.iter_mut().zip(&SPECIAL).enumerate() {
            if mask & (1 << k) != 0 {
                *state = dense::next_ascii(ascii, k, *state, b);
                report |= *state >= special;
            }
        }
        if report {
            break;
        }
    }
    *states = s;
    (bytes.len() - rest.len() - back, report)
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
impl super::step::Step for Scan {
    const FACTORS: &'static super::factors::Factors = &dfa::EXT_FACTORS;
    const MAX_LEN: usize = dfa::EXT_FACTOR_MAX_LEN;
    /// Past a segment's end, the tables step in runs of 8 characters (then
    /// 16, 32, ...) between two looks at whether they are quiet, which
    /// costs more than a step.
    const AHEAD: usize = 8;

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
    fn active(&self) -> u8 {
        self.active
    }

    #[inline(always)]
    fn set_active(&mut self, labels: u8) {
        self.active = labels;
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

    /// Every table the scan steps in its quiet state after `prev`, no
    /// tail running, and no window word that a second word could still
    /// follow: a segment steps on through a window's gap, so a window's
    /// second word needs no hit of its own.
    #[inline(always)]
    fn quiet(&self, p: &super::prefilter::Prefilter, prev: u8) -> bool {
        let want = self.want & self.active;
        p.extended_quiet(&self.states, want, prev)
            && (want & OVERFLOW == 0 || self.words == p.words_idle(prev) && self.tails.active == 0)
            && (want & USAGE_LIMIT == 0 || !self.windows.pending(self.pos))
    }

    /// Between reports, the tables step in [`run_ascii`], their states in
    /// registers; a step that leaves one in a special state is settled
    /// here, and while a tail runs the scan steps a character at a time.
    #[inline(never)]
    fn ascii_run(&mut self, bytes: &[u8], mut pos: usize) -> (usize, bool) {
        loop {
            if self.want & self.active & OVERFLOW != 0 && self.tails.active != 0 {
                // A tail runs (to the end of its line).
                let Some(&b) = bytes.get(pos) else {
                    break;
                };
                if b >= 0x80 || b == b'\n' || b == b'\r' {
                    break;
                }
                pos += 1;
                if Scan::step(self, b) {
                    return (pos, true);
                }
                continue;
            }
            let mut states = [0; FAST];
            let (ext, words) = states.split_at_mut(dfa::EXTENDED_LEN);
            ext.copy_from_slice(&self.states);
            words.copy_from_slice(&self.words);
            let from = pos;
            let (to, report) = run_ascii_for(
                self.want & self.active,
                self.tables,
                &mut states,
                bytes,
                pos,
            );
            let (ext, words) = states.split_at(dfa::EXTENDED_LEN);
            self.states.copy_from_slice(ext);
            self.words.copy_from_slice(words);
            pos = to;
            // Every character but a reported one is done.
            let done = to.saturating_sub(from) - usize::from(report);
            self.pos = self.pos.saturating_add(done);
            if !report {
                break;
            }
            let sym = bytes.get(to - 1).map_or(0, |&b| b);
            if self.settle(sym) {
                return (pos, true);
            }
        }
        (pos, false)
    }

    #[inline(always)]
    fn finish(self) -> u8 {
        Scan::finish(self)
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
    fn skipped(&mut self, p: &super::prefilter::Prefilter, before: u8, skipped: usize) {
        self.states = p.extended_idle(before);
        self.words = p.words_idle(before);
        self.pos = self.pos.saturating_add(skipped);
    }
}

/// The extended set, as `super::strategy` picks its path.
pub(super) struct Patterns;

impl super::strategy::Set for Patterns {
    #[inline(always)]
    fn plain(want: u8, symbols: impl Iterator<Item = u8>) -> u8 {
        scan(want, symbols)
    }

    #[cfg(feature = "prefilter")]
    type Scan = Scan;

    /// The unpacked tables of `super::dense`, stepped by [`Scan::run`].
    #[inline(always)]
    #[cfg(feature = "prefilter")]
    fn short(want: u8, text: &str) -> u8 {
        Scan::new(want).run(super::utf8::symbols(text))
    }
}

#[cfg(all(test, feature = "prefilter"))]
mod tests {
    extern crate std;

    use super::super::utf8::lossy_symbols;
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

    /// `text` through the runs of [`Step::ascii_run`] (a character at a
    /// time where a run stops), as the factor search steps a line.
    fn by_runs(want: u8, text: &str) -> u8 {
        use super::super::step::Step;
        let bytes = text.as_bytes();
        let mut s = Scan::new(want);
        let mut pos = 0;
        while pos < bytes.len() {
            let (to, all) = s.ascii_run(bytes, pos);
            pos = to;
            if all {
                return Scan::finish(s);
            }
            if pos < bytes.len() {
                let (sym, len) = super::super::utf8::decode(bytes, pos);
                pos += len;
                if Scan::step(&mut s, sym) {
                    break;
                }
            }
        }
        Scan::finish(s)
    }

    #[test]
    fn runs_are_the_plain_scan_for_every_set_of_labels() {
        use super::super::testing::pieces;
        use std::string::String;
        let corpus = include_str!("../../tests/corpus/extended/errors.jsonl");
        let mut texts: std::vec::Vec<String> = corpus
            .lines()
            .chain(include_str!("../../tests/corpus/errors.jsonl").lines())
            .map(String::from)
            .collect();
        // The patterns' pieces, glued, and on lines of their own.
        let pieces: std::vec::Vec<String> = pieces()
            .into_iter()
            .filter_map(|p| String::from_utf8(p).ok())
            .collect();
        texts.push(pieces.join(" "));
        texts.push(pieces.join("\n"));
        texts.push(pieces.concat());
        let mut labelled = 0;
        for text in &texts {
            for want in 1..16 {
                let plain = scan(want, super::super::utf8::symbols(text));
                assert_eq!(by_runs(want, text), plain, "want {want}: {text}");
                labelled += usize::from(plain != 0);
            }
        }
        assert!(labelled > 1000, "{labelled}");
    }
}
