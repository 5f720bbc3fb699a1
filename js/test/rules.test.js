// Your own rules through the wrapper: `Machine.loadRules` with the example
// rule set (tests/rules/example.json, compiled to tests/rules/example.bin),
// the verdicts in retry chains, each refusal (the machine keeps its rules),
// `clearRules`, `free`, and where the blobs live in the module's memory.
//
// The modules: $AUTORETRY_RULES_WASM, else js/autoretry-rules.wasm, and
// $AUTORETRY_WASM, else js/autoretry.wasm (`sh js/build.sh` builds both).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { ERR_ARG, ERR_BUFFER, ERR_HANDLE, ERR_RULES_CORRUPT, ERR_RULES_FOREIGN, ERR_RULES_LENGTH, ERROR_NAMES, Machine, RULES_WASM_URL, load } from "../autoretry.js";
import { Blobs } from "../blobs.js";
import { thrown } from "./support.js";

const path = (env, file) => {
  const p = process.env[env] ?? new URL(`../${file}`, import.meta.url).pathname;
  if (!existsSync(p)) throw new Error(`no WebAssembly module at ${p}: run \`sh js/build.sh\` or set ${env}`);
  return p;
};
const rulesWasm = path("AUTORETRY_RULES_WASM", "autoretry-rules.wasm");
const plainWasm = path("AUTORETRY_WASM", "autoretry.wasm");
const module = await load(readFileSync(rulesWasm));
const plain = await load(readFileSync(plainWasm));

const repo = new URL("../../", import.meta.url);
const example = readFileSync(new URL("tests/rules/example.bin", repo));
// Two rules as a dense DFA (`--kind dense`, ffi/wasm/dense.json): "stream
// stalled" is retried, "billing" never.
const dense = readFileSync(new URL("ffi/wasm/dense.bin", repo));

const error = (text, extra = {}) => ({ type: "agent_end", message: { stopReason: "error", errorMessage: text, ...extra } });
const success = { type: "agent_end", message: { stopReason: "stop" } };
const notRetried = [{ type: "check_compaction" }];

// Runs `f` on a fresh machine of `m` (with `blob` loaded, if given) and frees it.
function withMachine(m, blob, f) {
  const machine = new Machine(m);
  try {
    if (blob) machine.loadRules(blob);
    return f(machine);
  } finally {
    machine.free();
  }
}


// Whether the machine retries `text` (a first failure): the chain opens.
const retries = (machine, text, extra) => {
  const out = machine.handle(error(text, extra));
  if (out.at(-1)?.type === "sleep") {
    machine.handle({ type: "abort_retry" });
    return true;
  }
  assert.deepEqual(out, notRetried, `${text}: neither a retry nor a plain end`);
  return false;
};

test("which module has rules", () => {
  assert.equal(module.hasRules, true);
  assert.equal(plain.hasRules, false);
  assert.ok(RULES_WASM_URL.pathname.endsWith("/autoretry-rules.wasm"));
  withMachine(plain, null, (m) => {
    const e = thrown(() => m.loadRules(example));
    assert.equal(e.code, ERR_ARG);
    assert.match(e.message, /autoretry-rules\.wasm/);
    m.clearRules(); // nothing to take away
    assert.equal(retries(m, "529 overloaded_error"), true);
  });
});

test("a retry rule opens a chain the classifier would not", () => {
  withMachine(module, null, (m) => assert.equal(retries(m, "stream stalled"), false));
  withMachine(module, example, (m) => {
    // The whole chain: two stalls retried, then an answer.
    let out = m.handle(error("Stream stalled after 30s"));
    assert.deepEqual(out[0].event, { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "Stream stalled after 30s" });
    assert.deepEqual(m.handle({ type: "timer_fired", timer: out.at(-1).timer }), [{ type: "continue_agent" }]);
    out = m.handle(error("retry your request"));
    assert.equal(out[0].event.attempt, 2);
    assert.equal(out[0].event.delayMs, 4000);
    assert.deepEqual(m.handle({ type: "timer_fired", timer: out.at(-1).timer }), [{ type: "continue_agent" }]);
    out = m.handle(success);
    assert.deepEqual(out[0], { type: "emit", event: { type: "auto_retry_end", success: true, attempt: 2 } });
    assert.deepEqual(m.state(), { autoRetryEnabled: true, isRetrying: false, retryAttempt: 0 });
  });
});

test("a never rule forbids a retry the classifier would make", () => {
  const text = "503 billing: insufficient funds";
  withMachine(module, null, (m) => assert.equal(retries(m, text), true));
  withMachine(module, example, (m) => {
    assert.deepEqual(m.handle(error(text)), notRetried);
    // Mid-chain too: the chain ends with the error.
    const out = m.handle(error("529 overloaded_error"));
    m.handle({ type: "timer_fired", timer: out.at(-1).timer });
    assert.deepEqual(m.handle(error("tool error: 503 from the search API"))[0], {
      type: "emit",
      event: { type: "auto_retry_end", success: false, attempt: 1, finalError: "tool error: 503 from the search API" },
    });
  });
});

test("without a verdict the classifier decides; the host's own shouldRetry wins; an overflow is never retried", () => {
  withMachine(module, example, (m) => {
    assert.equal(retries(m, "529 overloaded_error"), true);
    assert.equal(retries(m, "401 unauthorized"), false);
    assert.equal(retries(m, "stream stalled", { shouldRetry: false }), false);
    assert.equal(retries(m, "503 billing: insufficient funds", { shouldRetry: true }), true);
    // A retry rule matches, but a context overflow is never retried.
    assert.equal(retries(m, "upstream_error: prompt is too long"), false);
    assert.equal(retries(m, "upstream_error: prompt is too long", { shouldRetry: true }), false);
  });
});

test("each refusal throws its code and the machine keeps its rules", () => {
  withMachine(module, example, (m) => {
    const flipped = (at) => {
      const b = Uint8Array.from(example);
      b[at] ^= 0x01;
      return b;
    };
    const cases = [
      ["empty", new Uint8Array(0), ERR_RULES_FOREIGN],
      ["text", new TextEncoder().encode('{"retry": ["stalled"]}'), ERR_RULES_FOREIGN],
      ["a WebAssembly module", readFileSync(plainWasm), ERR_RULES_FOREIGN],
      ["another magic", flipped(0), ERR_RULES_FOREIGN],
      ["the header alone", example.subarray(0, 24), ERR_RULES_LENGTH],
      ["truncated by one byte", example.subarray(0, example.length - 1), ERR_RULES_LENGTH],
      ["padded by one byte", Uint8Array.from([...example, 0]), ERR_RULES_LENGTH],
      ["the last byte flipped (the checksum)", flipped(example.length - 1), ERR_RULES_CORRUPT],
      ["a DFA byte flipped", flipped(1000), ERR_RULES_CORRUPT],
      ["the checksum flipped", flipped(20), ERR_RULES_CORRUPT],
    ];
    for (const [what, bytes, code] of cases) {
      const e = thrown(() => m.loadRules(bytes));
      assert.equal(e.code, code, `${what}: ${e.codeName} ${e.message}`);
      assert.equal(e.codeName, ERROR_NAMES[code]);
      assert.match(e.message, /^loadRules: .*; the machine keeps the rules it had$/);
      assert.equal(retries(m, "stream stalled"), true, `${what}: the rules are gone`);
      assert.equal(retries(m, "503 billing"), false, `${what}: the rules are gone`);
    }
    for (const bad of [undefined, null, "ARTRULES", [1, 2, 3], new Uint16Array(8)]) {
      assert.equal(thrown(() => m.loadRules(bad)).code, ERR_ARG);
    }
    assert.equal(retries(m, "stream stalled"), true);
  });
  // A machine with no rules keeps none.
  withMachine(module, null, (m) => {
    assert.equal(thrown(() => m.loadRules(example.subarray(0, 100))).code, ERR_RULES_LENGTH);
    assert.equal(retries(m, "stream stalled"), false);
  });
});

test("a dense blob loads (the wrapper aligns every blob), an ArrayBuffer too", () => {
  withMachine(module, dense, (m) => {
    assert.equal(retries(m, "stream stalled"), true);
    assert.equal(retries(m, "503 billing"), false);
    assert.equal(retries(m, "upstream_error"), false); // not one of its rules
    m.loadRules(example.buffer.slice(example.byteOffset, example.byteOffset + example.length));
    assert.equal(retries(m, "upstream_error"), true);
  });
});

test("clearRules, and a freed machine", () => {
  const m = new Machine(module);
  m.loadRules(example);
  m.clearRules();
  assert.equal(retries(m, "stream stalled"), false);
  assert.equal(retries(m, "503 billing: insufficient funds"), true);
  m.clearRules(); // twice is harmless
  m.loadRules(example);
  assert.equal(retries(m, "stream stalled"), true);
  m.free();
  assert.equal(thrown(() => m.loadRules(example)).code, ERR_HANDLE);
  assert.equal(thrown(() => m.clearRules()).code, ERR_HANDLE);
  // Its slot's next machine starts without rules.
  withMachine(module, null, (next) => assert.equal(retries(next, "stream stalled"), false));
});

const page = 65536;
// A blob's room in the area: its length to an 8-byte boundary.
const room = (blob) => Math.ceil(blob.length / 8) * 8;

test("blobs in memory: the same bytes shared, held blobs packed and never written over, free room reused", async () => {
  const fresh = await load(readFileSync(rulesWasm));
  const memory = () => fresh.abi.memory.buffer.byteLength;
  const start = memory();
  const a = new Machine(fresh);
  const b = new Machine(fresh);
  a.loadRules(example);
  b.loadRules(Uint8Array.from(example)); // the same bytes, another array
  assert.equal(memory(), start + page, "one copy for both machines");
  // b takes other rules: a's blob is held, so they go after it, in the same page.
  b.loadRules(dense);
  assert.equal(memory(), start + page);
  assert.equal(retries(a, "upstream_error"), true, "a's blob was written over");
  assert.equal(retries(b, "upstream_error"), false);
  // A refused blob takes no room for good.
  for (let i = 0; i < 3; i++) assert.equal(thrown(() => a.loadRules(example.subarray(0, 100))).code, ERR_RULES_LENGTH);
  assert.equal(memory(), start + page);
  // a lets go of the example, b loads it: into the free room, no growth.
  a.clearRules();
  b.loadRules(example);
  assert.equal(memory(), start + page);
  assert.equal(retries(b, "upstream_error"), true);
  // Freeing b lets its blob go too; a's next blobs take its room.
  b.free();
  a.loadRules(dense);
  a.loadRules(example);
  assert.equal(memory(), start + page);
  assert.equal(retries(a, "upstream_error"), true);
  // A blob larger than a page: the memory grows by what the room lacks.
  const big = Uint8Array.from([...example, ...new Uint8Array(2 * page)]);
  assert.equal(thrown(() => a.loadRules(big)).code, ERR_RULES_LENGTH);
  assert.equal(memory(), start + Math.ceil((room(example) + big.length) / page) * page);
  assert.equal(retries(a, "upstream_error"), true);
  a.free();
});

test("refused blobs grow the memory to the largest of them, not their sum", async () => {
  const fresh = await load(readFileSync(rulesWasm));
  const memory = () => fresh.abi.memory.buffer.byteLength;
  const start = memory();
  const m = new Machine(fresh);
  for (const order of [[1, 40], [40, 1]]) {
    const [from, to] = order;
    for (let pages = from; from < to ? pages <= to : pages >= to; pages += from < to ? 1 : -1) {
      const e = thrown(() => m.loadRules(new Uint8Array(pages * page).fill(pages)));
      assert.equal(e.code, ERR_RULES_FOREIGN);
    }
    assert.equal((memory() - start) / page, 40, `${from} to ${to} pages`);
  }
  // The machine still loads and uses a blob.
  m.loadRules(example);
  assert.equal(retries(m, "stream stalled"), true);
  assert.equal(memory() - start, 40 * page);
  m.free();
});

test("held blobs move down together to make room, and their machines keep their rules", async () => {
  const fresh = await load(readFileSync(rulesWasm));
  const memory = () => fresh.abi.memory.buffer.byteLength;
  const start = memory();
  const [a, b, c] = [new Machine(fresh), new Machine(fresh), new Machine(fresh)];
  a.loadRules(example);
  b.loadRules(dense);
  c.loadRules(dense); // shares b's copy
  a.clearRules(); // free room before the dense blob
  assert.equal(memory(), start + page);
  // More than the gap before or after the dense blob, less than both: it
  // moves to the start (b and c lent it there), the gap after it grows.
  const wide = new Uint8Array(100_000).fill(7);
  assert.equal(thrown(() => a.loadRules(wide)).code, ERR_RULES_FOREIGN);
  assert.equal(memory(), start + Math.ceil((room(dense) + wide.length) / page) * page);
  for (const m of [b, c]) {
    assert.equal(retries(m, "stream stalled"), true, "the dense rules moved with their blob");
    assert.equal(retries(m, "503 billing"), false);
    assert.equal(retries(m, "upstream_error"), false);
  }
  // The room after it takes the example: no growth, nothing written over.
  const before = memory();
  a.loadRules(example);
  assert.equal(memory(), before);
  assert.equal(retries(a, "upstream_error"), true);
  assert.equal(retries(b, "upstream_error"), false);
  assert.equal(retries(b, "stream stalled"), true);
  for (const m of [a, b, c]) m.free();
});

test("a memory that cannot grow is an AutoretryError, and nothing changed", async () => {
  // The module's own memory may grow to 4 GiB; a bounded one stands in for
  // its end (or an engine's lower limit).
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 3 });
  const lent = [];
  const abi = { memory, rulesLoad: (h, start, length) => (lent.push([h, start, length]), 0), rulesClear: () => 0 };
  const blobs = new Blobs(abi);
  const held = blobs.place(new Uint8Array(page).fill(1));
  blobs.hold(held, 1);
  assert.equal(memory.buffer.byteLength, 2 * page);
  const e = thrown(() => blobs.place(new Uint8Array(2 * page).fill(2)));
  assert.equal(e.code, ERR_BUFFER);
  assert.match(e.message, /cannot grow by 2 pages/);
  assert.equal(memory.buffer.byteLength, 2 * page);
  assert.deepEqual(new Uint8Array(memory.buffer, page, page), new Uint8Array(page).fill(1));
  assert.deepEqual(lent, []);
  // Through the wrapper: the same error, named for loadRules.
  const fresh = await load(readFileSync(rulesWasm));
  fresh.blobs = blobs;
  const m = new Machine(fresh);
  const w = thrown(() => m.loadRules(new Uint8Array(2 * page).fill(3)));
  assert.equal(w.code, ERR_BUFFER);
  assert.match(w.message, /^loadRules: the module's memory cannot grow .*; the machine keeps the rules it had$/);
  m.free();
});
