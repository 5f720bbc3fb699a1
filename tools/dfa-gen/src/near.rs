//! What must be near a factor's hit for a match to need it.
//!
//! Most hits of a short factor are in no match: `limit` in "limits per
//! account", `server` in "server.js". Every match the classifier relies on
//! a hit for holds the factor inside one of its patterns' literals (the
//! generator chooses factors inside literals only), and the literals
//! around that one, at distances the pattern bounds. So a hit can be let
//! go, before any DFA steps on it, when for every place the factor has in
//! a literal of the patterns some literal that place needs is not where
//! it would have to be.
//!
//! Each pattern is spelled out as the sequences of literals and *gaps*
//! (classes, repetitions of classes, assertions: parts of a match of a
//! bounded or unbounded byte length) its matches follow; alternations and
//! optional literals multiply the sequences. For each place of the factor
//! in a literal of a sequence, the literal itself (where it is longer than
//! the factor) and every literal before or after it with no unbounded gap
//! between must occur, each starting within a range of offsets from the
//! hit's start: one *need* of [`Need`]s, which must all hold. A hit is kept
//! when one of the factor's needs holds.
//!
//! Offsets count bytes: a character of a gap is one to four bytes (what a
//! maximal invalid subpart becomes, U+FFFD, stands for one to three).

use regex_syntax::hir::{Hir, HirKind};

use crate::lines::{may_hold, LINE_FEED};
use crate::{translate, Letters};

/// A literal that must start within `lo..=hi` bytes of a hit's start.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Near {
    pub lo: isize,
    pub hi: isize,
    /// Whether no line feed may come between the literal and the hit (nor
    /// in either): the literal is on the hit's line.
    pub line: bool,
    /// Lower case ASCII.
    pub text: Vec<u8>,
}

/// A part of a sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    /// A literal, lower case ASCII.
    Lit(Vec<u8>),
    /// Any text of `min` to `max` bytes (`None`: no bound), and whether
    /// it may hold a line feed.
    Gap(usize, Option<usize>, bool),
}

/// More sequences than this for one pattern: no needs are derived (every
/// hit is kept).
const SEQUENCES_MAX: usize = 4096;

/// Whether `hir` has a literal anywhere inside.
fn has_literal(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(_) => true,
        HirKind::Capture(c) => has_literal(&c.sub),
        HirKind::Repetition(r) => has_literal(&r.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(has_literal),
        HirKind::Empty | HirKind::Look(_) | HirKind::Class(_) => false,
    }
}

/// Appends `item` to `seq`, joining it with a last item of its kind.
fn push(seq: &mut Vec<Item>, item: Item) {
    match (seq.last_mut(), item) {
        (Some(Item::Lit(a)), Item::Lit(b)) => a.extend(b),
        (Some(Item::Gap(a, x, n)), Item::Gap(b, y, m)) => {
            *a += b;
            *x = x.zip(y).map(|(x, y)| x + y);
            *n |= m;
        }
        (_, Item::Gap(0, Some(0), _)) => {}
        (_, item) => seq.push(item),
    }
}

/// The sequences `hir`'s matches follow, or `None` when a literal sits in
/// a repetition other than `?` (its places could not be listed) or there
/// are too many.
fn sequences(hir: &Hir) -> Option<Vec<Vec<Item>>> {
    let gap = |h: &Hir| {
        Item::Gap(
            h.properties().minimum_len().unwrap_or(0),
            h.properties().maximum_len(),
            may_hold(h, LINE_FEED),
        )
    };
    let all = match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => vec![Vec::new()],
        HirKind::Literal(lit) if lit.0.is_ascii() => vec![vec![Item::Lit(lit.0.to_vec())]],
        // A character the tables read as a class: a gap of its length.
        HirKind::Literal(_) | HirKind::Class(_) => vec![vec![gap(hir)]],
        HirKind::Capture(c) => sequences(&c.sub)?,
        HirKind::Repetition(r) if !has_literal(&r.sub) => vec![vec![gap(hir)]],
        HirKind::Repetition(r) if r.min == 0 && r.max == Some(1) => {
            let mut all = sequences(&r.sub)?;
            all.push(Vec::new());
            all
        }
        HirKind::Repetition(_) => return None,
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(sequences(a)?);
            }
            all
        }
        HirKind::Concat(parts) => {
            let mut all = vec![Vec::new()];
            for p in parts {
                let next = sequences(p)?;
                let mut joined = Vec::with_capacity(all.len() * next.len());
                for a in &all {
                    for n in &next {
                        let mut s: Vec<Item> = a.clone();
                        for item in n {
                            push(&mut s, item.clone());
                        }
                        joined.push(s);
                    }
                }
                if joined.len() > SEQUENCES_MAX {
                    return None;
                }
                all = joined;
            }
            all
        }
    };
    (all.len() <= SEQUENCES_MAX).then_some(all)
}

/// The sequences of one pattern (JavaScript syntax, without delimiters).
fn of_pattern(js: &str) -> Result<Option<Vec<Vec<Item>>>, String> {
    let regex = translate(js, Letters::Lower)?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&regex)
        .map_err(|e| format!("{js}: {e}"))?;
    Ok(sequences(&hir))
}

/// The literals of `items` (a sequence's parts, walked away from a
/// literal) up to the first unbounded gap, each with how many bytes may
/// come between it and that literal (`lo..=hi`) and whether a line feed
/// may (`feed`: the literal's own, then any part's on the way).
fn neighbours<'a>(
    items: impl Iterator<Item = &'a Item>,
    feed: bool,
) -> Vec<(&'a [u8], isize, isize, bool)> {
    let (mut lo, mut hi, mut feed) = (0isize, 0isize, feed);
    let mut all = Vec::new();
    for item in items {
        match item {
            Item::Gap(min, Some(max), f) => {
                lo += *min as isize;
                hi += *max as isize;
                feed |= f;
            }
            Item::Gap(_, None, _) => break,
            Item::Lit(t) => {
                feed |= t.contains(&b'\n');
                all.push((t.as_slice(), lo, hi, feed));
                lo += t.len() as isize;
                hi += t.len() as isize;
            }
        }
    }
    all
}

/// The needs of the places of `factor` in the literals of `seq`.
fn places(seq: &[Item], factor: &[u8], needs: &mut Vec<Vec<Near>>) {
    for (k, item) in seq.iter().enumerate() {
        let Item::Lit(text) = item else {
            continue;
        };
        let starts = (0..=text.len().saturating_sub(factor.len()))
            .filter(|&o| text.get(o..).is_some_and(|t| t.starts_with(factor)));
        for o in starts {
            // Offsets from the hit's start: the literal starts at `-o`.
            let at = -(o as isize);
            let mut need = Vec::new();
            let own_feed = text.contains(&b'\n');
            if text.len() > factor.len() {
                need.push(Near {
                    lo: at,
                    hi: at,
                    line: !own_feed,
                    text: text.clone(),
                });
            }
            // After: from the literal's end.
            let end = at + text.len() as isize;
            let after = seq.get(k + 1..).unwrap_or_default().iter();
            for (t, lo, hi, feed) in neighbours(after, own_feed) {
                need.push(Near {
                    lo: end + lo,
                    hi: end + hi,
                    line: !feed,
                    text: t.to_vec(),
                });
            }
            // Before: back from the literal's start.
            let before = seq.get(..k).unwrap_or_default().iter().rev();
            for (t, lo, hi, feed) in neighbours(before, own_feed) {
                let n = t.len() as isize;
                need.push(Near {
                    lo: at - hi - n,
                    hi: at - lo - n,
                    line: !feed,
                    text: t.to_vec(),
                });
            }
            // The narrowest first: it fails at the fewest comparisons.
            need.sort_by_key(|n| (n.hi - n.lo, n.lo.unsigned_abs()));
            needs.push(need);
        }
    }
}

/// The needs of `factor` (lower case) in `patterns` (JavaScript syntax,
/// without delimiters): a hit is kept when all the [`Near`]s of one of them
/// occur. Empty: every hit is kept (a place of the factor needs nothing
/// more, or a pattern's places could not be listed).
pub fn needs(patterns: &[&str], factor: &[u8]) -> Result<Vec<Vec<Near>>, String> {
    let mut needs = Vec::new();
    for js in patterns {
        let Some(seqs) = of_pattern(js)? else {
            return Ok(Vec::new());
        };
        for seq in &seqs {
            places(seq, factor, &mut needs);
        }
    }
    if needs.is_empty() {
        return Err(format!(
            "factor {:?} is in no literal of its patterns",
            String::from_utf8_lossy(factor)
        ));
    }
    if needs.iter().any(Vec::is_empty) {
        return Ok(Vec::new());
    }
    needs.sort();
    needs.dedup();
    // A need that holds wherever a weaker one does adds nothing: drop
    // those that contain all of another's.
    let weakest: Vec<Vec<Near>> = needs
        .iter()
        .filter(|n| {
            !needs
                .iter()
                .any(|m| m != *n && m.iter().all(|x| n.contains(x)))
        })
        .cloned()
        .collect();
    Ok(weakest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(lo: isize, hi: isize, text: &str) -> Near {
        Near {
            lo,
            hi,
            line: true,
            text: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_literal_before_and_one_around() {
        // `rate`, then at most one character (four bytes), then `limit`.
        let n = needs(&["rate.?limit|limit_reached"], b"limit").unwrap();
        assert_eq!(
            n,
            [
                vec![near(-8, -4, "rate")],
                vec![near(0, 0, "limit_reached")]
            ]
        );
        // Inside a longer literal: that literal, where it would start.
        let n = needs(&["x-ratelimit-reset"], b"limit").unwrap();
        assert_eq!(n, [vec![near(-6, -6, "x-ratelimit-reset")]]);
    }

    #[test]
    fn every_bounded_neighbour_and_none_past_an_unbounded_gap() {
        // `\b` is no gap; `[^\n]{0,80}` is up to 320 bytes; `.*` ends it.
        let n = needs(
            &[r"\baccount\b[^\n]{0,80}\brate.?limit\b|foo.*account"],
            b"account",
        )
        .unwrap();
        assert_eq!(n, Vec::<Vec<Near>>::new(), "`.*account` needs nothing");
        let n = needs(
            &[r"\baccount(?:'s)?\b[^\n]{0,80}\brate.?limit\b"],
            b"account",
        )
        .unwrap();
        assert_eq!(
            n,
            [
                vec![
                    near(0, 0, "account's"),
                    near(9, 329, "rate"),
                    near(13, 337, "limit")
                ],
                vec![near(7, 327, "rate"), near(11, 335, "limit")],
            ]
        );
    }

    #[test]
    fn a_neighbour_past_a_possible_line_feed_may_be_on_another_line() {
        // `.` holds no line feed, `\s` may.
        let n = needs(&[r"rate.?limit"], b"limit").unwrap();
        assert!(n[0][0].line);
        let n = needs(&[r"rate\s?limit"], b"limit").unwrap();
        assert_eq!(
            n,
            [vec![Near {
                lo: -5,
                hi: -4,
                line: false,
                text: b"rate".to_vec()
            }]]
        );
    }

    #[test]
    fn a_factor_with_a_bare_place_needs_nothing() {
        assert!(needs(&["server.?error|server"], b"server")
            .unwrap()
            .is_empty());
        // A literal in a repetition: its places cannot be listed.
        assert!(needs(&["(?:ab)+server.?error"], b"server")
            .unwrap()
            .is_empty());
        assert!(needs(&["rate.?limit"], b"server").is_err());
    }
}
