// The JavaScript reference: the spec's patterns as RegExp with the `i` flag
// (as the reference agent compiles them), timed on the same corpus and
// bodies as the Rust benches. Node 20, no packages.
//
//     cargo run -q --manifest-path benches/Cargo.toml --bin patterns > patterns.json
//     node benches/js/classify.mjs patterns.json > js.json
//
// The patterns come from the crate (`autoretry::classify::patterns`, printed
// as JSON by the `patterns` binary), so there is no second copy to drift.
//
// Prints one JSON object: per-text median ns for the corpus, median ns per
// body, the body sizes in UTF-8 bytes, and how often these RegExps disagree
// with the corpus labels (JavaScript's `.` is one UTF-16 code unit and its
// `\s` is Unicode white space; the spec pins both down otherwise).

import { readFileSync } from "node:fs";

const here = (p) => new URL(p, import.meta.url);
if (process.argv.length !== 3) {
  console.error("usage: node classify.mjs PATTERNS_JSON (from `cargo run --bin patterns`)");
  process.exit(2);
}
const patterns = JSON.parse(readFileSync(process.argv[2], "utf8"));
const corpus = readFileSync(here("../../tests/corpus/errors.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l));
const paragraph = readFileSync(here("../data/body.html"));
const lorem = readFileSync(here("../data/lorem.html"));
const dense = readFileSync(here("../data/dense.log"));
const TAIL = "\n503 Service Unavailable";

const RETRYABLE = new RegExp(patterns.retryable, "i");
const OVERFLOW = patterns.overflow.map((p) => new RegExp(p, "i"));
const USAGE_LIMIT = new RegExp(patterns.usageLimit, "i");

// The three labels as a bit set: 1 retryable, 2 overflow, 4 usage limit.
function labels(text) {
  const overflow = OVERFLOW.some((r) => r.test(text));
  const retryable = text !== "" && !overflow && RETRYABLE.test(text);
  return (retryable ? 1 : 0) | (overflow ? 2 : 0) | (USAGE_LIMIT.test(text) ? 4 : 0);
}

function retryable(text) {
  return RETRYABLE.test(text) ? 1 : 0;
}

// `text` (default: `paragraph`) repeated to `len` UTF-8 bytes, cut back to
// a character boundary (as benches/src/common.rs does).
function body(len, text = paragraph) {
  const buf = Buffer.concat(Array(Math.floor(len / text.length) + 1).fill(text));
  let cut = len;
  while (cut > 0 && (buf[cut] & 0xc0) === 0x80) cut--;
  return buf.subarray(0, cut).toString("utf8");
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

let sink = 0;

// Median ns per call over `samples` batches of at least `batchNs` each.
function measure(fn, arg, batchNs = 2e6, samples = 11) {
  let n = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink ^= fn(arg);
    if (Number(process.hrtime.bigint() - t0) >= batchNs) break;
    n *= 2;
  }
  const times = [];
  for (let s = 0; s < samples; s++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink ^= fn(arg);
    times.push(Number(process.hrtime.bigint() - t0) / n);
  }
  return median(times);
}

const want = (e) => (e.retryable ? 1 : 0) | (e.overflow ? 2 : 0) | (e.usageLimit ? 4 : 0);
const disagreements = corpus.filter((e) => labels(e.text) !== want(e)).length;

const bodies = {
  "2KB": body(2 << 10),
  "64KB": body(64 << 10),
  "1MB": body(1 << 20),
  "1MB_match_at_end": body((1 << 20) - Buffer.byteLength(TAIL)) + TAIL,
  "lorem_1MB": body(1 << 20, lorem),
  "dense_1MB": body(1 << 20, dense),
  "limits_1MB": body(1 << 20, Buffer.from("limit ")),
};
for (const [name, text] of Object.entries(bodies)) {
  const expected = name.endsWith("match_at_end") || name.startsWith("dense") ? 1 : 0;
  if (labels(text) !== expected) throw new Error(`body ${name}: labels ${labels(text)}`);
}

const out = {
  node: process.version,
  disagreements,
  corpus_labels: corpus.map((e) => measure(labels, e.text)),
  corpus_retryable: corpus.map((e) => measure(retryable, e.text)),
  body_labels: {},
  body_retryable: {},
  bytes: {},
};
for (const [name, text] of Object.entries(bodies)) {
  out.bytes[name] = Buffer.byteLength(text);
  out.body_labels[name] = measure(labels, text, 2e7);
  out.body_retryable[name] = measure(retryable, text, 2e7);
}
out.sink = sink;
console.log(JSON.stringify(out));
