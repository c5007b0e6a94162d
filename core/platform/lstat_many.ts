// lstat of thousands of paths on two threads. A code query that proves
// nothing changed in a 3,200-file project makes one lstat per file: on deno
// that is ~11 ms of system calls and permission checks, most of a warm
// answer. Above PARALLEL_FROM paths, a helper thread takes chunks of the list
// from a shared counter while this thread does the same, both writing into a
// shared array; a helper that is slow or busy elsewhere only leaves more
// chunks to this thread. node:worker_threads on both runtimes: unlike a web
// Worker on deno, it can be told not to keep the process alive.
import type { Worker } from "node:worker_threads";

/** What an lstat writes per path: a kind, the size, the mtime in ms. */
export const LSTAT_FIELDS = 3;
/** Kinds. 0 is "not done", so that paths a failed helper left undone are seen and done here. */
export const LSTAT_FILE = 1;
export const LSTAT_DIRECTORY = 2;
export const LSTAT_SYMLINK = 3;
export const LSTAT_OTHER = 4;
export const LSTAT_MISSING = 5;

/** Paths taken at once from the shared counter. */
const CHUNK = 64;
/** Fewer paths than this are done on this thread alone: a message to the helper and back costs more. */
export const PARALLEL_FROM = 1024;

/** lstats `paths` into an array of LSTAT_FIELDS numbers per path. */
export type LstatMany = (paths: readonly string[]) => Promise<Float64Array>;

/**
 * An LstatMany for a platform. `lstatIntoSource` is the JavaScript source of
 * `function lstatInto(path, out, at)`, which writes LSTAT_FIELDS numbers for
 * `path` at `out[at]` and never throws; it may use `require`. It runs on this
 * thread (with `require` given) and on the helper thread (with its own).
 */
export function makeLstatMany(
  lstatIntoSource: string,
  require: ((specifier: string) => unknown) | undefined,
): LstatMany {
  const lstatInto = new Function("require", `return ${lstatIntoSource}`)(require) as LstatInto;
  let helper: Promise<Worker | undefined> | undefined;
  /** The list the helper holds: a batch with the same one does not send it again (a warm check stats the same). */
  let sent: readonly string[] | undefined;
  const waiting = new Map<number, () => void>();
  let nextId = 0;
  const stopUsing = () => {
    helper = Promise.resolve(undefined);
    sent = undefined;
    for (const resolve of waiting.values()) resolve();
    waiting.clear();
  };
  const start = () =>
    helper ??= import("node:worker_threads").then(({ Worker }) => {
      const worker = new Worker(`const lstatInto = ${lstatIntoSource};\n${HELPER_LOOP}`, { eval: true });
      worker.on("message", (id: number) => {
        waiting.get(id)?.();
        waiting.delete(id);
        // Idle, the helper must not keep the process alive; busy, it must (or an awaited batch ends the process).
        if (waiting.size === 0) worker.unref();
      });
      worker.on("error", stopUsing);
      worker.on("exit", stopUsing);
      worker.unref(); // after the listeners: adding one refs the worker again
      return worker;
    }).catch(() => undefined);

  return async (paths) => {
    // [0]: the next path to take; [1]: how many paths are done.
    const counter = new Int32Array(new SharedArrayBuffer(8));
    const out = new Float64Array(new SharedArrayBuffer(Math.max(1, paths.length) * LSTAT_FIELDS * 8));
    const worker = paths.length >= PARALLEL_FROM ? await start() : undefined;
    let done: Promise<void> | undefined;
    if (worker) {
      const id = nextId++;
      const same = sent !== undefined && sent.length === paths.length && sent.every((path, i) => path === paths[i]);
      done = new Promise((resolve) => waiting.set(id, resolve));
      worker.ref();
      worker.postMessage({ id, counter: counter.buffer, out: out.buffer, paths: same ? undefined : paths });
      sent = paths;
    }
    takeChunks(counter, paths, out, lstatInto);
    // The helper's answer is awaited only while it is inside a chunk: one still starting (its first batch) or busy
    // elsewhere has taken none, and this thread need not wait for it to say so.
    if (done && Atomics.load(counter, 1) < paths.length) await done;
    for (let i = 0; i < paths.length; i++) if (out[i * LSTAT_FIELDS] === 0) lstatInto(paths[i], out, i * LSTAT_FIELDS);
    return out;
  };
}

type LstatInto = (path: string, out: Float64Array, at: number) => void;

function takeChunks(counter: Int32Array, paths: readonly string[], out: Float64Array, lstatInto: LstatInto): void {
  for (;;) {
    const start = Atomics.add(counter, 0, CHUNK);
    if (start >= paths.length) return;
    const end = Math.min(start + CHUNK, paths.length);
    for (let i = start; i < end; i++) lstatInto(paths[i], out, i * LSTAT_FIELDS);
    Atomics.add(counter, 1, end - start);
  }
}

/** The helper's side: the same loop as takeChunks, over the last list sent. */
const HELPER_LOOP = `
const { parentPort } = require("node:worker_threads");
let paths = [];
parentPort.on("message", ({ id, counter, out, paths: list }) => {
  if (list) paths = list;
  const shared = new Int32Array(counter);
  const results = new Float64Array(out);
  for (;;) {
    const start = Atomics.add(shared, 0, ${CHUNK});
    if (start >= paths.length) break;
    const end = Math.min(start + ${CHUNK}, paths.length);
    for (let i = start; i < end; i++) lstatInto(paths[i], results, i * ${LSTAT_FIELDS});
    Atomics.add(shared, 1, end - start);
  }
  parentPort.postMessage(id);
});
`;
