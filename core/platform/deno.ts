// The deno adapter of Platform, on Deno's own APIs: it keeps node's
// compatibility layer out of the startup path.
import type { FileStat, Platform, PlatformDirEntry, RegularFileRead } from "./types.ts";

/** The subset of the Deno namespace warden uses, typed here so the file checks under node's types too. */
interface DenoFileInfo {
  isFile: boolean;
  isDirectory: boolean;
  isSymlink: boolean;
  size: number;
  mtime: Date | null;
  ino: number | null;
  dev: number;
}
interface DenoFile {
  stat(): Promise<DenoFileInfo>;
  read(buffer: Uint8Array): Promise<number | null>;
  close(): void;
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
  stdin: { readable: ReadableStream<Uint8Array> };
  stdout: { writeSync(bytes: Uint8Array): number };
  stderr: { writeSync(bytes: Uint8Array): number };
  addSignalListener(signal: string, handler: () => void): void;
  removeSignalListener(signal: string, handler: () => void): void;
  realPath(path: string): Promise<string>;
  stat(path: string): Promise<DenoFileInfo>;
  lstat(path: string): Promise<DenoFileInfo>;
  readDir(path: string): AsyncIterable<{ name: string; isFile: boolean; isDirectory: boolean; isSymlink: boolean }>;
  open(path: string, options: { read: true }): Promise<DenoFile>;
  readTextFile(path: string): Promise<string>;
  writeTextFile(path: string, text: string, options: { createNew: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  errors: Record<string, new (...args: never[]) => Error>;
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

function toStat(info: DenoFileInfo): FileStat {
  return {
    isFile: info.isFile,
    isDirectory: info.isDirectory,
    isSymlink: info.isSymlink,
    size: info.size,
    mtimeMs: info.mtime?.getTime() ?? 0,
  };
}

function writeAll(sink: { writeSync(bytes: Uint8Array): number }, text: string): void {
  let bytes = new TextEncoder().encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(sink.writeSync(bytes));
}

async function readRegularFile(file: string, maxBytes: number): Promise<RegularFileRead> {
  // Deno.open has no O_NOFOLLOW: compare the lstat of the path with the
  // fstat of what was opened, so a symlink swapped in between is caught.
  const before = await withCode(() => Deno.lstat(file));
  if (before.isSymlink) return { kind: "symlink" };
  if (!before.isFile) return { kind: "not_a_file" };
  const handle = await withCode(() => Deno.open(file, { read: true }));
  try {
    const info = await handle.stat();
    if (info.ino !== before.ino || info.dev !== before.dev) return { kind: "symlink" };
    if (!info.isFile) return { kind: "not_a_file" };
    if (info.size > maxBytes) return { kind: "too_large", size: info.size };
    const bytes = new Uint8Array(info.size);
    let offset = 0;
    while (offset < bytes.length) {
      const read = await handle.read(bytes.subarray(offset));
      if (read === null || read === 0) break;
      offset += read;
    }
    return { kind: "ok", bytes: offset === bytes.length ? bytes : bytes.subarray(0, offset) };
  } finally {
    handle.close();
  }
}

/** Platform for deno, on the Deno namespace. */
export function denoPlatform(): Platform {
  const windows = Deno.build.os === "windows";
  return Object.freeze({
    runtime: Object.freeze({ name: "deno" as const, version: Deno.version.deno, execPath: Deno.execPath() }),
    args: Object.freeze([...Deno.args]),
    pathDelimiter: windows ? ";" : ":",
    env: (name: string) => Deno.env.get(name),
    cwd: () => Deno.cwd(),
    pid: () => Deno.pid,
    writeStdout: (text: string) => writeAll(Deno.stdout, text),
    writeStderr: (text: string) => writeAll(Deno.stderr, text),
    readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void) {
      (async () => {
        try {
          for await (const chunk of Deno.stdin.readable) onChunk(chunk);
        } catch {
          // A broken stdin ends the session like a closed one.
        }
        onEnd();
      })();
    },
    onInterrupt(handler: () => void) {
      Deno.addSignalListener("SIGINT", handler);
      return () => Deno.removeSignalListener("SIGINT", handler);
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
      realPath: (p: string) => withCode(() => Deno.realPath(p)),
      stat: (p: string) => withCode(async () => toStat(await Deno.stat(p))),
      lstat: (p: string) => withCode(async () => toStat(await Deno.lstat(p))),
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
      readRegularFile,
      readTextFile: (p: string) => withCode(() => Deno.readTextFile(p)),
      writeTextFileAtomic: (p: string, text: string) =>
        withCode(async () => {
          const temp = `${p}.${Deno.pid}.${Date.now()}.tmp`;
          try {
            await Deno.writeTextFile(temp, text, { createNew: true });
            await Deno.rename(temp, p);
          } catch (error) {
            await Deno.remove(temp).catch(() => {});
            throw error;
          }
        }),
    }),
  });
}
