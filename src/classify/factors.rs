//! Long texts on std (feature `prefilter`): a vectorized search for the
//! patterns' required factors, and the DFAs only around each hit.
//!
//! Every match of a classic pattern but the anchored overflow pattern
//! contains one of `dfa::FACTORS` (lower case), which the generator derives
//! from the patterns' syntax, per set of labels looked for: once a label
//! is found, the scan searches on for the factors of the others only,
//! from the start of the line where it was found.
//! This scan lower-cases the text in chunks on the stack (overlapping by
//! the longest factor minus one byte, so that every occurrence lies whole
//! in one chunk) and finds the factors with `aho-corasick`'s packed Teddy
//! searchers (SSSE3 or AVX2 on x86_64, NEON on aarch64), one for the
//! factors that start with a letter and one for the others (see
//! [`Search`]). Where there is no Teddy, [`scan`] answers `None` and
//! `super::strategy` takes another path.
//!
//! The search reports every occurrence, overlapping ones included, in the
//! order of their starts. Around each hit the scan steps the same DFAs as
//! the plain scan, exactly:
//!
//! - A *segment* starts at a character boundary `s`, with every table in
//!   its quiet state after the character before `s` (nothing under way, as
//!   `super::prefilter` computes it) and no tail running; from there the
//!   tables report exactly the matches that start at `s` or later (the
//!   anchored pattern is the start state's alone, so none is invented).
//! - A hit's segment starts where a match containing it may start: the
//!   factor's bound before it, or the line's start (`None`), and runs past
//!   the hit until every table is quiet again, no tail runs and no window
//!   word (extended) waits for its second word. A quiet state has the
//!   future of a fresh start, so whatever match is left ends where one
//!   starting at that point or later ends, and that one contains a factor
//!   of its own, found later.
//! - A hit whose segment would start inside the current one continues it
//!   (no byte is read twice); a segment that would start before it starts
//!   again there.
//! - A hit whose factor may have a match anywhere on its line (`None`)
//!   runs its segment to the end of the line; the classic patterns match
//!   no line terminator (the generator checks it) but the anchored one, so
//!   the later hits of that line are covered. (The extended patterns may
//!   match a `\r` in a window's `[^\n]`: their factors are those with no
//!   line feed before them in a match, and lines start after a line feed.)
//! - A segment steps only the tables of the labels its hits' factors were
//!   chosen for (the generator lists them with each factor): another
//!   label's match holds a factor of its own, whose hit brings that
//!   label's tables in (from where the segment started, or from that hit's
//!   bound if nothing is under way). A line stepped whole covers the later
//!   hits on it of its labels only.
//! - The scan steps from offset 0 until nothing is under way first: the
//!   anchored pattern can only match there.
//! - A hit is stepped on only where one of its factor's *needs* holds
//!   (`dfa::Factor`, derived by the generator from the patterns): for a
//!   place the factor has in a literal of the patterns, the literals
//!   around it, each within the distance the pattern allows (on the hit's
//!   line where no line feed may come between). Every hit the rules above
//!   rely on (a factor chosen for an alternative) lies in such a place of
//!   a match, whose literals are all there: most
//!   hits of a short factor (`limit` in "limits per account", `server` in
//!   "server.js") cost a few comparisons and no stepping.
//!
//! Chunks where hits crowd (text full of factors) are stepped whole, as
//! one segment from the start of the crowded hit's line to the end of the
//! line the chunk ends in: the searcher's cost per hit would exceed the
//! DFAs'.
//!
//! A set's search is built once per process, at its first use (on the
//! heap: a few kilobytes; `benches/README.md` gives the time).

extern crate std;

use std::sync::OnceLock;
use std::vec::Vec;

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::Span;

use super::dfa::{Factor, Need, EXT_FACTOR_MAX_LEN, FACTOR_MAX_LEN};
use super::prefilter::{prefilter, Prefilter};
use super::step::Step;
use super::symbol::{LS, PS};
use super::utf8::{char_start, decode};

/// Bytes lower-cased and searched at a time.
const CHUNK: usize = 4096;

/// The first chunk's size; each next one is the length of the text before
/// it plus this, up to [`CHUNK`].
const FIRST_CHUNK: usize = 256;

/// Hits in one chunk above which the rest of the chunk is stepped whole.
const CROWDED: usize = CHUNK / 64;

/// The factors of a pattern set, per set of labels looked for.
pub(super) type Factors = [&'static [Factor]; 16];

/// The searches of a pattern set, per set of labels looked for.
pub(super) type Searches = [OnceLock<Option<Search>>; 16];

/// The search for the factors of the labels in `want` (see `dfa::FACTORS`),
/// built at first use; `None` where the target has no Teddy.
fn search<S: Step>(want: u8) -> Option<&'static Search> {
    let at = usize::from(want & 15);
    S::searches()
        .get(at)?
        .get_or_init(|| {
            let factors = S::FACTORS.get(at)?;
            Search::new(factors.len(), |i| factors.get(i).map_or("", |f| f.0))
        })
        .as_ref()
}

/// The search for one list of factors: Teddy searchers for those that
/// start with a letter, others for the rest (digits, punctuation), each
/// taking a run of at most 64 (the curated set's letters take three).
///
/// Teddy finds candidates by the low and high halves of the first bytes
/// of each factor, eight or sixteen factors sharing a bucket; in one
/// searcher, `429` and `limit` in one bucket let through every byte whose
/// halves are in either. Apart, each searcher's buckets stay narrow: on
/// the classic factors and `benches/data/body.html` repeated to 1 MB, one
/// searcher for all found every occurrence at 1.2 GB/s, the two together
/// at 1.8 GB/s.
pub(super) struct Search {
    groups: Vec<Group>,
    /// A group whose factors all start with a byte of `lo..=hi`, a range
    /// without letters or white space (the digits of `429`, `500`, ...):
    /// (the group, `lo`, `hi`). The pass that lower-cases a chunk tells
    /// whether it holds such a byte, and the group searches only the
    /// chunks that do (a text without digits is searched once, not twice).
    rare: Option<(usize, u8, u8)>,
}

/// The most factors one Teddy searcher takes.
const TEDDY_MAX: usize = 64;

/// The most searchers of a [`Search`].
const GROUPS_MAX: usize = 4;

/// One searcher of a [`Search`].
struct Group {
    searcher: Searcher,
    /// Per pattern of the searcher, its factor's index in the list.
    factors: Vec<usize>,
}

impl Search {
    /// The search for the `count` factors `text(0)`, `text(1)`, ... (lower
    /// case ASCII, none a prefix of another); `None` where the target has
    /// no Teddy.
    pub(super) fn new(count: usize, text: impl Fn(usize) -> &'static str) -> Option<Search> {
        let mut groups = Vec::new();
        let mut rare = None;
        for letters in [true, false] {
            let ids: Vec<usize> = (0..count)
                .filter(|&i| {
                    text(i)
                        .as_bytes()
                        .first()
                        .is_some_and(u8::is_ascii_alphabetic)
                        == letters
                })
                .collect();
            if ids.is_empty() {
                continue;
            }
            // Teddy takes at most 64 factors: runs of the sorted ones, a
            // searcher each.
            // The shortest factors in one run: Teddy fingerprints a
            // searcher's factors by as many first bytes as its shortest
            // has (at most 4), and fewer let more places through.
            let mut ids = ids;
            ids.sort_by_key(|&i| (text(i).len() >= 4, text(i)));
            let runs = ids.len().div_ceil(TEDDY_MAX);
            for run in ids.chunks(ids.len().div_ceil(runs)) {
                let run = bucketed(run.to_vec(), &text);
                let searcher = Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .builder()
                    .extend(run.iter().map(|&i| text(i)))
                    .build()?;
                let firsts = run
                    .iter()
                    .filter_map(|&i| text(i).as_bytes().first().copied());
                let (lo, hi) = (firsts.clone().min()?, firsts.max()?);
                if !letters
                    && runs == 1
                    && (lo..=hi).all(|b| !b.is_ascii_alphabetic() && !b.is_ascii_whitespace())
                {
                    rare = Some((groups.len(), lo, hi));
                }
                groups.push(Group {
                    searcher,
                    factors: run,
                });
            }
        }
        if groups.len() > GROUPS_MAX {
            return None;
        }
        Some(Search { groups, rare })
    }

    /// Lower-cases `chunk` into `lower` (as long); whether it may hold a
    /// factor of the [`Search::rare`] group (some byte of it is in the
    /// group's range of first bytes), for [`Hits::new`].
    #[inline(always)]
    pub(super) fn lower(&self, chunk: &[u8], lower: &mut [u8]) -> bool {
        let (lo, span) = self.rare.map_or((0, 255), |(_, lo, hi)| (lo, hi - lo));
        let mut rare = 0u8;
        for (l, &b) in lower.iter_mut().zip(chunk) {
            *l = b.to_ascii_lowercase();
            rare |= u8::from(b.wrapping_sub(lo) <= span);
        }
        rare != 0
    }
}

/// `ids` in the order that puts factors alike in one Teddy bucket.
///
/// Teddy lets a position through when its bytes' halves are in the masks
/// of one bucket: the fewer distinct halves a bucket's factors start with,
/// the fewer positions it lets through for nothing. `aho-corasick` puts
/// the `i`-th pattern in bucket `B - 1 - i % B` (`B`: 8, or 16 for more
/// than 32 patterns with AVX2), so this order gives each bucket a run of
/// the factors sorted by their text: they share their first letters. On
/// `benches/data/lorem.html` repeated to 1 MB the classic letters'
/// searcher went from 0.24 to 0.15 ms, the extended one's from 0.78 to
/// 0.49 ms (best of 40). The order only ever changes the speed: the hits
/// are the same in any order.
pub(super) fn bucketed<'a>(mut ids: Vec<usize>, text: impl Fn(usize) -> &'a str) -> Vec<usize> {
    ids.sort_by_key(|&i| text(i));
    let n = ids.len();
    let buckets = if n > 32 { 16 } else { 8 };
    // Bucket `b` (in the order `aho-corasick` counts down) takes the
    // patterns `b`, `b + buckets`, ...: as many as that, from the run.
    let mut runs: Vec<&[usize]> = Vec::with_capacity(buckets);
    let mut rest = ids.as_slice();
    for b in 0..buckets {
        let (run, after) = rest.split_at((b..n).step_by(buckets).count().min(rest.len()));
        runs.push(run);
        rest = after;
    }
    (0..n)
        .filter_map(|i| runs.get(i % buckets)?.get(i / buckets).copied())
        .collect()
}

/// A hit: where a factor occurs (start, end) and which (its index).
pub(super) type Hit = (usize, usize, usize);

/// Every occurrence of a [`Search`]'s factors in a text, overlapping ones
/// too, in the order of their starts.
pub(super) struct Hits<'a> {
    search: &'a Search,
    text: &'a [u8],
    /// Per group, its next occurrence.
    next: [Option<Hit>; GROUPS_MAX],
}

impl<'a> Hits<'a> {
    /// The hits in `text`; without `rare`, none of the [`Search::rare`]
    /// group (the text holds no byte its factors start with).
    pub(super) fn new(search: &'a Search, text: &'a [u8], rare: bool) -> Self {
        let mut hits = Hits {
            search,
            text,
            next: [None; GROUPS_MAX],
        };
        for k in 0..hits.next.len() {
            if rare || search.rare.is_none_or(|(g, _, _)| g != k) {
                hits.refill(k, 0);
            }
        }
        hits
    }

    /// Group `k`'s first occurrence that starts at `from` or later.
    fn refill(&mut self, k: usize, from: usize) {
        let found = self.search.groups.get(k).and_then(|g| {
            let span = Span::from(from.min(self.text.len())..self.text.len());
            let m = g.searcher.find_in(self.text, span)?;
            let factor = g.factors.get(m.pattern().as_usize())?;
            Some((m.start(), m.end(), *factor))
        });
        if let Some(slot) = self.next.get_mut(k) {
            *slot = found;
        }
    }

    /// The next occurrence. Its group searches on one byte after its
    /// start: no factor is a prefix of another, so one factor per start is
    /// all there is.
    pub(super) fn next(&mut self) -> Option<Hit> {
        // The group whose next occurrence starts first (the first of
        // equals: no two factors start at one place).
        let mut k = None;
        let mut first = usize::MAX;
        for (g, hit) in self.next.iter().enumerate() {
            if let Some(hit) = hit {
                if hit.0 < first {
                    first = hit.0;
                    k = Some(g);
                }
            }
        }
        let k = k?;
        let hit = self.next.get(k).copied().flatten()?;
        self.refill(k, hit.0 + 1);
        Some(hit)
    }

    /// Leaves out the occurrences that start before `from`.
    pub(super) fn skip_to(&mut self, from: usize) {
        for k in 0..self.next.len() {
            if self
                .next
                .get(k)
                .copied()
                .flatten()
                .is_some_and(|h| h.0 < from)
            {
                self.refill(k, from);
            }
        }
    }
}

/// The longest factor of every set: the chunks' overlap.
const MAX_LEN: usize = if FACTOR_MAX_LEN > EXT_FACTOR_MAX_LEN {
    FACTOR_MAX_LEN
} else {
    EXT_FACTOR_MAX_LEN
};

/// The labels among `want` that `text` has under the pattern set of the
/// scan `S`, or `None` where the target has no Teddy.
#[inline(always)]
pub(super) fn scan<S: Step>(want: u8, text: &str) -> Option<u8> {
    // What a first use builds (the tables, a set's searcher) is built
    // here, in a small frame: the scan's own holds a chunk (4 KB, more in
    // debug builds), and a small host thread may be the first to classify.
    search::<S>(want)?;
    let p = prefilter();
    let mut seg = Segment {
        scan: S::start(want),
        start: 0,
        pos: 0,
        line_done: 0,
        line_labels: 0,
        line: LineStarts::default(),
    };
    let mut at = None;
    loop {
        if let Some(found) = scan_from(p, text.as_bytes(), &mut seg, &mut at) {
            return Some(found);
        }
        // A label found, and the search for those left is not built yet.
        search::<S>(seg.scan.want());
    }
}

/// The scan from `at` on (`None`: from the start), until every label is
/// known (their bits) or the search for the labels left is not built
/// yet (`None`; `resume` is where to go on).
#[inline(never)]
fn scan_from<S: Step>(
    p: &Prefilter,
    bytes: &[u8],
    seg: &mut Segment<S>,
    resume: &mut Option<usize>,
) -> Option<u8> {
    // The anchored pattern, and whatever starts at offset 0.
    if resume.is_none() && seg.run(p, bytes, 0, false) {
        return Some(seg.finish());
    }
    let mut at = resume.unwrap_or(0);
    // The first chunk in a small buffer: zeroing 4 KB would cost a text
    // that the first chunk decides more than the search itself.
    let mut first = [0u8; FIRST_CHUNK + MAX_LEN - 1];
    let stop = match chunks(p, bytes, seg, &mut at, &mut first, true) {
        Stop::Larger => larger(p, bytes, seg, &mut at),
        stop => stop,
    };
    if let Stop::Unbuilt = stop {
        *resume = Some(at);
        return None;
    }
    Some(seg.finish())
}

/// Why [`chunks`] stopped.
enum Stop {
    /// Every label looked for is known, or the text is read.
    Done,
    /// A label was found and the search for those left is not built yet.
    Unbuilt,
    /// The next chunk needs a larger buffer.
    Larger,
}

/// [`chunks`] in a buffer that holds a whole chunk.
#[inline(never)]
fn larger<S: Step>(p: &Prefilter, bytes: &[u8], seg: &mut Segment<S>, at: &mut usize) -> Stop {
    let mut lower = [0u8; CHUNK + MAX_LEN - 1];
    chunks(p, bytes, seg, at, &mut lower, false)
}

/// The search chunk by chunk from `at` on, each lower-cased into `buffer`
/// (where one does not fit: [`Stop::Larger`] if `grow`).
#[cfg_attr(not(debug_assertions), inline(always))]
fn chunks<S: Step>(
    p: &Prefilter,
    bytes: &[u8],
    seg: &mut Segment<S>,
    at: &mut usize,
    buffer: &mut [u8],
    grow: bool,
) -> Stop {
    'chunks: while *at < bytes.len() {
        let want = seg.scan.want() & 15;
        let Some(built) = S::searches().get(usize::from(want)).and_then(OnceLock::get) else {
            return Stop::Unbuilt;
        };
        let (Some(search), Some(factors)) = (built.as_ref(), S::FACTORS.get(usize::from(want)))
        else {
            // Not reached (a target with Teddy has it for every set).
            seg.rest(p, bytes, *at);
            return Stop::Done;
        };
        // Chunks grow from 256 bytes: a match near the start is found
        // without lower-casing 4 KB first.
        let end = bytes.len().min(*at + CHUNK.min(*at + FIRST_CHUNK));
        if end <= seg.line_done && want & !seg.line_labels == 0 {
            // Stepped whole already, to the end of its line, with the
            // tables of every label looked for.
            *at = end;
            continue;
        }
        let chunk = bytes.get(*at..bytes.len().min(end + S::MAX_LEN - 1));
        let chunk = chunk.unwrap_or_default();
        let Some(lower) = buffer.get_mut(..chunk.len()) else {
            if grow {
                return Stop::Larger;
            }
            // Not reached (the larger buffer holds a whole chunk).
            seg.rest(p, bytes, *at);
            return Stop::Done;
        };
        let rare = search.lower(chunk, lower);
        let mut hits = 0;
        let mut found = Hits::new(search, lower, rare);
        while let Some((start, stop, factor)) = found.next() {
            let h = *at + start;
            if h >= end {
                break;
            }
            let Some(&(_, before, labels, needs)) = factors.get(factor) else {
                continue;
            };
            if h < seg.line_done && labels & want & !seg.line_labels == 0 {
                // Inside a line stepped whole with this factor's tables.
                if want & !seg.line_labels == 0 {
                    // With every table looked for: search on after it.
                    if seg.line_done >= end {
                        break;
                    }
                    found.skip_to(seg.line_done - *at);
                }
                // (Otherwise a later hit on it may be another label's.)
                continue;
            }
            // Each hit costs the searcher and its needs, wanted or not.
            hits += 1;
            if hits > CROWDED {
                // Step the rest of the chunk whole, every table, from the
                // start of this hit's line to the end of the line the
                // chunk ends in.
                let start = seg.line.of(bytes, h);
                seg.to(p, bytes, start, u8::MAX);
                if seg.run(p, bytes, end, true) {
                    return Stop::Done;
                }
                break;
            }
            if !needed(
                Text {
                    bytes,
                    lower,
                    at: *at,
                },
                h,
                needs,
            ) {
                // No match holds this occurrence.
                continue;
            }
            let (need, line) = match before {
                Some(before) => (
                    char_start(bytes, h.saturating_sub(usize::from(before))),
                    false,
                ),
                None => (seg.line.of(bytes, h), true),
            };
            seg.to(p, bytes, need, labels);
            if seg.run(p, bytes, *at + stop, line) {
                return Stop::Done;
            }
            if seg.scan.want() & 15 != want {
                // A label found: search on for the factors of those still
                // looked for (at most four times), from the start of this
                // hit's line. A match of theirs not found yet holds a
                // factor of this set at or after the hit, on the line
                // where it starts, so the new set's factor in it is on
                // that line too (no match has a line feed before its
                // factor), though maybe before the hit.
                *at = seg.line.of(bytes, h);
                continue 'chunks;
            }
        }
        *at = end;
    }
    Stop::Done
}

/// A text being searched, with the chunk of it lower-cased.
#[derive(Clone, Copy)]
pub(super) struct Text<'a> {
    pub(super) bytes: &'a [u8],
    /// `bytes[at..]` lower-cased, as far as it goes.
    pub(super) lower: &'a [u8],
    pub(super) at: usize,
}

/// Ranges of at most this many starts are compared in place; wider ones
/// (a window's 80 characters) are searched with `memchr`.
const NARROW: usize = 16;

/// Whether a match may hold the factor occurrence at `h`: some need of
/// its factor (see [`Factor`]) has each of its literals where it says, or
/// the factor has none.
#[inline(always)]
pub(super) fn needed(text: Text, h: usize, needs: &[&[Need]]) -> bool {
    needs.is_empty()
        || needs
            .iter()
            .any(|need| need.iter().all(|&n| text.near(h, n)))
}

impl Text<'_> {
    /// Whether `lit` (lower case ASCII) starts, in any case, `lo..=hi`
    /// bytes from `h`, on `h`'s line if `line`.
    #[inline(always)]
    fn near(self, h: usize, (lo, hi, line, lit): Need) -> bool {
        let lit = lit.as_bytes();
        if lo == hi {
            // One place (a longer literal around the factor, as a rule).
            let Some(s) = h.checked_add_signed(isize::from(lo)) else {
                return false;
            };
            return self
                .bytes
                .get(s..s.saturating_add(lit.len()))
                .is_some_and(|w| {
                    w.first().map(u8::to_ascii_lowercase) == lit.first().copied()
                        && w.eq_ignore_ascii_case(lit)
                });
        }
        let Some(to) = h.checked_add_signed(isize::from(hi)) else {
            return false;
        };
        let mut from = h.checked_add_signed(isize::from(lo)).unwrap_or(0);
        let mut last = to.min(self.bytes.len().saturating_sub(lit.len()));
        if from > last {
            return false;
        }
        let (Some(&head), Some(tail)) = (lit.first(), lit.get(1..)) else {
            return true;
        };
        if last - from >= NARROW {
            if line {
                // Not past a line feed between the literal and the hit.
                let before = self.bytes.get(from..h).unwrap_or_default();
                if let Some(i) = memchr::memrchr(b'\n', before) {
                    from += i + 1;
                }
                let after = self.bytes.get(h..last + lit.len()).unwrap_or_default();
                if let Some(i) = memchr::memchr(b'\n', after) {
                    match (h + i).checked_sub(lit.len()) {
                        Some(l) => last = last.min(l),
                        None => return false,
                    }
                }
                if from > last {
                    return false;
                }
            }
            let end = last + lit.len();
            if from >= self.at && end - self.at <= self.lower.len() {
                // In the lower-cased chunk: `memchr` for the first byte.
                let Some(window) = self.lower.get(from - self.at..end - self.at) else {
                    return false;
                };
                let starts = window.get(..=last - from).unwrap_or_default();
                return memchr::memchr_iter(head, starts)
                    .any(|i| window.get(i + 1..i + lit.len()) == Some(tail));
            }
        }
        // In place: the first byte, then all.
        self.bytes.get(from..last + lit.len()).is_some_and(|w| {
            w.windows(lit.len()).any(|w| {
                w.first().map(u8::to_ascii_lowercase) == Some(head) && w.eq_ignore_ascii_case(lit)
            })
        })
    }
}

/// The stepping around the hits: a scan that started at `start` (in its
/// quiet state there) and has read the text up to `pos`.
struct Segment<S> {
    scan: S,
    start: usize,
    pos: usize,
    /// The end of the last line stepped whole from its start.
    line_done: usize,
    /// The labels whose tables stepped that line.
    line_labels: u8,
    /// The line starts asked.
    line: LineStarts,
}

impl<S: Step> Segment<S> {
    /// The labels found, with the matches that end with the text (see
    /// [`Step::finish`]); the segment is done.
    fn finish(&mut self) -> u8 {
        core::mem::replace(&mut self.scan, S::start(0)).finish()
    }

    /// Steps every table from the start of `at`'s line (no match crosses
    /// one) to the end of the text: the scan without the search.
    fn rest(&mut self, p: &Prefilter, bytes: &[u8], at: usize) {
        let start = self.line.of(bytes, at);
        self.to(p, bytes, start, u8::MAX);
        self.run(p, bytes, bytes.len(), false);
    }

    /// Makes the segment start at `need` or earlier, stepping the tables
    /// of `labels` at least: it continues if it started there or before,
    /// has not passed it and steps those tables already; it starts again
    /// where it started, with those tables too, if it steps fewer; and it
    /// starts again at `need`, with those tables alone, otherwise.
    // Inlined where speed counts; a call of its own in debug builds, whose
    // frame would otherwise hold each inlined copy's locals.
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn to(&mut self, p: &Prefilter, bytes: &[u8], need: usize, labels: u8) {
        // Those still looked for: the others' tables step no more.
        let labels = labels & self.scan.want();
        let on = (self.start..=self.pos).contains(&need);
        let active = self.scan.active();
        if on && labels & !active == 0 {
            // Stepped on from where the segment ended.
            return;
        }
        let (from, labels) = if on {
            // Nothing is under way where the segment ended (a window word
            // included: see [`Step::quiet`]): every table may start
            // again at `need`, and those that stepped read a part of their
            // text again.
            (need, active | labels)
        } else {
            (need, labels)
        };
        // The quiet states after the character before `from` (its last
        // byte: only whether it is a word character matters).
        let before = from.checked_sub(1).and_then(|i| bytes.get(i)).copied();
        self.scan.restart(p, before);
        self.scan.set_active(labels);
        self.start = from;
        self.pos = from;
    }

    /// Steps until `pos` reaches `until` and nothing is under way (with
    /// `line`, past the end of the line too); whether every label looked
    /// for is found.
    // Inlined where speed counts; a call of its own in debug builds, whose
    // frame would otherwise hold each inlined copy's locals.
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn run(&mut self, p: &Prefilter, bytes: &[u8], until: usize, mut line: bool) -> bool {
        // On locals, which stay in registers.
        let mut scan = core::mem::replace(&mut self.scan, S::start(0));
        let mut pos = self.pos;
        let mut prev = pos
            .checked_sub(1)
            .and_then(|i| bytes.get(i))
            .map_or(0, |&b| b);
        let mut first = pos == 0;
        let mut all = false;
        let mut ahead = S::AHEAD;
        while pos < bytes.len() {
            if line {
                let (to, found) = scan.ascii_run(bytes, pos);
                if found {
                    all = true;
                    pos = to;
                    break;
                }
                if to > pos {
                    first = false;
                }
                pos = to;
                if pos >= bytes.len() {
                    break;
                }
            }
            if !line {
                if pos >= until && !first && scan.quiet(p, prev) {
                    break;
                }
                // Up to `until` nothing is asked; past it, `S::AHEAD`
                // characters between the first two questions, twice as
                // many each time after (stepping on past a quiet point is
                // only more than needed: at most as much as was needed).
                let limit = if pos < until {
                    until
                } else {
                    let limit = pos.saturating_add(ahead);
                    ahead = ahead.saturating_mul(2);
                    limit
                };
                let (to, found) = if limit > pos {
                    scan.ascii_run_to(bytes, pos, limit)
                } else {
                    (pos, false)
                };
                if to > pos {
                    first = false;
                    pos = to;
                    prev = bytes.get(pos - 1).map_or(0, |&b| b);
                    if found {
                        all = true;
                        break;
                    }
                    continue;
                }
            }
            first = false;
            let (sym, len) = decode(bytes, pos);
            pos += len;
            prev = bytes.get(pos - 1).map_or(0, |&b| b);
            if scan.step(sym) {
                all = true;
                break;
            }
            if line && pos > until && matches!(sym, b'\n' | b'\r' | LS | PS) {
                line = false;
                self.line_done = pos;
                self.line_labels = scan.active();
            }
        }
        if line && !all {
            self.line_done = pos;
            self.line_labels = scan.active();
        }
        self.scan = scan;
        self.pos = pos;
        all
    }
}

/// Line starts asked at positions of one text, remembering the last
/// answer: (position asked, its line's start).
#[derive(Clone, Copy, Default)]
pub(super) struct LineStarts(usize, usize);

impl LineStarts {
    /// Where the line of the byte at `i` starts, or an earlier line's
    /// start (after a line feed; starting before a `\r`, U+2028 or U+2029
    /// is only more than needed). Asked at growing positions, or on the
    /// line asked last (where the search for the labels left goes back
    /// to), it reads each byte at most once: the text before the last
    /// answer's position is not read again.
    pub(super) fn of(&mut self, bytes: &[u8], i: usize) -> usize {
        let LineStarts(asked, answer) = *self;
        if (answer..=asked).contains(&i) {
            // No line feed between the answer and the position asked.
            return answer;
        }
        let from = if asked <= i { asked } else { 0 };
        let found =
            memchr::memrchr(b'\n', bytes.get(from..i).unwrap_or_default()).map(|k| from + k + 1);
        let start = match found {
            Some(start) => start,
            None if asked <= i => answer,
            None => 0,
        };
        *self = LineStarts(i, start);
        start
    }
}

#[cfg(test)]
mod tests {
    use super::super::classic::{scan as plain, Scan};
    use super::super::dfa::{HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT};
    use super::super::testing::pieces;
    use super::super::utf8::symbols;
    use super::super::ALL;
    use super::*;
    use std::{string::String, vec::Vec};

    const WANTS: [u8; 6] = [
        ALL | HINT,
        RETRYABLE,
        USAGE_LIMIT,
        OVERFLOW,
        HINT,
        RETRYABLE | USAGE_LIMIT,
    ];

    #[test]
    fn buckets_hold_runs_of_sorted_factors() {
        for n in [1, 7, 8, 20, 32, 33, 51, 64] {
            let texts: Vec<String> = (0..n)
                .map(|i| std::format!("f{:02}", (i * 37) % n))
                .collect();
            let order = bucketed((0..n).collect(), |i| texts[i].as_str());
            let mut seen = order.clone();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "a permutation, n {n}");
            let buckets = if n > 32 { 16 } else { 8 };
            let mut sorted = texts.clone();
            sorted.sort();
            for b in 0..buckets {
                let members: Vec<&str> = order
                    .iter()
                    .skip(b)
                    .step_by(buckets)
                    .map(|&i| texts[i].as_str())
                    .collect();
                if let Some(first) = members.first() {
                    let at = sorted.iter().position(|t| t == first).unwrap();
                    let run: Vec<&str> = sorted[at..at + members.len()]
                        .iter()
                        .map(String::as_str)
                        .collect();
                    assert_eq!(members, run, "bucket {b}, n {n}");
                }
            }
        }
    }

    fn check(text: &str) {
        for want in WANTS {
            let Some(found) = scan::<Scan>(want, text) else {
                return;
            };
            assert_eq!(found, plain(want, symbols(text)), "want {want}: {text:?}");
        }
    }

    /// The extended scan around the hits against the extended plain scan.
    fn check_extended(text: &str) {
        use super::super::extended;
        for want in [
            ALL | HINT,
            RETRYABLE,
            USAGE_LIMIT,
            OVERFLOW,
            USAGE_LIMIT | HINT,
        ] {
            let Some(found) = scan::<extended::Scan>(want, text) else {
                return;
            };
            let plain = extended::scan(want, symbols(text));
            assert_eq!(found, plain, "extended, want {want}: {text:?}");
        }
    }

    /// A generator of long texts from a fixed seed: the patterns' pieces
    /// (valid UTF-8 only), upper-cased at random, in filler of `fill`
    /// bytes on average, so that matches straddle the chunks' boundaries.
    fn texts(count: usize, fill: usize, seed: u64) -> Vec<String> {
        let pieces: Vec<String> = pieces()
            .into_iter()
            .filter_map(|p| String::from_utf8(p).ok())
            .collect();
        let mut x = seed;
        let mut rand = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n.max(1) as u64) as usize
        };
        (0..count)
            .map(|_| {
                let mut t = String::new();
                let len = 128 + rand(3 * CHUNK);
                while t.len() < len {
                    let piece = &pieces[rand(pieces.len())];
                    if rand(4) == 0 {
                        t.push_str(&piece.to_ascii_uppercase());
                    } else {
                        t.push_str(piece);
                    }
                    for _ in 0..rand(2 * fill) {
                        t.push(match rand(40) {
                            0 => '\n',
                            1 => 'é',
                            _ => 'x',
                        });
                    }
                    if rand(3) == 0 {
                        t.push(' ');
                    }
                }
                t
            })
            .collect()
    }

    #[test]
    fn same_as_every_symbol() {
        for t in texts(300, 60, 0x9E37_79B9_7F4A_7C15) {
            check(&t);
        }
    }

    /// Lines longer than a chunk (vertical tabs where the generator puts
    /// line feeds): a line stepped whole with one label's tables leaves
    /// the other labels' hits on it to segments of their own.
    #[test]
    fn same_as_every_symbol_on_lines_longer_than_chunks() {
        for t in texts(60, 20, 0x5851_F42D_4C95_7F2D) {
            let t = t.replace('\n', "\u{b}");
            check(&t);
            check_extended(&t);
        }
    }

    #[test]
    fn same_as_every_symbol_where_factors_crowd() {
        for t in texts(200, 2, 0x2545_F491_4F6C_DD1D) {
            check(&t);
        }
        let mut dense = String::new();
        while dense.len() < 3 * CHUNK {
            dense.push_str("limit context too long 500 ");
        }
        check(&dense);
        dense.push_str("prompt is too long");
        check(&dense);
        let mut lines = String::new();
        while lines.len() < 3 * CHUNK {
            lines.push_str("rate-limit hit for requested tokens\n");
        }
        lines.push_str("requested tokens 9 exceed the context window");
        check(&lines);
    }

    #[test]
    fn matches_across_chunk_boundaries() {
        let needles = [
            "rate limit",
            "usage_limit_reached",
            "input token count 12 exceeds the maximum",
            "prompt 1 too long 2 n_ctx",
            // With the line's `input ` below: a head far before the factor.
            "too large for the context",
            "too long: n_ctx",
            "maximum context length is 128000 tokens",
            "retry-after",
            "x-ratelimit-reset",
        ];
        for needle in needles {
            // Around the first chunks' ends, and far from them.
            let mut ends = Vec::new();
            let mut end = 0;
            while end < 3 * CHUNK {
                end += CHUNK.min(end + FIRST_CHUNK);
                ends.push(end);
            }
            let around = ends.into_iter().flat_map(|e| e - 40..e + 8);
            for at in around.chain([40, 2 * CHUNK + 1]) {
                let mut t: String = "y".repeat(at);
                t.push_str(needle);
                t.push_str(&"z".repeat(300));
                check(&t);
                // The same after a line with a head far before it.
                let mut t = "x".repeat(200);
                t.push_str("\n lorem input ");
                t.push_str(&"y".repeat(at));
                t.push_str(needle);
                check(&t);
            }
        }
    }

    #[test]
    fn long_lines_full_of_factors() {
        // One line of 1 MB: stepped once, to its end, not once a chunk.
        for unit in ["limit ", "usage of the quota ", "too long "] {
            let mut t = unit.repeat(20 * CHUNK / unit.len());
            check(&t);
            t.push_str("usage limit reached");
            check(&t);
        }
    }

    #[test]
    fn overlapping_occurrences() {
        // `too long` starts inside `limit`: its line must still be stepped.
        let text = format!(
            "{}\nprompt {} limitoo long n_ctx {}",
            "y".repeat(300),
            "z".repeat(40),
            "w".repeat(200)
        );
        check(&text);
        assert!(scan::<Scan>(OVERFLOW, &text).is_none_or(|found| found == OVERFLOW));
    }

    #[test]
    fn anchored_pattern_only_at_the_start() {
        let body = "x".repeat(300);
        for head in [
            "400 (no body)",
            "413 \n\t status code \n (no body)",
            "x400 (no body)",
        ] {
            check(&format!("{head}{body}"));
            check(&format!("{body}{head}"));
        }
        let text = format!("413 \n status code (no body){body}");
        assert!(scan::<Scan>(OVERFLOW, &text).is_none_or(|found| found == OVERFLOW));
    }

    #[test]
    fn extended_same_as_every_symbol() {
        for t in texts(60, 60, 0x9E37_79B9_7F4A_7C15) {
            check_extended(&t);
        }
        for t in texts(40, 2, 0x2545_F491_4F6C_DD1D) {
            check_extended(&t);
        }
    }

    #[test]
    fn extended_matches_across_chunk_boundaries() {
        for needle in [
            "rate limit",
            "usage_not_included",
            "quota will reset",
            "socket hang up",
            "413 Request Entity Too Large",
            "too long: n_ctx",
            "please retry in 5s",
            "nghttp2_refused_stream",
        ] {
            for t in around_chunk_ends("y", needle, " z") {
                check_extended(&t);
            }
            // After a line with a head far before it.
            for t in around_chunk_ends("y", needle, "") {
                check_extended(&format!("{}\n lorem input {t}", "x".repeat(200)));
            }
        }
    }

    /// `text` at offsets around the first chunks' ends, and far from
    /// them, after `fill` (repeated) and before `after`: every third byte
    /// from 45 before an end to 5 after it, or (`sparse`, and in debug
    /// builds) a few of them.
    fn around_chunk_ends(fill: &str, text: &str, after: &str) -> Vec<String> {
        placements(fill, text, after, false)
    }

    fn placements(fill: &str, text: &str, after: &str, sparse: bool) -> Vec<String> {
        let mut ends = Vec::new();
        let mut end = 0;
        while end < 2 * CHUNK {
            end += CHUNK.min(end + FIRST_CHUNK);
            ends.push(end);
        }
        // Unoptimized (debug) builds step the extended tables slowly: a few
        // offsets around each end there, every third byte in release.
        let offsets: &[usize] = if sparse || cfg!(debug_assertions) {
            &[0, 37, 44, 48]
        } else {
            &[
                0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 50,
            ]
        };
        let around = ends
            .into_iter()
            .flat_map(|e| offsets.iter().map(move |&k| e + 5 - k));
        around
            .chain([0, 40, 2 * CHUNK + 1])
            .map(|at| {
                let mut t: String = fill.repeat(at.div_ceil(fill.len()).max(1));
                let mut cut = at.min(t.len());
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
                t.push_str(text);
                t.push_str(after);
                while t.len() < 300 {
                    t.push_str(after);
                    t.push('z');
                }
                t
            })
            .collect()
    }

    #[test]
    fn extended_word_boundaries_at_segment_starts() {
        // A status code is one only as a whole word: the quiet state a
        // segment starts in must know the character before.
        for code in ["429", "503", "413", "400"] {
            for (head, tail) in [
                (" ", " "),
                ("x", " "),
                (" ", "x"),
                ("_", "."),
                ("é", "é"),
                ("\n", "\n"),
                ("5", " "),
            ] {
                // Fewer in unoptimized (debug) builds.
                let fills: &[&str] = if cfg!(debug_assertions) {
                    &["yé ", "4"]
                } else {
                    &["y", " ", "yé ", "4"]
                };
                for fill in fills {
                    for t in around_chunk_ends(fill, &format!("{head}{code}{tail}"), " zz") {
                        check_extended(&t);
                    }
                }
            }
        }
        for t in around_chunk_ends("q", "no_capacity-peak load", "") {
            check_extended(&t);
        }
    }

    #[test]
    fn extended_white_space_runs_across_lines_and_chunks() {
        for (text, blank) in [
            (
                "unable to connect.#is the computer able to access the url?",
                true,
            ),
            (
                "unable-to-connect.#is the computer able to access the URL?",
                true,
            ),
            ("400#(no body)", true),
            ("413#status code#(no body)", true),
            ("x413#(no body)", false),
            ("413#status code#(no body", false),
        ] {
            for space in ["", " ", "\n", "\r\n \t", &"\n".repeat(40), &" ".repeat(300)] {
                let t = text.replace('#', space);
                for t in around_chunk_ends("w ", &format!(" {t}"), " .") {
                    check_extended(&t);
                    if blank && t.len() < 2 * CHUNK {
                        use super::super::extended;
                        let want = if text.starts_with('u') {
                            RETRYABLE
                        } else {
                            OVERFLOW
                        };
                        assert_eq!(scan::<extended::Scan>(want, &t), Some(want), "{t:?}");
                    }
                }
            }
        }
    }

    /// A line stepped whole for one label's tables (`too large`, an
    /// overflow pattern's factor) leaves another label's hits on it (`quota
    /// exceeded`) to segments of their own, after the first label is found
    /// too.
    #[test]
    fn extended_a_line_stepped_for_one_label_keeps_the_others_hits() {
        check_extended(
            "\u{130}UPSTREAM CONNECT\u{130}UnABLe to coNnect. Is The compUtEr aBLe To aCcEss the url?\u{85}No capaCity413 REQuesT EntITy Too LArge\u{b}QUOTA EXCEEDED\u{202a}\u{130}",
        );
        check_extended(&std::format!(
            "{}\n413 request entity too large; quota exceeded; server error",
            "x".repeat(200)
        ));
    }

    /// A hit's needs look for a window's other word on the hit's line
    /// only: words at the very start and end of their line, and words a
    /// line feed parts.
    #[test]
    fn extended_window_words_at_their_lines_ends() {
        for (first, second) in [
            ("account", "rate limit"),
            ("rate limit", "account"),
            ("ACCOUNT'S", "Rate-Limit"),
        ] {
            for (before, between, after) in [
                ("\n", " ", "\n"),
                ("\n", " ", ""),
                ("", " ", "\n"),
                ("\r\n", " \u{e9} ", "\r\n"),
                ("\n", "\n", "\n"),
                ("x\n", " is over the ", "\ny"),
            ] {
                let text = format!("{before}{first}{between}{second}{after}");
                for t in placements("z ", &text, " more", true) {
                    check_extended(&t);
                }
            }
        }
    }

    #[test]
    fn extended_windows_80_characters_apart() {
        for (first, second) in [
            ("account", "rate limit"),
            ("account's", "ratelimit"),
            ("rate-limit", "account"),
            ("Rate_Limit", "ACCOUNT"),
        ] {
            for gap in [0usize, 1, 79, 80, 81, 200] {
                let fillers: &[&str] = if cfg!(debug_assertions) {
                    &["x", "é", "\r", "a\nb"]
                } else {
                    &["x", " ", "é", "\u{1f600}", "\r", "a\nb"]
                };
                for &filler in fillers {
                    let between: String = if filler == "a\nb" {
                        format!(" {} ", "y".repeat(gap.saturating_sub(5)) + "\n" + "yy")
                    } else {
                        let mut b = String::from(" ");
                        for _ in 0..gap.saturating_sub(2) {
                            b.push_str(filler);
                        }
                        if gap >= 2 {
                            b.push(' ');
                        }
                        b
                    };
                    let text = format!("{first}{between}{second}");
                    for t in placements("z ", &text, " and more", true) {
                        check_extended(&t);
                    }
                }
            }
        }
        // Words glued to others are no window words.
        for t in around_chunk_ends("z ", "accounts are under rate limits for the account", ".") {
            check_extended(&t);
        }
    }

    #[test]
    fn line_starts_asked_forth_and_back() {
        let bytes = b"ab\ncdef\ng\n\nhij";
        let mut line = LineStarts::default();
        let truth = |i: usize| {
            bytes[..i]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |k| k + 1)
        };
        // Growing, then back on the line asked last, then back before it.
        for i in [0, 1, 5, 7, 6, 3, 7, 9, 2, 10, 11, 14, 12, 13, 0, 14] {
            assert_eq!(line.of(bytes, i), truth(i), "at {i}");
        }
    }

    #[test]
    fn extended_a_label_found_between_a_windows_words() {
        // With the retryable patterns, a window's factor is the `limit` of
        // its second word; without them, its first word `account`. A
        // retryable match between the two words switches the search to
        // the set without them, with `account` already behind.
        let texts = [
            "ACCOUNT'S quota: overloaded, see x-ratelimit-reset",
            "account overloaded rate limit",
            "rate limit, overloaded; account",
        ];
        for text in texts {
            for t in around_chunk_ends("z ", text, " and more") {
                check_extended(&t);
            }
        }
    }

    #[test]
    fn extended_a_line_stepped_for_one_label_keeps_the_others_later_hits() {
        // `capacity` (its needs hold, no match) leaves the retryable tables
        // alone stepping; `too large` has its line stepped with those and
        // the overflow tables, finds overflow, and the search goes on from
        // the line's start for the labels left: `capacity` again, inside
        // the line stepped with its tables, then `limit_reached`, which is
        // not.
        let text = "retry-after: \u{665}41.8\r\ninsufficient_capacity1h \u{fffd}PAYLOAD TOO LARGE miNS\u{130}limit_reachEd\u{2014}";
        check_extended(text);
        for t in around_chunk_ends("z ", text, " and more") {
            check_extended(&t);
        }
    }

    #[test]
    fn extended_long_bodies_full_of_factors() {
        let mut dense = String::new();
        while dense.len() < 3 * CHUNK {
            dense.push_str("usage limits per account; server internal upstream 4000 time 413x ");
        }
        check_extended(&dense);
        for end in [
            "account rate limit",
            "rate limit for the account",
            "400 (no body)",
            "socket hang up",
        ] {
            check_extended(&format!("{dense}{end}"));
            check_extended(&format!("{dense}\n{end}\n{dense}"));
        }
        let lines = "account: rate of calls limited\n".repeat(3 * CHUNK / 30);
        check_extended(&lines);
        check_extended(&format!("{lines}account, ratelimit"));
    }

    #[test]
    fn the_searcher_is_there_on_x86_64_and_aarch64() {
        // Not a timing: that the vectorized search is what runs here.
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            search::<Scan>(ALL | HINT).is_some(),
            std::is_x86_feature_detected!("ssse3")
        );
        #[cfg(target_arch = "aarch64")]
        assert!(search::<Scan>(ALL | HINT).is_some());
    }
}
