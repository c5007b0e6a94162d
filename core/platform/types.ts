// The one interface behind which node and deno differ. Everything in core/
// that touches the process, stdio or the file system goes through it, so the
// deno host never loads node's compatibility layer at startup (measured: the
// node:fs and node:process polyfills cost deno ~40 ms of a ~60 ms start).

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

/** The outcome of reading a file that must be a regular file and not a symlink. */
export type RegularFileRead =
  | { readonly kind: "ok"; readonly bytes: Uint8Array }
  | { readonly kind: "too_large"; readonly size: number }
  | { readonly kind: "not_a_file" }
  | { readonly kind: "symlink" };

/**
 * File-system errors are thrown as `Error` with a node-style `code`
 * (`ENOENT`, `ENOTDIR`, `EACCES`…) on both runtimes.
 */
export interface PlatformFs {
  realPath(path: string): Promise<string>;
  stat(path: string): Promise<FileStat>;
  lstat(path: string): Promise<FileStat>;
  readDir(path: string): Promise<PlatformDirEntry[]>;
  /** Reads `path` only if it is a regular file (a symlink is refused) of at most `maxBytes`. */
  readRegularFile(path: string, maxBytes: number): Promise<RegularFileRead>;
  readTextFile(path: string): Promise<string>;
  /** Writes beside `path`, then renames over it: readers never see half a file. */
  writeTextFileAtomic(path: string, text: string): Promise<void>;
}

/** Process, stdio and files, as one runtime provides them. */
export interface Platform {
  readonly runtime: RuntimeInfo;
  /** Command-line arguments after the script. */
  readonly args: readonly string[];
  /** Path-list separator of the OS (`:` or `;`). */
  readonly pathDelimiter: string;
  env(name: string): string | undefined;
  cwd(): string;
  pid(): number;
  /** Synchronous, so that a line is whole on the pipe before the next begins. */
  writeStdout(text: string): void;
  writeStderr(text: string): void;
  /** Delivers stdin chunks as they arrive, then `onEnd` once. */
  readStdin(onChunk: (chunk: Uint8Array) => void, onEnd: () => void): void;
  /** Calls `handler` on SIGINT; returns the function that removes it. */
  onInterrupt(handler: () => void): () => void;
  exit(code: number): never;
  /** The code the process ends with once it runs out of work. */
  setExitCode(code: number): void;
  fromFileUrl(url: URL): string;
  readonly fs: PlatformFs;
}
