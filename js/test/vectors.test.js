// Every conformance vector (tests/vectors/*.jsonl, sections 1-9,
// tests/vectors/options/*.jsonl, the options of section 10, and
// tests/vectors/beyond/*.jsonl, section 11 with its retry budgets) through
// the wrapper: outputs, state, refusals, the events' key order and the
// budget's tokens after every step.
//
// The modules: $AUTORETRY_WASM, else both js/autoretry.wasm and
// js/autoretry-rules.wasm (`sh js/build.sh`), the latter with no rules
// loaded: it must behave as the former.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { AutoretryError, Budget, ERR_ARG, ERR_REFUSED, ERR_SETTINGS, Machine, load, parseJson } from "../autoretry.js";

const wasms = process.env.AUTORETRY_WASM ? [process.env.AUTORETRY_WASM] : ["autoretry.wasm", "autoretry-rules.wasm"].map((f) => new URL(`../${f}`, import.meta.url).pathname);
for (const wasm of wasms) {
  if (!existsSync(wasm)) throw new Error(`no WebAssembly module at ${wasm}: run \`sh js/build.sh\` or set AUTORETRY_WASM`);
}

const root = new URL("../../tests/vectors/", import.meta.url);
const files = [root, new URL("options/", root), new URL("beyond/", root)].flatMap((dir) =>
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

for (const wasm of wasms) {
  const name = wasm.split("/").at(-1);
  const module = await load(readFileSync(wasm));
  let stepsRun = 0;

  for (const file of files) {
    for (const { header, where, steps } of scenarios(file)) {
      test(`${name} ${where} ${header.scenario}`, () => {
        const machine = new Machine(module, { settings: header.settings, host: header.host });
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
            let out = [];
            let refused = false;
            try {
              out = machine.handle(input, budget);
            } catch (e) {
              if (!(e instanceof AutoretryError)) throw e;
              // Section 11's vectors refuse fields of the wrong type too,
              // which the wrapper's checks refuse (ERR_ARG).
              const codes = input.type === "settings" ? [ERR_SETTINGS] : step.where.startsWith("beyond/") ? [ERR_REFUSED, ERR_ARG] : [ERR_REFUSED];
              assert.ok(codes.includes(e.code), `${step.where}: ${e.message}`);
              refused = true;
            }
            const ordinals = out.map((o) => {
              if (o.type === "sleep") ids.push(o.timer);
              if (o.type !== "sleep" && o.type !== "cancel_timer") return o;
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
    assert.ok(files.length >= 56, `${files.length} vector files`);
    assert.ok(stepsRun >= 200, `${stepsRun} steps`);
  });
}
