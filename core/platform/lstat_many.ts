// lstat of thousands of paths on two threads. A code query that proves
// nothing changed in a 3,200-file project makes one lstat per file: on deno
// those system calls and permission checks are most of a warm answer
// (scripts/bench/README.md). Above PARALLEL_FROM paths, a helper thread takes chunks of the list
// from a shared counter while this thread does the same, both writing into a
// shared array and flagging each chunk done. This thread never waits: a chunk
// the helper has not finished (it is starting, or off the CPU of a busy
// machine) is done again here. Between batches the helper sleeps in
// Atomics.wait, and is woken with Atomics.notify. node:worker_threads on both
// runtimes: unlike a web Worker on deno, it can be told not to keep the
// process alive.
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
/** Fewer paths than this are done on this thread alone: waking the helper costs more. */
const PARALLEL_FROM = 1024;

/**
 * lstats the helper makes of one file as it starts (its runtime's executable: any file will do), so that its code is
 * compiled before its first batch: a new thread's first lstats are several times slower than its later ones, and it
 * did only a third of the first batches after a cold build (figures: scripts/bench/README.md).
 */
const WARM_UP_CALLS = 3000;

/**
 * The control block this thread and the helper share (Int32 slots). GENERATION is the batch this thread last started;
 * SERVED, the last one the helper finished (it touches a batch's arrays only in between); MAIL, messages posted and not
 * yet read. A batch on the list the helper holds, with the helper idle, is woken by Atomics.notify: a message event
 * took milliseconds to reach a helper that had not had one in a while, most of a batch.
 */
const GENERATION = 0;
const SERVED = 1;
const MAIL = 2;

/** lstats `paths` into an array of LSTAT_FIELDS numbers per path. */
export type LstatMany = (paths: readonly string[]) => Promise<Float64Array>;

/**
 * An LstatMany for a platform. `lstatIntoSource` is the JavaScript source of
 * `function lstatInto(path, out, at)`, which writes LSTAT_FIELDS numbers for
 * `path` at `out[at]` and never throws; it may use `require`. It runs on this
 * thread (with `require` given) and on the helper thread (with its own).
 * `helperStartsAside`: whether making the helper leaves this thread free (node's worker barely holds it, deno's holds
 * it tens of ms). Then any batch starts the helper, so that it is up and compiled by the first large one: a module
 * graph's first batch, at the start of a cold build, is empty; the next, a second later, has a path per file.
 * Otherwise the first large batch starts it, and a project too small to have one never pays for it.
 */
export function makeLstatMany(
  lstatIntoSource: string,
  require: ((specifier: string) => unknown) | undefined,
  helperStartsAside: boolean,
): LstatMany {
  // Compiled on first use: a server that never stats a batch does not pay for it at start-up.
  let lstatInto: LstatInto | undefined;
  let helper: Promise<Worker | undefined> | undefined;
  const control = new Int32Array(new SharedArrayBuffer(4 * 3));
  /** What the helper holds: the list (a warm check stats the same one each time) and that batch's arrays. */
  let held: { paths: readonly string[]; state: Int32Array; out: Float64Array } | undefined;
  const stopUsing = () => {
    helper = Promise.resolve(undefined);
    held = undefined;
  };
  const start = () =>
    helper ??= import("node:worker_threads").then(({ Worker }) => {
      const worker = new Worker(`const lstatInto = ${lstatIntoSource};\n${HELPER_LOOP}`, {
        eval: true,
        workerData: control.buffer,
      });
      worker.on("error", stopUsing);
      worker.on("exit", stopUsing);
      // It waits in Atomics.wait between batches, and never answers: nothing of it need keep the process alive.
      worker.unref();
      return worker;
    }).catch(() => undefined);

  return async (paths) => {
    lstatInto ??= new Function("require", `return ${lstatIntoSource}`)(require) as LstatInto;
    const large = paths.length >= PARALLEL_FROM;
    const starting = large || helperStartsAside ? start() : undefined;
    const worker = large ? await starting : undefined;
    const generation = Atomics.load(control, GENERATION);
    // A helper still on the last batch (off the CPU of a busy machine) is left to it: this one is done here alone.
    if (!worker || Atomics.load(control, SERVED) !== generation) {
      const out = new Float64Array(Math.max(1, paths.length) * LSTAT_FIELDS);
      for (let i = 0; i < paths.length; i++) lstatInto(paths[i], out, i * LSTAT_FIELDS);
      return out;
    }
    const chunks = Math.ceil(paths.length / CHUNK);
    let batch = held;
    if (batch && sameList(batch.paths, paths)) {
      // The helper is idle: its arrays are this thread's to clear.
      batch.state.fill(0);
    } else {
      // [0]: the next path to take; [1 + c]: 1 once chunk c is written.
      batch = held = {
        paths,
        state: new Int32Array(new SharedArrayBuffer(4 * (1 + chunks))),
        out: new Float64Array(new SharedArrayBuffer(paths.length * LSTAT_FIELDS * 8)),
      };
      Atomics.add(control, MAIL, 1);
      worker.postMessage({ state: batch.state.buffer, out: batch.out.buffer, paths });
    }
    Atomics.store(control, GENERATION, generation + 1);
    Atomics.notify(control, GENERATION);
    const { state, out } = batch;
    takeChunks(state, paths, out, lstatInto);
    // Never wait for the helper: a chunk it has not finished (it may be starting, or off the CPU on a busy machine) is
    // done again here, into this thread's own array, so that its late writes cannot mix in.
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

/** Whether two lists of paths are the same: one array (a caller checking a list again passes it again), or equal. */
function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a === b || a.length === b.length && a.every((path, i) => path === b[i]);
}

function takeChunks(state: Int32Array, paths: readonly string[], out: Float64Array, lstatInto: LstatInto): void {
  for (;;) {
    const start = Atomics.add(state, 0, CHUNK);
    if (start >= paths.length) return;
    const end = Math.min(start + CHUNK, paths.length);
    for (let i = start; i < end; i++) lstatInto(paths[i], out, i * LSTAT_FIELDS);
    Atomics.store(state, 1 + start / CHUNK, 1);
  }
}

/**
 * The helper's side. A message brings a new list and its arrays; then it serves each new generation with the same
 * loop as takeChunks, and waits for the next. It goes back to its event loop only when a message is waiting.
 */
const HELPER_LOOP = `
const { parentPort, workerData } = require("node:worker_threads");
const control = new Int32Array(workerData);
{
  const scratch = new Float64Array(${LSTAT_FIELDS});
  for (let i = 0; i < ${WARM_UP_CALLS}; i++) lstatInto(process.execPath, scratch, 0);
}
let paths = [];
let shared;
let results;
parentPort.on("message", ({ state, out, paths: list }) => {
  Atomics.sub(control, ${MAIL}, 1);
  paths = list;
  shared = new Int32Array(state);
  results = new Float64Array(out);
  for (;;) {
    // The generation first: a message for it was counted before it was set, so it is seen here if it is pending.
    const generation = Atomics.load(control, ${GENERATION});
    if (Atomics.load(control, ${MAIL}) > 0) return;
    if (generation !== Atomics.load(control, ${SERVED})) {
      for (;;) {
        const start = Atomics.add(shared, 0, ${CHUNK});
        if (start >= paths.length) break;
        const end = Math.min(start + ${CHUNK}, paths.length);
        for (let i = start; i < end; i++) lstatInto(paths[i], results, i * ${LSTAT_FIELDS});
        Atomics.store(shared, 1 + start / ${CHUNK}, 1);
      }
      Atomics.store(control, ${SERVED}, generation);
      continue;
    }
    Atomics.wait(control, ${GENERATION}, generation);
  }
});
`;
