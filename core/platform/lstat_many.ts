// lstat of thousands of paths on two threads. A code query that proves
// nothing changed in a 3,200-file project makes one lstat per file: on deno
// that is ~11 ms of system calls and permission checks, most of a warm
// answer. Above PARALLEL_FROM paths, a helper thread takes chunks of the list
// from a shared counter while this thread does the same, both writing into a
// shared array and flagging each chunk done. This thread never waits: a chunk
// the helper has not finished (it is starting, or off the CPU of a busy
// machine) is done again here. node:worker_threads on both runtimes: unlike a
// web Worker on deno, it can be told not to keep the process alive.
import type { Worker } from "node:worker_threads";

/** What an lstat writes per path: a kind, the size, the mtime in ms. */
export const LSTAT_FIELDS = 3;
/** Kinds (0 is never written). */
export const LSTAT_FILE = 1;
export const LSTAT_DIRECTORY = 2;
export const LSTAT_SYMLINK = 3;
export const LSTAT_OTHER = 4;
export const LSTAT_MISSING = 5;

/** Paths taken at once from the shared counter. */
const CHUNK = 64;
/** Fewer paths than this are done on this thread alone: a message to the helper and back costs more. */
const PARALLEL_FROM = 1024;

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
  // Compiled on first use: a server that never stats a batch does not pay for it at start-up.
  let lstatInto: LstatInto | undefined;
  let helper: Promise<Worker | undefined> | undefined;
  /** The list the helper holds: a batch with the same one does not send it again (a warm check stats the same). */
  let sent: readonly string[] | undefined;
  /** Batches the helper has not answered: while there are any it keeps the process alive, else not. */
  let pending = 0;
  const stopUsing = () => {
    helper = Promise.resolve(undefined);
    sent = undefined;
  };
  const start = () =>
    helper ??= import("node:worker_threads").then(({ Worker }) => {
      const worker = new Worker(`const lstatInto = ${lstatIntoSource};\n${HELPER_LOOP}`, { eval: true });
      worker.on("message", () => {
        if (--pending === 0) worker.unref();
      });
      worker.on("error", stopUsing);
      worker.on("exit", stopUsing);
      worker.unref(); // after the listeners: adding one refs the worker again
      return worker;
    }).catch(() => undefined);

  return async (paths) => {
    lstatInto ??= new Function("require", `return ${lstatIntoSource}`)(require) as LstatInto;
    const chunks = Math.ceil(paths.length / CHUNK);
    // [0]: the next path to take; [1 + c]: 1 once chunk c is written.
    const state = new Int32Array(new SharedArrayBuffer(4 * (1 + chunks)));
    const out = new Float64Array(new SharedArrayBuffer(Math.max(1, paths.length) * LSTAT_FIELDS * 8));
    // Any batch starts the helper, so that it is up and compiled by the large ones: a module graph's first batch, at
    // the start of a cold build, is empty; the next, a second later, has a path per file.
    const starting = start();
    const worker = paths.length >= PARALLEL_FROM ? await starting : undefined;
    if (worker) {
      const same = sent !== undefined && sent.length === paths.length && sent.every((path, i) => path === paths[i]);
      if (pending++ === 0) worker.ref();
      worker.postMessage({ state: state.buffer, out: out.buffer, paths: same ? undefined : paths });
      sent = paths;
    }
    takeChunks(state, paths, out, lstatInto);
    if (!worker) return out;
    // Never wait for the helper: a chunk it has not finished (it may be starting, or off the CPU on a busy machine) is
    // done again here, into this thread's own copy of the results, so that its late writes cannot mix in.
    const results = new Float64Array(out.length);
    for (let c = 0; c < chunks; c++) {
      const from = c * CHUNK;
      const to = Math.min(from + CHUNK, paths.length);
      if (Atomics.load(state, 1 + c) === 1) {
        results.set(out.subarray(from * LSTAT_FIELDS, to * LSTAT_FIELDS), from * LSTAT_FIELDS);
      } else {
        for (let i = from; i < to; i++) lstatInto(paths[i], results, i * LSTAT_FIELDS);
      }
    }
    return results;
  };
}

type LstatInto = (path: string, out: Float64Array, at: number) => void;

function takeChunks(state: Int32Array, paths: readonly string[], out: Float64Array, lstatInto: LstatInto): void {
  for (;;) {
    const start = Atomics.add(state, 0, CHUNK);
    if (start >= paths.length) return;
    const end = Math.min(start + CHUNK, paths.length);
    for (let i = start; i < end; i++) lstatInto(paths[i], out, i * LSTAT_FIELDS);
    Atomics.store(state, 1 + start / CHUNK, 1);
  }
}

/** The helper's side: the same loop as takeChunks, over the last list sent. */
const HELPER_LOOP = `
const { parentPort } = require("node:worker_threads");
let paths = [];
parentPort.on("message", ({ state, out, paths: list }) => {
  if (list) paths = list;
  const shared = new Int32Array(state);
  const results = new Float64Array(out);
  for (;;) {
    const start = Atomics.add(shared, 0, ${CHUNK});
    if (start >= paths.length) break;
    const end = Math.min(start + ${CHUNK}, paths.length);
    for (let i = start; i < end; i++) lstatInto(paths[i], results, i * ${LSTAT_FIELDS});
    Atomics.store(shared, 1 + start / ${CHUNK}, 1);
  }
  parentPort.postMessage(0);
});
`;
