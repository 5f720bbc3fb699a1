//! Reading a text as characters: the symbol of each (see
//! [`super::symbol`]), from a `&str` or from raw bytes read as
//! `String::from_utf8_lossy` would (one U+FFFD per maximal invalid
//! subpart), without allocating.

use super::symbol::{LS, OTHER, PS};

/// The symbol of every character of `text`, in order.
#[inline(always)]
pub(super) fn symbols(text: &str) -> Symbols<'_> {
    Symbols(text.as_bytes().iter())
}

/// The symbols of `String::from_utf8_lossy(bytes)`, without allocating: one
/// [`OTHER`] (U+FFFD) per maximal invalid subpart.
#[inline(always)]
pub(super) fn lossy_symbols(bytes: &[u8]) -> impl Iterator<Item = u8> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        symbols(chunk.valid()).chain((!chunk.invalid().is_empty()).then_some(OTHER))
    })
}

/// See [`symbols`]. (It reads the bytes of a `&str`, so they are UTF-8.)
pub(super) struct Symbols<'a>(core::slice::Iter<'a, u8>);

impl Iterator for Symbols<'_> {
    type Item = u8;

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        loop {
            let b = *self.0.next()?;
            return Some(match b {
                0..=0x7F => b,
                // A continuation byte: its character's symbol is out.
                0x80..=0xBF => continue,
                0xE2 => match self.0.as_slice() {
                    [0x80, 0xA8, ..] => LS,
                    [0x80, 0xA9, ..] => PS,
                    _ => OTHER,
                },
                _ => OTHER,
            });
        }
    }
}

#[cfg(feature = "prefilter")]
/// The symbol of the character at `i` and its length in bytes, as
/// `String::from_utf8_lossy` reads it (one U+FFFD per maximal invalid
/// subpart).
#[inline(always)]
pub(super) fn decode(bytes: &[u8], i: usize) -> (u8, usize) {
    let rest = bytes.get(i..).unwrap_or_default();
    match rest.first() {
        Some(&b) if b < 0x80 => (b, 1),
        None => (OTHER, 1),
        Some(&b) => {
            let head = rest.get(..4).unwrap_or(rest);
            match core::str::from_utf8(head) {
                Ok(_) => char_at(head, b),
                Err(e) if e.valid_up_to() > 0 => char_at(head, b),
                Err(e) => (OTHER, e.error_len().map_or(head.len(), usize::from)),
            }
        }
    }
}

#[cfg(feature = "prefilter")]
/// The symbol and length of the valid character at the start of `head`.
fn char_at(head: &[u8], lead: u8) -> (u8, usize) {
    match head {
        [0xE2, 0x80, 0xA8, ..] => (LS, 3),
        [0xE2, 0x80, 0xA9, ..] => (PS, 3),
        _ => (
            OTHER,
            match lead {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            },
        ),
    }
}

#[cfg(feature = "prefilter")]
/// The start of the character at `i` (or the end of the text).
pub(super) fn char_start(bytes: &[u8], mut i: usize) -> usize {
    i = i.min(bytes.len());
    while i > 0 && bytes.get(i).is_some_and(|&b| b & 0xC0 == 0x80) {
        i -= 1;
    }
    i
}

#[cfg(all(test, feature = "prefilter"))]
mod tests {
    use super::super::testing::texts;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn decodes_like_from_utf8_lossy() {
        for t in texts(500) {
            let mut syms = Vec::new();
            let mut i = 0;
            while i < t.len() {
                let (sym, len) = decode(&t, i);
                syms.push(sym);
                i += len;
            }
            assert_eq!(syms, lossy_symbols(&t).collect::<Vec<u8>>());
        }
    }

    #[test]
    fn char_start_is_a_boundary() {
        let t = "aé😀\u{2028}b";
        for i in 0..=t.len() + 2 {
            let s = char_start(t.as_bytes(), i);
            assert!(s <= i.min(t.len()) && t.is_char_boundary(s), "{i}");
        }
    }
}
