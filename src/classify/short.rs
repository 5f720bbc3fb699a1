//! The classic scan of short texts (feature `prefilter`, on std): valid
//! UTF-8 under `strategy::FACTORS_MIN_LEN` bytes (`super::strategy`).
//!
//! It finds what the plain scan (`super::classic::scan`) finds, stepping the same
//! DFAs on the same symbols, but is built for the chain of loads that a
//! DFA is, one state waiting for the one before:
//!
//! - Padded copies of the tables, built at compile time from the generated
//!   ones (about 40 KB of read-only data, which a firmware without
//!   `prefilter` does not carry). A step of a generated table looks up the
//!   symbol's class, multiplies it by the number of states, adds the state
//!   and checks the index before it reads the transition; here each column
//!   of transitions is padded to `S` states (256 for the big tables, 32
//!   for the tails) and each symbol has a reference to its class's column,
//!   read while the previous step is under way, so that a step is one load
//!   indexed by the state, which no state can overrun.
//! - A loop that steps the tables it needs and nothing else, their states
//!   in registers, until one of them reports something: the outputs, the
//!   labels still looked for and the tails are looked at only then.
//! - While a tail runs (from a head to the end of its line), a loop of its
//!   own that steps every tail too, a tail that does not run sitting in its
//!   dead state.
//!
//! A table whose labels are all found goes on stepping, its outputs no
//! longer counted: the labels found are the plain scan's, which the tests
//! below check on texts built from the patterns' pieces, with every set of
//! labels.

use super::dfa::{self, HINT, OVERFLOW, OVERFLOW_AT_START, RETRYABLE, USAGE_LIMIT};
use super::symbol::{self, SYMBOLS};
use super::table::Table;

/// The labels among `want` that `text` has: `super::scan`'s.
pub(super) fn scan(want: u8, text: &str) -> u8 {
    let bytes = text.as_bytes();
    if want & OVERFLOW == 0 {
        scan_loop::<true, false>(want, bytes)
    } else if want & (RETRYABLE | USAGE_LIMIT | HINT) == 0 {
        scan_loop::<false, true>(want, bytes)
    } else {
        scan_loop::<true, true>(want, bytes)
    }
}

/// The scan: `LABELS` steps `dfa::LABELS`, `WORDS` the overflow tables and
/// the tails. `bytes` are UTF-8.
// Inlined where speed counts; a call of its own in debug builds, whose
// frame would otherwise hold each inlined copy's locals.
#[cfg_attr(not(debug_assertions), inline(always))]
fn scan_loop<const LABELS: bool, const WORDS: bool>(mut want: u8, bytes: &[u8]) -> u8 {
    let mut found = 0;
    let mut states = States {
        labels: 0,
        words: [0; dfa::WORDS_LEN],
        tails: TAILS.map(|t| t.special),
    };
    let mut running = false;
    let mut rest = bytes.iter();
    loop {
        if running {
            let stop = run_tails::<LABELS>(&mut rest, &mut states);
            if stop & MATCHED != 0 {
                found |= want & OVERFLOW;
                want &= !OVERFLOW;
                if want == 0 {
                    return found;
                }
            }
            if stop & END != 0 {
                return found;
            }
            running = stop & DEAD == 0;
            if stop & REPORT == 0 {
                continue;
            }
        } else {
            // No tail runs: the tables alone, up to a report or the end.
            let States {
                mut labels,
                mut words,
                ..
            } = states;
            loop {
                let Some(sym) = next_symbol(&mut rest) else {
                    return found;
                };
                let mut report = false;
                if LABELS {
                    labels = LABELS_TABLE.step(labels, sym);
                    report |= labels >= LABELS_TABLE.special;
                }
                if WORDS {
                    for (state, table) in words.iter_mut().zip(WORDS_TABLES) {
                        *state = table.step(*state, sym);
                        report |= *state >= table.special;
                    }
                }
                if report {
                    break;
                }
            }
            states.labels = labels;
            states.words = words;
        }
        if LABELS && states.labels >= dfa::LABELS.special {
            let new = dfa::LABELS.output(states.labels) & want;
            found |= new;
            want &= !new;
        }
        if WORDS {
            let mut heads = 0;
            for (&state, table) in states.words.iter().zip(dfa::WORDS) {
                if state >= table.special {
                    heads |= table.output(state);
                }
            }
            if heads & (OVERFLOW | OVERFLOW_AT_START) != 0 {
                found |= want & OVERFLOW;
                want &= !OVERFLOW;
            }
            // A head starts its tail unless it runs already: an earlier
            // head on the same line is always the better start.
            let heads = heads / dfa::HEAD;
            if heads != 0 {
                for (k, (state, table)) in states.tails.iter_mut().zip(TAILS).enumerate() {
                    if heads & (1 << k) != 0 && *state == table.special {
                        *state = 0;
                        running = true;
                    }
                }
            }
        }
        if want == 0 {
            return found;
        }
    }
}

/// The factor search's steps on a line's ASCII characters (its
/// `Stepper::ascii_run` for the classic scan): `scan` steps on the
/// characters from `pos` on up to the first line terminator or other
/// character, as `Scan::step` would; where it stopped, and whether every
/// label looked for is found.
///
/// While no tail runs, the tables `scan` needs step on the padded copies
/// with their states in registers, eight characters at a time once one
/// load has told that the eight are ASCII on one line, until one of them
/// reports something; that character, and every character while a tail
/// runs, takes `Scan::step`. Text crowded with factors (a log of
/// rate-limit lines) is stepped whole this way.
#[inline(never)]
pub(super) fn ascii_run(
    scan: &mut super::classic::Scan,
    bytes: &[u8],
    pos: usize,
) -> (usize, bool) {
    let labels = scan.want & (RETRYABLE | USAGE_LIMIT | HINT) != 0;
    match (labels, scan.want & OVERFLOW != 0) {
        (true, true) => ascii_run_with::<true, true>(scan, bytes, pos),
        (true, false) => ascii_run_with::<true, false>(scan, bytes, pos),
        (false, true) => ascii_run_with::<false, true>(scan, bytes, pos),
        (false, false) => ascii_run_with::<false, false>(scan, bytes, pos),
    }
}

/// [`ascii_run`] for a scan that steps `dfa::LABELS` if `LABELS` and the
/// overflow tables if `WORDS`.
#[inline(always)]
fn ascii_run_with<const LABELS: bool, const WORDS: bool>(
    scan: &mut super::classic::Scan,
    bytes: &[u8],
    mut pos: usize,
) -> (usize, bool) {
    /// A step of the tables on `b`: their states after it, and whether one
    /// of them reports something.
    #[inline(always)]
    fn step<const LABELS: bool, const WORDS: bool>(
        (labels, words): (u8, [u8; dfa::WORDS_LEN]),
        b: u8,
    ) -> ((u8, [u8; dfa::WORDS_LEN]), bool) {
        let mut report = false;
        let mut next_labels = labels;
        if LABELS {
            next_labels = LABELS_TABLE.step(labels, b);
            report |= next_labels >= LABELS_TABLE.special;
        }
        let mut next_words = words;
        if WORDS {
            for (state, table) in next_words.iter_mut().zip(WORDS_TABLES) {
                *state = table.step(*state, b);
                report |= *state >= table.special;
            }
        }
        ((next_labels, next_words), report)
    }
    loop {
        if !WORDS || scan.tails.active == 0 {
            let mut states = (scan.labels, scan.words);
            loop {
                // Eight characters at a time while they are ASCII on one
                // line and no table reports.
                while let Some(block) = bytes
                    .get(pos..pos + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                {
                    if !ascii_on_one_line(u64::from_le_bytes(block)) {
                        break;
                    }
                    let mut next = states;
                    let mut report = false;
                    for b in block {
                        let (after, r) = step::<LABELS, WORDS>(next, b);
                        next = after;
                        report |= r;
                    }
                    if report {
                        break;
                    }
                    states = next;
                    pos += 8;
                }
                // Then one by one, up to a report, a line terminator or
                // other character, or the next eight.
                let stop = bytes.len().min(pos + 8);
                let mut more = true;
                while pos < stop {
                    match bytes.get(pos) {
                        Some(&b) if b < 0x80 && b != b'\n' && b != b'\r' => {
                            let (after, report) = step::<LABELS, WORDS>(states, b);
                            if report {
                                more = false;
                                break;
                            }
                            states = after;
                            pos += 1;
                        }
                        _ => {
                            more = false;
                            break;
                        }
                    }
                }
                if !more || pos >= bytes.len() {
                    break;
                }
            }
            (scan.labels, scan.words) = states;
        }
        // A report or a running tail: this character the general way.
        match bytes.get(pos) {
            Some(&b) if b < 0x80 && b != b'\n' && b != b'\r' => {
                pos += 1;
                if scan.step(b) {
                    return (pos, true);
                }
            }
            _ => return (pos, false),
        }
    }
}

/// Whether the eight bytes of `x` are ASCII and none is `\n` or `\r`.
#[inline(always)]
fn ascii_on_one_line(x: u64) -> bool {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    // With no high bit set, a byte of `v` is zero exactly where this sets
    // its high bit.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    x & HIGH == 0 && zero(x ^ (ONES * u64::from(b'\n'))) | zero(x ^ (ONES * u64::from(b'\r'))) == 0
}

/// The states of the tables.
#[derive(Clone, Copy)]
struct States {
    labels: u8,
    words: [u8; dfa::WORDS_LEN],
    /// A tail that does not run is in its dead state.
    tails: [u8; dfa::TAILS_LEN],
}

/// What stopped [`run_tails`]: the end of the text.
const END: u8 = 1;
/// What stopped [`run_tails`]: a tail matched.
const MATCHED: u8 = 2;
/// What stopped [`run_tails`]: a table reports something.
const REPORT: u8 = 4;
/// What stopped [`run_tails`]: every tail is dead (at the end of a line).
const DEAD: u8 = 8;

/// The scan while a tail runs: steps the tails (first: a tail reads the
/// characters after its head), `dfa::LABELS` if `LABELS` and the overflow
/// tables on the characters of `rest`, up to the end of the text, a
/// tail's match, a report or the end of the tails' line; what stopped it
/// (`END`, `MATCHED`, `REPORT`, `DEAD`, several at once). A function of its
/// own, so that all the states stay in registers.
#[inline(never)]
fn run_tails<const LABELS: bool>(rest: &mut core::slice::Iter<'_, u8>, states: &mut States) -> u8 {
    let States {
        mut labels,
        mut words,
        mut tails,
    } = *states;
    let mut bytes = rest.clone();
    let mut stop = 0;
    while let Some(sym) = next_symbol(&mut bytes) {
        for (state, table) in tails.iter_mut().zip(TAILS) {
            *state = table.step(*state, sym);
            if *state > table.special {
                stop |= MATCHED;
            }
        }
        if LABELS {
            labels = LABELS_TABLE.step(labels, sym);
            if labels >= LABELS_TABLE.special {
                stop |= REPORT;
            }
        }
        for (state, table) in words.iter_mut().zip(WORDS_TABLES) {
            *state = table.step(*state, sym);
            if *state >= table.special {
                stop |= REPORT;
            }
        }
        // Tails die at the end of a line, and stay dead.
        if matches!(sym, b'\n' | b'\r' | symbol::LS | symbol::PS)
            && tails
                .iter()
                .zip(TAILS)
                .all(|(&state, table)| state == table.special)
        {
            stop |= DEAD;
        }
        if stop != 0 {
            break;
        }
    }
    if stop == 0 {
        stop = END;
    }
    *states = States {
        labels,
        words,
        tails,
    };
    *rest = bytes;
    stop
}

/// The symbol of the next character of the UTF-8 `bytes`, read past it;
/// `None` at the end. As `table::symbols` reads them.
#[inline(always)]
fn next_symbol(bytes: &mut core::slice::Iter<'_, u8>) -> Option<u8> {
    loop {
        let b = *bytes.next()?;
        if b < 0x80 {
            return Some(b);
        }
        return Some(match b {
            // A continuation byte: its character's symbol is out.
            0x80..=0xBF => continue,
            0xE2 => match bytes.as_slice() {
                [0x80, 0xA8, ..] => symbol::LS,
                [0x80, 0xA9, ..] => symbol::PS,
                _ => symbol::OTHER,
            },
            _ => symbol::OTHER,
        });
    }
}

// A tail's first special state is its dead one, and every other special
// state reports a match: a tail that does not run sits in its dead state,
// and a state above it is a match.
const _: () = {
    let mut k = 0;
    while k < dfa::TAILS_LEN {
        let t = dfa::TAILS[k];
        assert!(matches!(t.dead, Some(dead) if dead == t.special));
        assert!(!t.out.is_empty() && t.out[0] == 0);
        let mut i = 1;
        while i < t.out.len() {
            assert!(t.out[i] != 0);
            i += 1;
        }
        k += 1;
    }
};

/// The number of classes of `t`.
const fn classes(t: &Table) -> usize {
    t.trans.len() / t.states
}

/// The columns of `t`, padded to `S` states: `columns[class][state]` is
/// the state after `state` reads a symbol of `class` (0 past the table's
/// states, where the scan never reads). It does not compile if `t` does
/// not fit.
const fn columns<const S: usize, const N: usize>(t: &Table) -> [[u8; S]; N] {
    assert!(N == classes(t) && N * t.states == t.trans.len());
    assert!(t.states <= S && S <= 256 && 256 % S == 0);
    let mut out = [[0; S]; N];
    let mut class = 0;
    while class < N {
        let mut state = 0;
        while state < t.states {
            out[class][state] = t.trans[class * t.states + state];
            state += 1;
        }
        class += 1;
    }
    out
}

/// A padded table: the states of the table it copies, 0 the start.
struct Padded<const S: usize> {
    /// Per symbol, its class's column (the first column for the bytes that
    /// are no symbol, which the scan never steps on).
    by_symbol: [&'static [u8; S]; 256],
    /// First special state.
    special: u8,
}

impl<const S: usize> Padded<S> {
    /// `t`, padded, with its `columns` (`columns(t)`).
    const fn new<const N: usize>(t: &Table, columns: &'static [[u8; S]; N]) -> Self {
        let mut by_symbol = [&columns[0]; 256];
        let mut sym = 0;
        while sym < SYMBOLS {
            by_symbol[sym] = &columns[t.classes[sym] as usize];
            sym += 1;
        }
        Padded {
            by_symbol,
            special: t.special,
        }
    }

    /// The state after `state` reads `sym`.
    #[inline(always)]
    fn step(&self, state: u8, sym: u8) -> u8 {
        // `S` divides 256: for 256 the remainder is the state itself.
        self.by_symbol[usize::from(sym)][usize::from(state) % S]
    }
}

/// A padded copy of a generated table, in a static of its own.
macro_rules! padded {
    ($name:ident, $states:literal, $table:expr) => {
        static $name: Padded<$states> = {
            static COLUMNS: [[u8; $states]; classes($table)] = columns($table);
            Padded::new($table, &COLUMNS)
        };
    };
}

padded!(LABELS_TABLE, 256, &dfa::LABELS);
padded!(WORDS_0, 256, dfa::WORDS[0]);
padded!(WORDS_1, 256, dfa::WORDS[1]);
padded!(TAIL_0, 32, dfa::TAILS[0]);
padded!(TAIL_1, 32, dfa::TAILS[1]);
padded!(TAIL_2, 32, dfa::TAILS[2]);
padded!(TAIL_3, 32, dfa::TAILS[3]);
padded!(TAIL_4, 32, dfa::TAILS[4]);

/// `dfa::WORDS`, padded.
static WORDS_TABLES: [&Padded<256>; dfa::WORDS_LEN] = [&WORDS_0, &WORDS_1];

/// `dfa::TAILS`, padded.
static TAILS: [&Padded<32>; dfa::TAILS_LEN] = [&TAIL_0, &TAIL_1, &TAIL_2, &TAIL_3, &TAIL_4];

#[cfg(test)]
mod tests {
    use super::super::classic::scan as plain;
    use super::super::testing::pieces;
    use super::super::utf8::symbols;
    use super::super::ALL;
    use super::*;
    use std::{string::String, vec::Vec};

    /// Every set of labels a scan can look for.
    fn wants() -> impl Iterator<Item = u8> {
        (1..16u8).map(|w| w & (ALL | HINT)).filter(|&w| w != 0)
    }

    fn check(text: &str) {
        for want in wants() {
            assert_eq!(
                scan(want, text),
                plain(want, symbols(text)),
                "want {want}: {text:?}"
            );
        }
    }

    /// Short texts from a fixed seed: the patterns' pieces (valid UTF-8
    /// only), upper-cased at random, with a little filler, line terminators
    /// and non-ASCII characters between them.
    fn texts(count: usize, seed: u64) -> Vec<String> {
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
                let len = rand(128);
                while t.len() < len {
                    let piece = &pieces[rand(pieces.len())];
                    if rand(4) == 0 {
                        t.push_str(&piece.to_ascii_uppercase());
                    } else {
                        t.push_str(piece);
                    }
                    for _ in 0..rand(3) {
                        t.push(match rand(12) {
                            0 => '\n',
                            1 => '\r',
                            2 => '\u{2028}',
                            3 => 'é',
                            4 => '😀',
                            5 => '\u{2029}',
                            6 => '\u{2027}',
                            _ => ' ',
                        });
                    }
                }
                t
            })
            .collect()
    }

    /// Every transition of a padded copy is the generated table's.
    fn same_steps<const S: usize>(padded: &Padded<S>, table: &Table) {
        assert_eq!(padded.special, table.special);
        for state in 0..table.states {
            let state = u8::try_from(state).unwrap();
            for sym in 0..SYMBOLS as u8 {
                assert_eq!(padded.step(state, sym), table.next(state, sym));
            }
        }
    }

    #[test]
    fn eight_bytes_ascii_on_one_line() {
        let at = |bytes: [u8; 8]| ascii_on_one_line(u64::from_le_bytes(bytes));
        assert!(at(*b"limit li"));
        assert!(at([0x7F, 1, 0, 9, 11, 12, 14, b' ']));
        for bad in [b'\n', b'\r', 0x80, 0xC3, 0xFF] {
            for i in 0..8 {
                let mut bytes = *b"\0\x01abc 12";
                bytes[i] = bad;
                assert!(!at(bytes), "{bad:#x} at {i}");
            }
        }
    }

    #[test]
    fn padded_tables_step_like_the_generated_ones() {
        same_steps(&LABELS_TABLE, &dfa::LABELS);
        for (padded, table) in WORDS_TABLES.iter().zip(dfa::WORDS) {
            same_steps(padded, table);
        }
        for (padded, table) in TAILS.iter().zip(dfa::TAILS) {
            same_steps(padded, table);
        }
    }

    #[test]
    fn same_as_the_plain_scan() {
        for t in texts(20_000, 0x9E37_79B9_7F4A_7C15) {
            check(&t);
        }
    }

    #[test]
    fn same_as_the_plain_scan_on_the_patterns_pieces() {
        for p in pieces() {
            if let Ok(t) = String::from_utf8(p) {
                check(&t);
                check(&std::format!("{t}\n{t}"));
            }
        }
    }

    #[test]
    fn tails_end_with_their_line() {
        for t in [
            "input token count\nexceeds the maximum",
            "input token count exceeds the maximum",
            "input token count\u{2028}exceeds the maximum",
            "requested tokens\r exceed context window",
            "requested tokens\nrequested tokens exceed context window",
            "prompt\n too long\ncontext",
            "prompt x too long y n_ctx",
            "context window\nexceeded",
            "context size and more: overflow",
            "input input token count too long \n n_ctx exceeds the maximum",
        ] {
            check(t);
        }
    }
}
