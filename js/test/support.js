// What the wrapper's tests share (no tests of its own).

import assert from "node:assert/strict";
import { AutoretryError } from "../autoretry.js";

/** The AutoretryError `f` throws; fails when it throws none. */
export function thrown(f) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AutoretryError, `${e}`);
    return e;
  }
  assert.fail("no error");
}
