// Where the rules blobs that machines are lent (`Machine.loadRules`) live:
// in the module's memory, in the area above everything the module had,
// which the memory grew by for them (the module itself never grows it). The
// module searches a blob in place for as long as a machine holds it, so a
// blob some machine holds is never written over.
//
// - Machines that load the same bytes share one copy.
// - The area holds the blobs machines hold, each at an 8-byte aligned
//   start (a dense DFA needs 4); the rest of it is free. A new blob goes
//   into the smallest free gap it fits. When none fits, the held blobs
//   move down together (each of their machines is lent its same bytes at
//   their new place), so that the free space is one gap at the end, and
//   the memory grows by what that gap lacks, in 64 KiB pages.
// - So the area is never larger than the blobs held at some load plus the
//   blob loaded then, rounded up to a page: WebAssembly memory never
//   shrinks, and holds at most the largest set of distinct blobs held at
//   once (with the one being loaded). A blob the module refuses is never
//   held: its bytes take no room once the call is over.
// - A memory that cannot grow (WebAssembly's 4 GiB, or the engine's
//   limit) throws ERR_BUFFER, and nothing changed.

import { ERR_BUFFER } from "./abi.js";
import { AutoretryError } from "./errors.js";

const PAGE = 65536;
const ALIGN = 8;
const aligned = (n) => Math.ceil(n / ALIGN) * ALIGN;

/** @typedef {{start: number, length: number, holders: Set<number>}} Place */

export class Blobs {
  /** @param {import("./abi.js").Abi} abi the module's exports */
  constructor(abi) {
    this.abi = abi;
    /** Where the area starts: the end of the memory the module had. */
    this.base = abi.memory.buffer.byteLength;
    /** The places of the blobs machines hold, by start. @type {Place[]} */
    this.places = [];
  }

  #bytes() {
    return new Uint8Array(this.abi.memory.buffer);
  }

  // Whether the place holds exactly `bytes`.
  #holds(place, bytes) {
    if (place.length !== bytes.length) return false;
    const there = this.#bytes().subarray(place.start, place.start + place.length);
    for (let i = 0; i < bytes.length; i++) if (there[i] !== bytes[i]) return false;
    return true;
  }

  // The free gaps of the area, as [start, size]: before, between and after
  // the held places.
  #gaps() {
    const gaps = [];
    let at = this.base;
    for (const p of this.places) {
      gaps.push([at, p.start - at]);
      at = aligned(p.start + p.length);
    }
    gaps.push([at, this.abi.memory.buffer.byteLength - at]);
    return gaps;
  }

  /**
   * The place of `bytes` in the memory, written there if no machine holds
   * the same bytes already: `{start, length}` to lend, then `hold` it once
   * the module took it. A place nobody holds is free again at the next call.
   * @param {Uint8Array} bytes
   * @returns {Place}
   */
  place(bytes) {
    // Nothing to write (the module refuses an empty blob).
    if (bytes.length === 0) return { start: 0, length: 0, holders: new Set() };
    const shared = this.places.find((p) => this.#holds(p, bytes));
    if (shared) return shared;
    const fits = this.#gaps().filter(([, size]) => size >= bytes.length);
    const start = fits.length > 0 ? fits.reduce((a, b) => (b[1] < a[1] ? b : a))[0] : this.#makeRoom(bytes.length);
    this.#bytes().set(bytes, start);
    return { start, length: bytes.length, holders: new Set() };
  }

  // Room for `length` bytes at the end of the area: the memory grows by
  // what the held blobs, packed, leave too little of (before anything
  // moves, so a failure changes nothing), then they move down. Returns
  // the room's start.
  #makeRoom(length) {
    let end = this.base;
    for (const p of this.places) end = aligned(end + p.length);
    const lack = end + length - this.abi.memory.buffer.byteLength;
    if (lack > 0) {
      const pages = Math.ceil(lack / PAGE);
      try {
        this.abi.memory.grow(pages);
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
        throw new AutoretryError(
          ERR_BUFFER,
          `the module's memory cannot grow by ${pages} pages of 64 KiB for a blob of ${length} bytes (WebAssembly memory ends at 4 GiB, or the engine's limit is lower): free machines or clear their rules to make room`,
        );
      }
    }
    const lost = [];
    let at = this.base;
    for (const p of this.places) {
      if (p.start !== at) {
        this.#bytes().copyWithin(at, p.start, p.start + p.length);
        p.start = at;
        for (const h of p.holders) if (!this.#relend(h, p)) lost.push(h);
      }
      at = aligned(at + p.length);
    }
    if (lost.length > 0) {
      for (const h of lost) this.release(h);
      throw new AutoretryError(ERR_BUFFER, `moving the rules blobs to make room, the module refused blobs it had taken: machines ${lost.join(", ")} lost their rules`);
    }
    return at;
  }

  // Lends machine `h` the blob it holds at its new place; whether the
  // module took it. The same bytes at the same alignment were valid at the
  // old place, so it does; were it ever to refuse, the machine's rules are
  // taken away rather than left on bytes that moved.
  #relend(h, place) {
    if (this.abi.rulesLoad(h, place.start, place.length) === 0) return true;
    this.abi.rulesClear(h);
    return false;
  }

  /** Machine `handle` holds `place` (and no other). */
  hold(place, handle) {
    this.release(handle);
    place.holders.add(handle);
    if (!this.places.includes(place)) {
      this.places.push(place);
      this.places.sort((a, b) => a.start - b.start);
    }
  }

  /** Machine `handle` holds no blob any more. */
  release(handle) {
    for (const p of this.places) p.holders.delete(handle);
    this.places = this.places.filter((p) => p.holders.size > 0);
  }
}
