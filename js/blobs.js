// Where the rules blobs that machines are lent (`Machine.loadRules`) live:
// in the module's memory, above everything the module had, in pages the
// memory grew by for them. The module searches a blob in place for as long
// as a machine holds it, so a blob some machine holds is never written.
//
// - Machines that load the same bytes share one copy.
// - Other bytes go into a place no machine holds any more (after
//   `clearRules`, `free`, or a later `loadRules` of those machines) that is
//   large enough, else into new pages: the memory grows by the blob's length
//   rounded up to 64 KiB. WebAssembly memory never shrinks, so the memory
//   holds at most the largest set of distinct blobs held at once.
//
// Every place starts on a page boundary, so a blob is aligned as a dense
// DFA needs (4 bytes).

const PAGE = 65536;

export class Blobs {
  /** @param {WebAssembly.Memory} memory */
  constructor(memory) {
    this.memory = memory;
    /** @type {{start: number, capacity: number, length: number, holders: Set<number>}[]} */
    this.places = [];
  }

  // Whether the place holds exactly `bytes`.
  #holds(place, bytes) {
    if (place.length !== bytes.length) return false;
    const there = new Uint8Array(this.memory.buffer, place.start, place.length);
    for (let i = 0; i < bytes.length; i++) if (there[i] !== bytes[i]) return false;
    return true;
  }

  /**
   * The place of `bytes` in the memory, written there if no machine holds
   * the same bytes already: `{start, length}` to lend, then `hold` it once
   * the module took it. A place nobody holds may be reused by the next call.
   * @param {Uint8Array} bytes
   */
  place(bytes) {
    // Nothing to write (the module refuses an empty blob).
    if (bytes.length === 0) return { start: 0, capacity: 0, length: 0, holders: new Set() };
    const shared = this.places.find((p) => p.holders.size > 0 && this.#holds(p, bytes));
    if (shared) return shared;
    let place = this.places
      .filter((p) => p.holders.size === 0 && p.capacity >= bytes.length)
      .sort((a, b) => a.capacity - b.capacity)[0];
    if (!place) {
      const pages = Math.ceil(bytes.length / PAGE);
      // The old length in pages: the new pages start there.
      const start = this.memory.grow(pages) * PAGE;
      place = { start, capacity: pages * PAGE, length: 0, holders: new Set() };
      this.places.push(place);
    }
    new Uint8Array(this.memory.buffer, place.start, bytes.length).set(bytes);
    place.length = bytes.length;
    return place;
  }

  /** Machine `handle` holds `place` (and no other). */
  hold(place, handle) {
    this.release(handle);
    place.holders.add(handle);
  }

  /** Machine `handle` holds no blob any more. */
  release(handle) {
    for (const p of this.places) p.holders.delete(handle);
  }
}
