// The WebAssembly module's C ABI (`autoretry::host::ffi`): the one file that
// names its exports, their argument order and its codes. `machine.js` calls
// these functions only with arguments it has checked; each returns the
// export's result (a length or handle, or a negative `ERR_*` code).
//
// The codes are the Rust constants of the same names; a test reads them
// from `src/host/ffi/` and compares.

/** No machine with this handle (freed, or never created). */
export const ERR_HANDLE = -1;
/** The machine refused the input (spec §6a); nothing changed. */
export const ERR_REFUSED = -2;
/** The text is not UTF-8. */
export const ERR_UTF8 = -3;
/** The text is longer than the module's limit (4096 bytes). */
export const ERR_TEXT_LEN = -4;
/** Every slot of the module's pool of machines is in use or retired (a slot serves 2^23 machines). */
export const ERR_POOL_FULL = -5;
/** An argument is out of range or of the wrong type. */
export const ERR_ARG = -6;
/** The output buffer is too small (the wrapper always passes the module's own). */
export const ERR_OUT_TOO_SMALL = -7;
/** A settings value is invalid; nothing changed. */
export const ERR_SETTINGS = -8;
/** A buffer the module will not touch (past its memory, wrapping, or over its own data); nothing changed. */
export const ERR_BUFFER = -9;
/** Not a compiled rules blob, or one of another format version or byte order; nothing changed. */
export const ERR_RULES_FOREIGN = -10;
/** The rules blob is shorter or longer than its header says (truncated or padded); nothing changed. */
export const ERR_RULES_LENGTH = -11;
/** The rules blob holds a dense DFA and does not start at a 4-byte aligned address; nothing changed. */
export const ERR_RULES_MISALIGNED = -12;
/** The rules blob is damaged (a header field, its checksum, its rule counts or its DFA); nothing changed. */
export const ERR_RULES_CORRUPT = -13;

/** `stopReason` codes. */
export const STOP_STOP = 1;
export const STOP_LENGTH = 2;
export const STOP_TOOL_USE = 3;
export const STOP_ERROR = 4;
export const STOP_ABORTED = 5;

/** `retry.profile` codes. */
export const PROFILE_CLASSIC = 0;
export const PROFILE_MODERN = 1;
/** `retry.classifier` codes. */
export const CLASSIFIER_CLASSIC = 0;
export const CLASSIFIER_EXTENDED = 1;
/** `shouldRetry` codes: absent, false, true. */
export const SHOULD_RETRY_ABSENT = 0;
export const SHOULD_RETRY_NO = 1;
export const SHOULD_RETRY_YES = 2;

/** The wire names of the codes above. */
export const STOP_REASONS = Object.freeze({ stop: STOP_STOP, length: STOP_LENGTH, toolUse: STOP_TOOL_USE, error: STOP_ERROR, aborted: STOP_ABORTED });
export const PROFILES = Object.freeze({ classic: PROFILE_CLASSIC, modern: PROFILE_MODERN });
export const CLASSIFIERS = Object.freeze({ classic: CLASSIFIER_CLASSIC, extended: CLASSIFIER_EXTENDED });

/** Each error code's name, e.g. `ERROR_NAMES[-2] === "ERR_REFUSED"`. */
export const ERROR_NAMES = Object.freeze({
  [ERR_HANDLE]: "ERR_HANDLE",
  [ERR_REFUSED]: "ERR_REFUSED",
  [ERR_UTF8]: "ERR_UTF8",
  [ERR_TEXT_LEN]: "ERR_TEXT_LEN",
  [ERR_POOL_FULL]: "ERR_POOL_FULL",
  [ERR_ARG]: "ERR_ARG",
  [ERR_OUT_TOO_SMALL]: "ERR_OUT_TOO_SMALL",
  [ERR_SETTINGS]: "ERR_SETTINGS",
  [ERR_BUFFER]: "ERR_BUFFER",
  [ERR_RULES_FOREIGN]: "ERR_RULES_FOREIGN",
  [ERR_RULES_LENGTH]: "ERR_RULES_LENGTH",
  [ERR_RULES_MISALIGNED]: "ERR_RULES_MISALIGNED",
  [ERR_RULES_CORRUPT]: "ERR_RULES_CORRUPT",
});

const flag = (b) => (b ? 1 : 0);

/**
 * The exports of one module instance. Settings, host options and messages
 * come checked (see `machine.js`): u64 values as BigInts, u32 values as
 * numbers, booleans, names of codes.
 */
export class Abi {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    const x = instance.exports;
    this.x = x;
    this.textPtr = x.autoretry_text_buffer();
    this.maxText = x.autoretry_max_text();
    this.outPtr = x.autoretry_out_buffer();
    this.outLen = x.autoretry_out_buffer_len();
    /** Whether the module loads rules blobs (`autoretry-rules.wasm`, feature `rules`). */
    this.hasRules = typeof x.autoretry_rules_load === "function";
  }

  /** The module's memory (grown by `memory.grow` for rules blobs). */
  get memory() {
    return this.x.memory;
  }

  /** The outputs' (or state's) JSON of a non-negative result. */
  read(n) {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(this.x.memory.buffer, this.outPtr, n));
  }

  // The text in the module's text buffer: its length, or -1 for no text.
  // The caller has checked that `bytes` fits.
  text(bytes) {
    if (bytes === undefined) return -1;
    new Uint8Array(this.x.memory.buffer, this.textPtr, bytes.length).set(bytes);
    return bytes.length;
  }

  settingsArgs(s) {
    return [PROFILES[s.profile], flag(s.enabled), s.maxRetries, s.baseDelayMs, s.maxDelayMs, s.backoffCapMs, s.jitterPct, flag(s.honorHints), CLASSIFIERS[s.classifier]];
  }

  create(settings, host) {
    return this.x.autoretry_new_ex(...this.settingsArgs(settings), host.contextWindow, flag(host.credentialStore), host.seed);
  }

  free(h) {
    return this.x.autoretry_free(h);
  }

  state(h) {
    return this.x.autoretry_state(h, this.outPtr, this.outLen);
  }

  /** The pending backoff timer's id, 0n when none. */
  pendingTimer(h) {
    return this.x.autoretry_pending_timer(h);
  }

  // `m`: { stopReason, text (UTF-8 bytes or undefined), usage
  // ({ input, cacheRead, cacheWrite } or undefined), shouldRetry (boolean
  // or undefined), retryAfterMs (BigInt or undefined) }; `nowMs` for
  // `agent_end`: a BigInt or undefined.
  message(h, type, m, nowMs) {
    const len = this.text(m.text);
    const u = m.usage;
    const usage = u === undefined ? [0, 0n, 0n, 0n] : [1, u.input, u.cacheRead, u.cacheWrite];
    const verdict = m.shouldRetry === undefined ? SHOULD_RETRY_ABSENT : m.shouldRetry ? SHOULD_RETRY_YES : SHOULD_RETRY_NO;
    const after = m.retryAfterMs === undefined ? [0, 0n] : [1, m.retryAfterMs];
    const args = [h, STOP_REASONS[m.stopReason], this.textPtr, len, ...usage, verdict, ...after];
    if (type === "message_end") return this.x.autoretry_message_end_ex(...args, this.outPtr, this.outLen);
    const now = nowMs === undefined ? [0, 0n] : [1, nowMs];
    return this.x.autoretry_agent_end_ex(...args, ...now, this.outPtr, this.outLen);
  }

  timerFired(h, timer) {
    return this.x.autoretry_timer_fired(h, timer, this.outPtr, this.outLen);
  }

  usageLimitMarked(h, switched) {
    return this.x.autoretry_usage_limit_marked(h, flag(switched), this.outPtr, this.outLen);
  }

  abortRetry(h) {
    return this.x.autoretry_abort_retry(h, this.outPtr, this.outLen);
  }

  abort(h) {
    return this.x.autoretry_abort(h, this.outPtr, this.outLen);
  }

  setAutoRetry(h, enabled) {
    return this.x.autoretry_set_auto_retry(h, flag(enabled), this.outPtr, this.outLen);
  }

  /** Lends machine `h` the rules blob at `[ptr, ptr + len)` of the memory. */
  rulesLoad(h, ptr, len) {
    return this.x.autoretry_rules_load(h, ptr, len);
  }

  rulesClear(h) {
    return this.x.autoretry_rules_clear(h);
  }

  settings(h, s) {
    return this.x.autoretry_settings_ex(h, ...this.settingsArgs(s), this.outPtr, this.outLen);
  }
}
