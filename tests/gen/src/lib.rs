//! Ahead-of-time DFA generator for `autoretry::classify`.
//!
//! Reads the JavaScript patterns of `src/classify/patterns.rs`, translates
//! them into `regex-automata` syntax with the semantics of section 3.1 of the
//! spec, builds minimized dense DFAs and renders the files of
//! `src/classify/dfa/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regex_automata::{
    dfa::{dense, StartKind},
    util::syntax,
};

#[path = "../../../src/classify/patterns.rs"]
pub mod patterns;

/// The command that regenerates the files, as written in their header.
pub const REGENERATE: &str = "cargo run --release --manifest-path tests/gen/Cargo.toml";

/// `.` of section 3.1: one Unicode scalar value other than the JavaScript
/// line terminators.
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
/// `\s` of section 3.1: ASCII white space.
const SPACE: &str = r"[\t\n\x0B\x0C\r ]";
/// `\s` inside a class.
const SPACE_IN_CLASS: &str = r"\t\n\x0B\x0C\r ";

/// Strips the delimiters of a JavaScript regex literal `/body/i`. Only the
/// `i` flag is accepted: section 3.1 pins down exactly that flag set.
pub fn literal_body(literal: &str) -> Result<&str, String> {
    literal
        .strip_prefix('/')
        .and_then(|rest| rest.strip_suffix("/i"))
        .ok_or_else(|| format!("not a /.../i literal: {literal}"))
}

/// Translates a JavaScript pattern (compiled with `i` and without `u`) into
/// `regex-automata` syntax (Unicode mode, no `(?i)`), following section 3.1:
/// ASCII letters become `[xX]`, `.` becomes `[^\n\r\x{2028}\x{2029}]`, `\d`
/// becomes `[0-9]`, `\s` becomes ASCII white space, `^` stays start of text.
/// Constructs whose meaning would differ (back-references, look-around,
/// `\w`, `\b`, ranges of letters, ...) are refused rather than guessed.
pub fn translate(js: &str) -> Result<String, String> {
    let mut out = String::with_capacity(js.len() * 4);
    let mut chars = js.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if in_class {
            match c {
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '\\' => match chars.next() {
                    Some('d') => out.push_str("0-9"),
                    Some('s') => out.push_str(SPACE_IN_CLASS),
                    Some(e) if e.is_ascii_punctuation() => push_hex(&mut out, e),
                    other => return Err(format!("unsupported escape in class: {other:?}")),
                },
                '-' if !out.ends_with('[') && chars.peek() != Some(&']') => {
                    return Err("ranges in classes are not supported".into());
                }
                c if c.is_ascii_alphabetic() => {
                    out.push(c.to_ascii_lowercase());
                    out.push(c.to_ascii_uppercase());
                }
                c if c.is_ascii_digit() => out.push(c),
                c if c.is_ascii() => push_hex(&mut out, c),
                c => out.push(c),
            }
            continue;
        }
        match c {
            '\\' => match chars.next() {
                Some('d') => out.push_str("[0-9]"),
                Some('s') => out.push_str(SPACE),
                Some(e) if e.is_ascii_punctuation() => {
                    out.push('\\');
                    out.push(e);
                }
                other => return Err(format!("unsupported escape: {other:?}")),
            },
            '.' => out.push_str(DOT),
            '[' => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    return Err("empty class".into());
                }
            }
            '(' => {
                out.push('(');
                if chars.peek() == Some(&'?') {
                    chars.next();
                    if chars.next() != Some(':') {
                        return Err("only (?: groups are supported".into());
                    }
                    out.push_str("?:");
                }
            }
            '^' | '$' | '|' | ')' | '*' | '+' | '?' | '{' | '}' | ',' => out.push(c),
            c if c.is_ascii_alphabetic() => {
                out.push('[');
                out.push(c.to_ascii_lowercase());
                out.push(c.to_ascii_uppercase());
                out.push(']');
            }
            c if c.is_ascii_alphanumeric() || c == ' ' || c == '_' || c == '-' => out.push(c),
            c if c.is_ascii() => push_hex(&mut out, c),
            c => out.push(c),
        }
    }
    if in_class {
        return Err("unterminated class".into());
    }
    Ok(out)
}

fn push_hex(out: &mut String, c: char) {
    let _ = write!(out, r"\x{{{:02X}}}", u32::from(c));
}

/// One DFA of the classifier.
pub struct Spec {
    /// File stem (lowercase).
    pub name: String,
    /// The JavaScript source it was translated from.
    pub js: &'static str,
    /// The translated regex.
    pub regex: String,
}

/// The DFAs: retryable (3.2), one per overflow pattern (3.3), usage limit
/// (3.4), in this order.
///
/// The overflow patterns are not joined into one alternation: their `.*`
/// parts multiply the states of a joint DFA (about 16 MB dense, 8.5 MB
/// sparse); one DFA per pattern is a few KB each.
pub fn specs() -> Result<Vec<Spec>, String> {
    let mut specs = vec![Spec {
        name: "retryable".into(),
        js: patterns::RETRYABLE,
        regex: translate(patterns::RETRYABLE)?,
    }];
    for (i, literal) in patterns::OVERFLOW.iter().enumerate() {
        specs.push(Spec {
            name: format!("overflow_{i:02}"),
            js: literal,
            regex: translate(literal_body(literal)?)?,
        });
    }
    specs.push(Spec {
        name: "usage_limit".into(),
        js: patterns::USAGE_LIMIT,
        regex: translate(patterns::USAGE_LIMIT)?,
    });
    Ok(specs)
}

/// Builds the minimized, unanchored dense DFA of a translated regex.
pub fn build_dense(regex: &str) -> Result<dense::DFA<Vec<u32>>, String> {
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .minimize(true)
                .start_kind(StartKind::Unanchored),
        )
        // Unicode mode on (so the `.` class is whole scalar values), no
        // case folding at all: the translation did the ASCII folding.
        .syntax(
            syntax::Config::new()
                .unicode(true)
                .utf8(true)
                .case_insensitive(false),
        )
        .build(regex)
        .map_err(|e| format!("{regex}: {e}"))
}

/// One built DFA, serialized.
pub struct Built {
    /// The spec it was built from.
    pub spec: Spec,
    /// Dense, little-endian bytes (without alignment padding).
    pub le: Vec<u8>,
    /// Dense, big-endian bytes (without alignment padding).
    pub be: Vec<u8>,
    /// Size of the sparse equivalent, little-endian, for the report.
    pub sparse_len: usize,
    /// Alphabet (byte classes) length.
    pub classes: usize,
}

/// Builds every DFA.
pub fn build_all() -> Result<Vec<Built>, String> {
    specs()?
        .into_iter()
        .map(|spec| {
            let dfa = build_dense(&spec.regex)?;
            let (le, pad) = dfa.to_bytes_little_endian();
            let (be, bpad) = dfa.to_bytes_big_endian();
            let sparse = dfa.to_sparse().map_err(|e| e.to_string())?;
            Ok(Built {
                le: le[pad..].to_vec(),
                be: be[bpad..].to_vec(),
                sparse_len: sparse.to_bytes_little_endian().len(),
                classes: dfa.alphabet_len(),
                spec,
            })
        })
        .collect()
}

/// Renders the generated `mod.rs`.
pub fn render_mod(built: &[Built]) -> String {
    let mut s = String::new();
    s.push_str("// DO NOT EDIT THIS FILE. IT WAS AUTOMATICALLY GENERATED BY:\n//\n");
    let _ = writeln!(s, "//     {REGENERATE}\n//");
    s.push_str("// from src/classify/patterns.rs; `-- --check` verifies it.\n\n");
    s.push_str(
        "//! The classifier's DFAs, serialized ahead of time (dense, minimized,\n\
         //! unanchored). Each has a little-endian and a big-endian file;\n\
         //! `cfg(target_endian)` picks one. They are validated once, on first use.\n\n",
    );
    s.push_str(
        "use regex_automata::{\n    \
         dfa::dense::DFA,\n    \
         util::{lazy::Lazy, wire::DeserializeError},\n\
         };\n\n",
    );
    s.push_str("/// The type of every DFA here.\npub(super) type Dfa = DFA<&'static [u32]>;\n\n");
    s.push_str(
        "/// A DFA, deserialized (and validated) on first use.\n\
         pub(super) type Table = Lazy<Result<Dfa, DeserializeError>>;\n\n",
    );
    s.push_str(
        "/// Forces the 4-byte alignment that `DFA::from_bytes` requires.\n\
         #[repr(C)]\n\
         struct Aligned<B: ?Sized> {\n    \
         _align: [u32; 0],\n    \
         bytes: B,\n\
         }\n\n",
    );
    s.push_str(
        "fn load(aligned: &'static Aligned<[u8]>) -> Result<Dfa, DeserializeError> {\n    \
         DFA::from_bytes(&aligned.bytes).map(|(dfa, _)| dfa)\n\
         }\n\n",
    );
    s.push_str(
        "macro_rules! table {\n    \
         ($le:literal, $be:literal) => {\n        \
         Lazy::new(|| {\n            \
         #[cfg(target_endian = \"little\")]\n            \
         static ALIGNED: &Aligned<[u8]> = &Aligned {\n                \
         _align: [],\n                \
         bytes: *include_bytes!($le),\n            \
         };\n            \
         #[cfg(target_endian = \"big\")]\n            \
         static ALIGNED: &Aligned<[u8]> = &Aligned {\n                \
         _align: [],\n                \
         bytes: *include_bytes!($be),\n            \
         };\n            \
         load(ALIGNED)\n        \
         })\n    \
         };\n\
         }\n",
    );
    let overflow: Vec<&Built> = built
        .iter()
        .filter(|b| b.spec.name.starts_with("overflow_"))
        .collect();
    for b in built {
        // Doc comments on statics, plain comments on array elements.
        let doc = |s: &mut String, prefix: &str| {
            let _ = write!(
                s,
                "{prefix} `{}` ({} bytes), as\n{prefix} `{}`\n",
                b.spec.js,
                b.le.len(),
                b.spec.regex
            );
        };
        let entry = format!("table!(\"{n}.le.bin\", \"{n}.be.bin\")", n = b.spec.name);
        match b.spec.name.as_str() {
            "retryable" | "usage_limit" => {
                s.push('\n');
                let _ = writeln!(
                    s,
                    "/// Spec {}:",
                    if b.spec.name == "retryable" {
                        "3.2"
                    } else {
                        "3.4"
                    }
                );
                doc(&mut s, "///");
                let _ = writeln!(
                    s,
                    "pub(super) static {}: Table = {entry};",
                    b.spec.name.to_ascii_uppercase()
                );
            }
            _ => {
                if std::ptr::eq(b, overflow[0]) {
                    let _ = write!(
                        s,
                        "\n/// Spec 3.3: one DFA per text pattern.\n\
                         pub(super) static OVERFLOW: [Table; {}] = [\n",
                        overflow.len()
                    );
                }
                doc(&mut s, "    //");
                let _ = writeln!(s, "    {entry},");
                if std::ptr::eq(b, overflow[overflow.len() - 1]) {
                    s.push_str("];\n");
                }
            }
        }
    }
    s
}

/// Every generated file: (file name, contents).
pub fn files(built: &[Built]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for b in built {
        files.push((format!("{}.le.bin", b.spec.name), b.le.clone()));
        files.push((format!("{}.be.bin", b.spec.name), b.be.clone()));
    }
    files.push(("mod.rs".to_string(), render_mod(built).into_bytes()));
    files
}

/// `src/classify/dfa/` of the main crate.
pub fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/classify/dfa")
}

/// The names of the generated files that differ from (or are missing in)
/// `dir`, and of the files in `dir` that the generator would not write.
pub fn drift(dir: &Path, files: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut stale: Vec<String> = files
        .iter()
        .filter(|(name, bytes)| std::fs::read(dir.join(name)).ok().as_deref() != Some(bytes))
        .map(|(name, _)| name.clone())
        .collect();
    stale.extend(strays(dir, files));
    stale
}

/// Files in `dir` that the generator would not write.
pub fn strays(dir: &Path, files: &[(String, Vec<u8>)]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut strays: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !files.iter().any(|(f, _)| f == name))
        .collect();
    strays.sort();
    strays
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::{dfa::Automaton, Input};

    fn is_match(regex: &str, text: &str) -> bool {
        let dfa = build_dense(regex).unwrap();
        dfa.try_search_fwd(&Input::new(text).earliest(true))
            .unwrap()
            .is_some()
    }

    #[test]
    fn translates_letters_dot_and_classes() {
        assert_eq!(translate("ab").unwrap(), "[aA][bB]");
        assert_eq!(
            translate("a.?b").unwrap(),
            r"[aA][^\n\r\x{2028}\x{2029}]?[bB]"
        );
        assert_eq!(translate(r"\d+\s*").unwrap(), r"[0-9]+[\t\n\x0B\x0C\r ]*");
        assert_eq!(translate("[_ ]").unwrap(), r"[\x{5F}\x{20}]");
        assert_eq!(translate("[a_]").unwrap(), r"[aA\x{5F}]");
        assert_eq!(translate(r"^4(00|13)\(x\)").unwrap(), r"^4(00|13)\([xX]\)");
        assert_eq!(translate("429|500").unwrap(), "429|500");
        assert_eq!(translate("x_y-z").unwrap(), "[xX]_[yY]-[zZ]");
    }

    #[test]
    fn refuses_what_it_cannot_translate() {
        for bad in [r"\w", r"\b", r"\1", "(?=a)", "[a-z]", "[", "[]", r"\u0041"] {
            assert!(translate(bad).is_err(), "{bad}");
        }
        assert!(literal_body("/a/g").is_err());
        assert!(literal_body("a").is_err());
        assert_eq!(literal_body("/a/i").unwrap(), "a");
    }

    #[test]
    fn semantics_of_section_3_1() {
        let re = translate("rate.?limit").unwrap();
        assert!(is_match(&re, "RATE LIMIT"));
        assert!(is_match(&re, "rate😀limit"));
        assert!(is_match(&re, "rate—limit"));
        assert!(is_match(&re, "ratelimit"));
        assert!(!is_match(&re, "rate\u{2028}limit"));
        assert!(!is_match(&re, "rate\u{2029}limit"));
        assert!(!is_match(&re, "rate\nlimit"));
        assert!(!is_match(&re, "rate\rlimit"));
        assert!(!is_match(&re, "rate\u{212A}imit"));
        assert!(!is_match(&re, "rate lımit"));
        let re = translate("service").unwrap();
        assert!(!is_match(&re, "ſervice"));
        assert!(is_match(&re, "SeRvIcE"));
        let re = translate(r"a\sb\d").unwrap();
        assert!(is_match(&re, "a\u{0B}b1"));
        assert!(!is_match(&re, "a\u{A0}b1"));
        assert!(!is_match(&re, "a b١"));
    }

    #[test]
    fn anchored_alternative_stays_anchored() {
        let specs = specs().unwrap();
        let anchored = &specs.iter().find(|s| s.js.contains('^')).unwrap().regex;
        assert!(is_match(anchored, "400 (no body)"));
        assert!(is_match(anchored, "413\u{0B}status code\u{0C}(no body)"));
        assert!(is_match(anchored, "400 STATUS CODE(NO BODY) trailing"));
        assert!(!is_match(anchored, "x 400 (no body)"));
        assert!(!is_match(anchored, "\n400 (no body)"));
        assert!(!is_match(anchored, "413 \u{A0}(no body)"));
    }

    /// Rebuilds every DFA from the pattern source and fails if the committed
    /// files under `src/classify/dfa/` differ.
    #[test]
    fn committed_dfas_do_not_drift() {
        let built = build_all().unwrap();
        let stale = drift(&out_dir(), &files(&built));
        assert!(
            stale.is_empty(),
            "stale generated files {stale:?}: run `{REGENERATE}`"
        );
    }
}
