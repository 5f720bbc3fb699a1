//! Long texts on std (feature `prefilter`): a vectorized search for the
//! patterns' required factors, and the DFAs only around each hit.
//!
//! Every match of a classic pattern but the anchored overflow pattern
//! contains one of [`FACTORS`] (lower case), which the generator derives
//! from the patterns' syntax, per set of labels looked for: once a label
//! is found, the scan searches on for the factors of the others only. This scan lower-cases the text in chunks on
//! the stack (overlapping by the longest factor minus one byte, so that
//! every occurrence lies whole in one chunk) and finds the factors with
//! `aho-corasick`'s packed Teddy searcher (SSSE3 or AVX2 on x86_64, NEON on
//! aarch64). Where there is no Teddy, [`scan`] answers `None` and the
//! caller keeps the skipping scan of `super::prefilter`.
//!
//! The searcher reports every occurrence, overlapping ones included. Around
//! each hit the scan steps the same DFAs as the plain scan, exactly:
//!
//! - A *segment* starts at a character boundary `s`, with every table in
//!   its quiet state after the character before `s` (nothing under way, as
//!   `super::prefilter` computes it) and no tail running; from there the
//!   tables report exactly the matches that start at `s` or later (the
//!   anchored pattern is the start state's alone, so none is invented).
//! - A hit's segment starts where a match containing it may start: the
//!   factor's bound before it, or the line's start (`None`), and runs past
//!   the hit until every table is quiet again and no tail runs. A quiet
//!   state has the future of a fresh start, so whatever match is left
//!   ends where one starting at that point or later ends, and that one
//!   contains a factor of its own, found later.
//! - A hit whose segment would start inside the current one continues it
//!   (no byte is read twice); a segment that would start before it starts
//!   again there.
//! - A hit whose factor may have a match anywhere on its line (`None`)
//!   runs its segment to the end of the line; the classic patterns match
//!   no line terminator (the generator checks it) but the anchored one, so
//!   the later hits of that line are covered.
//! - The scan steps from offset 0 until nothing is under way first: the
//!   anchored pattern can only match there.
//!
//! Chunks where hits crowd (text full of factors) are stepped whole, as
//! one segment from the start of the crowded hit's line to the end of the
//! line the chunk ends in: the searcher's cost per hit would exceed the
//! DFAs'.
//!
//! A set's searcher is built once per process, at its first use (on the
//! heap: a few kilobytes; `benches/README.md` gives the time).

extern crate std;

use std::sync::OnceLock;

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::Span;

use super::dfa::{FACTORS, FACTOR_MAX_LEN, HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT};
use super::prefilter::{decode, prefilter, Prefilter};
use super::symbol::{LS, PS};
use super::{Scan, Tails};

/// Texts shorter than this take the short texts' scan (`super::short`).
pub(super) const MIN_LEN: usize = 128;

/// Bytes lower-cased and searched at a time.
const CHUNK: usize = 4096;

/// The first chunk's size; each next one is the length of the text before
/// it plus this, up to [`CHUNK`].
const FIRST_CHUNK: usize = 256;

/// Hits in one chunk above which the rest of the chunk is stepped whole.
const CROWDED: usize = CHUNK / 64;

/// Per set of labels (bits 0 to 3), the searcher of their factors.
static SEARCHERS: [OnceLock<Option<Searcher>>; 16] = [const { OnceLock::new() }; 16];

/// The searcher of the factors of the labels in `want` (see [`FACTORS`]),
/// built at first use; `None` where the target has no Teddy.
fn searcher(want: u8) -> Option<&'static Searcher> {
    let at = usize::from(want & 15);
    SEARCHERS
        .get(at)?
        .get_or_init(|| {
            let factors = FACTORS.get(at)?;
            Config::new()
                .match_kind(MatchKind::LeftmostFirst)
                .builder()
                .extend(factors.iter().map(|(f, _)| f))
                .build()
        })
        .as_ref()
}

/// The labels among `want` that `text` has, or `None` where the target has
/// no Teddy.
pub(super) fn scan(want: u8, text: &str) -> Option<u8> {
    // What a first use builds (the tables, a set's searcher) is built
    // here, in a small frame: the scan's own holds a chunk (4 KB, more in
    // debug builds), and a small host thread may be the first to classify.
    searcher(want)?;
    let p = prefilter();
    let mut seg = Segment {
        scan: Scan::new(want),
        start: 0,
        pos: 0,
        line_done: 0,
        line: (0, 0),
    };
    let mut at = None;
    loop {
        if let Some(found) = scan_from(p, text.as_bytes(), &mut seg, &mut at) {
            return Some(found);
        }
        // A label found, and the searcher of those left is not built yet.
        searcher(seg.scan.want);
    }
}

/// The scan from `at` on (`None`: from the start), until every label is
/// known (their bits) or the searcher of the labels left is not built
/// yet (`None`; `resume` is where to go on).
#[inline(never)]
fn scan_from(
    p: &Prefilter,
    bytes: &[u8],
    seg: &mut Segment,
    resume: &mut Option<usize>,
) -> Option<u8> {
    // The anchored pattern, and whatever starts at offset 0.
    if resume.is_none() && seg.run(p, bytes, 0, false) {
        return Some(seg.scan.found);
    }
    let mut lower = [0u8; CHUNK + FACTOR_MAX_LEN - 1];
    let mut at = resume.unwrap_or(0);
    'chunks: while at < bytes.len() {
        let want = seg.scan.want & 15;
        let Some(built) = SEARCHERS.get(usize::from(want)).and_then(OnceLock::get) else {
            *resume = Some(at);
            return None;
        };
        let (Some(searcher), Some(factors)) = (built.as_ref(), FACTORS.get(usize::from(want)))
        else {
            // Not reached (a target with Teddy has it for every set): step
            // the rest, from a line's start (no match crosses one).
            let start = seg.line_start(bytes, at);
            seg.to(p, bytes, start);
            seg.run(p, bytes, bytes.len(), false);
            break;
        };
        // Chunks grow from 256 bytes: a match near the start is found
        // without lower-casing 4 KB first.
        let end = bytes.len().min(at + CHUNK.min(at + FIRST_CHUNK));
        if end <= seg.line_done {
            // Stepped whole already, to the end of its line.
            at = end;
            continue;
        }
        let chunk = bytes.get(at..bytes.len().min(end + FACTOR_MAX_LEN - 1));
        let chunk = chunk.unwrap_or_default();
        let lower = lower.get_mut(..chunk.len()).unwrap_or_default();
        for (l, &b) in lower.iter_mut().zip(chunk) {
            *l = b.to_ascii_lowercase();
        }
        let mut hits = 0;
        let mut from = 0;
        // Every occurrence, overlapping ones too (the next search starts
        // one byte after the last hit's start; no factor is a prefix of
        // another, so one factor per start is all there is).
        while let Some(m) = searcher.find_in(&*lower, Span::from(from..lower.len())) {
            from = m.start() + 1;
            let h = at + m.start();
            if h >= end {
                break;
            }
            if h < seg.line_done {
                // Inside a line stepped whole: search on after it.
                if seg.line_done >= end {
                    break;
                }
                from = from.max(seg.line_done - at);
                continue;
            }
            hits += 1;
            if hits > CROWDED {
                // Step the rest of the chunk whole, from the start of this
                // hit's line to the end of the line the chunk ends in.
                let start = seg.line_start(bytes, h);
                seg.to(p, bytes, start);
                if seg.run(p, bytes, end, true) {
                    return Some(seg.scan.found);
                }
                break;
            }
            let (need, line) = match factors.get(m.pattern().as_usize()) {
                Some(&(_, Some(before))) => (
                    char_start(bytes, h.saturating_sub(usize::from(before))),
                    false,
                ),
                _ => (seg.line_start(bytes, h), true),
            };
            seg.to(p, bytes, need);
            if seg.run(p, bytes, at + m.end(), line) {
                return Some(seg.scan.found);
            }
            if seg.scan.want & 15 != want {
                // A label found: search on from this hit for the factors
                // of those still looked for (at most four times).
                at = h;
                continue 'chunks;
            }
        }
        at = end;
    }
    Some(seg.scan.found)
}

/// The stepping around the hits: a scan that started at `start` (in its
/// quiet state there) and has read the text up to `pos`.
struct Segment {
    scan: Scan,
    start: usize,
    pos: usize,
    /// The end of the last line stepped whole from its start.
    line_done: usize,
    /// The last [`Segment::line_start`] asked: (where, the answer).
    line: (usize, usize),
}

impl Segment {
    /// Makes the segment start at `need` or earlier: it continues if it
    /// started there or before and has not passed it, and starts again at
    /// `need` otherwise.
    #[inline(always)]
    fn to(&mut self, p: &Prefilter, bytes: &[u8], need: usize) {
        if (self.start..=self.pos).contains(&need) {
            return;
        }
        let s = &mut self.scan;
        match need.checked_sub(1).and_then(|i| bytes.get(i)) {
            // The quiet states after the character before `need` (its last
            // byte: the classic tables have no `\b`, so only whether it is
            // a word character could matter).
            Some(&before) => {
                s.labels = p.labels_idle(before);
                s.words = p.words_idle(before);
            }
            None => {
                s.labels = 0;
                s.words = Default::default();
            }
        }
        s.tails = Tails::default();
        self.start = need;
        self.pos = need;
    }

    /// Steps until `pos` reaches `until` and nothing is under way (with
    /// `line`, past the end of the line too); whether every label looked
    /// for is found.
    #[inline(always)]
    fn run(&mut self, p: &Prefilter, bytes: &[u8], until: usize, mut line: bool) -> bool {
        // On locals, which stay in registers.
        let mut scan = core::mem::replace(&mut self.scan, Scan::new(0));
        let mut pos = self.pos;
        let mut prev = pos
            .checked_sub(1)
            .and_then(|i| bytes.get(i))
            .map_or(0, |&b| b);
        let mut first = pos == 0;
        let mut all = false;
        while pos < bytes.len() {
            if line {
                let (to, found) = ascii_run(&mut scan, bytes, pos);
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
            if pos >= until && !line && !first && quiet(&scan, p, prev) {
                break;
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
            }
        }
        if line && !all {
            self.line_done = pos;
        }
        self.scan = scan;
        self.pos = pos;
        all
    }
}

/// Steps `scan` on the ASCII characters from `pos` on up to the first line
/// terminator or other character; where it stopped, and whether every label
/// looked for is found. Apart from the rest of the scan's loop, so that the
/// tables' states stay in registers.
#[inline(never)]
fn ascii_run(scan: &mut Scan, bytes: &[u8], mut pos: usize) -> (usize, bool) {
    let mut s = core::mem::replace(scan, Scan::new(0));
    let mut all = false;
    while let Some(&b) = bytes.get(pos) {
        if b >= 0x80 || b == b'\n' || b == b'\r' {
            break;
        }
        pos += 1;
        if s.step(b) {
            all = true;
            break;
        }
    }
    *scan = s;
    (pos, all)
}

/// Whether every table the scan steps is in its quiet state after `prev`
/// (the last byte read) and no tail runs.
#[inline(always)]
fn quiet(s: &Scan, p: &Prefilter, prev: u8) -> bool {
    (s.want & (RETRYABLE | USAGE_LIMIT | HINT) == 0 || s.labels == p.labels_idle(prev))
        && (s.want & OVERFLOW == 0 || s.words == p.words_idle(prev) && s.tails.active == 0)
}

impl Segment {
    /// Where the line of the byte at `i` starts, or an earlier line's
    /// start (after a line feed; starting before a `\r`, U+2028 or U+2029
    /// is only more than needed). Asked at growing positions, it reads
    /// each byte at most once: the text before the last answer's position
    /// is not read again.
    fn line_start(&mut self, bytes: &[u8], i: usize) -> usize {
        let (asked, answer) = self.line;
        let from = if asked <= i { asked } else { 0 };
        let found = bytes
            .get(from..i)
            .and_then(|b| b.iter().rposition(|&c| c == b'\n'))
            .map(|k| from + k + 1);
        let start = match found {
            Some(start) => start,
            None if asked <= i => answer,
            None => 0,
        };
        self.line = (i, start);
        start
    }
}

/// The start of the character at `i` (or the end of the text).
fn char_start(bytes: &[u8], mut i: usize) -> usize {
    i = i.min(bytes.len());
    while i > 0 && bytes.get(i).is_some_and(|&b| b & 0xC0 == 0x80) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::super::table::symbols;
    use super::super::{prefilter::tests::pieces, scan as plain, ALL};
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

    fn check(text: &str) {
        for want in WANTS {
            let Some(found) = scan(want, text) else {
                return;
            };
            assert_eq!(found, plain(want, symbols(text)), "want {want}: {text:?}");
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
        assert!(scan(OVERFLOW, &text).is_none_or(|found| found == OVERFLOW));
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
        assert!(scan(OVERFLOW, &text).is_none_or(|found| found == OVERFLOW));
    }

    #[test]
    fn the_searcher_is_there_on_x86_64_and_aarch64() {
        // Not a timing: that the vectorized search is what runs here.
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            searcher(ALL | HINT).is_some(),
            std::is_x86_feature_detected!("ssse3")
        );
        #[cfg(target_arch = "aarch64")]
        assert!(searcher(ALL | HINT).is_some());
    }
}
