//! Compiled blobs: the committed example is what `autoretry rules compile`
//! writes today, and a truncated, damaged, foreign, misaligned or
//! wrong-endian blob is refused cleanly (an error, never a panic).

use autoretry::rules::{
    DfaKind, Endian, RuleSet, Rules, RulesError, FORMAT_VERSION, HEADER_LEN, MAGIC,
};
use autoretry_testkit::rules_fuzz::{aligned, checksum, example_blobs, EXAMPLE_JSON};

/// `bytes` loaded in place from a 4-byte aligned copy.
fn load(bytes: &[u8]) -> Result<(), RulesError> {
    let (buf, at) = aligned(bytes);
    Rules::from_bytes(&buf[at..at + bytes.len()]).map(|rules| {
        let _ = rules.verdict("stream stalled: E_GATEWAY_504, insufficient funds");
    })
}

#[test]
fn the_committed_example_blob_is_current() {
    let committed = include_bytes!("example.bin");
    let [sparse, _] = example_blobs();
    assert!(
        committed[..] == sparse[..],
        "tests/rules/example.bin is stale: regenerate it with \
         `cargo run -- rules compile tests/rules/example.json -o tests/rules/example.bin` \
         (the firmware includes it too)"
    );
}

#[test]
fn json_and_both_blob_kinds_give_the_same_verdicts() {
    let set = RuleSet::from_json(EXAMPLE_JSON).unwrap();
    let compiled = Rules::compile(&set).unwrap();
    let texts = [
        "stream stalled",
        "Stream idle timeout after 30s",
        "HTTP 502 upstream_error",
        "upstream_errors",
        "please retry your request",
        "E_GATEWAY_504",
        "E_GATEWAY_5040",
        "503 billing: insufficient funds",
        "insufficient_funds",
        "tool error: exit 1",
        "the tool error: exit 1",
        "stream stalled\ntool error: x",
        "",
    ];
    let [sparse, dense] = example_blobs();
    for blob in [sparse, dense] {
        let (buf, at) = aligned(blob);
        let loaded = Rules::from_bytes(&buf[at..at + blob.len()]).unwrap();
        assert_eq!((loaded.never_len(), loaded.retry_len()), (3, 4));
        for text in texts {
            assert_eq!(loaded.verdict(text), compiled.verdict(text), "{text:?}");
        }
        let owned = Rules::load(blob).unwrap();
        for text in texts {
            assert_eq!(owned.verdict(text), compiled.verdict(text), "{text:?}");
        }
    }
    let verdicts: Vec<_> = texts.iter().map(|t| compiled.verdict(t)).collect();
    assert_eq!(
        verdicts,
        [
            Some(true),
            Some(true),
            Some(true),
            None,
            Some(true),
            Some(true),
            None,
            Some(false),
            Some(false),
            Some(false),
            None,
            Some(true),
            None
        ]
    );
}

#[test]
fn every_truncation_is_refused() {
    for blob in example_blobs() {
        for len in 0..blob.len() {
            match load(&blob[..len]) {
                Err(RulesError::Foreign) if len == 0 => {}
                Err(RulesError::Truncated { expected, found })
                    if found == len && (expected == HEADER_LEN || expected == blob.len()) => {}
                other => panic!("truncated to {len} of {}: {other:?}", blob.len()),
            }
        }
        let mut longer = blob.clone();
        longer.push(0);
        assert!(matches!(
            load(&longer),
            Err(RulesError::TrailingBytes { expected, found }) if expected == blob.len() && found == blob.len() + 1
        ));
    }
}

#[test]
fn a_damaged_blob_is_refused_by_its_checksum_or_its_validation() {
    for blob in example_blobs() {
        // Without the checksum repaired: every flip in the DFA is caught.
        for at in (HEADER_LEN..blob.len()).step_by(97) {
            let mut bad = blob.clone();
            bad[at] ^= 0x5A;
            assert!(
                matches!(load(&bad), Err(RulesError::Corrupt("checksum mismatch"))),
                "flip at {at}"
            );
        }
        // With it repaired, regex-automata's validation decides; a blob it
        // accepts is searched without a panic.
        let (mut refused, mut accepted) = (0, 0);
        for at in (HEADER_LEN..blob.len()).step_by(13) {
            for value in [0x00, 0xFF, blob[at] ^ 0x01] {
                let mut bad = blob.clone();
                bad[at] = value;
                let sum = checksum(&bad[HEADER_LEN..]);
                bad[20..24].copy_from_slice(&sum.to_le_bytes());
                match load(&bad) {
                    Ok(()) => accepted += 1,
                    Err(RulesError::Dfa(_) | RulesError::Corrupt(_)) => refused += 1,
                    Err(other) => panic!("damage at {at}: {other:?}"),
                }
            }
        }
        println!("repaired damage: {refused} refused, {accepted} accepted");
        assert!(refused > 0);
    }
}

#[test]
fn the_header_is_checked_field_by_field() {
    let [sparse, dense] = example_blobs();
    let mut foreign = sparse.clone();
    foreign[0] = b'X';
    assert!(matches!(load(&foreign), Err(RulesError::Foreign)));
    assert!(matches!(
        load(b"\x7fELF\x01\x01\x01"),
        Err(RulesError::Foreign)
    ));
    assert!(matches!(
        load(br#"{"retry": []}"#),
        Err(RulesError::Foreign)
    ));
    assert_eq!(&sparse[..8], MAGIC);

    let mut version = sparse.clone();
    version[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert!(matches!(load(&version), Err(RulesError::Version(v)) if v == FORMAT_VERSION + 1));

    for (at, value) in [(10, 2), (11, 2)] {
        let mut bad = sparse.clone();
        bad[at] = value;
        assert!(
            matches!(load(&bad), Err(RulesError::Corrupt(_))),
            "byte {at}"
        );
    }
    // The rule counts against the DFA's patterns.
    let mut counts = sparse.clone();
    counts[12] += 1;
    assert!(matches!(
        load(&counts),
        Err(RulesError::Corrupt(
            "the rule counts do not match the DFA's patterns"
        ))
    ));
    // The kind byte against the DFA.
    let mut kind = dense.clone();
    kind[11] = DfaKind::Sparse as u8;
    assert!(matches!(load(&kind), Err(RulesError::Dfa(_))));
}

#[test]
fn the_other_byte_order_is_refused_by_name() {
    let rules = Rules::compile(&RuleSet::from_json(EXAMPLE_JSON).unwrap()).unwrap();
    let other = match Endian::NATIVE {
        Endian::Little => Endian::Big,
        Endian::Big => Endian::Little,
    };
    for kind in [DfaKind::Dense, DfaKind::Sparse] {
        let blob = rules.to_bytes(other, kind).unwrap();
        let err = load(&blob).unwrap_err();
        assert!(matches!(err, RulesError::Endian(e) if e == other));
        assert!(err.to_string().contains(&format!(
            "compile it with --endian {}",
            Endian::NATIVE.as_str()
        )));
    }
}

#[test]
fn alignment_is_checked_for_dense_blobs_only() {
    let [sparse, dense] = example_blobs();
    for (blob, must_align) in [(dense, true), (sparse, false)] {
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(blob);
        let (buf, at) = aligned(&shifted);
        let result = Rules::from_bytes(&buf[at + 1..at + shifted.len()]);
        if must_align {
            let err = result.unwrap_err();
            assert!(matches!(err, RulesError::Misaligned));
            assert!(err.to_string().contains("include_rules!"));
        } else {
            assert_eq!(result.unwrap().verdict("stream stalled"), Some(true));
        }
        // `Rules::load` copies to an aligned address itself.
        assert_eq!(
            Rules::load(&buf[at + 1..at + shifted.len()])
                .unwrap()
                .verdict("stream stalled"),
            Some(true)
        );
    }
}

#[test]
fn a_sparse_blob_does_not_turn_dense() {
    let [sparse, _] = example_blobs();
    let rules = Rules::load(sparse).unwrap();
    assert_eq!(rules.kind(), DfaKind::Sparse);
    assert!(matches!(
        rules.to_bytes(Endian::NATIVE, DfaKind::Dense),
        Err(RulesError::SparseToDense)
    ));
    assert_eq!(
        &rules.to_bytes(Endian::NATIVE, DfaKind::Sparse).unwrap(),
        sparse
    );
}
