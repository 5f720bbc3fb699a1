//! The alphabet of the classifier's tables: one symbol per character.
//!
//! This file is the one definition of the symbols. The crate steps its
//! tables on them (`super::table`), and the generator (`tools/dfa-gen/`)
//! includes this same file with `#[path]` to build the tables, so the two
//! cannot disagree.
//!
//! - `0..128`: the ASCII character of that code (an upper-case letter is
//!   given the class of its lower-case letter by every table, which is the
//!   ASCII-only case folding of spec 3.1);
//! - [`OTHER`]: every other scalar value, U+FFFD (an invalid UTF-8 subpart)
//!   included;
//! - [`LS`], [`PS`]: U+2028 and U+2029, which `.` does not match.
//!
//! The patterns name only ASCII characters, so no other distinction
//! matters; the generator checks that every non-ASCII scalar value steps
//! exactly like its symbol, from every state, before it writes a table.

/// Any non-ASCII scalar value other than U+2028 and U+2029.
pub const OTHER: u8 = 128;
/// U+2028 LINE SEPARATOR.
pub const LS: u8 = 129;
/// U+2029 PARAGRAPH SEPARATOR.
pub const PS: u8 = 130;
/// Number of symbols.
pub const SYMBOLS: usize = 131;

/// The symbol of one character.
// The crate reads symbols straight from UTF-8 bytes; this is the reference
// its tests and the generator use.
#[cfg_attr(not(test), allow(dead_code))]
pub const fn of_char(c: char) -> u8 {
    match c {
        '\u{2028}' => LS,
        '\u{2029}' => PS,
        // An ASCII character is its own code, below 128.
        c if c.is_ascii() => c as u8,
        _ => OTHER,
    }
}
