// Runs the labelled corpora of spec section 13 (and the older ones) through
// a WebAssembly module's C ABI, the way a host with no allocator would:
//
//     node ffi/wasm/run-corpus.mjs WASM_FILE [--classifier NAME ERRORS_FILE...]... [--headers HEADERS_FILE...]
//
// e.g. `--classifier curated tests/corpus/curated/errors.jsonl --headers
// tests/corpus/headers.jsonl` on `autoretry-curated.wasm`.
//
// `--classifier NAME` (classic, extended or curated) puts every row of the
// files after it (`{"text":..., "retryable":..., "overflow":...,
// "usageLimit":..., "hintMs":...}`) through `autoretry_classify` with that
// classifier: its four labels must be the row's exactly. A module without
// the classifier refuses it (ERR_SETTINGS), and that is a failure here:
// pick the module that has it. `--headers` puts every case of the files
// after it (`{"headers":[[name, value], ...], "nowMs":..., "shouldRetry":...,
// "retryAfterMs":...}`) through `autoretry_read_headers`.
//
// Texts, header structs and their bytes go through the module's text
// buffer, answers come back in its output buffer. Exits 0 only when every
// row and case matches. Node 20, no packages.

import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseJson } from "../../js/json.js";

const CLASSIFIER = { classic: 0, extended: 1, curated: 2 };
const SHOULD_RETRY = { 0: null, 1: false, 2: true };
// The wasm32 size of `autoretry_header`: two pointers, two u32 lengths.
const HEADER_SIZE = 16;

const args = process.argv.slice(2);
const [wasmFile, ...rest] = args;
const runs = [];
for (const arg of rest) {
  if (arg === "--headers") runs.push({ kind: "headers", files: [] });
  else if (arg === "--classifier") runs.push({ kind: "classifier", name: null, files: [] });
  else if (runs.length > 0 && runs.at(-1).kind === "classifier" && runs.at(-1).name === null) runs.at(-1).name = arg;
  else if (runs.length > 0) runs.at(-1).files.push(arg);
  else runs.push({ kind: "bad", files: [arg] });
}
const usable = (r) => r.kind !== "bad" && r.files.length > 0 && (r.kind === "headers" || Object.hasOwn(CLASSIFIER, r.name));
if (!wasmFile || runs.length === 0 || !runs.every(usable)) {
  console.error("usage: node run-corpus.mjs WASM_FILE [--classifier classic|extended|curated ERRORS_FILE...]... [--headers HEADERS_FILE...]");
  process.exit(2);
}

const module = new WebAssembly.Module(readFileSync(wasmFile));
const { exports: x } = await WebAssembly.instantiate(module, {});
const textPtr = x.autoretry_text_buffer();
const maxText = x.autoretry_max_text();
const outPtr = x.autoretry_out_buffer();
const encoder = new TextEncoder();

// The rows of a JSON-lines file, each with its line number.
function rows(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line, i) => ({ line: i + 1, text: line }))
    .filter((r) => r.text.trim() !== "")
    .map((r) => ({ where: `${file}:${r.line}`, row: parseJson(r.text) }));
}

// An integer of the corpus (a number or, past 2^53, a BigInt), or null.
const big = (v) => (v === null ? null : BigInt(v));

// `autoretry_classify` on one text: its labels as the corpus writes them.
function classify(code, text) {
  const bytes = encoder.encode(text);
  if (bytes.length > maxText) throw new Error(`a text longer than ${maxText} bytes`);
  new Uint8Array(x.memory.buffer, textPtr, bytes.length).set(bytes);
  const n = x.autoretry_classify(code, textPtr, bytes.length, outPtr);
  if (n !== 0) return { error: n };
  const view = new DataView(x.memory.buffer);
  const bit = (at) => {
    const v = view.getUint32(outPtr + at, true);
    if (v > 1) throw new Error(`autoretry_classify wrote ${v} for a flag`);
    return v === 1;
  };
  return {
    retryable: bit(0),
    overflow: bit(4),
    usageLimit: bit(8),
    hintMs: bit(12) ? view.getBigUint64(outPtr + 16, true) : null,
  };
}

// `autoretry_read_headers` on one case: the header structs, then their
// names' and values' bytes, in the text buffer; the answer in the output
// buffer.
function readHeaders(pairs, nowMs) {
  const view = new DataView(x.memory.buffer);
  let bytesAt = textPtr + pairs.length * HEADER_SIZE;
  const put = (s) => {
    const bytes = encoder.encode(s);
    if (bytesAt + bytes.length > textPtr + maxText) throw new Error(`headers longer than ${maxText} bytes`);
    new Uint8Array(x.memory.buffer, bytesAt, bytes.length).set(bytes);
    const at = bytesAt;
    bytesAt += bytes.length;
    return [at, bytes.length];
  };
  pairs.forEach(([name, value], k) => {
    const at = textPtr + k * HEADER_SIZE;
    const [n, nLen] = put(name);
    const [v, vLen] = put(value);
    view.setUint32(at, n, true);
    view.setUint32(at + 4, nLen, true);
    view.setUint32(at + 8, v, true);
    view.setUint32(at + 12, vLen, true);
  });
  const now = nowMs === null ? [0, 0n] : [1, nowMs];
  const n = x.autoretry_read_headers(pairs.length === 0 ? 0 : textPtr, pairs.length, ...now, outPtr);
  if (n !== 0) return { error: n };
  const code = view.getInt32(outPtr, true);
  if (!Object.hasOwn(SHOULD_RETRY, code)) throw new Error(`autoretry_read_headers wrote shouldRetry code ${code}`);
  return {
    shouldRetry: SHOULD_RETRY[code],
    retryAfterMs: view.getUint32(outPtr + 4, true) === 1 ? view.getBigUint64(outPtr + 8, true) : null,
  };
}

const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));
const failures = [];
const summary = [];
for (const run of runs) {
  // No text at all: 0 when the module has the classifier.
  if (run.kind === "classifier" && x.autoretry_classify(CLASSIFIER[run.name], 0, -1, outPtr) !== 0) {
    failures.push(`${basename(wasmFile)} has no ${run.name} classifier (ERR_SETTINGS): ${run.files.join(", ")} not run`);
    continue;
  }
  for (const file of run.files) {
    let total = 0;
    let passed = 0;
    for (const { where, row } of rows(file)) {
      total++;
      let got;
      let want;
      if (run.kind === "headers") {
        got = readHeaders(row.headers, big(row.nowMs));
        want = { shouldRetry: row.shouldRetry, retryAfterMs: big(row.retryAfterMs) };
      } else {
        got = classify(CLASSIFIER[run.name], row.text);
        want = { retryable: row.retryable, overflow: row.overflow, usageLimit: row.usageLimit, hintMs: big(row.hintMs) };
      }
      if (show(got) === show(want)) passed++;
      else failures.push(`${where}: got ${show(got)}, want ${show(want)}`);
    }
    const how = run.kind === "headers" ? "autoretry_read_headers" : `autoretry_classify (${run.name})`;
    summary.push(`${file} ${passed}/${total} through ${how}`);
    if (total === 0) failures.push(`${file}: no rows`);
  }
}
for (const f of failures.slice(0, 50)) console.error(`FAIL ${f}`);
if (failures.length > 50) console.error(`... and ${failures.length - 50} more`);
console.log(`autoretry on wasm32 (${basename(wasmFile)}): ${summary.join("; ")}`);
process.exit(failures.length === 0 ? 0 : 1);
