// Loads a CommonJS file of one of warden's dependencies, for the code tools
// (TypeScript's compiler): under node with V8's code cache kept between runs,
// under deno as deno's own require does it (deno keeps its own code cache).
//
// Support code, not a tool: it imports the node builtins it needs by name, as
// test/architecture.test.ts lists them with why, and only typescript.ts, which
// names the one file loaded, imports it. It reads and writes only its cache,
// node_modules/.cache/warden/; under the runtime's own confinement (deno's
// permissions, node's permission model) it has no door a tool lacks.
import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import Module, { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { setImmediate } from "node:timers";
import { Script } from "node:vm";

/** deno runs this file from source with its node layer: require as deno does it, and no cache of ours. */
const onDeno = "deno" in process.versions;

/**
 * Loads `specifier`, resolved from the directory of the package `via` (so the copy that package depends on,
 * wherever npm placed it).
 */
export function requireDependency(via: string, specifier: string): unknown {
  const fromHere = createRequire(import.meta.url);
  const fromVia = createRequire(fromHere.resolve(via));
  return onDeno ? fromVia(specifier) : requireWithCodeCache(fromVia.resolve(specifier));
}

/** Scripts whose code cache was written (or read) before their functions ran: kept again once they have. */
const coldCaches: { script: Script; cacheFile: string; replaces: string }[] = [];

/**
 * Says that the dependencies loaded have done real work: their code cache is written again, with the functions that
 * work compiled (written at load, it held only those that ran then). Once per dependency, and after the current
 * call has answered.
 */
export function dependenciesWarm(): void {
  if (coldCaches.length === 0) return;
  // After the answer being computed now is written: serializing a compiler's code takes tens of ms.
  setImmediate(() => {
    for (const { script, cacheFile, replaces } of coldCaches.splice(0)) {
      writeCodeCache(cacheFile, script.createCachedData(), replaces);
    }
  });
}

/**
 * Runs a CommonJS file as require would, with V8's code cache kept in
 * node_modules/.cache/warden/ (node 22's module.enableCompileCache does this;
 * node 20 has none). The cache is keyed by the file's path, size and mtime and
 * node's version; V8 rejects data that does not fit and the file is compiled
 * afresh. A cache that cannot be written (a read-only install, node's
 * permission model) is only slower. Written at load, the cache holds the
 * functions that ran then; V8 compiles the others (most of a compiler) on
 * first call. dependenciesWarm() writes it again as `.warm.v8` once they have
 * run, and later runs load that one (scripts/bench/README.md has the gains).
 */
function requireWithCodeCache(file: string): unknown {
  const at = file.lastIndexOf(`${path.sep}node_modules${path.sep}`);
  if (at < 0) return createRequire(file)(file);
  const nodeModules = file.slice(0, at + "/node_modules".length);
  const info = statSync(file);
  const key = createHash("sha256").update(`${file}\0${info.size}\0${info.mtimeMs}\0${process.version}`)
    .digest("hex").slice(0, 16);
  const cacheFile = path.join(nodeModules, ".cache", "warden", `${path.basename(file)}-${key}.v8`);
  const warmFile = cacheFile.replace(/\.v8$/, ".warm.v8");
  let cachedData: Buffer | undefined;
  let warm = true;
  for (const candidate of [warmFile, cacheFile]) {
    cachedData = readCacheFile(candidate);
    if (cachedData) break;
    warm = false; // not cached yet
  }
  const script = new Script(Module.wrap(readSource(file)), { filename: file, cachedData });
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (...args: unknown[]) => void).call(
    module.exports,
    module.exports,
    createRequire(file),
    module,
    file,
    path.dirname(file),
  );
  if (cachedData === undefined || script.cachedDataRejected) writeCodeCache(cacheFile, script.createCachedData());
  if (!warm || script.cachedDataRejected) coldCaches.push({ script, cacheFile: warmFile, replaces: cacheFile });
  return module.exports;
}

/**
 * A cache file's bytes, or undefined. As any read of the host's: only a regular file, looked at before it is opened
 * (opening a FIFO or a device may hang or act), and opened without waiting or following a link.
 */
function readCacheFile(file: string): Buffer | undefined {
  try {
    if (!lstatSync(file).isFile()) return undefined;
    const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
    try {
      return fstatSync(fd).isFile() ? readFileSync(fd) : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** A module's text. TypeScript's 9 MB are ASCII: read as Latin-1, they make the same string with less work. */
function readSource(file: string): string {
  const bytes = readFileSync(file);
  return isAscii(bytes) ? bytes.toString("latin1") : bytes.toString("utf8");
}

/**
 * Writes a code cache file whole (a temporary file renamed), then removes `replaces` if given; a failure only costs
 * speed. Synchronous: a few ms once per install, and a server closed right after its answer still keeps it.
 */
function writeCodeCache(cacheFile: string, data: Buffer, replaces?: string): void {
  const temporary = `${cacheFile}.${process.pid}.tmp`;
  try {
    mkdirSync(path.dirname(cacheFile), { recursive: true });
    writeFileSync(temporary, data);
    renameSync(temporary, cacheFile);
    if (replaces) rmSync(replaces, { force: true }); // never read again once this one is there
  } catch {
    rmSync(temporary, { force: true });
  }
}
