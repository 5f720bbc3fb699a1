// The labelled corpora of spec section 13 through the wrapper: every row of
// tests/corpus/curated/errors.jsonl through `module.classify(text,
// "curated")` on js/autoretry-curated.wasm (its four labels exactly, the
// hint included), and every case of tests/corpus/headers.jsonl through
// `module.readHeaders` on each module (`sh js/build.sh`). The classic and
// extended corpora run too, on a module that has their classifier.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { load, parseJson } from "../autoretry.js";

const corpus = new URL("../../tests/corpus/", import.meta.url);
const modules = ["autoretry.wasm", "autoretry-extended.wasm", "autoretry-rules.wasm", "autoretry-curated.wasm"];

// The rows of a JSON-lines file of the corpus, each with where it is.
function rows(file) {
  return readFileSync(new URL(file, corpus), "utf8")
    .split("\n")
    .map((line, index) => ({ line, where: `${file}:${index + 1}` }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, where }) => ({ row: parseJson(line), where }));
}

for (const [file, classifier, least] of [
  ["curated/errors.jsonl", "curated", 1003],
  ["extended/errors.jsonl", "extended", 195],
  ["errors.jsonl", "classic", 126],
]) {
  test(`autoretry-curated.wasm: every row of tests/corpus/${file} through classify(text, "${classifier}")`, async () => {
    const module = await load(new URL(`../autoretry-curated.wasm`, import.meta.url));
    const all = rows(file);
    assert.ok(all.length >= least, `${all.length} rows`);
    const failures = [];
    for (const { row, where } of all) {
      const want = { retryable: row.retryable, overflow: row.overflow, usageLimit: row.usageLimit, hintMs: row.hintMs };
      const got = module.classify(row.text, classifier);
      try {
        assert.deepEqual(got, want);
      } catch {
        failures.push(`${where}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
      }
    }
    assert.deepEqual(failures, []);
  });
}

for (const name of modules) {
  test(`${name}: every case of tests/corpus/headers.jsonl through readHeaders`, async () => {
    const module = await load(new URL(`../${name}`, import.meta.url));
    const cases = rows("headers.jsonl");
    assert.equal(cases.length, 43);
    for (const { row, where } of cases) {
      assert.deepEqual(module.readHeaders(row.headers, row.nowMs), { shouldRetry: row.shouldRetry, retryAfterMs: row.retryAfterMs }, where);
    }
  });
}
