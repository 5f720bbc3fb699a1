//! The classic pattern set (spec 3.2 to 3.5): its plain scan, one pass
//! over the symbols of a text that steps `dfa::LABELS` and the overflow
//! tables, and the same scan as a state between two symbols ([`Scan`]) for
//! the long-text paths (`super::step::Step`).

use super::dfa::{self, HINT, OVERFLOW, OVERFLOW_AT_START, RETRYABLE, USAGE_LIMIT};
use super::overflow::{self, Tails};
use super::Classification;
#[cfg(feature = "prefilter")]
use super::{
    factors::{Factors, Searches},
    prefilter::{self, Prefilter},
    step::Step,
};

/// The [`Classification`] of a classic scan's findings.
pub(super) fn labels(found: u8, empty: bool, hint_ms: Option<u64>) -> Classification {
    let overflow = found & OVERFLOW != 0;
    Classification {
        retryable: !empty && !overflow && found & RETRYABLE != 0,
        overflow,
        usage_limit: found & USAGE_LIMIT != 0,
        hint_ms,
    }
}

/// One pass over the symbols of a text that looks for the labels of `want`
/// at once, steps only the tables it still needs, and stops once it has
/// found them all; the labels found.
///
/// An overflow pattern `head.*rest` (`.` excludes the line terminators, and
/// neither part can match one) matches exactly when, on one line, `.*rest`
/// matches anchored where the *earliest* `head` of that line ends: any match
/// has its `rest` after that point on the same line. So the `words_*`
/// tables report where heads end, and the tail of a pattern runs from the
/// first such point until it dies at the end of the line, when the next
/// head can start it again.
// With feature `prefilter`, `super::strategy` picks a faster path for most
// texts; this scan is the reference of their tests, and the scan of
// firmware.
#[inline(always)]
pub(super) fn scan(mut want: u8, symbols: impl Iterator<Item = u8>) -> u8 {
    let mut found = 0;
    let mut labels = 0;
    let mut words = [0; dfa::WORDS_LEN];
    let mut tails = Tails::default();
    for sym in symbols {
        if want & (RETRYABLE | USAGE_LIMIT | HINT) != 0 {
            labels = dfa::LABELS.next(labels, sym);
            if labels >= dfa::LABELS.special {
                let new = dfa::LABELS.output(labels) & want;
                found |= new;
                want &= !new;
            }
        }
        if want & OVERFLOW != 0
            && overflow::step(&mut words, &mut tails, sym, OVERFLOW | OVERFLOW_AT_START)
        {
            found |= OVERFLOW;
            want &= !OVERFLOW;
        }
        if want == 0 {
            break;
        }
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
    /// State of `dfa::LABELS`.
    pub(super) labels: u8,
    /// States of `dfa::WORDS`.
    pub(super) words: [u8; dfa::WORDS_LEN],
    /// The running tails.
    pub(super) tails: Tails,
}

#[cfg(feature = "prefilter")]
impl Scan {
    #[inline(always)]
    pub(super) fn new(want: u8) -> Self {
        Scan {
            want,
            found: 0,
            labels: 0,
            words: [0; dfa::WORDS_LEN],
            tails: Tails::default(),
        }
    }

    /// Steps the tables still needed on one symbol, as [`scan`] does;
    /// whether every label looked for is found.
    #[inline(always)]
    pub(super) fn step(&mut self, sym: u8) -> bool {
        if self.want & (RETRYABLE | USAGE_LIMIT | HINT) != 0 {
            self.labels = dfa::LABELS.next(self.labels, sym);
            if self.labels >= dfa::LABELS.special {
                let new = dfa::LABELS.output(self.labels) & self.want;
                self.found |= new;
                self.want &= !new;
            }
        }
        if self.want & OVERFLOW != 0
            && overflow::step(
                &mut self.words,
                &mut self.tails,
                sym,
                OVERFLOW | OVERFLOW_AT_START,
            )
        {
            self.found |= OVERFLOW;
            self.want &= !OVERFLOW;
        }
        self.want == 0
    }
}

#[cfg(feature = "prefilter")]
impl Step for Scan {
    const FACTORS: &'static Factors = &dfa::FACTORS;
    const MAX_LEN: usize = dfa::FACTOR_MAX_LEN;

    fn searches() -> &'static Searches {
        extern crate std;
        static S: Searches = [const { std::sync::OnceLock::new() }; 16];
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
    fn finish(self) -> u8 {
        self.found
    }

    #[inline(always)]
    fn restart(&mut self, p: &Prefilter, before: Option<u8>) {
        // The classic tables have no `\b`, so only whether the character
        // before is a word character could matter.
        match before {
            Some(before) => {
                self.labels = p.labels_idle(before);
                self.words = p.words_idle(before);
            }
            None => {
                self.labels = 0;
                self.words = Default::default();
            }
        }
        self.tails = Tails::default();
    }

    /// Whether every table the scan steps is in its quiet state after
    /// `prev` (the last byte read) and no tail runs.
    #[inline(always)]
    fn quiet(&self, p: &Prefilter, prev: u8) -> bool {
        (self.want & (RETRYABLE | USAGE_LIMIT | HINT) == 0 || self.labels == p.labels_idle(prev))
            && (self.want & OVERFLOW == 0
                || self.words == p.words_idle(prev) && self.tails.active == 0)
    }

    /// On the padded tables, their states in registers (see
    /// `super::short::ascii_run`).
    #[inline(always)]
    fn ascii_run(&mut self, bytes: &[u8], pos: usize) -> (usize, bool) {
        super::short::ascii_run(self, bytes, pos)
    }

    #[inline(always)]
    fn key(&self) -> usize {
        let tails = self.want & OVERFLOW != 0 && self.tails.active != 0;
        usize::from(self.want & 15) | if tails { prefilter::KEY_TAILS } else { 0 }
    }

    #[inline(always)]
    fn settled(&self, p: &Prefilter, prev: [u8; 2]) -> bool {
        (self.want & (RETRYABLE | USAGE_LIMIT | HINT) == 0 || p.labels_settled(self.labels, prev))
            && (self.want & OVERFLOW == 0
                || p.words_settled(&self.words, prev)
                    && p.tails_quiet(&self.tails.states, self.tails.active))
    }

    #[inline(always)]
    fn near(&self, p: &Prefilter) -> bool {
        (self.want & (RETRYABLE | USAGE_LIMIT | HINT) == 0 || p.labels_near(self.labels))
            && (self.want & OVERFLOW == 0 || p.words_near(&self.words))
    }

    #[inline(always)]
    fn skipped(&mut self, p: &Prefilter, before: u8, _skipped: usize) {
        self.labels = p.labels_idle(before);
        self.words = p.words_idle(before);
    }
}

/// The classic set, as `super::strategy` picks its path.
pub(super) struct Patterns;

impl super::strategy::Set for Patterns {
    #[inline(always)]
    fn plain(want: u8, symbols: impl Iterator<Item = u8>) -> u8 {
        scan(want, symbols)
    }

    #[cfg(feature = "prefilter")]
    type Scan = Scan;

    #[inline(always)]
    #[cfg(feature = "prefilter")]
    fn short(want: u8, text: &str) -> u8 {
        super::short::scan(want, text)
    }
}
