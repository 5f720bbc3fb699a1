//! Which line breaks a pattern's matches may hold.
//!
//! The factor search steps a hit's line, or a bounded stretch before the
//! hit: what it may skip depends on the characters a part of a match may
//! hold. Two sets matter. The classic patterns' `.` stops at every line
//! terminator of spec 3.1 ([`TERMINATORS`]), and a classic pattern whose
//! matches could hold one is refused. The extended classifier's lines end
//! at a line feed alone (a window's `[^\n]{0,80}` may hold a `\r`): a
//! factor whose match may start before it without a bound needs no line
//! feed between, and a need is on the hit's line when none can come
//! between ([`crate::near`]).

use regex_syntax::hir::{Class, Hir, HirKind};

/// The line terminators of `.` (spec 3.1).
pub const TERMINATORS: &[char] = &['\n', '\r', '\u{2028}', '\u{2029}'];

/// A line feed, where the extended classifier's lines end.
pub const LINE_FEED: &[char] = &['\n'];

/// Whether some match of `hir` may hold one of `chars`.
///
/// A byte class (outside Unicode mode) may hold a non-ASCII character of
/// `chars` as soon as it has a byte of 0x80 or more: a conservative
/// answer, as is that for a literal that is not UTF-8.
pub fn may_hold(hir: &Hir, chars: &[char]) -> bool {
    match hir.kind() {
        HirKind::Literal(lit) => std::str::from_utf8(&lit.0).map_or(true, |t| t.contains(chars)),
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .any(|r| chars.iter().any(|&t| r.start() <= t && t <= r.end())),
        HirKind::Class(Class::Bytes(c)) => c.ranges().iter().any(|r| {
            chars.iter().any(|&t| match u8::try_from(t) {
                Ok(b) if b.is_ascii() => r.start() <= b && b <= r.end(),
                _ => r.end() >= 0x80,
            })
        }),
        HirKind::Capture(c) => may_hold(&c.sub, chars),
        HirKind::Repetition(r) => may_hold(&r.sub, chars),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(|h| may_hold(h, chars)),
        HirKind::Empty | HirKind::Look(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hir(re: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(re)
            .unwrap()
    }

    #[test]
    fn a_class_without_line_feeds_may_hold_other_terminators() {
        let window = hir(r"account[^\n]{0,80}limit");
        assert!(!may_hold(&window, LINE_FEED));
        assert!(may_hold(&window, TERMINATORS));
        let dot = hir(r"rate[^\n\r\x{2028}\x{2029}]?limit");
        assert!(!may_hold(&dot, TERMINATORS));
        assert!(may_hold(&hir(r"a\s*b"), LINE_FEED));
        assert!(may_hold(&hir("a(?:x|\u{2028})b"), TERMINATORS));
    }

    #[test]
    fn byte_classes_answer_for_line_breaks() {
        assert!(may_hold(&hir(r"(?-u:[\x00-\x0a])"), LINE_FEED));
        assert!(!may_hold(&hir(r"(?-u:[\x0b-\x7f])"), LINE_FEED));
        assert!(may_hold(&hir(r"(?-u:[\x0b-\x0d])"), TERMINATORS));
        // U+2028 is three bytes: any byte of 0x80 or more may be one.
        assert!(may_hold(&hir(r"(?-u:[\x80-\xff])"), TERMINATORS));
        assert!(!may_hold(&hir(r"(?-u:[\x80-\xff])"), LINE_FEED));
    }
}
