// Runs conformance vectors through the WebAssembly module (the package
// `autoretry-ffi` built for wasm32-unknown-unknown), driving it by hand
// through its C ABI, the way a host with no allocator would:
//
//     node ffi/wasm/run-vectors.mjs [--api ex|old|struct] autoretry.wasm VECTOR_FILE...
//
// e.g. `tests/vectors/*.jsonl` (sections 1-9),
// `tests/vectors/options/*.jsonl` (the policy options of section 10) or
// `tests/vectors/beyond/*.jsonl` (section 11, `--api struct` only) or
// `tests/vectors/stream/*.jsonl` (section 12, `--api struct` only) or
// `tests/vectors/response/*.jsonl` (section 13, `--api struct` only: a
// message's `headers`).
// `--api ex` (the default) uses the entry points that take every option
// (`autoretry_new_ex`, `autoretry_settings_ex`, `autoretry_message_end_ex`,
// `autoretry_agent_end_ex`); `--api old` the ones of the first hosts, which
// know only the section 4 settings and the section 2 message (a vector that
// needs more is an error); `--api struct` every field of section 11 too:
// the machine from a settings struct (`autoretry_new_c`), every input as an
// `autoretry_input` struct (`autoretry_handle_json`; the stream inputs of
// section 12 with their `nowMs`, a message's `empty` and `headers`), with the scenario's
// retry budget (`autoretry_budget_new`), whose tokens are checked after
// every step.
//
// A module without feature `extended` (the default `autoretry.wasm`) has
// the classic classifier only, and only `autoretry-curated.wasm` (feature
// `curated`) has the curated one: a scenario whose settings ask for a
// classifier the module lacks (the extended one or the modern profile, the
// curated one) must be refused there with ERR_SETTINGS (its machine not
// created, or the settings input refused with the state unchanged), and the
// rest of that scenario is not run.
//
// Exits 0 only when every step's outputs, state and refusal match, and every
// emitted event has the spec's key order. Before the vectors
// it checks that the module refuses out-of-range settings and codes and
// changes nothing then. Node 20, no packages.
//
// The host side: texts go through the module's text buffer, outputs come back
// as JSON in its output buffer; timer ids are mapped to the vectors' ordinals;
// the settings group is decoded here as spec sections 4 and 10.1 say (the
// module takes typed scalars). Numbers are read exactly (integers as BigInt):
// vectors reach u64::MAX.

import { readFileSync } from "node:fs";
import { basename } from "node:path";

// ---------------------------------------------------------------- JSON
// A JSON number, kept as its literal text.
class Num {
  constructor(text) {
    this.text = text;
  }
  isUint() {
    return /^(0|[1-9][0-9]*)$/.test(this.text);
  }
  big() {
    return BigInt(this.text);
  }
  equals(other) {
    const int = /^-?(0|[1-9][0-9]*)$/;
    if (int.test(this.text) && int.test(other.text)) return BigInt(this.text) === BigInt(other.text);
    return Number(this.text) === Number(other.text);
  }
}

// A strict JSON parser: numbers as Num, objects keep key order, a duplicate
// key is recorded in the DUPLICATE symbol (the settings group refuses them).
const DUPLICATE = Symbol("duplicate");
function parseJson(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (what) => {
    throw new Error(`JSON: ${what} at ${i}`);
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj = {};
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const key = string();
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        const v = value();
        if (Object.prototype.hasOwnProperty.call(obj, key)) obj[DUPLICATE] = key;
        obj[key] = v;
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const arr = [];
      ws();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!m) fail("unexpected character");
    i += m[0].length;
    return new Num(m[0]);
  };
  const string = () => {
    i++; // opening quote
    let out = "";
    for (;;) {
      const c = text[i++];
      if (c === undefined) fail("unterminated string");
      if (c === '"') return out;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = text[i++];
      const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e in simple) out += simple[e];
      else if (e === "u") {
        const hex = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
      } else fail("bad escape");
    }
  };
  const v = value();
  ws();
  if (i !== text.length) fail("trailing characters");
  return v;
}

// Deep equality, object key order aside.
function equal(a, b) {
  if (a instanceof Num || b instanceof Num) return a instanceof Num && b instanceof Num && a.equals(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, k) => equal(x, b[k]));
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && equal(a[k], b[k]));
  }
  return a === b;
}

function show(v) {
  return JSON.stringify(v, (_, x) => (x instanceof Num ? `#${x.text}` : x));
}

// ---------------------------------------------------------------- host
const U32_MAX = 0xffffffffn;
const U64_MAX = 0xffffffffffffffffn;
const STOP = { stop: 1, length: 2, toolUse: 3, error: 4, aborted: 5 };
// The module's codes (`autoretry_ffi`).
const PROFILE = { classic: 0, modern: 1 };
const CLASSIFIER = { classic: 0, extended: 1, curated: 2 };
const SHOULD_RETRY = { absent: 0, false: 1, true: 2 };
const ERR_ARG = -6;
const ERR_SETTINGS = -8;

// The columns of spec 10.1: the defaults of the keys a group leaves out.
const SECTION_11 = { modelFallback: false, maxUsageWaitMs: 0n, maxTotalDelayMs: 0n };
// Section 12.1: the `_ex` entry points leave these keys at their classic
// defaults whatever the profile (only the input struct gives them).
const SECTION_12 = {
  classic: { firstEventTimeoutMs: 0n, idleTimeoutMs: 0n, retryEmpty: false },
  modern: { firstEventTimeoutMs: 300000n, idleTimeoutMs: 300000n, retryEmpty: true },
};
const PROFILES = {
  classic: { profile: "classic", enabled: true, maxRetries: 3n, baseDelayMs: 2000n, maxDelayMs: 0n, backoffCapMs: 0n, jitterPct: 0n, honorHints: false, classifier: "classic", ...SECTION_11, ...SECTION_12.classic },
  modern: { profile: "modern", enabled: true, maxRetries: 10n, baseDelayMs: 500n, maxDelayMs: 300000n, backoffCapMs: 8000n, jitterPct: 25n, honorHints: true, classifier: "extended", ...SECTION_11, ...SECTION_12.modern },
};
const PARTIAL = { none: 0, text: 1, tools: 2 };
const INPUT = { message_end: 1, agent_end: 2, timer_fired: 3, usage_limit_marked: 4, abort_retry: 5, abort: 6, set_auto_retry: 7, settings: 8, model_switched: 9, stream_start: 10, stream_event: 11 };

// The `retry` settings group, strictly (spec 4 and 10.1): missing keys take
// the default of the group's profile (classic when absent); a wrong type, a
// non-integer, a negative or out-of-range number, a string other than the
// listed ones, an unknown or repeated key is an error (a string), else the
// settings.
function decodeSettings(group) {
  if (!group || typeof group !== "object" || Array.isArray(group) || group instanceof Num) return "retry: expected an object";
  if (group[DUPLICATE] !== undefined) return `retry: duplicate key ${group[DUPLICATE]}`;
  const name = group.profile === undefined ? "classic" : group.profile;
  if (typeof name !== "string" || !Object.hasOwn(PROFILES, name)) return 'retry.profile: expected "classic" or "modern"';
  const s = { ...PROFILES[name] };
  const ints = { maxRetries: U32_MAX, baseDelayMs: U64_MAX, maxDelayMs: U64_MAX, backoffCapMs: U64_MAX, jitterPct: 100n, maxUsageWaitMs: U64_MAX, maxTotalDelayMs: U64_MAX, firstEventTimeoutMs: U64_MAX, idleTimeoutMs: U64_MAX };
  for (const [key, v] of Object.entries(group)) {
    if (key === "profile") continue;
    if (key === "enabled" || key === "honorHints" || key === "modelFallback" || key === "retryEmpty") {
      if (typeof v !== "boolean") return `retry.${key}: expected a boolean`;
      s[key] = v;
    } else if (Object.hasOwn(ints, key)) {
      if (!(v instanceof Num) || !v.isUint() || v.big() > ints[key]) return `retry.${key}: expected an integer from 0 to ${ints[key]}`;
      s[key] = v.big();
    } else if (key === "classifier") {
      if (typeof v !== "string" || !Object.hasOwn(CLASSIFIER, v)) return 'retry.classifier: expected "classic", "extended" or "curated"';
      s.classifier = v;
    } else return `retry: unknown key ${key}`;
  }
  return s;
}

// The settings as the scalar arguments of `autoretry_new_ex` and
// `autoretry_settings_ex`, in the spec's order.
function settingsArgs(s) {
  for (const key of Object.keys(SECTION_11)) if (s[key] !== SECTION_11[key]) throw new Error(`retry.${key} needs --api struct`);
  return [PROFILE[s.profile], s.enabled ? 1 : 0, Number(s.maxRetries), s.baseDelayMs, s.maxDelayMs, s.backoffCapMs, Number(s.jitterPct), s.honorHints ? 1 : 0, CLASSIFIER[s.classifier]];
}

// The settings as the arguments of `autoretry_new` and `autoretry_settings`,
// which know only the keys of section 4; the others must be at their classic
// defaults.
function oldSettingsArgs(s) {
  const c = PROFILES.classic;
  for (const key of ["profile", "maxDelayMs", "backoffCapMs", "jitterPct", "honorHints", "classifier"]) {
    if (s[key] !== c[key]) throw new Error(`retry.${key} needs --api ex`);
  }
  return [s.enabled ? 1 : 0, Number(s.maxRetries), s.baseDelayMs];
}

// The settings as an `autoretry_retry_settings` at `at` (wasm32 layout, 96
// bytes: nine 4- or 8-byte keys, then the three of section 11 and the three
// of section 12).
function writeSettings(view, at, s) {
  view.setUint32(at, PROFILE[s.profile], true);
  view.setUint32(at + 4, s.enabled ? 1 : 0, true);
  view.setUint32(at + 8, Number(s.maxRetries), true);
  view.setUint32(at + 12, Number(s.jitterPct), true);
  view.setBigUint64(at + 16, s.baseDelayMs, true);
  view.setBigUint64(at + 24, s.maxDelayMs, true);
  view.setBigUint64(at + 32, s.backoffCapMs, true);
  view.setUint32(at + 40, s.honorHints ? 1 : 0, true);
  view.setUint32(at + 44, CLASSIFIER[s.classifier], true);
  view.setUint32(at + 48, s.modelFallback ? 1 : 0, true);
  view.setBigUint64(at + 56, s.maxUsageWaitMs, true);
  view.setBigUint64(at + 64, s.maxTotalDelayMs, true);
  view.setBigUint64(at + 72, s.firstEventTimeoutMs, true);
  view.setBigUint64(at + 80, s.idleTimeoutMs, true);
  view.setUint32(at + 88, s.retryEmpty ? 1 : 0, true);
}

// The size of `autoretry_input` on wasm32, and of `autoretry_header`.
const INPUT_SIZE = 208;
const HEADER_SIZE = 16;

// A message's `headers` (spec 13.1): a list of `[name, value]` string
// pairs, else null (the vectors expect a refusal).
function headerPairs(headers) {
  const pair = (p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === "string");
  return Array.isArray(headers) && headers.every(pair) ? headers : null;
}

// A decimal number (at most three digits after the point) in thousandths,
// as the budget's figures are given: 0.5 is 500n.
function milli(v, what) {
  const m = v instanceof Num ? /^(0|[1-9][0-9]*)(?:\.([0-9]{1,3}))?$/.exec(v.text) : null;
  if (!m) throw new Error(`${what}: expected a number with at most three decimals`);
  return BigInt(m[1]) * 1000n + BigInt((m[2] ?? "").padEnd(3, "0"));
}

// The `nowMs` of an input (a stream input's, an `agent_end`'s), or null
// when it is missing or not a u64 (the vectors expect a refusal).
function streamNow(input) {
  const v = input.nowMs;
  return v instanceof Num && v.isUint() && v.big() <= U64_MAX ? v.big() : null;
}

function uint(v, what) {
  if (!(v instanceof Num) || !v.isUint() || v.big() > U64_MAX) throw new Error(`${what}: expected a u64`);
  return v.big();
}

// The host options of a scenario line (spec 2 and 10.1), strictly.
function decodeHost(host) {
  if (!host || typeof host !== "object" || Array.isArray(host) || host instanceof Num) throw new Error("host: expected an object");
  const h = { contextWindow: 0n, credentialStore: false, seed: 0n };
  for (const [key, v] of Object.entries(host)) {
    if (key === "contextWindow" || key === "seed") h[key] = uint(v, `host.${key}`);
    else if (key === "credentialStore") {
      if (typeof v !== "boolean") throw new Error("host.credentialStore: expected a boolean");
      h.credentialStore = v;
    } else throw new Error(`host: unknown key ${key}`);
  }
  return h;
}

class Host {
  constructor(instance, api) {
    this.api = api;
    this.x = instance.exports;
    this.memory = this.x.memory;
    this.textPtr = this.x.autoretry_text_buffer();
    this.maxText = this.x.autoretry_max_text();
    this.outPtr = this.x.autoretry_out_buffer();
    this.outLen = this.x.autoretry_out_buffer_len();
    this.handle = -1;
    this.budget = 0;
  }

  start(header) {
    if (this.handle >= 0) this.x.autoretry_free(this.handle);
    if (this.budget > 0) this.x.autoretry_budget_free(this.budget);
    this.budget = 0;
    if (header.budget !== undefined) {
      if (this.api !== "struct") throw new Error("a budget needs --api struct");
      const b = header.budget;
      const tokens = b.tokens === undefined ? [0, 0] : [1, Number(milli(b.tokens, "budget.tokens"))];
      this.budget = this.x.autoretry_budget_new(Number(uint(b.maxTokens, "budget.maxTokens")), Number(milli(b.tokenRatio, "budget.tokenRatio")), ...tokens);
      if (this.budget <= 0) throw new Error(`autoretry_budget_new: ${this.budget}`);
    }
    const settings = decodeSettings(header.settings ?? {});
    if (typeof settings === "string") throw new Error(`scenario settings: ${settings}`);
    const host = decodeHost(header.host ?? {});
    const store = host.credentialStore ? 1 : 0;
    if (this.api === "struct") {
      writeSettings(new DataView(this.memory.buffer), this.outPtr, settings);
      this.handle = this.x.autoretry_new_c(this.outPtr, host.contextWindow, store, host.seed);
    } else if (this.api === "ex") {
      this.handle = this.x.autoretry_new_ex(...settingsArgs(settings), host.contextWindow, store, host.seed);
    } else {
      if (host.seed !== 0n) throw new Error("host.seed needs --api ex");
      this.handle = this.x.autoretry_new(...oldSettingsArgs(settings), host.contextWindow, store);
    }
    if (this.handle < 0) throw Object.assign(new Error(`creating the machine failed: ${this.handle}`), { code: this.handle });
    this.timers = []; // timers[n - 1] is the module's id of ordinal n
  }

  // Copies the text into the module's text buffer; its length, or -1.
  text(message) {
    if (message.errorMessage === undefined) return -1;
    const bytes = new TextEncoder().encode(message.errorMessage);
    if (bytes.length > this.maxText) throw new Error(`errorMessage longer than ${this.maxText} bytes`);
    new Uint8Array(this.memory.buffer, this.textPtr, bytes.length).set(bytes);
    return bytes.length;
  }

  // Writes a message's header fields into the text buffer after its text
  // (`textLen` bytes, -1 for none): the `autoretry_header` structs, then
  // their names' and values' bytes; sets the input's `headers` and
  // `headers_len` (at 192 and 196).
  writeHeaders(view, at, textLen, pairs) {
    if (pairs.length === 0) return;
    const structs = this.textPtr + Math.ceil(Math.max(textLen, 0) / 8) * 8;
    let bytesAt = structs + pairs.length * HEADER_SIZE;
    const put = (s) => {
      const bytes = new TextEncoder().encode(s);
      if (bytesAt + bytes.length > this.textPtr + this.maxText) throw new Error(`the text and headers are longer than ${this.maxText} bytes`);
      new Uint8Array(this.memory.buffer, bytesAt, bytes.length).set(bytes);
      bytesAt += bytes.length;
      return [bytesAt - bytes.length, bytes.length];
    };
    pairs.forEach(([name, value], k) => {
      const [n, nLen] = put(name);
      const [v, vLen] = put(value);
      const h = structs + k * HEADER_SIZE;
      view.setUint32(h, n, true);
      view.setUint32(h + 4, nLen, true);
      view.setUint32(h + 8, v, true);
      view.setUint32(h + 12, vLen, true);
    });
    view.setUint32(at + 192, structs, true);
    view.setUint32(at + 196, pairs.length, true);
  }

  // Writes one vector input as an `autoretry_input` at the start of the
  // output buffer (the module reads it before it writes there); its text in
  // the text buffer. Returns false when this host refuses the input (a
  // value of the wrong type), as the vectors expect.
  writeInput(input) {
    const view = new DataView(this.memory.buffer);
    const at = this.outPtr;
    new Uint8Array(this.memory.buffer, at, INPUT_SIZE).fill(0);
    const kind = INPUT[input.type];
    if (kind === undefined) throw new Error(`unknown input ${input.type}`);
    view.setUint32(at, kind, true);
    view.setInt32(at + 188, this.budget, true);
    const flag = (v) => view.setUint32(at + 32, v ? 1 : 0, true);
    switch (input.type) {
      case "message_end":
      case "agent_end": {
        const m = input.message;
        const stop = STOP[m.stopReason];
        if (stop === undefined) throw new Error(`stopReason ${m.stopReason}`);
        view.setUint32(at + 4, stop, true);
        view.setUint32(at + 8, this.textPtr, true);
        const textLen = this.text(m);
        view.setInt32(at + 12, textLen, true);
        // `headers`: `null` is absent.
        if (m.headers !== undefined && m.headers !== null) {
          const pairs = headerPairs(m.headers);
          if (pairs === null) return false;
          this.writeHeaders(view, at, textLen, pairs);
        }
        if (m.shouldRetry !== undefined && typeof m.shouldRetry !== "boolean") throw new Error("shouldRetry: expected a boolean");
        view.setInt32(at + 16, SHOULD_RETRY[m.shouldRetry === undefined ? "absent" : String(m.shouldRetry)], true);
        if (m.usage !== undefined) {
          const count = (key) => (m.usage[key] === undefined ? 0n : uint(m.usage[key], `usage.${key}`));
          view.setUint32(at + 20, 1, true);
          view.setBigUint64(at + 40, count("input"), true);
          view.setBigUint64(at + 48, count("cacheRead"), true);
          view.setBigUint64(at + 56, count("cacheWrite"), true);
        }
        if (m.retryAfterMs !== undefined) {
          view.setUint32(at + 24, 1, true);
          view.setBigUint64(at + 64, uint(m.retryAfterMs, "retryAfterMs"), true);
        }
        // `nowMs` (spec 13.1, the wall clock): a u64 when present.
        if (input.nowMs !== undefined) {
          const now = streamNow(input);
          if (now === null) return false;
          view.setUint32(at + 28, 1, true);
          view.setBigUint64(at + 72, now, true);
        }
        const partial = m.partial ?? "none";
        if (typeof partial !== "string" || !Object.hasOwn(PARTIAL, partial)) return false;
        view.setUint32(at + 184, PARTIAL[partial], true);
        // `empty` (spec 12.3): a boolean, `null` absent, else bad input.
        if (m.empty !== undefined && m.empty !== null) {
          if (typeof m.empty !== "boolean") return false;
          view.setUint32(at + 200, m.empty ? 1 : 0, true);
        }
        return true;
      }
      case "stream_start":
      case "stream_event": {
        // `nowMs` (spec 12.2), the host's monotonic clock: a u64, required.
        const now = streamNow(input);
        if (now === null) return false;
        view.setUint32(at + 28, 1, true);
        view.setBigUint64(at + 72, now, true);
        return true;
      }
      case "timer_fired": {
        const ordinal = uint(input.timer, "timer");
        const id = ordinal >= 1n && ordinal <= BigInt(this.timers.length) ? this.timers[Number(ordinal) - 1] : 0n;
        view.setBigUint64(at + 80, id, true);
        return true;
      }
      case "usage_limit_marked":
        flag(input.switched);
        return true;
      case "model_switched":
      case "set_auto_retry": {
        const v = input.type === "set_auto_retry" ? input.enabled : input.switched;
        if (typeof v !== "boolean") return false;
        flag(v);
        return true;
      }
      case "settings": {
        const s = decodeSettings(input.settings);
        if (typeof s === "string") return false;
        writeSettings(view, at + 88, s);
        return true;
      }
      default:
        return true;
    }
  }

  // Feeds one vector input; returns { out, refused } (out as parsed JSON).
  feed(input) {
    const x = this.x;
    const h = this.handle;
    const out = [this.outPtr, this.outLen];
    let n;
    if (this.api === "struct") {
      // A timer never produced is 0, which the module ignores.
      if (!this.writeInput(input)) return { out: [], refused: true };
      n = x.autoretry_handle_json(h, this.outPtr, ...out);
    } else switch (input.type) {
      case "message_end":
      case "agent_end": {
        const m = input.message;
        const stop = STOP[m.stopReason];
        if (stop === undefined) throw new Error(`stopReason ${m.stopReason}`);
        const len = this.text(m);
        const u = m.usage;
        const count = (key) => (u[key] === undefined ? 0n : uint(u[key], `usage.${key}`));
        const usage = u === undefined ? [0, 0n, 0n, 0n] : [1, count("input"), count("cacheRead"), count("cacheWrite")];
        const now = input.nowMs === undefined ? [0, 0n] : [1, uint(input.nowMs, "nowMs")];
        if (m.empty !== undefined) throw new Error("message.empty needs --api struct");
        if (m.headers !== undefined && m.headers !== null) throw new Error("message.headers needs --api struct");
        if (this.api === "ex") {
          if (m.shouldRetry !== undefined && typeof m.shouldRetry !== "boolean") throw new Error("shouldRetry: expected a boolean");
          const verdict = SHOULD_RETRY[m.shouldRetry === undefined ? "absent" : String(m.shouldRetry)];
          const after = m.retryAfterMs === undefined ? [0, 0n] : [1, uint(m.retryAfterMs, "retryAfterMs")];
          const fields = [...usage, verdict, ...after];
          if (input.type === "message_end") n = x.autoretry_message_end_ex(h, stop, this.textPtr, len, ...fields, ...out);
          else n = x.autoretry_agent_end_ex(h, stop, this.textPtr, len, ...fields, ...now, ...out);
        } else {
          for (const key of ["shouldRetry", "retryAfterMs"]) if (m[key] !== undefined) throw new Error(`message.${key} needs --api ex`);
          if (usage[3] !== 0n) throw new Error("usage.cacheWrite needs --api ex");
          const fields = usage.slice(0, 3);
          if (input.type === "message_end") n = x.autoretry_message_end(h, stop, this.textPtr, len, ...fields, ...out);
          else n = x.autoretry_agent_end(h, stop, this.textPtr, len, ...fields, ...now, ...out);
        }
        break;
      }
      case "timer_fired": {
        const ordinal = uint(input.timer, "timer");
        const id = ordinal >= 1n && ordinal <= BigInt(this.timers.length) ? this.timers[Number(ordinal) - 1] : null;
        // An ordinal never produced: skip the call (no outputs).
        if (id === null) return { out: [], refused: false };
        n = x.autoretry_timer_fired(h, id, ...out);
        break;
      }
      case "usage_limit_marked":
        n = x.autoretry_usage_limit_marked(h, input.switched ? 1 : 0, ...out);
        break;
      case "stream_start":
      case "stream_event": {
        const now = streamNow(input);
        if (now === null) return { out: [], refused: true };
        if (input.type === "stream_start") n = x.autoretry_stream_start(h, now, ...out);
        else n = x.autoretry_stream_event(h, now, ...out);
        break;
      }
      case "abort_retry":
        n = x.autoretry_abort_retry(h, ...out);
        break;
      case "abort":
        n = x.autoretry_abort(h, ...out);
        break;
      case "set_auto_retry":
        if (typeof input.enabled !== "boolean") return { out: [], refused: true };
        n = x.autoretry_set_auto_retry(h, input.enabled ? 1 : 0, ...out);
        break;
      case "settings": {
        const s = decodeSettings(input.settings);
        if (typeof s === "string") return { out: [], refused: true };
        if (this.api === "ex") n = x.autoretry_settings_ex(h, ...settingsArgs(s), ...out);
        else n = x.autoretry_settings(h, ...oldSettingsArgs(s), ...out);
        break;
      }
      default:
        throw new Error(`unknown input ${input.type}`);
    }
    if (n === -2) return { out: [], refused: true };
    if (n < 0) throw new Error(`the module returned error ${n} for ${input.type}`);
    const raw = new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(this.memory.buffer, this.outPtr, n));
    const outputs = parseJson(raw);
    for (const o of outputs) {
      // One sequence of ordinals for `sleep` and `watch` (spec 12.4).
      if (o.type === "sleep" || o.type === "watch") {
        this.timers.push(o.timer.big());
        o.timer = new Num(String(this.timers.length));
      } else if (o.type === "cancel_timer") {
        const k = this.timers.lastIndexOf(o.timer.big());
        if (k >= 0) o.timer = new Num(String(k + 1));
      }
    }
    return { out: outputs, refused: false };
  }

  state() {
    const n = this.x.autoretry_state(this.handle, this.outPtr, this.outLen);
    if (n < 0) throw new Error(`autoretry_state: ${n}`);
    return parseJson(new TextDecoder().decode(new Uint8Array(this.memory.buffer, this.outPtr, n)));
  }
}

// ---------------------------------------------------------------- checks
// The module refuses what the scalars can still get wrong, and then changes
// nothing: returns a list of problems.
function checkRefusals(x, out, hasCurated) {
  const problems = [];
  const expect = (what, got, want) => {
    if (got !== want) problems.push(`${what}: got ${got}, want ${want}`);
  };
  const classic = settingsArgs(PROFILES.classic);
  const bad = {
    "jitterPct 101": [0, 1, 3, 2000n, 0n, 0n, 101, 0, 0],
    "jitterPct 356": [0, 1, 3, 2000n, 0n, 0n, 356, 0, 0],
    "profile 2": [2, 1, 3, 2000n, 0n, 0n, 0, 0, 0],
    "classifier 3": [0, 1, 3, 2000n, 0n, 0n, 0, 0, 3],
  };
  if (!hasCurated) bad["classifier 2 (curated)"] = [0, 1, 3, 2000n, 0n, 0n, 0, 0, 2];
  for (const [what, args] of Object.entries(bad)) expect(`autoretry_new_ex with ${what}`, x.autoretry_new_ex(...args, 0n, 0, 0n), ERR_SETTINGS);
  const h = x.autoretry_new_ex(...classic, 0n, 0, 0n);
  if (h < 0) return [...problems, `autoretry_new_ex: ${h}`];
  for (const [what, args] of Object.entries(bad)) expect(`autoretry_settings_ex with ${what}`, x.autoretry_settings_ex(h, ...args, ...out), ERR_SETTINGS);
  for (const code of [3, -1]) {
    expect(`autoretry_agent_end_ex with shouldRetry code ${code}`, x.autoretry_agent_end_ex(h, STOP.error, 0, -1, 0, 0n, 0n, 0n, code, 0, 0n, 0, 0n, ...out), ERR_ARG);
  }
  // The classic settings are still in force: a 2000 ms backoff of 3.
  const text = new TextEncoder().encode("overloaded");
  const [textPtr, outPtr] = [x.autoretry_text_buffer(), out[0]];
  new Uint8Array(x.memory.buffer, textPtr, text.length).set(text);
  const n = x.autoretry_agent_end_ex(h, STOP.error, textPtr, text.length, 0, 0n, 0n, 0n, SHOULD_RETRY.absent, 0, 0n, 0, 0n, ...out);
  const json = n < 0 ? `error ${n}` : new TextDecoder().decode(new Uint8Array(x.memory.buffer, outPtr, n));
  if (!json.includes('"maxAttempts":3,"delayMs":2000,')) problems.push(`after the refusals: ${json}`);
  x.autoretry_free(h);
  return problems;
}

// ---------------------------------------------------------------- main
const args = process.argv.slice(2);
let api = "ex";
if (args[0] === "--api") {
  api = args[1];
  args.splice(0, 2);
}
const [wasmFile, ...vectorFiles] = args;
if (!["ex", "old", "struct"].includes(api) || !wasmFile || vectorFiles.length === 0) {
  console.error("usage: node run-vectors.mjs [--api ex|old|struct] WASM_FILE VECTOR_FILE...");
  process.exit(2);
}
const module = new WebAssembly.Module(readFileSync(wasmFile));
// The module needs nothing from its host: no allocator, no clock, no I/O.
const imports = WebAssembly.Module.imports(module);
if (imports.length > 0) {
  console.error(`the module imports ${imports.map((i) => `${i.module}.${i.name}`).join(", ")}`);
  process.exit(1);
}
const instance = await WebAssembly.instantiate(module, {});
const host = new Host(instance, api);

// Whether the module has the extended classifier (feature `extended`): only
// then does it give the modern profile's defaults. Whether it has the
// curated one (feature `curated`): only then does it classify with it.
const hasExtended = host.x.autoretry_settings_defaults(1, host.outPtr) === 0;
const hasCurated = host.x.autoretry_classify(CLASSIFIER.curated, 0, -1, host.outPtr) === 0;
const failures = checkRefusals(host.x, [host.outPtr, host.outLen], hasCurated).map((p) => `refusals: ${p}`);
// The classifier a settings group asks for that the module lacks, or null.
const lacking = (group) => {
  const s = decodeSettings(group ?? {});
  if (typeof s === "string") return null;
  if (!hasExtended && (s.profile === "modern" || s.classifier === "extended")) return "the extended classifier";
  if (!hasCurated && s.classifier === "curated") return "the curated classifier";
  return null;
};
let lacked = 0;
let skipping = false;
let scenarios = 0;
let scenariosPassed = 0;
let steps = 0;
let stepsPassed = 0;
for (const file of vectorFiles) {
  const fileFailures = [];
  const lines = readFileSync(file, "utf8").split("\n");
  let scenario = null;
  let scenarioOk = true;
  const closeScenario = () => {
    if (scenario !== null && scenarioOk) scenariosPassed++;
  };
  lines.forEach((line, index) => {
    if (line === "") return;
    const where = `${basename(file)}:${index + 1}`;
    const obj = parseJson(line);
    if (obj.scenario !== undefined) {
      closeScenario();
      scenarios++;
      scenario = obj.scenario;
      scenarioOk = true;
      skipping = false;
      const lacks = lacking(obj.settings);
      if (lacks !== null) {
        let code = 0;
        try {
          host.start(obj);
        } catch (e) {
          if (e.code === undefined) throw e;
          code = e.code;
        }
        if (code !== ERR_SETTINGS) {
          scenarioOk = false;
          failures.push(`${where} (${scenario}): a module without ${lacks} created the machine (${code}), want ERR_SETTINGS`);
        }
        lacked++;
        skipping = true;
        return;
      }
      host.start(obj);
      return;
    }
    if (scenario === null) throw new Error(`${where}: a step before any scenario line`);
    if (skipping) return;
    const lacks = obj.in.type === "settings" ? lacking(obj.in.settings) : null;
    if (lacks !== null) {
      const before = host.state();
      let code = 0;
      try {
        host.feed(obj.in);
      } catch (e) {
        code = /error (-\d+) for settings$/.exec(e.message)?.[1];
        if (code === undefined) throw e;
      }
      if (Number(code) !== ERR_SETTINGS || !equal(host.state(), before)) {
        scenarioOk = false;
        failures.push(`${where} (${scenario}): a module without ${lacks} answered ${code} to these settings, want ERR_SETTINGS and the state unchanged`);
      }
      lacked++;
      skipping = true;
      return;
    }
    steps++;
    const got = host.feed(obj.in);
    const state = host.state();
    const problems = [];
    if (got.refused !== (obj.refused === true)) problems.push(`refused: got ${got.refused}, want ${obj.refused === true}`);
    if (!equal(got.out, obj.out)) problems.push(`out: got ${show(got.out)}, want ${show(obj.out)}`);
    if (!equal(state, obj.state)) problems.push(`state: got ${show(state)}, want ${show(obj.state)}`);
    if (host.budget > 0 || obj.budget !== undefined) {
      const tokens = host.budget > 0 ? BigInt(host.x.autoretry_budget_tokens(host.budget)) : null;
      const want = obj.budget === undefined ? null : milli(obj.budget, "budget");
      if (tokens !== want) problems.push(`budget: got ${tokens} thousandths, want ${want}`);
    }
    // The key order of events is part of the contract (spec §8).
    got.out.forEach((o, k) => {
      const want = obj.out[k];
      if (o.event && want && want.event && Object.keys(o.event).join() !== Object.keys(want.event).join()) {
        problems.push(`event key order: got ${Object.keys(o.event)}, want ${Object.keys(want.event)}`);
      }
    });
    if (problems.length === 0) stepsPassed++;
    else {
      scenarioOk = false;
      fileFailures.push(`${where} (${scenario}): ${problems.join("; ")}`);
    }
  });
  closeScenario();
  failures.push(...fileFailures);
}

for (const f of failures) console.error(`FAIL ${f}`);
const has = hasCurated ? "every classifier" : hasExtended ? "the classic and extended classifiers only" : "the classic classifier only";
const refusedNote = lacked === 0 ? "" : `, ${lacked} of them refused as the module has ${has}`;
console.log(`autoretry on wasm32 (--api ${api}): ${scenariosPassed}/${scenarios} scenarios${refusedNote}, ${stepsPassed}/${steps} steps passed (${vectorFiles.length} files)`);
process.exit(failures.length === 0 && steps > 0 ? 0 : 1);
