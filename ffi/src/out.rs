//! The outputs' and the state's JSON, written into the host's buffer by the
//! same `Serialize` impls as every other path (`wire`), through
//! `serde-json-core` (no allocator): one encoder for the outputs' JSON.
//!
//! One byte-level difference is mended here. For a control character
//! without a short escape (U+0000–U+001F other than `\b \t \n \f \r`)
//! serde-json-core writes the hex digits of `\u00XX` upper-case
//! (`\u001F`), serde_json lower-case (`\u001f`). Both are the same JSON
//! string, but the ABI answers byte for byte what the RPC stream and the
//! vectors' tooling write, so [`lower_hex_escapes`] lowers those digits in
//! the written text. Everything else (numbers up to `u64::MAX`, `null`,
//! the other escapes, U+2028/U+2029 and DEL left as they are) is already
//! identical; the tests below compare every char and random outputs with
//! serde_json.

use serde::Serialize;

use super::codes::ERR_OUT_TOO_SMALL;
use autoretry::{Output, RetryState};

/// Writes `[output, ...]`; returns the length or [`ERR_OUT_TOO_SMALL`].
pub(super) fn outputs(out: &mut [u8], outputs: &[Output<'_>]) -> i32 {
    write(out, outputs)
}

/// Writes the state, `{"autoRetryEnabled":..,"isRetrying":..,"retryAttempt":..}`;
/// returns the length or [`ERR_OUT_TOO_SMALL`].
pub(super) fn state(out: &mut [u8], state: &RetryState) -> i32 {
    write(out, state)
}

/// Serializes `value` into `out`: the length, or [`ERR_OUT_TOO_SMALL`]
/// (also for a length beyond `i32::MAX`, which the return value cannot
/// carry).
fn write<T: Serialize + ?Sized>(out: &mut [u8], value: &T) -> i32 {
    let Ok(len) = serde_json_core::to_slice(value, out) else {
        return ERR_OUT_TOO_SMALL;
    };
    let Some(json) = out.get_mut(..len) else {
        return ERR_OUT_TOO_SMALL;
    };
    lower_hex_escapes(json);
    i32::try_from(len).unwrap_or(ERR_OUT_TOO_SMALL)
}

/// Lowers the hex digits of every `\uXXXX` escape in serialized JSON.
///
/// Outside strings the JSON of the outputs has no backslash (keys are
/// fixed ASCII names), and inside one every backslash starts an escape: a
/// text's own `\` is written `\\`. So scanning from the start, each `\`
/// begins either a two-byte escape (`\\`, `\"`, `\n`, ...) or a six-byte
/// `\uXXXX`, and only the latter's four digits change.
fn lower_hex_escapes(json: &mut [u8]) {
    let mut i = 0;
    while let Some(&byte) = json.get(i) {
        if byte != b'\\' {
            i += 1;
        } else if json.get(i + 1) == Some(&b'u') {
            if let Some(digits) = json.get_mut(i + 2..i + 6) {
                digits.make_ascii_lowercase();
            }
            i += 6;
        } else {
            i += 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{outputs, state, ERR_OUT_TOO_SMALL};
    use autoretry::{Event, FinalError, Output, RetryState, TimerId};
    use proptest::prelude::*;

    fn ours(value: &[Output<'_>]) -> Vec<u8> {
        let mut out = vec![0; 2 + value.len() * 256 + texts_len(value) * 6];
        let n = outputs(&mut out, value);
        assert!(n >= 0, "error {n}");
        out.truncate(n as usize);
        out
    }

    fn texts_len(value: &[Output<'_>]) -> usize {
        value
            .iter()
            .map(|o| match o {
                Output::Emit(Event::Start { error_message, .. }) => error_message.len(),
                Output::Emit(Event::End {
                    final_error: Some(text),
                    ..
                }) => text.to_string().len(),
                _ => 0,
            })
            .sum()
    }

    fn start(text: &str) -> Output<'_> {
        Output::Emit(Event::Start {
            attempt: u32::MAX,
            max_attempts: u32::MAX,
            delay_ms: u64::MAX,
            error_message: text.into(),
        })
    }

    /// Escapes are per char in both encoders, so one text holding every
    /// Unicode scalar value settles string escaping for all texts.
    #[test]
    fn every_char_escapes_as_serde_json_does() {
        let every: String = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .collect();
        for text in [every.as_str(), "\\u001F \\\\u001F \u{1f}\\\u{1f}\""] {
            let value = [start(text)];
            assert_eq!(ours(&value), serde_json::to_vec(&value).unwrap());
        }
    }

    #[test]
    fn too_small_a_buffer_is_an_error_at_every_length() {
        let start = [
            start("overloaded \u{1}"),
            Output::DropTrailingError,
            Output::Sleep {
                ms: 2000,
                timer: TimerId(1),
            },
        ];
        // The fail-fast sentence is written piece by piece (`collect_str`).
        let fail_fast = [
            Output::Emit(Event::End {
                success: false,
                attempt: 2,
                final_error: Some(FinalError::WaitTooLong {
                    requested_ms: 11_180_000,
                    max_delay_ms: 300_000,
                    error: "usage limit \u{1f} \"quoted\"".into(),
                }),
            }),
            Output::Settled,
            Output::CheckCompaction,
        ];
        for value in [&start[..], &fail_fast[..]] {
            let want = serde_json::to_vec(value).unwrap();
            for cap in 0..want.len() {
                let mut out = vec![0; cap];
                assert_eq!(outputs(&mut out, value), ERR_OUT_TOO_SMALL, "{cap}");
            }
            let mut out = vec![0; want.len()];
            assert_eq!(outputs(&mut out, value), want.len() as i32);
            assert_eq!(out, want);
        }
    }

    /// A text biased to what escaping treats specially.
    fn text() -> impl Strategy<Value = String> {
        let special = prop_oneof![
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            Just('"'),
            Just('\\'),
            Just('u'),
            Just('\u{7f}'),
            Just('\u{2028}'),
            Just('\u{2029}'),
            Just('\u{fffd}'),
            any::<char>(),
        ];
        prop_oneof![
            any::<String>(),
            proptest::collection::vec(special, 0..40).prop_map(String::from_iter),
        ]
    }

    #[derive(Debug, Clone)]
    enum Shape {
        Start(u32, u32, u64, String),
        End(bool, u32, Option<String>),
        FailFast(u32, u64, u64, String),
        Sleep(u64, u64),
        Cancel(u64),
        Mark(Option<u64>),
        Plain(u8),
    }

    fn shape() -> impl Strategy<Value = Shape> {
        let num = prop_oneof![Just(u64::MAX), Just(0), any::<u64>()];
        prop_oneof![
            (any::<u32>(), any::<u32>(), num.clone(), text())
                .prop_map(|(a, m, d, t)| Shape::Start(a, m, d, t)),
            (any::<bool>(), any::<u32>(), proptest::option::of(text()))
                .prop_map(|(s, a, f)| Shape::End(s, a, f)),
            (any::<u32>(), num.clone(), num.clone(), text())
                .prop_map(|(a, r, m, t)| Shape::FailFast(a, r, m, t)),
            (num.clone(), num.clone()).prop_map(|(ms, t)| Shape::Sleep(ms, t)),
            num.clone().prop_map(Shape::Cancel),
            proptest::option::of(num).prop_map(Shape::Mark),
            (0u8..5).prop_map(Shape::Plain),
        ]
    }

    fn output(shape: &Shape) -> Output<'_> {
        match shape {
            Shape::Start(attempt, max_attempts, delay_ms, text) => Output::Emit(Event::Start {
                attempt: *attempt,
                max_attempts: *max_attempts,
                delay_ms: *delay_ms,
                error_message: text.as_str().into(),
            }),
            Shape::End(success, attempt, final_error) => Output::Emit(Event::End {
                success: *success,
                attempt: *attempt,
                final_error: final_error.as_deref().map(FinalError::from),
            }),
            Shape::FailFast(attempt, requested_ms, max_delay_ms, error) => {
                Output::Emit(Event::End {
                    success: false,
                    attempt: *attempt,
                    final_error: Some(FinalError::WaitTooLong {
                        requested_ms: *requested_ms,
                        max_delay_ms: *max_delay_ms,
                        error: error.as_str().into(),
                    }),
                })
            }
            Shape::Sleep(ms, timer) => Output::Sleep {
                ms: *ms,
                timer: TimerId(*timer),
            },
            Shape::Cancel(timer) => Output::CancelTimer {
                timer: TimerId(*timer),
            },
            Shape::Mark(retry_after_ms) => Output::MarkUsageLimit {
                retry_after_ms: *retry_after_ms,
            },
            Shape::Plain(k) => [
                Output::DropTrailingError,
                Output::ContinueAgent,
                Output::CheckCompaction,
                Output::AbortAgent,
                Output::Settled,
            ][usize::from(*k)],
        }
    }

    proptest! {
        #[test]
        fn outputs_are_serde_json_byte_for_byte(shapes in proptest::collection::vec(shape(), 0..6)) {
            let value: Vec<Output<'_>> = shapes.iter().map(output).collect();
            prop_assert_eq!(ours(&value), serde_json::to_vec(&value).unwrap());
        }

        #[test]
        fn state_is_serde_json_byte_for_byte(enabled: bool, retrying: bool, attempt: u32) {
            let value = RetryState { auto_retry_enabled: enabled, is_retrying: retrying, retry_attempt: attempt };
            let mut out = [0u8; 128];
            let n = state(&mut out, &value);
            prop_assert!(n > 0);
            prop_assert_eq!(&out[..n as usize], &serde_json::to_vec(&value).unwrap()[..]);
        }
    }
}
