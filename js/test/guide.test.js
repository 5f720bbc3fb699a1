// The `js` blocks of docs/guide/javascript.md and js/README.md, each run as
// an ES module against this wrapper (`from "autoretry"` resolved to
// ../autoretry.js), from the repository's root, so that what they show
// works as shown.
//
// The modules: js/autoretry.wasm, js/autoretry-extended.wasm,
// js/autoretry-rules.wasm and js/autoretry-curated.wasm (`sh js/build.sh`).

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const wrapper = pathToFileURL(join(root, "js", "autoretry.js")).href;
const blocksOf = (file) =>
  [...readFileSync(join(root, file), "utf8").matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
const docs = ["docs/guide/javascript.md", "js/README.md"];

for (const doc of docs) {
  test(`${doc} has js blocks`, () => {
    assert.ok(blocksOf(doc).length >= 2, `${blocksOf(doc).length} js blocks`);
  });
}

process.chdir(root);
const dir = mkdtempSync(join(tmpdir(), "autoretry-guide-"));
after(() => rmSync(dir, { recursive: true, force: true }));

docs.forEach((doc, d) => blocksOf(doc).forEach((code, i) => {
  test(`${doc}, js block ${i + 1}`, async () => {
    const source = code.replaceAll('from "autoretry"', `from ${JSON.stringify(wrapper)}`);
    assert.notEqual(source, code, "the block imports the package");
    const file = join(dir, `doc-${d}-block-${i + 1}.mjs`);
    writeFileSync(file, source);
    await import(pathToFileURL(file).href);
  });
}));
