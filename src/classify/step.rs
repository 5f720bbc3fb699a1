//! What the long-text paths (`super::skipping`, `super::factors`) need of
//! a pattern set's scan: one trait, implemented by the classic scan
//! (`super::classic::Scan`) and the extended one (`super::extended::Scan`).
//!
//! A scan is the state of a set's tables between two symbols. Both paths
//! step it on the symbols they read and put it back in its *quiet* state
//! (nothing under way, see `super::prefilter`) where they skip text: the
//! skipping scan where every string of three bytes is harmless, the
//! factor search between the segments around its hits.

use super::factors::{Factors, Searches};
use super::prefilter::Prefilter;

/// A pattern set's scan, as the skipping scan and the factor search step it.
pub(super) trait Step: Sized {
    /// The set's factors (`dfa::FACTORS` or `dfa::EXT_FACTORS`).
    const FACTORS: &'static Factors;
    /// The longest of them, in bytes.
    const MAX_LEN: usize;
    /// How many characters a segment past its end may step on between its
    /// first two questions whether it is quiet, with
    /// [`Step::ascii_run_to`] (twice as many each time after).
    const AHEAD: usize = 0;

    /// The set's factor searches, built at first use.
    fn searches() -> &'static Searches;
    /// A scan that looks for the labels of `want`, at the start of a text.
    fn start(want: u8) -> Self;
    /// The labels still looked for.
    fn want(&self) -> u8;
    /// The labels whose tables step (`u8::MAX`: every table).
    #[inline(always)]
    fn active(&self) -> u8 {
        u8::MAX
    }
    /// Steps from now on only the tables of `labels`, the rest staying in
    /// their quiet state: a hit's segment needs only the tables of the
    /// patterns its factor was chosen for (the others' matches hold
    /// factors of their own). A scan that steps every table anyway keeps
    /// doing so.
    #[inline(always)]
    fn set_active(&mut self, labels: u8) {
        let _ = labels;
    }
    /// Steps on one symbol; whether every label looked for is found.
    fn step(&mut self, sym: u8) -> bool;
    /// The labels found, with the matches that end with the text (where
    /// the scan has read it to its end).
    fn finish(self) -> u8;

    // The factor search.

    /// Puts every table in its quiet state after the byte `before` (the
    /// last of the character before; `None`: the start of the text), with
    /// nothing under way.
    fn restart(&mut self, p: &Prefilter, before: Option<u8>);
    /// Whether nothing is under way after `prev` (the last byte read): no
    /// match that a later character could complete.
    fn quiet(&self, p: &Prefilter, prev: u8) -> bool;
    /// Steps on the ASCII characters from `pos` on up to the first line
    /// terminator or other character; where it stopped, and whether every
    /// label looked for is found.
    fn ascii_run(&mut self, bytes: &[u8], pos: usize) -> (usize, bool);
    /// [`Step::ascii_run`] up to `until` at most, where a segment steps
    /// without asking whether it is quiet.
    #[inline(always)]
    fn ascii_run_to(&mut self, bytes: &[u8], pos: usize, until: usize) -> (usize, bool) {
        self.ascii_run(bytes.get(..until).unwrap_or(bytes), pos)
    }

    // The skipping scan.

    /// Which [`Prefilter::triples`] apply to the tables the scan steps now.
    fn key(&self) -> usize;
    /// Whether every table the scan steps is quiet after `prev` (the two
    /// ASCII symbols just read), or was two symbols ago.
    fn settled(&self, p: &Prefilter, prev: [u8; 2]) -> bool;
    /// Whether every table the scan steps is in a state that its quiet
    /// states reach in at most two ASCII characters: what `settled` needs,
    /// at one load a table (most characters of a match under way fail it).
    fn near(&self, p: &Prefilter) -> bool;
    /// Puts the tables back in their quiet states after the ASCII
    /// character `before`, `skipped` characters on (a skip of the
    /// skipping scan, where no tail runs).
    fn skipped(&mut self, p: &Prefilter, before: u8, skipped: usize);
}
