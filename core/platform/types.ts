// The one interface behind which node and deno differ. Everything in core/
// that touches the process, stdio or the file system goes through it, so the
// deno host never loads node's compatibility layer at startup (its node:fs and
// node:process polyfills cost deno most of a start: scripts/bench/README.md).
import type { LstatMany } from "./lstat_many.ts";

/** Which JavaScript runtime is executing warden. */
export type RuntimeName = "node" | "deno";

/** Name and version of the running runtime, and the binary that runs it. */
export interface RuntimeInfo {
  readonly name: RuntimeName;
  readonly version: string;
  readonly execPath: string;
}

/** File facts the host needs; symlinks are followed unless noted. */
export interface FileStat {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  readonly size: number;
  readonly mtimeMs: number;
}

/** One directory entry, not following symlinks. */
export interface PlatformDirEntry {
  readonly name: string;
  readonly kind: "file" | "directory" | "symlink" | "other";
}

/**
 * The outcome of reading a file that must be a regular file and not a symlink. `what` says what was found instead,
 * for error messages: "a directory", "a FIFO", "a socket", "a character device", "a block device".
 */
export type RegularFileRead =
  | { readonly kind: "ok"; readonly bytes: Uint8Array }
  | { readonly kind: "too_large"; readonly size: number }
  | { readonly kind: "not_a_file"; readonly what: string }
  | { readonly kind: "symlink" };

/**
 * File-system errors are thrown as `Error` with a node-style `code`
 * (`ENOENT`, `ENOTDIR`, `EACCES`…) on both runtimes.
 *
 * No read may block: a FIFO, a socket or a device opened as a file would stop
 * the event loop (opening a FIFO waits for a writer; reading one or a device
 * never ends). Every read opens without blocking (O_NONBLOCK where the runtime
 * allows it), checks the type on the open handle, refuses anything but a
 * regular file, and reads at most the size it saw then, under a cap.
 */
export interface PlatformFs {
  realPath(path: string): Promise<string>;
  stat(path: string): Promise<FileStat>;
  lstat(path: string): Promise<FileStat>;
  /**
   * lstat without a round trip through the event loop, null when nothing is
   * there (ENOENT, ENOTDIR): a cache checking thousands of files pays a few
   * µs each instead of a promise and a thread hop.
   */
  lstatSync(path: string): FileStat | null;
  /** lstat of many paths at once, on two threads when there are enough (see lstat_many.ts). */
  lstatMany: LstatMany;
  readDir(path: string): Promise<PlatformDirEntry[]>;
  /**
   * Reads `path` only if it is a regular file (a symlink is refused) of at most `maxBytes`, and no more than the
   * size it had when opened (a file that grows while read is read up to that size).
   */
  readRegularFile(path: string, maxBytes: number): Promise<RegularFileRead>;
  /**
   * Reads a file of the host's own (a symlink is followed) as UTF-8, under the same rules: anything but a regular
   * file throws with code `EFTYPE` ("… is a FIFO, not a regular file"), one larger than `maxBytes` (default
   * DEFAULT_MAX_TEXT_FILE_BYTES, see regular_file.ts) with code `EFBIG`.
   */
  readTextFile(path: string, maxBytes?: number): Promise<string>;
  /**
   * Up to `length` bytes of the regular file `path` (not a symlink, FIFO or device) from `offset`, or from its end
   * when `offset` is negative, with the file's size: the ledger reads the heads of files it must not read whole.
   */
  readRange(path: string, offset: number, length: number): Promise<{ size: number; bytes: Uint8Array }>;
  /** Writes beside `path`, then renames over it: readers never see half a file. */
  writeFileAtomic(path: string, data: string | Uint8Array): Promise<void>;
  /**
   * Creates `path` with `data`, whole, only if nothing is there: rejects with code `EEXIST` otherwise. Processes that
   * race for one path (a claim) see exactly one win, and a reader sees all of its data or no file.
   */
  writeFileExclusive(path: string, data: string): Promise<void>;
  /** Creates a directory and its parents; an existing one is fine. */
  mkdir(path: string): Promise<void>;
  /** Removes a file; a missing one is fine. */
  remove(path: string): Promise<void>;
  /** A new, empty, private directory under the OS temp directory. */
  makeTempDir(prefix: string): Promise<string>;
  /** Removes a directory and everything under it; a missing one is fine. */
  removeTree(path: string): Promise<void>;
  /**
   * Creates `path` (it must not exist) for appending with synchronous writes,
   * each one whole: for logs on a call's path, where an async write costs more.
   */
  createAppendOnly(path: string): AppendOnlyFile;
}

/** A file opened for append. `append` throws on any failure (full disk, read-only...). */
export interface AppendOnlyFile {
  append(text: string): void;
  close(): void;
}

/** How `spawnProcess` starts a child. */
export interface SpawnOptions {
  /** The child's whole environment: nothing of this process's environment is passed on. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of the child; this process's when absent. */
  readonly cwd?: string;
  /**
   * Starts the child in a new session and process group (POSIX `setsid`), so
   * that `kill` reaches everything it starts and no terminal signal does.
   */
  readonly newProcessGroup: boolean;
  /** Receives stdout chunks as they arrive. */
  readonly onStdout: (chunk: Uint8Array) => void;
  /** Receives stderr chunks as they arrive. */
  readonly onStderr: (chunk: Uint8Array) => void;
}

/** How a child process ended: an exit code, or the signal that killed it. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/**
 * A running child with piped stdio. Children still running when this
 * process exits are killed with it (with their process group).
 */
export interface ChildProcessHandle {
  readonly pid: number;
  /** Queues `data` for the child's stdin, in order; ignored once stdin is closed or the child is gone. */
  write(data: string | Uint8Array): void;
  /** Closes the child's stdin. */
  end(): void;
  /**
   * Sends `signal` to the child's process group when it has one (to the
   * child alone where the runtime does not permit more), else to the child.
   * A no-op once the child has exited: what was left of its group was killed then.
   * SIGSTOP and SIGCONT freeze and resume it (a plugin child between calls).
   */
  kill(signal: "SIGTERM" | "SIGKILL" | "SIGSTOP" | "SIGCONT"): void;
  /** Resolves once the child has exited and been reaped. */
  readonly exited: Promise<ProcessExit>;
  /** Resolves once the child's stdout and stderr have both ended. */
  readonly closed: Promise<void>;
  /** Lets the child (its status and pipes) keep this process alive, as it does after spawn. */
  ref(): void;
  /** Lets this process exit while the child runs; it is then killed on exit. */
  unref(): void;
}

/** What an HTTP request's handler learns beside the request. */
export interface HttpRequestInfo {
  /** The peer's address as text (`127.0.0.1`, `::1`). */
  readonly remoteAddress: string;
}

export interface HttpListenOptions {
  readonly hostname: string;
  readonly port: number;
  /** The request's signal aborts when its client goes away before the answer is sent. */
  readonly handler: (request: Request, info: HttpRequestInfo) => Promise<Response>;
}

export interface HttpListener {
  /** The port bound (the one asked for, or the one chosen for 0). */
  readonly port: number;
  /** Stops accepting connections; resolves once the connections already open have closed. */
  close(): Promise<void>;
}

/** Process, stdio and files, as one runtime provides them. */
export interface Platform {
  readonly runtime: RuntimeInfo;
  /** Command-line arguments after the script. */
  readonly args: readonly string[];
  /** Path-list separator of the OS (`:` or `;`). */
  readonly pathDelimiter: string;
  /** The operating system, as deno names it (`Deno.build.os`): `linux`, `darwin`, `windows`... */
  readonly os: string;
  env(name: string): string | undefined;
  cwd(): string;
  pid(): number;
  /** Whether a process with this id runs on this machine (signal 0; permission denied counts as running). */
  processRunning(pid: number): Promise<boolean>;
  /** Synchronous, so that a line is whole on the pipe before the next begins. */
  writeStdout(text: string): void;
  writeStderr(text: string): void;
  /** Resolves once everything written to stdout has left the process (node buffers a pipe it cannot write to yet). */
  flushStdout(): Promise<void>;
  /** Delivers stdin chunks as they arrive, then `onEnd` once. */
  readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void): void;
  /** Calls `handler` on SIGINT; returns the function that removes it. */
  onInterrupt(handler: () => void): () => void;
  /** Calls `handler` on SIGTERM (how a service manager or a container stops a server); returns its remover. */
  onTerminate(handler: () => void): () => void;
  /**
   * Listens for HTTP on `hostname`:`port` (0: any free port) and answers each request with `handler`, as web-standard
   * Request and Response on both runtimes. Resolves once listening; rejects when the address cannot be bound.
   */
  listenHttp(options: HttpListenOptions): Promise<HttpListener>;
  exit(code: number): never;
  /** The code the process ends with once it runs out of work. */
  setExitCode(code: number): void;
  fromFileUrl(url: URL): string;
  readonly fs: PlatformFs;
  /**
   * Starts `command` (an absolute path; no shell, no PATH lookup) with piped
   * stdio. Rejects when the process cannot be started.
   */
  spawnProcess(command: string, args: readonly string[], options: SpawnOptions): Promise<ChildProcessHandle>;
  /**
   * The deno binary that runs plugins: this one under deno, the `deno` npm
   * package's binary under node. Throws a `WardenError` that says to run
   * `npm install` when it is missing.
   */
  denoExecutable(): string;
  /** Every address `host` resolves to (A and AAAA), as text. */
  resolveHost(host: string): Promise<string[]>;
  /**
   * CPU time (user + system, all threads) a running process has used so far, in ms, from /proc/<pid>/stat;
   * null where there is no /proc (not Linux) or the process is gone. Where this process may not read /proc (deno:
   * only with --allow-all; node under its permission model), `reader` reads the file when given: a program at a
   * fixed path (cat) started with that one path as its only argument, no shell and an empty environment.
   */
  processCpuMs(pid: number, reader: string | null): Promise<number | null>;
  /** Keeps `timer` (a `setTimeout` handle) from holding this process alive. */
  unrefTimer(timer: unknown): void;
}

/** What a host without deno (warden installed without its optional `deno` package) does to run plugins. */
export const DENO_MISSING_FIX =
  'run "npm install deno" where warden is installed, or install deno (https://docs.deno.com/runtime/) in PATH';
