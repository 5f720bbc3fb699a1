//! Compact character-level tables, derived from `regex-automata` DFAs.
//!
//! A `regex-automata` DFA steps on bytes and stores one `u32` per (state,
//! byte class); UTF-8 handling of `.` alone splits the bytes 0x80..=0xFF into
//! a dozen classes and adds the states in the middle of a multi-byte
//! character. The classifier needs much less: its patterns only name ASCII
//! characters, so every non-ASCII scalar value other than U+2028 and U+2029
//! behaves the same. The tables here therefore step on *symbols*:
//!
//! - `0..128`: an ASCII byte (an upper-case letter is read as its lower-case
//!   letter: the table maps both to one class, which is section 3.1's
//!   ASCII-only case folding);
//! - [`OTHER`]: any other scalar value (U+FFFD included);
//! - [`LS`], [`PS`]: U+2028, U+2029.
//!
//! The generator walks the byte DFA one whole character at a time from its
//! start state, checks that every non-ASCII scalar value reaches the same
//! state as [`OTHER`] (or [`LS`]/[`PS`]), minimizes the result and packs it
//! into `u8` state numbers. Each state carries an output: the bit set of the
//! patterns that have a match ending exactly there (read from the byte DFA's
//! end-of-input transition, so no match is reported late).
//!
//! Patterns with `\b` cannot be read that way: whether a match ends after
//! a character depends on the next one. Their tables are built with
//! [`Report::Delayed`]: a state's output is the set of patterns with a
//! match ending right *before* the character just read (the byte DFA's own
//! one-byte match delay, read after the character's first byte), and a
//! second output, `eoi`, gives those with a match ending at the end of the
//! text.

use std::collections::{BTreeMap, HashMap, VecDeque};

use regex_automata::{
    dfa::{dense, Automaton, StartKind},
    util::{primitives::StateID, start, syntax},
    Anchored, MatchKind,
};

use crate::symbol;

// The alphabet of `src/classify/symbol.rs`, as indexes.
/// Any non-ASCII scalar value other than U+2028 and U+2029.
pub const OTHER: usize = symbol::OTHER as usize;
/// U+2028 LINE SEPARATOR.
pub const LS: usize = symbol::LS as usize;
/// U+2029 PARAGRAPH SEPARATOR.
pub const PS: usize = symbol::PS as usize;
/// Number of symbols.
pub const SYMBOLS: usize = symbol::SYMBOLS;

/// The UTF-8 bytes that stand for a symbol when walking the byte DFA.
fn symbol_bytes(sym: usize) -> Vec<u8> {
    match sym {
        OTHER => "\u{FFFD}".as_bytes().to_vec(),
        LS => "\u{2028}".as_bytes().to_vec(),
        PS => "\u{2029}".as_bytes().to_vec(),
        // Only called for symbols below 128.
        _ => vec![u8::try_from(sym).unwrap_or(0)],
    }
}

/// Whether the symbol is stepped on: upper-case letters never are (the
/// runtime reads them as lower case).
fn stepped(sym: usize) -> bool {
    !(usize::from(b'A')..=usize::from(b'Z')).contains(&sym)
}

/// A packed table, ready to be written out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Symbol to class (upper-case letters share their lower-case class).
    pub classes: Vec<u8>,
    /// Number of classes (the row length).
    pub stride: usize,
    /// Start state.
    pub start: u8,
    /// States at or above this number are special: dead, or with an output.
    pub special: u8,
    /// The dead state (no match can follow), when there is one; it is
    /// `special` then.
    pub dead: Option<u8>,
    /// Column-major transitions: `trans[class * states + state]` (so that
    /// the class part of the index is computed off the state's critical
    /// path).
    pub trans: Vec<u8>,
    /// Output bits of the special states, from `special` on (0 for dead).
    pub out: Vec<u8>,
    /// [`Report::Delayed`] only: the end-of-text outputs of the special
    /// states, from `special` on (empty otherwise).
    pub eoi: Vec<u8>,
}

/// When a table reports a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Right after its last character: `out` of the state reached.
    AtEnd,
    /// One character later (`out`), or at the end of the text (`eoi`):
    /// for patterns that look at the next character (`\b`).
    Delayed,
}

impl Table {
    /// Number of states.
    pub fn states(&self) -> usize {
        self.trans.len() / self.stride
    }

    /// Bytes the table takes: classes, transitions, outputs.
    pub fn size(&self) -> usize {
        self.classes.len() + self.trans.len() + self.out.len() + self.eoi.len()
    }

    /// End-of-text output of a state (always 0 for [`Report::AtEnd`]).
    pub fn eoi_output(&self, state: u8) -> u8 {
        if state >= self.special {
            self.eoi
                .get(usize::from(state - self.special))
                .copied()
                .unwrap_or(0)
        } else {
            0
        }
    }

    /// Output of a state.
    pub fn output(&self, state: u8) -> u8 {
        if state >= self.special {
            self.out[usize::from(state - self.special)]
        } else {
            0
        }
    }

    /// Whether a pattern of the table matches `text` (stepping from the
    /// start state over every character; the first output counts).
    pub fn is_match(&self, text: &str) -> bool {
        let mut state = self.start;
        for c in text.chars() {
            let sym = usize::from(symbol::of_char(c));
            state = self.step(state, sym);
            if self.output(state) != 0 {
                return true;
            }
            if Some(state) == self.dead {
                return false;
            }
        }
        self.eoi_output(state) != 0
    }

    /// Steps on one symbol.
    pub fn step(&self, state: u8, sym: usize) -> u8 {
        self.trans[usize::from(self.classes[sym]) * self.states() + usize::from(state)]
    }
}

/// Builds the byte DFA of translated patterns (no case folding by the
/// engine: the translation lower-cased every letter), all patterns reported.
/// `\b` is `(?-u:\b)`, which dense DFAs support.
pub fn build_bytes(regexes: &[String], anchored: bool) -> Result<dense::DFA<Vec<u32>>, String> {
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(if anchored {
                    StartKind::Anchored
                } else {
                    StartKind::Unanchored
                })
                .minimize(false),
        )
        .syntax(
            syntax::Config::new()
                .unicode(true)
                .utf8(true)
                .case_insensitive(false),
        )
        .build_many(regexes)
        .map_err(|e| format!("{regexes:?}: {e}"))
}

/// Walks whole characters over a byte DFA, then minimizes and packs.
/// `bits[i]` is the output bit of pattern `i`.
pub fn compile(
    regexes: &[String],
    bits: &[u8],
    anchored: bool,
    report: Report,
) -> Result<Table, String> {
    if report == Report::AtEnd && regexes.iter().any(|r| r.contains(r"\b")) {
        return Err(format!("{regexes:?}: `\\b` needs Report::Delayed"));
    }
    let dfa = build_bytes(regexes, anchored)?;
    let pattern_bits = |sid: StateID| -> u8 {
        (0..dfa.match_len(sid))
            .map(|i| bits[dfa.match_pattern(sid, i).as_usize()])
            .fold(0, |a, b| a | b)
    };
    // The state after a whole character, and the patterns with a match
    // ending right before it (the DFA's match delay shows them after the
    // first byte; a match state later in the character would be a match
    // ending inside it, which these patterns cannot have).
    let walk = |mut sid: StateID, bytes: &[u8]| -> Result<(StateID, u8), String> {
        let mut before = 0;
        for (i, &b) in bytes.iter().enumerate() {
            sid = dfa.next_state(sid, b);
            if dfa.is_quit_state(sid) {
                return Err("quit state".into());
            }
            if dfa.is_match_state(sid) {
                if i > 0 {
                    return Err(format!("{regexes:?}: a match ends inside {bytes:?}"));
                }
                before = pattern_bits(sid);
            }
        }
        Ok((sid, before))
    };
    let eoi = |sid: StateID| -> u8 {
        let eoi = dfa.next_eoi_state(sid);
        if dfa.is_match_state(eoi) {
            pattern_bits(eoi)
        } else {
            0
        }
    };
    let mode = if anchored {
        Anchored::Yes
    } else {
        Anchored::No
    };
    let start = dfa
        .start_state(&start::Config::new().anchored(mode))
        .map_err(|e| e.to_string())?;
    if eoi(start) != 0 {
        return Err(format!("{regexes:?} matches the empty string"));
    }

    // Every distinct byte-class sequence of a non-ASCII scalar value, with
    // the symbol it must behave as.
    let classes = dfa.byte_classes();
    let mut reps: BTreeMap<Vec<u8>, (char, usize)> = BTreeMap::new();
    for c in (0x80..=0x10FFFF).filter_map(char::from_u32) {
        let mut buf = [0; 4];
        let seq: Vec<u8> = c
            .encode_utf8(&mut buf)
            .bytes()
            .map(|b| classes.get(b))
            .collect();
        let sym = usize::from(symbol::of_char(c));
        reps.entry(seq).or_insert((c, sym));
    }

    // Breadth-first over whole characters. A character-level state is the
    // byte DFA's state with the patterns that matched right before the
    // character that led there (always none for `AtEnd`).
    type Node = (StateID, u8);
    let node = |(sid, before): (StateID, u8)| -> Node {
        match report {
            Report::AtEnd => (sid, 0),
            Report::Delayed => (sid, before),
        }
    };
    let start = (start, 0);
    let mut ids: HashMap<Node, usize> = HashMap::new();
    let mut order = vec![start];
    ids.insert(start, 0);
    let mut queue = VecDeque::from([start]);
    let mut rows: Vec<Vec<usize>> = Vec::new();
    while let Some((sid, _)) = queue.pop_front() {
        let mut row = vec![usize::MAX; SYMBOLS];
        for (sym, slot) in row.iter_mut().enumerate().filter(|(s, _)| stepped(*s)) {
            let next = node(walk(sid, &symbol_bytes(sym))?);
            let id = *ids.entry(next).or_insert_with(|| {
                order.push(next);
                queue.push_back(next);
                order.len() - 1
            });
            *slot = id;
        }
        for (seq, &(c, sym)) in &reps {
            let mut buf = [0; 4];
            let next = node(walk(sid, c.encode_utf8(&mut buf).as_bytes())?);
            if next != node(walk(sid, &symbol_bytes(sym))?) {
                return Err(format!(
                    "{regexes:?}: {c:?} (classes {seq:?}) does not behave as symbol {sym}"
                ));
            }
        }
        rows.push(row);
    }
    let keys: Vec<Key> = order
        .iter()
        .map(|&(sid, before)| match report {
            Report::AtEnd => Key {
                out: eoi(sid),
                eoi: 0,
                dead: dfa.is_dead_state(sid),
            },
            Report::Delayed => Key {
                out: before,
                eoi: eoi(sid),
                dead: dfa.is_dead_state(sid) && before == 0,
            },
        })
        .collect();
    pack(minimize(&rows, &keys), report)
}

/// What minimization must keep apart: the outputs and deadness of a state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    out: u8,
    eoi: u8,
    dead: bool,
}

impl Key {
    fn special(&self) -> bool {
        self.dead || self.out != 0 || self.eoi != 0
    }
}

/// The states after Moore minimization: (rows, keys, start).
struct Minimal {
    rows: Vec<Vec<usize>>,
    keys: Vec<Key>,
    start: usize,
}

fn minimize(rows: &[Vec<usize>], keys: &[Key]) -> Minimal {
    let n = rows.len();
    let mut block: Vec<usize> = {
        let mut initial: BTreeMap<Key, usize> = BTreeMap::new();
        (0..n)
            .map(|s| {
                let len = initial.len();
                *initial.entry(keys[s]).or_insert(len)
            })
            .collect()
    };
    loop {
        let mut sigs: HashMap<(usize, Vec<usize>), usize> = HashMap::new();
        let next: Vec<usize> = (0..n)
            .map(|s| {
                let sig: Vec<usize> = rows[s]
                    .iter()
                    .map(|&t| {
                        if t == usize::MAX {
                            usize::MAX
                        } else {
                            block[t]
                        }
                    })
                    .collect();
                let len = sigs.len();
                *sigs.entry((block[s], sig)).or_insert(len)
            })
            .collect();
        let stable = sigs.len() == block.iter().collect::<std::collections::HashSet<_>>().len();
        block = next;
        if stable {
            break;
        }
    }
    let count = block.iter().max().map_or(0, |m| m + 1);
    let mut m = Minimal {
        rows: vec![Vec::new(); count],
        keys: vec![Key::default(); count],
        start: block[0],
    };
    for s in 0..n {
        let b = block[s];
        if m.rows[b].is_empty() {
            m.rows[b] = rows[s]
                .iter()
                .map(|&t| {
                    if t == usize::MAX {
                        usize::MAX
                    } else {
                        block[t]
                    }
                })
                .collect();
            m.keys[b] = keys[s];
        }
    }
    m
}

fn pack(m: Minimal, report: Report) -> Result<Table, String> {
    let n = m.rows.len();
    // Classes: symbols whose columns are equal.
    let mut class_of = vec![0u8; SYMBOLS];
    let mut columns: Vec<Vec<usize>> = Vec::new();
    for sym in (0..SYMBOLS).filter(|&s| stepped(s)) {
        let col: Vec<usize> = m.rows.iter().map(|r| r[sym]).collect();
        let class = match columns.iter().position(|c| *c == col) {
            Some(i) => i,
            None => {
                columns.push(col);
                columns.len() - 1
            }
        };
        class_of[sym] = u8::try_from(class).map_err(|_| "too many classes")?;
    }
    for upper in b'A'..=b'Z' {
        class_of[usize::from(upper)] = class_of[usize::from(upper.to_ascii_lowercase())];
    }
    // Numbering: ordinary states (start first), then the dead state, then
    // the states with an output.
    let special = |s: usize| m.keys[s].special();
    let mut order: Vec<usize> = vec![m.start];
    order.extend((0..n).filter(|&s| s != m.start && !special(s)));
    let first_special = order.len();
    order.extend((0..n).filter(|&s| m.keys[s].dead));
    order.extend((0..n).filter(|&s| !m.keys[s].dead && special(s)));
    if special(m.start) {
        return Err("the start state is special".into());
    }
    if order.len() > 256 {
        return Err(format!("{} states do not fit in u8", order.len()));
    }
    if m.keys.iter().filter(|k| k.dead).count() > 1 {
        return Err("more than one dead state after minimization".into());
    }
    let mut number = vec![0u8; n];
    for (i, &s) in order.iter().enumerate() {
        number[s] = u8::try_from(i).map_err(|_| "too many states")?;
    }
    let stride = columns.len();
    let mut trans = Vec::with_capacity(order.len() * stride);
    for col in &columns {
        for &s in &order {
            trans.push(number[col[s]]);
        }
    }
    let special_at = u8::try_from(first_special).map_err(|_| "too many states")?;
    let specials = &order[first_special..];
    Ok(Table {
        classes: class_of,
        stride,
        start: 0,
        special: special_at,
        dead: (0..n).find(|&s| m.keys[s].dead).map(|s| number[s]),
        trans,
        out: specials.iter().map(|&s| m.keys[s].out).collect(),
        eoi: match report {
            Report::AtEnd => Vec::new(),
            Report::Delayed => specials.iter().map(|&s| m.keys[s].eoi).collect(),
        },
    })
}

/// The state number that marks a free slot of a [`Compressed`] table: such
/// tables have at most 255 states.
pub const FREE: u8 = 255;

/// A table with its transitions compressed (the extended classifier's
/// form): per class a default target (the most common one in that class's
/// column), and the transitions that differ from it (a few per state) in a
/// "double array": the exception of `(state, class)` is in slot
/// `base[state] + class` when that slot's first byte is `state`; its second
/// byte is the target. Slots of different states interleave; a free slot
/// holds [`FREE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compressed {
    /// Per class, the default target.
    pub default: Vec<u8>,
    /// Per state, where its slots start.
    pub base: Vec<u16>,
    /// (state, target) pairs.
    pub slots: Vec<[u8; 2]>,
}

impl Compressed {
    /// The state after `state` reads a symbol of class `class`.
    pub fn next(&self, state: u8, class: u8) -> u8 {
        let slot = usize::from(self.base[usize::from(state)]) + usize::from(class);
        match self.slots.get(slot) {
            Some(&[owner, target]) if owner == state => target,
            _ => self.default[usize::from(class)],
        }
    }

    /// Bytes it takes, with the table's classes and outputs.
    pub fn size(&self, table: &Table) -> usize {
        table.classes.len()
            + self.default.len()
            + 2 * self.base.len()
            + 2 * self.slots.len()
            + table.out.len()
            + table.eoi.len()
    }
}

impl Table {
    /// The compressed form, checked against every transition.
    pub fn compress(&self) -> Result<Compressed, String> {
        let n = self.states();
        if n > usize::from(FREE) {
            return Err(format!("{n} states: a compressed table has at most 255"));
        }
        let column = |c: usize| &self.trans[c * n..(c + 1) * n];
        let default: Vec<u8> = (0..self.stride)
            .map(|c| {
                let mut counts = [0usize; 256];
                for &t in column(c) {
                    counts[usize::from(t)] += 1;
                }
                // The most common target; the smallest on a tie.
                (0..=255u8)
                    .max_by_key(|&t| (counts[usize::from(t)], std::cmp::Reverse(t)))
                    .unwrap_or(0)
            })
            .collect();
        let exceptions: Vec<Vec<(usize, u8)>> = (0..n)
            .map(|s| {
                (0..self.stride)
                    .filter(|&c| column(c)[s] != default[c])
                    .map(|c| (c, column(c)[s]))
                    .collect()
            })
            .collect();
        // First fit, the states with the most exceptions first.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&s| (std::cmp::Reverse(exceptions[s].len()), s));
        let mut slots: Vec<[u8; 2]> = Vec::new();
        let mut base = vec![0u16; n];
        for s in order {
            let ex = &exceptions[s];
            if ex.is_empty() {
                continue;
            }
            let fits = |b: usize| {
                ex.iter()
                    .all(|&(c, _)| slots.get(b + c).is_none_or(|slot| slot[0] == FREE))
            };
            let b = (0..).find(|&b| fits(b)).unwrap_or(0);
            base[s] = u16::try_from(b).map_err(|_| "slots beyond u16")?;
            for &(c, t) in ex {
                if slots.len() <= b + c {
                    slots.resize(b + c + 1, [FREE, 0]);
                }
                slots[b + c] = [u8::try_from(s).map_err(|_| "a state beyond u8")?, t];
            }
        }
        let compressed = Compressed {
            default,
            base,
            slots,
        };
        for s in 0..n {
            for c in 0..self.stride {
                let (state, class) = (s as u8, c as u8);
                if compressed.next(state, class) != column(c)[s] {
                    return Err(format!("compression changed state {s} class {c}"));
                }
            }
        }
        Ok(compressed)
    }
}
