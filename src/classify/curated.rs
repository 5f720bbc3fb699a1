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
//!
//! On std (feature `prefilter`) valid UTF-8 takes the tables as one lazily
//! built automaton (`super::curated_lazy`, from the tables unpacked:
//! `Unpacked`, filled at first use), around the hits of their factors in
//! a long text (`super::curated_factors`).

use super::dfa::{
    CURATED, CURATED_LEN, CURATED_LITERALS, CURATED_WINDOWS, CURATED_WINDOWS_LEN, CURATED_WORDS,
    CURATED_WORD_TABLE, CURATED_WORD_TABLES, GUARDS, GUARDS_LEN, HINT, NEVER, OVERFLOW, RETRYABLE,
    THROTTLE, TOO_MANY_TOKENS, USAGE_LIMIT,
};
#[cfg(feature = "prefilter")]
use super::symbol::SYMBOLS;
use super::table::Delayed;
use super::Classification;

use super::LONG_WAIT_MS;

/// Everything the curated patterns find in the valid UTF-8 `text`: the
/// bits `RETRYABLE`, `USAGE_LIMIT` and `OVERFLOW` (but `/too many
/// tokens/i`), `NEVER`, `THROTTLE` and `TOO_MANY_TOKENS`, and `HINT`
/// where the name of a hint rule occurs ([`hint`]). On std, through the
/// factor search (`super::curated_factors`).
pub(super) fn scan_str(text: &str) -> u8 {
    let found = literals(text.as_bytes());
    #[cfg(feature = "prefilter")]
    if let Some(found) = super::curated_factors::scan(text, found) {
        return found;
    }
    tables(found, super::utf8::symbols(text))
}

/// [`scan_str`] over the lossy reading of `bytes`.
pub(super) fn scan_bytes(bytes: &[u8]) -> u8 {
    #[cfg(feature = "prefilter")]
    if let Ok(text) = core::str::from_utf8(bytes) {
        return scan_str(text);
    }
    tables(literals(bytes), super::utf8::lossy_symbols(bytes))
}

#[cfg(feature = "prefilter")]
extern crate std;

/// The curated hint of `bytes` without a clock
/// ([`curated_hint_ms_bytes`](super::curated_hint_ms_bytes)), `found`
/// being the text's scan: a text whose scan did not see the name of a hint
/// rule (`HINT`, a guard's match) has none.
pub(super) fn hint(found: u8, bytes: &[u8]) -> Option<u64> {
    if found & HINT == 0 {
        return None;
    }
    super::curated_hint_ms_bytes(bytes, None)
}

/// Every table the scan steps, in order: `CURATED`, `GUARDS`, then the
/// window words' tables (whose outputs go to the window scanner).
pub(super) const ALL: usize = CURATED_LEN + GUARDS_LEN + CURATED_WORD_TABLES;

/// The first of [`ALL`]'s tables that are window words' tables.
pub(super) const WORDS_AT: usize = CURATED_LEN + GUARDS_LEN;

/// The tables of [`ALL`], in order.
pub(super) static TABLES: [&Delayed; ALL] = {
    let mut all = [CURATED[0]; ALL];
    let mut k = 0;
    while k < ALL {
        all[k] = if k < CURATED_LEN {
            CURATED[k]
        } else if k < WORDS_AT {
            GUARDS[k - CURATED_LEN]
        } else {
            CURATED_WORD_TABLE[k - WORDS_AT]
        };
        k += 1;
    }
    all
};

/// The first special state of each table of [`TABLES`].
static SPECIAL: [u8; ALL] = {
    let mut special = [0; ALL];
    let mut k = 0;
    while k < ALL {
        special[k] = TABLES[k].special;
        k += 1;
    }
    special
};

/// The tables' scan, on top of the literals' bits `found`: on std, through
/// the tables unpacked ([`Unpacked`]), else through the compressed ones.
fn tables(found: u8, symbols: impl Iterator<Item = u8>) -> u8 {
    #[cfg(feature = "prefilter")]
    if let Some(unpacked) = Unpacked::get() {
        return stepped(found, symbols, |k, state, sym| unpacked.next(k, state, sym));
    }
    plain(found, symbols)
}

/// The tables' plain scan, through the compressed tables.
pub(super) fn plain(found: u8, symbols: impl Iterator<Item = u8>) -> u8 {
    stepped(found, symbols, |k, state, sym| {
        TABLES.get(k).map_or(0, |t| t.next(state, sym))
    })
}

/// The tables' scan with `next(k, state, sym)`, the state after `state` of
/// table `k` of [`TABLES`] reads `sym`.
#[inline(always)]
fn stepped(
    mut found: u8,
    symbols: impl Iterator<Item = u8>,
    next: impl Fn(usize, u8, u8) -> u8,
) -> u8 {
    let mut states = [0u8; ALL];
    let mut windows = Windows::default();
    // Characters read so far: where a match reported now ends.
    let mut pos: usize = 0;
    for sym in symbols {
        let (labels, words) = states.split_at_mut(WORDS_AT);
        for (k, state) in labels.iter_mut().enumerate() {
            *state = next(k, *state, sym);
            if *state >= SPECIAL.get(k).map_or(0, |&s| s) {
                found |= TABLES.get(k).map_or(0, |t| t.output(*state));
            }
        }
        let mut outs = [0u8; CURATED_WORD_TABLES];
        let mut any = false;
        for ((w, state), o) in words.iter_mut().enumerate().zip(&mut outs) {
            let k = WORDS_AT + w;
            *state = next(k, *state, sym);
            if *state >= SPECIAL.get(k).map_or(0, |&s| s) {
                *o = TABLES.get(k).map_or(0, |t| t.output(*state));
                any |= *o != 0;
            }
        }
        if any {
            found |= windows.words(reported(&outs), pos);
        }
        if sym == b'\n' {
            windows.line_break();
        }
        pos = pos.saturating_add(1);
    }
    // Matches that end with the text.
    let mut outs = [0u8; CURATED_WORD_TABLES];
    for (k, (&state, table)) in states.iter().zip(TABLES).enumerate() {
        let out = table.eoi(state);
        match k.checked_sub(WORDS_AT) {
            None => found |= out,
            Some(w) => {
                if let Some(o) = outs.get_mut(w) {
                    *o = out;
                }
            }
        }
    }
    found | windows.words(reported(&outs), pos)
}

/// The tables of [`TABLES`] unpacked (on std): per table, a row of
/// [`SYMBOLS`] per state, so that a step is one load indexed by the state
/// and the symbol rather than the compressed tables' chain of four loads
/// and a comparison. About 500 KB on the heap, filled at first use.
#[cfg(feature = "prefilter")]
pub(super) struct Unpacked {
    rows: std::boxed::Box<[u8]>,
    /// Where each table's rows start.
    at: [usize; ALL],
    /// Per table, its idle states (a bit per state): those whose
    /// transitions are the start state's and that report nothing, at the
    /// end of the text either.
    idle: [[u64; 4]; ALL],
}

#[cfg(feature = "prefilter")]
impl Unpacked {
    /// The tables unpacked, filled on first call.
    pub(super) fn get() -> Option<&'static Unpacked> {
        static UNPACKED: std::sync::OnceLock<Option<Unpacked>> = std::sync::OnceLock::new();
        UNPACKED.get_or_init(Unpacked::new).as_ref()
    }

    fn new() -> Option<Unpacked> {
        let mut at = [0; ALL];
        let mut len = 0usize;
        for (a, t) in at.iter_mut().zip(TABLES) {
            *a = len;
            len = len.checked_add(t.base.len().checked_mul(SYMBOLS)?)?;
        }
        let mut rows = std::vec![0u8; len].into_boxed_slice();
        for (&a, t) in at.iter().zip(TABLES) {
            let states = u8::try_from(t.base.len().checked_sub(1)?).ok()?;
            // One symbol per class: the transitions are per class.
            let mut of_class = [None; 256];
            for sym in 0..=u8::try_from(SYMBOLS - 1).ok()? {
                let class = t.classes.get(usize::from(sym))?;
                of_class.get_mut(usize::from(*class))?.get_or_insert(sym);
            }
            for state in 0..=states {
                let mut target = [0u8; 256];
                for (to, sym) in target.iter_mut().zip(of_class) {
                    if let Some(sym) = sym {
                        *to = t.next(state, sym);
                    }
                }
                let row = a + usize::from(state) * SYMBOLS;
                let row = rows.get_mut(row..row + SYMBOLS)?;
                for (to, class) in row.iter_mut().zip(t.classes) {
                    *to = *target.get(usize::from(*class))?;
                }
            }
        }
        let mut idle = [[0u64; 4]; ALL];
        for ((bits, &a), t) in idle.iter_mut().zip(&at).zip(TABLES) {
            let start = rows.get(a..a + SYMBOLS)?;
            for state in 0..t.base.len().min(usize::from(t.special)) {
                let row = rows.get(a + state * SYMBOLS..a + (state + 1) * SYMBOLS)?;
                let eoi = u8::try_from(state).map_or(1, |s| t.eoi(s));
                if row == start && eoi == 0 {
                    *bits.get_mut(state / 64)? |= 1 << (state % 64);
                }
            }
        }
        Some(Unpacked { rows, at, idle })
    }

    /// The idle states of table `k` (see [`Unpacked::idle`]).
    #[inline(always)]
    pub(super) fn idle_of(&self, k: usize) -> &[u64; 4] {
        self.idle.get(k).unwrap_or(&[0; 4])
    }

    /// The state after `state` of table `k` reads `sym`.
    #[inline(always)]
    pub(super) fn next(&self, k: usize, state: u8, sym: u8) -> u8 {
        if usize::from(sym) >= SYMBOLS {
            // Not reached (the readings give symbols only).
            return TABLES.get(k).map_or(0, |t| t.next(state, sym));
        }
        let at = self.at.get(k).map_or(0, |&a| a);
        self.rows
            .get(at + usize::from(state) * SYMBOLS + usize::from(sym))
            .map_or(0, |&s| s)
    }
}

/// The first bytes of the literal alternatives: from `.0` to `.1`.
const LEADS: (u8, u8) = {
    let (mut lo, mut hi) = (u8::MAX, 0);
    let mut i = 0;
    while i < CURATED_LITERALS.len() {
        let lead = CURATED_LITERALS[i].0.as_bytes()[0];
        if lead < lo {
            lo = lead;
        }
        if lead > hi {
            hi = lead;
        }
        i += 1;
    }
    (lo, hi)
};

/// The bits of the literal alternatives that occur in `bytes`.
fn literals(bytes: &[u8]) -> u8 {
    // The literals start with bytes that are not ASCII, in a narrow range
    // (CJK): a text holds none before the first such byte. The search for
    // it reads 64 bytes at a time (vectorized), the literals' searches
    // only the rest.
    if bytes.is_ascii() {
        return 0;
    }
    let (lo, span) = (LEADS.0, LEADS.1.wrapping_sub(LEADS.0));
    let lead = |b: &u8| b.wrapping_sub(lo) <= span;
    let Some(chunk) = bytes
        .chunks(64)
        .position(|c| c.iter().fold(false, |any, b| any | lead(b)))
    else {
        return 0;
    };
    let bytes = bytes.get(chunk * 64..).unwrap_or_default();
    let mut found = 0;
    for &(literal, bit) in &CURATED_LITERALS {
        let needle = literal.as_bytes();
        if found & bit == 0 && !needle.is_empty() && occurs(bytes, needle) {
            found |= bit;
        }
    }
    found
}

/// Whether `needle` occurs in `bytes`: `memchr`'s vectorized search on
/// std, a plain comparison at each place without it.
fn occurs(bytes: &[u8], needle: &[u8]) -> bool {
    #[cfg(feature = "prefilter")]
    {
        memchr::memmem::find(bytes, needle).is_some()
    }
    #[cfg(not(feature = "prefilter"))]
    {
        bytes.windows(needle.len()).any(|w| w == needle)
    }
}

/// Per window alternative, where a variant of its first word last ended
/// on the current line (in characters). Only the nearest end matters: a
/// later end is at least as close, and the two words of an alternative
/// never overlap.
#[derive(Default)]
pub(super) struct Windows {
    ends: [usize; CURATED_WINDOWS_LEN],
    /// The alternatives whose `ends` is set (bit `w`: alternative `w`).
    open: u32,
    /// Where the last of them closes: past it, no second word can meet
    /// its first.
    last: usize,
}

/// Per window word (of `CURATED_WORDS`), the alternatives it is a first
/// word of (bit `w`: alternative `w`).
const FIRST: [u32; CURATED_WORDS.len()] = roles(true);

/// Per window word, the alternatives it is a second word of.
const SECOND: [u32; CURATED_WORDS.len()] = roles(false);

/// The window words that are a first word of some alternative.
pub(super) const FIRSTS: u32 = any(&FIRST);

/// The window words that are a second word of some alternative.
const SECONDS: u32 = any(&SECOND);

/// The most characters of a second word.
#[cfg(feature = "prefilter")]
const LONGEST_SECOND: usize = longest(SECONDS);

/// The most characters of the words `ids`.
#[cfg(feature = "prefilter")]
const fn longest(ids: u32) -> usize {
    let mut most = 0;
    let mut id = 0;
    while id < CURATED_WORDS.len() {
        let len = CURATED_WORDS[id].2 as usize;
        if ids >> id & 1 != 0 && len > most {
            most = len;
        }
        id += 1;
    }
    most
}

/// The words (bit `id`) whose mask in `roles` is not empty.
const fn any(roles: &[u32; CURATED_WORDS.len()]) -> u32 {
    let mut ids = 0;
    let mut id = 0;
    while id < roles.len() {
        if roles[id] != 0 {
            ids |= 1 << id;
        }
        id += 1;
    }
    ids
}

/// [`FIRST`] (`first`) or [`SECOND`].
const fn roles(first: bool) -> [u32; CURATED_WORDS.len()] {
    assert!(CURATED_WINDOWS_LEN <= 32 && CURATED_WORDS.len() <= 32);
    let mut masks = [0; CURATED_WORDS.len()];
    let mut w = 0;
    while w < CURATED_WINDOWS_LEN {
        let words = if first {
            CURATED_WINDOWS[w].0
        } else {
            CURATED_WINDOWS[w].1
        };
        let mut i = 0;
        while i < words.len() {
            masks[words[i] as usize] |= 1 << w;
            i += 1;
        }
        w += 1;
    }
    masks
}

/// The window words that `outs` (per word table, its output bits) report:
/// bit `id` for `CURATED_WORDS[id]`.
pub(super) fn reported(outs: &[u8; CURATED_WORD_TABLES]) -> u32 {
    let mut ids = 0;
    for (id, &(table, bit, _)) in CURATED_WORDS.iter().enumerate() {
        if outs
            .get(usize::from(table))
            .is_some_and(|&out| out & bit != 0)
        {
            ids |= 1 << id;
        }
    }
    ids
}

impl Windows {
    /// The window words `ids` ([`reported`]) ended at `pos`; the labels of
    /// the alternatives they complete.
    pub(super) fn words(&mut self, ids: u32, pos: usize) -> u8 {
        let mut labels = 0;
        // Second words first: a word ending here cannot start after itself.
        let mut seconds = if self.open != 0 { ids & SECONDS } else { 0 };
        while seconds != 0 {
            let id = seconds.trailing_zeros() as usize;
            seconds &= seconds - 1;
            if let (Some(&second), Some(&(_, _, len))) = (SECOND.get(id), CURATED_WORDS.get(id)) {
                let mut meets = second & self.open;
                let Some(start) = pos.checked_sub(usize::from(len)) else {
                    continue;
                };
                while meets != 0 {
                    let w = meets.trailing_zeros() as usize;
                    meets &= meets - 1;
                    if let (Some(&end), Some(&(_, _, gap, label))) =
                        (self.ends.get(w), CURATED_WINDOWS.get(w))
                    {
                        if start >= end && start - end <= usize::from(gap) {
                            labels |= label;
                        }
                    }
                }
            }
        }
        let mut firsts = ids & FIRSTS;
        while firsts != 0 {
            let id = firsts.trailing_zeros() as usize;
            firsts &= firsts - 1;
            let first = FIRST.get(id).copied().unwrap_or(0);
            for (w, (end, window)) in self.ends.iter_mut().zip(&CURATED_WINDOWS).enumerate() {
                if first >> w & 1 != 0 {
                    *end = pos;
                    if self.open == 0 {
                        self.last = 0;
                    }
                    self.open |= 1 << w;
                    self.last = self.last.max(pos.saturating_add(usize::from(window.2)));
                }
            }
        }
        labels
    }

    /// Closes the windows once no second word can meet its first any
    /// more, `pos` characters read, with no word under way (`idle`) or
    /// with one (it may have started up to the longest second word's
    /// length before); whether one is still open.
    #[cfg(feature = "prefilter")]
    #[inline(always)]
    pub(super) fn expire(&mut self, pos: usize, idle: bool) -> bool {
        let under_way = if idle { 0 } else { LONGEST_SECOND };
        if pos > self.last.saturating_add(under_way) {
            self.open = 0;
        }
        self.open != 0
    }

    /// Whether a window is open (see [`Windows::expire`]).
    #[cfg(feature = "prefilter")]
    #[inline(always)]
    pub(super) fn open(&self) -> bool {
        self.open != 0
    }

    /// A `\n`: no window reaches across it.
    pub(super) fn line_break(&mut self) {
        self.open = 0;
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

#[cfg(all(test, feature = "prefilter"))]
mod tests {
    extern crate std;

    use super::super::utf8::{lossy_symbols, symbols};
    use super::*;

    /// The factor test and the unpacked tables change no answer: on every
    /// corpus text, whole lines and with an invalid byte inside, the scan
    /// is the compressed tables' plain scan.
    #[test]
    fn the_factor_test_is_the_tables() {
        use std::string::String;
        let mut texts: std::vec::Vec<String> = [
            include_str!("../../tests/corpus/curated/errors.jsonl"),
            include_str!("../../tests/corpus/extended/errors.jsonl"),
            include_str!("../../tests/corpus/real/errors.jsonl"),
            include_str!("../../benches/data/body.html"),
        ]
        .iter()
        .flat_map(|c| c.lines())
        .map(String::from)
        .collect();
        texts.push(String::from(
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
        ));
        let (mut skipped, mut labelled) = (0, 0);
        for text in &texts {
            let got = scan_str(text);
            let want = plain(literals(text.as_bytes()), symbols(text));
            assert_eq!(got, want, "{text}");
            let mut bytes = text.as_bytes().to_vec();
            bytes.insert(bytes.len() / 2, 0xFF);
            assert_eq!(
                scan_bytes(&bytes),
                plain(literals(&bytes), lossy_symbols(&bytes)),
                "{text}"
            );
            assert_eq!(
                hint(got, text.as_bytes()),
                super::super::curated_hint_ms(text, None),
                "{text}"
            );
            let plain = |bytes: &[u8]| {
                CURATED_LITERALS
                    .iter()
                    .filter(|(l, _)| bytes.windows(l.len()).any(|w| w == l.as_bytes()))
                    .fold(0, |found, &(_, bit)| found | bit)
            };
            assert_eq!(literals(text.as_bytes()), plain(text.as_bytes()), "{text}");
            assert_eq!(literals(&bytes), plain(&bytes), "{text}");
            skipped += usize::from(got & HINT == 0);
            labelled += usize::from(want != 0);
        }
        assert!(skipped > 3 && labelled > 1000, "{skipped} {labelled}");
    }

    /// The factor search's runs on texts built to strain them: windows
    /// whose words fall in different chunks or lines, `\s*` across lines
    /// (`400\n\n(no body)`), long words and runs of one factor, matches at
    /// the text's ends and at the chunks' edges (256 and 4096 bytes), never
    /// retried texts after retryable ones. Each takes the factor search
    /// (where the target has Teddy) and gives the plain scan's bits.
    #[test]
    fn the_runs_are_the_plain_scan_on_strained_texts() {
        use std::string::String;
        use std::vec::Vec;
        let pieces = [
            "account",
            "'s",
            " rate limit",
            "rate-limit",
            " ",
            "\n",
            "\r\n",
            "400",
            "413",
            " status code ",
            "(no body)",
            "  \n  ",
            "hit your",
            " daily ",
            "limit",
            "limits",
            "quota",
            "monthly",
            "credits",
            "provider returned error",
            "per",
            " minute",
            "day",
            "too many tokens",
            "throttlingexception",
            "x",
            "abcdefghij",
            "_",
            "-",
            "limitlimit",
            "rpm",
            "tpm",
            "econnreset",
            "invalid api key",
            "permission denied",
            "\u{4e2d}",
            "\u{2028}",
            "\u{670d}\u{52a1}\u{7e41}\u{5fd9}",
            "usage",
            "exceeded",
            "context window",
            " exceeds the context limit",
            "input token count",
            " exceeds the maximum",
            "connection",
            " reset",
            "busy",
            "try again later",
            "self-signed certificate",
            "Retry after 7 seconds",
            "try again in ~ 2m30s",
            "\"resets_in_seconds\": 42",
            "usage limit reached|1700000000",
            "retry-after: 30",
            "reset after 5s",
        ];
        let mut seed = 0x0DDB_1A5E_5BAD_5EEDu64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut labelled, mut quiet) = (0, 0);
        for round in 0..600 {
            let len = [5, 40, 250, 262, 600, 4090, 4200, 9000][round % 8];
            let mut text = String::new();
            while text.len() < len {
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                text.push_str(piece);
                if next() % 4 == 0 {
                    // Filler of a random length: words fall anywhere.
                    let n = (next() % 90) as usize;
                    text.extend(core::iter::repeat_n('.', n));
                }
            }
            let lit = literals(text.as_bytes());
            let want = plain(lit, symbols(&text));
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            assert!(
                super::super::curated_factors::scan(&text, lit).is_some(),
                "no factor search"
            );
            let got = scan_str(&text);
            assert_eq!(got, want, "{text:?}");
            assert_eq!(
                hint(got, text.as_bytes()),
                super::super::curated_hint_ms(&text, None),
                "{text:?}"
            );
            if want & !lit != 0 {
                labelled += 1
            } else {
                quiet += 1
            }
        }
        assert!(labelled > 300 && quiet > 20, "{labelled} {quiet}");
        // Long runs of one word, and a window across a line.
        let mut long: Vec<String> = Vec::new();
        long.push("limit ".repeat(3000));
        long.push("rpm".repeat(3000));
        long.push("a".repeat(5000) + "rpm");
        long.push(String::from("account") + &" ".repeat(70) + "rate limit");
        long.push(String::from("account") + &" ".repeat(90) + "rate limit");
        long.push(String::from("account\n rate limit"));
        long.push(String::from("400\n\n \n(no body)"));
        long.push(" ".repeat(4094) + "400 (no body) " + &"y".repeat(300));
        for text in &long {
            let want = plain(literals(text.as_bytes()), symbols(text));
            assert_eq!(scan_str(text), want, "{text:?}");
        }
    }

    /// On texts made of pieces of the corpora (short and long, ASCII and
    /// not, with line breaks and invalid UTF-8 through the bytes' reading),
    /// the scan is the compressed tables' plain scan.
    #[test]
    fn the_fast_path_is_the_plain_scan_on_generated_texts() {
        use std::vec::Vec;
        let lines: Vec<&str> = include_str!("../../tests/corpus/curated/errors.jsonl")
            .lines()
            .chain(include_str!("../../tests/corpus/real/errors.jsonl").lines())
            .collect();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut found, mut none) = (0, 0);
        for round in 0..300 {
            let len = [10, 60, 300, 2_000, 20_000][round % 5];
            let mut bytes: Vec<u8> = Vec::new();
            while bytes.len() < len {
                let line = lines[(next() % lines.len() as u64) as usize].as_bytes();
                let a = (next() as usize) % (line.len() + 1);
                let b = (a + (next() as usize) % 80).min(line.len());
                bytes.extend_from_slice(&line[a..b]);
                match next() % 8 {
                    0 => bytes.push(b'\n'),
                    1 => bytes.extend_from_slice(b"\xff\xe4\xb8"),
                    2 => bytes.extend_from_slice("\u{2028} \u{670d}\u{52a1}".as_bytes()),
                    _ => bytes.push(b' '),
                }
            }
            let want = plain(literals(&bytes), lossy_symbols(&bytes));
            assert_eq!(scan_bytes(&bytes), want);
            if let Ok(text) = std::str::from_utf8(&bytes) {
                assert_eq!(scan_str(text), plain(literals(&bytes), symbols(text)));
            }
            if want != 0 {
                found += 1
            } else {
                none += 1
            }
        }
        assert!(found > 100 && none > 5, "{found} {none}");
    }
}
