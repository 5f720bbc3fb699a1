//! Texts for the tests of the scans: the patterns' pieces, put together
//! at random from a fixed seed, so that every path a text can take
//! (`super::strategy`) is compared with the plain scan on the same texts.

extern crate std;

use super::patterns;
use std::vec::Vec;

/// Pieces of texts: the patterns' literal runs (so that matches start,
/// break off and complete), words of a body, and characters the skipping
/// must not pass over.
pub(super) fn pieces() -> Vec<Vec<u8>> {
    let mut all: Vec<&str> = [patterns::RETRYABLE, patterns::USAGE_LIMIT]
        .into_iter()
        .collect();
    all.extend(patterns::OVERFLOW);
    #[cfg(feature = "extended")]
    {
        all.extend([patterns::RETRYABLE_EXTENDED, patterns::USAGE_LIMIT_EXTENDED]);
        all.extend(patterns::OVERFLOW_EXTENDED);
    }
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    for p in all {
        for run in p.split(|c: char| "|()?*+.\\/[]{}^".contains(c)) {
            if !run.is_empty() {
                pieces.push(run.as_bytes().to_vec());
                // A prefix: a match that starts and breaks off.
                pieces.push(run.as_bytes()[..run.len().div_ceil(2)].to_vec());
            }
        }
    }
    for w in [
        "the",
        " ",
        "  ",
        "proxy",
        "<p>",
        "retry-after: 5",
        "x-ratelimit-reset",
        "é",
        "😀",
        "\u{2028}",
        "\u{2029}",
        "—",
        "\n",
        "\r\n",
        "\t",
        "4",
        "0",
        "13",
        "s",
        "'s",
        "_",
        "-",
        "account",
        "rate limit",
        "exceeds",
        "n_ctx",
    ] {
        pieces.push(w.as_bytes().to_vec());
    }
    pieces.push(b"\xFF".to_vec());
    pieces.push(b"\xE2\x80".to_vec());
    pieces.push(b"\xF0\x9F\x98".to_vec());
    pieces
}

/// Texts of random pieces, upper-cased at random, from a fixed seed.
pub(super) fn texts(count: usize) -> Vec<Vec<u8>> {
    let pieces = pieces();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    (0..count)
        .map(|_| {
            let mut t = Vec::new();
            for _ in 0..rand(40) {
                let piece = &pieces[rand(pieces.len())];
                if rand(4) == 0 {
                    t.extend(piece.iter().map(u8::to_ascii_uppercase));
                } else {
                    t.extend(piece);
                }
                match rand(6) {
                    0 => t.push(b' '),
                    1 => t.extend(b"lorem ipsum dolor sit "),
                    _ => {}
                }
            }
            t
        })
        .collect()
}
