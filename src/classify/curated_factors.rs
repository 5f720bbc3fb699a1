//! The curated classifier's factor search (on std, feature `prefilter`):
//! the tables step only around the hits of their factors.
//!
//! Every match of a pattern of a curated table contains one of that
//! table's factors (`dfa::CURATED_FACTORS`, derived by the generator from
//! the patterns' syntax, each with the mask of the tables it serves, how
//! many bytes before it a match may start and its *needs*, as the other
//! sets' factors in `super::factors`). The text is lower-cased in chunks
//! and searched with the same packed Teddy search ([`Search`]); a hit
//! whose needs hold, of a table still needed, steps the *run* of all the
//! tables, as one automaton (`super::curated_lazy`):
//!
//! - A run starts at a character boundary after a character that is not
//!   an ASCII word character (or at the start of the text), in the start
//!   state: the curated patterns' only assertion is the ASCII `\b`, which
//!   sees such a character as it sees the start of the text, so the run
//!   reports exactly the matches that start there or later. A hit's run
//!   starts at or before where a match containing it may start (the
//!   factor's bound, or the start of its line), moved back over ASCII word
//!   characters.
//! - A run goes on past the hit until it is *idle*: every table in a
//!   state whose transitions are its start state's, which nothing reports
//!   from (so no match is under way, and what follows is read as from a
//!   fresh start, by the runs of later hits), and no window of the window
//!   scanner (`super::curated::Windows`) open. A hit whose run would start
//!   inside the last run (between its start and where it stopped) carries
//!   on from where that stopped; no byte is read twice by one run.
//! - A run that reaches the end of the text adds the matches that end
//!   with it.
//!
//! The names every hint rule reads its text at are a guard's pattern, so
//! factors too: a text without one has no hint, and the rules are not read
//! (`HINT` among the bits found). Once the labels of every table are found
//! the search stops. Texts that are not valid UTF-8 take the plain scan
//! (`super::curated`).

extern crate std;

use std::sync::OnceLock;

use super::curated::{TABLES, WORDS_AT};
use super::curated_lazy::{Lazy, Run, LANES};
use super::dfa::{CURATED_FACTORS, CURATED_FACTOR_MAX_LEN, CURATED_WINDOWS};
use super::factors::{needed, Hits, LineStarts, Search, Text};
use super::utf8::char_start;
use super::wait_hint::is_word;

/// `N` places to cut `bytes[from..to]` at for [`Lazy::lanes`], the first
/// `from`, in increasing order: each about as far from the last as the
/// part is long over `N`, moved back to a character boundary after a
/// character that is not an ASCII word character (where a run may start);
/// `None` where there are not so many.
pub(super) fn cuts<const N: usize>(bytes: &[u8], from: usize, to: usize) -> Option<[usize; N]> {
    let mut cuts = [from; N];
    let part = to.checked_sub(from)? / N;
    for i in 1..N {
        let floor = *cuts.get(i - 1)?;
        let s = run_start(bytes, char_start(bytes, from + part * i), floor);
        if s <= floor {
            return None;
        }
        *cuts.get_mut(i)? = s;
    }
    Some(cuts)
}

/// The tables as [`Runs::live`] counts them: one per table before
/// [`WORDS_AT`], and the window words' tables as one.
const UNITS: usize = WORDS_AT + 1;

/// The window words' tables, in [`Runs::live`].
const WORDS: usize = WORDS_AT;

/// Texts from this many bytes on take the factor search; shorter ones,
/// the tables over the whole text (a lazy automaton's one pass costs less
/// than the searchers' start).
const SEARCH_MIN_LEN: usize = 512;

/// Bytes lower-cased and searched at a time.
const CHUNK: usize = 4096;

/// The first chunk's size, in a small buffer: a short text (most error
/// texts) is searched without zeroing a whole chunk's.
const FIRST_CHUNK: usize = 256;

/// The search for [`CURATED_FACTORS`], built at first use (on a thread
/// of its own: `aho-corasick`'s builder needs more stack than a small host
/// thread has in debug builds, and any thread may classify first), and
/// the most bytes before a factor a match containing it may start where
/// its factor bounds it (see [`Runs::step`]); `None` where the target has
/// no Teddy, or the thread could not be made.
fn search() -> Option<&'static (Search, usize)> {
    static SEARCH: OnceLock<Option<(Search, usize)>> = OnceLock::new();
    SEARCH
        .get_or_init(|| {
            let search = on_own_thread(|| {
                Search::new(CURATED_FACTORS.len(), |i| {
                    CURATED_FACTORS.get(i).map_or("", |f| f.0)
                })
            })?;
            let reach = CURATED_FACTORS
                .iter()
                .filter_map(|f| f.1)
                .max()
                .map_or(0, usize::from);
            Some((search, reach))
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
/// on top of `found` (the literals'), `HINT` among them where the name of
/// a hint rule occurs; `None` where the tables could not be unpacked.
pub(super) fn scan(text: &str, found: u8) -> Option<u8> {
    Lazy::with(|lazy| scan_in(lazy, text, found))
}

/// [`scan`] with the cache `lazy`.
pub(super) fn scan_in(lazy: &mut Lazy, text: &str, found: u8) -> u8 {
    let bytes = text.as_bytes();
    let search = if bytes.len() >= SEARCH_MIN_LEN {
        search()
    } else {
        None
    };
    let Some((search, reach)) = search else {
        // Short texts (and every text where the target has no Teddy): the
        // tables step over the whole text.
        let mut run = Run::at(0, found);
        lazy.run(&mut run, bytes, 0, bytes.len());
        return run.found;
    };
    let mut runs = Runs::new(lazy, found, *reach);
    let mut first = [0u8; FIRST_CHUNK + CURATED_FACTOR_MAX_LEN - 1];
    let mut at = 0;
    if !runs.chunk(search, bytes, &mut at, FIRST_CHUNK, &mut first) && at < bytes.len() {
        runs.rest(search, bytes, at);
    }
    runs.run.found
}

/// The run of the tables, as one automaton ([`Lazy`]).
struct Runs<'a> {
    lazy: &'a mut Lazy,
    /// Where it is, and the labels found.
    run: Run,
    /// Tables still needed (bit `k`: table `k`; the window words' tables
    /// as one, at bit [`WORDS_AT`]).
    live: u32,
    /// Where the run started (`usize::MAX`: not yet) and where it stopped
    /// (the next byte it would read).
    start: usize,
    stop: usize,
    /// The most bytes before a bounded factor that a match may start.
    reach: usize,
    /// Where the last hit was, how many hits in a row were crowded (each
    /// within [`CROWDED`] bytes of the one before), and how far past a hit
    /// the run reads at least (more, as hits crowd).
    hit: usize,
    crowd: usize,
    ahead: usize,
    /// Bytes the run read in the current chunk.
    stepped: usize,
    /// The line starts asked.
    line: LineStarts,
}

/// A hit this close to the one before (or to where the run stopped) is
/// crowded.
const CROWDED: usize = 64;

/// From this many crowded hits in a row on, each is stepped (needed or
/// not) and the run reads on past it, twice as far as past the last (at
/// least a chunk).
const CROWD: usize = 8;

/// The most chunks stepped through without a search (see
/// [`Runs::rest`]).
const STRETCH_MAX: usize = 64;

/// One over the share of a searched chunk its runs read from which the
/// next chunks are stepped through without a search (see [`Runs::rest`]).
/// A searched chunk costs the search and its runs, one lane each; a chunk
/// stepped through, the lanes alone. On `benches/data/body.html` repeated
/// to 1 MB, whose searched chunks' runs read 43 % of them (after the
/// first labels are found), a quarter made the classification 13 %
/// faster than a half (paired runs); a third, a fifth and an eighth gave
/// the same as a quarter, and every other body of the report the same as
/// before.
const STRETCH_SHARE: usize = 4;

/// Parts from this many bytes on are stepped in [`LANES`] lanes.
const LANES_MIN_LEN: usize = 1024;

/// The farthest a run reads past a hit without an idle stop's search.
const AHEAD_MAX: usize = 1 << 16;

impl<'a> Runs<'a> {
    fn new(lazy: &'a mut Lazy, found: u8, reach: usize) -> Self {
        let mut runs = Runs {
            lazy,
            run: Run::at(0, found),
            live: (1 << UNITS) - 1,
            start: usize::MAX,
            stop: usize::MAX,
            reach,
            hit: usize::MAX,
            crowd: 0,
            ahead: 0,
            stepped: 0,
            line: LineStarts::default(),
        };
        runs.prune();
        runs
    }

    /// Drops the tables whose labels are all found.
    fn prune(&mut self) {
        for u in 0..UNITS {
            if labels(u) & !self.run.found == 0 {
                self.live &= !(1 << u);
            }
        }
    }

    /// The text from `at` on, in chunks of the larger buffer.
    ///
    /// Where the runs read [`STRETCH_SHARE`] of a chunk or more, searching
    /// costs more than it saves: the next chunks are stepped through
    /// without, twice as many after each such chunk (up to
    /// [`STRETCH_MAX`]); the chunk after them is searched again, to tell.
    #[inline(never)]
    fn rest(&mut self, search: &Search, bytes: &[u8], mut at: usize) {
        let mut lower = [0u8; CHUNK + CURATED_FACTOR_MAX_LEN - 1];
        let mut stretch = 0;
        while at < bytes.len() {
            let from = at;
            self.stepped = 0;
            if self.chunk(search, bytes, &mut at, CHUNK, &mut lower) {
                return;
            }
            if self.stepped * STRETCH_SHARE < at - from {
                stretch = 0;
                continue;
            }
            stretch = (stretch * 2).clamp(1, STRETCH_MAX);
            let past = at.saturating_add(CHUNK * stretch);
            if at < bytes.len() && self.step(bytes, at, past) {
                return;
            }
            at = at.max(self.stop);
        }
    }

    /// Searches the chunk of `size` bytes at `at` (lower-cased into
    /// `buffer`) and steps the run where its hits ask; `at` moves past it
    /// (and past where the run stopped). Whether every table is done.
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
            self.step(bytes, *at, bytes.len());
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
            // Hits crowd (needed or not): the run reads on further past
            // each, twice as far each time, rather than wait for the next.
            let last = if self.stop == usize::MAX {
                self.hit
            } else {
                self.hit.max(self.stop)
            };
            let crowded = h <= last.saturating_add(CROWDED);
            self.hit = h;
            self.crowd = if crowded { self.crowd + 1 } else { 0 };
            if self.crowd < CROWD {
                self.ahead = 0;
                let Some(&(_, _, mask, needs)) = CURATED_FACTORS.get(factor) else {
                    continue;
                };
                if units(mask) & self.live == 0 || !needed(text, h, needs) {
                    continue;
                }
            } else {
                self.ahead = (self.ahead * 2).clamp(CHUNK, AHEAD_MAX);
            }
            if self.step(bytes, h, *at + stop) {
                return true;
            }
            // The run read past every hit before where it stopped.
            hits.skip_to(self.stop.saturating_sub(*at));
        }
        *at = if self.stop == usize::MAX {
            end
        } else {
            end.max(self.stop)
        };
        false
    }

    /// Steps the run so that it has read the text from where a match
    /// containing the hit at `h` may start past `past`, and is idle or at
    /// the end; whether every table is done.
    ///
    /// A match containing a factor starts no earlier than the factor's
    /// bound before it, or else than its line: the run starts no later
    /// than both the start of `h`'s line and [`Runs::reach`] bytes before
    /// `h`. So the run of a later hit starts inside this one or after it,
    /// and the hits before where it stops need no run of their own.
    fn step(&mut self, bytes: &[u8], h: usize, past: usize) -> bool {
        let from = self
            .line
            .of(bytes, h)
            .min(char_start(bytes, h.saturating_sub(self.reach)));
        if !(self.start..=self.stop).contains(&from) {
            // A run of its own: from after a character that is not an
            // ASCII word character, but not back past where the last run
            // stopped (idle there: it carries on).
            let floor = if self.stop < from { self.stop } else { 0 };
            let s = run_start(bytes, from, floor);
            if s != self.stop {
                self.start = s;
                self.stop = s;
                self.run = Run::at(s, self.run.found);
            }
        }
        if self.stop >= bytes.len() {
            return false;
        }
        let (before, was) = (self.run.found, self.stop);
        let mut past = past.saturating_add(self.ahead).min(bytes.len());
        // A long way to go: in lanes, part after part of that length, as
        // long as the run is not idle at the end of one.
        loop {
            let part = past.saturating_sub(self.stop);
            match cuts::<LANES>(bytes, self.stop, past) {
                Some(cuts) if part >= LANES_MIN_LEN => {
                    let (stop, idle) = self.lazy.lanes(&mut self.run, bytes, &cuts, past);
                    self.stop = stop;
                    if idle {
                        break;
                    }
                    past = stop.saturating_add(part).min(bytes.len());
                }
                _ => {
                    self.stop = self.lazy.run(&mut self.run, bytes, self.stop, past);
                    break;
                }
            }
        }
        self.stepped += self.stop.saturating_sub(was);
        if self.run.found != before {
            self.prune();
        }
        self.live == 0
    }
}

/// Where a run may start at or before `at` (a character boundary), but
/// not before `floor`: moved back over ASCII word characters, so that the
/// character before it is not one (or it is `floor`).
fn run_start(bytes: &[u8], at: usize, floor: usize) -> usize {
    let mut s = at;
    while s > floor && bytes.get(s - 1).is_some_and(|&b| is_word(b)) {
        s -= 1;
    }
    s
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
        let Some((search, _)) = search() else {
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
