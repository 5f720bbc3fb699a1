//! Where no match can start (feature `prefilter`, on std): the tables'
//! quiet states and the harmless strings of three bytes, computed once
//! from the tables, which the skipping scan (`super::skipping`) and the
//! factor search (`super::factors`) rely on.
//!
//! A table's DFA reads one character per dependent memory load. Most of a
//! long body, though, is text where no pattern is under way: there the
//! scan looks at each string of three bytes through one bit table, with no
//! chain from one byte to the next, and hands the text back to the DFAs
//! only where a match could start. The result is the DFAs' on every
//! character, by this argument.
//!
//! A table is *quiet* in its idle state (no match under way; tables with
//! `\b` have two, after a word character and after another) or, for a
//! tail, in a state that waits for its next literal. Call `R(c)` the quiet
//! state after character `c`. A string `xyz` is *harmless* when, from the
//! quiet state `r` the scan is in, `δ(r, xyz) = δ(R(x), yz)`: a match
//! started at `x` leaves no trace once `z` is read. If the scan may restart
//! in a quiet state at position `m` and the strings at `m, m+1, .., p-1`
//! are all harmless, then (the DFA being deterministic) it may restart at
//! `p` in state `R(text[p-1])`: from `p + 2` on the states agree with the
//! DFA's. No match can end in between: a string where one or two
//! characters from a quiet state reach a reporting state is never
//! harmless. A scan in the DFAs may skip again once its state is quiet, or
//! is where a quiet state two characters back leads.
//!
//! [`Prefilter`] computes, once and from the tables themselves, which
//! strings of three ASCII characters are harmless for every table a scan
//! steps (by their *codes*: characters that every table steps alike).
//! Strings with a non-ASCII byte, and (for the extended windows, which
//! count lines) those that start with a line feed, are never skipped, so
//! the skipped bytes are ASCII characters, one per symbol.
//!
//! Which texts take the skipping scan is `super::strategy`'s choice.

extern crate std;

use std::boxed::Box;
use std::sync::OnceLock;

use super::dfa::{self, HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT};
use super::symbol::SYMBOLS;
use super::table::Table;

/// One bit per string of three codes (see [`Prefilter::codes`]), at
/// `cx << 12 | cy << 6 | cz`: set when the string may not be harmless.
type Triples = [u64; 4096];

/// The code of every non-ASCII byte.
const NON_ASCII: u8 = 63;

/// Whether an ASCII character is a word character of `\b` (spec 3.1).
#[inline(always)]
fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// A table's quiet states: after a character that is not a word
/// character and after one that is (the same for tables without `\b`).
#[derive(Clone, Copy)]
struct Idle {
    other: u8,
    word: u8,
}

impl Idle {
    /// The quiet state after the ASCII character `c`.
    #[inline(always)]
    fn after(self, c: u8) -> u8 {
        if word(c) {
            self.word
        } else {
            self.other
        }
    }
}

/// Bit `cx * n * n + cy * n + cz` (`n` classes): a table's strings of
/// three classes that may not be harmless.
type ClassTriples = [u64; 1024];

/// A table's quiet states, if it has them, and the strings it may not skip.
struct Quiet {
    idle: Option<Idle>,
    harmful: Harmful,
    /// Bit `s`: the quiet states reach state `s` in at most two ASCII
    /// characters (none: no quiet states).
    near: [u64; 4],
}

impl Quiet {
    fn new(next: impl Fn(u8, u8) -> u8, classes: &'static [u8; SYMBOLS], special: u8) -> Self {
        let idle = idle(&next, special);
        let mut near = [0u64; 4];
        let mut set = |s: u8| near[usize::from(s >> 6)] |= 1 << (s & 63);
        for q in idle.iter().flat_map(|q| [q.other, q.word]) {
            set(q);
            for a in 0..0x80 {
                let s = next(q, a);
                set(s);
                for b in 0..0x80 {
                    set(next(s, b));
                }
            }
        }
        Quiet {
            idle,
            harmful: Harmful::new(&next, classes, special, idle.as_slice()),
            near,
        }
    }

    /// Whether `state` may be settled (see [`Quiet::near`]'s field).
    #[inline(always)]
    fn near(&self, state: u8) -> bool {
        self.near[usize::from(state >> 6)] >> (state & 63) & 1 != 0
    }

    /// Whether `state`, after `prev`, is quiet, or is where a quiet state
    /// two symbols ago leads.
    #[inline(always)]
    fn settled(&self, state: u8, prev: [u8; 2], next: impl Fn(u8, u8) -> u8) -> bool {
        self.idle.is_some_and(|q| {
            state == q.after(prev[1])
                || state == next(next(q.other, prev[0]), prev[1])
                || q.word != q.other && state == next(next(q.word, prev[0]), prev[1])
        })
    }

    /// The quiet state after `before` (the start state if there is none:
    /// then the scan never settles, and never restarts).
    #[inline(always)]
    fn after(&self, before: u8) -> u8 {
        self.idle.map_or(0, |q| q.after(before))
    }
}

/// A tail's quiet states (bit `s`: state `s`) and the strings it may not
/// skip.
struct TailQuiet {
    states: u64,
    harmful: Harmful,
}

/// What the skipping knows of the tables, computed from them once.
pub(super) struct Prefilter {
    /// Per byte, its code: ASCII characters that every table steps alike
    /// (and that are alike as word characters and line feeds) share one;
    /// [`NON_ASCII`] for the others.
    codes: [u8; 256],
    /// Per code, its first ASCII character.
    reps: [u8; 64],
    /// Number of ASCII codes.
    len: usize,
    labels: Quiet,
    words: [Quiet; dfa::WORDS_LEN],
    tails: [TailQuiet; dfa::TAILS_LEN],
    #[cfg(feature = "extended")]
    extended: [Quiet; dfa::EXTENDED_LEN],
}

/// Keys: the labels looked for (4 bits), whether a tail runs (16), and the
/// classifier (32: extended).
const KEYS: usize = 64;
/// Key bit: a tail runs.
pub(super) const KEY_TAILS: usize = 16;
/// Key bit: the extended classifier.
#[cfg(feature = "extended")]
pub(super) const KEY_EXTENDED: usize = 32;

/// Per key (see [`Prefilter::triples`]), built when first needed (on the
/// heap: see [`super::heap`]).
static COMBINED: [OnceLock<Box<Triples>>; KEYS] = [const { OnceLock::new() }; KEYS];

pub(super) fn prefilter() -> &'static Prefilter {
    // Boxed: a kilobyte, which the initialization would copy through
    // several frames of the first caller's stack (in debug builds).
    static P: OnceLock<Box<Prefilter>> = OnceLock::new();
    P.get_or_init(|| Box::new(Prefilter::new()))
}

impl Prefilter {
    fn new() -> Self {
        let table = |t: &'static Table| Quiet::new(|s, c| t.next(s, c), t.classes, t.special);
        let tail = |t: &'static Table| {
            let mut quiet = [Idle { other: 0, word: 0 }; 64];
            let mut len = 0;
            let mut states = 0;
            for s in (0..t.special.min(64)).filter(|&s| Some(s) != t.dead && t.next(s, 1) == s) {
                quiet[len] = Idle { other: s, word: s };
                len += 1;
                states |= 1 << s;
            }
            TailQuiet {
                states,
                harmful: Harmful::new(|s, c| t.next(s, c), t.classes, t.special, &quiet[..len]),
            }
        };
        let mut all: [&'static [u8; SYMBOLS]; 8 + dfa::EXTENDED_LEN] =
            [dfa::LABELS.classes; 8 + dfa::EXTENDED_LEN];
        for (a, t) in all
            .iter_mut()
            .skip(1)
            .zip(dfa::WORDS.iter().chain(&dfa::TAILS))
        {
            *a = t.classes;
        }
        #[cfg(feature = "extended")]
        for (a, t) in all.iter_mut().skip(8).zip(dfa::EXTENDED) {
            *a = t.classes;
        }
        // The codes: ASCII characters alike in every table share one.
        let mut codes = [NON_ASCII; 256];
        let mut reps = [0u8; 64];
        let mut len = 0;
        for c in 0..128u8 {
            let alike = |r: u8| {
                word(r) == word(c)
                    && (r == b'\n') == (c == b'\n')
                    && all.iter().all(|t| t[usize::from(r)] == t[usize::from(c)])
            };
            match reps[..len].iter().position(|&r| alike(r)) {
                Some(k) => codes[usize::from(c)] = k as u8,
                None if len < usize::from(NON_ASCII) => {
                    codes[usize::from(c)] = len as u8;
                    reps[len] = c;
                    len += 1;
                }
                // Too many kinds: the rest read as non-ASCII (never skipped).
                None => {}
            }
        }
        Prefilter {
            codes,
            reps,
            len,
            labels: table(&dfa::LABELS),
            words: dfa::WORDS.map(table),
            tails: dfa::TAILS.map(tail),
            #[cfg(feature = "extended")]
            extended: dfa::EXTENDED.map(|t| Quiet::new(|s, c| t.next(s, c), t.classes, t.special)),
        }
    }

    /// The strings not to skip for a key: the labels looked for, bit
    /// [`KEY_TAILS`] when a tail runs, [`KEY_EXTENDED`] for the extended
    /// classifier.
    #[inline(always)]
    pub(super) fn triples(&self, key: usize) -> &Triples {
        let at = key % KEYS;
        COMBINED[at].get_or_init(|| self.combine(at))
    }

    fn combine(&self, key: usize) -> Box<Triples> {
        let want = (key & 15) as u8;
        let extended = key >= 32;
        // The tables the key steps.
        let overflow = want & OVERFLOW != 0;
        let tails = overflow && key & KEY_TAILS != 0;
        let labels = !extended && want & (RETRYABLE | USAGE_LIMIT | HINT) != 0;
        let mut tables: [Option<&Harmful>; 8 + dfa::EXTENDED_LEN] = [None; 8 + dfa::EXTENDED_LEN];
        let words = self.words.iter().map(|w| (overflow, &w.harmful));
        let tail = self.tails.iter().map(|t| (tails, &t.harmful));
        #[cfg(feature = "extended")]
        let ext = self
            .extended
            .iter()
            .zip(dfa::EXTENDED)
            .map(|(q, t)| (extended && t.labels & want != 0, &q.harmful));
        #[cfg(not(feature = "extended"))]
        let ext = core::iter::empty();
        let stepped = core::iter::once((labels, &self.labels.harmful))
            .chain(words)
            .chain(tail)
            .chain(ext);
        for (slot, (on, h)) in tables.iter_mut().zip(stepped) {
            *slot = on.then_some(h);
        }
        let mut all: Box<Triples> = super::heap::filled(0);
        for cx in 0..64 {
            for cy in 0..64 {
                for cz in 0..64 {
                    let bad = if cx >= self.len || cy >= self.len || cz >= self.len {
                        true
                    } else {
                        let (x, y, z) = (self.reps[cx], self.reps[cy], self.reps[cz]);
                        // The line feed ends the extended windows.
                        extended && x == b'\n' || tables.iter().flatten().any(|h| h.get(x, y, z))
                    };
                    if bad {
                        let at = cx << 12 | cy << 6 | cz;
                        all[at >> 6] |= 1 << (at & 63);
                    }
                }
            }
        }
        all
    }

    /// Whether the string `xyz` may not be harmless.
    #[inline(always)]
    pub(super) fn hit(&self, triples: &Triples, x: u8, y: u8, z: u8) -> bool {
        let code = |b: u8| usize::from(self.codes[usize::from(b)] & 63);
        let at = code(x) << 12 | code(y) << 6 | code(z);
        triples[at >> 6] >> (at & 63) & 1 != 0
    }

    /// The first position from `from` on where a string may not be
    /// harmless, or where fewer than three bytes are left.
    #[inline(always)]
    pub(super) fn skip(&self, triples: &Triples, bytes: &[u8], from: usize) -> usize {
        let end = bytes.len().saturating_sub(2);
        let Some(text) = bytes.get(from..).filter(|_| from < end) else {
            return from;
        };
        let code = |b: u8| usize::from(self.codes[usize::from(b)] & 63);
        // Each string on its own (no chain from one to the next).
        let found = text.windows(3).position(|w| {
            let at = code(w[0]) << 12 | code(w[1]) << 6 | code(w[2]);
            triples[at >> 6] >> (at & 63) & 1 != 0
        });
        if let Some(k) = found {
            return from + k;
        }
        end
    }

    /// Whether `state` of the classic labels table is settled after `prev`.
    #[inline(always)]
    pub(super) fn labels_settled(&self, state: u8, prev: [u8; 2]) -> bool {
        self.labels
            .settled(state, prev, |s, c| dfa::LABELS.next(s, c))
    }

    /// Whether the classic labels table's `state` may be settled.
    #[inline(always)]
    pub(super) fn labels_near(&self, state: u8) -> bool {
        self.labels.near(state)
    }

    /// Whether the states of the words tables may be settled.
    #[inline(always)]
    pub(super) fn words_near(&self, states: &[u8; dfa::WORDS_LEN]) -> bool {
        let [q0, q1] = &self.words;
        q0.near(states[0]) & q1.near(states[1])
    }

    /// Whether the states of the extended tables that `want` steps may be
    /// settled.
    #[cfg(feature = "extended")]
    #[inline(always)]
    pub(super) fn extended_near(&self, states: &[u8; dfa::EXTENDED_LEN], want: u8) -> bool {
        let mut all = true;
        for ((q, &s), t) in self.extended.iter().zip(states).zip(dfa::EXTENDED) {
            all &= t.labels & want == 0 || q.near(s);
        }
        all
    }

    /// Whether the states of the words tables are settled after `prev`.
    #[inline(always)]
    pub(super) fn words_settled(&self, states: &[u8; dfa::WORDS_LEN], prev: [u8; 2]) -> bool {
        // By hand: as an iterator's `all`, it is not inlined.
        let [q0, q1] = &self.words;
        let [t0, t1] = dfa::WORDS;
        q0.settled(states[0], prev, |s, c| t0.next(s, c))
            && q1.settled(states[1], prev, |s, c| t1.next(s, c))
    }

    /// Whether every running tail (bits of `active`) waits in a quiet state.
    #[inline(always)]
    pub(super) fn tails_quiet(&self, states: &[u8; dfa::TAILS_LEN], active: u8) -> bool {
        for (k, (t, &s)) in self.tails.iter().zip(states).enumerate() {
            if active & (1 << k) != 0 && !(s < 64 && t.states >> s & 1 != 0) {
                return false;
            }
        }
        true
    }

    /// The quiet states of the words tables after `before`.
    #[inline(always)]
    pub(super) fn words_idle(&self, before: u8) -> [u8; dfa::WORDS_LEN] {
        let mut idle = [0; dfa::WORDS_LEN];
        for (i, q) in idle.iter_mut().zip(&self.words) {
            *i = q.after(before);
        }
        idle
    }

    /// The quiet state of the classic labels table after `before`.
    #[inline(always)]
    pub(super) fn labels_idle(&self, before: u8) -> u8 {
        self.labels.after(before)
    }

    /// Whether the extended tables that `want` steps are settled after
    /// `prev`.
    #[cfg(feature = "extended")]
    #[inline(always)]
    pub(super) fn extended_settled(
        &self,
        states: &[u8; dfa::EXTENDED_LEN],
        want: u8,
        prev: [u8; 2],
    ) -> bool {
        // A loop: as an iterator's `all`, it is not inlined.
        let tables = dfa::EXTENDED.iter().zip(super::dense::extended());
        for ((q, &s), (t, d)) in self.extended.iter().zip(states).zip(tables) {
            if t.labels & want != 0 && !q.settled(s, prev, |s, c| d.next(s, c)) {
                return false;
            }
        }
        true
    }

    /// Whether the extended tables that `want` steps are in their quiet
    /// states after the byte `prev`.
    #[cfg(feature = "extended")]
    #[inline(always)]
    pub(super) fn extended_quiet(
        &self,
        states: &[u8; dfa::EXTENDED_LEN],
        want: u8,
        prev: u8,
    ) -> bool {
        let mut all = true;
        for ((q, &s), t) in self.extended.iter().zip(states).zip(dfa::EXTENDED) {
            all &= t.labels & want == 0 || q.idle.is_some_and(|i| i.after(prev) == s);
        }
        all
    }

    /// The quiet states of the extended tables after `before`.
    #[cfg(feature = "extended")]
    #[inline(always)]
    pub(super) fn extended_idle(&self, before: u8) -> [u8; dfa::EXTENDED_LEN] {
        let mut idle = [0; dfa::EXTENDED_LEN];
        for (i, q) in idle.iter_mut().zip(&self.extended) {
            *i = q.after(before);
        }
        idle
    }
}

/// The quiet states of an unanchored table: where a character that no
/// pattern names leads, and stays; and where a word character that no
/// pattern starts with leads from there (the same state without `\b`).
fn idle(next: impl Fn(u8, u8) -> u8, special: u8) -> Option<Idle> {
    let other = next(next(0, 1), 1);
    if other >= special || next(other, 1) != other {
        return None;
    }
    let w = next(other, b'z');
    let word = if w < special && next(w, b'z') == w && next(w, 1) == other {
        w
    } else {
        other
    };
    Some(Idle { other, word })
}

/// The strings of three characters `xyz` a table may not skip in its
/// quiet states, by class: where, from a quiet state `r`, `δ(r, xyz)`
/// differs from `δ(R(x), yz)` (`R(x)`: the quiet state after `x`), or one
/// or two characters reach a state that reports a match.
struct Harmful {
    classes: &'static [u8; SYMBOLS],
    /// Number of classes.
    n: usize,
    /// `None`: every string. On the heap: see [`super::heap`].
    bits: Option<Box<ClassTriples>>,
}

impl Harmful {
    fn new(
        next: impl Fn(u8, u8) -> u8,
        classes: &'static [u8; SYMBOLS],
        special: u8,
        quiet: &[Idle],
    ) -> Self {
        let n = classes
            .iter()
            .map(|&c| usize::from(c) + 1)
            .max()
            .unwrap_or(0);
        let mut this = Harmful {
            classes,
            n,
            bits: None,
        };
        if quiet.is_empty() || n * n * n > 1024 * 64 {
            // Never quiet (the scan never settles) or too many classes.
            return this;
        }
        // One symbol per class (the first: ASCII when the class has one).
        let mut reps = [0u8; SYMBOLS];
        let mut len = 0;
        let mut seen = [false; 256];
        for sym in 0..SYMBOLS as u8 {
            let class = usize::from(classes[usize::from(sym)]);
            if !seen[class] {
                seen[class] = true;
                reps[len] = sym;
                len += 1;
            }
        }
        let any = &reps[..len];
        let mut bits: Box<ClassTriples> = super::heap::filled(0);
        for q in quiet {
            for r in [q.other, q.word] {
                for &x in any.iter().filter(|&&x| x < 0x80) {
                    let a = next(r, x);
                    for &y in any.iter().filter(|&&y| y < 0x80) {
                        let b = next(a, y);
                        let yb = next(q.after(x), y);
                        for &z in any {
                            if a >= special || b >= special || next(b, z) != next(yb, z) {
                                let at = this.at(x, y, z);
                                bits[at >> 6] |= 1 << (at & 63);
                            }
                        }
                    }
                }
            }
        }
        this.bits = Some(bits);
        this
    }

    fn at(&self, x: u8, y: u8, z: u8) -> usize {
        let class = |c: u8| usize::from(self.classes[usize::from(c)]);
        (class(x) * self.n + class(y)) * self.n + class(z)
    }

    /// Whether `xyz` (ASCII) may not be harmless.
    fn get(&self, x: u8, y: u8, z: u8) -> bool {
        let at = self.at(x, y, z);
        self.bits
            .as_ref()
            .is_none_or(|b| b[at >> 6] >> (at & 63) & 1 != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ALL;
    use super::*;

    #[test]
    fn long_bodies_skip_most_bytes() {
        // Not a timing: that the tables leave something to skip.
        let p = prefilter();
        assert!(p.len < 63, "{} codes", p.len);
        for key in [usize::from(ALL | HINT), usize::from(ALL | HINT) | KEY_TAILS] {
            let t = p.triples(key);
            let lower = b'a'..=b'z';
            let set = lower
                .clone()
                .flat_map(|x| {
                    lower
                        .clone()
                        .flat_map(move |y| (b'a'..=b'z').map(move |z| (x, y, z)))
                })
                .filter(|&(x, y, z)| p.hit(t, x, y, z))
                .count();
            assert!(
                set < 26 * 26 * 26 / 20,
                "key {key}: {set} of the lower-case strings"
            );
        }
        let t = p.triples(usize::from(RETRYABLE));
        assert!(!p.hit(t, b'z', b'z', b'z'));
        assert!(p.hit(t, b'o', b'v', b'e'));
        assert!(p.hit(t, b'O', b'v', b'E'));
        assert!(!p.hit(t, b'o', b'v', b'a'));
        assert!(p.hit(t, b'a', b'b', 0xC3));
        #[cfg(feature = "extended")]
        assert!(p.hit(
            p.triples(usize::from(RETRYABLE) | KEY_EXTENDED),
            b'\n',
            b'a',
            b'b'
        ));
    }

    #[test]
    fn settled_states_are_near() {
        // `near` only spares the scan the settled test where it fails.
        let p = prefilter();
        let reps = &p.reps[..p.len];
        let check = |q: &Quiet, states: usize, next: &dyn Fn(u8, u8) -> u8| {
            assert!(q.idle.is_some());
            let mut near = 0;
            for s in 0..states as u8 {
                near += usize::from(q.near(s));
                for &a in reps {
                    for &b in reps {
                        if q.settled(s, [a, b], next) {
                            assert!(q.near(s), "state {s} after {a} {b}");
                        }
                    }
                }
            }
            // Most states are deeper in a match.
            assert!(near * 2 < states, "{near} of {states}");
        };
        check(&p.labels, dfa::LABELS.states, &|s, c| {
            dfa::LABELS.next(s, c)
        });
        for (q, t) in p.words.iter().zip(dfa::WORDS) {
            check(q, t.states, &|s, c| t.next(s, c));
        }
        #[cfg(feature = "extended")]
        for (q, t) in p.extended.iter().zip(dfa::EXTENDED) {
            check(q, t.base.len(), &|s, c| t.next(s, c));
        }
    }
}
