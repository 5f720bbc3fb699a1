//! Terminal texts (spec §8, §10.7).

use autoretry::{Event, FailureLine, FinalError, LoaderLine};

#[test]
fn the_loader_line_rounds_seconds_half_up() {
    let line = |attempt, delay_ms| {
        LoaderLine {
            attempt,
            max_attempts: 3,
            delay_ms,
        }
        .to_string()
    };
    assert_eq!(
        line(1, 2000),
        "Retrying (1/3) in 2s\u{2026} (esc to cancel)"
    );
    assert_eq!(
        line(2, 1500),
        "Retrying (2/3) in 2s\u{2026} (esc to cancel)"
    );
    assert_eq!(
        line(2, 1499),
        "Retrying (2/3) in 1s\u{2026} (esc to cancel)"
    );
    assert_eq!(line(1, 0), "Retrying (1/3) in 0s\u{2026} (esc to cancel)");
    assert_eq!(
        line(1, u64::MAX),
        "Retrying (1/3) in 18446744073709552s\u{2026} (esc to cancel)"
    );
}

#[test]
fn the_failure_line_always_says_attempts() {
    let failed = |attempt, final_error: Option<&str>| {
        FailureLine {
            attempt,
            final_error: final_error.map(FinalError::Text),
        }
        .to_string()
    };
    assert_eq!(
        failed(3, Some("overloaded_error")),
        "Retry failed after 3 attempts: overloaded_error"
    );
    assert_eq!(
        failed(1, Some("")),
        "Retry failed after 1 attempts: Unknown error"
    );
    assert_eq!(
        failed(0, None),
        "Retry failed after 0 attempts: Unknown error"
    );
}

#[test]
fn events_display_as_their_terminal_text() {
    let end = Event::End {
        success: false,
        attempt: 1,
        final_error: Some(FinalError::Text("Retry cancelled")),
    };
    assert_eq!(
        end.to_string(),
        "Retry failed after 1 attempts: Retry cancelled"
    );
    let ok = Event::End {
        success: true,
        attempt: 1,
        final_error: None,
    };
    assert_eq!(ok.to_string(), "");
}

#[test]
fn the_fail_fast_end_shows_its_sentence() {
    // Spec 10.7's example.
    let end = Event::End {
        success: false,
        attempt: 0,
        final_error: Some(FinalError::WaitTooLong {
            requested_ms: 11_180_000,
            max_delay_ms: 300_000,
            error: "429 rate_limit_error".into(),
        }),
    };
    assert_eq!(
        end.to_string(),
        "Retry failed after 0 attempts: Provider requested 11180000ms wait, exceeds \
         retry.maxDelayMs (300000ms). Original error: 429 rate_limit_error"
    );
    // Even an empty original error keeps the sentence (it is never empty).
    let empty = FinalError::WaitTooLong {
        requested_ms: u64::MAX,
        max_delay_ms: 1,
        error: "".into(),
    };
    assert!(!empty.is_empty());
    assert_eq!(
        FailureLine {
            attempt: 2,
            final_error: Some(empty)
        }
        .to_string(),
        "Retry failed after 2 attempts: Provider requested 18446744073709551615ms wait, \
         exceeds retry.maxDelayMs (1ms). Original error: "
    );
}

#[test]
fn final_errors_compare_by_their_text() {
    let e = FinalError::WaitTooLong {
        requested_ms: 5,
        max_delay_ms: 4,
        error: "x".into(),
    };
    let text = "Provider requested 5ms wait, exceeds retry.maxDelayMs (4ms). Original error: x";
    assert_eq!(e, text);
    assert_ne!(e, &text[..text.len() - 1]);
    assert_ne!(e, format!("{text}y").as_str());
    assert_eq!(FinalError::Text("a"), "a");
    assert_ne!(FinalError::Text("a"), "");
    assert_eq!(FinalError::from("a"), FinalError::Text("a"));
    assert_eq!(e.original(), "x");
}

/// The sentences are written piece by piece without `core::fmt` (the
/// WebAssembly module links none of it): every number of `u64` writes its
/// decimal digits, and `Display`, `==` and `write_into` agree on the text.
#[test]
fn sentences_write_every_number_in_decimal() {
    use autoretry::ErrorText;
    let numbers = [
        0,
        1,
        9,
        10,
        99,
        100,
        1_000_000_007,
        u64::MAX / 10,
        u64::MAX - 1,
        u64::MAX,
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut more = Vec::new();
    for _ in 0..2000 {
        // SplitMix64's step, enough spread over every digit count.
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        more.push((z ^ (z >> 31)) >> (seed % 64));
    }
    for &n in numbers.iter().chain(&more) {
        let m = n.rotate_left(17);
        let digits = n.to_string();
        let stalled = ErrorText::Stalled { silence_ms: n };
        let sentence = format!("Stream stalled: no event for {digits}ms");
        assert_eq!(stalled.to_string(), sentence);
        assert_eq!(stalled, sentence.as_str());
        assert_ne!(stalled, &sentence[..sentence.len() - 1]);
        assert_eq!(format!("{stalled:?}"), format!("{sentence:?}"));
        assert_eq!(stalled.len(), sentence.len());
        let mut buf = [0; ErrorText::STALLED_MAX_LEN];
        assert_eq!(stalled.write_into(&mut buf), Some(sentence.as_str()));
        assert_eq!(stalled.write_into(&mut buf[..sentence.len() - 1]), None);
        let ends = [
            (
                FinalError::WaitTooLong {
                    requested_ms: n,
                    max_delay_ms: m,
                    error: stalled,
                },
                format!(
                    "Provider requested {n}ms wait, exceeds retry.maxDelayMs ({m}ms). \
                     Original error: {sentence}"
                ),
            ),
            (
                FinalError::TotalWait {
                    total_ms: m,
                    max_total_delay_ms: n,
                    error: "e".into(),
                },
                format!(
                    "Retry waits would total {m}ms, exceeds retry.maxTotalDelayMs ({n}ms). \
                     Original error: e"
                ),
            ),
            (
                FinalError::Throttled { error: stalled },
                format!("Retry throttled by the shared retry budget. Original error: {sentence}"),
            ),
            (FinalError::Stalled { silence_ms: n }, sentence.clone()),
        ];
        for (end, text) in ends {
            assert_eq!(end.to_string(), text);
            assert_eq!(end, text.as_str());
            assert_ne!(end, format!("{text}0").as_str());
        }
    }
}
