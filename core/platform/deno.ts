// The deno adapter of Platform, on Deno's own APIs: it keeps node's
// compatibility layer out of the startup path.
import { LSTAT_DIRECTORY, LSTAT_FILE, LSTAT_MISSING, LSTAT_OTHER, LSTAT_SYMLINK, makeLstatMany } from "./lstat_many.ts";
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
import type { HttpListener, HttpListenOptions } from "./types.ts";

/** The subset of the Deno namespace warden uses, typed here so the file checks under node's types too. */
interface DenoFileInfo {
  isFile: boolean;
  isDirectory: boolean;
  isSymlink: boolean;
  size: number;
  mtime: Date | null;
  ino: number | null;
  dev: number;
  isFifo: boolean | null;
  isSocket: boolean | null;
  isCharDevice: boolean | null;
  isBlockDevice: boolean | null;
}
interface DenoFile {
  statSync(): DenoFileInfo;
  readSync(buffer: Uint8Array): number | null;
  /** `whence` 0 is Deno.SeekMode.Start. */
  seekSync(offset: number, whence: number): number;
  close(): void;
}
interface DenoChildProcess {
  readonly pid: number;
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly status: Promise<{ code: number; signal: string | null }>;
  kill(signal?: string): void;
  ref(): void;
  unref(): void;
}
interface DenoCommandOptions {
  args: string[];
  cwd?: string;
  clearEnv: boolean;
  env: Record<string, string>;
  stdin: "piped" | "null";
  stdout: "piped";
  stderr: "piped" | "null";
  detached?: boolean;
}
interface DenoNamespace {
  version: { deno: string };
  args: string[];
  build: { os: string };
  pid: number;
  execPath(): string;
  cwd(): string;
  exit(code: number): never;
  exitCode: number;
  env: { get(name: string): string | undefined };
  stdin: { read(buffer: Uint8Array): Promise<number | null> };
  stdout: { writeSync(bytes: Uint8Array): number };
  stderr: { writeSync(bytes: Uint8Array): number };
  addSignalListener(signal: string, handler: () => void): void;
  removeSignalListener(signal: string, handler: () => void): void;
  realPathSync(path: string): string;
  stat(path: string): Promise<DenoFileInfo>;
  lstat(path: string): Promise<DenoFileInfo>;
  lstatSync(path: string): DenoFileInfo;
  statSync(path: string): DenoFileInfo;
  readDir(path: string): AsyncIterable<{ name: string; isFile: boolean; isDirectory: boolean; isSymlink: boolean }>;
  readTextFileSync(path: string): string;
  writeFile(path: string, data: Uint8Array, options: { createNew: boolean }): Promise<void>;
  mkdir(path: string, options: { recursive: boolean }): Promise<void>;
  makeTempDir(options: { prefix: string }): Promise<string>;
  openSync(path: string, options: { read: true }): DenoFile;
  openSync(path: string, options: { append: true; createNew: true; mode: number }): {
    writeSync(bytes: Uint8Array): number;
    close(): void;
  };
  rename(from: string, to: string): Promise<void>;
  link(target: string, path: string): Promise<void>;
  remove(path: string, options?: { recursive: boolean }): Promise<void>;
  errors: Record<string, new (...args: never[]) => Error>;
  Command: new (command: string, options: DenoCommandOptions) => {
    spawn(): DenoChildProcess;
    output(): Promise<{ success: boolean; stdout: Uint8Array }>;
  };
  kill(pid: number, signal: string): void;
  unrefTimer(id: number): void;
  serve(
    options: {
      hostname: string;
      port: number;
      onListen(address: { port: number }): void;
      onError(error: unknown): Response;
    },
    handler: (
      request: Request,
      info: { remoteAddr: { hostname: string }; completed: Promise<void> },
    ) => Promise<Response>,
  ): { shutdown(): Promise<void> };
}

const Deno = (globalThis as unknown as { Deno: DenoNamespace }).Deno;

const CODES: Record<string, string> = {
  NotFound: "ENOENT",
  NotADirectory: "ENOTDIR",
  IsADirectory: "EISDIR",
  PermissionDenied: "EACCES",
  AlreadyExists: "EEXIST",
  FilesystemLoop: "ELOOP",
};

/** Gives Deno's error classes the node-style `code` the rest of core expects. */
async function withCode<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const name = (error as Error)?.name;
    if (name && CODES[name] && typeof error === "object" && error !== null && !("code" in error)) {
      Object.assign(error, { code: CODES[name] });
    }
    throw error;
  }
}

function syncWithCode<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    const name = (error as Error)?.name;
    if (name && CODES[name] && typeof error === "object" && error !== null && !("code" in error)) {
      Object.assign(error, { code: CODES[name] });
    }
    throw error;
  }
}

function toStat(info: DenoFileInfo): FileStat {
  return {
    isFile: info.isFile,
    isDirectory: info.isDirectory,
    isSymlink: info.isSymlink,
    size: info.size,
    mtimeMs: info.mtime?.getTime() ?? 0,
  };
}

const encoder = new TextEncoder();

function writeAll(sink: { writeSync(bytes: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(sink.writeSync(bytes));
}

function kindOf(info: DenoFileInfo): string {
  return kindName({
    isFile: info.isFile,
    isDirectory: info.isDirectory,
    isSymlink: info.isSymlink,
    isFifo: info.isFifo === true,
    isSocket: info.isSocket === true,
    isCharDevice: info.isCharDevice === true,
    isBlockDevice: info.isBlockDevice === true,
  });
}

// Synchronous on purpose, as on node (see node.ts): each async op is a round trip through the runtime's thread pool,
// and a file read took five; on a 3,200-file build the round trips cost more than the reads.
// Deno.open has neither O_NOFOLLOW nor O_NONBLOCK (node:fs has both, but loading it costs a start): the path is
// looked at first, and only a regular file is opened; the handle's fstat must then be that same file, so a symlink
// swapped in between is caught. What remains is a FIFO swapped in within the microseconds between the look and the
// open, by someone who can write inside the root: that open would wait for a writer.
function readRegularFile(file: string, maxBytes: number, follow = false): RegularFileRead {
  const before = syncWithCode(() => follow ? Deno.statSync(file) : Deno.lstatSync(file));
  if (before.isSymlink) return { kind: "symlink" };
  if (!before.isFile) return { kind: "not_a_file", what: kindOf(before) };
  const handle = syncWithCode(() => Deno.openSync(file, { read: true }));
  try {
    const info = handle.statSync();
    if (info.ino !== before.ino || info.dev !== before.dev) return { kind: "symlink" };
    if (!info.isFile) return { kind: "not_a_file", what: kindOf(info) };
    if (info.size > maxBytes) return { kind: "too_large", size: info.size };
    const bytes = new Uint8Array(info.size);
    let offset = 0;
    while (offset < bytes.length) {
      const read = handle.readSync(bytes.subarray(offset));
      if (read === null || read === 0) break;
      offset += read;
    }
    return { kind: "ok", bytes: offset === bytes.length ? bytes : bytes.subarray(0, offset) };
  } finally {
    handle.close();
  }
}

/** readTextFile: a file of the host's own, through a symlink, under the same rules as readRegularFile. */
function readTextFile(file: string, maxBytes: number): string {
  // A "symlink" outcome here: the file changed under the read (stat and handle disagree).
  return textOrThrow(readRegularFile(file, maxBytes, true), maxBytes, "a file that changed while it was opened");
}

function readRange(file: string, offset: number, length: number): { size: number; bytes: Uint8Array } {
  // As readRegularFile: no O_NOFOLLOW in Deno.open, so the lstat before must match the fstat after.
  const before = syncWithCode(() => Deno.lstatSync(file));
  if (!before.isFile) throw Object.assign(new Error(`${file} is not a regular file`), { code: "EFTYPE" });
  const handle = syncWithCode(() => Deno.openSync(file, { read: true }));
  try {
    const info = handle.statSync();
    if (info.ino !== before.ino || info.dev !== before.dev || !info.isFile) {
      throw Object.assign(new Error(`${file} changed while opened`), { code: "EFTYPE" });
    }
    const start = offset < 0 ? Math.max(0, info.size + offset) : Math.min(offset, info.size);
    handle.seekSync(start, 0);
    const bytes = new Uint8Array(Math.min(length, info.size - start));
    let at = 0;
    while (at < bytes.length) {
      const read = handle.readSync(bytes.subarray(at));
      if (read === null || read === 0) break;
      at += read;
    }
    return { size: info.size, bytes: at === bytes.length ? bytes : bytes.subarray(0, at) };
  } finally {
    handle.close();
  }
}

/** Kills of the children still running, called when this process exits. */
const liveChildren = new Set<() => void>();
let exitHookInstalled = false;

function killChildrenOnExit(kill: () => void): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // "unload" fires on Deno.exit() and when the event loop runs dry.
    (globalThis as unknown as EventTarget).addEventListener("unload", () => {
      for (const killOne of liveChildren) killOne();
    });
  }
  liveChildren.add(kill);
}

/**
 * Deno.kill on a process group needs the unrestricted --allow-run; with
 * --allow-run=<deno binary> only the child itself can be signalled. A plugin
 * child has no run permission, so its group never holds more than itself.
 */
let groupKillPermitted = true;

async function pump(stream: ReadableStream<Uint8Array>, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  try {
    for await (const chunk of stream) onChunk(chunk);
  } catch {
    // A broken pipe ends the stream like EOF.
  }
}

function spawnProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions,
): Promise<ChildProcessHandle> {
  let child: DenoChildProcess;
  try {
    child = new Deno.Command(command, {
      args: [...args],
      cwd: options.cwd,
      clearEnv: true,
      env: { ...options.env },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // Deno's detached child calls setsid(): a new session and process group.
      detached: options.newProcessGroup,
    }).spawn();
  } catch (error) {
    return Promise.reject(error);
  }
  const pid = child.pid;
  const group = options.newProcessGroup && Deno.build.os !== "windows";
  let gone = false;
  const signal = (name: string) => {
    if (group && groupKillPermitted) {
      try {
        Deno.kill(-pid, name);
        return;
      } catch (error) {
        if ((error as Error)?.name === "NotCapable") groupKillPermitted = false;
      }
    }
    try {
      child.kill(name);
    } catch {
      // Already gone.
    }
  };
  const killNow = () => {
    if (!gone) signal("SIGKILL");
  };
  killChildrenOnExit(killNow);
  const writer = child.stdin.getWriter();
  let stdinOpen = true;
  const closed = Promise.all([pump(child.stdout, options.onStdout), pump(child.stderr, options.onStderr)]).then(
    () => {},
  );
  const exited = child.status.then((status): ProcessExit => {
    gone = true;
    liveChildren.delete(killNow);
    if (group && groupKillPermitted) {
      try {
        Deno.kill(-pid, "SIGKILL");
      } catch {
        // Nothing left, or not permitted.
      }
    }
    return { code: status.signal ? null : status.code, signal: status.signal };
  });
  return Promise.resolve({
    pid,
    write(data: string | Uint8Array) {
      if (!stdinOpen || gone) return;
      writer.write(typeof data === "string" ? encoder.encode(data) : data).catch(() => {});
    },
    end() {
      if (!stdinOpen) return;
      stdinOpen = false;
      writer.close().catch(() => {});
    },
    kill(name: "SIGTERM" | "SIGKILL" | "SIGSTOP" | "SIGCONT") {
      if (!gone) signal(name);
    },
    exited,
    closed,
    ref: () => child.ref(),
    unref: () => child.unref(),
  });
}

/** Set once deno has refused /proc: processCpuMs then goes to its reader at once. */
let procRefused = false;

/** Platform for deno, on the Deno namespace. */
export function denoPlatform(): Platform {
  const windows = Deno.build.os === "windows";
  return Object.freeze({
    runtime: Object.freeze({ name: "deno" as const, version: Deno.version.deno, execPath: Deno.execPath() }),
    args: Object.freeze([...Deno.args]),
    pathDelimiter: windows ? ";" : ":",
    os: Deno.build.os,
    env: (name: string) => Deno.env.get(name),
    cwd: () => Deno.cwd(),
    pid: () => Deno.pid,
    writeStdout: (text: string) => writeAll(Deno.stdout, text),
    writeStderr: (text: string) => writeAll(Deno.stderr, text),
    // writeAll is synchronous: nothing is left to flush.
    flushStdout: () => Promise.resolve(),
    readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void) {
      (async () => {
        // One buffer, reused: the stdio transport copies what outlives a chunk.
        // (Deno.stdin.readable allocated per read, and its garbage cost a trivial call dearly.)
        const buffer = new Uint8Array(64 * 1024);
        try {
          for (;;) {
            const read = await Deno.stdin.read(buffer);
            if (read === null) break;
            onChunk(buffer.subarray(0, read));
          }
        } catch {
          // A broken stdin ends the session like a closed one.
        }
        onEnd();
      })();
    },
    async processRunning(pid: number) {
      // Deno.kill takes no signal 0; node:process does. Loaded here only, for the shell command that asks.
      const { default: process } = await import("node:process");
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        return (error as { code?: string }).code === "EPERM";
      }
    },
    onInterrupt(handler: () => void) {
      Deno.addSignalListener("SIGINT", handler);
      return () => Deno.removeSignalListener("SIGINT", handler);
    },
    onTerminate(handler: () => void) {
      Deno.addSignalListener("SIGTERM", handler);
      return () => Deno.removeSignalListener("SIGTERM", handler);
    },
    listenHttp({ hostname, port, handler }: HttpListenOptions): Promise<HttpListener> {
      // Deno.serve, not node:http through deno's node layer: the runtime's own server is its fast path.
      return new Promise((resolve, reject) => {
        try {
          const server = Deno.serve({
            hostname,
            port,
            // Without it deno prints "Listening on" to stdout, which is the protocol's channel on stdio.
            onListen: (address) => resolve({ port: address.port, close: () => server.shutdown() }),
            onError: () => new Response("Internal Server Error", { status: 500 }),
          }, (request, info) => {
            // The handler's signal aborts when the client goes away first, as node's does: Deno's request.signal
            // (with --unstable-no-legacy-abort; without it, also once an answer is delivered, when nothing is left to
            // cancel), or info.completed failing while an answer streams.
            const gone = new AbortController();
            const abort = () => gone.abort();
            request.signal.addEventListener("abort", abort, { once: true });
            info.completed.catch(abort);
            return handler(new Request(request, { signal: gone.signal }), { remoteAddress: info.remoteAddr.hostname });
          });
        } catch (error) {
          reject(error);
        }
      });
    },
    exit: (code: number): never => Deno.exit(code),
    setExitCode(code: number) {
      Deno.exitCode = code;
    },
    fromFileUrl(url: URL): string {
      const decoded = decodeURIComponent(url.pathname);
      return windows ? decoded.replace(/^\/([A-Za-z]:)/, "$1").replaceAll("/", "\\") : decoded;
    },
    fs: Object.freeze({
      // Synchronous for the reason given at readRegularFile; a promise still, as callers expect.
      realPath: (p: string) => withCode(() => Promise.resolve(Deno.realPathSync(p))),
      readRange: (p: string, offset: number, length: number) =>
        withCode(() => Promise.resolve(readRange(p, offset, length))),
      stat: (p: string) => withCode(async () => toStat(await Deno.stat(p))),
      lstat: (p: string) => withCode(async () => toStat(await Deno.lstat(p))),
      lstatMany: makeLstatMany(
        `function lstatInto(path, out, at) {
          let info;
          try {
            info = Deno.lstatSync(path);
          } catch {
            out[at] = ${LSTAT_MISSING};
            return;
          }
          out[at] = info.isSymlink ? ${LSTAT_SYMLINK} : info.isFile ? ${LSTAT_FILE}
            : info.isDirectory ? ${LSTAT_DIRECTORY} : ${LSTAT_OTHER};
          out[at + 1] = info.size;
          out[at + 2] = info.mtime ? info.mtime.getTime() : 0;
        }`,
        undefined,
        false,
      ),
      lstatSync(p: string) {
        try {
          return toStat(Deno.lstatSync(p));
        } catch (error) {
          const code = CODES[(error as Error)?.name];
          if (code === "ENOENT" || code === "ENOTDIR") return null;
          if (code && typeof error === "object" && error !== null) Object.assign(error, { code });
          throw error;
        }
      },
      readDir: (p: string) =>
        withCode(async () => {
          const out: PlatformDirEntry[] = [];
          for await (const entry of Deno.readDir(p)) {
            out.push({
              name: entry.name,
              kind: entry.isFile ? "file" : entry.isDirectory ? "directory" : entry.isSymlink ? "symlink" : "other",
            });
          }
          return out;
        }),
      readRegularFile: (p: string, maxBytes: number) =>
        new Promise<RegularFileRead>((resolve) => resolve(readRegularFile(p, maxBytes))),
      readTextFile: (p: string, maxBytes = DEFAULT_MAX_TEXT_FILE_BYTES) =>
        new Promise<string>((resolve) => resolve(readTextFile(p, maxBytes))),
      writeFileAtomic: (p: string, data: string | Uint8Array) =>
        withCode(async () => {
          // Unique per write: two writes of one file at once must not share (and remove) a temp file.
          const temp = `${p}.${Deno.pid}.${crypto.randomUUID()}.tmp`;
          try {
            await Deno.writeFile(temp, typeof data === "string" ? encoder.encode(data) : data, { createNew: true });
            await Deno.rename(temp, p);
          } catch (error) {
            await Deno.remove(temp).catch(() => {});
            throw error;
          }
        }),
      writeFileExclusive: (p: string, data: string) =>
        withCode(async () => {
          // Written whole beside it, then linked: link(2) fails when the name exists, and never shows half a file.
          const temp = `${p}.${Deno.pid}.${crypto.randomUUID()}.tmp`;
          try {
            await Deno.writeFile(temp, encoder.encode(data), { createNew: true });
            await Deno.link(temp, p);
          } finally {
            await Deno.remove(temp).catch(() => {});
          }
        }),
      mkdir: (p: string) => withCode(() => Deno.mkdir(p, { recursive: true })),
      makeTempDir: (prefix: string) => withCode(() => Deno.makeTempDir({ prefix })),
      createAppendOnly(p: string) {
        const file = Deno.openSync(p, { append: true, createNew: true, mode: 0o600 });
        // Rows are encoded into one buffer kept with the file: an encode per row allocated.
        let buffer = new Uint8Array(4096);
        return {
          append(text: string) {
            if (buffer.length < text.length * 3) buffer = new Uint8Array(text.length * 3);
            let bytes = buffer.subarray(0, encoder.encodeInto(text, buffer).written);
            while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
          },
          close: () => file.close(),
        };
      },
      removeTree: (p: string) =>
        withCode(() => Deno.remove(p, { recursive: true })).catch((error) => {
          if ((error as { code?: string }).code !== "ENOENT") throw error;
        }),
      remove: (p: string) =>
        withCode(() => Deno.remove(p)).catch((error) => {
          if ((error as { code?: string }).code !== "ENOENT") throw error;
        }),
    }),
    spawnProcess,
    denoExecutable: () => Deno.execPath(),
    async resolveHost(host: string) {
      // getaddrinfo, as fetch itself resolves (Deno.resolveDns skips /etc/hosts); loaded on first use.
      const { lookup } = await import("node:dns/promises");
      return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    },
    async processCpuMs(pid: number, reader: string | null) {
      const file = procStatFile(pid);
      if (file === null) return null;
      if (!procRefused) {
        try {
          return cpuMsOfStat(Deno.readTextFileSync(file));
        } catch (error) {
          // Refused for anything short of --allow-all, whatever --allow-read says (deno 2.9).
          if ((error as Error)?.name !== "NotCapable") return null;
          procRefused = true;
        }
      }
      if (reader === null) return null;
      try {
        const { success, stdout } = await new Deno.Command(reader, {
          args: [file],
          clearEnv: true,
          env: {},
          stdin: "null",
          stdout: "piped",
          stderr: "null",
        }).output();
        return success ? cpuMsOfStat(new TextDecoder().decode(stdout)) : null;
      } catch {
        return null;
      }
    },
    unrefTimer(timer: unknown) {
      // Deno 2 returns node-style Timeout objects from setTimeout; older versions return ids.
      const unref = (timer as { unref?: () => void } | null)?.unref;
      if (typeof unref === "function") unref.call(timer);
      else if (typeof timer === "number") Deno.unrefTimer(timer);
    },
  });
}
