// Runs conformance vectors through the WebAssembly module (the crate built
// with `--features ffi` for wasm32-unknown-unknown), driving it by hand
// through its C ABI, the way a host with no allocator would:
//
//     node tests/wasm/run-vectors.mjs autoretry.wasm tests/vectors/*.jsonl
//
// Exits 0 only when every step's outputs, state and refusal match, and every
// emitted event has the spec's key order. Node 20, no packages.
//
// The host side: texts go through the module's text buffer, outputs come back
// as JSON in its output buffer; timer ids are mapped to the vectors' ordinals;
// the settings group is validated here (the module takes typed integers).
// Numbers are read exactly (integers as BigInt): vectors reach u64::MAX.

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
const STOP = { stop: 0, length: 1, toolUse: 2, error: 3, aborted: 4 };

// The `retry` settings group, strictly (spec §4): missing keys default; a
// wrong type, a non-integer, a negative or out-of-range number, an unknown
// or repeated key is an error (a string), else the settings.
function decodeSettings(group) {
  if (!group || typeof group !== "object" || Array.isArray(group)) return "retry: expected an object";
  if (group[DUPLICATE] !== undefined) return `retry: duplicate key ${group[DUPLICATE]}`;
  const s = { enabled: true, maxRetries: 3n, baseDelayMs: 2000n };
  for (const [key, v] of Object.entries(group)) {
    if (key === "enabled") {
      if (typeof v !== "boolean") return "retry.enabled: expected a boolean";
      s.enabled = v;
    } else if (key === "maxRetries" || key === "baseDelayMs") {
      const max = key === "maxRetries" ? U32_MAX : U64_MAX;
      if (!(v instanceof Num) || !v.isUint() || v.big() > max) return `retry.${key}: expected a non-negative integer`;
      s[key] = v.big();
    } else return `retry: unknown key ${key}`;
  }
  return s;
}

function uint(v, what) {
  if (!(v instanceof Num) || !v.isUint() || v.big() > U64_MAX) throw new Error(`${what}: expected a u64`);
  return v.big();
}

class Host {
  constructor(instance) {
    this.x = instance.exports;
    this.memory = this.x.memory;
    this.textPtr = this.x.autoretry_text_buffer();
    this.maxText = this.x.autoretry_max_text();
    this.outPtr = this.x.autoretry_out_buffer();
    this.outLen = this.x.autoretry_out_buffer_len();
    this.handle = -1;
  }

  start(header) {
    if (this.handle >= 0) this.x.autoretry_free(this.handle);
    const settings = decodeSettings(header.settings ?? {});
    if (typeof settings === "string") throw new Error(`scenario settings: ${settings}`);
    const host = header.host ?? {};
    const window = host.contextWindow === undefined ? 0n : uint(host.contextWindow, "host.contextWindow");
    const store = host.credentialStore === true;
    this.handle = this.x.autoretry_new(settings.enabled ? 1 : 0, Number(settings.maxRetries), settings.baseDelayMs, window, store ? 1 : 0);
    if (this.handle < 0) throw new Error(`autoretry_new failed: ${this.handle}`);
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

  // Feeds one vector input; returns { out, refused } (out as parsed JSON).
  feed(input) {
    const x = this.x;
    const h = this.handle;
    const out = [this.outPtr, this.outLen];
    let n;
    switch (input.type) {
      case "message_end":
      case "agent_end": {
        const m = input.message;
        const stop = STOP[m.stopReason];
        if (stop === undefined) throw new Error(`stopReason ${m.stopReason}`);
        const len = this.text(m);
        const u = m.usage;
        const usage = u === undefined ? [0, 0n, 0n] : [1, u.input === undefined ? 0n : uint(u.input, "usage.input"), u.cacheRead === undefined ? 0n : uint(u.cacheRead, "usage.cacheRead")];
        if (input.type === "message_end") n = x.autoretry_message_end(h, stop, this.textPtr, len, ...usage, ...out);
        else {
          const now = input.nowMs === undefined ? [0, 0n] : [1, uint(input.nowMs, "nowMs")];
          n = x.autoretry_agent_end(h, stop, this.textPtr, len, ...usage, ...now, ...out);
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
        n = x.autoretry_settings(h, s.enabled ? 1 : 0, Number(s.maxRetries), s.baseDelayMs, ...out);
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
      if (o.type === "sleep") {
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

// ---------------------------------------------------------------- main
const [wasmFile, ...vectorFiles] = process.argv.slice(2);
if (!wasmFile || vectorFiles.length === 0) {
  console.error("usage: node run-vectors.mjs WASM_FILE VECTOR_FILE...");
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
const host = new Host(instance);

let scenarios = 0;
let scenariosPassed = 0;
let steps = 0;
let stepsPassed = 0;
const failures = [];
for (const file of vectorFiles) {
  const lines = readFileSync(file, "utf8").split("\n");
  let scenario = null;
  let scenarioOk = true;
  const closeScenario = () => {
    if (scenario !== null && scenarioOk) scenariosPassed++;
  };
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `${basename(file)}:${index + 1}`;
    const obj = parseJson(line);
    if (obj.scenario !== undefined) {
      closeScenario();
      scenarios++;
      scenario = obj.scenario;
      scenarioOk = true;
      host.start(obj);
      return;
    }
    if (scenario === null) throw new Error(`${where}: a step before any scenario line`);
    steps++;
    const got = host.feed(obj.in);
    const state = host.state();
    const problems = [];
    if (got.refused !== (obj.refused === true)) problems.push(`refused: got ${got.refused}, want ${obj.refused === true}`);
    if (!equal(got.out, obj.out)) problems.push(`out: got ${show(got.out)}, want ${show(obj.out)}`);
    if (!equal(state, obj.state)) problems.push(`state: got ${show(state)}, want ${show(obj.state)}`);
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
      failures.push(`${where} (${scenario}): ${problems.join("; ")}`);
    }
  });
  closeScenario();
}

for (const f of failures) console.error(`FAIL ${f}`);
console.log(`autoretry on wasm32: ${scenariosPassed}/${scenarios} scenarios, ${stepsPassed}/${steps} steps passed (${vectorFiles.length} files)`);
process.exit(failures.length === 0 && steps > 0 && scenariosPassed === scenarios ? 0 : 1);
