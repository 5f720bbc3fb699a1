// Hostile calls into the WebAssembly module's C ABI: out-of-range and stale
// handles, lengths past the buffers and past the memory, buffers that wrap,
// overlap each other or alias the module's own data (its stack, statics and
// pool, all below `__heap_base`), too-small output buffers, pool exhaustion
// and reuse, a freed machine's timer fired at the slot's next machine, and
// calls that trapped in earlier builds followed by normal calls, and the
// bad ranges of the two entry points that need no machine
// (`autoretry_classify`, `autoretry_read_headers`). For a
// module with rules (`ffi/wasm/build.sh rules`) also hostile rules
// blobs: past the memory, below `__heap_base`, in an exchange buffer,
// wrapping, misaligned, refused, shared by two machines, and output buffers
// over a blob a machine holds.
//
//     node ffi/wasm/hostile.mjs autoretry.wasm
//     node ffi/wasm/hostile.mjs autoretry-rules.wasm
//
// Every failed call must return its error code, change nothing (the state and
// pending timer of every machine are compared before and after) and leave
// every machine usable. A trap is a failure; a call that never returns (a
// lock left held by a trap) is one too: run it under `timeout`. Node 20, no
// packages.

import { readFileSync } from "node:fs";

const [path] = process.argv.slice(2);
if (!path) {
  console.error("usage: node hostile.mjs autoretry.wasm");
  process.exit(2);
}
const { instance } = await WebAssembly.instantiate(readFileSync(path), {});
const x = instance.exports;

const ERR = {
  HANDLE: -1,
  REFUSED: -2,
  UTF8: -3,
  TEXT_LEN: -4,
  POOL_FULL: -5,
  ARG: -6,
  OUT_TOO_SMALL: -7,
  SETTINGS: -8,
  BUFFER: -9,
  RULES_FOREIGN: -10,
  RULES_LENGTH: -11,
  RULES_MISALIGNED: -12,
  RULES_CORRUPT: -13,
  BUDGET: -14,
};
const STOP_STOP = 1;
const STOP_ERROR = 4;
const POOL_SIZE = 8;

let failures = 0;
let checks = 0;
const fail = (what) => {
  failures++;
  console.log(`FAIL ${what}`);
};
const expect = (what, got, want) => {
  checks++;
  if (got !== want) fail(`${what}: got ${got}, want ${want}`);
};

const mem = () => new Uint8Array(x.memory.buffer);
const memEnd = () => x.memory.buffer.byteLength;
const heapBase = x.__heap_base.value;
const textBuf = x.autoretry_text_buffer();
const outBuf = x.autoretry_out_buffer();
const outLen = x.autoretry_out_buffer_len();
const maxText = x.autoretry_max_text();
const enc = new TextEncoder();
const dec = new TextDecoder();

// A call that must not trap.
function call(what, f) {
  try {
    return f();
  } catch (e) {
    fail(`${what}: trapped (${e.message})`);
    return undefined;
  }
}
const writeText = (at, s) => {
  const bytes = enc.encode(s);
  mem().set(bytes, at);
  return bytes.length;
};
const json = (n) => {
  if (n < 0) throw new Error(`error ${n}`);
  return dec.decode(mem().subarray(outBuf, outBuf + n));
};
const state = (h) => {
  const n = x.autoretry_state(h, outBuf, outLen);
  return n < 0 ? `error ${n}` : json(n);
};
// What a failed call must leave as it was: every live machine's state and
// pending timer.
const snapshot = (handles) => handles.map((h) => `${state(h)} ${x.autoretry_pending_timer(h)}`).join("\n");

const agentEnd = (h, text, textPtr = textBuf, out = outBuf, cap = outLen) => {
  const len = text === null ? -1 : writeText(textPtr, text);
  return x.autoretry_agent_end(h, text === null ? STOP_STOP : STOP_ERROR, textPtr, len, 0, 0n, 0n, 0, 0n, out, cap);
};
const newMachine = () => x.autoretry_new(1, 3, 2000n, 0n, 1);

// ---------------------------------------------------------------- buffers
// Two machines: `a` in a backoff, `b` idle. Each bad call is made on `a`
// and must change neither.
{
  const a = newMachine();
  const b = newMachine();
  expect("two machines", a >= 0 && b >= 0, true);
  expect("a retries", json(agentEnd(a, "overloaded")).includes('"sleep"'), true);
  const before = snapshot([a, b]);
  const end = memEnd();
  // Host-owned memory: above `__heap_base`, inside the memory.
  const free = heapBase + 64;
  expect("memory above __heap_base for the host", free + 256 < end, true);
  const badOut = [
    ["out past the end of memory", end + 16, 64, ERR.BUFFER],
    ["out running past the end of memory", end - 8, 64, ERR.BUFFER],
    ["out at the end of memory", end, 1, ERR.BUFFER],
    ["out wrapping the address space", 0xffff_fff0, 64, ERR.BUFFER],
    ["out with the largest length", free, 0xffff_ffff, ERR.BUFFER],
    ["out null with a length", 0, 64, ERR.ARG],
    ["out on the stack", 1024, 64, ERR.BUFFER],
    ["out in the statics", heapBase - 256, 64, ERR.BUFFER],
    ["out ending on __heap_base", heapBase - 1, 64, ERR.BUFFER],
    ["out running past the out buffer", outBuf + outLen - 8, 64, ERR.BUFFER],
    ["out starting before the out buffer", outBuf - 8, 64, ERR.BUFFER],
    ["out running past the text buffer", textBuf + maxText - 8, 64, ERR.BUFFER],
  ];
  const inputs = [
    ["abort", (out, cap) => x.autoretry_abort(a, out, cap)],
    ["stream_start", (out, cap) => x.autoretry_stream_start(a, 1n, out, cap)],
    ["stream_event", (out, cap) => x.autoretry_stream_event(a, 2n, out, cap)],
    ["abort_retry", (out, cap) => x.autoretry_abort_retry(a, out, cap)],
    ["timer_fired", (out, cap) => x.autoretry_timer_fired(a, x.autoretry_pending_timer(a), out, cap)],
    ["set_auto_retry", (out, cap) => x.autoretry_set_auto_retry(a, 0, out, cap)],
    ["settings", (out, cap) => x.autoretry_settings(a, 0, 1, 5n, out, cap)],
    ["settings_ex", (out, cap) => x.autoretry_settings_ex(a, 0, 0, 1, 5n, 0n, 0n, 0, 0, 0, out, cap)],
    ["usage_limit_marked", (out, cap) => x.autoretry_usage_limit_marked(a, 1, out, cap)],
    ["state", (out, cap) => x.autoretry_state(a, out, cap)],
    ["message_end", (out, cap) => x.autoretry_message_end(a, STOP_STOP, textBuf, -1, 0, 0n, 0n, out, cap)],
    ["agent_end", (out, cap) => x.autoretry_agent_end(a, STOP_ERROR, textBuf, 4, 0, 0n, 0n, 0, 0n, out, cap)],
  ];
  // Earlier builds trapped on the first of these with the pool locked, and
  // every later call spun forever.
  for (const [what, out, cap, want] of badOut) {
    for (const [name, f] of inputs) {
      expect(`${name}: ${what}`, call(`${name}: ${what}`, () => f(out, cap >>> 0)), want);
    }
    expect(`${what}: nothing changed`, snapshot([a, b]), before);
  }
  // Texts past the memory, aliasing the module, or too long.
  writeText(textBuf, "overloaded");
  const badText = [
    ["text past the end of memory", end + 16, 8, ERR.BUFFER],
    ["text running past the end of memory", end - 4, 8, ERR.BUFFER],
    ["text wrapping the address space", 0xffff_fffc, 8, ERR.BUFFER],
    ["text on the stack", 1024, 8, ERR.BUFFER],
    ["text in the statics", heapBase - 64, 8, ERR.BUFFER],
    ["text running past the text buffer", textBuf + maxText - 4, 8, ERR.BUFFER],
    ["text null with a length", 0, 8, ERR.ARG],
    ["text longer than MAX_TEXT", textBuf, maxText + 1, ERR.TEXT_LEN],
    ["text length -2", textBuf, -2, ERR.TEXT_LEN],
    ["text overlapping out", outBuf + 16, 8, ERR.ARG],
  ];
  for (const [what, ptr, len, want] of badText) {
    for (const f of [x.autoretry_agent_end, x.autoretry_message_end]) {
      const got = call(what, () =>
        f === x.autoretry_agent_end
          ? f(b, STOP_ERROR, ptr, len, 0, 0n, 0n, 0, 0n, outBuf, outLen)
          : f(b, STOP_ERROR, ptr, len, 0, 0n, 0n, outBuf, outLen),
      );
      expect(`${f.name}: ${what}`, got, want);
    }
    expect(`${what}: nothing changed`, snapshot([a, b]), before);
  }
  // Too small an output buffer: refused before the input is applied.
  for (const cap of [0, 1, 16, 64]) {
    expect(`agent_end into ${cap} bytes`, call("too small", () => agentEnd(b, "overloaded", textBuf, outBuf, cap)), ERR.OUT_TOO_SMALL);
    expect(`agent_end into ${cap} bytes: nothing changed`, snapshot([a, b]), before);
  }
  // Host-owned memory above `__heap_base` is the host's to use: a text there
  // and outputs there.
  const n = call("host memory", () => agentEnd(b, "overloaded", free, free + 32, 4096));
  expect("buffers above __heap_base are accepted", n > 0, true);
  expect("b retries", x.autoretry_pending_timer(b) > 0n, true);
  // And after all that, both machines carry on.
  expect("a continues", json(x.autoretry_timer_fired(a, x.autoretry_pending_timer(a), outBuf, outLen)), '[{"type":"continue_agent"}]');
  expect("b continues", json(x.autoretry_timer_fired(b, x.autoretry_pending_timer(b), outBuf, outLen)), '[{"type":"continue_agent"}]');
  expect("free a", x.autoretry_free(a), 0);
  expect("free b", x.autoretry_free(b), 0);
}

// ---------------------------------------------------------------- the C form
// autoretry_handle_c reads an input struct and writes output structs: both
// are checked like any buffer. An all-zero input but its kind and stop
// reason is a message_end with every optional field absent.
{
  const a = newMachine();
  const before = snapshot([a]);
  const free = heapBase + 64;
  const input = free;
  mem().fill(0, input, input + 256);
  new DataView(x.memory.buffer).setUint32(input, 1, true); // kind: message_end
  new DataView(x.memory.buffer).setUint32(input + 4, STOP_STOP, true); // stop_reason
  const outs = free + 512;
  const cases = [
    ["input in the statics", heapBase - 64, outs, 8, ERR.BUFFER],
    ["input past the end of memory", memEnd() - 8, outs, 8, ERR.BUFFER],
    ["input misaligned", input + 1, outs, 8, ERR.ARG],
    ["input null", 0, outs, 8, ERR.ARG],
    ["outputs in the statics", input, heapBase - 64, 8, ERR.BUFFER],
    ["outputs past the end of memory", input, memEnd() - 64, 8, ERR.BUFFER],
    ["outputs misaligned", input, outs + 4, 8, ERR.ARG],
    ["outputs wrapping", input, 0xffff_ff00, 8, ERR.BUFFER],
    ["outputs of the largest count", input, outs, 0xffff_ffff, ERR.BUFFER],
  ];
  for (const [what, i, o, cap, want] of cases) {
    expect(`handle_c: ${what}`, call(what, () => x.autoretry_handle_c(a, i, o, cap >>> 0)), want);
    expect(`handle_c: ${what}: nothing changed`, snapshot([a]), before);
  }
  // autoretry_handle_json: the same input checks; outputs as bytes.
  for (const [what, i, o, cap, want] of [...cases.slice(0, 4), ["outputs in the statics", input, heapBase - 64, 64, ERR.BUFFER], ["outputs wrapping", input, 0xffff_ff00, 512, ERR.BUFFER]]) {
    expect(`handle_json: ${what}`, call(what, () => x.autoretry_handle_json(a, i, o, cap >>> 0)), want);
    expect(`handle_json: ${what}: nothing changed`, snapshot([a]), before);
  }
  // Budgets: an input naming none (never made, freed, out of range) or a
  // bad partial code is refused and changes nothing; the budget neither.
  const budget = x.autoretry_budget_new(4, 500, 0, 0);
  expect("budget_new", budget > 0, true);
  expect("budget_new with 0 tokens max", x.autoretry_budget_new(0, 500, 0, 0), ERR.ARG);
  const stale = x.autoretry_budget_new(4, 500, 0, 0);
  expect("free a budget", x.autoretry_budget_free(stale), 0);
  const view = new DataView(x.memory.buffer);
  // 5: generation 0, which no budget has; 0x1ff: place 255, past the table.
  for (const b of [stale, -1, 5, 0x1ff, 2147483647]) {
    view.setInt32(input + 188, b, true);
    expect(`handle_json with budget ${b}`, call("budget", () => x.autoretry_handle_json(a, input, outs, 512)), ERR.BUDGET);
    expect(`budget ${b}: tokens`, x.autoretry_budget_tokens(b), ERR.BUDGET);
    expect(`budget ${b}: free`, x.autoretry_budget_free(b), ERR.BUDGET);
    expect(`budget ${b}: nothing changed`, snapshot([a]), before);
  }
  view.setInt32(input + 188, 0, true);
  view.setUint32(input + 184, 3, true); // partial: no such code
  expect("handle_json with partial 3", x.autoretry_handle_json(a, input, outs, 512), ERR.ARG);
  view.setUint32(input + 184, 0, true);
  // A stream input without `has_now` (spec 12.2: `nowMs` is required).
  for (const kind of [10, 11]) {
    view.setUint32(input, kind, true);
    expect(`handle_json: stream kind ${kind} without has_now`, x.autoretry_handle_json(a, input, outs, 512), ERR.ARG);
    expect(`stream kind ${kind} without has_now: nothing changed`, snapshot([a]), before);
  }
  view.setUint32(input, 1, true);
  expect("the budget is untouched", x.autoretry_budget_tokens(budget), 4000);
  expect("free the budget", x.autoretry_budget_free(budget), 0);
  expect("model_switched out in the statics", x.autoretry_model_switched(a, 1, heapBase - 64, 64), ERR.BUFFER);
  expect("model_switched with nothing asked", json(x.autoretry_model_switched(a, 1, outBuf, outLen)), "[]");
  expect("handle_c: message_end", x.autoretry_handle_c(a, input, outs, 8), 0);
  expect("state_c in the statics", x.autoretry_state_c(a, heapBase - 16), ERR.BUFFER);
  expect("settings_defaults past the memory", x.autoretry_settings_defaults(0, memEnd() - 4), ERR.BUFFER);
  expect("free", x.autoretry_free(a), 0);
}

// ---------------------------------------------------------------- handles
{
  for (const h of [-1, -2147483648, POOL_SIZE, 255, 256, 2147483647]) {
    expect(`handle ${h}: free`, x.autoretry_free(h), ERR.HANDLE);
    expect(`handle ${h}: abort`, x.autoretry_abort(h, outBuf, outLen), ERR.HANDLE);
    expect(`handle ${h}: stream_start`, x.autoretry_stream_start(h, 0n, outBuf, outLen), ERR.HANDLE);
    expect(`handle ${h}: stream_event`, x.autoretry_stream_event(h, 0n, outBuf, outLen), ERR.HANDLE);
    expect(`handle ${h}: model_switched`, x.autoretry_model_switched(h, 1, outBuf, outLen), ERR.HANDLE);
    expect(`handle ${h}: state`, x.autoretry_state(h, outBuf, outLen), ERR.HANDLE);
    expect(`handle ${h}: pending timer`, x.autoretry_pending_timer(h), 0n);
  }
  // Pool exhaustion, then reuse: the freed handle is refused everywhere, and
  // its slot's next machine has another handle.
  const handles = [];
  for (let i = 0; i < POOL_SIZE; i++) handles.push(newMachine());
  expect("a full pool", handles.every((h) => h >= 0), true);
  expect("pool full", x.autoretry_new(1, 3, 2000n, 0n, 0), ERR.POOL_FULL);
  expect("pool full (_ex)", x.autoretry_new_ex(0, 1, 3, 2000n, 0n, 0n, 0, 0, 0, 0n, 0, 0n), ERR.POOL_FULL);
  const [a] = handles.splice(3, 1);
  expect("a retries", json(agentEnd(a, "overloaded")).includes('"sleep"'), true);
  const staleTimer = x.autoretry_pending_timer(a);
  expect("free a", x.autoretry_free(a), 0);
  const b = newMachine();
  expect("b takes a's slot", (b & 0xff) === (a & 0xff), true);
  expect("b has another handle", b !== a, true);
  expect("pool full again", newMachine(), ERR.POOL_FULL);
  const others = snapshot(handles);
  expect("stale handle: free", x.autoretry_free(a), ERR.HANDLE);
  expect("stale handle: abort", x.autoretry_abort(a, outBuf, outLen), ERR.HANDLE);
  expect("stale handle: timer_fired", x.autoretry_timer_fired(a, staleTimer, outBuf, outLen), ERR.HANDLE);
  expect("stale handle: agent_end", agentEnd(a, "overloaded"), ERR.HANDLE);
  expect("stale handle: state", x.autoretry_state(a, outBuf, outLen), ERR.HANDLE);
  expect("stale handle: pending timer", x.autoretry_pending_timer(a), 0n);
  // b in a backoff of its own: a's timer, fired at b, is ignored (spec 6).
  expect("b retries", json(agentEnd(b, "overloaded")).includes('"sleep"'), true);
  const timer = x.autoretry_pending_timer(b);
  expect("b's timer is not a's", timer !== staleTimer, true);
  const beforeB = snapshot([b]);
  expect("a's timer at b is ignored", json(x.autoretry_timer_fired(b, staleTimer, outBuf, outLen)), "[]");
  expect("a's timer at b: nothing changed", snapshot([b]), beforeB);
  expect("b's own timer", json(x.autoretry_timer_fired(b, timer, outBuf, outLen)), '[{"type":"continue_agent"}]');
  expect("the other machines: nothing changed", snapshot(handles), others);
  for (const h of [...handles, b]) expect(`free ${h}`, x.autoretry_free(h), 0);
  // Many generations of one slot: every handle is new, every old one refused.
  const seen = new Set();
  let last = -1;
  for (let i = 0; i < 1000; i++) {
    const h = newMachine();
    if (seen.has(h)) fail(`handle ${h} given twice`);
    seen.add(h);
    if (last >= 0) expect("an older handle", x.autoretry_free(last), ERR.HANDLE);
    expect("free", x.autoretry_free(h), 0);
    last = h;
  }
  checks++;
}

// ---------------------------------------------------------------- no machine
// `autoretry_classify` and `autoretry_read_headers`: every bad range
// returns its code and writes nothing; a good call after them works.
{
  const end = memEnd();
  const free = heapBase + 64;
  // The answer goes to the out buffer; each failed call must leave it as it was.
  const classifyOut = outBuf + 64;
  const filled = () => mem().fill(0xa5, classifyOut, classifyOut + 24);
  const untouched = () => mem().subarray(classifyOut, classifyOut + 24).every((b) => b === 0xa5);
  const len = writeText(textBuf, "529 overloaded");
  const badClassify = [
    ["text past the end of memory", [0, end + 16, 4, classifyOut], ERR.BUFFER],
    ["text running past the end of memory", [0, end - 2, 4, classifyOut], ERR.BUFFER],
    ["text below __heap_base", [0, heapBase - 64, 8, classifyOut], ERR.BUFFER],
    ["text wrapping", [0, 0xfffffff0, 32, classifyOut], ERR.BUFFER],
    ["text past the text buffer", [0, textBuf + maxText - 4, 8, classifyOut], ERR.BUFFER],
    ["text null with a length", [0, 0, 4, classifyOut], ERR.ARG],
    ["text length -2", [0, textBuf, -2, classifyOut], ERR.TEXT_LEN],
    ["text longer than the limit", [0, textBuf, maxText + 1, classifyOut], ERR.TEXT_LEN],
    ["text over the answer", [0, classifyOut - 4, 8, classifyOut], ERR.ARG],
    ["answer past the end of memory", [0, textBuf, len, end - 8], ERR.BUFFER],
    ["answer below __heap_base", [0, textBuf, len, heapBase - 64], ERR.BUFFER],
    ["answer null", [0, textBuf, len, 0], ERR.ARG],
    ["answer misaligned", [0, textBuf, len, classifyOut + 4], ERR.ARG],
    ["answer running past the out buffer", [0, textBuf, len, outBuf + outLen - 16], ERR.BUFFER],
    ["classifier 3", [3, textBuf, len, classifyOut], ERR.SETTINGS],
    ["classifier 2**32 - 1", [0xffffffff, textBuf, len, classifyOut], ERR.SETTINGS],
  ];
  for (const [what, args, want] of badClassify) {
    filled();
    expect(`autoretry_classify, ${what}`, call(what, () => x.autoretry_classify(...args)), want);
    expect(`autoretry_classify, ${what}: nothing written`, untouched(), true);
  }
  mem().set([0x61, 0xff, 0x62], textBuf);
  filled();
  expect("autoretry_classify, invalid UTF-8", call("invalid UTF-8", () => x.autoretry_classify(0, textBuf, 3, classifyOut)), ERR.UTF8);
  expect("autoretry_classify, invalid UTF-8: nothing written", untouched(), true);
  writeText(textBuf, "529 overloaded");
  expect("autoretry_classify after them", x.autoretry_classify(0, textBuf, len, classifyOut), 0);
  expect("autoretry_classify: retryable", new DataView(x.memory.buffer).getUint32(classifyOut, true), 1);
  expect("autoretry_classify with the text in host memory", (writeText(free, "429"), x.autoretry_classify(0, free, 3, classifyOut)), 0);

  // One header, `retry-after: 7`, its struct at the text buffer's start and
  // its bytes after it.
  const header = (at, name, value) => {
    const view = new DataView(x.memory.buffer);
    view.setUint32(at, name[0], true);
    view.setUint32(at + 4, name[1], true);
    view.setUint32(at + 8, value[0], true);
    view.setUint32(at + 12, value[1], true);
  };
  const nameAt = textBuf + 64;
  const valueAt = nameAt + writeText(nameAt, "retry-after");
  writeText(valueAt, "7");
  const good = () => header(textBuf, [nameAt, 11], [valueAt, 1]);
  const badHeaders = [
    ["array past the end of memory", () => good(), [end - 8, 1], ERR.BUFFER],
    ["array below __heap_base", () => good(), [heapBase - 64, 1], ERR.BUFFER],
    ["array null with a length", () => good(), [0, 1], ERR.ARG],
    ["array misaligned", () => good(), [textBuf + 2, 1], ERR.ARG],
    ["array wrapping", () => good(), [textBuf, 0x10000000], ERR.BUFFER],
    ["array past the text buffer", () => good(), [textBuf, maxText / 16 + 1], ERR.BUFFER],
    ["name past the end of memory", () => header(textBuf, [end - 4, 11], [valueAt, 1]), [textBuf, 1], ERR.BUFFER],
    ["name below __heap_base", () => header(textBuf, [heapBase - 64, 11], [valueAt, 1]), [textBuf, 1], ERR.BUFFER],
    ["name null with a length", () => header(textBuf, [0, 11], [valueAt, 1]), [textBuf, 1], ERR.ARG],
    ["value wrapping", () => header(textBuf, [nameAt, 11], [0xfffffff0, 32]), [textBuf, 1], ERR.BUFFER],
  ];
  for (const [what, set, [at, n], want] of badHeaders) {
    set();
    filled();
    expect(`autoretry_read_headers, ${what}`, call(what, () => x.autoretry_read_headers(at, n, 0, 0n, classifyOut)), want);
    expect(`autoretry_read_headers, ${what}: nothing written`, untouched(), true);
  }
  good();
  for (const [what, out, want] of [
    ["answer past the end of memory", end - 8, ERR.BUFFER],
    ["answer below __heap_base", heapBase - 64, ERR.BUFFER],
    ["answer null", 0, ERR.ARG],
    ["answer misaligned", classifyOut + 4, ERR.ARG],
  ]) {
    filled();
    expect(`autoretry_read_headers, ${what}`, call(what, () => x.autoretry_read_headers(textBuf, 1, 0, 0n, out)), want);
    expect(`autoretry_read_headers, ${what}: nothing written`, untouched(), true);
  }
  expect("autoretry_read_headers after them", x.autoretry_read_headers(textBuf, 1, 0, 0n, classifyOut), 0);
  expect("autoretry_read_headers: 7000 ms", new DataView(x.memory.buffer).getBigUint64(classifyOut + 8, true), 7000n);
}

// ---------------------------------------------------------------- rules
// A module with rules: blobs the host lends (`autoretry_rules_load`) are
// checked like any buffer, and no output may be written over one a machine
// holds. Machines `a` and `b` idle, `c` in a backoff.
if (typeof x.autoretry_rules_load === "function") {
  const root = new URL("../../", import.meta.url);
  const example = readFileSync(new URL("tests/rules/example.bin", root)); // sparse
  const dense = readFileSync(new URL("ffi/wasm/dense.bin", root));
  // The host's memory for blobs: pages above everything the module had.
  const page = 65536;
  const base = x.memory.grow(4) * page;
  const at = { example: base, dense: base + page, scratch: base + 2 * page };
  mem().set(example, at.example);
  mem().set(dense, at.dense);
  const load = (h, ptr, len) => call(`rules_load(${h}, ${ptr}, ${len})`, () => x.autoretry_rules_load(h, ptr, len >>> 0));
  // Whether an idle machine retries a stream stall (a rule of both blobs; the
  // classifier alone does not): then its backoff is called off again.
  const ruled = (h) => {
    const retried = json(agentEnd(h, "stream stalled")).includes('"sleep"');
    if (retried) json(x.autoretry_abort_retry(h, outBuf, outLen));
    return retried;
  };
  const a = newMachine();
  const b = newMachine();
  const c = newMachine();
  expect("c retries", json(agentEnd(c, "overloaded")).includes('"sleep"'), true);
  expect("without rules a stall is not retried", ruled(a), false);
  expect("a takes the example blob", load(a, at.example, example.length), 0);
  expect("a: a stall is retried", ruled(a), true);
  expect("a: a billing 503 is not", json(agentEnd(a, "503 billing")), '[{"type":"check_compaction"}]');
  const before = snapshot([a, b, c]);
  const intact = () => Buffer.compare(mem().subarray(at.example, at.example + example.length), example) === 0;

  // Blobs the module will not read, and refused blobs: each changes nothing,
  // and `a` keeps its rules.
  mem().set(example, at.scratch);
  const truncated = example.length - 1;
  const badBlobs = [
    ["blob past the end of memory", memEnd() + 16, 64, ERR.BUFFER],
    ["blob running past the end of memory", memEnd() - 100, example.length, ERR.BUFFER],
    ["blob at the end of memory", memEnd(), 1, ERR.BUFFER],
    ["blob on the stack", 1024, 64, ERR.BUFFER],
    ["blob in the statics", heapBase - 256, 64, ERR.BUFFER],
    ["blob ending above __heap_base", heapBase - 8, 64, ERR.BUFFER],
    ["blob wrapping the address space", 0xffff_fff0, 64, ERR.BUFFER],
    ["blob with the largest length", at.example, 0xffff_ffff, ERR.BUFFER],
    ["blob null with a length", 0, 64, ERR.ARG],
    ["blob in the text buffer", textBuf, maxText, ERR.BUFFER],
    ["blob in the out buffer", outBuf, example.length, ERR.BUFFER],
    ["blob running past the out buffer", outBuf + outLen - 8, 64, ERR.BUFFER],
    ["blob starting before the text buffer", textBuf - 8, 64, ERR.BUFFER],
    ["blob null and empty", 0, 0, ERR.RULES_FOREIGN],
    ["blob of host bytes that are none", at.scratch + 64, 256, ERR.RULES_FOREIGN],
    ["blob truncated by one byte", at.scratch, truncated, ERR.RULES_LENGTH],
    ["blob of its header alone", at.scratch, 24, ERR.RULES_LENGTH],
    ["dense blob misaligned", at.scratch + 1, dense.length, ERR.RULES_MISALIGNED],
  ];
  mem().set(dense, at.scratch + 1);
  for (const [what, ptr, len, want] of badBlobs) {
    if (what === "blob truncated by one byte" || what === "blob of its header alone") mem().set(example, at.scratch);
    if (what === "blob of host bytes that are none") mem().fill(0x5a, at.scratch, at.scratch + 1024);
    if (what === "dense blob misaligned") mem().set(dense, at.scratch + 1);
    expect(`a: ${what}`, load(a, ptr, len), want);
    expect(`a: ${what}: nothing changed`, snapshot([a, b, c]), before);
    expect(`a: ${what}: the rules kept`, ruled(a), true);
  }
  // A valid blob in the out buffer is refused for its place alone; the
  // module checks where a blob is before what it holds.
  mem().set(example, outBuf);
  expect("a valid blob in the out buffer", load(b, outBuf, example.length), ERR.BUFFER);
  expect("b: still without rules", ruled(b), false);
  // A damaged checksum byte.
  mem().set(example, at.scratch);
  mem()[at.scratch + example.length - 1] ^= 1;
  expect("a damaged blob", load(a, at.scratch, example.length), ERR.RULES_CORRUPT);
  expect("a damaged blob: the rules kept", ruled(a), true);
  // Aligned, the dense blob loads; a sparse one needs no alignment.
  expect("b takes the dense blob", load(b, at.dense, dense.length), 0);
  expect("b: a stall is retried", ruled(b), true);
  mem().copyWithin(at.scratch + 1, at.example, at.example + example.length);
  expect("b takes a misaligned sparse blob", load(b, at.scratch + 1, example.length), 0);
  expect("b: a stall is retried", ruled(b), true);
  expect("b: upstream_error too (the example's rule)", json(agentEnd(b, "upstream_error")).includes('"sleep"'), true);
  json(x.autoretry_abort_retry(b, outBuf, outLen));

  // Output buffers over a blob a machine holds: refused, nothing written.
  const holdsBefore = snapshot([a, b, c]);
  const overBlob = [
    ["out inside a held blob", at.example + 16, 64],
    ["out over a held blob's start", at.example - 8, 64],
    ["out over a held blob's end", at.example + example.length - 8, 64],
    ["out around a held blob", at.example - 8, example.length + 16],
    ["out inside b's misaligned blob", at.scratch + 2, 64],
  ];
  const writers = [
    ["abort", (out, cap) => x.autoretry_abort(a, out, cap)],
    ["abort_retry", (out, cap) => x.autoretry_abort_retry(c, out, cap)],
    ["timer_fired", (out, cap) => x.autoretry_timer_fired(c, x.autoretry_pending_timer(c), out, cap)],
    ["set_auto_retry", (out, cap) => x.autoretry_set_auto_retry(a, 0, out, cap)],
    ["settings_ex", (out, cap) => x.autoretry_settings_ex(a, 0, 0, 1, 5n, 0n, 0n, 0, 0, 0, out, cap)],
    ["state", (out, cap) => x.autoretry_state(a, out, cap)],
    ["agent_end", (out, cap) => x.autoretry_agent_end(a, STOP_ERROR, textBuf, writeText(textBuf, "stream stalled"), 0, 0n, 0n, 0, 0n, out, cap)],
    ["agent_end of a machine without the blob", (out, cap) => x.autoretry_agent_end(c, STOP_ERROR, textBuf, -1, 0, 0n, 0n, 0, 0n, out, cap)],
    ["state_c", (out) => x.autoretry_state_c(a, out)],
    ["settings_defaults", (out) => x.autoretry_settings_defaults(0, out)],
  ];
  const aligned = (n) => n - (n % 8);
  for (const [what, out, cap] of overBlob) {
    for (const [name, f] of writers) {
      expect(`${name}: ${what}`, call(`${name}: ${what}`, () => f(aligned(out), cap)), ERR.BUFFER);
    }
    expect(`${what}: nothing changed`, snapshot([a, b, c]), holdsBefore);
    expect(`${what}: the blob intact`, intact(), true);
  }
  {
    // handle_c's outputs over the blob (an input of its own, a message_end).
    const input = at.scratch + 32768;
    mem().fill(0, input, input + 64);
    new DataView(x.memory.buffer).setUint32(input, 1, true);
    new DataView(x.memory.buffer).setUint32(input + 4, STOP_STOP, true);
    expect("handle_c: outputs over a held blob", x.autoretry_handle_c(a, input, at.example + 64, 8), ERR.BUFFER);
    expect("handle_c: nothing changed", snapshot([a, b, c]), holdsBefore);
    expect("handle_c: the blob intact", intact(), true);
  }
  // Right next to the blob is the host's, though.
  expect("out just past a held blob", x.autoretry_state(a, at.example + example.length, 64) > 0, true);
  expect("out just before a held blob", x.autoretry_state(a, at.example - 64, 64) > 0, true);

  // One blob lent to two machines: it is held until both let it go.
  expect("b takes a's blob too", load(b, at.example, example.length), 0);
  expect("a clears", x.autoretry_rules_clear(a), 0);
  expect("a: no rules", ruled(a), false);
  expect("b: its rules", ruled(b), true);
  expect("out over the blob b holds", x.autoretry_state(a, at.example + 16, 64), ERR.BUFFER);
  expect("b's old misaligned blob is let go", x.autoretry_state(a, at.scratch + 8, 64) > 0, true);
  const staleB = b;
  expect("free b (it held the blob)", x.autoretry_free(b), 0);
  expect("out over the blob nobody holds", x.autoretry_state(a, at.example + 16, 64) > 0, true);
  mem().set(example, at.example); // the host's again: written over, and restored
  // b's slot's next machine has no rules; b's handle is stale everywhere.
  const d = newMachine();
  expect("d takes b's slot", (d & 0xff) === (staleB & 0xff), true);
  expect("d: no rules", ruled(d), false);
  const dBefore = snapshot([a, c, d]);
  expect("stale handle: rules_load", load(staleB, at.example, example.length), ERR.HANDLE);
  expect("stale handle: rules_clear", x.autoretry_rules_clear(staleB), ERR.HANDLE);
  expect("stale handle: nothing changed", snapshot([a, c, d]), dBefore);
  expect("d: still no rules", ruled(d), false);
  for (const h of [-1, -2147483648, POOL_SIZE, 255, 256, 2147483647]) {
    expect(`handle ${h}: rules_load`, load(h, at.example, example.length), ERR.HANDLE);
    expect(`handle ${h}: rules_clear`, x.autoretry_rules_clear(h), ERR.HANDLE);
  }
  // A machine freed while it holds a blob lets it go.
  expect("d takes the blob", load(d, at.example, example.length), 0);
  expect("free d", x.autoretry_free(d), 0);
  expect("out over the blob after the free", x.autoretry_state(a, at.example + 16, 64) > 0, true);
  for (const h of [a, c]) expect(`free ${h}`, x.autoretry_free(h), 0);
} else {
  expect("a module without rules exports no rules_clear", typeof x.autoretry_rules_clear, "undefined");
}

console.log(`${checks - failures} of ${checks} hostile-call checks passed`);
process.exit(failures === 0 ? 0 : 1);
