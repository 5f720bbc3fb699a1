//! Patterns in the `regex` crate's syntax, translated with the rules'
//! semantics (spec §3.1 plus ASCII `\w` and `\b`, `^`/`$` at the text's
//! ends): regex-syntax parses the pattern, and the AST is turned into HIR
//! here rather than by regex-syntax's translator, whose case folding is
//! Unicode's (`ſ` = `s`, the Kelvin sign = `k`) and whose `.`, `\d`, `\s`,
//! `\w` and `\b` are Unicode classes.
//!
//! ASCII case folding is applied to every class leaf (a literal, a range,
//! `[[:upper:]]`, `\p{Lu}`, ...) before any set operation or negation, as
//! the `regex` crate's `(?i)` does it: so `[^a]` excludes `A` too.

use std::format;
use std::string::String;
use std::vec::Vec;

use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem, Flag, FlagsItemKind, Span};
use regex_syntax::hir::{
    self, Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition,
};

use super::NEST_LIMIT;

/// The HIR of one pattern, or the parser's message and where.
pub(crate) fn translate(pattern: &str) -> Result<Hir, String> {
    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map_err(|e| at(&e.kind().to_string(), e.span()))?;
    to_hir(&ast, pattern)
}

/// `message at column C` (or `at line L, column C` in a multi-line
/// pattern), 1-based, in characters.
fn at(message: &str, span: &Span) -> String {
    if span.start.line > 1 {
        format!(
            "{message} at line {}, column {}",
            span.start.line, span.start.column
        )
    } else {
        format!("{message} at column {}", span.start.column)
    }
}

fn to_hir(ast: &Ast, pattern: &str) -> Result<Hir, String> {
    Ok(match ast {
        Ast::Empty(_) => Hir::empty(),
        Ast::Flags(set) => {
            check_flags(&set.flags)?;
            Hir::empty()
        }
        Ast::Literal(lit) => literal(lit.c),
        Ast::Dot(_) => class(dot()),
        Ast::Assertion(a) => Hir::look(look(&a.kind)),
        Ast::ClassUnicode(c) => class(fold(translated(
            &Ast::ClassUnicode(c.clone()),
            &c.span,
            pattern,
        )?)),
        Ast::ClassPerl(c) => class(perl(c)),
        Ast::ClassBracketed(c) => class(bracketed(c, pattern)?),
        Ast::Repetition(r) => {
            let (min, max) = match r.op.kind {
                ast::RepetitionKind::ZeroOrOne => (0, Some(1)),
                ast::RepetitionKind::ZeroOrMore => (0, None),
                ast::RepetitionKind::OneOrMore => (1, None),
                ast::RepetitionKind::Range(ast::RepetitionRange::Exactly(n)) => (n, Some(n)),
                ast::RepetitionKind::Range(ast::RepetitionRange::AtLeast(n)) => (n, None),
                ast::RepetitionKind::Range(ast::RepetitionRange::Bounded(m, n)) => (m, Some(n)),
            };
            Hir::repetition(Repetition {
                min,
                max,
                greedy: r.greedy,
                sub: std::boxed::Box::new(to_hir(&r.ast, pattern)?),
            })
        }
        Ast::Group(g) => {
            if let ast::GroupKind::NonCapturing(flags) = &g.kind {
                check_flags(flags)?;
            }
            // Captures mean nothing to a verdict.
            to_hir(&g.ast, pattern)?
        }
        Ast::Alternation(a) => Hir::alternation(
            a.asts
                .iter()
                .map(|ast| to_hir(ast, pattern))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Ast::Concat(c) => Hir::concat(
            c.asts
                .iter()
                .map(|ast| to_hir(ast, pattern))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    })
}

/// `^`, `$`, `\A`, `\z` are the text's ends; every word assertion is
/// ASCII's.
fn look(kind: &ast::AssertionKind) -> Look {
    use ast::AssertionKind as K;
    match kind {
        K::StartLine | K::StartText => Look::Start,
        K::EndLine | K::EndText => Look::End,
        K::WordBoundary => Look::WordAscii,
        K::NotWordBoundary => Look::WordAsciiNegate,
        K::WordBoundaryStart | K::WordBoundaryStartAngle => Look::WordStartAscii,
        K::WordBoundaryEnd | K::WordBoundaryEndAngle => Look::WordEndAscii,
        K::WordBoundaryStartHalf => Look::WordStartHalfAscii,
        K::WordBoundaryEndHalf => Look::WordEndHalfAscii,
    }
}

/// `i` (on: it always is), `x` and `U` (which cannot change a verdict) are
/// accepted; every other flag would change the fixed semantics.
fn check_flags(flags: &ast::Flags) -> Result<(), String> {
    let mut negated = false;
    for item in &flags.items {
        let flag = match item.kind {
            FlagsItemKind::Negation => {
                negated = true;
                continue;
            }
            FlagsItemKind::Flag(flag) => flag,
        };
        let (letter, fine) = match flag {
            Flag::CaseInsensitive => ('i', !negated),
            Flag::IgnoreWhitespace => ('x', true),
            Flag::SwapGreed => ('U', true),
            Flag::MultiLine => ('m', false),
            Flag::DotMatchesNewLine => ('s', false),
            Flag::Unicode => ('u', false),
            Flag::CRLF => ('R', false),
        };
        if !fine {
            let sign = if negated { "-" } else { "" };
            return Err(at(
                &format!(
                    "flag {sign}{letter} is not supported (rules match ASCII case-insensitively, \
                     `.` never matches a line break, `^` and `$` are the text's ends)"
                ),
                &item.span,
            ));
        }
    }
    Ok(())
}

fn class(c: ClassUnicode) -> Hir {
    Hir::class(Class::Unicode(c))
}

fn ranges(ranges: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)))
}

/// One character: an ASCII letter in both cases, anything else itself.
fn literal(c: char) -> Hir {
    if c.is_ascii_alphabetic() {
        class(fold(ranges(&[(c, c)])))
    } else {
        let mut buf = [0; 4];
        Hir::literal(c.encode_utf8(&mut buf).as_bytes())
    }
}

/// `.`: a scalar value other than `\n`, `\r`, U+2028, U+2029.
fn dot() -> ClassUnicode {
    let mut c = ranges(&[('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')]);
    c.negate();
    c
}

/// `\d`, `\s`, `\w` (and negated): ASCII.
fn perl(c: &ast::ClassPerl) -> ClassUnicode {
    let mut set = match c.kind {
        ast::ClassPerlKind::Digit => ranges(&[('0', '9')]),
        ast::ClassPerlKind::Space => ranges(&[('\t', '\r'), (' ', ' ')]),
        ast::ClassPerlKind::Word => ranges(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]),
    };
    if c.negated {
        set.negate();
    }
    set
}

/// The set with the other case of each ASCII letter in it added.
fn fold(mut set: ClassUnicode) -> ClassUnicode {
    let mut other = Vec::new();
    for r in set.iter() {
        for (lo, hi) in [('A', 'Z'), ('a', 'z')] {
            let (start, end) = (r.start().max(lo), r.end().min(hi));
            if start <= end {
                other.push(ClassUnicodeRange::new(swap_case(start), swap_case(end)));
            }
        }
    }
    set.union(&ClassUnicode::new(other));
    set
}

fn swap_case(c: char) -> char {
    if c.is_ascii_uppercase() {
        c.to_ascii_lowercase()
    } else {
        c.to_ascii_uppercase()
    }
}

fn bracketed(c: &ast::ClassBracketed, pattern: &str) -> Result<ClassUnicode, String> {
    let mut set = class_set(&c.kind, pattern)?;
    if c.negated {
        set.negate();
    }
    Ok(set)
}

fn class_set(set: &ClassSet, pattern: &str) -> Result<ClassUnicode, String> {
    match set {
        ClassSet::Item(item) => class_item(item, pattern),
        ClassSet::BinaryOp(op) => {
            let mut lhs = class_set(&op.lhs, pattern)?;
            let rhs = class_set(&op.rhs, pattern)?;
            match op.kind {
                ast::ClassSetBinaryOpKind::Intersection => lhs.intersect(&rhs),
                ast::ClassSetBinaryOpKind::Difference => lhs.difference(&rhs),
                ast::ClassSetBinaryOpKind::SymmetricDifference => lhs.symmetric_difference(&rhs),
            }
            Ok(lhs)
        }
    }
}

/// A class leaf, folded (unions, set operations and negations of folded
/// sets stay folded).
fn class_item(item: &ClassSetItem, pattern: &str) -> Result<ClassUnicode, String> {
    Ok(match item {
        ClassSetItem::Empty(_) => ClassUnicode::empty(),
        ClassSetItem::Literal(lit) => fold(ranges(&[(lit.c, lit.c)])),
        ClassSetItem::Range(r) => fold(ranges(&[(r.start.c, r.end.c)])),
        ClassSetItem::Ascii(a) => {
            let alone = Ast::class_bracketed(ast::ClassBracketed {
                span: a.span,
                negated: false,
                kind: ClassSet::Item(ClassSetItem::Ascii(a.clone())),
            });
            fold(translated(&alone, &a.span, pattern)?)
        }
        ClassSetItem::Unicode(u) => fold(translated(
            &Ast::class_unicode(u.clone()),
            &u.span,
            pattern,
        )?),
        ClassSetItem::Perl(p) => perl(p),
        ClassSetItem::Bracketed(b) => bracketed(b, pattern)?,
        ClassSetItem::Union(u) => {
            let mut set = ClassUnicode::empty();
            for item in &u.items {
                set.union(&class_item(item, pattern)?);
            }
            set
        }
    })
}

/// A named class (`\p{Greek}`, `[[:alpha:]]`) as regex-syntax's
/// translator defines it, case-sensitive, in Unicode mode.
fn translated(ast: &Ast, span: &Span, pattern: &str) -> Result<ClassUnicode, String> {
    let hir = hir::translate::TranslatorBuilder::new()
        .build()
        .translate(pattern, ast)
        .map_err(|e| at(&e.kind().to_string(), e.span()))?;
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => Ok(c.clone()),
        HirKind::Class(Class::Bytes(b)) if b.ranges().is_empty() => Ok(ClassUnicode::empty()),
        HirKind::Literal(hir::Literal(bytes)) => {
            let mut chars = std::str::from_utf8(bytes)
                .ok()
                .into_iter()
                .flat_map(str::chars);
            match (chars.next(), chars.next()) {
                (Some(c), None) => Ok(ranges(&[(c, c)])),
                _ => Err(at("not a class", span)),
            }
        }
        _ => Err(at("not a class", span)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_ascii_only_and_before_negation() {
        let c = fold(ranges(&[('a', 'c'), ('é', 'é'), ('\u{17F}', '\u{17F}')]));
        assert_eq!(
            c,
            ranges(&[('A', 'C'), ('a', 'c'), ('é', 'é'), ('\u{17F}', '\u{17F}')])
        );
        // [^a]: neither `a` nor `A`.
        let Ast::ClassBracketed(ref b) = ast::parse::Parser::new().parse("[^a]").unwrap() else {
            panic!("a bracketed class")
        };
        let set = bracketed(b, "[^a]").unwrap();
        assert!(!set.iter().any(|r| r.start() <= 'A' && 'A' <= r.end()));
        assert!(!set.iter().any(|r| r.start() <= 'a' && 'a' <= r.end()));
        assert!(set.iter().any(|r| r.start() <= 'b' && 'b' <= r.end()));
    }

    #[test]
    fn flags_that_change_the_semantics_are_refused() {
        for (pattern, column) in [("(?m)^x", 3), ("a(?s:.)", 4), ("(?i-i)x", 5), ("(?u)x", 3)] {
            let err = translate(pattern).unwrap_err();
            assert!(
                err.contains(&format!("at column {column}")),
                "{pattern}: {err}"
            );
        }
        for pattern in ["(?i)x", "(?x) a b ", "(?U)a+", "(?-x:a)"] {
            assert!(translate(pattern).is_ok(), "{pattern}");
        }
    }
}
