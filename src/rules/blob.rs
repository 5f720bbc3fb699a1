//! The compiled rules blob: a 24-byte header, then regex-automata's
//! serialized dense DFA.
//!
//! | bytes | field |
//! |---|---|
//! | 0–7 | [`MAGIC`], `ARTRULES` |
//! | 8–9 | [`FORMAT_VERSION`] (u16) |
//! | 10 | the DFA's endianness: 0 little, 1 big |
//! | 11 | the DFA's kind: 0 dense, 1 sparse |
//! | 12–13 | the number of `never` rules (u16) |
//! | 14–15 | the number of `retry` rules (u16) |
//! | 16–19 | the DFA's length in bytes (u32) |
//! | 20–23 | FNV-1a (32 bit) of the DFA's bytes |
//!
//! The header's integers are little-endian whatever the DFA's endianness,
//! so that a blob for the other byte order still reads as one and is
//! refused by name. The DFA follows at offset 24, a multiple of 4: a blob
//! that starts at a 4-byte aligned address has its DFA aligned as
//! `regex-automata` requires for a dense DFA (a sparse one needs no
//! alignment).

use super::{DfaKind, Endian, RulesError};

/// The blob's first 8 bytes.
// The blob's layout, for the test kit's and the tests' damaged blobs:
// plumbing, not part of the documented API (hidden, free to change).
#[doc(hidden)]
pub const MAGIC: [u8; 8] = *b"ARTRULES";

/// The blob format this build reads and writes.
// The blob's layout, for the test kit's and the tests' damaged blobs:
// plumbing, not part of the documented API (hidden, free to change).
#[doc(hidden)]
pub const FORMAT_VERSION: u16 = 1;

/// The header's length; the DFA starts there.
// The blob's layout, for the test kit's and the tests' damaged blobs:
// plumbing, not part of the documented API (hidden, free to change).
#[doc(hidden)]
pub const HEADER_LEN: usize = 24;

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub endian: Endian,
    pub kind: DfaKind,
    pub never: u16,
    pub retry: u16,
    pub dfa_len: u32,
    pub checksum: u32,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at + 2) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// True when `bytes` starts like a compiled blob (its magic, or a prefix of
/// it when shorter): what tells a blob from a JSON rules file.
///
/// ```
/// use autoretry::rules::is_blob;
/// assert!(is_blob(b"ARTRULES\x01\x00"));
/// assert!(is_blob(b"ARTR")); // a truncated blob is still a blob
/// assert!(!is_blob(br#"{"retry": ["x"]}"#));
/// assert!(!is_blob(b""));
/// ```
pub fn is_blob(bytes: &[u8]) -> bool {
    let n = bytes.len().min(MAGIC.len());
    n > 0 && bytes.get(..n) == MAGIC.get(..n)
}

/// Reads and checks the header, and the length and checksum of what
/// follows it; returns the header and the DFA's bytes.
pub(crate) fn split(bytes: &[u8]) -> Result<(Header, &[u8]), RulesError> {
    if !is_blob(bytes) {
        return Err(RulesError::Foreign);
    }
    if bytes.len() < HEADER_LEN {
        return Err(RulesError::Truncated {
            expected: HEADER_LEN,
            found: bytes.len(),
        });
    }
    let version = u16_at(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(RulesError::Version(version));
    }
    let endian = match bytes.get(10) {
        Some(0) => Endian::Little,
        Some(1) => Endian::Big,
        _ => return Err(RulesError::Corrupt("unknown endianness byte")),
    };
    let kind = match bytes.get(11) {
        Some(0) => DfaKind::Dense,
        Some(1) => DfaKind::Sparse,
        _ => return Err(RulesError::Corrupt("unknown DFA kind byte")),
    };
    let header = Header {
        endian,
        kind,
        never: u16_at(bytes, 12),
        retry: u16_at(bytes, 14),
        dfa_len: u32_at(bytes, 16),
        checksum: u32_at(bytes, 20),
    };
    let expected = usize::try_from(header.dfa_len)
        .ok()
        .and_then(|n| n.checked_add(HEADER_LEN))
        .ok_or(RulesError::Corrupt("DFA length out of range"))?;
    if bytes.len() < expected {
        return Err(RulesError::Truncated {
            expected,
            found: bytes.len(),
        });
    }
    if bytes.len() > expected {
        return Err(RulesError::TrailingBytes {
            expected,
            found: bytes.len(),
        });
    }
    let dfa = bytes.get(HEADER_LEN..).unwrap_or(&[]);
    if fnv1a(dfa) != header.checksum {
        return Err(RulesError::Corrupt("checksum mismatch"));
    }
    if header.endian != Endian::NATIVE {
        return Err(RulesError::Endian(header.endian));
    }
    Ok((header, dfa))
}

/// FNV-1a, 32 bit: catches a damaged blob (not a forged one: the DFA's own
/// validation keeps a forged one from doing harm).
pub(crate) fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash: u32, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The header for a DFA of `dfa` bytes.
#[cfg(feature = "rules-compile")]
pub(crate) fn header(
    endian: Endian,
    kind: DfaKind,
    never: u16,
    retry: u16,
    dfa: &[u8],
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    let len = u32::try_from(dfa.len()).unwrap_or(u32::MAX);
    let fields: [&[u8]; 7] = [
        &MAGIC,
        &FORMAT_VERSION.to_le_bytes(),
        &[endian as u8, kind as u8],
        &never.to_le_bytes(),
        &retry.to_le_bytes(),
        &len.to_le_bytes(),
        &fnv1a(dfa).to_le_bytes(),
    ];
    let mut at = 0;
    for field in fields {
        for &b in field {
            if let Some(slot) = h.get_mut(at) {
                *slot = b;
            }
            at += 1;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_of_known_strings() {
        // The published FNV-1a 32 test values.
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn short_inputs_name_what_is_wrong() {
        assert!(matches!(split(b""), Err(RulesError::Foreign)));
        assert!(matches!(split(b"{}"), Err(RulesError::Foreign)));
        assert!(matches!(
            split(b"ARTRULES\x01"),
            Err(RulesError::Truncated {
                expected: HEADER_LEN,
                found: 9
            })
        ));
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8] = 2;
        assert!(matches!(split(&h), Err(RulesError::Version(2))));
        h[8] = 1;
        h[11] = 2;
        assert!(matches!(split(&h), Err(RulesError::Corrupt(_))));
        h[11] = 0;
        // An empty DFA with its checksum: the header alone is well formed.
        h[20..24].copy_from_slice(&fnv1a(b"").to_le_bytes());
        h[10] = u8::from(Endian::NATIVE == Endian::Little);
        assert!(matches!(split(&h), Err(RulesError::Endian(_))));
        h[10] = u8::from(Endian::NATIVE == Endian::Big);
        assert_eq!(split(&h).unwrap().1, b"");
        let mut longer = h.to_vec();
        longer.push(0);
        assert!(matches!(
            split(&longer),
            Err(RulesError::TrailingBytes {
                expected: 24,
                found: 25
            })
        ));
    }
}
