//! The curated tables as one automaton, built lazily (on std, feature
//! `prefilter`): a state is the tuple of every table's state, and its
//! transitions are computed the first time they are taken and kept in a
//! cache of the thread's own, so that a run of the factor search
//! (`super::curated_factors`) steps all the tables with one load a
//! character instead of one per table. It is the lazy DFA that
//! `regex-automata`'s hybrid engine builds for a pattern set, over the
//! generated tables instead of the patterns.
//!
//! - A table's idle states (they step as its start state does and report
//!   nothing, at the end of the text either) are read as its start state,
//!   so that the automaton has one idle state, its start ([`START`]): no
//!   match is under way in any table.
//! - Symbols that every table steps alike share a class, and `\n` (where
//!   the window scanner's windows close) has one of its own.
//! - A transition into a state that reports is marked, so that the loop
//!   looks at outputs only there.
//! - Each state has a twin ([`Lazy::twin`]) for a run with a window of the
//!   window scanner open: the same tables' states, but its transitions
//!   mark every window word and `\n` too, so that a run with a window open
//!   steps in the same loops as the others. A run's row is its state's
//!   twin while a window is open; it is checked for closing where the run
//!   reports, at the lanes' checkpoints and where it is idle.
//! - The cache holds at most [`CAPACITY`] states. Its memory is taken once,
//!   at a thread's first use, and never grows: when it is full it is
//!   emptied and refilled from the state under way.

extern crate std;

use std::boxed::Box;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::vec::Vec;

use super::curated::{reported, Unpacked, Windows, ALL, FIRSTS, TABLES, WORDS_AT};
use super::dfa::CURATED_WORD_TABLES;
use super::symbol::{OTHER, SYMBOLS};
use super::utf8::decode;

/// The most states the cache holds, each with its twin: their rows and
/// their twins' fill `2 << 13` rows (4 MiB, its pages touched as states
/// are added). The curated corpus, read again and again on one thread,
/// holds more than 4,095 states: with room for no more, it emptied the
/// cache over and over and took three times as long.
pub(super) const CAPACITY: usize = (1 << 13) - 1;

/// The start state's row: every table idle.
pub(super) const START: u32 = 1 << SHIFT;

/// A row's length is `1 << SHIFT` transitions (the classes fit in it).
const SHIFT: u32 = 6;

/// The mark of a transition into a state that reports, or on `\n` where a
/// window is open.
const MARKED: u32 = 1 << 30;

/// A transition not computed yet: marked too (into row 0, no state's), so
/// that the loops stop at both with one test (`next >= MARKED`), and at a
/// step of all lanes with one test of their transitions' `|`.
const UNKNOWN: u32 = MARKED;

/// A state, by the state of every table of [`TABLES`].
type Key = [u8; ALL];

/// What a state reports: labels, and the window words that end (as
/// [`reported`] gives them).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Reports {
    found: u8,
    words: u32,
}

/// A state of the cache.
struct State {
    key: Key,
    /// What it reports when stepped into.
    now: Reports,
    /// What it reports where the text ends.
    eoi: Reports,
}

/// The symbols' classes, shared by every thread's cache.
struct Classes {
    /// The class of each symbol (indexed by symbol, below [`SYMBOLS`]).
    of: [u8; SYMBOLS],
    /// The class the fast loops read each byte of valid UTF-8 as: an ASCII
    /// byte's, [`Classes::cont`] for a continuation byte, the class of
    /// `OTHER` for the first byte of a character that is `OTHER` for sure,
    /// [`Classes::stop`] for the others (`0xE2` starts U+2028 and U+2029).
    byte: [u8; 256],
    /// A symbol of each class of a symbol.
    symbol: Vec<u8>,
    /// The class whose transitions go nowhere: a continuation byte's (its
    /// character was read at its first byte).
    cont: u8,
    /// The class of `\n`.
    newline: u8,
}

impl Classes {
    fn get() -> Option<&'static Classes> {
        static CLASSES: OnceLock<Option<Classes>> = OnceLock::new();
        CLASSES.get_or_init(Classes::new).as_ref()
    }

    fn new() -> Option<Classes> {
        // A symbol's signature: its class in every table.
        let mut signatures: Vec<Vec<u8>> = Vec::new();
        let mut of = [0u8; SYMBOLS];
        let mut symbol = Vec::new();
        for (sym, class) in (0..=u8::try_from(SYMBOLS - 1).ok()?).zip(&mut of) {
            let signature = TABLES
                .iter()
                .map(|t| t.classes.get(usize::from(sym)).copied())
                .collect::<Option<Vec<u8>>>()?;
            *class = match signatures.iter().position(|s| *s == signature) {
                Some(c) => u8::try_from(c).ok()?,
                None => {
                    signatures.push(signature);
                    symbol.push(sym);
                    u8::try_from(signatures.len() - 1).ok()?
                }
            };
        }
        let cont = u8::try_from(symbol.len()).ok()?;
        let stop = cont.checked_add(1)?;
        let other = *of.get(usize::from(OTHER))?;
        let mut byte = [stop; 256];
        for (b, class) in (0..=u8::MAX).zip(&mut byte) {
            *class = match b {
                0..=0x7F => *of.get(usize::from(b))?,
                0x80..=0xBF => cont,
                0xC2..=0xDF | 0xE0 | 0xE1 | 0xE3..=0xEF | 0xF0..=0xF4 => other,
                _ => stop,
            };
        }
        if u32::from(stop) >= 1 << SHIFT {
            return None;
        }
        let newline = *of.get(usize::from(b'\n'))?;
        Some(Classes {
            of,
            byte,
            symbol,
            cont,
            newline,
        })
    }
}

/// The cache of one thread.
pub(super) struct Lazy {
    tables: &'static Unpacked,
    classes: &'static Classes,
    /// The most states it holds (each with its twin).
    capacity: usize,
    /// The bit of a row that makes it its state's twin's: twins' rows are
    /// in the table's second half. (A state's row and its twin's side by
    /// side put the states' rows two rows apart, and each column of the
    /// table in half as many of the L1 cache's sets: `body.html` was 16 %
    /// slower.)
    twin: u32,
    /// Per state a row of transitions, one per class: the next state's row
    /// (its index times the row's length), [`MARKED`] or not, or
    /// [`UNKNOWN`].
    trans: Box<[u32]>,
    states: Vec<State>,
    ids: HashMap<Key, u32>,
    /// The rows of the other runs under way (the lanes'), the first
    /// `pins`: emptying the cache keeps their states, at new rows.
    pinned: [u32; LANES],
    pins: usize,
    /// How many times the cache was emptied: a row read before is stale.
    generation: u32,
}

/// The most lanes [`Lazy::lanes`] steps at once.
///
/// A lane's step waits for its last load; with four, the loads of one
/// step overlap and the loop still fits the registers. On `body.html`
/// repeated to 1 MB (with [`Lazy::tight`] reading blocks), four lanes were
/// 12 % faster than three (`dense_1MB` 29 %), five 6 % slower than three
/// and six 11 % (paired runs).
pub(super) const LANES: usize = 4;

/// The bytes [`Lazy::tight`] reads of each lane at a time.
const BLOCK: usize = 8;

/// A lane records where it is as a checkpoint every so many bytes, ...
const CHECK: usize = 128;

/// ... this many times at most.
const CHECKS: usize = 32;

/// Where a run is: its state's row, the window scanner's state and the
/// labels found; and how many bytes more than characters lie before
/// `counted` (those before the run's start all count: [`Run::at`]), for
/// the window scanner's positions, which count characters.
pub(super) struct Run {
    pub(super) row: u32,
    pub(super) windows: Windows,
    pub(super) found: u8,
    lag: usize,
    counted: usize,
}

impl Default for Run {
    fn default() -> Run {
        Run::at(0, 0)
    }
}

impl Run {
    /// A run that starts at `pos` in the start state, `found` found.
    pub(super) fn at(pos: usize, found: u8) -> Run {
        Run {
            row: START,
            windows: Windows::default(),
            found,
            lag: pos,
            counted: pos,
        }
    }

    /// The characters the run has read at `pos` (a character boundary at
    /// or after the last position asked).
    #[inline(always)]
    fn chars(&mut self, bytes: &[u8], pos: usize) -> usize {
        if pos > self.counted {
            let read = bytes.get(self.counted..pos).unwrap_or_default();
            // Continuation bytes, 64 at a time in a byte's sum (at most
            // 64: vectorized in bytes, not widened to 64-bit lanes).
            self.lag += read
                .chunks(64)
                .map(|c| {
                    usize::from(
                        c.iter()
                            .fold(0u8, |n, &b| n.wrapping_add(u8::from(is_continuation(b)))),
                    )
                })
                .sum::<usize>();
            self.counted = pos;
        }
        pos.saturating_sub(self.lag)
    }
}

impl Lazy {
    /// Calls `f` with this thread's cache (made at its first use); `None`
    /// where it cannot be made.
    pub(super) fn with<T>(f: impl FnOnce(&mut Lazy) -> T) -> Option<T> {
        std::thread_local! {
            static LAZY: RefCell<Option<Lazy>> = const { RefCell::new(None) };
        }
        LAZY.try_with(|cell| {
            let mut lazy = cell.try_borrow_mut().ok()?;
            if lazy.is_none() {
                *lazy = Some(Lazy::new(CAPACITY)?);
            }
            lazy.as_mut().map(f)
        })
        .ok()
        .flatten()
    }

    /// A cache of at most `capacity` states and their twins (`None` where
    /// the tables could not be unpacked, or their classes do not fit in a
    /// row).
    pub(super) fn new(capacity: usize) -> Option<Lazy> {
        let classes = Classes::get()?;
        let half = capacity.checked_add(1)?.checked_next_power_of_two()?;
        let mut lazy = Lazy {
            tables: Unpacked::get()?,
            classes,
            capacity,
            twin: u32::try_from(half << SHIFT).ok()?,
            // Zeroed, so that its pages are only touched once a state's
            // row is (`Lazy::add` sets the row's transitions to UNKNOWN).
            trans: std::vec![0; half.checked_mul(2)? << SHIFT].into_boxed_slice(),
            states: Vec::with_capacity(capacity),
            ids: HashMap::with_capacity(capacity),
            pinned: [START; LANES],
            pins: 0,
            generation: 0,
        };
        lazy.add([0; ALL])?;
        Some(lazy)
    }

    /// Steps `run` over `bytes` from `pos` (a character boundary) until it
    /// is idle at or past `past` (in [`START`], no window open), or to the
    /// end of the text (adding what ends with it); where it stopped.
    #[inline(always)]
    pub(super) fn run(&mut self, run: &mut Run, bytes: &[u8], pos: usize, past: usize) -> usize {
        let (pos, _) = self.run_to(run, bytes, pos, past, bytes.len());
        if pos >= bytes.len() {
            self.end(run, bytes, pos);
        }
        pos
    }

    /// Steps `run` as [`Lazy::run`] does, but not past `end` (a character
    /// boundary); where it stopped, and whether it is idle there.
    #[inline(always)]
    fn run_to(
        &mut self,
        run: &mut Run,
        bytes: &[u8],
        mut pos: usize,
        past: usize,
        end: usize,
    ) -> (usize, bool) {
        let end = end.min(bytes.len());
        while pos < end {
            pos = self.fast(&mut run.row, bytes, pos, past, end);
            run.row = self.settled(run, bytes, run.row, pos);
            if run.row == START && pos >= past {
                return (pos, true);
            }
            if pos >= end {
                break;
            }
            pos = self.one(run, bytes, pos);
        }
        (pos, false)
    }

    /// Steps `run`, at `cuts[0]`, over the text to `to`, as `N` runs at
    /// once (lanes): the text is cut
    /// at `cuts` (increasing, each where a run may start: see
    /// `super::curated_factors`), lane 0 is `run`, lane `i` starts at
    /// `cuts[i]` in the start state. Each lane goes on past its part until
    /// it is idle, or until it is where the next lane was when that
    /// recorded a checkpoint, in the same state (from there on it would
    /// read what that lane read); the last stops at `to`, and becomes
    /// `run`, with every lane's labels. Where it stopped (`to`), and
    /// whether it is idle there or at the end of the text (else the run
    /// goes on from there).
    ///
    /// A run's step waits for its last (it reads the state that one
    /// wrote), so one run steps a character per load's latency; the lanes'
    /// loads do not wait for each other.
    pub(super) fn lanes<const N: usize>(
        &mut self,
        run: &mut Run,
        bytes: &[u8],
        cuts: &[usize; N],
        to: usize,
    ) -> (usize, bool) {
        let mut runs: [Run; N] =
            core::array::from_fn(|i| Run::at(cuts.get(i).copied().unwrap_or(0), 0));
        if let Some(first) = runs.first_mut() {
            *first = core::mem::take(run);
        }
        let mut pos = *cuts;
        let ends: [usize; N] = core::array::from_fn(|i| cuts.get(i + 1).copied().unwrap_or(to));
        // Per lane, its checkpoints: where it was, in which state, and the
        // cache's generation then (taken with no window open).
        let mut checks = [[(usize::MAX, START, 0u32); CHECKS]; N];
        let mut counts = [0usize; N];
        let mut due: [usize; N] = core::array::from_fn(|i| pos.get(i).map_or(0, |p| p + CHECK));
        loop {
            for i in 1..N {
                if let (Some(&p), Some(d), Some(c), Some(run), Some(checks)) = (
                    pos.get(i),
                    due.get_mut(i),
                    counts.get_mut(i),
                    runs.get(i),
                    checks.get_mut(i),
                ) {
                    if p >= *d && !run.windows.open() {
                        if let Some(check) = checks.get_mut(*c) {
                            *check = (p, run.row, self.generation);
                            *c += 1;
                        }
                        *d = p + CHECK;
                    }
                }
            }
            // A window may have closed since the lane last reported.
            for (run, &p) in runs.iter_mut().zip(&pos) {
                run.row = self.settled(run, bytes, run.row, p);
            }
            let steps = pos
                .iter()
                .zip(&ends)
                .map(|(&p, &e)| e.saturating_sub(p))
                .min()
                .unwrap_or(0)
                .min(CHECK);
            if steps == 0 {
                break;
            }
            let k = self.lockstep(&mut runs, bytes, &pos, steps);
            for p in &mut pos {
                *p += k;
            }
            if k < steps {
                // A lane reads a character other than ASCII or takes a
                // transition not computed yet: each steps on by one
                // character.
                for i in 0..N {
                    if let (Some(&p), Some(&e)) = (pos.get(i), ends.get(i)) {
                        if p < e {
                            let q = self.pinned(&mut runs, i, |lazy, run| lazy.one(run, bytes, p));
                            if let Some(p) = pos.get_mut(i) {
                                *p = q;
                            }
                        }
                    }
                }
            }
        }
        // Each lane but the last, on until idle or where it meets the next.
        let mut found = 0;
        for i in 0..N - 1 {
            let (Some(&p), Some(&e), Some(checks), Some(&c)) = (
                pos.get(i),
                ends.get(i),
                checks.get(i + 1),
                counts.get(i + 1),
            ) else {
                continue;
            };
            let checks = checks.get(..c).unwrap_or_default();
            found |= self.pinned(&mut runs, i, |lazy, run| {
                lazy.tail(run, bytes, p, e, checks);
                run.found
            });
        }
        let last = N - 1;
        let (Some(&p), Some(&e)) = (pos.get(last), ends.get(last)) else {
            return (to, true);
        };
        let (stop, idle) = self.pinned(&mut runs, last, |lazy, run| {
            let (stop, idle) = lazy.run_to(run, bytes, p, e, e);
            if stop >= bytes.len() {
                lazy.end(run, bytes, stop);
            }
            (stop, idle)
        });
        if let Some(r) = runs.get_mut(last) {
            *run = core::mem::take(r);
        }
        run.found |= found;
        (stop, idle || stop >= bytes.len())
    }

    /// Steps a lane but the last from `pos` on until it is idle past `past`,
    /// or at a checkpoint of the next lane in its state (or at the end of
    /// the text).
    fn tail(
        &mut self,
        run: &mut Run,
        bytes: &[u8],
        mut pos: usize,
        past: usize,
        checks: &[(usize, u32, u32)],
    ) {
        for &(at, row, generation) in checks {
            if at < pos {
                continue;
            }
            let (p, idle) = self.run_to(run, bytes, pos, past, at);
            pos = p;
            if idle
                || pos == at
                    && run.row == row
                    && generation == self.generation
                    && !run.windows.open()
            {
                return;
            }
        }
        self.run(run, bytes, pos, past);
    }

    /// Calls `f` with lane `i` of `runs`, the others' states kept through
    /// an emptying of the cache ([`Lazy::pinned`]).
    fn pinned<const N: usize, T>(
        &mut self,
        runs: &mut [Run; N],
        i: usize,
        f: impl FnOnce(&mut Self, &mut Run) -> T,
    ) -> T {
        self.pins = 0;
        for (j, r) in runs.iter().enumerate() {
            if j != i {
                if let Some(p) = self.pinned.get_mut(self.pins) {
                    *p = r.row;
                    self.pins += 1;
                }
            }
        }
        let out = match runs.get_mut(i) {
            Some(run) => f(self, run),
            None => f(self, &mut Run::default()),
        };
        let mut pins = self.pinned.iter();
        for (j, r) in runs.iter_mut().enumerate() {
            if j != i {
                if let Some(&p) = pins.next() {
                    r.row = p;
                }
            }
        }
        self.pins = 0;
        out
    }

    /// Steps every lane of `runs` (lane `i` at `pos[i]`) one ASCII byte at
    /// a time, at most `steps` times, over known transitions (taking what
    /// they report); how many steps each took. The stretches without a
    /// mark go through [`Lazy::tight`].
    ///
    /// That loop alone, and the lanes taken in place rather than moved out
    /// of `runs` around each slow step ([`Lazy::pinned`]), made more than
    /// two lanes pay ([`LANES`]): with the step's checks in one loop they
    /// had cost as much as they saved.
    #[inline(always)]
    fn lockstep<const N: usize>(
        &self,
        runs: &mut [Run; N],
        bytes: &[u8],
        pos: &[usize; N],
        steps: usize,
    ) -> usize {
        let (trans, byte) = (&*self.trans, &self.classes.byte);
        let mut rows: [u32; N] = core::array::from_fn(|i| runs.get(i).map_or(START, |r| r.row));
        let mut k = 0;
        while k < steps {
            let len = steps - k;
            let lanes: [&[u8]; N] = core::array::from_fn(|i| {
                pos.get(i)
                    .and_then(|&p| bytes.get(p + k..p + steps))
                    .unwrap_or_default()
            });
            if lanes.iter().all(|l| l.len() == len) {
                k += self.tight(&mut rows, &lanes, len);
                if k >= steps {
                    break;
                }
            }
            let mut next = [0u32; N];
            let mut marked = false;
            for ((n, &row), &p) in next.iter_mut().zip(&rows).zip(pos) {
                let b = bytes.get(p + k).copied().unwrap_or(0x80);
                *n = trans
                    .get(row as usize | usize::from(byte[usize::from(b)]))
                    .copied()
                    .unwrap_or(UNKNOWN);
                marked |= *n >= MARKED;
            }
            if next.contains(&UNKNOWN) {
                break;
            }
            if marked {
                for ((n, run), &p) in next.iter_mut().zip(runs.iter_mut()).zip(pos) {
                    if *n >= MARKED {
                        let newline = bytes.get(p + k) == Some(&b'\n');
                        *n = self.report(run, bytes, *n & !MARKED, newline, p + k);
                    }
                }
            }
            rows = next;
            k += 1;
        }
        for (run, row) in runs.iter_mut().zip(rows) {
            run.row = row;
        }
        k
    }

    /// The lanes of [`Lazy::lockstep`], in `rows`, over `lanes` (each
    /// `len` bytes), until a transition of one is not computed yet or
    /// marked; how many steps all took.
    ///
    /// The lanes are read [`BLOCK`] bytes at a time as arrays, so that the
    /// steps inside a block check no lane's length.
    #[inline(always)]
    fn tight<const N: usize>(&self, rows: &mut [u32; N], lanes: &[&[u8]; N], len: usize) -> usize {
        let mut k = 0;
        while k + BLOCK <= len {
            let mut blocks = [&[0u8; BLOCK]; N];
            for (block, lane) in blocks.iter_mut().zip(lanes) {
                match lane.get(k..k + BLOCK).and_then(|b| b.try_into().ok()) {
                    Some(b) => *block = b,
                    None => return k,
                }
            }
            for j in 0..BLOCK {
                if !self.step(rows, |i| blocks.get(i).map_or(0x80, |b| b[j])) {
                    return k + j;
                }
            }
            k += BLOCK;
        }
        while k < len {
            if !self.step(rows, |i| {
                lanes.get(i).and_then(|l| l.get(k)).copied().unwrap_or(0x80)
            }) {
                break;
            }
            k += 1;
        }
        k
    }

    /// Steps every lane's row of `rows` over its byte (`byte(i)`, lane
    /// `i`'s), unless a transition of one is not computed yet or marked;
    /// whether they stepped.
    #[inline(always)]
    fn step<const N: usize>(&self, rows: &mut [u32; N], byte: impl Fn(usize) -> u8) -> bool {
        let (trans, class) = (&*self.trans, &self.classes.byte);
        let mut next = [0u32; N];
        let mut any = 0;
        for (i, (n, &row)) in next.iter_mut().zip(rows.iter()).enumerate() {
            *n = trans
                .get(row as usize | usize::from(class[usize::from(byte(i))]))
                .copied()
                .unwrap_or(UNKNOWN);
            any |= *n;
        }
        // Not computed yet, or marked.
        if any >= MARKED {
            return false;
        }
        *rows = next;
        true
    }

    /// Takes into `run` what stepping into `row` at `pos` reports (on a
    /// `newline`, the windows close after); the row `run` goes on from:
    /// `row`'s twin while a window is open, else `row`'s state's.
    #[inline(never)]
    fn report(&self, run: &mut Run, bytes: &[u8], row: u32, newline: bool, pos: usize) -> u32 {
        let now = self.reports(row).now;
        run.found |= now.found;
        if now.words != 0 {
            let chars = run.chars(bytes, pos);
            run.found |= run.windows.words(now.words, chars);
        }
        if newline {
            run.windows.line_break();
        }
        self.settled(run, bytes, row, pos + 1)
    }

    /// The row `run`, in `row`'s state at `pos` (after a character), goes
    /// on from: the state's twin while a window is open, else the state's.
    /// A window closes once no second word can meet its first
    /// (`Windows::expire`).
    #[inline(always)]
    fn settled(&self, run: &mut Run, bytes: &[u8], row: u32, pos: usize) -> u32 {
        let row = row & !self.twin;
        if run.windows.open() && {
            let chars = run.chars(bytes, pos);
            run.windows.expire(chars, row == START)
        } {
            row | self.twin
        } else {
            row
        }
    }

    /// Steps `row` over ASCII from `pos`, over known transitions that
    /// report nothing, until idle at or past `past`, or `end`; where it
    /// stopped.
    #[inline(always)]
    fn fast(&self, row: &mut u32, bytes: &[u8], mut pos: usize, past: usize, end: usize) -> usize {
        let (trans, byte) = (&*self.trans, &self.classes.byte);
        let mut r = *row;
        // Before `past`, no idle stop to look for.
        let ahead = bytes.get(..past.min(end)).unwrap_or_default();
        while let Some(&b) = ahead.get(pos) {
            let next = trans
                .get(r as usize | usize::from(byte[usize::from(b)]))
                .copied()
                .unwrap_or(UNKNOWN);
            // Not computed yet, or marked.
            if next >= MARKED {
                *row = r;
                return pos;
            }
            r = next;
            pos += 1;
        }
        let bytes = bytes.get(..end).unwrap_or(bytes);
        while let Some(&b) = bytes.get(pos) {
            // Idle stops are at character boundaries (with a window open,
            // where it may close).
            if r | self.twin == START | self.twin && !is_continuation(b) {
                break;
            }
            let next = trans
                .get(r as usize | usize::from(byte[usize::from(b)]))
                .copied()
                .unwrap_or(UNKNOWN);
            if next >= MARKED {
                break;
            }
            r = next;
            pos += 1;
        }
        *row = r;
        pos
    }

    /// Steps `run` over the character at `pos` (before the end of the
    /// text), whatever it is; where the next one starts.
    #[inline(never)]
    fn one(&mut self, run: &mut Run, bytes: &[u8], pos: usize) -> usize {
        let Some(&b) = bytes.get(pos) else {
            return pos;
        };
        if is_continuation(b) {
            // Inside a character a lane's lockstep left (the character was
            // read at its first byte).
            return pos + 1;
        }
        let (sym, n) = if b < 0x80 { (b, 1) } else { decode(bytes, pos) };
        let class = self.classes.of.get(usize::from(sym)).copied().unwrap_or(0);
        let mut next = self.next(run.row, class);
        if next == UNKNOWN {
            next = self.fill(&mut run.row, class);
        }
        run.row = if next >= MARKED {
            self.report(run, bytes, next & !MARKED, sym == b'\n', pos)
        } else {
            next
        };
        pos + n
    }

    /// Adds to `run` what ends with the text, `pos` its length.
    fn end(&self, run: &mut Run, bytes: &[u8], pos: usize) {
        let eoi = self.reports(run.row).eoi;
        let chars = run.chars(bytes, pos);
        run.found |= eoi.found | run.windows.words(eoi.words, chars);
    }

    /// The transition of `row` on `class`.
    #[inline(always)]
    fn next(&self, row: u32, class: u8) -> u32 {
        self.trans
            .get(row as usize | usize::from(class))
            .copied()
            .unwrap_or(UNKNOWN)
    }

    /// The state of `row`'s reports.
    #[inline(always)]
    fn reports(&self, row: u32) -> &State {
        const NONE: &State = &State {
            key: [0; ALL],
            now: Reports { found: 0, words: 0 },
            eoi: Reports { found: 0, words: 0 },
        };
        self.states
            .get((((row & !self.twin) >> SHIFT) as usize).wrapping_sub(1))
            .unwrap_or(NONE)
    }

    /// Computes the transition of `row` on `class` (emptying the cache if
    /// it is full: `row` is then the same state's new row) and keeps it:
    /// from a twin, into a twin.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, row: &mut u32, class: u8) -> u32 {
        let key = self.reports(*row).key;
        let twin = *row & self.twin;
        let sym = self
            .classes
            .symbol
            .get(usize::from(class))
            .copied()
            .unwrap_or(0);
        let mut next = [0u8; ALL];
        for (k, (to, &from)) in next.iter_mut().zip(&key).enumerate() {
            *to = self.canonical(k, self.tables.next(k, from, sym));
        }
        let to = match self.ids.get(&next) {
            Some(&to) => to,
            None => {
                if self.states.len() >= self.capacity {
                    // The other runs' states (the lanes') are kept too.
                    let pinned = self.pinned.map(|r| (self.reports(r).key, r & self.twin));
                    self.clear();
                    *row = self.row_of(key) | twin;
                    for (i, (key, twin)) in pinned.into_iter().enumerate().take(self.pins) {
                        let r = self.row_of(key) | twin;
                        if let Some(p) = self.pinned.get_mut(i) {
                            *p = r;
                        }
                    }
                }
                match self.ids.get(&next) {
                    Some(&to) => to,
                    None => self.add(next).unwrap_or(START),
                }
            }
        };
        // Where no window is open, only labels and first words count;
        // where one is, every word and `\n`.
        let now = self.reports(to).now;
        let marked = if twin == 0 {
            now.found != 0 || now.words & FIRSTS != 0
        } else {
            now.found != 0 || now.words != 0 || class == self.classes.newline
        };
        let to = to | twin;
        let entry = if marked { to | MARKED } else { to };
        if let Some(t) = self.trans.get_mut(*row as usize | usize::from(class)) {
            *t = entry;
        }
        entry
    }

    /// Empties the cache but its start state (and its twin).
    ///
    /// The rows are left as they are: a state added is given its rows
    /// anew, and no row of a state emptied is stepped from again (the
    /// lanes' are pinned, and a checkpoint of an earlier generation is
    /// not trusted).
    fn clear(&mut self) {
        self.states.clear();
        self.ids.clear();
        self.generation = self.generation.wrapping_add(1);
        let _ = self.add([0; ALL]);
    }

    /// The row of the state `key` (not its twin's), added if it is not
    /// there (there is room: the cache was just emptied).
    fn row_of(&mut self, key: Key) -> u32 {
        match self.ids.get(&key) {
            Some(&row) => row,
            None => self.add(key).unwrap_or(START),
        }
    }

    /// Adds the state `key` and its twin (there is room); its row (the
    /// twin's is `row | self.twin`).
    fn add(&mut self, key: Key) -> Option<u32> {
        let row = u32::try_from((self.states.len() + 1) << SHIFT).ok()?;
        if row >= self.twin {
            return None;
        }
        let mut now = Reports::default();
        let mut eoi = Reports::default();
        let (mut words_now, mut words_eoi) = ([0u8; CURATED_WORD_TABLES], [0; CURATED_WORD_TABLES]);
        for (k, (&state, table)) in key.iter().zip(TABLES).enumerate() {
            let out = if state >= table.special {
                table.output(state)
            } else {
                0
            };
            let end = table.eoi(state);
            if let Some(w) = k.checked_sub(WORDS_AT) {
                if let (Some(n), Some(e)) = (words_now.get_mut(w), words_eoi.get_mut(w)) {
                    *n = out;
                    *e = end;
                }
            } else {
                now.found |= out;
                eoi.found |= end;
            }
        }
        now.words = reported(&words_now);
        eoi.words = reported(&words_eoi);
        self.states.push(State { key, now, eoi });
        for row in [row, row | self.twin] {
            let at = row as usize;
            if let Some(transitions) = self.trans.get_mut(at..at + (1 << SHIFT)) {
                transitions.fill(UNKNOWN);
            }
            if let Some(t) = self
                .trans
                .get_mut(row as usize | usize::from(self.classes.cont))
            {
                *t = row;
            }
        }
        self.ids.insert(key, row);
        Some(row)
    }

    /// Table `k`'s `state`, or its start state where `state` is idle.
    fn canonical(&self, k: usize, state: u8) -> u8 {
        let idle = self.tables.idle_of(k);
        if idle
            .get(usize::from(state >> 6))
            .is_some_and(|w| w >> (state & 63) & 1 != 0)
        {
            0
        } else {
            state
        }
    }
}

/// Whether `b` is a continuation byte of UTF-8 (`0x80..=0xBF`).
#[inline(always)]
fn is_continuation(b: u8) -> bool {
    (b as i8) < -64
}

#[cfg(test)]
mod tests {
    use super::super::curated::plain;
    use super::super::curated_factors::{cuts, scan_in};
    use super::super::utf8::symbols;
    use super::*;
    use std::string::String;

    /// Texts that strain the automaton: corpus lines cut anywhere, window
    /// words near each other and across lines, characters of every UTF-8
    /// length (U+2028 too), long words and runs of one factor; from 100
    /// bytes to 30 KB.
    fn texts(count: usize, seed: u64) -> Vec<String> {
        let lines: Vec<&str> = include_str!("../../tests/corpus/curated/errors.jsonl")
            .lines()
            .chain(include_str!("../../tests/corpus/real/errors.jsonl").lines())
            .collect();
        let pieces = [
            "account",
            " rate limit",
            "daily",
            " quota",
            "hit your",
            " limit",
            "\n",
            " ",
            "400",
            "provider returned error",
            "limit limit limit ",
            "\u{e9}",
            "\u{2192}",
            "\u{2028}",
            "\u{1f600}",
            "\u{670d}\u{52a1}\u{7e41}\u{5fd9}",
            "retry-after: 30",
            "per minute",
        ];
        let mut seed = seed;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        (0..count)
            .map(|i| {
                let len = [100, 700, 3_000, 12_000, 30_000][i % 5];
                let mut text = String::new();
                while text.len() < len {
                    if next() % 2 == 0 {
                        let line = lines[(next() % lines.len() as u64) as usize];
                        let a = (next() as usize) % (line.len() + 1);
                        let b = (a + (next() as usize) % 120).min(line.len());
                        if let Some(part) = line.get(a..b) {
                            text.push_str(part);
                        }
                    } else {
                        text.push_str(pieces[(next() % pieces.len() as u64) as usize]);
                    }
                }
                text
            })
            .collect()
    }

    /// The labels of `text` through `lanes` lanes cut by `cuts`, to `to`,
    /// then one run to the end.
    fn through_lanes<const N: usize>(lazy: &mut Lazy, text: &str, to: usize) -> Option<u8> {
        let bytes = text.as_bytes();
        let cuts = cuts::<N>(bytes, 0, to)?;
        let mut run = Run::at(0, 0);
        let (stop, _) = lazy.lanes(&mut run, bytes, &cuts, to);
        if stop < bytes.len() {
            lazy.run(&mut run, bytes, stop, bytes.len());
        }
        Some(run.found)
    }

    /// Lanes find what one run finds (the plain scan's labels), with two
    /// lanes to four, to the end of the text or to a character boundary
    /// inside it; with a cache that holds every state and with one so
    /// small that it is emptied inside the lanes, again and again (their
    /// states kept, their checkpoints not trusted after).
    #[test]
    fn lanes_read_as_one_run() {
        let mut roomy = Lazy::new(CAPACITY).expect("a cache");
        let mut small = Lazy::new(12).expect("a cache");
        let mut laned = 0;
        for text in texts(100, 0x9E37_79B9_7F4A_7C15) {
            let want = plain(0, symbols(&text));
            let mut to = text.len() / 2;
            while !text.is_char_boundary(to) {
                to -= 1;
            }
            for lazy in [&mut roomy, &mut small] {
                for end in [text.len(), to] {
                    for got in [
                        through_lanes::<2>(lazy, &text, end),
                        through_lanes::<3>(lazy, &text, end),
                        through_lanes::<4>(lazy, &text, end),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        assert_eq!(got, want, "{text:?}");
                        laned += 1;
                    }
                }
            }
        }
        assert!(laned > 700, "{laned}");
        assert!(small.generation > 100, "{}", small.generation);
    }

    /// A window's edges, read through twins: each alternative's first and
    /// second words at the most characters apart its window allows, one
    /// fewer and more, and as far again as the longest second word (a
    /// window closes there with a word under way), over fillers of short
    /// words (the start state between them), of one long word (a word
    /// always under way) and of characters of two bytes; placed so that
    /// the lanes' cuts and checkpoints fall around them. Lanes and the
    /// whole search find what the plain scan finds.
    #[test]
    fn windows_close_where_the_plain_scan_closes_them() {
        use super::super::dfa::CURATED_WINDOWS;
        const WORDS: [&str; 15] = [
            "account",
            "account's",
            "rate limit",
            "ratelimit",
            "hit a",
            "hit your",
            "limit",
            "daily",
            "allocation",
            "quota",
            "monthly",
            "allowance",
            "credits",
            "400",
            "provider returned error",
        ];
        let fillers = ["ab cd ", "x", "\u{e9}"];
        let mut roomy = Lazy::new(CAPACITY).expect("a cache");
        let mut small = Lazy::new(12).expect("a cache");
        let mut found = 0;
        for &(firsts, seconds, gap, _) in &CURATED_WINDOWS {
            for (&f, &s) in firsts.iter().zip(seconds.iter().cycle()) {
                let gap = usize::from(gap);
                for apart in [1, gap - 1, gap, gap + 1, gap + 23, gap + 24] {
                    for filler in fillers {
                        for before in [0, 700, 1_400, 2_000] {
                            let mut text = "lorem ipsum ".repeat(before / 12);
                            text.push(' ');
                            text.push_str(WORDS[usize::from(f)]);
                            text.push(' ');
                            let mut between: String = filler.repeat(apart);
                            while between.chars().count() > apart - 1 {
                                between.pop();
                            }
                            text.push_str(&between);
                            text.push(' ');
                            text.push_str(WORDS[usize::from(s)]);
                            text.push_str(" and so on");
                            text.push_str(&"lorem ipsum ".repeat(200));
                            let want = plain(0, symbols(&text));
                            found += usize::from(want != 0);
                            for lazy in [&mut roomy, &mut small] {
                                assert_eq!(scan_in(lazy, &text, 0), want, "{text:?}");
                                for got in [
                                    through_lanes::<2>(lazy, &text, text.len()),
                                    through_lanes::<3>(lazy, &text, text.len()),
                                    through_lanes::<4>(lazy, &text, text.len()),
                                ]
                                .into_iter()
                                .flatten()
                                {
                                    assert_eq!(got, want, "{text:?}");
                                }
                            }
                        }
                    }
                }
            }
        }
        // Both sides of every window's edge were read.
        assert!(found > 100, "{found}");
    }

    /// The whole search (factors, runs, lanes) gives the plain scan's
    /// labels through a cache too small for the texts' states.
    #[test]
    fn a_full_cache_changes_no_answer() {
        let mut small = Lazy::new(40).expect("a cache");
        for text in texts(60, 0xD1B5_4A32_D192_ED03) {
            assert_eq!(
                scan_in(&mut small, &text, 0),
                plain(0, symbols(&text)),
                "{text:?}"
            );
        }
        assert!(small.generation > 10, "{}", small.generation);
    }
}
