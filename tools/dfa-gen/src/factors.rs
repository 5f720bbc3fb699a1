//! The required factors of the classic patterns: literal strings (lower
//! case) such that every match of every alternative contains one of them.
//!
//! On std the classifier searches long texts for these factors with a
//! vectorized multi-literal searcher and steps its DFAs only around each
//! hit (`src/classify/factors.rs`); that is exact only if no match can do
//! without a factor, so the list is derived here from the patterns' syntax
//! (the tables' form, where the input is lower-cased), never written by
//! hand, and the generator fails on an alternative that has none.
//!
//! A factor comes with how far before it a match may start, in bytes:
//! `Some(n)`, or `None` when the match may start anywhere earlier on the
//! line (a `.*`, `\d+`, ... before or after it). The anchored overflow
//! pattern needs no factor: the classifier always steps from offset 0
//! until nothing is under way.

use regex_syntax::hir::{Hir, HirKind};

use crate::lines::{may_hold, LINE_FEED, TERMINATORS};

use crate::{
    literal_body, patterns, translate, Letters, BIT_HINT, BIT_OVERFLOW, BIT_RETRYABLE,
    BIT_USAGE_LIMIT, HINT_NAMES, HINT_NAMES_EXTENDED,
};

/// A required factor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Factor {
    /// The literal, lower case.
    pub text: Vec<u8>,
    /// How many bytes before the factor a match may start (`None`: anywhere
    /// on the line).
    pub before: Option<usize>,
    /// How many bytes after the factor a match may end (`None`: anywhere
    /// on the line). The classifier needs no bound there: it steps on
    /// until no match is under way.
    pub after: Option<usize>,
    /// The labels (`BIT_*`) whose patterns have an alternative this factor
    /// was chosen for: a hit's segment steps their tables only. For the
    /// curated tables ([`curated`]), the tables themselves (bit `k`: table
    /// `k`).
    pub labels: u32,
}

fn add(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    a.zip(b).map(|(a, b)| a + b)
}

fn max(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    a.zip(b).map(|(a, b)| a.max(b))
}

/// The factors a first choice searches for, which a second choice may take
/// for free.
///
/// Where an alternative could take one of several literals, one that
/// holds a factor already searched for (for another alternative) adds no
/// hit of its own, and one factor fewer: `usage.?limit` takes `limit` when
/// `rate.?limit` has it, so `usage` is not searched for. A literal that
/// merely *occurs* in other patterns would not do: taking it would merge
/// their longer, rarer factors into it ([`reduce`]) and make more hits.
#[derive(Default)]
pub struct Searched {
    texts: Vec<Vec<u8>>,
}

impl Searched {
    /// The factors of a first choice.
    fn of(factors: &[Factor]) -> Searched {
        Searched {
            texts: factors.iter().map(|f| f.text.clone()).collect(),
        }
    }

    /// Whether each of `texts` holds a factor searched for other than
    /// those of `own` (the first choice's for the same alternative).
    fn free<'a>(&self, mut texts: impl Iterator<Item = &'a [u8]>, own: &[&[u8]]) -> bool {
        texts.all(|t| {
            self.texts.iter().any(|f| {
                !own.contains(&f.as_slice()) && t.windows(f.len()).any(|w| w == f.as_slice())
            })
        })
    }
}

/// Factors covering every match of `hir`, or `None` when some match needs
/// no literal at all. Of the parts of a concatenation, the one whose
/// shortest factor is longest; where every part is bounded, one that is
/// free ([`Searched`]) before it.
fn cover(hir: &Hir, searched: &Searched) -> Option<Vec<Factor>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(vec![Factor {
            text: lit.0.to_vec(),
            before: Some(0),
            after: Some(0),
            labels: 0,
        }]),
        HirKind::Capture(c) => cover(&c.sub, searched),
        HirKind::Repetition(r) if r.min >= 1 => {
            let once = r.max == Some(1);
            cover(&r.sub, searched).map(|fs| {
                fs.into_iter()
                    .map(|f| Factor {
                        before: f.before.filter(|_| once),
                        after: f.after.filter(|_| once),
                        ..f
                    })
                    .collect()
            })
        }
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(cover(a, searched)?);
            }
            Some(all)
        }
        HirKind::Concat(parts) => {
            // The part whose shortest factor is longest (the rarest, as a
            // rule), the first of equals; where every part is bounded, a
            // free one before it.
            let options: Vec<(usize, Vec<Factor>)> = parts
                .iter()
                .enumerate()
                .filter_map(|(i, p)| cover(p, searched).map(|c| (i, c)))
                .collect();
            let (at, best) = choose(
                &options,
                |(_, c)| c.iter().map(|f| f.text.as_slice()).collect(),
                |(i, _)| std::cmp::Reverse(*i),
                bounded(parts),
                searched,
            )
            .cloned()?;
            let len = |ps: &[Hir]| {
                ps.iter()
                    .map(|p| p.properties().maximum_len())
                    .try_fold(0usize, |a, m| m.map(|m| a + m))
            };
            let before = len(&parts[..at]);
            let after = len(&parts[at + 1..]);
            Some(
                best.into_iter()
                    .map(|f| Factor {
                        before: add(f.before, before),
                        after: add(f.after, after),
                        ..f
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Of a concatenation's `options` (the factors of a part or run of
/// parts), the one whose shortest factor is longest (the rarest, as a
/// rule), `place` breaking ties; where every part is `bounded`, one that
/// is free ([`Searched`]) before it.
fn choose<'a, T, K: Ord>(
    options: &'a [T],
    texts: impl Fn(&T) -> Vec<&[u8]>,
    place: impl Fn(&T) -> K,
    bounded: bool,
    searched: &Searched,
) -> Option<&'a T> {
    let rank = |o: &T| {
        let shortest = texts(o).iter().map(|t| t.len()).min().unwrap_or(0);
        (shortest, place(o))
    };
    let first = options.iter().max_by_key(|o| rank(o))?;
    let own = texts(first);
    options.iter().max_by_key(|o| {
        let free = bounded && searched.free(texts(o).into_iter(), &own);
        (free, rank(o))
    })
}

/// Whether every part of a concatenation has a bounded length.
fn bounded(parts: &[Hir]) -> bool {
    parts.iter().all(|p| p.properties().maximum_len().is_some())
}

/// The factors of one pattern (JavaScript syntax, without delimiters).
/// The classifier steps a hit's line at most, so a pattern whose matches
/// may hold a line terminator is refused.
pub fn of_pattern(js: &str) -> Result<Vec<Factor>, String> {
    of_pattern_in(js, &Searched::default())
}

/// [`of_pattern`], with the factors a first choice searches for.
fn of_pattern_in(js: &str, searched: &Searched) -> Result<Vec<Factor>, String> {
    let regex = translate(js, Letters::Lower)?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&regex)
        .map_err(|e| format!("{js}: {e}"))?;
    if may_hold(&hir, TERMINATORS) {
        return Err(format!("`{js}` may match a line terminator"));
    }
    let factors =
        cover(&hir, searched).ok_or_else(|| format!("an alternative of `{js}` has no literal"))?;
    if let Some(f) = factors
        .iter()
        .find(|f| !f.text.is_ascii() || f.text.is_empty())
    {
        return Err(format!("`{js}`: factor {:?} is not ASCII", f.text));
    }
    Ok(factors)
}

/// Patterns (JavaScript syntax, without delimiters), each with its label.
pub type Labelled = Vec<(&'static str, u8)>;

/// The classic patterns of the labels in `want` (see [`classic`]), each
/// with its label: what the classifier's factor search looks for.
pub fn classic_patterns(want: u8) -> Result<Labelled, String> {
    let mut set = Vec::new();
    if want & BIT_RETRYABLE != 0 {
        set.push((patterns::RETRYABLE, BIT_RETRYABLE));
    }
    if want & BIT_USAGE_LIMIT != 0 {
        set.push((patterns::USAGE_LIMIT, BIT_USAGE_LIMIT));
    }
    if want & BIT_HINT != 0 {
        set.push((HINT_NAMES, BIT_HINT));
    }
    if want & BIT_OVERFLOW != 0 {
        for literal in patterns::OVERFLOW {
            let body = literal_body(literal)?;
            if !body.starts_with('^') {
                set.push((body, BIT_OVERFLOW));
            }
        }
    }
    Ok(set)
}

/// The factors of the classic patterns of the labels in `want` (bits
/// [`BIT_RETRYABLE`], [`BIT_USAGE_LIMIT`], [`BIT_OVERFLOW`], [`BIT_HINT`]:
/// spec 3.2, 3.4, 3.3 and the retry hints' names), without duplicates: a
/// factor that contains another gives way to it (with the bounds that
/// makes), so none contains another. Once a label is found, the classifier
/// searches only for the factors of the labels still looked for.
pub fn classic(want: u8) -> Result<Vec<Factor>, String> {
    let set = classic_patterns(want)?;
    // A first choice, then a second that takes what the first searches
    // for where it can ([`Searched`]).
    let choose = |searched: &Searched| -> Result<Vec<Factor>, String> {
        let mut all = Vec::new();
        for &(js, labels) in &set {
            all.extend(labelled(of_pattern_in(js, searched)?, labels));
        }
        Ok(reduce(all))
    };
    choose(&Searched::of(&choose(&Searched::default())?))
}

/// `factors`, chosen for the patterns of `labels`.
fn labelled(factors: Vec<Factor>, labels: u8) -> impl Iterator<Item = Factor> {
    factors.into_iter().map(move |f| Factor {
        labels: labels.into(),
        ..f
    })
}

/// Every label of [`classic`].
pub const ALL: u8 = BIT_RETRYABLE | BIT_USAGE_LIMIT | BIT_OVERFLOW | BIT_HINT;

/// Merges duplicates and factors that contain another: a factor that
/// contains kept ones gives way to the one that bounds its matches best
/// (any would do: its occurrences hold them all).
pub fn reduce(all: Vec<Factor>) -> Vec<Factor> {
    reduce_where(all, |_, _| true)
}

/// [`reduce`], merging a factor into a kept one `k` that it holds at `at`
/// only where `merge(k, at)`: the search reports every occurrence of
/// each factor but one per place, so a factor that starts with another
/// (`at == 0`) must give way to it; one that holds another further in may
/// stay, a longer and rarer factor of its own (`session limit`, not a
/// hit of `limit` with every need of every pattern around `limit`).
pub fn reduce_where(mut all: Vec<Factor>, merge: impl Fn(&[u8], usize) -> bool) -> Vec<Factor> {
    all.sort_by(|a, b| (a.text.len(), &a.text).cmp(&(b.text.len(), &b.text)));
    let mut kept: Vec<Factor> = Vec::new();
    for f in all {
        // (kept factor, its bounds with `f`'s matches).
        let mut best: Option<(usize, Option<usize>, Option<usize>)> = None;
        for (i, k) in kept.iter().enumerate() {
            let n = k.text.len();
            let mut bounds = None;
            for at in (0..=f.text.len().saturating_sub(n))
                .filter(|&at| f.text[at..].starts_with(&k.text) && merge(&k.text, at))
            {
                let (b, a) = bounds.unwrap_or((k.before, k.after));
                bounds = Some((
                    max(b, add(f.before, Some(at))),
                    max(a, add(f.after, Some(f.text.len() - at - n))),
                ));
            }
            if let Some((b, a)) = bounds {
                let rank = |b: Option<usize>| b.map_or(usize::MAX, |b| b);
                if best.is_none_or(|(_, bb, _)| rank(b) < rank(bb)) {
                    best = Some((i, b, a));
                }
            }
        }
        match best {
            Some((i, b, a)) => {
                kept[i].before = b;
                kept[i].after = a;
                kept[i].labels |= f.labels;
            }
            None => kept.push(f),
        }
    }
    kept
}

/// A candidate factor of the extended patterns, with whether the part of
/// a match before it may hold a line feed (where the extended classifier's
/// lines end: see [`crate::lines`]).
#[derive(Clone)]
struct Candidate {
    factor: Factor,
    feed_before: bool,
}

/// The strings `hir` matches when they are finitely many (at most
/// [`EXACT_MAX`]), as the tables read them (lower case).
fn exact(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    const EXACT_MAX: usize = 16;
    let set = match hir.kind() {
        HirKind::Literal(lit) => vec![lit.0.to_vec()],
        HirKind::Capture(c) => exact(&c.sub)?,
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(exact(a)?);
            }
            all
        }
        HirKind::Repetition(r) if r.min == 0 && r.max == Some(1) => {
            let mut all = exact(&r.sub)?;
            all.push(Vec::new());
            all
        }
        HirKind::Concat(parts) => {
            let mut all = vec![Vec::new()];
            for p in parts {
                let next = exact(p)?;
                all = all
                    .iter()
                    .flat_map(|a| {
                        next.iter().map(move |n| {
                            let mut s = a.clone();
                            s.extend(n);
                            s
                        })
                    })
                    .collect();
                if all.len() > EXACT_MAX {
                    return None;
                }
            }
            all
        }
        _ => return None,
    };
    (set.len() <= EXACT_MAX).then_some(set)
}

/// The extended patterns' choice (see [`of_pattern_extended`]): factors
/// covering every match of `hir`, each with whether the text of a match
/// before it may cross a line.
fn cover_extended(hir: &Hir, searched: &Searched) -> Option<Vec<Candidate>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(vec![Candidate {
            factor: Factor {
                text: lit.0.to_vec(),
                before: Some(0),
                after: Some(0),
                labels: 0,
            },
            feed_before: false,
        }]),
        HirKind::Capture(c) => cover_extended(&c.sub, searched),
        HirKind::Repetition(r) if r.min >= 1 => {
            let once = r.max == Some(1);
            // A second copy may follow a first that holds a line feed.
            let feed = !once && may_hold(&r.sub, LINE_FEED);
            cover_extended(&r.sub, searched).map(|cs| {
                cs.into_iter()
                    .map(|c| Candidate {
                        factor: Factor {
                            before: c.factor.before.filter(|_| once),
                            after: c.factor.after.filter(|_| once),
                            ..c.factor
                        },
                        feed_before: c.feed_before || feed,
                    })
                    .collect()
            })
        }
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(cover_extended(a, searched)?);
            }
            Some(all)
        }
        HirKind::Concat(parts) => {
            let len = |ps: &[Hir]| {
                ps.iter()
                    .map(|p| p.properties().maximum_len())
                    .try_fold(0usize, |a, m| m.map(|m| a + m))
            };
            // Candidates: each part's own factors, and each run of two or
            // more parts with finitely many strings as one literal set
            // (`4(00|13)`: `400`, `413`).
            let mut options: Vec<(usize, usize, Vec<Candidate>)> = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                if let Some(c) = cover_extended(p, searched) {
                    options.push((i, i + 1, c));
                }
            }
            for i in 0..parts.len() {
                let mut set: Option<Vec<Vec<u8>>> = None;
                for (j, part) in parts.iter().enumerate().skip(i) {
                    let Some(next) = exact(part) else {
                        break;
                    };
                    let joined: Vec<Vec<u8>> = match &set {
                        None => next,
                        Some(s) => s
                            .iter()
                            .flat_map(|a| {
                                next.iter().map(move |n| {
                                    let mut t = a.clone();
                                    t.extend(n);
                                    t
                                })
                            })
                            .collect(),
                    };
                    if joined.len() > 16 {
                        break;
                    }
                    set = Some(joined);
                    let set = set.as_ref().expect("just set");
                    if j > i && set.iter().all(|t| !t.is_empty()) {
                        let mut texts = set.clone();
                        texts.sort();
                        texts.dedup();
                        let cs = texts
                            .into_iter()
                            .map(|text| Candidate {
                                factor: Factor {
                                    text,
                                    before: Some(0),
                                    after: Some(0),
                                    labels: 0,
                                },
                                feed_before: false,
                            })
                            .collect();
                        options.push((i, j + 1, cs));
                    }
                }
            }
            // Only a factor whose match starts on the factor's line (no
            // line feed before it: a window's `\r` is on the line); of
            // those, the option whose shortest factor is longest, the
            // first of equals (the earliest start, then the shortest run);
            // where every part is bounded, a free one ([`Searched`])
            // before it.
            let options: Vec<(usize, usize, Vec<Candidate>)> = options
                .into_iter()
                .map(|(i, j, cs)| {
                    let feed = feed_before(&parts[..i]);
                    let cs: Vec<Candidate> = cs
                        .into_iter()
                        .map(|c| Candidate {
                            feed_before: c.feed_before || feed,
                            ..c
                        })
                        .collect();
                    (i, j, cs)
                })
                .filter(|(_, _, cs)| cs.iter().all(|c| !c.feed_before))
                .collect();
            let (at, end, best) = choose(
                &options,
                |(_, _, cs)| cs.iter().map(|c| c.factor.text.as_slice()).collect(),
                |(i, j, _)| (std::cmp::Reverse(*i), std::cmp::Reverse(*j)),
                bounded(parts),
                searched,
            )
            .map(|(i, j, cs)| (*i, *j, cs.clone()))?;
            let before = len(&parts[..at]);
            let after = len(&parts[end..]);
            Some(
                best.into_iter()
                    .map(|c| Candidate {
                        factor: Factor {
                            before: add(c.factor.before, before),
                            after: add(c.factor.after, after),
                            ..c.factor
                        },
                        ..c
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Whether some match of the concatenation `parts` holds a line feed.
fn feed_before(parts: &[Hir]) -> bool {
    parts.iter().any(|p| may_hold(p, LINE_FEED))
}

/// The factors of one extended pattern (JavaScript syntax, without
/// delimiters): per alternative, of the literals whose match starts on
/// their own line (no line feed in the text of a match before them), the
/// longest, or one searched for already ([`Searched`]). The text after a
/// factor may cross lines (`\s*`): the classifier steps on past a hit
/// until no match is under way. A factor whose `before` is unbounded has
/// its hit's line stepped from its start.
pub fn of_pattern_extended(js: &str, searched: &Searched) -> Result<Vec<Factor>, String> {
    let regex = translate(js, Letters::Lower)?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&regex)
        .map_err(|e| format!("{js}: {e}"))?;
    let candidates = cover_extended(&hir, searched).ok_or_else(|| {
        format!("an alternative of `{js}` has no literal that starts its match's line")
    })?;
    let factors: Vec<Factor> = candidates.into_iter().map(|c| c.factor).collect();
    if let Some(f) = factors.iter().find(|f| {
        !f.text.is_ascii()
            || f.text.is_empty()
            || f.text.contains(&b'\n')
            || f.text.contains(&b'\r')
    }) {
        return Err(format!(
            "`{js}`: factor {:?} is not ASCII on one line",
            f.text
        ));
    }
    Ok(factors)
}

/// [`of_pattern_extended`], without the factors that hold a whole
/// alternative of the same pattern made of literals alone (no `\b`): such
/// a factor's matches hold a match of that alternative, and so one of its
/// factors (`stream closed with error code nghttp2_internal_error` and
/// `nghttp2_(?:internal_error|refused_stream)`), and would only widen the
/// bound of a factor inside it.
fn of_pattern_extended_lean(js: &str, searched: &Searched) -> Result<Vec<Factor>, String> {
    let mut whole = Vec::new();
    for alternative in crate::alternatives(js) {
        let regex = translate(alternative, Letters::Lower)?;
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&regex)
            .map_err(|e| format!("{alternative}: {e}"))?;
        if let Some(set) = exact(&hir) {
            if set.iter().all(|t| !t.is_empty()) {
                whole.extend(set);
            }
        }
    }
    let mut factors = of_pattern_extended(js, searched)?;
    factors.retain(|f| {
        !whole
            .iter()
            .any(|w| w != &f.text && f.text.windows(w.len()).any(|x| x == w.as_slice()))
    });
    Ok(factors)
}

/// The extended patterns of the labels in `want` (see [`extended`]), each
/// with its label.
pub fn extended_patterns(want: u8) -> Result<Labelled, String> {
    let mut set = Vec::new();
    if want & BIT_RETRYABLE != 0 {
        set.push((patterns::RETRYABLE_EXTENDED, BIT_RETRYABLE));
    }
    if want & BIT_USAGE_LIMIT != 0 {
        set.push((patterns::USAGE_LIMIT_EXTENDED, BIT_USAGE_LIMIT));
    }
    if want & BIT_HINT != 0 {
        set.push((HINT_NAMES_EXTENDED, BIT_HINT));
    }
    if want & BIT_OVERFLOW != 0 {
        for literal in patterns::OVERFLOW.iter().chain(patterns::OVERFLOW_EXTENDED) {
            let body = literal_body(literal)?;
            if !body.starts_with('^') {
                set.push((body, BIT_OVERFLOW));
            }
        }
    }
    Ok(set)
}

/// The factors of the extended patterns of the labels in `want` (as
/// [`classic`]): spec 10.5's retryable and usage-limit patterns (window
/// alternatives included), the unanchored overflow patterns of 3.3 and
/// those 10.5 adds, and the names of the hints of 10.4.
pub fn extended(want: u8) -> Result<Vec<Factor>, String> {
    // (pattern, whether its alternatives made of literals alone stand in
    // for the factors that hold them, as in all but the overflow patterns:
    // see `of_pattern_extended_lean`, its label).
    let set: Vec<(&str, bool, u8)> = extended_patterns(want)?
        .into_iter()
        .map(|(js, labels)| (js, labels != BIT_OVERFLOW, labels))
        .collect();
    // Two choices, as in [`classic`].
    let choose = |searched: &Searched| -> Result<Vec<Factor>, String> {
        let mut all = Vec::new();
        for &(js, lean, labels) in &set {
            let factors = if lean {
                of_pattern_extended_lean(js, searched)?
            } else {
                of_pattern_extended(js, searched)?
            };
            all.extend(labelled(factors, labels));
        }
        Ok(reduce(all))
    };
    choose(&Searched::of(&choose(&Searched::default())?))
}

/// The required factors of the curated tables, per table: `tables[k]` are
/// the patterns (JavaScript syntax, without delimiters) whose matches
/// table `k` reports, or, for the window words' tables, the window
/// alternatives they serve (with the mask of those tables). Every match of
/// a pattern of table `k` contains a factor whose `labels` has bit `k`:
/// the classifier steps a table only around the hits of its own factors.
/// Each alternative takes its own longest literal; a factor that starts
/// with another, or holds one of [`CURATED_MERGE_MIN`] bytes or more,
/// gives way to it ([`reduce_where`]), so none starts with another.
pub fn curated(tables: &[(Vec<String>, u32)]) -> Result<Vec<Factor>, String> {
    let mut all = Vec::new();
    for (patterns, mask) in tables {
        for js in patterns {
            all.extend(
                of_pattern_extended(js, &Searched::default())?
                    .into_iter()
                    .map(|f| Factor { labels: *mask, ..f }),
            );
        }
    }
    let all = all.into_iter().map(trim_punctuation).collect();
    let mut factors = reduce_where(all, |k, at| at == 0 || k.len() >= CURATED_MERGE_MIN);
    factors.sort_by(|a, b| a.text.cmp(&b.text));
    Ok(factors)
}

/// `factor` without the ASCII punctuation it starts with (`"retrydelay":`
/// is searched as `retrydelay":`), its bound before as much further, where
/// at least [`TRIMMED_MIN`] bytes are left.
///
/// The factors that start with neither a letter nor white space make a
/// searcher of their own that searches only the chunks holding one of
/// their first bytes (`factors::Search`): with the quotes gone those are
/// the digits `4` and `5` (`429`, `503`, ...), and a text of quoted HTML
/// attributes without them is searched by the letters' searchers alone.
/// On `lorem_1MB` (no hit) that was 21 % faster (paired runs).
fn trim_punctuation(mut factor: Factor) -> Factor {
    let k = factor
        .text
        .iter()
        .take_while(|b| b.is_ascii_punctuation())
        .count();
    if k > 0 && factor.text.len() >= k + TRIMMED_MIN {
        factor.text.drain(..k);
        factor.before = factor.before.map(|b| b + k);
    }
    factor
}

/// The fewest bytes [`trim_punctuation`] leaves of a factor.
const TRIMMED_MIN: usize = 4;

/// A curated factor that another holds further in than its start takes
/// that one's matches only from this length on: longer factors are rare
/// enough that their hits stay few, and merging keeps the searched
/// factors few (each Teddy searcher takes 64). A hit costs one run of the
/// tables' automaton: on `lorem_1MB` (no hit), 5 gave 140 factors and
/// about 15 % more speed than 8 (160 factors); 4 gave as many factors.
const CURATED_MERGE_MIN: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(fs: &[Factor]) -> Vec<String> {
        fs.iter()
            .map(|f| String::from_utf8(f.text.clone()).unwrap())
            .collect()
    }

    #[test]
    fn picks_the_longest_literal_of_each_alternative() {
        let fs = of_pattern("rate.?limit|too many requests|429").unwrap();
        assert_eq!(texts(&fs), ["limit", "too many requests", "429"]);
        // `rate` and at most one scalar value (four bytes) before `limit`.
        assert_eq!(fs[0].before, Some(8));
        assert_eq!(fs[0].after, Some(0));
        let fs = of_pattern("(prompt|input).*(too long|too large).*(context|n_ctx)").unwrap();
        assert_eq!(texts(&fs), ["too long", "too large"]);
        assert!(fs.iter().all(|f| f.before.is_none() && f.after.is_none()));
        let fs = of_pattern(r"maximum prompt length is \d+").unwrap();
        assert_eq!((fs[0].before, fs[0].after), (Some(0), None));
    }

    #[test]
    fn leading_punctuation_is_left_to_the_bound() {
        let f = |text: &str, before| Factor {
            text: text.as_bytes().to_vec(),
            before,
            after: Some(0),
            labels: 1,
        };
        let t = trim_punctuation(f("\"retrydelay\":", Some(0)));
        assert_eq!(
            (t.text.as_slice(), t.before),
            (&b"retrydelay\":"[..], Some(1))
        );
        let t = trim_punctuation(f("--x", None));
        assert_eq!((t.text.as_slice(), t.before), (&b"--x"[..], None));
        let t = trim_punctuation(f("429", Some(2)));
        assert_eq!((t.text.as_slice(), t.before), (&b"429"[..], Some(2)));
        // No curated factor starts with punctuation.
        let fs = curated(&[(vec![r#""retryDelay":\s*"\d+s"|429"#.to_string()], 1)]).unwrap();
        assert!(fs.iter().all(|f| !f.text[0].is_ascii_punctuation()));
    }

    #[test]
    fn refuses_an_alternative_without_a_literal() {
        assert!(of_pattern(r"rate|\d+").is_err());
        assert!(of_pattern(r"a?b?").is_err());
    }

    #[test]
    fn refuses_a_pattern_across_lines() {
        assert!(of_pattern(r"rate\s*limit").is_err());
        assert!(of_pattern(r"rate[^x]limit").is_err());
        assert!(of_pattern(r"rate.limit").is_ok());
        assert!(of_pattern(r"rate[ _]limit").is_ok());
    }

    #[test]
    fn the_extended_factors() {
        let fs = extended(ALL).unwrap();
        let find = |t: &str| fs.iter().find(|f| f.text == t.as_bytes());
        // `\s*` before `(no body)` or `is the computer...`: the factor is
        // before it, with a bounded distance from the match's start.
        assert_eq!(find("400").map(|f| f.before), Some(Some(0)));
        assert_eq!(find("413").map(|f| f.before), Some(Some(0)));
        assert_eq!(find("connect.").map(|f| f.before), Some(Some(16)));
        assert!(find("(no body)").is_none());
        // The window alternatives take the `limit` of `rate.?limit`, which
        // is searched for already, and so does `usage.?limit`: neither
        // `account` nor `usage` is a factor. Before `limit`: `account's`,
        // 80 characters, `rate` and one character (the `\r` a window's
        // `[^\n]` may hold is no line break to the search).
        assert!(find("account").is_none() && find("usage").is_none());
        assert_eq!(
            find("limit").map(|f| f.before),
            Some(Some(9 + 80 * 4 + 4 + 4))
        );
        // Without the retryable patterns, nothing searches for `limit`:
        // each window takes its longest literal, `account`.
        let usage = extended(BIT_USAGE_LIMIT).unwrap();
        let account = usage.iter().find(|f| f.text == b"account");
        assert_eq!(account.map(|f| f.before), Some(Some(4 + 4 + 5 + 80 * 4)));
        // `internal` is not widened by the longer `nghttp2` alternative.
        assert_eq!(find("internal").map(|f| f.before), Some(Some(8)));
        // None contains another.
        for (i, a) in fs.iter().enumerate() {
            for b in &fs[i + 1..] {
                let inside = |x: &[u8], y: &[u8]| x.windows(y.len()).any(|w| w == y);
                assert!(!inside(&a.text, &b.text) && !inside(&b.text, &a.text));
            }
        }
    }

    #[test]
    fn a_factor_inside_another_takes_its_place() {
        let fs = reduce(vec![
            Factor {
                text: b"limit_reached".to_vec(),
                before: Some(0),
                after: Some(0),
                labels: 0,
            },
            Factor {
                text: b"limit".to_vec(),
                before: Some(8),
                after: Some(0),
                labels: 0,
            },
        ]);
        assert_eq!(texts(&fs), ["limit"]);
        assert_eq!((fs[0].before, fs[0].after), (Some(8), Some(8)));
    }

    #[test]
    fn the_classic_factors() {
        let fs = classic(ALL).unwrap();
        let t = texts(&fs);
        for f in [
            "limit",
            "429",
            "500",
            "overloaded",
            "too long",
            "retry-after",
        ] {
            assert!(t.iter().any(|x| x == f), "{f} in {t:?}");
        }
        assert!(fs.len() <= 64, "{t:?}");
        // `usage.?limit` takes the `limit` that `rate.?limit` searches for.
        assert!(!t.iter().any(|x| x == "usage"), "{t:?}");
        // Without the retryable pattern, `limit` alone is no factor.
        let t = texts(&classic(ALL & !BIT_RETRYABLE).unwrap());
        assert!(!t.iter().any(|x| x == "limit" || x == "429"), "{t:?}");
        assert!(t.iter().any(|x| x == "usage"), "{t:?}");
    }
}
