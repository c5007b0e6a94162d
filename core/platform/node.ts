// The node adapter of Platform.
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { link, lstat, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { LSTAT_DIRECTORY, LSTAT_FILE, LSTAT_MISSING, LSTAT_OTHER, LSTAT_SYMLINK, makeLstatMany } from "./lstat_many.ts";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { problem, WardenError } from "../errors.ts";
import { cpuMsOfStat, procStatFile } from "./proc_stat.ts";
import { DEFAULT_MAX_TEXT_FILE_BYTES, kindName, textOrThrow } from "./regular_file.ts";
import type {
  ChildProcessHandle,
  FileStat,
  Platform,
  PlatformDirEntry,
  ProcessExit,
  RegularFileRead,
  SpawnOptions,
} from "./types.ts";
import { DENO_MISSING_FIX } from "./types.ts";
import type { HttpListener, HttpListenOptions } from "./types.ts";

// Loaded on first use, not at startup: node:child_process for the first program or plugin child, node:dns/promises
// for the first fetch. A server that runs neither never pays for them (scripts/bench/README.md).
const load = createRequire(import.meta.url);
let childProcess: typeof import("node:child_process") | undefined;
const children = () => childProcess ??= load("node:child_process") as typeof import("node:child_process");
const dns = () => load("node:dns/promises") as typeof import("node:dns/promises");

function toStat(info: import("node:fs").Stats): FileStat {
  return {
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: info.isSymbolicLink(),
    size: info.size,
    mtimeMs: info.mtimeMs,
  };
}

// Synchronous on purpose: each async fs call hands work to libuv's thread pool and back, and a file read took four
// (open, fstat, read, close). Profiled on a 3,200-file build, those hand-offs cost the main thread more than the
// reads, each ten times the same call made synchronously. Synchronous is safe only because
// nothing here can block: O_NONBLOCK makes opening a FIFO return at once, and the type is checked on the handle.
// O_NOCTTY: a terminal device opened by a session leader would otherwise become its controlling terminal.
const NO_WAIT = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);
const NO_WAIT_NO_FOLLOW = NO_WAIT | (constants.O_NOFOLLOW ?? 0);

function kindOf(info: import("node:fs").Stats): string {
  return kindName({
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: info.isSymbolicLink(),
    isFifo: info.isFIFO(),
    isSocket: info.isSocket(),
    isCharDevice: info.isCharacterDevice(),
    isBlockDevice: info.isBlockDevice(),
  });
}

/** Reads a regular file of at most `maxBytes`, up to the size it has when opened; `follow`: through a symlink. */
function readRegularFile(file: string, maxBytes: number, follow = false): RegularFileRead {
  // Looked at before opening too: opening a device can act on its own (a tape rewinds, a watchdog starts).
  const before = follow ? statSync(file) : lstatSync(file);
  if (before.isSymbolicLink()) return { kind: "symlink" };
  if (!before.isFile()) return { kind: "not_a_file", what: kindOf(before) };
  let fd: number;
  try {
    fd = openSync(file, follow ? NO_WAIT : NO_WAIT_NO_FOLLOW);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Swapped since the look: ELOOP is a symlink (O_NOFOLLOW), ENXIO a socket.
    if (code === "ELOOP") return { kind: "symlink" };
    if (code === "ENXIO") return { kind: "not_a_file", what: "a socket" };
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { kind: "not_a_file", what: kindOf(info) };
    if (info.size > maxBytes) return { kind: "too_large", size: info.size };
    const bytes = new Uint8Array(info.size);
    let offset = 0;
    while (offset < bytes.length) {
      const bytesRead = readSync(fd, bytes, offset, bytes.length - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return { kind: "ok", bytes: offset === bytes.length ? bytes : bytes.subarray(0, offset) };
  } finally {
    closeSync(fd);
  }
}

/** readTextFile: a file of the host's own, through a symlink, under the same rules as readRegularFile. */
function readTextFile(file: string, maxBytes: number): string {
  return textOrThrow(readRegularFile(file, maxBytes, true), maxBytes, "a symlink");
}

function readRange(file: string, offset: number, length: number): { size: number; bytes: Uint8Array } {
  // Non-blocking and not following links: a FIFO or a symlink put among ledger files must not stall or mislead.
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: "EFTYPE" });
    const start = offset < 0 ? Math.max(0, info.size + offset) : Math.min(offset, info.size);
    const bytes = new Uint8Array(Math.min(length, info.size - start));
    let at = 0;
    while (at < bytes.length) {
      const bytesRead = readSync(fd, bytes, at, bytes.length - at, start + at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return { size: info.size, bytes: at === bytes.length ? bytes : bytes.subarray(0, at) };
  } finally {
    closeSync(fd);
  }
}

/** Kills of the children still running, called when this process exits. */
const liveChildren = new Set<() => void>();
let exitHookInstalled = false;

function killChildrenOnExit(kill: () => void): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const killOne of liveChildren) killOne();
    });
  }
  liveChildren.add(kill);
}

/** Streams of a spawned child are sockets; their ref/unref is not in the stream types. */
function setRef(stream: unknown, on: boolean): void {
  const socket = stream as { ref?: () => void; unref?: () => void };
  if (on) socket.ref?.();
  else socket.unref?.();
}

function handleOf(child: ChildProcessWithoutNullStreams, options: SpawnOptions): ChildProcessHandle {
  const pid = child.pid as number;
  const group = options.newProcessGroup && process.platform !== "win32";
  let gone = false;
  let stdinOpen = true;
  const signal = (name: "SIGTERM" | "SIGKILL" | "SIGSTOP" | "SIGCONT") => {
    try {
      process.kill(group ? -pid : pid, name);
    } catch {
      // Already gone.
    }
  };
  const killNow = () => {
    if (!gone) signal("SIGKILL");
  };
  killChildrenOnExit(killNow);
  child.stdout.on("data", options.onStdout);
  child.stderr.on("data", options.onStderr);
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once("exit", (code, signalName) => {
      gone = true;
      liveChildren.delete(killNow);
      // Whatever the child left in its group goes with it.
      if (group) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // Nothing left.
        }
      }
      resolve({ code: signalName ? null : code, signal: signalName });
    });
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    pid,
    write(data: string | Uint8Array) {
      if (stdinOpen && !gone) child.stdin.write(data);
    },
    end() {
      if (stdinOpen) {
        stdinOpen = false;
        child.stdin.end();
      }
    },
    kill(name: "SIGTERM" | "SIGKILL" | "SIGSTOP" | "SIGCONT") {
      if (!gone) signal(name);
    },
    exited,
    closed,
    ref() {
      child.ref();
      for (const stream of [child.stdin, child.stdout, child.stderr]) setRef(stream, true);
    },
    unref() {
      child.unref();
      for (const stream of [child.stdin, child.stdout, child.stderr]) setRef(stream, false);
    },
  };
}

function spawnProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions,
): Promise<ChildProcessHandle> {
  return new Promise((resolve, reject) => {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = children().spawn(command, [...args], {
        env: { ...options.env },
        cwd: options.cwd,
        detached: options.newProcessGroup,
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
      });
    } catch (error) {
      reject(error);
      return;
    }
    // A write to a child that has gone is not this process's failure.
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream.on("error", () => {});
    const failed = (error: Error) => reject(error);
    child.once("error", failed);
    child.once("spawn", () => {
      child.off("error", failed);
      child.on("error", () => {});
      resolve(handleOf(child, options));
    });
  });
}

let denoBinary: string | undefined;

/** The `deno` npm package's binary: its platform package first, then what its install put in place. */
function denoExecutable(): string {
  if (denoBinary) return denoBinary;
  const require = createRequire(import.meta.url);
  const exe = process.platform === "win32" ? "deno.exe" : "deno";
  const target = process.platform === "linux" ? `linux-${process.arch}-glibc` : `${process.platform}-${process.arch}`;
  const candidates: string[] = [];
  const packageDir = (name: string, from?: string) => {
    try {
      return path.dirname(require.resolve(`${name}/package.json`, from ? { paths: [from] } : undefined));
    } catch {
      return undefined;
    }
  };
  const denoDir = packageDir("deno");
  const platformDir = (denoDir && packageDir(`@deno/${target}`, denoDir)) ?? packageDir(`@deno/${target}`);
  if (platformDir) candidates.push(path.join(platformDir, exe));
  if (denoDir) candidates.push(path.join(denoDir, exe));
  for (const dir of require.resolve.paths("deno") ?? []) candidates.push(path.join(dir, ".bin", exe));
  // A deno installed on its own: where warden was installed without its optional deno (npm --omit=optional, or a
  // platform npm has no deno build for).
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (path.isAbsolute(dir)) candidates.push(path.join(dir, exe));
  }
  const found = candidates.find((file) => existsSync(file));
  if (!found) {
    throw new WardenError(
      "plugin_failed",
      problem(
        "Deno not found",
        `plugins run under deno, and neither the deno npm package (@deno/${target}) nor a deno in PATH is installed`,
        DENO_MISSING_FIX,
      ),
    );
  }
  denoBinary = found;
  return found;
}

/** Set once node's permission model has refused /proc: processCpuMs then goes to its reader at once. */
let procRefused = false;

/** Platform for node, on node's own modules. */
export function nodePlatform(): Platform {
  return Object.freeze({
    runtime: Object.freeze({ name: "node" as const, version: process.versions.node, execPath: process.execPath }),
    args: Object.freeze(process.argv.slice(2)),
    pathDelimiter: path.delimiter,
    os: process.platform === "win32" ? "windows" : process.platform,
    env: (name: string) => process.env[name],
    cwd: () => process.cwd(),
    pid: () => process.pid,
    writeStdout: (text: string) => void process.stdout.write(text),
    writeStderr: (text: string) => void process.stderr.write(text),
    // Writes complete in order: the callback of an empty one runs once those before it are out (or failed).
    flushStdout: () => new Promise<void>((resolve) => void process.stdout.write("", () => resolve())),
    readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void) {
      let ended = false;
      const end = () => {
        if (!ended) {
          ended = true;
          onEnd();
        }
      };
      process.stdin.on("data", onChunk);
      process.stdin.on("end", end);
      process.stdin.on("error", end);
      process.stdout.on("error", end);
    },
    processRunning(pid: number) {
      try {
        process.kill(pid, 0);
        return Promise.resolve(true);
      } catch (error) {
        return Promise.resolve((error as { code?: string }).code === "EPERM");
      }
    },
    onInterrupt(handler: () => void) {
      process.on("SIGINT", handler);
      return () => void process.off("SIGINT", handler);
    },
    onTerminate(handler: () => void) {
      process.on("SIGTERM", handler);
      return () => void process.off("SIGTERM", handler);
    },
    listenHttp: (options: HttpListenOptions) => listenHttp(options),
    exit(code: number): never {
      process.exit(code);
    },
    setExitCode(code: number) {
      process.exitCode = code;
    },
    fromFileUrl: (url: URL) => fileURLToPath(url),
    fs: Object.freeze({
      // Synchronous for the reason given at readRegularFile; a promise still, as callers expect.
      realPath: (p: string) => new Promise<string>((resolve) => resolve(realpathSync.native(p))),
      readRange: (p: string, offset: number, length: number) =>
        new Promise<{ size: number; bytes: Uint8Array }>((resolve) => resolve(readRange(p, offset, length))),
      stat: async (p: string) => toStat(await stat(p)),
      lstat: async (p: string) => toStat(await lstat(p)),
      lstatMany: makeLstatMany(
        `(() => {
          const { lstatSync } = require("node:fs");
          return function lstatInto(path, out, at) {
            let info;
            try {
              info = lstatSync(path, { throwIfNoEntry: false });
            } catch {
              info = undefined;
            }
            if (!info) {
              out[at] = ${LSTAT_MISSING};
              return;
            }
            out[at] = info.isSymbolicLink() ? ${LSTAT_SYMLINK} : info.isFile() ? ${LSTAT_FILE}
              : info.isDirectory() ? ${LSTAT_DIRECTORY} : ${LSTAT_OTHER};
            out[at + 1] = info.size;
            out[at + 2] = info.mtimeMs;
          };
        })()`,
        createRequire(import.meta.url),
        true,
      ),
      lstatSync(p: string) {
        try {
          const info = lstatSync(p, { throwIfNoEntry: false });
          return info ? toStat(info) : null;
        } catch (error) {
          if ((error as { code?: string }).code === "ENOTDIR") return null;
          throw error;
        }
      },
      async readDir(p: string): Promise<PlatformDirEntry[]> {
        return (await readdir(p, { withFileTypes: true })).map((entry) => ({
          name: entry.name,
          kind: entry.isFile()
            ? "file"
            : entry.isDirectory()
            ? "directory"
            : entry.isSymbolicLink()
            ? "symlink"
            : "other",
        }));
      },
      readRegularFile: (p: string, maxBytes: number) =>
        new Promise<RegularFileRead>((resolve) => resolve(readRegularFile(p, maxBytes))),
      readTextFile: (p: string, maxBytes = DEFAULT_MAX_TEXT_FILE_BYTES) =>
        new Promise<string>((resolve) => resolve(readTextFile(p, maxBytes))),
      async writeFileAtomic(p: string, data: string | Uint8Array) {
        // Unique per write: two writes of one file at once must not share (and remove) a temp file.
        const temp = `${p}.${process.pid}.${crypto.randomUUID()}.tmp`;
        try {
          await writeFile(temp, data, { flag: "wx" });
          await rename(temp, p);
        } catch (error) {
          await rm(temp, { force: true });
          throw error;
        }
      },
      async writeFileExclusive(p: string, data: string) {
        // Written whole beside it, then linked: link(2) fails when the name exists, and never shows half a file.
        const temp = `${p}.${process.pid}.${crypto.randomUUID()}.tmp`;
        try {
          await writeFile(temp, data, { flag: "wx" });
          await link(temp, p);
        } finally {
          await rm(temp, { force: true });
        }
      },
      async mkdir(p: string) {
        await mkdir(p, { recursive: true });
      },
      async remove(p: string) {
        await rm(p, { force: true });
      },
      makeTempDir: (prefix: string) => mkdtemp(path.join(tmpdir(), prefix)),
      createAppendOnly(p: string) {
        const fd = openSync(p, "ax", 0o600);
        return {
          append(text: string) {
            // One write of the string is the common case; a short write falls back to bytes.
            const written = writeSync(fd, text);
            const bytes = Buffer.byteLength(text);
            if (written < bytes) {
              const rest = Buffer.from(text).subarray(written);
              let offset = 0;
              while (offset < rest.length) offset += writeSync(fd, rest, offset);
            }
          },
          close: () => closeSync(fd),
        };
      },
      async removeTree(p: string) {
        await rm(p, { recursive: true, force: true });
      },
    }),
    spawnProcess,
    denoExecutable,
    resolveHost: async (host: string) =>
      (await dns().lookup(host, { all: true, verbatim: true })).map((a) => a.address),
    processCpuMs(pid: number, reader: string | null) {
      const file = procStatFile(pid);
      if (file === null) return Promise.resolve(null);
      if (!procRefused) {
        try {
          return Promise.resolve(cpuMsOfStat(readFileSync(file, "latin1")));
        } catch (error) {
          if ((error as { code?: string }).code !== "ERR_ACCESS_DENIED") return Promise.resolve(null);
          procRefused = true;
        }
      }
      if (reader === null) return Promise.resolve(null);
      return new Promise<number | null>((resolve) => {
        children().execFile(reader, [file], { env: {}, encoding: "latin1" }, (error, stdout) => {
          resolve(error ? null : cpuMsOfStat(stdout));
        });
      });
    },
    unrefTimer(timer: unknown) {
      (timer as { unref?: () => void } | null)?.unref?.();
    },
  });
}

/**
 * node:http behind web-standard Request and Response, as Deno.serve gives them: the request's body streams in (the
 * handler bounds what it reads), the response's body streams out as it is produced (an SSE stream's events as they
 * come), and the request's signal aborts when its client goes away first.
 */
async function listenHttp({ hostname, port, handler }: HttpListenOptions): Promise<HttpListener> {
  const [{ createServer }, { Readable }] = await Promise.all([import("node:http"), import("node:stream")]);
  const server = createServer((req, res) => {
    const gone = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    let request: Request;
    try {
      // The URL's origin is the address bound, never the Host header, which the handler checks as the client sent it.
      const url = new URL(req.url ?? "/", `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${bound}`);
      const withBody = req.method !== "GET" && req.method !== "HEAD";
      request = new Request(url, {
        method: req.method,
        headers,
        // node's Readable.toWeb gives node:stream/web's ReadableStream, the same class as the global one.
        body: withBody ? Readable.toWeb(req) as unknown as ReadableStream<Uint8Array> : undefined,
        signal: gone.signal,
        // Required by node's fetch for a streamed body; not in the DOM's RequestInit type.
        ...({ duplex: "half" } as Record<string, string>),
      });
    } catch {
      res.writeHead(400, { "content-type": "text/plain" }).end("Bad Request: the request's target is not a URL path");
      return;
    }
    handler(request, { remoteAddress: req.socket.remoteAddress ?? "" }).then(async (response) => {
      const head: Record<string, string | string[]> = {};
      response.headers.forEach((value, name) => {
        head[name] = name === "set-cookie" ? response.headers.getSetCookie() : value;
      });
      res.writeHead(response.status, head);
      if (!response.body) return void res.end();
      const reader = response.body.getReader();
      gone.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}));
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        // An SSE event goes out at once; a slow client's backlog is bounded by waiting for it to drain.
        if (!res.write(value)) {
          await new Promise<void>((resolve) => {
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        }
      }
      res.end();
    }).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === "object" && address !== null ? address.port : port;
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections with no request in flight would hold close() open until their timeout.
        server.closeIdleConnections();
      }),
  };
}
