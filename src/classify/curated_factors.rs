//! The curated classifier's factor search (on std, feature `prefilter`):
//! each of its tables steps only around the hits of its own factors.
//!
//! Every match of a pattern of a curated table contains one of that
//! table's factors (`dfa::CURATED_FACTORS`, derived by the generator from
//! the patterns' syntax, each with the mask of the tables it serves, how
//! many bytes before it a match may start and its *needs*, as the other
//! sets' factors in `super::factors`). The text is lower-cased in chunks
//! and searched with the same packed Teddy search ([`Search`]); a hit
//! whose needs hold steps, for each table of its mask still needed, a
//! *run* of that table:
//!
//! - A run starts at a character boundary after a character that is not
//!   an ASCII word character (or at the start of the text), in the table's
//!   start state: the curated patterns' only assertion is the ASCII `\b`,
//!   which sees such a character as it sees the start of the text, so the
//!   run reports exactly the matches that start there or later. A hit's
//!   run starts at or before where a match containing it may start (the
//!   factor's bound, or the start of its line), moved back over ASCII word
//!   characters.
//! - A run goes on past the hit until the table is *idle*: in a state
//!   whose transitions are its start state's, which nothing reports from
//!   (so no match is under way, and what follows is read as from a fresh
//!   start, by the runs of later hits). A hit whose run would start inside
//!   the table's last run (between its start and where it stopped) carries
//!   on from where that stopped; no byte is read twice by one run.
//! - The two window words' tables run together, as one, with the window
//!   scanner (`super::curated::Windows`), which is idle once no first word
//!   can still meet its second.
//! - A run that reaches the end of the text adds the matches that end
//!   with it.
//!
//! The names every hint rule reads its text at are factors too (mask
//! `CURATED_HINT_MASK`): a text without one has no hint, and the rules are
//! not read (`HINT` among the bits found). A table whose labels are all
//! found steps no more; once every table is done and a name was seen the
//! search stops. Texts that are not valid UTF-8 take the plain scan
//! (`super::curated`).

extern crate std;

use std::sync::OnceLock;

use super::curated::{Unpacked, Windows, ALL, TABLES, WORDS_AT};
use super::dfa::{
    CURATED_FACTORS, CURATED_FACTOR_MAX_LEN, CURATED_HINT_MASK, CURATED_WINDOWS,
    CURATED_WORD_TABLES, HINT,
};
use super::factors::{needed, Hits, LineStarts, Search, Text};
use super::symbol::SYMBOLS;
use super::utf8::{char_start, decode};

/// The runs: one per table before [`WORDS_AT`], and the window words'
/// tables as one.
const UNITS: usize = WORDS_AT + 1;

/// The run of the window words' tables.
const WORDS: usize = WORDS_AT;

/// Bytes lower-cased and searched at a time.
const CHUNK: usize = 4096;

/// The first chunk's size, in a small buffer: a short text (most error
/// texts) is searched without zeroing a whole chunk's.
const FIRST_CHUNK: usize = 256;

/// The search for [`CURATED_FACTORS`], built at first use (on a thread
/// of its own: `aho-corasick`'s builder needs more stack than a small host
/// thread has in debug builds, and any thread may classify first); `None`
/// where the target has no Teddy, or the thread could not be made.
fn search() -> Option<&'static Search> {
    static SEARCH: OnceLock<Option<Search>> = OnceLock::new();
    SEARCH
        .get_or_init(|| {
            on_own_thread(|| {
                Search::new(CURATED_FACTORS.len(), |i| {
                    CURATED_FACTORS.get(i).map_or("", |f| f.0)
                })
            })
        })
        .as_ref()
}

/// What `build` builds, on a thread of its own; `None` where that fails.
fn on_own_thread<T: Send>(build: impl FnOnce() -> Option<T> + Send) -> Option<T> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("autoretry-curated".into())
            .spawn_scoped(s, build)
            .ok()?
            .join()
            .ok()?
    })
}

/// The bits of [`super::curated::scan_str`]'s findings that `text` has,
/// on top of `found` (the literals'), with `HINT` where the name of a
/// hint rule occurs; `None` where the factor search cannot run (no Teddy
/// on the target, or the tables could not be unpacked).
pub(super) fn scan(text: &str, found: u8) -> Option<u8> {
    let search = search()?;
    let tables = Unpacked::get()?;
    let mut runs = Runs::new(tables, found);
    let bytes = text.as_bytes();
    let mut first = [0u8; FIRST_CHUNK + CURATED_FACTOR_MAX_LEN - 1];
    let mut at = 0;
    if !runs.chunk(search, bytes, &mut at, FIRST_CHUNK, &mut first) && at < bytes.len() {
        runs.rest(search, bytes, at);
    }
    Some(runs.found)
}

/// The state of every run.
struct Runs {
    tables: &'static Unpacked,
    /// Labels found.
    found: u8,
    /// Runs still needed (bit `u`: run `u`).
    live: u32,
    /// Per run, where it started (`usize::MAX`: not yet) and where it
    /// stopped (the next byte it would read).
    start: [usize; UNITS],
    stop: [usize; UNITS],
    /// Per table, its state where its run stopped.
    states: [u8; ALL],
    /// The window scanner of the words' run, and the characters that run
    /// has read.
    windows: Windows,
    chars: usize,
    /// The line starts asked.
    line: LineStarts,
}

impl Runs {
    fn new(tables: &'static Unpacked, found: u8) -> Self {
        let mut runs = Runs {
            tables,
            found,
            live: (1 << UNITS) - 1,
            start: [usize::MAX; UNITS],
            stop: [usize::MAX; UNITS],
            states: [0; ALL],
            windows: Windows::default(),
            chars: 0,
            line: LineStarts::default(),
        };
        runs.prune();
        runs
    }

    /// Drops the runs whose labels are all found.
    fn prune(&mut self) {
        for u in 0..UNITS {
            if labels(u) & !self.found == 0 {
                self.live &= !(1 << u);
            }
        }
    }

    /// Whether every run is done and a hint rule's name was seen: nothing
    /// is left to look for.
    fn done(&self) -> bool {
        self.live == 0 && self.found & HINT != 0
    }

    /// The text from `at` on, in chunks of the larger buffer.
    #[inline(never)]
    fn rest(&mut self, search: &Search, bytes: &[u8], mut at: usize) {
        let mut lower = [0u8; CHUNK + CURATED_FACTOR_MAX_LEN - 1];
        while at < bytes.len() {
            if self.chunk(search, bytes, &mut at, CHUNK, &mut lower) {
                return;
            }
        }
    }

    /// Searches the chunk of `size` bytes at `at` (lower-cased into
    /// `buffer`) and steps the runs its hits ask for; `at` moves past it.
    /// Whether every run is done.
    #[inline(always)]
    fn chunk(
        &mut self,
        search: &Search,
        bytes: &[u8],
        at: &mut usize,
        size: usize,
        buffer: &mut [u8],
    ) -> bool {
        let end = bytes.len().min(*at + size);
        let chunk = bytes
            .get(*at..bytes.len().min(end + CURATED_FACTOR_MAX_LEN - 1))
            .unwrap_or_default();
        let Some(lower) = buffer.get_mut(..chunk.len()) else {
            // Not reached (the buffers hold a chunk and its overlap).
            self.every_run(bytes, *at);
            return true;
        };
        let rare = search.lower(chunk, lower);
        let text = Text {
            bytes,
            lower,
            at: *at,
        };
        let mut hits = Hits::new(search, lower, rare);
        while let Some((start, stop, factor)) = hits.next() {
            let h = *at + start;
            if h >= end {
                break;
            }
            let Some(&(_, before, mask, needs)) = CURATED_FACTORS.get(factor) else {
                continue;
            };
            let units = units(mask) & self.live;
            let hint = mask & CURATED_HINT_MASK != 0 && self.found & HINT == 0;
            if units == 0 && !hint || !needed(text, h, needs) {
                continue;
            }
            if hint {
                self.found |= HINT;
                if self.done() {
                    return true;
                }
            }
            let from = match before {
                Some(before) => char_start(bytes, h.saturating_sub(usize::from(before))),
                None => self.line.of(bytes, h),
            };
            if self.step(bytes, units, from, *at + stop) {
                return true;
            }
        }
        *at = end;
        false
    }

    /// Where no search runs: every run from the start of `at`'s line to
    /// the end of the text.
    fn every_run(&mut self, bytes: &[u8], at: usize) {
        let from = self.line.of(bytes, at);
        self.step(bytes, self.live, from, bytes.len());
    }

    /// Steps the runs of `units` so that each has read the text from
    /// `from` (or earlier) past `past`, and is idle or at the end; whether
    /// every run is done.
    fn step(&mut self, bytes: &[u8], units: u32, from: usize, past: usize) -> bool {
        let mut left = units;
        while left != 0 {
            let u = left.trailing_zeros() as usize;
            left &= left - 1;
            if self.live & (1 << u) == 0 {
                continue;
            }
            let before = self.found;
            self.run(u, bytes, from, past);
            if self.found != before {
                self.prune();
                if self.done() {
                    return true;
                }
            }
        }
        false
    }

    /// Steps run `u` (see [`Runs::step`]).
    fn run(&mut self, u: usize, bytes: &[u8], from: usize, past: usize) {
        let (start, stop) = (self.start[u], self.stop[u]);
        if !(start..=stop).contains(&from) {
            // A run of its own: from after a character that is not an
            // ASCII word character, but not back past where the last run
            // stopped (idle there: it carries on).
            let floor = if stop < from { stop } else { 0 };
            let mut s = from;
            while s > floor && bytes.get(s - 1).is_some_and(|&b| is_word(b)) {
                s -= 1;
            }
            if s != stop {
                self.start[u] = s;
                self.stop[u] = s;
                if u == WORDS {
                    for state in self.states.get_mut(WORDS_AT..).unwrap_or_default() {
                        *state = 0;
                    }
                    self.windows = Windows::default();
                    self.chars = 0;
                } else if let Some(state) = self.states.get_mut(u) {
                    *state = 0;
                }
            }
        }
        let pos = self.stop[u];
        if pos >= bytes.len() {
            return;
        }
        self.stop[u] = if u == WORDS {
            self.run_words(bytes, pos, past)
        } else {
            self.run_table(u, bytes, pos, past)
        };
    }

    /// Steps table `k` from `pos` until it is idle past `past`, or to the
    /// end of the text; where it stopped.
    #[inline(always)]
    fn run_table(&mut self, k: usize, bytes: &[u8], mut pos: usize, past: usize) -> usize {
        let Some(table) = TABLES.get(k) else {
            return bytes.len();
        };
        let rows = self.tables.rows_of(k);
        let idle = self.tables.idle_of(k);
        let mut state = self.states.get(k).copied().unwrap_or(0);
        let mut found = 0;
        while pos < bytes.len() && !(pos >= past && is_idle(idle, state)) {
            let (sym, n) = symbol(bytes, pos);
            state = rows
                .get(usize::from(state) * SYMBOLS + usize::from(sym))
                .copied()
                .unwrap_or(0);
            if state >= table.special {
                found |= table.output(state);
            }
            pos += n;
        }
        if pos >= bytes.len() {
            found |= table.eoi(state);
        }
        if let Some(s) = self.states.get_mut(k) {
            *s = state;
        }
        self.found |= found;
        pos
    }

    /// Steps the window words' tables and the window scanner from `pos`
    /// until they are idle past `past`, or to the end of the text; where
    /// they stopped.
    fn run_words(&mut self, bytes: &[u8], mut pos: usize, past: usize) -> usize {
        let mut states = [0u8; CURATED_WORD_TABLES];
        for (s, &state) in states
            .iter_mut()
            .zip(self.states.get(WORDS_AT..).unwrap_or_default())
        {
            *s = state;
        }
        let idle = |states: &[u8; CURATED_WORD_TABLES], windows: &Windows, chars| {
            states
                .iter()
                .enumerate()
                .all(|(w, &s)| is_idle(self.tables.idle_of(WORDS_AT + w), s))
                && !windows.waiting(chars)
        };
        while pos < bytes.len() && !(pos >= past && idle(&states, &self.windows, self.chars)) {
            let (sym, n) = symbol(bytes, pos);
            let mut outs = [0u8; CURATED_WORD_TABLES];
            let mut any = false;
            for (w, (state, out)) in states.iter_mut().zip(&mut outs).enumerate() {
                let k = WORDS_AT + w;
                *state = self
                    .tables
                    .rows_of(k)
                    .get(usize::from(*state) * SYMBOLS + usize::from(sym))
                    .copied()
                    .unwrap_or(0);
                if let Some(table) = TABLES.get(k) {
                    if *state >= table.special {
                        *out = table.output(*state);
                        any |= *out != 0;
                    }
                }
            }
            if any {
                self.found |= self.windows.words(&outs, self.chars);
            }
            if sym == b'\n' {
                self.windows.line_break();
            }
            self.chars = self.chars.saturating_add(1);
            pos += n;
        }
        if pos >= bytes.len() {
            let mut outs = [0u8; CURATED_WORD_TABLES];
            for (w, (&state, out)) in states.iter().zip(&mut outs).enumerate() {
                *out = TABLES.get(WORDS_AT + w).map_or(0, |t| t.eoi(state));
            }
            self.found |= self.windows.words(&outs, self.chars);
        }
        for (s, state) in self
            .states
            .get_mut(WORDS_AT..)
            .unwrap_or_default()
            .iter_mut()
            .zip(states)
        {
            *s = state;
        }
        pos
    }
}

/// The symbol at `pos` (a character boundary of valid UTF-8) and its
/// length in bytes.
#[inline(always)]
fn symbol(bytes: &[u8], pos: usize) -> (u8, usize) {
    match bytes.get(pos) {
        Some(&b) if b < 0x80 => (b, 1),
        _ => decode(bytes, pos),
    }
}

/// Whether `b` is an ASCII word character (`[A-Za-z0-9_]`).
#[inline(always)]
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `state` is one of the idle states `idle` (a bit per state).
#[inline(always)]
fn is_idle(idle: &[u64; 4], state: u8) -> bool {
    idle.get(usize::from(state >> 6))
        .is_some_and(|w| w >> (state & 63) & 1 != 0)
}

/// The runs of the tables in `mask` (bit `k`: table `k`).
#[inline(always)]
fn units(mask: u32) -> u32 {
    let tables = mask & ((1 << WORDS_AT) - 1);
    if mask >> WORDS_AT != 0 {
        tables | 1 << WORDS
    } else {
        tables
    }
}

/// The labels run `u` can find.
fn labels(u: usize) -> u8 {
    if u == WORDS {
        CURATED_WINDOWS.iter().fold(0, |all, w| all | w.3)
    } else {
        TABLES.get(u).map_or(0, |t| t.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The search reports every occurrence of every factor, in any ASCII
    /// case, overlapping ones too, in the order of their starts: on texts
    /// made of the factors themselves (so that they crowd and overlap),
    /// against a comparison at every place.
    #[test]
    fn the_hits_are_every_occurrence() {
        let Some(search) = search() else {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            panic!("no Teddy on x86_64 or aarch64");
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            return;
        };
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut total = 0;
        for round in 0..200 {
            let mut text: Vec<u8> = Vec::new();
            while text.len() < [30, 200, 1000][round % 3] {
                let (f, ..) = CURATED_FACTORS[(next() % CURATED_FACTORS.len() as u64) as usize];
                // A factor, or a piece of one, in mixed case.
                let cut = if next() % 3 == 0 {
                    (next() as usize) % (f.len() + 1)
                } else {
                    f.len()
                };
                text.extend(f.bytes().take(cut).map(|b| {
                    if next() % 2 == 0 {
                        b.to_ascii_uppercase()
                    } else {
                        b
                    }
                }));
                if next() % 4 == 0 {
                    text.push(b' ');
                }
            }
            let lower: Vec<u8> = text.iter().map(u8::to_ascii_lowercase).collect();
            let mut want = Vec::new();
            for start in 0..lower.len() {
                for (i, (f, ..)) in CURATED_FACTORS.iter().enumerate() {
                    if lower[start..].starts_with(f.as_bytes()) {
                        want.push((start, start + f.len(), i));
                    }
                }
            }
            let mut got = Vec::new();
            let mut hits = Hits::new(search, &lower, true);
            while let Some(hit) = hits.next() {
                got.push(hit);
            }
            assert_eq!(
                got,
                want,
                "{:?}",
                std::string::String::from_utf8_lossy(&text)
            );
            total += want.len();
        }
        assert!(total > 2000, "{total}");
    }
}
