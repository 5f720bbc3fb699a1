// js/examples/agent.mjs, the whole host of the JavaScript guide, run as a
// user runs it (`node js/examples/agent.mjs --time-scale 0.01`): with
// `modelFallback` on, its second failure asks for another model, and the
// prompt is over only if the host answered every question the machine
// asked (an unanswered one leaves its promise unsettled, and node exits
// with status 13).
//
// The module: js/autoretry.wasm (`sh js/build.sh`).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const example = fileURLToPath(new URL("../examples/agent.mjs", import.meta.url));

test("the example agent answers switch_model and gets its answer", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [example, "--time-scale", "0.01"], {
    timeout: 30_000,
  });
  const lines = stdout.trimEnd().split("\n");
  assert.deepEqual(lines.map((line) => (line.startsWith("{") ? JSON.parse(line).type : line)), [
    "auto_retry_start",
    "switch_model (exhausted): fallback-model",
    "auto_retry_start",
    "auto_retry_end",
    "agent: answered",
  ]);
  // The new model's retry starts at once, with a fresh count.
  assert.deepEqual(JSON.parse(lines[2]), {
    type: "auto_retry_start",
    attempt: 1,
    maxAttempts: 1,
    delayMs: 0,
    errorMessage: "529 overloaded_error: Overloaded",
  });
});
