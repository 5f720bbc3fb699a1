//! The outputs' and the state's JSON, written into the host's buffer.

use super::ERR_OUT_TOO_SMALL;
use crate::{Event, Output, RetryState};

/// Writes the state, `{"autoRetryEnabled":..,"isRetrying":..,"retryAttempt":..}`;
/// returns the length or [`ERR_OUT_TOO_SMALL`].
pub(super) fn state(out: &mut [u8], state: &RetryState) -> i32 {
    let mut w = Json::new(out);
    w.raw("{\"autoRetryEnabled\":");
    w.bool(state.auto_retry_enabled);
    w.raw(",\"isRetrying\":");
    w.bool(state.is_retrying);
    w.raw(",\"retryAttempt\":");
    w.u64(u64::from(state.retry_attempt));
    w.raw("}");
    w.finish()
}

/// Writes `[output, ...]`; returns the length or [`ERR_OUT_TOO_SMALL`].
pub(super) fn outputs(out: &mut [u8], outputs: &[Output<'_>]) -> i32 {
    let mut w = Json::new(out);
    w.raw("[");
    for (i, output) in outputs.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        write_output(&mut w, output);
    }
    w.raw("]");
    w.finish()
}

/// One output, keys in the order of `wire` (spec §7–§8).
fn write_output(w: &mut Json<'_>, output: &Output<'_>) {
    w.raw("{\"type\":");
    w.string(output.type_name());
    match *output {
        Output::Emit(event) => {
            w.raw(",\"event\":{\"type\":");
            w.string(event.type_name());
            match event {
                Event::Start {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                } => {
                    w.raw(",\"attempt\":");
                    w.u64(u64::from(attempt));
                    w.raw(",\"maxAttempts\":");
                    w.u64(u64::from(max_attempts));
                    w.raw(",\"delayMs\":");
                    w.u64(delay_ms);
                    w.raw(",\"errorMessage\":");
                    w.string(error_message);
                }
                Event::End {
                    success,
                    attempt,
                    final_error,
                } => {
                    w.raw(",\"success\":");
                    w.bool(success);
                    w.raw(",\"attempt\":");
                    w.u64(u64::from(attempt));
                    if let Some(text) = final_error {
                        w.raw(",\"finalError\":");
                        w.string(text);
                    }
                }
            }
            w.raw("}");
        }
        Output::Sleep { ms, timer } => {
            w.raw(",\"ms\":");
            w.u64(ms);
            w.raw(",\"timer\":");
            w.u64(timer.get());
        }
        Output::CancelTimer { timer } => {
            w.raw(",\"timer\":");
            w.u64(timer.get());
        }
        Output::MarkUsageLimit { retry_after_ms } => {
            w.raw(",\"retryAfterMs\":");
            match retry_after_ms {
                Some(ms) => w.u64(ms),
                None => w.raw("null"),
            }
        }
        Output::DropTrailingError
        | Output::ContinueAgent
        | Output::CheckCompaction
        | Output::AbortAgent
        | Output::Settled => {}
    }
    w.raw("}");
}

/// A JSON writer into a fixed buffer; escapes strings as serde_json does.
struct Json<'b> {
    buf: &'b mut [u8],
    len: usize,
    overflow: bool,
}

impl<'b> Json<'b> {
    fn new(buf: &'b mut [u8]) -> Self {
        Json {
            buf,
            len: 0,
            overflow: false,
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            _ => self.overflow = true,
        }
    }

    fn raw(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    fn u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.bytes(&digits[i..]);
    }

    fn string(&mut self, text: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.raw("\"");
        let bytes = text.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0x00..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ],
                _ => continue,
            };
            self.bytes(&bytes[start..i]);
            self.bytes(escape);
            start = i + 1;
        }
        self.bytes(&bytes[start..]);
        self.raw("\"");
    }

    fn finish(self) -> i32 {
        if self.overflow {
            ERR_OUT_TOO_SMALL
        } else {
            // At most `u32::MAX` bytes fit a buffer the host describes with
            // a `u32`; larger than `i32::MAX` is reported as too small.
            i32::try_from(self.len).unwrap_or(ERR_OUT_TOO_SMALL)
        }
    }
}
