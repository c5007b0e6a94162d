// A filter for "is this word one of these names?" that answers most words
// without making their string: the outline's watched namespaces, the words a
// module summary looks for, the scanner's keywords.

/**
 * Whether a word may be one of some names, from its first and last character and its length: a no is sure, a yes is
 * for the caller to check against the names. Its bitmap is borrowed from a pool and cleared when released (a bitmap
 * made per module waited for the collector and raised peak RSS: scripts/bench/README.md); one not released is only
 * lost.
 */
export class NameFilter {
  readonly #bits: Uint8Array;
  readonly #keys: number[] = [];

  constructor(names: Iterable<string>) {
    this.#bits = spareBitmaps.pop() ?? new Uint8Array(1 << 16);
    for (const name of names) {
      const key = wordKey(name, 0, name.length);
      this.#bits[key] = 1;
      this.#keys.push(key);
    }
  }

  /** Whether the word at `start` to `end` of `text` may be one of the names. */
  mayBe(text: string, start: number, end: number): boolean {
    return this.#bits[wordKey(text, start, end)] === 1;
  }

  release(): void {
    for (const key of this.#keys) this.#bits[key] = 0;
    spareBitmaps.push(this.#bits);
  }
}

/** NameFilter bitmaps not in use, all zeros. */
const spareBitmaps: Uint8Array[] = [];

/** A 16-bit key of the word at `start` to `end` in `text` (different words may share one). */
function wordKey(text: string, start: number, end: number): number {
  return ((text.charCodeAt(start) * 31 + text.charCodeAt(end - 1)) * 31 + end - start) & 0xffff;
}
