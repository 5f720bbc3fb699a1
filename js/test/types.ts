// The types in use: CI compiles this file with `tsc --noEmit --strict`
// (it is not run). A mistake in autoretry.d.ts, or in this use of it, fails.
import { AutoretryError, Budget, CURATED_WASM_URL, ERR_BUDGET, ERR_REFUSED, ERR_RULES_LENGTH, EXTENDED_WASM_URL, Machine, RULES_WASM_URL, STOP_ERROR, load, parseJson, stringifyJson } from "../autoretry.js";
import type { Classification, ClassifierName, Event, HeaderHints, Input, Output, RetryState } from "../autoretry.js";

const machine = new Machine(await load(), { settings: { profile: "modern", baseDelayMs: 2000, maxRetries: 3n }, host: { seed: 42n } });
const input: Input = { type: "agent_end", message: { role: "assistant", stopReason: "error", errorMessage: "503" }, nowMs: Date.now() };
const out: Output[] = machine.handle(input);
// Optional fields as a JSON host forwards them: null is absent.
machine.handle({ type: "message_end", message: { stopReason: "stop", errorMessage: null, usage: { input: null }, shouldRetry: null, retryAfterMs: null } });
for (const o of out) {
  if (o.type === "sleep") machine.handle({ type: "timer_fired", timer: o.timer });
  if (o.type === "emit") {
    const event: Event = o.event;
    if (event.type === "auto_retry_start") console.log(event.delayMs, event.errorMessage.length);
    else console.log(event.success, event.finalError ?? "");
  }
}
try {
  machine.handle({ type: "settings", settings: { jitterPct: 101 } });
} catch (e) {
  if (e instanceof AutoretryError && e.code !== ERR_REFUSED) console.log(e.codeName, e.message);
  if (e instanceof AutoretryError && e.reason === "AgentRunDuringBackoff") console.log("wait for the timer");
}
const state: RetryState = machine.state();
const pending: number | bigint | null = machine.pendingTimer();
console.log(state.retryAttempt, pending, STOP_ERROR, stringifyJson(parseJson("[1]")));
machine.free();

// The modern profile: the module with the extended classifier.
const extended = await load(EXTENDED_WASM_URL);
const hasExtended: boolean = extended.hasExtended;
if (hasExtended) new Machine(extended, { settings: { profile: "modern" } }).free();

// Your own rules: the other module.
const withRules = await load(RULES_WASM_URL);
const ruled = new Machine(withRules);
if (withRules.hasRules) {
  try {
    ruled.loadRules(new Uint8Array(await (await fetch("rules.bin")).arrayBuffer()));
  } catch (e) {
    if (e instanceof AutoretryError && e.code === ERR_RULES_LENGTH) console.log("a truncated blob");
  }
  ruled.clearRules();
}
ruled.free();

// Section 11: a budget shared by machines, a partial turn, the fallback.
const module = await load();
const budget = new Budget(module, { maxTokens: 10, tokenRatio: 0.1 });
const fallback = new Machine(module, { settings: { modelFallback: true, maxTotalDelayMs: 60000 } });
for (const o of fallback.handle({ type: "agent_end", message: { stopReason: "error", errorMessage: "529", partial: "text" } }, budget)) {
  if (o.type === "switch_model") fallback.handle({ type: "model_switched", switched: o.reason !== "throttled" }, budget);
  if (o.type === "continue_agent" && o.resume) console.log("continue the partial turn");
}
const tokens: number = budget.tokens;
console.log(tokens, budget.tokensMilli, ERR_BUDGET);
fallback.free();
budget.free();

// Section 12: the stream watchdog on the machine's clock, empty answers.
let clockMs = 0;
const watched = new Machine(module, { settings: { firstEventTimeoutMs: 300000, idleTimeoutMs: 300000n, retryEmpty: true }, clock: () => clockMs });
for (const o of watched.streamStart()) {
  if (o.type === "watch") watched.handle({ type: "timer_fired", timer: o.timer });
}
clockMs = 5;
watched.streamEvent();
watched.handle({ type: "stream_event", nowMs: 6n });
watched.handle({ type: "agent_end", message: { stopReason: "stop", empty: true } });
watched.free();

// Section 13: the curated classifier, response headers on a message, the
// classifier and the header reading alone.
const curated = await load(CURATED_WASM_URL);
const name: ClassifierName = curated.hasCurated ? "curated" : "extended";
const reader = new Machine(curated, { settings: { classifier: name, honorHints: true } });
reader.handle({ type: "agent_end", message: { stopReason: "error", errorMessage: "529", headers: [["retry-after", "7"]] }, nowMs: Date.now() });
reader.free();
const labels: Classification = curated.classify("Rate limit exceeded. Try again in 30 seconds.", name);
const hints: HeaderHints = curated.readHeaders([["retry-after-ms", "1500"]], null);
console.log(labels.retryable, labels.hintMs, hints.shouldRetry, hints.retryAfterMs);
