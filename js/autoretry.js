// autoretry for JavaScript: the retry policy's state machine, compiled to
// WebAssembly, behind a `Machine` whose `handle(input)` takes and returns
// the JSON objects of the conformance vectors and the RPC stream.
//
// Numbers: an input's integer fields take a number (a non-negative safe
// integer) or a BigInt; outputs and the state carry numbers where they are
// safe integers and BigInts beyond 2^53 - 1 (u64 values reach 2^64 - 1).
//
// Errors are `AutoretryError`s with the module's `code` (`ERR_*`) and a
// message naming what was wrong; an input that throws changed nothing.

import {
  Abi,
  CLASSIFIERS,
  ERROR_NAMES,
  ERR_ARG,
  ERR_BUDGET,
  ERR_HANDLE,
  ERR_POOL_FULL,
  ERR_REFUSED,
  ERR_RULES_CORRUPT,
  ERR_RULES_FOREIGN,
  ERR_RULES_LENGTH,
  ERR_RULES_MISALIGNED,
  ERR_SETTINGS,
  ERR_TEXT_LEN,
  ERR_UTF8,
  PARTIALS,
  PROFILES,
  STOP_REASONS,
  fieldsLength,
} from "./abi.js";
import { Blobs } from "./blobs.js";
import { AutoretryError } from "./errors.js";
import { parseJson } from "./json.js";

export * from "./abi.js";
export { AutoretryError } from "./errors.js";
export { parseJson, stringifyJson } from "./json.js";

const U32_MAX = 0xffffffffn;
const U64_MAX = 0xffffffffffffffffn;

// A value for an error message, as the Rust decoder words it.
function describe(v) {
  if (v === null) return "null";
  if (typeof v === "boolean") return `a boolean ${v}`;
  if (typeof v === "number" || typeof v === "bigint") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "string") return `a string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return "an array";
  return v === undefined ? "nothing" : `a ${typeof v}`.replace("a object", "an object");
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// An optional field of an input or message: `null` is absent (undefined),
// as every other host of the machine reads it (the RPC stream, the vectors).
const optional = (v) => (v === null ? undefined : v);

// A non-negative integer up to `max`, as a BigInt; `null` when `v` is not one.
function uintOf(v, max) {
  if (typeof v === "bigint") return v >= 0n && v <= max ? v : null;
  // A number above 2^53 - 1 may have lost digits already: take a BigInt.
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 && !Object.is(v, -0)) return BigInt(v) <= max ? BigInt(v) : null;
  return null;
}

function uint(v, what, code = ERR_ARG, max = U64_MAX, expected = "a non-negative integer that fits u64") {
  const n = uintOf(v, max);
  if (n === null) throw new AutoretryError(code, `${what}: expected ${expected} (a safe integer or a BigInt), found ${describe(v)}`);
  return n;
}

function bool(v, what, code = ERR_ARG) {
  if (typeof v !== "boolean") throw new AutoretryError(code, `${what}: expected a boolean, found ${describe(v)}`);
  return v;
}

// The columns of spec §10.1: the defaults of the keys a group leaves out.
// The keys of spec §11.1 are off in both; those of §12.1 (the stream
// watchdog and empty answers) are on in `modern`.
const SECTION_11 = { modelFallback: false, maxUsageWaitMs: 0n, maxTotalDelayMs: 0n };
const DEFAULTS = {
  classic: { profile: "classic", enabled: true, maxRetries: 3, baseDelayMs: 2000n, maxDelayMs: 0n, backoffCapMs: 0n, jitterPct: 0, honorHints: false, classifier: "classic", ...SECTION_11, firstEventTimeoutMs: 0n, idleTimeoutMs: 0n, retryEmpty: false },
  modern: { profile: "modern", enabled: true, maxRetries: 10, baseDelayMs: 500n, maxDelayMs: 300000n, backoffCapMs: 8000n, jitterPct: 25, honorHints: true, classifier: "extended", ...SECTION_11, firstEventTimeoutMs: 300000n, idleTimeoutMs: 300000n, retryEmpty: true },
};

/**
 * The `retry` settings group (spec §4, §10.1, §11.1, §12.1), checked as the crate's
 * `wire::SettingsGroup` checks it: missing keys take the defaults of the
 * group's `profile` (classic when absent); a wrong type (null included), a
 * negative, fractional or out-of-range number, another string or an
 * unknown key throws ERR_SETTINGS naming the key.
 */
function decodeSettings(group) {
  const fail = (what) => {
    throw new AutoretryError(ERR_SETTINGS, what);
  };
  if (!isObject(group)) fail(`retry: expected an object, found ${describe(group)}`);
  const name = Object.hasOwn(group, "profile") ? group.profile : "classic";
  if (typeof name !== "string" || !Object.hasOwn(PROFILES, name)) fail(`retry.profile: expected "classic" or "modern", found ${describe(name)}`);
  const s = { ...DEFAULTS[name] };
  for (const [key, v] of Object.entries(group)) {
    const what = `retry.${key}`;
    switch (key) {
      case "profile":
        break;
      case "enabled":
      case "honorHints":
      case "modelFallback":
      case "retryEmpty":
        s[key] = bool(v, what, ERR_SETTINGS);
        break;
      case "maxRetries":
        s[key] = Number(uint(v, what, ERR_SETTINGS, U32_MAX, "a non-negative integer that fits u32"));
        break;
      case "baseDelayMs":
      case "maxDelayMs":
      case "backoffCapMs":
      case "maxUsageWaitMs":
      case "maxTotalDelayMs":
      case "firstEventTimeoutMs":
      case "idleTimeoutMs":
        s[key] = uint(v, what, ERR_SETTINGS);
        break;
      case "jitterPct":
        s[key] = Number(uint(v, what, ERR_SETTINGS, 100n, "an integer from 0 to 100"));
        break;
      case "classifier":
        if (typeof v !== "string" || !Object.hasOwn(CLASSIFIERS, v)) fail(`${what}: expected "classic", "extended" or "curated", found ${describe(v)}`);
        s[key] = v;
        break;
      default:
        fail(`retry: unknown key ${JSON.stringify(key)}`);
    }
  }
  return s;
}

// The host options (spec §2, §10.1): `contextWindow`, `credentialStore`, `seed`.
function decodeHost(host) {
  if (!isObject(host)) throw new AutoretryError(ERR_ARG, `host: expected an object, found ${describe(host)}`);
  const h = { contextWindow: 0n, credentialStore: false, seed: 0n };
  for (const [key, v] of Object.entries(host)) {
    if (key === "contextWindow" || key === "seed") h[key] = uint(v, `host.${key}`);
    else if (key === "credentialStore") h[key] = bool(v, `host.${key}`);
    else throw new AutoretryError(ERR_ARG, `host: unknown key ${JSON.stringify(key)}`);
  }
  return h;
}

// An assistant message (spec §2, §10.2, §11.2, §12.3); unknown fields are ignored, and
// an optional one that is `null` is absent.
function decodeMessage(m, maxText) {
  if (!isObject(m)) throw new AutoretryError(ERR_ARG, `message: expected an object, found ${describe(m)}`);
  const role = optional(m.role);
  if (role !== undefined && role !== "assistant") throw new AutoretryError(ERR_ARG, `message.role: expected "assistant", found ${describe(role)}`);
  const stop = m.stopReason;
  if (typeof stop !== "string" || !Object.hasOwn(STOP_REASONS, stop)) {
    throw new AutoretryError(ERR_ARG, `message.stopReason: expected one of "stop", "length", "toolUse", "error", "aborted", found ${describe(stop)}`);
  }
  const out = { stopReason: stop, text: undefined, usage: undefined, shouldRetry: undefined, retryAfterMs: undefined, partial: "none", empty: false, headers: [] };
  const text = optional(m.errorMessage);
  if (text !== undefined) {
    if (typeof text !== "string") throw new AutoretryError(ERR_ARG, `message.errorMessage: expected a string, found ${describe(text)}`);
    // TextEncoder would turn a lone surrogate into U+FFFD silently.
    if (typeof text.isWellFormed === "function" && !text.isWellFormed()) {
      throw new AutoretryError(ERR_UTF8, "message.errorMessage: a lone surrogate (not valid Unicode)");
    }
    out.text = new TextEncoder().encode(text);
    if (out.text.length > maxText) {
      throw new AutoretryError(ERR_TEXT_LEN, `message.errorMessage: ${out.text.length} bytes of UTF-8, more than the module's ${maxText}`);
    }
  }
  const usage = optional(m.usage);
  if (usage !== undefined) {
    if (!isObject(usage)) throw new AutoretryError(ERR_ARG, `message.usage: expected an object, found ${describe(usage)}`);
    const count = (key) => (optional(usage[key]) === undefined ? 0n : uint(usage[key], `message.usage.${key}`));
    out.usage = { input: count("input"), cacheRead: count("cacheRead"), cacheWrite: count("cacheWrite") };
  }
  if (optional(m.shouldRetry) !== undefined) out.shouldRetry = bool(m.shouldRetry, "message.shouldRetry");
  if (optional(m.retryAfterMs) !== undefined) out.retryAfterMs = uint(m.retryAfterMs, "message.retryAfterMs");
  const partial = optional(m.partial);
  if (partial !== undefined) {
    if (typeof partial !== "string" || !Object.hasOwn(PARTIALS, partial)) {
      throw new AutoretryError(ERR_ARG, `message.partial: expected one of "none", "text", "tools", found ${describe(partial)}`);
    }
    out.partial = partial;
  }
  // With partial text or tools the machine refuses it (EmptyWithPartial).
  if (optional(m.empty) !== undefined) out.empty = bool(m.empty, "message.empty");
  const headers = optional(m.headers);
  if (headers !== undefined) {
    out.headers = decodeHeaders(headers, "message.headers");
    const n = fieldsLength(out.text, out.headers);
    if (n > maxText) {
      throw new AutoretryError(ERR_TEXT_LEN, `message.errorMessage and message.headers: ${n} bytes in the module's text buffer, more than its ${maxText}`);
    }
  }
  return out;
}

// Response header fields (spec §13.1): a list of `[name, value]` string
// pairs, in the order received, as pairs of UTF-8 bytes.
function decodeHeaders(headers, what) {
  if (!Array.isArray(headers)) throw new AutoretryError(ERR_ARG, `${what}: expected a list of [name, value] pairs, found ${describe(headers)}`);
  const encoder = new TextEncoder();
  return headers.map((pair, k) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
      throw new AutoretryError(ERR_ARG, `${what}[${k}]: expected a [name, value] pair of strings, found ${describe(pair)}`);
    }
    return [encoder.encode(pair[0]), encoder.encode(pair[1])];
  });
}

// The default clock of the stream inputs: monotonic milliseconds
// (`performance.now()`, whose origin is the page's or process's start).
const monotonicMs = () => performance.now();

// A clock's reading as the u64 `nowMs` of a stream input: a number is
// rounded down to whole milliseconds.
function clockMs(clock) {
  const t = clock();
  if (typeof t === "number" && Number.isFinite(t) && t >= 0) return BigInt(Math.floor(t));
  if (typeof t === "bigint" && t >= 0n && t <= U64_MAX) return t;
  throw new AutoretryError(ERR_ARG, `clock: expected a non-negative number of milliseconds (or a BigInt), found ${describe(t)}`);
}

/** A loaded WebAssembly module: up to its pool size of machines at once. */
export class AutoretryModule {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    /** @internal */
    this.abi = new Abi(instance);
    /** @internal The rules blobs machines hold, in the module's memory. */
    this.blobs = new Blobs(this.abi);
  }

  /** The longest `errorMessage` the module takes, in UTF-8 bytes. */
  get maxText() {
    return this.abi.maxText;
  }

  /** Whether machines of this module can load rules (`autoretry-rules.wasm`). */
  get hasRules() {
    return this.abi.hasRules;
  }

  /**
   * Whether this module has the extended classifier, and so the modern
   * profile, whose classifier it is (`autoretry-extended.wasm` and
   * `autoretry-rules.wasm`; the default `autoretry.wasm` has the classic
   * classifier only).
   */
  get hasExtended() {
    return this.abi.hasExtended;
  }

  /**
   * Whether this module has the curated classifier of spec §13.2
   * (`autoretry-curated.wasm`, which has the extended one too).
   */
  get hasCurated() {
    return this.abi.hasCurated;
  }

  /**
   * Classifies an error text as the module's machines do with `classifier`
   * ("classic", the default, "extended" or "curated"):
   * `{retryable, overflow, usageLimit, hintMs}`, `hintMs` the wait the
   * text asks for (read without a clock) or null. Throws ERR_SETTINGS for
   * a classifier the module lacks, ERR_TEXT_LEN for a text over `maxText`
   * bytes.
   * @param {string} text
   * @param {string} [classifier]
   */
  classify(text, classifier = "classic") {
    if (typeof classifier !== "string" || !Object.hasOwn(CLASSIFIERS, classifier)) {
      throw new AutoretryError(ERR_SETTINGS, `classifier: expected "classic", "extended" or "curated", found ${describe(classifier)}`);
    }
    checkClassifier(this, { profile: "classic", classifier }, "classifier");
    if (typeof text !== "string") throw new AutoretryError(ERR_ARG, `text: expected a string, found ${describe(text)}`);
    // TextEncoder would turn a lone surrogate into U+FFFD silently.
    if (typeof text.isWellFormed === "function" && !text.isWellFormed()) throw new AutoretryError(ERR_UTF8, "text: a lone surrogate (not valid Unicode)");
    const bytes = new TextEncoder().encode(text);
    if (bytes.length > this.maxText) throw new AutoretryError(ERR_TEXT_LEN, `text: ${bytes.length} bytes of UTF-8, more than the module's ${this.maxText}`);
    const got = this.abi.classify(CLASSIFIERS[classifier], bytes);
    if (typeof got === "number") throw new AutoretryError(got, `classify: the module returned ${ERROR_NAMES[got] ?? got}`);
    return { ...got, hintMs: got.hintMs === null ? null : safe(got.hintMs) };
  }

  /**
   * What response header fields say (spec §13.1): `[name, value]` string
   * pairs in the order received and, for a date, the wall clock `nowMs`
   * (Unix ms): `{shouldRetry, retryAfterMs}`, each null when the headers
   * do not say.
   * @param {[string, string][]} headers
   * @param {number | bigint | null} [nowMs]
   */
  readHeaders(headers, nowMs) {
    const pairs = decodeHeaders(headers, "headers");
    const n = fieldsLength(undefined, pairs);
    if (n > this.maxText) throw new AutoretryError(ERR_TEXT_LEN, `headers: ${n} bytes in the module's text buffer, more than its ${this.maxText}`);
    const now = optional(nowMs) === undefined ? undefined : uint(nowMs, "nowMs");
    const got = this.abi.readHeaders(pairs, now);
    if (typeof got === "number") throw new AutoretryError(got, `readHeaders: the module returned ${ERROR_NAMES[got] ?? got}`);
    return { ...got, retryAfterMs: got.retryAfterMs === null ? null : safe(got.retryAfterMs) };
  }
}

// A u64 as the wrapper's outputs carry it: a number when it is a safe
// integer, else a BigInt.
const safe = (n) => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n);

/**
 * The URL of the module with the extended classifier (and so the modern
 * profile), `autoretry-extended.wasm` next to this file:
 * `load(EXTENDED_WASM_URL)`.
 */
export const EXTENDED_WASM_URL = new URL("./autoretry-extended.wasm", import.meta.url);

/**
 * The URL of the module with the curated classifier of spec §13.2 (and
 * the extended one), `autoretry-curated.wasm` next to this file:
 * `load(CURATED_WASM_URL)`.
 */
export const CURATED_WASM_URL = new URL("./autoretry-curated.wasm", import.meta.url);

// Settings that need a classifier the module lacks (the extended one, or
// the modern profile whose it is; the curated one): a clear ERR_SETTINGS
// rather than the module's bare refusal.
function checkClassifier(module, s, key = "retry.classifier") {
  if (s.classifier === "curated") {
    if (module.hasCurated) return;
    throw new AutoretryError(ERR_SETTINGS, `${key} "curated" (spec §13.2): this module has no curated classifier: load autoretry-curated.wasm (CURATED_WASM_URL)`);
  }
  if (module.hasExtended || (s.profile !== "modern" && s.classifier !== "extended")) return;
  const what = s.profile === "modern" ? 'retry.profile "modern" (its classifier is the extended one)' : `${key} "extended"`;
  throw new AutoretryError(ERR_SETTINGS, `${what}: this module (autoretry.wasm) has the classic classifier only: load autoretry-extended.wasm (EXTENDED_WASM_URL) or autoretry-rules.wasm (RULES_WASM_URL)`);
}

/**
 * The URL of the module that loads your own rules, `autoretry-rules.wasm`
 * next to this file: `load(RULES_WASM_URL)`.
 */
export const RULES_WASM_URL = new URL("./autoretry-rules.wasm", import.meta.url);

// What each refusal of a rules blob means.
const RULES_REFUSALS = {
  [ERR_RULES_FOREIGN]: "not a compiled rules blob (`autoretry rules compile`), or one of another format version or byte order",
  [ERR_RULES_LENGTH]: "the blob is shorter or longer than its header says (truncated or padded)",
  [ERR_RULES_MISALIGNED]: "a dense DFA not at a 4-byte aligned address",
  [ERR_RULES_CORRUPT]: "the blob is damaged (a header field, its checksum, its rule counts or its DFA)",
};

// How to make a missing module of this package's (in a checkout of the
// repository the .wasm files are built, not committed).
function buildHint(url) {
  const name = url.pathname.split("/").pop();
  if (!["autoretry.wasm", "autoretry-extended.wasm", "autoretry-rules.wasm", "autoretry-curated.wasm"].includes(name)) return "";
  return ": build it with `sh js/build.sh` in the repository (it needs the Rust toolchain, rustup), which writes js/autoretry.wasm, js/autoretry-extended.wasm, js/autoretry-rules.wasm and js/autoretry-curated.wasm, or pass load() the module's bytes or URL";
}

/**
 * Instantiates the module. `source` is the `.wasm` as bytes, a
 * `WebAssembly.Module`, a `Response` (or a promise of one, e.g. `fetch(url)`:
 * compiled while it streams) or a URL; without it, `autoretry.wasm` next to
 * this file.
 * @returns {Promise<AutoretryModule>}
 */
export async function load(source = new URL("./autoretry.wasm", import.meta.url)) {
  if (typeof source === "string" || source instanceof URL) {
    const url = new URL(source, import.meta.url);
    if (url.protocol === "file:") {
      const { readFile } = await import("node:fs/promises");
      try {
        source = await readFile(url);
      } catch (e) {
        if (e?.code !== "ENOENT") throw e;
        throw Object.assign(new Error(`no WebAssembly module at ${decodeURIComponent(url.pathname)}${buildHint(url)}`, { cause: e }), { code: e.code });
      }
    } else source = fetch(url);
  }
  source = await source;
  if (typeof Response !== "undefined" && source instanceof Response && !source.ok) {
    throw new Error(`no WebAssembly module at ${source.url}: HTTP ${source.status} ${source.statusText}`.trimEnd() + buildHint(new URL(source.url)));
  }
  let instance;
  if (source instanceof WebAssembly.Module) instance = await WebAssembly.instantiate(source, {});
  else if (typeof Response !== "undefined" && source instanceof Response) {
    ({ instance } = await WebAssembly.instantiateStreaming(source, {}));
  } else ({ instance } = await WebAssembly.instantiate(source, {}));
  return new AutoretryModule(instance);
}

// Frees the slot of a machine that was dropped without `free()`, and its
// hold on a rules blob.
const slots = new FinalizationRegistry(({ module, handle }) => {
  module.abi.free(handle);
  module.blobs.release(handle);
});

/**
 * One retry machine. Feed it every input of the agent in order and carry out
 * every output of an input before the next (the drain rule).
 */
export class Machine {
  #module;
  #abi;
  #handle;
  #clock;

  /**
   * @param {AutoretryModule} module from `load()`
   * @param {{settings?: object, host?: object, clock?: () => number | bigint}} [options]
   *   the `retry` group (spec §4, §10.1, §11.1, §12.1; missing keys
   *   default), the host options (`contextWindow`, `credentialStore`,
   *   `seed`) and the monotonic clock in milliseconds that `streamStart()`
   *   and `streamEvent()` read (default: `performance.now()`); another key
   *   throws ERR_ARG
   */
  constructor(module, options = {}) {
    if (!(module instanceof AutoretryModule)) throw new AutoretryError(ERR_ARG, "module: expected what load() returns");
    if (!isObject(options)) throw new AutoretryError(ERR_ARG, `options: expected an object ({settings, host, clock}), found ${describe(options)}`);
    for (const key of Object.keys(options)) {
      if (key !== "settings" && key !== "host" && key !== "clock") {
        throw new AutoretryError(ERR_ARG, `options: unknown key ${JSON.stringify(key)} (expected "settings", "host" or "clock")`);
      }
    }
    const { settings = {}, host = {}, clock = monotonicMs } = options;
    if (typeof clock !== "function") throw new AutoretryError(ERR_ARG, `options.clock: expected a function returning milliseconds, found ${describe(clock)}`);
    const s = decodeSettings(settings);
    checkClassifier(module, s);
    const h = decodeHost(host);
    const handle = module.abi.create(s, h);
    if (handle === ERR_POOL_FULL) throw new AutoretryError(ERR_POOL_FULL, "every slot of the module's pool is in use or retired: free() a machine first (each slot serves 2^23 machines, then is retired: once all are, load() the module again)");
    if (handle < 0) throw new AutoretryError(handle, `creating the machine failed: ${ERROR_NAMES[handle] ?? handle}`);
    this.#module = module;
    this.#abi = module.abi;
    this.#handle = handle;
    this.#clock = clock;
    slots.register(this, { module, handle }, this);
  }

  #live() {
    if (this.#handle < 0) throw new AutoretryError(ERR_HANDLE, "this machine was freed");
    return this.#handle;
  }

  // The JSON of a non-negative result, or the error of a negative one.
  #result(n, type) {
    if (n >= 0) return parseJson(this.#abi.read(n));
    if (n === ERR_REFUSED) throw this.#refusal(type);
    throw new AutoretryError(n, `${type}: the module returned ${ERROR_NAMES[n] ?? n}`);
  }

  // Why the machine refused `type` (it changed nothing): the module's
  // last refusal, a `Refused` variant of the crate.
  #refusal(type) {
    const reason = this.#abi.lastRefusal(this.#handle);
    const why = {
      AgentRunDuringBackoff: `the agent must not run while a retry backoff is pending (timer ${this.pendingTimer()}: wait for its timer_fired, or abort_retry)`,
      AwaitingUsageLimitAnswer: "the agent must not run while the usage-limit answer (usage_limit_marked) is awaited",
      AwaitingModelSwitchAnswer: "the agent must not run while the fallback answer (model_switched) is awaited",
      UsageLimitTextMismatch: "the usage-limit answer carries another text than the one marked",
      ModelSwitchTextMismatch: "the fallback answer carries another text than the one of the decision",
      EmptyWithPartial: "message.empty: an empty answer cannot have partial text or tool calls (spec §12.3)",
    }[reason];
    return new AutoretryError(ERR_REFUSED, `${type} refused: ${why ?? "out of turn for the machine's state"} (spec §6a); nothing changed`, reason);
  }

  /**
   * Feeds one input (`{type: "agent_end", message: {...}}`, ...) and returns
   * its outputs (`[{type: "emit", event: {...}}, {type: "sleep", ms, timer}, ...]`).
   * The stream inputs take the host's `nowMs`; `streamStart()` and
   * `streamEvent()` read it from the machine's clock.
   * With a `budget` (spec §11.4, of the same module), a retry decision
   * charges it and a good `agent_end` refills it; without, no accounting.
   * @param {object} input
   * @param {Budget} [budget]
   * @returns {object[]}
   */
  handle(input, budget) {
    const h = this.#live();
    const abi = this.#abi;
    let b = 0;
    if (budget !== undefined && budget !== null) {
      if (!(budget instanceof Budget)) throw new AutoretryError(ERR_ARG, `budget: expected a Budget, found ${describe(budget)}`);
      b = budget.handleIn(this.#module);
    }
    if (!isObject(input)) throw new AutoretryError(ERR_ARG, `input: expected an object, found ${describe(input)}`);
    const type = input.type;
    let fields;
    switch (type) {
      case "message_end":
        fields = { type, message: decodeMessage(input.message, abi.maxText) };
        break;
      case "agent_end": {
        const message = decodeMessage(input.message, abi.maxText);
        const nowMs = optional(input.nowMs) === undefined ? undefined : uint(input.nowMs, "nowMs");
        fields = { type, message, nowMs };
        break;
      }
      case "timer_fired":
        fields = { type, timer: uint(input.timer, "timer") };
        break;
      case "usage_limit_marked":
      case "model_switched":
        fields = { type, switched: bool(input.switched, "switched") };
        break;
      case "abort_retry":
      case "abort":
        fields = { type };
        break;
      case "set_auto_retry":
        fields = { type, enabled: bool(input.enabled, "enabled") };
        break;
      case "settings":
        fields = { type, settings: decodeSettings(input.settings) };
        checkClassifier(this.#module, fields.settings);
        break;
      case "stream_start":
      case "stream_event":
        // Spec §12.2: `nowMs`, the host's monotonic clock, is required.
        fields = { type, nowMs: uint(input.nowMs, "nowMs") };
        break;
      default:
        throw new AutoretryError(
          ERR_ARG,
          `type: unknown input ${describe(type)} (expected message_end, agent_end, timer_fired, usage_limit_marked, model_switched, abort_retry, abort, set_auto_retry, settings, stream_start or stream_event)`,
        );
    }
    return this.#result(abi.input(h, fields, b), type);
  }

  /**
   * `stream_start` (spec §12.2) at the machine's clock: the host sent a
   * request to the provider (the run's first, and each later one). With
   * `firstEventTimeoutMs` set it returns a `watch` to run like a `sleep`
   * (answer `timer_fired` with its timer when it runs out). Refused
   * (ERR_REFUSED) while a backoff waits or an answer is awaited.
   * @returns {object[]}
   */
  streamStart() {
    return this.handle({ type: "stream_start", nowMs: clockMs(this.#clock) });
  }

  /**
   * `stream_event` (spec §12.2) at the machine's clock: an event of the
   * answer that shows progress (a text, thinking or tool-call delta, a
   * message event). Not a keep-alive ping or an SSE comment: a stream
   * that only pings stalls. Usually returns nothing; with `idleTimeoutMs`
   * set and no watch pending, a `watch`.
   * @returns {object[]}
   */
  streamEvent() {
    return this.handle({ type: "stream_event", nowMs: clockMs(this.#clock) });
  }

  /**
   * The query surface: `{autoRetryEnabled, isRetrying, retryAttempt}`.
   * @returns {{autoRetryEnabled: boolean, isRetrying: boolean, retryAttempt: number}}
   */
  state() {
    return this.#result(this.#abi.state(this.#live()), "state");
  }

  /**
   * The id of the backoff timer that is pending, or null.
   * @returns {number | bigint | null}
   */
  pendingTimer() {
    const id = this.#abi.pendingTimer(this.#live());
    if (id === 0n) return null;
    return id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id;
  }

  /**
   * Lends the machine your own rules: a blob of `autoretry rules compile`.
   * From the next input on, a message with an error text and no
   * `shouldRetry` gets the rules' verdict as its `shouldRetry` (a `never`
   * rule: false, else a `retry` rule: true, else none); the classifier and
   * the overflow rule still apply (spec §10.2). Replaces the rules the
   * machine had.
   *
   * The bytes are copied into the module's memory (grown for them, see
   * `blobs.js`; machines that load the same bytes share one copy) and
   * validated there once. A refused blob throws ERR_RULES_FOREIGN,
   * ERR_RULES_LENGTH or ERR_RULES_CORRUPT, a memory that cannot grow for
   * it ERR_BUFFER, and the machine keeps the rules it had. A module
   * without rules (`autoretry.wasm`) throws ERR_ARG: load
   * `autoretry-rules.wasm` (`RULES_WASM_URL`).
   * @param {Uint8Array | ArrayBuffer} bytes
   */
  loadRules(bytes) {
    const h = this.#live();
    if (!this.#abi.hasRules) {
      throw new AutoretryError(ERR_ARG, "loadRules: this module has no rules loader: load autoretry-rules.wasm (RULES_WASM_URL) instead of autoretry.wasm");
    }
    if (!(bytes instanceof Uint8Array || bytes instanceof ArrayBuffer)) {
      throw new AutoretryError(ERR_ARG, `loadRules: expected the blob as a Uint8Array or an ArrayBuffer, found ${describe(bytes)}`);
    }
    const blobs = this.#module.blobs;
    // A copy: the caller's bytes may change, or be a view that growing the memory detaches.
    let place;
    try {
      place = blobs.place(new Uint8Array(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes));
    } catch (e) {
      if (e instanceof AutoretryError) throw new AutoretryError(e.code, `loadRules: ${e.message}; the machine keeps the rules it had`);
      throw e;
    }
    const n = this.#abi.rulesLoad(h, place.start, place.length);
    if (n !== 0) {
      const why = RULES_REFUSALS[n] ?? `the module returned ${ERROR_NAMES[n] ?? n}`;
      throw new AutoretryError(n, `loadRules: ${why}; the machine keeps the rules it had`);
    }
    blobs.hold(place, h);
  }

  /**
   * Takes the machine's rules away (if it had any): the classifier alone
   * decides again. A module without rules has none to take.
   */
  clearRules() {
    const h = this.#live();
    if (!this.#abi.hasRules) return;
    const n = this.#abi.rulesClear(h);
    if (n !== 0) throw new AutoretryError(n, `clearRules: the module returned ${ERROR_NAMES[n] ?? n}`);
    this.#module.blobs.release(h);
  }

  /** Releases the machine's slot in the module (and its rules); using it after is an error. */
  free() {
    if (this.#handle < 0) return;
    this.#abi.free(this.#handle);
    this.#module.blobs.release(this.#handle);
    slots.unregister(this);
    this.#handle = -1;
  }
}

// Frees the table place of a budget that was dropped without `free()`.
const budgets = new FinalizationRegistry(({ module, handle }) => module.abi.budgetFree(handle));

// A figure of the budget in thousandths, read exactly from the number's
// shortest decimal form (`String(v)`, what `JSON.stringify` writes), as the
// command line's `--budget` reads its text: a digit past the thousandths
// that is not 0 refuses the figure (`2.0000000001`, `1e-7`), nothing is
// rounded.
function milliOf(v, what, min, max) {
  const milli = typeof v === "number" ? decimalMilli(String(v)) : undefined;
  if (!(milli >= min && milli <= max)) {
    throw new AutoretryError(ERR_ARG, `${what}: expected a number from ${min / 1000} to ${max / 1000} with at most three digits after the point, found ${describe(v)}`);
  }
  return milli;
}

// A non-negative decimal (`12`, `0.5`, `1e-3`, `1.5e+21`) in exact
// thousandths, or undefined when it is not one, or has a nonzero digit
// past the thousandths. Above 2^53 thousandths the result is only large
// (every figure's range ends far below).
function decimalMilli(text) {
  const parts = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(text);
  if (parts === null) return undefined;
  const [, int, frac = "", exp = "0"] = parts;
  const digits = int + frac;
  // The digits times 10^scale are the thousandths.
  const scale = Number(exp) + 3 - frac.length;
  if (scale >= 0) return Number(digits) * 10 ** scale;
  const kept = Math.max(digits.length + scale, 0);
  if (/[1-9]/.test(digits.slice(kept))) return undefined;
  return Number(digits.slice(0, kept) || "0");
}

/**
 * A retry budget shared by machines (spec §11.4): every retry decision
 * charges a token, every run that ends well refills `tokenRatio`; at half
 * the tokens or less a retry is throttled. Hand it to `Machine.handle`.
 * The module's table holds 8 at once.
 */
export class Budget {
  #module;
  #handle;

  /**
   * @param {AutoretryModule} module from `load()`
   * @param {{maxTokens: number, tokenRatio: number, tokens?: number}} figures
   *   `maxTokens` 1 to 1000, `tokenRatio` 0.001 to 1000, `tokens` 0 to
   *   `maxTokens` (default: full), the last two with at most three digits
   *   after the point in their shortest decimal form (`String(n)`, read
   *   exactly: `2.0000000001` is refused, not rounded); throws ERR_ARG for
   *   others, ERR_POOL_FULL when the table is full
   */
  constructor(module, figures) {
    if (!(module instanceof AutoretryModule)) throw new AutoretryError(ERR_ARG, "module: expected what load() returns");
    if (!isObject(figures)) throw new AutoretryError(ERR_ARG, `budget: expected an object ({maxTokens, tokenRatio, tokens}), found ${describe(figures)}`);
    for (const key of Object.keys(figures)) {
      if (!["maxTokens", "tokenRatio", "tokens"].includes(key)) throw new AutoretryError(ERR_ARG, `budget: unknown key ${JSON.stringify(key)}`);
    }
    const max = Number(uint(figures.maxTokens, "budget.maxTokens", ERR_ARG, 1000n, "an integer from 1 to 1000"));
    if (max === 0) throw new AutoretryError(ERR_ARG, "budget.maxTokens: expected an integer from 1 to 1000, found 0");
    const ratio = milliOf(figures.tokenRatio, "budget.tokenRatio", 1, 1_000_000);
    const tokens = optional(figures.tokens) === undefined ? undefined : milliOf(figures.tokens, "budget.tokens", 0, max * 1000);
    const handle = module.abi.budgetNew(max, ratio, tokens);
    if (handle === ERR_POOL_FULL) throw new AutoretryError(ERR_POOL_FULL, "every place of the module's budget table is in use: free() a budget first");
    if (handle < 0) throw new AutoretryError(handle, `creating the budget failed: ${ERROR_NAMES[handle] ?? handle}`);
    this.#module = module;
    this.#handle = handle;
    budgets.register(this, { module, handle }, this);
  }

  /** @internal The budget's handle for an input of `module`'s machines. */
  handleIn(module) {
    if (this.#handle < 0) throw new AutoretryError(ERR_BUDGET, "this budget was freed");
    if (module !== this.#module) throw new AutoretryError(ERR_BUDGET, "budget: of another module than the machine's");
    return this.#handle;
  }

  /** The tokens it holds, e.g. 2.5. */
  get tokens() {
    return this.tokensMilli / 1000;
  }

  /** The tokens it holds, in thousandths (exact), e.g. 2500. */
  get tokensMilli() {
    const n = this.#module.abi.budgetTokens(this.handleIn(this.#module));
    if (n < 0) throw new AutoretryError(n, `budget: the module returned ${ERROR_NAMES[n] ?? n}`);
    return n;
  }

  /** Releases its place in the module's table; using it after throws ERR_BUDGET. */
  free() {
    if (this.#handle < 0) return;
    this.#module.abi.budgetFree(this.#handle);
    budgets.unregister(this);
    this.#handle = -1;
  }
}
