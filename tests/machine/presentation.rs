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
