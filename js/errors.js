// The one error type of the wrapper.

import { ERROR_NAMES } from "./abi.js";

/** An error of the module or of the wrapper's checks; nothing changed. */
export class AutoretryError extends Error {
  /**
   * @param {number} code one of the `ERR_*` codes
   * @param {string} message what was wrong
   * @param {string} [reason] why an input was refused (ERR_REFUSED)
   */
  constructor(code, message, reason = undefined) {
    super(message);
    this.name = "AutoretryError";
    /** The `ERR_*` code. */
    this.code = code;
    /**
     * Why the machine refused an input (ERR_REFUSED, spec §6a), named as
     * the crate's `Refused` variants: `"AgentRunDuringBackoff"` or
     * `"AwaitingUsageLimitAnswer"`; undefined for other errors.
     */
    this.reason = reason;
  }

  /** The code's name, e.g. `"ERR_REFUSED"`. */
  get codeName() {
    return ERROR_NAMES[this.code] ?? `error ${this.code}`;
  }
}
