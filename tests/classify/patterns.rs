//! The patterns of `autoretry::classify::patterns` are the spec's, as
//! written in `docs/retry-policy.md` (the indented blocks of sections 3.2,
//! 3.3, 10.5 and 13.2, and the throttle exception of 13.2).

use autoretry::classify::patterns;

/// The indented blocks (six spaces) of the spec's section that starts
/// with `heading`, in order, each joined into one line per pattern.
fn blocks(heading: &str) -> Vec<Vec<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/retry-policy.md");
    let spec = std::fs::read_to_string(path).expect("the spec");
    let start = spec.find(heading).expect(heading);
    let section = &spec[start..];
    let end = section[heading.len()..]
        .find("\n### ")
        .map_or(section.len(), |e| e + heading.len());
    // A block starts after an empty line (a list item's indented
    // continuation does not).
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut open = false;
    let mut after_empty = false;
    for line in section[..end].lines() {
        match line.strip_prefix("    ").map(str::trim) {
            Some(p) if !p.is_empty() && (open || after_empty) => {
                if !open {
                    out.push(Vec::new());
                    open = true;
                }
                // A literal ends where its trailing note starts.
                let p = p.split("     (").next().unwrap_or(p).trim_end();
                out.last_mut().expect("a block").push(p.to_owned());
            }
            _ => open = false,
        }
        after_empty = line.trim().is_empty();
    }
    out
}

#[test]
fn classic_and_extended_patterns_are_the_spec_s() {
    assert_eq!(
        blocks("### 3.2 Retryable pattern")[0],
        [patterns::RETRYABLE]
    );
    assert_eq!(blocks("### 3.3 Context overflow")[0], patterns::OVERFLOW);
    let ext = blocks("### 10.5 The extended classifier");
    assert_eq!(ext[0], [patterns::RETRYABLE_EXTENDED]);
    assert_eq!(ext[1], [patterns::USAGE_LIMIT_EXTENDED]);
    assert_eq!(ext[2], patterns::OVERFLOW_EXTENDED);
}

#[test]
fn curated_patterns_are_the_spec_s() {
    let heading = "### 13.2 The curated classifier";
    let cur = blocks(heading);
    assert_eq!(cur.len(), 4, "{cur:?}");
    assert_eq!(cur[0], [patterns::RETRYABLE_CURATED]);
    assert_eq!(cur[1], [patterns::USAGE_LIMIT_CURATED]);
    assert_eq!(cur[2], [patterns::NEVER_CURATED]);
    assert_eq!(cur[3], patterns::OVERFLOW_CURATED);
    // The throttle exception is written inline, in backquotes.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/retry-policy.md");
    let spec = std::fs::read_to_string(path).expect("the spec");
    let section = &spec[spec.find(heading).expect(heading)..];
    let lead = "does not count in a text that also matches";
    let after = &section[section.find(lead).expect(lead) + lead.len()..];
    let quoted = after.split('`').nth(1).expect("a quoted pattern");
    assert_eq!(quoted, patterns::TOO_MANY_TOKENS_THROTTLE);
}
