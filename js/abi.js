// The WebAssembly module's C ABI (`autoretry_ffi`): the one file that
// names its exports, their argument order and its codes. `machine.js` calls
// these functions only with arguments it has checked; each returns the
// export's result (a length or handle, or a negative `ERR_*` code).
//
// The codes are the Rust constants of the same names; a test reads them
// from `ffi/src/` and compares.

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
/** No retry budget with this handle (freed, or of another module); nothing changed. */
export const ERR_BUDGET = -14;

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
/** Spec §13.2's curated set: the C libraries and `autoretry-curated.wasm` have it. */
export const CLASSIFIER_CURATED = 2;
/** `shouldRetry` codes: absent, false, true. */
export const SHOULD_RETRY_ABSENT = 0;
export const SHOULD_RETRY_NO = 1;
export const SHOULD_RETRY_YES = 2;
/** `partial` codes (spec §11.2): none, text, tools. */
export const PARTIAL_NONE = 0;
export const PARTIAL_TEXT = 1;
export const PARTIAL_TOOLS = 2;

/** The wire names of the codes above. */
export const STOP_REASONS = Object.freeze({ stop: STOP_STOP, length: STOP_LENGTH, toolUse: STOP_TOOL_USE, error: STOP_ERROR, aborted: STOP_ABORTED });
export const PROFILES = Object.freeze({ classic: PROFILE_CLASSIC, modern: PROFILE_MODERN });
export const CLASSIFIERS = Object.freeze({ classic: CLASSIFIER_CLASSIC, extended: CLASSIFIER_EXTENDED, curated: CLASSIFIER_CURATED });
export const PARTIALS = Object.freeze({ none: PARTIAL_NONE, text: PARTIAL_TEXT, tools: PARTIAL_TOOLS });

// The `AUTORETRY_INPUT_*` kinds, by input type.
const INPUT_KINDS = Object.freeze({
  message_end: 1,
  agent_end: 2,
  timer_fired: 3,
  usage_limit_marked: 4,
  abort_retry: 5,
  abort: 6,
  set_auto_retry: 7,
  settings: 8,
  model_switched: 9,
  stream_start: 10,
  stream_event: 11,
});

// The reasons of `autoretry_last_refusal()` (the `AUTORETRY_REFUSAL_*`
// codes), as the crate's `Refused` variants; `Other` for a refusal of a
// newer crate that this ABI has no code of its own for.
export const REFUSALS = Object.freeze({
  1: "AgentRunDuringBackoff",
  2: "AwaitingUsageLimitAnswer",
  3: "UsageLimitTextMismatch",
  4: "AwaitingModelSwitchAnswer",
  5: "ModelSwitchTextMismatch",
  6: "Other",
  7: "EmptyWithPartial",
});

// The wasm32 layout of `autoretry_retry_settings` (96 bytes) and of
// `autoretry_input` (208 bytes, the settings at 88; `partial` at 184,
// `budget` at 188, `headers` and `headers_len` at 192 and 196; `empty` at
// 200); of `autoretry_header` (16 bytes: a name's pointer and length, a
// value's); of `autoretry_header_hints` (16 bytes: the `shouldRetry` code,
// `has_retry_after`, then `retry_after_ms` at 8); of
// `autoretry_classification` (24 bytes: four flags, then `hint_ms` at 16).
const INPUT_SIZE = 208;
const INPUT_SETTINGS_AT = 88;
export const HEADER_SIZE = 16;

/**
 * The bytes a message's text and header fields take in the module's text
 * buffer (`Abi.fields`): the text, padded to 8, then the header structs,
 * then their names' and values' bytes. `headers`: `[name, value]` pairs
 * of UTF-8 bytes.
 */
export function fieldsLength(text, headers) {
  const textEnd = Math.ceil((text?.length ?? 0) / 8) * 8;
  return headers.reduce((n, [name, value]) => n + HEADER_SIZE + name.length + value.length, headers.length === 0 ? text?.length ?? 0 : textEnd);
}

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
  [ERR_BUDGET]: "ERR_BUDGET",
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
    /**
     * Whether the module has the extended classifier and so the modern
     * profile (`autoretry-extended.wasm`, `autoretry-rules.wasm`; feature
     * `extended`): a module without them refuses the modern profile's
     * defaults with ERR_SETTINGS.
     */
    this.hasExtended = x.autoretry_settings_defaults(PROFILE_MODERN, this.outPtr) === 0;
    /**
     * Whether the module has the curated classifier (`autoretry-curated.wasm`;
     * feature `curated`): a module without it refuses its code with
     * ERR_SETTINGS, even for no text.
     */
    this.hasCurated = x.autoretry_classify(CLASSIFIER_CURATED, 0, -1, this.outPtr) === 0;
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

  // A message's text and header fields in the text buffer, laid out as
  // `fieldsLength` counts them (the caller has checked that they fit):
  // the text's length (-1 for none) and the address of the header structs
  // (0 for none).
  fields(text, headers) {
    const textLen = this.text(text);
    if (headers.length === 0) return [textLen, 0];
    const memory = new Uint8Array(this.x.memory.buffer);
    const view = new DataView(this.x.memory.buffer);
    const structs = this.textPtr + Math.ceil(Math.max(textLen, 0) / 8) * 8;
    let at = structs + headers.length * HEADER_SIZE;
    const put = (bytes) => {
      memory.set(bytes, at);
      at += bytes.length;
      return at - bytes.length;
    };
    headers.forEach(([name, value], k) => {
      const h = structs + k * HEADER_SIZE;
      view.setUint32(h, put(name), true);
      view.setUint32(h + 4, name.length, true);
      view.setUint32(h + 8, put(value), true);
      view.setUint32(h + 12, value.length, true);
    });
    return [textLen, structs];
  }

  /**
   * `autoretry_classify`: the text's labels under the classifier `code`,
   * `{retryable, overflow, usageLimit, hintMs}` (`hintMs` a BigInt or
   * null), or the negative error code.
   */
  classify(code, bytes) {
    const n = this.x.autoretry_classify(code, this.textPtr, this.text(bytes), this.outPtr);
    if (n !== 0) return n;
    const view = new DataView(this.x.memory.buffer);
    const flag = (at) => view.getUint32(this.outPtr + at, true) !== 0;
    return { retryable: flag(0), overflow: flag(4), usageLimit: flag(8), hintMs: flag(12) ? view.getBigUint64(this.outPtr + 16, true) : null };
  }

  /**
   * `autoretry_read_headers`: what the header fields (`[name, value]`
   * pairs of UTF-8 bytes) say, `{shouldRetry, retryAfterMs}` (a boolean or
   * null, a BigInt or null), or the negative error code. `nowMs`: a BigInt
   * or undefined.
   */
  readHeaders(headers, nowMs) {
    const [, structs] = this.fields(undefined, headers);
    const now = nowMs === undefined ? [0, 0n] : [1, nowMs];
    const n = this.x.autoretry_read_headers(structs, headers.length, ...now, this.outPtr);
    if (n !== 0) return n;
    const view = new DataView(this.x.memory.buffer);
    const verdict = view.getInt32(this.outPtr, true);
    return {
      shouldRetry: verdict === SHOULD_RETRY_ABSENT ? null : verdict === SHOULD_RETRY_YES,
      retryAfterMs: view.getUint32(this.outPtr + 4, true) !== 0 ? view.getBigUint64(this.outPtr + 8, true) : null,
    };
  }

  // The settings as an `autoretry_retry_settings` at `at` of the memory.
  writeSettings(view, at, s) {
    view.setUint32(at, PROFILES[s.profile], true);
    view.setUint32(at + 4, flag(s.enabled), true);
    view.setUint32(at + 8, s.maxRetries, true);
    view.setUint32(at + 12, s.jitterPct, true);
    view.setBigUint64(at + 16, s.baseDelayMs, true);
    view.setBigUint64(at + 24, s.maxDelayMs, true);
    view.setBigUint64(at + 32, s.backoffCapMs, true);
    view.setUint32(at + 40, flag(s.honorHints), true);
    view.setUint32(at + 44, CLASSIFIERS[s.classifier], true);
    view.setUint32(at + 48, flag(s.modelFallback), true);
    view.setBigUint64(at + 56, s.maxUsageWaitMs, true);
    view.setBigUint64(at + 64, s.maxTotalDelayMs, true);
    view.setBigUint64(at + 72, s.firstEventTimeoutMs, true);
    view.setBigUint64(at + 80, s.idleTimeoutMs, true);
    view.setUint32(at + 88, flag(s.retryEmpty), true);
  }

  create(settings, host) {
    this.writeSettings(new DataView(this.x.memory.buffer), this.outPtr, settings);
    return this.x.autoretry_new_c(this.outPtr, host.contextWindow, flag(host.credentialStore), host.seed);
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

  // Feeds one input as an `autoretry_input` written at the start of the
  // output buffer (the module reads it before it writes there). `input`:
  // { type, message (as below) and nowMs (a BigInt or undefined) for the
  // messages, nowMs (a BigInt) for the stream inputs, timer (a BigInt),
  // switched or enabled (booleans), settings }; a message: { stopReason,
  // text (UTF-8 bytes or undefined), usage ({ input, cacheRead, cacheWrite }
  // or undefined), shouldRetry (boolean or undefined), retryAfterMs (BigInt
  // or undefined), partial (a name), empty (a boolean), headers (`[name,
  // value]` pairs of UTF-8 bytes, maybe none) }.
  // `budget`: a budget handle, 0 for none.
  input(h, input, budget) {
    const view = new DataView(this.x.memory.buffer);
    const at = this.outPtr;
    new Uint8Array(this.x.memory.buffer, at, INPUT_SIZE).fill(0);
    view.setUint32(at, INPUT_KINDS[input.type], true);
    view.setInt32(at + 188, budget, true);
    const m = input.message;
    if (m !== undefined) {
      view.setUint32(at + 4, STOP_REASONS[m.stopReason], true);
      view.setUint32(at + 8, this.textPtr, true);
      const [textLen, headers] = this.fields(m.text, m.headers);
      view.setInt32(at + 12, textLen, true);
      view.setUint32(at + 192, headers, true);
      view.setUint32(at + 196, m.headers.length, true);
      const verdict = m.shouldRetry === undefined ? SHOULD_RETRY_ABSENT : m.shouldRetry ? SHOULD_RETRY_YES : SHOULD_RETRY_NO;
      view.setInt32(at + 16, verdict, true);
      if (m.usage !== undefined) {
        view.setUint32(at + 20, 1, true);
        view.setBigUint64(at + 40, m.usage.input, true);
        view.setBigUint64(at + 48, m.usage.cacheRead, true);
        view.setBigUint64(at + 56, m.usage.cacheWrite, true);
      }
      if (m.retryAfterMs !== undefined) {
        view.setUint32(at + 24, 1, true);
        view.setBigUint64(at + 64, m.retryAfterMs, true);
      }
      view.setUint32(at + 184, PARTIALS[m.partial], true);
      view.setUint32(at + 200, flag(m.empty), true);
    }
    if (input.nowMs !== undefined) {
      view.setUint32(at + 28, 1, true);
      view.setBigUint64(at + 72, input.nowMs, true);
    }
    if (input.timer !== undefined) view.setBigUint64(at + 80, input.timer, true);
    view.setUint32(at + 32, flag(input.switched ?? input.enabled), true);
    if (input.settings !== undefined) this.writeSettings(view, at + INPUT_SETTINGS_AT, input.settings);
    return this.x.autoretry_handle_json(h, at, at, this.outLen);
  }

  /** Why machine `h` refused its last input: a `Refused` variant's name, or undefined. */
  lastRefusal(h) {
    return REFUSALS[this.x.autoretry_last_refusal(h)];
  }

  budgetNew(maxTokens, ratioMilli, tokensMilli) {
    return this.x.autoretry_budget_new(maxTokens, ratioMilli, flag(tokensMilli !== undefined), tokensMilli ?? 0);
  }

  budgetTokens(b) {
    return this.x.autoretry_budget_tokens(b);
  }

  budgetFree(b) {
    return this.x.autoretry_budget_free(b);
  }

  /** Lends machine `h` the rules blob at `[ptr, ptr + len)` of the memory. */
  rulesLoad(h, ptr, len) {
    return this.x.autoretry_rules_load(h, ptr, len);
  }

  rulesClear(h) {
    return this.x.autoretry_rules_clear(h);
  }
}
