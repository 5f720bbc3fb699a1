//! The skipping scan (feature `prefilter`, on std): a pattern set's scan
//! stepped symbol by symbol, which skips the text where no match can start
//! (the harmless strings of three bytes of `super::prefilter`) and puts
//! its tables back in their quiet states after the skip. It reads raw
//! bytes (the lossy reading of invalid UTF-8 is its own); why skipping
//! gives the DFAs' answer is told in `super::prefilter`.
//!
//! `tests::same_as_every_symbol` checks this path against the plain scan
//! on texts built from the patterns' pieces, with every set of labels.

use super::prefilter::prefilter;
use super::step::Step;
use super::utf8::decode;

/// A symbol that stands for "not an ASCII character".
const NOT_ASCII: u8 = 0x80;

/// The scan of `bytes` (read as `String::from_utf8_lossy` would), skipping
/// what the triples allow; the labels found.
pub(super) fn scan<S: Step>(mut s: S, bytes: &[u8]) -> u8 {
    let p = prefilter();
    let n = bytes.len();
    let mut i = 0;
    let mut prev = [NOT_ASCII; 2];
    let mut key = usize::MAX;
    let mut triples = p.triples(0);
    while i < n {
        let (sym, len) = decode(bytes, i);
        i += len;
        if s.step(sym) {
            break;
        }
        prev = [prev[1], if len == 1 { sym } else { NOT_ASCII }];
        // Skipping needs the strings at i - 2 and i - 1 harmless, and text
        // beyond them to skip.
        if prev[0] == NOT_ASCII || i + 2 >= n {
            continue;
        }
        let (Some(&c), Some(&d)) = (bytes.get(i), bytes.get(i + 1)) else {
            continue;
        };
        if s.key() != key {
            key = s.key();
            triples = p.triples(key);
        }
        if !s.near(p)
            || p.hit(triples, prev[0], prev[1], c)
            || p.hit(triples, prev[1], c, d)
            || !s.settled(p, prev)
        {
            continue;
        }
        let to = p.skip(triples, bytes, i);
        let before = bytes.get(to.wrapping_sub(1)).map_or(0, |&b| b);
        s.skipped(p, before, to - i);
        i = to;
        prev = [NOT_ASCII; 2];
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::super::classic::{self, Scan};
    use super::super::dfa::{HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT};
    use super::super::testing::texts;
    use super::super::utf8::lossy_symbols;
    use super::super::ALL;
    use super::*;
    use std::string::String;

    const WANTS: [u8; 6] = [
        ALL | HINT,
        RETRYABLE,
        USAGE_LIMIT,
        OVERFLOW,
        HINT,
        RETRYABLE | USAGE_LIMIT,
    ];

    #[test]
    fn same_as_every_symbol() {
        for t in texts(3000) {
            for want in WANTS {
                assert_eq!(
                    scan(Scan::new(want), &t),
                    classic::scan(want, lossy_symbols(&t)),
                    "classic, want {want}: {:?}",
                    String::from_utf8_lossy(&t)
                );
                #[cfg(feature = "extended")]
                assert_eq!(
                    scan(super::super::extended::Scan::new(want), &t),
                    super::super::extended::scan(want, lossy_symbols(&t)),
                    "extended, want {want}: {:?}",
                    String::from_utf8_lossy(&t)
                );
            }
        }
    }
}
