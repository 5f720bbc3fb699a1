//! The C ABI of [`autoretry`], for hosts that drive the machine by hand
//! with no allocator: WebAssembly modules (`wasm32-unknown-unknown`, built
//! by `ffi/wasm/build.sh`) and C programs (the static and shared libraries
//! `libautoretry_ffi.a` and `libautoretry_ffi.so`).
//!
//! Build and link a C host (the libraries are built with std, so std's
//! panic handler is linked in and a C program needs none of its own; the
//! core never panics, and a panic would abort at the C boundary):
//!
//! ```text
//! cargo build --release -p autoretry-ffi
//! gcc -Iffi/include host.c target/release/libautoretry_ffi.a -lpthread -ldl -lm
//! gcc -Iffi/include host.c -Ltarget/release -lautoretry_ffi   # the shared one
//! ```
//!
//! The WebAssembly modules are this package built for
//! `wasm32-unknown-unknown` (`no_std`, with a panic handler that traps):
//! `cargo build -p autoretry-ffi --profile wasm --target
//! wasm32-unknown-unknown --no-default-features [--features rules]`.
//!
//! # Model
//!
//! - **Machines** live in a fixed pool of [`POOL_SIZE`] slots in a static.
//!   [`autoretry_new_ex`] (every setting and host option) or
//!   [`autoretry_new`] (the settings of spec §4 alone) takes a free slot,
//!   [`autoretry_free`] releases it. A handle is a non-negative `i32`, the
//!   slot index in its low 8 bits and the slot's *generation* above them:
//!   freeing a machine bumps its slot's generation, so a freed machine's
//!   handle is refused ([`ERR_HANDLE`]) and never reaches the slot's next
//!   machine. A generation never wraps: a slot serves 2^23 machines, then
//!   is retired (no machine is put in it again), so a host that makes and
//!   frees machines without end gets [`ERR_POOL_FULL`] once all
//!   [`POOL_SIZE`] slots are retired, after 2^26 machines (C: a new
//!   process; WebAssembly: a new instance).
//! - **Inputs** are one function each, with scalar arguments; texts (an
//!   `errorMessage`) come as a pointer and a byte length, UTF-8, at most
//!   [`MAX_TEXT`] bytes; a length of `-1` means "no text". An optional
//!   number comes as a pair `(has_x, x)` (`has_x == 0`: absent), the
//!   tri-state `shouldRetry` as one of the `SHOULD_RETRY_*` codes.
//! - **Zero is absent.** Every code and flag of an optional field is 0
//!   when the field is absent ([`SHOULD_RETRY_ABSENT`] is 0, `has_x == 0`),
//!   and the codes of the required ones start at 1 ([`STOP_STOP`],
//!   [`INPUT_MESSAGE_END`]), so an input struct zeroed by a C host (`{0}`)
//!   is the input with every optional field absent, and a required field
//!   left at 0 is refused ([`ERR_ARG`]) rather than taken as a value.
//! - **Outputs** of an input are written, as UTF-8 JSON, into the caller's
//!   buffer `(out, out_cap)`: an array of the output objects exactly as in
//!   the vectors and on the RPC stream (`[{"type":"sleep","ms":2000,"timer":1}]`,
//!   event keys in spec order). A timer id carries the machine's own id in
//!   its low 40 bits and its slot's generation above them (so a slot's
//!   first machine shows the machine's own ids, 1, 2, ...): a freed
//!   machine's timer fired at the slot's next machine is ignored (spec §6),
//!   never applied. A `timer_fired` reaches the machine only with the id
//!   of its pending timer, compared in full, so a machine's own ids may
//!   outgrow the 40 bits (its ids then repeat only 2^40 timers apart). The
//!   return value is the JSON's length in bytes, or a negative error code
//!   (`ERR_*`).
//! - **A failed call changes nothing.** Every pointer and length is checked
//!   before any state is touched ([`ERR_BUFFER`], [`ERR_ARG`],
//!   [`ERR_TEXT_LEN`]); an input is handled on a copy of the machine that
//!   replaces it only once the outputs are written, so a refusal
//!   ([`ERR_REFUSED`], spec §6a) or too small a buffer
//!   ([`ERR_OUT_TOO_SMALL`]) leaves the machine as it was, and every other
//!   machine is untouched by any call on one. Every refusal is
//!   [`ERR_REFUSED`], as for the first hosts; [`autoretry_last_refusal`]
//!   then says which rule refused it (a `REFUSAL_*` code).
//! - **Answers to a decision**: when an `agent_end` produces
//!   `mark_usage_limit` or `switch_model` (spec §11.3), the slot keeps a
//!   copy of the message's error text (at most [`MAX_TEXT`] bytes, the
//!   limit for every text, so the copy always fits), and
//!   [`autoretry_usage_limit_marked`] or [`autoretry_model_switched`]
//!   passes it back.
//! - **Retry budgets** (spec §11.4) live in a fixed table of
//!   [`BUDGET_POOL_SIZE`] beside the pool: [`autoretry_budget_new`] makes
//!   one (its handle is never 0), [`autoretry_budget_tokens`] reads its
//!   tokens, [`autoretry_budget_free`] frees it. An input names one in
//!   [`AutoretryInput::budget`] (0: none), and any number of machines may
//!   name the same one; the input is handled with a copy of the budget
//!   that replaces it only with the machine, so a failed call changes
//!   neither. A handle that names no budget is [`ERR_BUDGET`].
//! - **No machine needed**: [`autoretry_classify`] gives an error text's
//!   labels and hint under one classifier (spec §3, §10.5, §13.2), and
//!   [`autoretry_read_headers`] what response headers say (spec §13.1);
//!   neither touches the pool.
//! - **Settings** arrive as typed scalars, one argument per key of the
//!   `retry` group (spec §4, §10.1), in the spec's order: `profile` and
//!   `classifier` as `PROFILE_*` / `CLASSIFIER_*` codes, booleans as
//!   integers (0 is false, anything else true), `jitterPct` as an integer.
//!   The JSON rules (types, literals, duplicate keys, which profile fills
//!   a missing key) are the host's; the module refuses what the scalars
//!   can still get wrong, a `jitterPct` above 100 or an unknown code, with
//!   [`ERR_SETTINGS`], and then changes nothing.
//!
//! # Entry points
//!
//! | spec | every option (§10) | the §4 settings and §2 message only |
//! |---|---|---|
//! | a new machine (settings, host options) | [`autoretry_new_ex`] | [`autoretry_new`] |
//! | `settings` | [`autoretry_settings_ex`] | [`autoretry_settings`] |
//! | `message_end` | [`autoretry_message_end_ex`] | [`autoretry_message_end`] |
//! | `agent_end` | [`autoretry_agent_end_ex`] | [`autoretry_agent_end`] |
//! | `timer_fired`, `usage_limit_marked`, `model_switched`, `abort_retry`, `abort`, `set_auto_retry` | [`autoretry_timer_fired`], [`autoretry_usage_limit_marked`], [`autoretry_model_switched`], [`autoretry_abort_retry`], [`autoretry_abort`], [`autoretry_set_auto_retry`] | the same |
//! | `stream_start`, `stream_event` (§12.2, the host's monotonic `now_ms`) | [`autoretry_stream_start`], [`autoretry_stream_event`] | the same |
//!
//! The `_ex` forms give every option of §10; the fields of spec §11 and
//! §12 (a message's `partial` and `empty`, a budget, the keys
//! `modelFallback`, `maxUsageWaitMs`, `maxTotalDelayMs`,
//! `firstEventTimeoutMs`, `idleTimeoutMs` and `retryEmpty`, which they
//! leave at their `classic` defaults) come with the input struct: [`autoretry_new_c`] makes a
//! machine from an [`AutoretrySettings`], and [`autoretry_handle_json`]
//! takes any input as an [`AutoretryInput`] and writes its outputs' JSON,
//! as [`autoretry_handle_c`] writes their structs.
//!
//! The functions of the right column are those of the first hosts and
//! keep their arguments and behaviour: the keys and fields they leave out
//! take their `classic` defaults (the §10 settings keys) or are absent (the
//! §10.2 message fields; `usage.cacheWrite` is 0), the seed is 0, and a
//! refusal is [`ERR_REFUSED`] whatever its reason (as from every entry
//! point; [`autoretry_last_refusal`] tells the reasons apart). Their
//! `STOP_*` arguments are the named constants, which start at 1.
//!
//! # The C form
//!
//! A C host may skip JSON altogether: [`autoretry_handle_c`] takes any
//! input as an [`AutoretryInput`] struct (an `INPUT_*` kind and its fields)
//! and writes its outputs as [`AutoretryOutput`] structs (an `OUTPUT_*`
//! kind and its fields), filled from the same outputs the JSON form writes,
//! with the same checks and error codes; [`autoretry_state_c`] gives the
//! state as an [`AutoretryState`], and [`autoretry_settings_defaults`] a
//! profile's defaults as an [`AutoretrySettings`]. `ffi/include/autoretry.h`
//! (generated by cbindgen from this package, checked in CI) declares it
//! all, the constants prefixed `AUTORETRY_`, and `ffi/examples/replay.c`
//! replays every vector through the libraries.
//!
//! From Rust, the struct form starts from `Default` (every optional field
//! absent) as a C host starts from `{0}`:
//!
//! ```
//! use autoretry_ffi::*;
//! let h = autoretry_new(1, 3, 2000, 0, 0);
//! let text = "529 overloaded_error";
//! let mut input = AutoretryInput {
//!     kind: INPUT_AGENT_END,
//!     stop_reason: STOP_ERROR,
//!     text: text.as_ptr(),
//!     text_len: text.len() as i32,
//!     ..AutoretryInput::default()
//! };
//! let mut out = [AutoretryOutput::default(); 8];
//! // SAFETY: `input`, its text and `out` are live, disjoint and of the given sizes.
//! let n = unsafe { autoretry_handle_c(h, &input, out.as_mut_ptr(), out.len() as u32) };
//! assert_eq!(n, 3);
//! assert_eq!((out[0].kind, out[0].attempt, out[0].ms), (OUTPUT_START, 1, 2000));
//! assert_eq!((out[2].kind, out[2].ms), (OUTPUT_SLEEP, 2000));
//! // The agent must not run while the retry waits.
//! // SAFETY: as above.
//! let n = unsafe { autoretry_handle_c(h, &input, out.as_mut_ptr(), out.len() as u32) };
//! assert_eq!((n, autoretry_last_refusal(h)), (ERR_REFUSED, REFUSAL_AGENT_RUN_DURING_BACKOFF));
//! input = AutoretryInput { kind: INPUT_TIMER_FIRED, timer: out[2].timer, ..AutoretryInput::default() };
//! // SAFETY: as above.
//! let n = unsafe { autoretry_handle_c(h, &input, out.as_mut_ptr(), out.len() as u32) };
//! assert_eq!((n, out[0].kind), (1, OUTPUT_CONTINUE_AGENT));
//! let mut state = AutoretryState::default();
//! // SAFETY: `state` is live.
//! assert_eq!(unsafe { autoretry_state_c(h, &mut state) }, 0);
//! assert_eq!(state, AutoretryState { auto_retry_enabled: 1, is_retrying: 1, retry_attempt: 1 });
//! autoretry_free(h);
//! ```
//!
//! # Your own rules
//!
//! With feature `rules` (a default one; the default WebAssembly module
//! leaves it out), [`autoretry_rules_load`] lends a machine a
//! compiled rules blob (`autoretry rules compile`), which the module
//! validates once and searches in place; its verdict is the `shouldRetry`
//! of every message that comes without one (spec §10.2).
//! [`autoretry_rules_clear`] takes it back. A bad blob is refused with an
//! `ERR_RULES_*` code and changes nothing. The blob stays the host's
//! memory, which no output may overlap while a machine holds it.
//!
//! A WebAssembly host has no allocator to put texts in the module's memory:
//! it writes them into [`autoretry_text_buffer`] ([`MAX_TEXT`] bytes) and
//! passes [`autoretry_out_buffer`] ([`OUT_BUFFER_LEN`] bytes) for outputs.
//! Those two buffers belong to the host; the module only touches them
//! through the pointers the host passes back.
//!
//! # The header
//!
//! The exported items' own docs are written for C, as cbindgen copies them
//! into `ffi/include/autoretry.h`: they name the header's C names (a constant
//! `X` here is `AUTORETRY_X` there; [`AutoretryInput`] is
//! `autoretry_input`, [`AutoretryOutput`] `autoretry_output`,
//! [`AutoretrySettings`] `autoretry_retry_settings`, [`AutoretryState`]
//! `autoretry_retry_state`), and their examples are C. The Rust examples
//! are here, on the crate.
//!
//! # Rooms and safety
//!
//! The library has no `unsafe` code (`#![forbid(unsafe_code)]`); this
//! package has all of the C ABI's. Its files, each importing only those
//! listed before it:
//!
//! - `codes.rs`: the sizes and the codes (errors, settings, messages);
//! - `budget.rs`: the table of retry budgets; safe code;
//! - `pool.rs`: the pool in a static behind an atomic lock (the budgets'
//!   table beside it), the two static exchange buffers, and the conversion
//!   of the host's `(pointer, length)` pairs into slices: every `unsafe`
//!   operation, each argued where it happens;
//! - `refusal.rs`: the last refusal's reason per slot, and its export;
//! - `rules.rs`: the rules' two exports and their error codes;
//! - `out.rs`: the outputs' and the state's JSON, written by `wire`'s
//!   `Serialize` impls through serde-json-core; safe code;
//! - `structs.rs`: the C structs of inputs and outputs, their codes, and
//!   the outputs' struct form; safe code;
//! - `call.rs`: the call path every export shares: settings decoded, an
//!   input fed to a copy of a slot's machine, its outputs written to a
//!   `Sink` (JSON or structs), the copy committed;
//! - `abi.rs`, `c.rs`, `budget_exports.rs`: the exports (`#[no_mangle]`;
//!   those that take pointers are `unsafe extern "C" fn` whose contract,
//!   stated on each, is forwarded to `pool.rs`) of the JSON form, the
//!   struct form and the budgets.
//!
//! ```
//! use autoretry_ffi::*;
//! let h = autoretry_new(1, 3, 2000, 0, 0);
//! assert!(h >= 0);
//! let text = "529 overloaded_error";
//! let mut out = [0u8; 512];
//! // SAFETY: `text` and `out` are live, disjoint and of the given lengths.
//! let n = unsafe {
//!     autoretry_agent_end(h, STOP_ERROR, text.as_ptr(), text.len() as i32, 0, 0, 0, 0, 0, out.as_mut_ptr(), out.len() as u32)
//! };
//! let json = core::str::from_utf8(&out[..n as usize]).unwrap();
//! assert!(json.ends_with(r#"{"type":"drop_trailing_error"},{"type":"sleep","ms":2000,"timer":1}]"#));
//! assert_eq!(autoretry_free(h), 0);
//! ```
#![cfg_attr(target_arch = "wasm32", no_std)]
// docs.rs builds with `--cfg docsrs`: items show the feature they need.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Every unsafe operation is in `pool.rs`, argued block by block; `abi.rs`,
// `c.rs` and the other export files declare the exports (`#[no_mangle]`,
// `unsafe extern "C" fn`), which the lint also counts. Each allows it for
// itself.
#![deny(unsafe_code)]
// Every public item is documented.
#![deny(missing_docs)]

mod abi;
mod budget;
mod budget_exports;
mod c;
mod call;
mod codes;
mod out;
mod pool;
mod refusal;
#[cfg(feature = "rules")]
mod rules;
mod structs;

pub use abi::*;
pub use budget::{BUDGET_POOL_SIZE, ERR_BUDGET};
pub use budget_exports::*;
pub use c::*;
pub use codes::*;
pub use refusal::*;
#[cfg(feature = "rules")]
#[cfg_attr(docsrs, doc(cfg(feature = "rules")))]
pub use rules::*;
pub use structs::*;

/// The WebAssembly module is a final artifact without `std`: it needs a
/// panic handler. The core is panic-free, so this is never reached; if it
/// were, the host sees a trap. (The C libraries have std's.)
#[cfg(all(target_arch = "wasm32", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
