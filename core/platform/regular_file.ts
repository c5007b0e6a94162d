// What both adapters say about a path that is not a regular file, in one place:
// the name of its kind for messages, and the errors readTextFile throws.
import type { RegularFileRead } from "./types.ts";

/** Largest file `readTextFile` reads unless told otherwise: warden's own files (trust store, lock, ledger, catalog). */
export const DEFAULT_MAX_TEXT_FILE_BYTES = 256 * 1024 * 1024;

/** The type facts both runtimes' stat results carry. */
export interface KindFacts {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  readonly isFifo: boolean;
  readonly isSocket: boolean;
  readonly isCharDevice: boolean;
  readonly isBlockDevice: boolean;
}

/** "a FIFO", "a socket"…: what a path is, as a message names it. */
export function kindName(facts: KindFacts): string {
  if (facts.isFile) return "a regular file";
  if (facts.isDirectory) return "a directory";
  if (facts.isSymlink) return "a symlink";
  if (facts.isFifo) return "a FIFO";
  if (facts.isSocket) return "a socket";
  if (facts.isCharDevice) return "a character device";
  if (facts.isBlockDevice) return "a block device";
  return "an unknown kind of file";
}

/** The error readTextFile throws for a path that is `what` (see kindName). */
function notRegularFileError(what: string): Error {
  return Object.assign(new Error(`it is ${what}, not a regular file`), { code: "EFTYPE" });
}

/** The error readTextFile throws for a file over its cap. */
function tooLargeError(size: number, maxBytes: number): Error {
  return Object.assign(new Error(`it has ${size} bytes, more than the ${maxBytes} warden reads`), { code: "EFBIG" });
}

// Keeps a byte order mark, as node's readFile(…, "utf8") did.
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * readTextFile's answer from a read under readRegularFile's rules: the text, or the error that says what was found.
 * `symlinkMeans` is what a "symlink" outcome means to that adapter, which followed links to read.
 */
export function textOrThrow(read: RegularFileRead, maxBytes: number, symlinkMeans: string): string {
  switch (read.kind) {
    case "ok":
      return utf8.decode(read.bytes);
    case "too_large":
      throw tooLargeError(read.size, maxBytes);
    case "not_a_file":
      throw notRegularFileError(read.what);
    case "symlink":
      throw notRegularFileError(symlinkMeans);
  }
}
