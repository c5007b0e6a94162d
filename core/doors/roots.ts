// The file-system door for every tool: reads, lists and globs confined to the
// configured roots. Paths are resolved to real paths before use, so `..`,
// absolute paths and symlinks that lead out of a root are refused. Results
// name roots by id and paths relative to the root, never host paths.
import path from "node:path";
import { messageOf, problem, received, WardenError } from "../errors.ts";
import { type FileStat, platform, type PlatformDirEntry } from "../platform/mod.ts";
import { LSTAT_DIRECTORY, LSTAT_FIELDS, LSTAT_FILE, LSTAT_MISSING, LSTAT_SYMLINK } from "../platform/lstat_many.ts";

/** A configured root: a logical id and the directory it stands for. */
export interface RootSpec {
  readonly id: string;
  readonly path: string;
}

/** One directory entry, as `ctx.fs.list` reports it. */
export interface DirEntry {
  readonly name: string;
  readonly kind: "file" | "directory" | "symlink" | "other";
}

/** File facts, as `ctx.fs.stat` reports them. */
export interface FileInfo {
  /** Path relative to the root, with `/` separators. */
  readonly path: string;
  readonly kind: "file" | "directory" | "other";
  readonly size: number;
  readonly mtimeMs: number;
}

/** Options of `ctx.fs.glob`. */
export interface GlobOptions {
  /**
   * Directory inside the root to glob from; results stay relative to the root. A symlink on its way is followed
   * when it stays inside the root (as `list` follows one), and results are named by where the files are.
   */
  readonly cwd?: string;
  /** Honour `.gitignore` files (default true). */
  readonly gitignore?: boolean;
  /** Match dot files (default false). */
  readonly dot?: boolean;
  /** Extra patterns to leave out. */
  readonly ignore?: readonly string[];
}

/** Read-only, root-confined file access: the `fs` of a `read` context. */
export interface RootFs {
  /** Root ids, in configuration order; the first is the default. */
  readonly rootIds: readonly string[];
  readText(root: string, file: string, options?: { maxBytes?: number }): Promise<string>;
  readBytes(root: string, file: string, options?: { maxBytes?: number }): Promise<Uint8Array>;
  stat(root: string, file: string): Promise<FileInfo>;
  /**
   * Stats many paths at once, in order: null for one that is missing or
   * refused. For checking a cache of thousands of files, where a `stat` each
   * (a real-path walk and two thread hops per file) costs far more.
   */
  stats(root: string, files: readonly string[]): Promise<(FileInfo | null)[]>;
  list(root: string, dir?: string): Promise<DirEntry[]>;
  /**
   * Regular files matching `patterns`, relative to the root, sorted. No symlinked directory is descended into,
   * wherever it leads (not even as a pattern's literal prefix); a symlinked file is kept when it resolves to a
   * regular file inside the root. A FIFO, socket or device is not a match.
   */
  glob(root: string, patterns: string | readonly string[], options?: GlobOptions): Promise<string[]>;
}

/** Largest file `readText`/`readBytes` return unless told otherwise. */
export const DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024;
/** Largest `maxBytes` honoured: a larger one is lowered to this (one read is one allocation of the file's size). */
export const MAX_READ_BYTES = 1024 * 1024 * 1024;

interface OpenRoot {
  readonly id: string;
  /** The path as configured, made absolute; absolute inputs are matched against it. */
  readonly given: string;
  readonly real: string;
}

interface Resolved {
  readonly root: OpenRoot;
  /** Real path on the host; never shown. */
  readonly real: string;
  /** Normalised path relative to the root with `/` separators, as the caller named it. */
  readonly display: string;
}

/** Relative, `/`-separated, no empty segment, no NUL; with DOT_SEGMENT, a path that needs no normalising. */
const PLAIN_RELATIVE = /^[^/\0]+(?:\/[^/\0]+)*$/;
const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;

/** An lstat that says null for anything it cannot tell (missing, no permission): `stat` then decides. */
function lstatOrNull(target: string): FileStat | null {
  try {
    return platform().fs.lstatSync(target);
  } catch {
    return null;
  }
}

/**
 * Whether `child` is `parent` or under it, by path segments, never by string prefix: `/x/root-evil` is not inside
 * `/x/root`, `/x/root/..a` is, and everything is inside `/`.
 */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  // `parent` itself is "", which passes as it should.
  return rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

// Stryker disable next-line all: equivalent where the tests run, on POSIX systems
const POSIX = path.sep === "/";

function toPosix(p: string): string {
  // Stryker disable next-line all: equivalent where the tests run, on POSIX systems
  return POSIX ? p : p.split(path.sep).join("/");
}

function nodeCode(error: unknown): string | undefined {
  // Stryker disable next-line OptionalChaining: equivalent, no file system call rejects with null
  return (error as { code?: string } | null)?.code;
}

/** One root opened: it must be an existing directory. Throws a `config_invalid` error naming the root otherwise. */
async function openRoot(spec: RootSpec): Promise<OpenRoot> {
  const fs = platform().fs;
  const given = path.resolve(spec.path);
  let real: string;
  try {
    real = await fs.realPath(given);
  } catch (error) {
    const code = nodeCode(error);
    // Not there is the common case; anything else (deno's or node's permissions refusing it, a loop) says itself.
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid root "${spec.id}"`,
        code === "ENOENT" || code === "ENOTDIR"
          ? `${received(spec.path)} does not exist`
          : `${received(spec.path)} cannot be read: ${messageOf(error)}`,
        code === "ENOENT" || code === "ENOTDIR"
          ? `pass --root ${spec.id}=<an existing directory>`
          : "pass a directory this process may read (warden doctor names what the runtime allows)",
      ),
    );
  }
  if (!(await fs.stat(real)).isDirectory) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid root "${spec.id}"`,
        `${received(spec.path)} is not a directory`,
        `pass --root ${spec.id}=<a directory>`,
      ),
    );
  }
  return { id: spec.id, given, real };
}

/**
 * Opens the configured roots: each must be an existing directory. Throws a
 * `config_invalid` error naming the root otherwise.
 */
export async function openRoots(specs: readonly RootSpec[]): Promise<RootFs> {
  const roots = new Map<string, OpenRoot>();
  for (const spec of specs) roots.set(spec.id, await openRoot(spec));
  return new ConfinedFs(roots);
}

/**
 * Makes `specs` the roots of `fs` (made by openRoots), in their order, from the next read on: the projects an MCP
 * client's roots name (core/transport/server.ts). A spec that cannot be opened (missing, not a directory, or refused
 * by the runtime's own permissions) is left out and returned with why; the others are opened as openRoots opens
 * them, so every rule of a configured root holds for them.
 */
export async function replaceRoots(
  fs: RootFs,
  specs: readonly RootSpec[],
): Promise<{ readonly id: string; readonly problem: string }[]> {
  if (!(fs instanceof ConfinedFs)) throw new Error("replaceRoots needs a RootFs made by openRoots");
  const roots = new Map<string, OpenRoot>();
  const refused: { id: string; problem: string }[] = [];
  for (const spec of specs) {
    try {
      roots.set(spec.id, await openRoot(spec));
    } catch (error) {
      refused.push({ id: spec.id, problem: messageOf(error) });
    }
  }
  fs.replace(roots);
  return refused;
}

/**
 * The RootFs the host makes (openRoots, restrictRoots): what tools read through, plus the real paths only the host
 * may see. A tool never holds one: its `ctx.fs` is the context's door (core/context.ts), which passes the reads on.
 */
type HostRootFs = ConfinedFs | NarrowedFs;

function hostRootFs(fs: RootFs, what: string): HostRootFs {
  if (fs instanceof ConfinedFs || fs instanceof NarrowedFs) return fs;
  throw new Error(`${what} needs a RootFs made by openRoots or restrictRoots`);
}

/**
 * Where a write to `file` in `root` would land, after the same checks as a
 * read and more: the parent directory exists inside the root (real path),
 * and the target, if it exists, is a regular file and not a symlink.
 */
export async function writableTarget(
  fs: RootFs,
  root: string,
  file: string,
): Promise<{ real: string; display: string }> {
  return await hostRootFs(fs, "writableTarget").writableTarget(root, file);
}

/** The real path of directory `dir` in `root`, after every check ctx.fs makes; for the host only. */
export async function realDirectory(fs: RootFs, root: string, dir: string): Promise<string> {
  return await hostRootFs(fs, "realDirectory").realDirectory(root, dir);
}

/** See ConfinedFs.#statsPlan. */
interface StatsPlan {
  readonly root: OpenRoot;
  readonly files: readonly string[];
  /** Each file's root-relative path as answers show it; null for a path refused. */
  readonly displays: readonly (string | null)[];
  /** Indexes in `files` of the paths in `targets`. */
  readonly plain: readonly number[];
  readonly targets: readonly string[];
  /** The real paths of the directories found plain (the root itself aside), to lstat again before reuse. */
  readonly plainDirs: readonly string[];
}

class ConfinedFs implements RootFs {
  #rootIds: readonly string[];
  #roots: ReadonlyMap<string, OpenRoot>;
  #lastStatsPlan: StatsPlan | undefined;

  constructor(roots: ReadonlyMap<string, OpenRoot>) {
    this.#roots = roots;
    this.#rootIds = Object.freeze([...roots.keys()]);
  }

  get rootIds(): readonly string[] {
    return this.#rootIds;
  }

  /** See replaceRoots; for the host only. */
  replace(roots: ReadonlyMap<string, OpenRoot>): void {
    this.#roots = roots;
    this.#rootIds = Object.freeze([...roots.keys()]);
    this.#lastStatsPlan = undefined;
  }

  /** See writableTarget; for the host only. */
  async writableTarget(root: string, file: string): Promise<{ real: string; display: string }> {
    if (typeof file !== "string" || file.includes("\0")) {
      throw new WardenError(
        "path_refused",
        problem("Invalid path", `${received(file)} is not a path without NUL bytes`),
      );
    }
    const name = path.basename(file);
    if (name === "" || name === "." || name === ".." || file.endsWith("/") || file.endsWith(path.sep)) {
      throw new WardenError("path_refused", problem("Invalid path", `${received(file)} does not name a file`));
    }
    const parent = await this.#resolve(root, path.dirname(file));
    const real = path.join(parent.real, name);
    const display = parent.display === "." ? name : `${parent.display}/${name}`;
    const existing = await platform().fs.lstat(real).catch(() => null);
    if (existing?.isSymlink) {
      throw new WardenError(
        "path_refused",
        problem(
          `Path refused in root "${parent.root.id}"`,
          `${received(display)} is a symlink`,
          "warden never writes through one",
        ),
      );
    }
    if (existing && !existing.isFile) {
      throw new WardenError(
        "path_refused",
        problem(`Path refused in root "${parent.root.id}"`, `${received(display)} is not a regular file`),
      );
    }
    return { real, display };
  }

  /** See realDirectory; for the host only. */
  async realDirectory(root: string, dir: string): Promise<string> {
    const target = await this.#resolve(root, dir);
    if (!(await platform().fs.stat(target.real)).isDirectory) {
      throw new WardenError(
        "not_found",
        problem(`Not a directory in root "${target.root.id}"`, received(target.display)),
      );
    }
    return target.real;
  }

  #root(id: string): OpenRoot {
    // Stryker disable next-line ConditionalExpression: equivalent, a root id is a string, so no other key is found
    const root = typeof id === "string" ? this.#roots.get(id) : undefined;
    if (!root) {
      throw new WardenError(
        "unknown_root",
        problem("Unknown root", `received ${received(id)}`, `use one of: ${this.rootIds.join(", ")}`),
      );
    }
    return root;
  }

  /** The path relative to the root, by its text alone: a string, no NUL, not leading out. */
  #lexical(root: OpenRoot, input: string): { rel: string; display: string } {
    if (typeof input !== "string") {
      throw new WardenError("path_refused", problem("Invalid path", `expected a string, received ${received(input)}`));
    }
    // The common case, a plain relative path ("src/a.ts"), is its own answer, without path's resolve and relative.
    if (POSIX && PLAIN_RELATIVE.test(input) && !DOT_SEGMENT.test(input)) return { rel: input, display: input };
    if (input.includes("\0")) {
      throw new WardenError("path_refused", problem("Invalid path", `${received(input)} contains a NUL byte`));
    }
    let rel: string;
    if (path.isAbsolute(input)) {
      const abs = path.normalize(input);
      const base = isInside(root.given, abs) ? root.given : isInside(root.real, abs) ? root.real : undefined;
      if (base === undefined) {
        throw new WardenError(
          "path_refused",
          problem(
            `Path refused in root "${root.id}"`,
            "an absolute path outside the root",
            "pass a path relative to the root",
          ),
        );
      }
      rel = path.relative(base, abs);
    } else {
      rel = path.relative(root.real, path.resolve(root.real, input));
      if (!isInside(root.real, path.resolve(root.real, input))) {
        throw new WardenError(
          "path_refused",
          problem(
            `Path refused in root "${root.id}"`,
            `${received(input)} leads outside the root`,
            "remove the `..` segments",
          ),
        );
      }
    }
    return { rel, display: toPosix(rel) || "." };
  }

  /** Lexical check first (cheap, and says `..` plainly), then the real path. */
  async #resolve(rootId: string, input: string): Promise<Resolved> {
    const root = this.#root(rootId);
    const { rel, display } = this.#lexical(root, input);
    let real: string;
    try {
      real = await platform().fs.realPath(path.join(root.real, rel));
    } catch (error) {
      const code = nodeCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") {
        throw new WardenError("not_found", problem(`Not found in root "${root.id}"`, received(display)));
      }
      // The runtime's own message names the host's path: say what failed by the root-relative one.
      const why = code === "ELOOP" ? "leads into a loop of symbolic links" : `cannot be resolved (${code ?? "error"})`;
      throw new WardenError(
        "path_refused",
        problem(`Path refused in root "${root.id}"`, `${received(display)} ${why}`),
      );
    }
    if (!isInside(root.real, real)) {
      throw new WardenError(
        "path_refused",
        problem(
          `Path refused in root "${root.id}"`,
          `${received(display)} leads outside the root through a symlink`,
          "only files inside the root can be read",
        ),
      );
    }
    return { root, real, display };
  }

  async readBytes(rootId: string, file: string, options: { maxBytes?: number } = {}): Promise<Uint8Array> {
    const maxBytes = Math.min(options.maxBytes ?? DEFAULT_MAX_READ_BYTES, MAX_READ_BYTES);
    const target = await this.#resolve(rootId, file);
    const read = await platform().fs.readRegularFile(target.real, maxBytes);
    const where = `in root "${target.root.id}"`;
    switch (read.kind) {
      case "ok":
        return read.bytes;
      case "symlink":
        // The real path had no symlink left; one appearing now is a swap.
        throw new WardenError(
          "path_refused",
          problem(`Path refused ${where}`, `${received(target.display)} changed into a symlink while being read`),
        );
      case "not_a_file":
        if (read.what === "a directory") {
          throw new WardenError("not_found", problem(`Not a file ${where}`, received(target.display)));
        }
        // A FIFO, a socket or a device: reading one could wait or run for ever.
        throw new WardenError(
          "path_refused",
          problem(
            `Path refused ${where}`,
            `${received(target.display)} is ${read.what}`,
            "only regular files are read",
          ),
        );
      case "too_large":
        throw new WardenError(
          "too_large",
          problem(
            `File too large ${where}`,
            `${received(target.display)} has ${read.size} bytes, the limit is ${maxBytes}`,
          ),
        );
    }
  }

  async readText(rootId: string, file: string, options: { maxBytes?: number } = {}): Promise<string> {
    return new TextDecoder().decode(await this.readBytes(rootId, file, options));
  }

  async stat(rootId: string, file: string): Promise<FileInfo> {
    const target = await this.#resolve(rootId, file);
    const info = await platform().fs.stat(target.real);
    return {
      path: target.display,
      kind: info.isFile ? "file" : info.isDirectory ? "directory" : "other",
      size: info.size,
      mtimeMs: info.mtimeMs,
    };
  }

  async stats(rootId: string, files: readonly string[]): Promise<(FileInfo | null)[]> {
    const root = this.#root(rootId);
    const { displays, plain, targets } = this.#statsPlan(root, files);
    const stamps = await platform().fs.lstatMany(targets);
    const out: (FileInfo | null)[] = new Array(files.length).fill(null);
    // The fast way answers for the paths the plan vouches for; any path it leaves takes `stat`'s full way below, to the
    // same answer. So mutants that only send more paths that way (or loop for ever: a timeout) are equivalent.
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: equivalent, see above
    for (let k = 0; k < plain.length; k++) {
      const kind = stamps[k * LSTAT_FIELDS];
      // Stryker disable next-line ConditionalExpression: equivalent made true (see above); made false, a symlink or a missing path would be answered by its lstat, which the roots tests refuse
      if (kind === LSTAT_SYMLINK || kind === LSTAT_MISSING) continue;
      const i = plain[k];
      out[i] = {
        path: displays[i]!,
        kind: kind === LSTAT_FILE ? "file" : kind === LSTAT_DIRECTORY ? "directory" : "other",
        size: stamps[k * LSTAT_FIELDS + 1],
        mtimeMs: stamps[k * LSTAT_FIELDS + 2],
      };
    }
    // Anything else (a symlink, a missing file, a path that is not plain) takes `stat`'s full way. Taking it for more
    // paths (one past the end, those answered already, those refused) gives the same answers.
    // Stryker disable next-line EqualityOperator: equivalent, see above
    for (let i = 0; i < files.length; i++) {
      // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent made true (see above); made false, no path would take the full way, which the roots tests refuse
      if (out[i] === null && displays[i] !== null) out[i] = await this.stat(rootId, files[i]).catch(() => null);
    }
    return out;
  }

  /**
   * Which of `files` `stats` may lstat at once: those under directories known to lead to the root's real path with no
   * symlink on the way, and the real paths to lstat. A caller that checks the same list again (a module graph proving
   * nothing changed) gets the plan it had, once the directories it relies on are checked again.
   */
  #statsPlan(root: OpenRoot, files: readonly string[]): StatsPlan {
    const last = this.#lastStatsPlan;
    // A plan made afresh answers the same: the mutants that only reuse it less are equivalent. Those that reuse it
    // wrongly (for another root, another list, after a directory it relied on became a symlink) fail "stats each list
    // afresh…", "checks again the directories…" and "stats a list again after the one directory…".
    if (
      // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent where it reuses less, see above
      last && last.root === root && last.files.length === files.length &&
      // Stryker disable next-line ConditionalExpression,ArrowFunction: equivalent where it reuses less, see above
      last.files.every((file, i) => file === files[i]) &&
      // Stryker disable next-line ConditionalExpression,ArrowFunction: equivalent where it reuses less, see above
      last.plainDirs.every((dir) => lstatOrNull(dir)?.isDirectory === true)
    ) return last;
    // Directories known to lead to the root's real path with no symlink on the way: a file under one that is not a
    // symlink itself needs one lstat, not a real-path walk. Anything else takes `stat`'s full way.
    // Stryker disable next-line BooleanLiteral: equivalent, a root not taken as plain sends every path the full way
    const plainDirs = new Map<string, boolean>([["", true]]);
    // #lexical hands back plain relative paths as they are: joining them needs no normalising (path.join's cost).
    // Stryker disable next-line ArithmeticOperator: equivalent, NaN names no path: each lstat says missing, and stat answers
    const prefix = root.real.endsWith(path.sep) ? root.real : root.real + path.sep;
    // Stryker disable next-line ArrowFunction,StringLiteral,ArithmeticOperator,ConditionalExpression: equivalent, a path that names nothing, or the root with its separator, sends the full way or lstats the same directory; made true, every file would answer as the root, which the roots tests refuse
    const under = (rel: string) => (rel === "" ? root.real : prefix + rel);
    const parentOf = (rel: string) => rel.slice(0, Math.max(0, rel.lastIndexOf(path.sep)));
    // Stryker disable BlockStatement: equivalent, a directory not known plain (undefined) sends its paths the full way
    const plainDir = (rel: string): boolean => {
      let known = plainDirs.get(rel);
      // Stryker disable next-line ConditionalExpression: equivalent, recomputed every time or never (undefined): see above
      if (known === undefined) {
        const info = plainDir(parentOf(rel)) ? lstatOrNull(under(rel)) : null;
        // Stryker disable next-line ConditionalExpression: equivalent made false (no directory plain); made true, a symlinked directory would be taken as plain, which the roots tests refuse
        known = info !== null && info.isDirectory;
        plainDirs.set(rel, known);
      }
      return known;
    };
    // Stryker restore BlockStatement
    const displays: (string | null)[] = [];
    const plain: number[] = [];
    const targets: string[] = [];
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: equivalent, a path left out of the plan takes the full way (or a timeout)
    for (let i = 0; i < files.length; i++) {
      let name: { rel: string; display: string } | null = null;
      try {
        name = this.#lexical(root, files[i]);
      } catch {
        // Refused: `stat` refuses it too, and its answer is null.
      }
      displays.push(name?.display ?? null);
      // Stryker disable next-line BlockStatement,ConditionalExpression: equivalent where a path is left out of the plan (it takes the full way); made true, a refused path would throw, which the roots tests refuse
      if (name && plainDir(parentOf(name.rel))) {
        plain.push(i);
        targets.push(under(name.rel));
      }
    }
    // Stryker disable next-line MethodExpression,LogicalOperator,StringLiteral,ArrowFunction: equivalent, more directories to check again (or none that lstats as one) only make the plan reused less
    const checked = [...plainDirs].filter(([rel, isPlain]) => isPlain && rel !== "").map(([rel]) => under(rel));
    // Stryker disable next-line ArrayDeclaration: equivalent, a plan kept for no list is never reused
    return this.#lastStatsPlan = { root, files: [...files], displays, plain, targets, plainDirs: checked };
  }

  // Stryker disable next-line StringLiteral: equivalent, "" names the root as "." does
  async list(rootId: string, dir = "."): Promise<DirEntry[]> {
    const target = await this.#resolve(rootId, dir);
    let entries: PlatformDirEntry[];
    try {
      entries = await platform().fs.readDir(target.real);
    } catch (error) {
      if (nodeCode(error) === "ENOTDIR") {
        throw new WardenError(
          "not_found",
          problem(`Not a directory in root "${target.root.id}"`, received(target.display)),
        );
      }
      throw error;
    }
    return entries
      .map((entry): DirEntry => ({ name: entry.name, kind: entry.kind }))
      // By UTF-16 code units; the names in a directory are unique, so none compares equal.
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async glob(rootId: string, patterns: string | readonly string[], options: GlobOptions = {}): Promise<string[]> {
    const list = typeof patterns === "string" ? [patterns] : [...patterns];
    // Stryker disable next-line ArrayDeclaration: equivalent, one more pattern to check, which passes
    for (const pattern of [...list, ...(options.ignore ?? [])]) {
      const bare = pattern.startsWith("!") ? pattern.slice(1) : pattern;
      // Stryker disable next-line LogicalOperator: equivalent where the tests run: on POSIX both say the same
      if (path.posix.isAbsolute(bare) || path.isAbsolute(bare) || bare.split(/[\\/]/).includes("..")) {
        throw new WardenError(
          "path_refused",
          problem(
            "Glob pattern refused",
            `${received(pattern)} could leave the root`,
            "use a pattern relative to the root, without `..`",
          ),
        );
      }
    }
    // Stryker disable next-line StringLiteral: equivalent, "" names the root as "." does
    const base = await this.#resolve(rootId, options.cwd ?? ".");
    const root = base.root;
    // `cwd` names a directory as `list` takes one: a symlink inside the root is followed, and the results are named
    // by where they are (its real path), never through the link.
    const baseRel = toPosix(path.relative(root.real, base.real));
    const { globby, convertPathToPattern } = await import("globby");
    // Glob from the root itself, with the sub-path as a pattern prefix, so the
    // root's .gitignore applies to a sub-path too.
    const prefix = baseRel === "" ? "" : convertPathToPattern(baseRel) + "/";
    const scoped = (pattern: string) => pattern.startsWith("!") ? "!" + prefix + pattern.slice(1) : prefix + pattern;
    const found = await globby(list.map(scoped), {
      cwd: root.real,
      fs: confinedGlobFs(root.real),
      // .gitignore files inside the root only: globby's `gitignore` option also
      // reads those of an enclosing repository, outside the root, which hid
      // every file of a root that lies in an ignored directory.
      ...(options.gitignore ?? true ? { ignoreFiles: "**/.gitignore" } : {}),
      dot: options.dot ?? false,
      // Stryker disable next-line ArrayDeclaration: equivalent, one more ignore pattern that names no file of the tests
      ignore: [...(options.ignore ?? []).map(scoped), "**/.git/**"],
      // Symlinks are not followed (a linked directory could lead anywhere, or in a loop); they come back as entries
      // and a linked file is kept below if it stays inside. confinedGlobFs holds the same for a pattern's prefix.
      onlyFiles: false,
      followSymbolicLinks: false,
      objectMode: true,
    });
    const out: string[] = [];
    for (const entry of found) {
      const real = path.resolve(root.real, entry.path);
      // A pattern that braces its way out (`{..,x}/*`) is caught by confinedGlobFs; this is the second lock.
      if (!isInside(root.real, real) || real === root.real) continue;
      if (entry.dirent.isSymbolicLink()) {
        try {
          const target = await platform().fs.realPath(real);
          if (!isInside(root.real, target) || !(await platform().fs.stat(target)).isFile) continue;
        } catch {
          continue;
        }
      } else if (!entry.dirent.isFile()) {
        continue;
      }
      out.push(toPosix(path.relative(root.real, real)));
    }
    return out.sort();
  }
}

type GlobFs = NonNullable<import("globby").Options["fs"]>;
type Callback<T> = (error: Error | null, value?: T) => void;

/** The fs.Stats and fs.Dirent methods fast-glob asks of an entry, from what the platform says. */
class GlobEntry {
  constructor(readonly name: string, readonly kind: DirEntry["kind"]) {}
  isFile(): boolean {
    return this.kind === "file";
  }
  isDirectory(): boolean {
    return this.kind === "directory";
  }
  isSymbolicLink(): boolean {
    return this.kind === "symlink";
  }
  // fast-glob binds these four to every entry (createDirentFromStats) and reads none of them: each must exist, and
  // what it returns is never asked.
  // Stryker disable all: equivalent, no answer of these is read
  isFIFO(): boolean {
    return false;
  }
  isSocket(): boolean {
    return false;
  }
  isCharacterDevice(): boolean {
    return false;
  }
  isBlockDevice(): boolean {
    return false;
  }
  // Stryker restore all
}

function syncRefused(): never {
  throw new Error("ctx.fs.glob reads the file system asynchronously only");
}

/** Largest .gitignore glob reads. */
const MAX_IGNORE_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The file system globby and fast-glob see inside `rootReal`: a directory is read, and a name in it looked at, only
 * when the directory's path is its real path inside the root (no symlink on the way), and an ignore file is read
 * only as a regular file inside the root. fast-glob does not descend into a symlinked directory, but it starts each
 * pattern at its literal prefix, through any symlink: `dirlink/**` listed the directory `dirlink` led to, outside
 * the root, and `{..,x}/*` the root's parent. Refusals are ENOENT, which fast-glob and globby skip silently: what
 * is not followed is not there. One per glob call (it remembers which directories it checked).
 */
export function confinedGlobFs(rootReal: string): GlobFs {
  const fs = platform().fs;
  const checked = new Map<string, Promise<boolean>>();
  const notThere = (p: string) => Object.assign(new Error(`ENOENT: not followed: ${p}`), { code: "ENOENT" });
  const plainDir = (abs: string): Promise<boolean> => {
    let known = checked.get(abs);
    if (known === undefined) {
      known = isInside(rootReal, abs)
        ? fs.realPath(abs).then((real) => real === abs, () => false)
        : Promise.resolve(false);
      checked.set(abs, known);
    }
    return known;
  };
  const readdir = async (dir: string) => {
    const abs = path.resolve(rootReal, dir);
    if (!(await plainDir(abs))) throw notThere(dir);
    return (await fs.readDir(abs)).map((entry) => new GlobEntry(entry.name, entry.kind));
  };
  // lstat, never stat: a symlink is an entry, never what it points to.
  const lstat = async (file: string) => {
    const abs = path.resolve(rootReal, file);
    if (!(await plainDir(path.dirname(abs)))) throw notThere(file);
    const info = await fs.lstat(abs);
    return new GlobEntry(
      path.basename(abs),
      info.isSymlink ? "symlink" : info.isFile ? "file" : info.isDirectory ? "directory" : "other",
    );
  };
  const readIgnoreFile = async (file: string) => {
    const abs = path.resolve(rootReal, file);
    if (!(await plainDir(path.dirname(abs)))) throw notThere(file);
    const real = await fs.realPath(abs);
    if (!isInside(rootReal, real)) throw notThere(file);
    const read = await fs.readRegularFile(real, MAX_IGNORE_FILE_BYTES);
    // A FIFO, a device or a huge file is no ignore file.
    if (read.kind !== "ok") throw notThere(file);
    return new TextDecoder().decode(read.bytes);
  };
  const callback = <T>(work: Promise<T>, done: Callback<T>) => void work.then((value) => done(null, value), done);
  const adapter = {
    readdir(dir: string, optionsOrDone: unknown, maybeDone?: Callback<unknown>) {
      const done = (typeof optionsOrDone === "function" ? optionsOrDone : maybeDone) as Callback<unknown>;
      const withTypes = (optionsOrDone as { withFileTypes?: boolean } | null)?.withFileTypes === true;
      callback(readdir(dir).then((entries) => withTypes ? entries : entries.map((e) => e.name)), done);
    },
    lstat: (file: string, done: Callback<unknown>) => callback(lstat(file), done),
    stat: (file: string, done: Callback<unknown>) => callback(lstat(file), done),
    promises: { readFile: readIgnoreFile, stat: lstat, lstat },
    // Only the asynchronous path is confined; were a synchronous call ever made, it fails instead of reading past.
    lstatSync: syncRefused,
    statSync: syncRefused,
    readdirSync: syncRefused,
  };
  // The adapter answers every call fast-glob and globby make on the asynchronous path with the shapes they read;
  // node's full fs types (overloads, Buffer encodings) do not fit it.
  return adapter as unknown as GlobFs;
}

/**
 * The same door, narrowed to the root ids a plugin declared (`*`: all).
 * Asking for another root is the same error as asking for an unknown one.
 */
export function restrictRoots(fs: RootFs, allowed: readonly string[], who: string): RootFs {
  if (allowed.includes("*")) return fs;
  return new NarrowedFs(fs, allowed, who);
}

class NarrowedFs implements RootFs {
  readonly #fs: RootFs;
  readonly #allowed: readonly string[];
  readonly #who: string;

  constructor(fs: RootFs, allowed: readonly string[], who: string) {
    this.#fs = fs;
    this.#allowed = allowed;
    this.#who = who;
    Object.freeze(this);
  }

  /** The allowed ones among the roots as they are now (a client's roots may replace them, see replaceRoots). */
  get rootIds(): readonly string[] {
    return Object.freeze(this.#fs.rootIds.filter((id) => this.#allowed.includes(id)));
  }

  #check(root: string): string {
    if (!this.rootIds.includes(root)) {
      throw new WardenError(
        "unknown_root",
        problem(
          "Unknown root",
          `received ${received(root)}`,
          this.rootIds.length
            ? `${this.#who} may read: ${this.rootIds.join(", ")}`
            : `${this.#who} declared no configured root`,
        ),
      );
    }
    return root;
  }

  // Each check runs inside the promise, so a refused root is a rejection like every other failure of a read.
  readText(root: string, file: string, options?: { maxBytes?: number }): Promise<string> {
    return Promise.resolve().then(() => this.#fs.readText(this.#check(root), file, options));
  }

  readBytes(root: string, file: string, options?: { maxBytes?: number }): Promise<Uint8Array> {
    return Promise.resolve().then(() => this.#fs.readBytes(this.#check(root), file, options));
  }

  stat(root: string, file: string): Promise<FileInfo> {
    return Promise.resolve().then(() => this.#fs.stat(this.#check(root), file));
  }

  stats(root: string, files: readonly string[]): Promise<(FileInfo | null)[]> {
    return Promise.resolve().then(() => this.#fs.stats(this.#check(root), files));
  }

  list(root: string, dir?: string): Promise<DirEntry[]> {
    return Promise.resolve().then(() => this.#fs.list(this.#check(root), dir));
  }

  glob(root: string, patterns: string | readonly string[], options?: GlobOptions): Promise<string[]> {
    return Promise.resolve().then(() => this.#fs.glob(this.#check(root), patterns, options));
  }

  /** See realDirectory; for the host only. */
  realDirectory(root: string, dir: string): Promise<string> {
    return Promise.resolve().then(() => realDirectory(this.#fs, this.#check(root), dir));
  }

  /** See writableTarget; for the host only. */
  writableTarget(root: string, file: string): Promise<{ real: string; display: string }> {
    return Promise.resolve().then(() => writableTarget(this.#fs, this.#check(root), file));
  }
}
