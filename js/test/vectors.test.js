// Every conformance vector (tests/vectors/*.jsonl, sections 1-9,
// tests/vectors/options/*.jsonl, the options of section 10,
// tests/vectors/beyond/*.jsonl, section 11 with its retry budgets,
// tests/vectors/stream/*.jsonl, section 12, and tests/vectors/response/*.jsonl,
// section 13 with a message's headers) through the wrapper: outputs,
// state, refusals, the events' key order and the budget's tokens after
// every step. The stream vectors run twice: through `handle` with their
// `nowMs`, and through `streamStart()`/`streamEvent()` with a clock that
// reads each step's `nowMs`.
//
// The modules: $AUTORETRY_WASM, else js/autoretry.wasm,
// js/autoretry-extended.wasm, js/autoretry-rules.wasm (with no rules loaded:
// it must behave as the others) and js/autoretry-curated.wasm
// (`sh js/build.sh`). The default module has the classic classifier only: a
// scenario whose settings ask for the extended classifier or the modern
// profile is refused there, with ERR_SETTINGS naming
// autoretry-extended.wasm, and the machine unchanged; only the curated
// module has the curated classifier, which the others refuse naming
// autoretry-curated.wasm.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { AutoretryError, Budget, ERR_ARG, ERR_REFUSED, ERR_SETTINGS, Machine, load, parseJson } from "../autoretry.js";

const wasms = process.env.AUTORETRY_WASM ? [process.env.AUTORETRY_WASM] : ["autoretry.wasm", "autoretry-extended.wasm", "autoretry-rules.wasm", "autoretry-curated.wasm"].map((f) => new URL(`../${f}`, import.meta.url).pathname);
for (const wasm of wasms) {
  if (!existsSync(wasm)) throw new Error(`no WebAssembly module at ${wasm}: run \`sh js/build.sh\` or set AUTORETRY_WASM`);
}

const root = new URL("../../tests/vectors/", import.meta.url);
const files = [root, new URL("options/", root), new URL("beyond/", root), new URL("stream/", root), new URL("response/", root)].flatMap((dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .map((f) => new URL(f, dir)),
);

// The vector lines, scenario by scenario.
function scenarios(file) {
  const out = [];
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, index) => {
      if (line === "") return;
      const obj = parseJson(line);
      const where = `${file.pathname.split("/tests/vectors/")[1]}:${index + 1}`;
      if (obj.scenario !== undefined) out.push({ header: obj, where, steps: [] });
      else out.at(-1).steps.push({ ...obj, where });
    });
  return out;
}

// The `nowMs` a clock can give a stream input: a u64 (the vectors' other
// values are bad input, which the clock methods never send).
function clockable(input) {
  if (input.type !== "stream_start" && input.type !== "stream_event") return undefined;
  const t = input.nowMs;
  if (typeof t === "bigint") return t >= 0n ? t : undefined;
  return Number.isSafeInteger(t) && t >= 0 ? BigInt(t) : undefined;
}

// The module that has the classifier a settings group asks for, when
// `module` lacks it (the modern profile's classifier is the extended one);
// else undefined.
function lacking(module, settings) {
  if (settings?.classifier === "curated") return module.hasCurated ? undefined : "autoretry-curated.wasm";
  const extended = settings?.profile === "modern" || settings?.classifier === "extended";
  return extended && !module.hasExtended ? "autoretry-extended.wasm" : undefined;
}

// The refusal of a module without the classifier: ERR_SETTINGS naming the
// module that has it.
function refusedNaming(f, other, where) {
  assert.throws(f, (e) => e instanceof AutoretryError && e.code === ERR_SETTINGS && e.message.includes(other), where);
}

for (const wasm of wasms) {
  const name = wasm.split("/").at(-1);
  const module = await load(readFileSync(wasm));
  let stepsRun = 0;
  let clockSteps = 0;
  let lackingRefusals = 0;

  const runs = files.flatMap((file) => [{ file, clock: false }, ...(file.pathname.includes("/stream/") ? [{ file, clock: true }] : [])]);
  for (const { file, clock } of runs) {
    for (const { header, where, steps } of scenarios(file)) {
      test(`${name} ${where} ${header.scenario}${clock ? " (clock)" : ""}`, () => {
        let now = 0n;
        const options = { settings: header.settings, host: header.host };
        const other = lacking(module, header.settings);
        if (other !== undefined) {
          refusedNaming(() => new Machine(module, options), other, where);
          lackingRefusals++;
          return;
        }
        const machine = new Machine(module, clock ? { ...options, clock: () => now } : options);
        const budget = header.budget === undefined ? undefined : new Budget(module, header.budget);
        try {
          const ids = []; // ids[n - 1]: the machine's id of the vectors' timer n
          for (const step of steps) {
            let input = step.in;
            if (input.type === "timer_fired") {
              // An ordinal never produced is fed as an id never issued.
              const id = ids[Number(input.timer) - 1] ?? 0xffffffffffffffffn;
              input = { ...input, timer: id };
            }
            const other = input.type === "settings" ? lacking(module, input.settings) : undefined;
            if (other !== undefined) {
              const before = machine.state();
              refusedNaming(() => machine.handle(input, budget), other, step.where);
              assert.deepEqual(machine.state(), before, `${step.where}: state`);
              lackingRefusals++;
              break;
            }
            let out = [];
            let refused = false;
            const stamped = clock ? clockable(input) : undefined;
            try {
              if (stamped !== undefined) {
                now = stamped;
                out = input.type === "stream_start" ? machine.streamStart() : machine.streamEvent();
                clockSteps++;
              } else out = machine.handle(input, budget);
            } catch (e) {
              if (!(e instanceof AutoretryError)) throw e;
              // Section 11's, 12's and 13's vectors refuse fields of the
              // wrong type too, which the wrapper's checks refuse (ERR_ARG).
              const typed = ["beyond/", "stream/", "response/"].some((dir) => step.where.startsWith(dir));
              const codes = input.type === "settings" ? [ERR_SETTINGS] : typed ? [ERR_REFUSED, ERR_ARG] : [ERR_REFUSED];
              assert.ok(codes.includes(e.code), `${step.where}: ${e.message}`);
              refused = true;
            }
            // One sequence of ordinals for `sleep` and `watch` (spec §12.4).
            const ordinals = out.map((o) => {
              if (o.type === "sleep" || o.type === "watch") ids.push(o.timer);
              if (o.type !== "sleep" && o.type !== "watch" && o.type !== "cancel_timer") return o;
              return { ...o, timer: ids.lastIndexOf(o.timer) + 1 };
            });
            assert.equal(refused, step.refused === true, `${step.where}: refused`);
            assert.deepEqual(ordinals, step.out, `${step.where}: outputs`);
            assert.deepEqual(machine.state(), step.state, `${step.where}: state`);
            assert.equal(budget?.tokens, step.budget, `${step.where}: budget`);
            // The key order of an event is part of the contract (spec §8).
            out.forEach((o, k) => {
              if (o.event) assert.deepEqual(Object.keys(o.event), Object.keys(step.out[k].event), `${step.where}: event key order`);
            });
            stepsRun++;
          }
        } finally {
          machine.free();
          budget?.free();
        }
      });
    }
  }

  test(`${name}: every vector step ran`, () => {
    assert.ok(files.length >= 87, `${files.length} vector files`);
    assert.ok(stepsRun >= 200, `${stepsRun} steps`);
    assert.ok(clockSteps >= 25, `${clockSteps} stream steps through the clock methods`);
    // The scenarios of the modern profile and the extended classifier, and
    // those of the curated one (tests/vectors/response/).
    if (module.hasCurated) assert.equal(lackingRefusals, 0);
    else if (module.hasExtended) assert.ok(lackingRefusals >= 7, `${lackingRefusals} scenarios refused by a module without the curated classifier`);
    else assert.ok(lackingRefusals >= 16, `${lackingRefusals} scenarios refused by the classic-only module`);
  });
}
