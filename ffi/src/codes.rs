//! The ABI's sizes and codes: the pool's and the texts' limits, the error
//! codes every entry point returns, and the codes of the settings' and
//! messages' enumerations (spec §2, §4, §10, §11). The codes of the C
//! structs' kinds are `structs.rs`'s, of the budgets `budget.rs`'s, of the
//! refusal reasons `refusal.rs`'s and of the rules `rules.rs`'s.

/// How many machines can be alive at once.
pub const POOL_SIZE: usize = 8;
/// The longest text (`errorMessage`) an input may carry, in bytes.
pub const MAX_TEXT: usize = 4096;
/// The length of `autoretry_out_buffer()`: enough for the outputs of any
/// input whose text is within `AUTORETRY_MAX_TEXT` (a text escapes to at
/// most six times its length, and an input's outputs carry at most one
/// text).
pub const OUT_BUFFER_LEN: usize = 6 * MAX_TEXT + 1024;

/// No machine with this handle (never created, freed, or out of range).
pub const ERR_HANDLE: i32 = -1;
/// The machine refused the input (spec §6a): it came out of turn. Nothing
/// changed. Every entry point answers any refusal with this one code;
/// `autoretry_last_refusal()` then gives its reason, an
/// `AUTORETRY_REFUSAL_*` code.
pub const ERR_REFUSED: i32 = -2;
/// The text is not UTF-8.
pub const ERR_UTF8: i32 = -3;
/// The text is longer than `AUTORETRY_MAX_TEXT`, or its length is negative
/// other than `-1`.
pub const ERR_TEXT_LEN: i32 = -4;
/// Every slot of the pool is in use or retired (a slot is retired after
/// its 2^23rd machine, so that no handle is ever given twice).
pub const ERR_POOL_FULL: i32 = -5;
/// An argument is out of range: an unknown or zero input kind, stop reason
/// or `shouldRetry` code, a null pointer with a length, a misaligned struct
/// pointer, a text that overlaps the output buffer.
pub const ERR_ARG: i32 = -6;
/// The output buffer is too small for the input's outputs. Nothing changed:
/// the machine is as before the call (the input is handled on a copy that
/// replaces the machine only once its outputs are written), so the host
/// may repeat the call with a larger buffer. `AUTORETRY_OUT_BUFFER_LEN`
/// bytes (8 `autoretry_output` structs) always suffice.
pub const ERR_OUT_TOO_SMALL: i32 = -7;
/// A settings value is out of range: a `jitter_pct` above 100, or a
/// `profile` or `classifier` that is not one of the `AUTORETRY_PROFILE_*` /
/// `AUTORETRY_CLASSIFIER_*` codes.
/// Nothing changed: no machine was made, or the settings in force stay
/// (spec §4: bad settings are rejected).
pub const ERR_SETTINGS: i32 = -8;

/// A buffer (a text or `out`) the module will not touch: its end wraps
/// around the address space, it runs past the end of an exchange buffer
/// it starts in or overlaps, or it overlaps the module's own data (the
/// pool, the kept texts); a buffer the module writes that overlaps a rules
/// blob a machine holds; a rules blob that overlaps an exchange buffer
/// (feature `rules`). On WebAssembly also a buffer past the end of the
/// module's memory, or below `__heap_base` (the stack, the constants and
/// every static) other than within an exchange buffer. Nothing changed.
pub const ERR_BUFFER: i32 = -9;

/// `retry.profile` `"classic"`.
pub const PROFILE_CLASSIC: u32 = 0;
/// `retry.profile` `"modern"` (its classifier is the extended one: a build
/// without feature `extended`, such as the default WebAssembly module,
/// refuses it with [`ERR_SETTINGS`]).
pub const PROFILE_MODERN: u32 = 1;
/// `retry.classifier` `"classic"`: the patterns of spec §3.
pub const CLASSIFIER_CLASSIC: u32 = 0;
/// `retry.classifier` `"extended"`: the patterns of spec §10.5 (a build
/// without feature `extended`, such as the default WebAssembly module,
/// refuses it with [`ERR_SETTINGS`]).
pub const CLASSIFIER_EXTENDED: u32 = 1;
/// `retry.classifier` `"curated"`: the patterns and hints of spec §13.2
/// (feature `curated`: the C libraries and `autoretry-curated.wasm`; the
/// other WebAssembly modules leave it out and refuse it with
/// `AUTORETRY_ERR_SETTINGS`).
pub const CLASSIFIER_CURATED: u32 = 2;

/// `shouldRetry` absent: the patterns decide (spec §3, rule 4). It is 0,
/// so a zero-initialised `autoretry_input` leaves the verdict absent.
pub const SHOULD_RETRY_ABSENT: i32 = 0;
/// `shouldRetry: false`: the host's verdict is "do not retry".
pub const SHOULD_RETRY_NO: i32 = 1;
/// `shouldRetry: true`: the host's verdict is "retry" (rules 1–3 of spec §3
/// still hold).
pub const SHOULD_RETRY_YES: i32 = 2;

/// `partial` `"none"` (or absent): the failed turn left nothing, or only
/// thinking or white space (spec §11.2). It is 0, so a zero-initialised
/// `autoretry_input` has no partial turn.
pub const PARTIAL_NONE: u32 = 0;
/// `partial` `"text"`: the failed turn left visible text and nothing else;
/// a retry continues it (`AUTORETRY_OUTPUT_RESUME_AGENT`).
pub const PARTIAL_TEXT: u32 = 1;
/// `partial` `"tools"`: the failed turn left a tool call, an image or a
/// server-side tool block; it is never retried.
pub const PARTIAL_TOOLS: u32 = 2;

/// `stopReason` `"stop"`. The codes start at 1: `stopReason` is required,
/// and a stop reason left at 0 (a zero-initialised `autoretry_input`) is
/// refused with `AUTORETRY_ERR_ARG`.
pub const STOP_STOP: u32 = 1;
/// `stopReason` `"length"`.
pub const STOP_LENGTH: u32 = 2;
/// `stopReason` `"toolUse"`.
pub const STOP_TOOL_USE: u32 = 3;
/// `stopReason` `"error"`.
pub const STOP_ERROR: u32 = 4;
/// `stopReason` `"aborted"`.
pub const STOP_ABORTED: u32 = 5;
