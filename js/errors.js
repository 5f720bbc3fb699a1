// The one error type of the wrapper.

import { ERROR_NAMES } from "./abi.js";

/** An error of the module or of the wrapper's checks; nothing changed. */
export class AutoretryError extends Error {
  /**
   * @param {number} code one of the `ERR_*` codes
   * @param {string} message what was wrong
   */
  constructor(code, message) {
    super(message);
    this.name = "AutoretryError";
    /** The `ERR_*` code. */
    this.code = code;
  }

  /** The code's name, e.g. `"ERR_REFUSED"`. */
  get codeName() {
    return ERROR_NAMES[this.code] ?? `error ${this.code}`;
  }
}
