// A JavaScript agent on the retry machine: a flaky provider fails twice with
// `529 overloaded_error`, then answers; the machine's backoff runs on
// setTimeout (`--time-scale F` shortens it: 0.01 runs a 2 s wait in 20 ms).
// With `modelFallback` on and one retry per model, the second failure asks
// for another model (`switch_model`): the host switches and answers with
// the boolean alone. Every question the machine asks is answered: one left
// unanswered would keep the prompt waiting for ever.
//
//     node js/examples/agent.mjs [--time-scale F]

import { Machine, load, stringifyJson } from "../autoretry.js";

// ---- the provider (not glue): fails `failures` times, then answers.
let failures = 2;
const callProvider = async () =>
  failures-- > 0
    ? { role: "assistant", stopReason: "error", errorMessage: "529 overloaded_error: Overloaded" }
    : { role: "assistant", stopReason: "stop" };
const scale = process.argv[2] === "--time-scale" ? Number(process.argv[3]) : 1;

// ---- the glue: feed inputs, carry out every output in order.
const machine = new Machine(await load(), { settings: { maxRetries: 1, modelFallback: true } });
const fallbackModels = ["fallback-model"];
const context = [];
const timers = new Map();
let done;
const finished = new Promise((resolve) => (done = resolve));

async function runAgent() {
  const message = await callProvider();
  context.push(message);
  feed({ type: "agent_end", message, nowMs: Date.now() });
}

function feed(input) {
  for (const out of machine.handle(input)) {
    switch (out.type) {
      case "emit":
        console.log(stringifyJson(out.event));
        break;
      case "drop_trailing_error":
        context.pop();
        break;
      case "sleep":
        timers.set(out.timer, setTimeout(() => feed({ type: "timer_fired", timer: out.timer }), Number(out.ms) * scale));
        break;
      case "cancel_timer":
        clearTimeout(timers.get(out.timer));
        break;
      case "continue_agent":
        setTimeout(runAgent);
        break;
      case "switch_model": {
        // Another model, if one is left (the next runs use it).
        const model = fallbackModels.shift();
        console.log(`switch_model (${out.reason}): ${model ?? "no model left"}`);
        setTimeout(() => feed({ type: "model_switched", switched: model !== undefined }));
        break;
      }
      case "mark_usage_limit": // no other credential here
        setTimeout(() => feed({ type: "usage_limit_marked", switched: false }));
        break;
      case "check_compaction": // the prompt is over
        done(context.at(-1));
        break;
    }
  }
}

await runAgent();
const answer = await finished;
console.log(`agent: ${answer.stopReason === "stop" ? "answered" : `failed: ${answer.errorMessage}`}`);
machine.free();
