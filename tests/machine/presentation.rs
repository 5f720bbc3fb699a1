//! Terminal texts (spec §8).

use autoretry::{Event, FailureLine, LoaderLine};

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
    let failed = |attempt, final_error| {
        FailureLine {
            attempt,
            final_error,
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
        final_error: Some("Retry cancelled"),
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
