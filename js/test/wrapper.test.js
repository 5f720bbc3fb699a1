// The wrapper's own contract: numbers and BigInts, errors that change
// nothing, the codes against the Rust constants, the pool, the JSON helpers.
//
// The module: $AUTORETRY_WASM, else js/autoretry.wasm (`sh js/build.sh`).

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import * as autoretry from "../autoretry.js";
import { ERR_ARG, ERR_HANDLE, ERR_POOL_FULL, ERR_REFUSED, ERR_SETTINGS, ERR_TEXT_LEN, ERR_UTF8, Machine, load, parseJson, stringifyJson } from "../autoretry.js";
import { thrown } from "./support.js";
import { REFUSALS } from "../abi.js";

const wasm = process.env.AUTORETRY_WASM ?? new URL("../autoretry.wasm", import.meta.url).pathname;
if (!existsSync(wasm)) throw new Error(`no WebAssembly module at ${wasm}: run \`sh js/build.sh\` or set AUTORETRY_WASM`);
const bytes = readFileSync(wasm);
const module = await load(bytes);

const overloaded = { type: "agent_end", message: { role: "assistant", stopReason: "error", errorMessage: "529 overloaded_error" } };
const idle = { autoRetryEnabled: true, isRetrying: false, retryAttempt: 0 };

// Runs `f` on a fresh machine and frees it.
function withMachine(options, f) {
  const machine = new Machine(module, options);
  try {
    return f(machine);
  } finally {
    machine.free();
  }
}


test("u64 arguments take numbers: the raw export does not", () => {
  // The module's u64 parameters are BigInts in JS; the wrapper converts.
  assert.throws(() => module.abi.x.autoretry_new(1, 3, 2000, 0, 0), /BigInt/);
  withMachine({ settings: { baseDelayMs: 2000, maxDelayMs: 2 ** 53 - 1 }, host: { contextWindow: 200000, seed: 7 } }, (m) => {
    const out = m.handle({ ...overloaded, nowMs: 1_700_000_000_000 });
    assert.deepEqual(out.at(-1), { type: "sleep", ms: 2000, timer: 1 });
    assert.equal(m.pendingTimer(), 1);
    assert.deepEqual(m.handle({ type: "timer_fired", timer: 1n }), [{ type: "continue_agent" }]);
  });
});

test("outputs are numbers where safe, BigInts beyond 2^53 - 1", () => {
  const max = 0xffffffffffffffffn;
  withMachine({ settings: { baseDelayMs: max } }, (m) => {
    const [start, , sleep] = m.handle(overloaded);
    assert.equal(start.event.delayMs, max);
    assert.equal(sleep.ms, max);
    assert.equal(typeof start.event.attempt, "number");
  });
  withMachine({ host: { credentialStore: true } }, (m) => {
    const out = m.handle({ type: "agent_end", message: { stopReason: "error", errorMessage: "usage limit reached", retryAfterMs: 2n ** 60n } });
    assert.deepEqual(out, [{ type: "mark_usage_limit", retryAfterMs: 2n ** 60n }]);
  });
});

test("bad inputs throw with a code and a message, and change nothing", () => {
  withMachine({}, (m) => {
    m.handle(overloaded); // a chain is open, a backoff pending
    const during = m.state();
    const cases = [
      [{ type: "agent_end", message: { stopReason: "stop" } }, ERR_REFUSED, /agent_end refused/],
      [{ type: "settings", settings: { maxRetries: -1 } }, ERR_SETTINGS, /^retry\.maxRetries: expected a non-negative integer that fits u32 .*found -1$/],
      [{ type: "settings", settings: { jitterPct: 101 } }, ERR_SETTINGS, /^retry\.jitterPct: .*found 101$/],
      [{ type: "settings", settings: { baseDelayMs: 1.5 } }, ERR_SETTINGS, /^retry\.baseDelayMs: .*found 1\.5$/],
      [{ type: "settings", settings: { baseDelayMs: -0 } }, ERR_SETTINGS, /found -0$/],
      [{ type: "settings", settings: { baseDelayMs: 2 ** 60 } }, ERR_SETTINGS, /a BigInt/],
      [{ type: "settings", settings: { retries: 3 } }, ERR_SETTINGS, /^retry: unknown key "retries"$/],
      [{ type: "settings", settings: { profile: null } }, ERR_SETTINGS, /^retry\.profile: expected "classic" or "modern", found null$/],
      [{ type: "settings", settings: [] }, ERR_SETTINGS, /^retry: expected an object, found an array$/],
      [{ type: "reboot" }, ERR_ARG, /^type: unknown input a string "reboot"/],
      [{ type: "agent_end" }, ERR_ARG, /^message: expected an object, found nothing$/],
      [{ type: "agent_end", message: { stopReason: "Error" } }, ERR_ARG, /^message\.stopReason: expected one of/],
      [{ type: "agent_end", message: { role: "user", stopReason: "stop" } }, ERR_ARG, /^message\.role/],
      [{ type: "agent_end", message: { stopReason: "error", errorMessage: 5 } }, ERR_ARG, /^message\.errorMessage: expected a string, found 5$/],
      [{ type: "agent_end", message: { stopReason: null } }, ERR_ARG, /^message\.stopReason: expected one of .*found null$/],
      [{ type: "timer_fired", timer: null }, ERR_ARG, /^timer: .*found null$/],
      [{ type: "agent_end", message: { stopReason: "error", usage: { input: "5" } } }, ERR_ARG, /^message\.usage\.input:/],
      [{ type: "agent_end", message: { stopReason: "error", errorMessage: "x".repeat(module.maxText + 1) } }, ERR_TEXT_LEN, /4097 bytes/],
      [{ type: "agent_end", message: { stopReason: "error", errorMessage: "\ud800 503" } }, ERR_UTF8, /lone surrogate/],
      [{ type: "timer_fired", timer: -1 }, ERR_ARG, /^timer: /],
      [{ type: "set_auto_retry", enabled: "yes" }, ERR_ARG, /^enabled: expected a boolean, found a string "yes"$/],
      ["agent_end", ERR_ARG, /^input: expected an object/],
    ];
    for (const [input, code, message] of cases) {
      const e = thrown(() => m.handle(input));
      assert.equal(e.code, code, `${JSON.stringify(input)}: ${e.message}`);
      assert.match(e.message, message);
      assert.equal(e.codeName, autoretry.ERROR_NAMES[code]);
      assert.deepEqual(m.state(), during, `${e.message}: changed the state`);
    }
    // The settings in force are still the defaults, the timer still pending.
    assert.deepEqual(m.handle({ type: "timer_fired", timer: m.pendingTimer() }), [{ type: "continue_agent" }]);
    assert.equal(m.handle(overloaded)[0].event.delayMs, 4000);
  });
  const e = thrown(() => new Machine(module, { settings: { classifier: "strict" } }));
  assert.equal(e.code, ERR_SETTINGS);
  assert.equal(thrown(() => new Machine(module, { host: { seed: 1.5 } })).code, ERR_ARG);
  assert.equal(thrown(() => new Machine(module, { host: { cores: 2 } })).code, ERR_ARG);
});

test("null in an optional field is absent, as on every other surface", () => {
  // The RPC stream reads the same line, nulls and all, as the fields left out.
  const nulls = { role: null, stopReason: "error", errorMessage: null, usage: null, shouldRetry: null, retryAfterMs: null };
  const cases = [
    [{ type: "agent_end", nowMs: null, message: nulls }, { type: "agent_end", message: { stopReason: "error" } }],
    [
      { type: "agent_end", nowMs: null, message: { ...nulls, errorMessage: "529 overloaded_error", usage: { input: null, cacheRead: 3, cacheWrite: null } } },
      { type: "agent_end", message: { stopReason: "error", errorMessage: "529 overloaded_error", usage: { cacheRead: 3 } } },
    ],
    [{ type: "message_end", message: { ...nulls, stopReason: "stop" } }, { type: "message_end", message: { stopReason: "stop" } }],
  ];
  // The outputs, state and pending timer (a timer id as its machine's pending one).
  const run = (input) =>
    withMachine({}, (m) => {
      const out = m.handle(input).map((o) => (o.type === "sleep" ? { ...o, timer: o.timer === m.pendingTimer() } : o));
      return [out, m.state()];
    });
  for (const [withNulls, without] of cases) {
    const [a, b] = [run(withNulls), run(without)];
    assert.deepEqual(a, b, JSON.stringify(withNulls));
  }
  // A JSON line of a host, parsed and forwarded as it is.
  const line = '{"type":"agent_end","message":{"stopReason":"error","errorMessage":"529 overloaded_error","shouldRetry":null,"retryAfterMs":null}}';
  withMachine({}, (m) => assert.deepEqual(m.handle(parseJson(line)).at(-1), { type: "sleep", ms: 2000, timer: m.pendingTimer() }));
});

test("a refusal says which one (spec §6a)", () => {
  withMachine({}, (m) => {
    m.handle(overloaded);
    const timer = m.pendingTimer();
    for (const input of [overloaded, { type: "message_end", message: { stopReason: "stop" } }]) {
      const e = thrown(() => m.handle(input));
      assert.equal(e.code, ERR_REFUSED);
      assert.equal(e.reason, "AgentRunDuringBackoff");
      assert.equal(e.message, `${input.type} refused: the agent must not run while a retry backoff is pending (timer ${timer}: wait for its timer_fired, or abort_retry) (spec §6a); nothing changed`);
    }
  });
  withMachine({ host: { credentialStore: true } }, (m) => {
    assert.equal(m.handle({ type: "agent_end", message: { stopReason: "error", errorMessage: "usage limit reached" } })[0].type, "mark_usage_limit");
    const e = thrown(() => m.handle({ type: "agent_end", message: { stopReason: "stop" } }));
    assert.equal(e.code, ERR_REFUSED);
    assert.equal(e.reason, "AwaitingUsageLimitAnswer");
    assert.match(e.message, /^agent_end refused: the agent must not run while the usage-limit answer \(usage_limit_marked\) is awaited/);
    // The answer lets it run again.
    m.handle({ type: "usage_limit_marked", switched: true });
  });
  // Other errors carry no reason.
  assert.equal(thrown(() => new Machine(module, { settings: { jitterPct: 101 } })).reason, undefined);
});

test("the stream inputs read the machine's clock; bad readings and inputs change nothing (spec §12)", () => {
  let now = 7.9;
  withMachine({ settings: { firstEventTimeoutMs: 100, idleTimeoutMs: 50 }, clock: () => now }, (m) => {
    // A fractional reading is rounded down: due at 107.
    const [watch] = m.streamStart();
    assert.deepEqual(watch, { type: "watch", ms: 100, timer: watch.timer });
    for (const bad of [-1, Number.NaN, "12", undefined, -1n]) {
      now = bad;
      const e = thrown(() => m.streamEvent());
      assert.equal(e.code, ERR_ARG);
      assert.match(e.message, /^clock: expected a non-negative number of milliseconds/);
    }
    for (const input of [{ type: "stream_event" }, { type: "stream_event", nowMs: -3 }, { type: "stream_start", nowMs: 1.5 }]) {
      assert.equal(thrown(() => m.handle(input)).code, ERR_ARG);
    }
    now = 2n ** 64n - 1n;
    assert.deepEqual(m.streamEvent(), []);
    // The event came after the watch's due time: no stall at 107, a watch
    // for the whole idle limit from the due time.
    assert.deepEqual(m.handle({ type: "timer_fired", timer: watch.timer }).map((o) => [o.type, o.ms]), [["watch", 50]]);
  });
  assert.equal(thrown(() => new Machine(module, { clock: 5 })).code, ERR_ARG);
  withMachine({ settings: { retryEmpty: true } }, (m) => {
    const e = thrown(() => m.handle({ type: "agent_end", message: { stopReason: "stop", empty: true, partial: "text" } }));
    assert.equal(e.code, ERR_REFUSED);
    assert.equal(e.reason, "EmptyWithPartial");
    assert.equal(thrown(() => m.handle({ type: "agent_end", message: { stopReason: "stop", empty: "yes" } })).code, ERR_ARG);
    const out = m.handle({ type: "agent_end", message: { stopReason: "stop", empty: true } });
    assert.equal(out[0].event.errorMessage, "Empty response from the model");
  });
});

test("an unknown constructor option is refused, not ignored", () => {
  for (const [options, message] of [
    [{ setting: { maxRetries: 5 } }, /^options: unknown key "setting" \(expected "settings", "host" or "clock"\)$/],
    [{ settings: {}, hosts: {} }, /^options: unknown key "hosts"/],
    [null, /^options: expected an object \(\{settings, host, clock\}\), found null$/],
    [[], /^options: expected an object .*found an array$/],
  ]) {
    const e = thrown(() => new Machine(module, options));
    assert.equal(e.code, ERR_ARG);
    assert.match(e.message, message);
  }
  withMachine(undefined, (m) => assert.deepEqual(m.state(), idle));
  withMachine({ settings: undefined, host: undefined }, (m) => assert.deepEqual(m.state(), idle));
});

test("a missing module says how to build it", async () => {
  const missing = new URL("./no-such-folder/autoretry.wasm", import.meta.url);
  const e = await load(missing).then(() => assert.fail("loaded"), (err) => err);
  assert.equal(e.code, "ENOENT");
  assert.match(e.message, /^no WebAssembly module at \/.*\/no-such-folder\/autoretry\.wasm: build it with `sh js\/build\.sh`/);
  // Another file name: the path alone.
  const other = await load(new URL("./no-such-folder/mine.wasm", import.meta.url)).then(() => assert.fail("loaded"), (err) => err);
  assert.match(other.message, /^no WebAssembly module at \/.*\/mine\.wasm$/);
});

test("a freed machine is an error; the pool frees its slot", () => {
  const machines = [];
  let e;
  for (;;) {
    try {
      machines.push(new Machine(module));
    } catch (err) {
      e = err;
      break;
    }
  }
  assert.equal(e.code, ERR_POOL_FULL);
  assert.ok(machines.length >= 1);
  machines[0].free();
  machines[0].free(); // twice is harmless
  assert.equal(thrown(() => machines[0].handle({ type: "abort" })).code, ERR_HANDLE);
  assert.equal(thrown(() => machines[0].state()).code, ERR_HANDLE);
  machines[0] = new Machine(module);
  assert.deepEqual(machines[0].state(), idle);
  for (const m of machines) m.free();
});

test("the codes are the Rust constants", () => {
  const dir = new URL("../../ffi/src/", import.meta.url);
  const rust = new Map();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".rs"))) {
    const src = readFileSync(new URL(file, dir), "utf8");
    for (const [, name, value] of src.matchAll(/pub const ((?:ERR|STOP|PROFILE|CLASSIFIER|SHOULD_RETRY|PARTIAL)_[A-Z0-9_]+): [iu]32 = (-?\d+);/g)) rust.set(name, Number(value));
  }
  assert.ok(rust.size >= 20, `${rust.size} constants found`);
  const js = new Map(Object.entries(autoretry).filter(([k, v]) => /^(ERR|STOP|PROFILE|CLASSIFIER|SHOULD_RETRY|PARTIAL)_[A-Z0-9_]+$/.test(k) && typeof v === "number"));
  assert.deepEqual(new Map([...js].sort()), new Map([...rust].sort()));
  for (const [name, code] of rust) if (name.startsWith("ERR_")) assert.equal(autoretry.ERROR_NAMES[code], name);
});

test("every refusal code has its reason", () => {
  const src = readFileSync(new URL("../../ffi/src/refusal.rs", import.meta.url), "utf8");
  const codes = [...src.matchAll(/pub const REFUSAL_([A-Z_]+): i32 = (\d+);/g)];
  assert.ok(codes.length >= 7, `${codes.length} codes found`);
  for (const [, name, value] of codes) {
    // AGENT_RUN_DURING_BACKOFF -> AgentRunDuringBackoff
    const reason = name.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
    assert.equal(REFUSALS[value], name === "NONE" ? undefined : reason, name);
  }
});

test("load takes bytes, a WebAssembly.Module and a file URL", async () => {
  for (const source of [bytes, new WebAssembly.Module(bytes), pathToFileURL(wasm)]) {
    const other = await load(source);
    const m = new Machine(other);
    assert.deepEqual(m.state(), idle);
    m.free();
  }
});

test("load streams a module over HTTP, as a browser does", async () => {
  const server = createServer((req, res) => {
    if (req.url !== "/autoretry.wasm") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/wasm" }).end(bytes);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/autoretry.wasm`;
    for (const source of [new URL(url), url, fetch(url)]) {
      const m = new Machine(await load(source));
      assert.deepEqual(m.handle(overloaded).at(-1), { type: "sleep", ms: 2000, timer: 1 });
      m.free();
    }
    // Not there: the status and how to build it, not a compile error.
    const e = await load(new URL("/js/autoretry.wasm", url)).then(() => assert.fail("loaded"), (err) => err);
    assert.match(e.message, /^no WebAssembly module at http:.*\/js\/autoretry\.wasm: HTTP 404.*: build it with `sh js\/build\.sh`/);
  } finally {
    server.close();
  }
});

test("JSON keeps u64 exact", () => {
  const text = '{"a":18446744073709551615,"b":9007199254740991,"c":-1.5,"d":[1,"x\\u00e9"]}';
  const v = parseJson(text);
  assert.deepEqual(v, { a: 18446744073709551615n, b: 9007199254740991, c: -1.5, d: [1, "xé"] });
  assert.equal(stringifyJson(v), '{"a":18446744073709551615,"b":9007199254740991,"c":-1.5,"d":[1,"xé"]}');
  assert.throws(() => parseJson('{"a":1,"a":2}'), /duplicate key "a"/);
  assert.throws(() => parseJson("[1,]"), SyntaxError);
  assert.equal(Object.getPrototypeOf(parseJson('{"__proto__":{"x":1}}')), Object.prototype);
});

test("a budget is shared by machines, checked, and refused once freed or of another module", async () => {
  const budget = new autoretry.Budget(module, { maxTokens: 4, tokenRatio: 0.5 });
  const [a, b] = [new Machine(module), new Machine(module)];
  try {
    // Each retry decision charges a token: 4 -> 3 -> 2.
    assert.equal(a.handle(overloaded, budget)[0].type, "emit");
    assert.equal(budget.tokens, 3);
    assert.deepEqual(b.handle(overloaded, budget).slice(1), [{ type: "settled" }, { type: "check_compaction" }]);
    assert.equal(budget.tokensMilli, 2000);
    // A run that ends well refills 0.5.
    b.handle({ type: "agent_end", message: { stopReason: "stop" } }, budget);
    assert.equal(budget.tokens, 2.5);
    // Wrong figures, a wrong budget, another module's: nothing changed.
    for (const figures of [{ maxTokens: 0, tokenRatio: 1 }, { maxTokens: 4, tokenRatio: 0.0005 }, { maxTokens: 4, tokenRatio: 1, tokens: 5 }, { maxTokens: 4, tokenRatio: 1, extra: 1 }]) {
      assert.equal(thrown(() => new autoretry.Budget(module, figures)).code, ERR_ARG, JSON.stringify(figures));
    }
    // Figures are read exactly from their shortest decimal form, as the
    // command line reads --budget: no tolerance, nothing rounded.
    for (const [tokenRatio, tokens] of [[1, 2.0000000001], [1, 3.9999999999], [1.0000000001, 4], [1e-7, 4], [0.0010000001, 4], [1, -1e-7], [1, NaN], [Infinity, 4], [1, 1e-300], [1e21, 4], [0.1 + 0.2 - 0.2, 4]]) {
      const err = thrown(() => new autoretry.Budget(module, { maxTokens: 4, tokenRatio, tokens }));
      assert.equal(err.code, ERR_ARG, `${tokenRatio}, ${tokens}`);
      assert.match(err.message, /with at most three digits after the point/);
    }
    for (const [tokenRatio, tokens, milli] of [[0.001, 0, 0], [1e-3, 2.5, 2500], [1000, 4, 4000], [0.5, 3.999, 3999], [0.5, 1e-3, 1], [0.5, -0, 0]]) {
      const ok = new autoretry.Budget(module, { maxTokens: 4, tokenRatio, tokens });
      try {
        assert.equal(ok.tokensMilli, milli, `${tokenRatio}, ${tokens}`);
      } finally {
        ok.free();
      }
    }
    const state = a.state();
    assert.equal(thrown(() => a.handle({ type: "abort" }, {})).code, ERR_ARG);
    const other = new autoretry.Budget(await load(bytes), { maxTokens: 4, tokenRatio: 1 });
    assert.equal(thrown(() => a.handle({ type: "abort" }, other)).code, autoretry.ERR_BUDGET);
    other.free();
    budget.free();
    assert.equal(thrown(() => a.handle({ type: "abort" }, budget)).code, autoretry.ERR_BUDGET);
    assert.equal(thrown(() => budget.tokens).code, autoretry.ERR_BUDGET);
    assert.deepEqual(a.state(), state);
  } finally {
    a.free();
    b.free();
    budget.free();
  }
});

test("model_switched passes back the decision's text; a bad partial is refused", () => {
  withMachine({ settings: { maxRetries: 0, modelFallback: true } }, (m) => {
    assert.equal(thrown(() => m.handle({ ...overloaded, message: { ...overloaded.message, partial: "video" } })).code, ERR_ARG);
    assert.deepEqual(m.handle(overloaded), [{ type: "switch_model", reason: "exhausted" }]);
    const refused = thrown(() => m.handle(overloaded));
    assert.equal(refused.reason, "AwaitingModelSwitchAnswer");
    const out = m.handle({ type: "model_switched", switched: false });
    assert.equal(out[0].event.finalError, "529 overloaded_error");
  });
});

test("autoretry.wasm has the classic classifier alone and says which module has the extended one; autoretry-extended.wasm has it", async () => {
  const classic = await load(new URL("../autoretry.wasm", import.meta.url));
  const extended = await load(autoretry.EXTENDED_WASM_URL);
  assert.equal(classic.hasExtended, false);
  assert.equal(extended.hasExtended, true);
  const asks = [{ profile: "modern" }, { classifier: "extended" }, { profile: "modern", classifier: "classic" }, { profile: "classic", classifier: "extended" }];
  for (const settings of asks) {
    const e = thrown(() => new Machine(classic, { settings }));
    assert.equal(e.code, ERR_SETTINGS);
    assert.match(e.message, /this module \(autoretry\.wasm\) has the classic classifier only: load autoretry-extended\.wasm \(EXTENDED_WASM_URL\) or autoretry-rules\.wasm/);
    assert.match(e.message, settings.profile === "modern" ? /^retry\.profile "modern"/ : /^retry\.classifier "extended"/);
    new Machine(extended, { settings }).free();
  }
  // A settings input asking for it changes nothing, mid-chain too.
  const machine = new Machine(classic);
  try {
    assert.equal(machine.handle(overloaded)[0].event.maxAttempts, 3);
    const before = machine.state();
    for (const settings of asks) {
      assert.equal(thrown(() => machine.handle({ type: "settings", settings })).code, ERR_SETTINGS);
      assert.deepEqual(machine.state(), before);
    }
    assert.deepEqual(machine.handle({ type: "settings", settings: { maxRetries: 5 } }), []);
  } finally {
    machine.free();
  }
});

test("only autoretry-curated.wasm has the curated classifier: the others refuse it naming that module, and a settings input asking for it changes nothing", async () => {
  for (const url of [new URL("../autoretry.wasm", import.meta.url), autoretry.EXTENDED_WASM_URL, autoretry.RULES_WASM_URL]) {
    const module = await load(url);
    assert.equal(module.hasCurated, false);
    const e = thrown(() => new Machine(module, { settings: { classifier: "curated" } }));
    assert.equal(e.code, ERR_SETTINGS);
    assert.match(e.message, /^retry\.classifier "curated" \(spec §13\.2\): this module has no curated classifier: load autoretry-curated\.wasm \(CURATED_WASM_URL\)$/);
    const c = thrown(() => module.classify("529 overloaded", "curated"));
    assert.equal(c.code, ERR_SETTINGS);
    assert.match(c.message, /autoretry-curated\.wasm/);
    const machine = new Machine(module);
    try {
      const before = machine.state();
      assert.equal(thrown(() => machine.handle({ type: "settings", settings: { classifier: "curated" } })).code, ERR_SETTINGS);
      assert.deepEqual(machine.state(), before);
    } finally {
      machine.free();
    }
  }
  const curated = await load(autoretry.CURATED_WASM_URL);
  assert.ok(curated.hasCurated && curated.hasExtended && !curated.hasRules);
  new Machine(curated, { settings: { classifier: "curated" } }).free();
  assert.equal(autoretry.CLASSIFIER_CURATED, 2);
  assert.equal(autoretry.CLASSIFIERS.curated, autoretry.CLASSIFIER_CURATED);
  assert.ok(autoretry.CURATED_WASM_URL.pathname.endsWith("/autoretry-curated.wasm"));
});

test("classify and readHeaders: bad arguments throw before the module sees them", async () => {
  const module = await load(autoretry.CURATED_WASM_URL);
  assert.equal(thrown(() => module.classify("x", "modern")).code, ERR_SETTINGS);
  assert.equal(thrown(() => module.classify(42)).code, ERR_ARG);
  if (typeof "".isWellFormed === "function") assert.equal(thrown(() => module.classify("529 \ud800")).code, ERR_UTF8);
  assert.equal(thrown(() => module.classify("x".repeat(module.maxText + 1))).code, ERR_TEXT_LEN);
  assert.deepEqual(module.classify(""), { retryable: false, overflow: false, usageLimit: false, hintMs: null });
  assert.deepEqual(module.classify("Rate limit exceeded. Try again in 30 seconds.", "curated"), { retryable: true, overflow: false, usageLimit: false, hintMs: 30000 });
  assert.equal(thrown(() => module.readHeaders({ "retry-after": "5" })).code, ERR_ARG);
  assert.equal(thrown(() => module.readHeaders([["retry-after"]])).code, ERR_ARG);
  assert.equal(thrown(() => module.readHeaders([["retry-after", 5]])).code, ERR_ARG);
  assert.equal(thrown(() => module.readHeaders([["retry-after", "5"]], -1)).code, ERR_ARG);
  assert.equal(thrown(() => module.readHeaders([["a", "b".repeat(module.maxText)]])).code, ERR_TEXT_LEN);
  assert.deepEqual(module.readHeaders([]), { shouldRetry: null, retryAfterMs: null });
  assert.deepEqual(module.readHeaders([["Retry-After", "7"]], null), { shouldRetry: null, retryAfterMs: 7000 });
  // A message's headers and text share the text buffer.
  const machine = new Machine(module);
  try {
    const message = { stopReason: "error", errorMessage: "x".repeat(module.maxText - 16), headers: [["retry-after", "5"]] };
    assert.equal(thrown(() => machine.handle({ type: "agent_end", message })).code, ERR_TEXT_LEN);
    assert.equal(thrown(() => machine.handle({ type: "agent_end", message: { ...message, headers: [["a"]] } })).code, ERR_ARG);
    assert.deepEqual(machine.state(), { autoRetryEnabled: true, isRetrying: false, retryAttempt: 0 });
  } finally {
    machine.free();
  }
});
