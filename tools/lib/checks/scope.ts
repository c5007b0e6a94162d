// The change a run_checks run looks at, from git: the files of the staged
// change, of the working tree or of a range, each with its status and the
// lines it adds (numbered as in the new file), narrowed by file/dir/exclude
// globs. Everything git prints is read as data: paths are never passed to a
// shell, and refs are checked before git sees them.
import { problem, received, WardenError } from "../../../core/errors.ts";
import type { GateContext } from "../../../core/tool.ts";
import { diffStatus, EMPTY_TREE, firstLine, git, openWorkTree, REF_PATTERN, resolveCommit } from "../git.ts";
import { globToRegExp } from "../graph/packages.ts";
import type { ChangedFile, ChangeScope } from "./types.ts";

/** What to look at. */
export interface ScopeRequest {
  readonly root: string;
  readonly mode: ChangeScope["mode"];
  /** For `range`: one revision range (`main...HEAD`, `main..HEAD`, a commit) or two commits, as git diff takes them. */
  readonly revisions?: readonly string[];
  /** Globs a file must match (one of); a glob without `/` matches the file name in any directory. */
  readonly file?: readonly string[];
  /** Directories a file must be under (one of); globs allowed. */
  readonly dir?: readonly string[];
  /** Globs (or directories) whose files are left out. */
  readonly exclude?: readonly string[];
}

/** The scope and what the tool needs to read program output against it. */
export interface ScopeResult {
  readonly scope: ChangeScope;
  /** Files of the change before the file/dir/exclude filters. */
  readonly filesBeforeFilters: number;
  /** git's output was cut at its size limit: files or lines may be missing. */
  readonly truncated: boolean;
  /** Untracked files whose added lines were not read (too large or unreadable), with why. */
  readonly unread: readonly string[];
  /** The root's absolute path as programs see it, `/`-terminated: only to turn their paths into root-relative ones. */
  readonly rootPath: string;
  /** The commit (or the empty tree) the change is measured from: the files as they were before it. */
  readonly base: string;
  /** Files as they were at `base`, by their old path, where the patch held them whole (see filesBefore). */
  readonly before: ReadonlyMap<string, string>;
}

const PATCH_BYTES = 16 * 1024 * 1024;
/** git's largest context: each changed file's hunk holds the whole file. */
const WHOLE_FILE = 2_147_483_647;
/** What one batch of files read at the base may hold; beyond it the rest are read one by one. */
const BATCH_BYTES = 16 * 1024 * 1024;
/** Largest untracked file whose lines are read as added. */
const UNTRACKED_BYTES = 2 * 1024 * 1024;

/** Checks a revision argument and the commits it names; throws `invalid_arguments` or `not_found` naming it. */
async function checkRevisions(ctx: GateContext, root: string, revisions: readonly string[]): Promise<void> {
  if (revisions.length < 1 || revisions.length > 2) {
    throw new WardenError(
      "invalid_arguments",
      problem(
        'Invalid argument "diff"',
        `expected one range such as ["main...HEAD"] or two commits, received ${received(revisions)}`,
      ),
    );
  }
  for (const revision of revisions) {
    const sides = revision.includes("...") ? revision.split("...") : revision.split("..");
    if (!REF_PATTERN.test(revision) || sides.length > 2 || (revisions.length === 2 && sides.length > 1)) {
      throw new WardenError(
        "invalid_arguments",
        problem(
          'Invalid argument "diff"',
          `expected a ref, a commit or a range <ref>..<ref> or <ref>...<ref>, received ${received(revision)}`,
        ),
      );
    }
    for (const side of sides) {
      if (side !== "" && await resolveCommit(ctx, root, side) === null) {
        throw new WardenError(
          "not_found",
          problem(
            `Ref "${side}" of diff ${received(revision)} does not exist in root "${root}"`,
            "pass a branch, tag or commit that git log knows",
          ),
        );
      }
    }
  }
}

/**
 * Checks, without reading the change, that `request` can be read: the root is a git working tree and a range's refs
 * exist. Throws as changeScope would; run_checks_start asks it before it queues a run.
 */
export async function checkScope(ctx: GateContext, request: ScopeRequest): Promise<void> {
  await openWorkTree(ctx, request.root);
  if (request.mode === "range") await checkRevisions(ctx, request.root, request.revisions ?? []);
}

/** Reads the change of `request` from git. Throws `not_found` when the root is not a git working tree. */
export async function changeScope(ctx: GateContext, request: ScopeRequest): Promise<ScopeResult> {
  const { root } = request;
  // Paths come relative to the root (`--relative`), and only from under it (`-- .`). Each git is a process to start
  // (in its sandbox, tens of ms), so one diff says it all: each file's status (`--raw`), whether it is binary
  // (`--numstat`), NUL-separated, then after an empty field the patch with the lines each file adds. The patch
  // carries each changed file whole (its context unbounded), so the dead-exports check reads the files as they were
  // from it instead of from one more git; a change too large for that is read again with no context.
  const diffOf = (revisions: readonly string[], context = WHOLE_FILE) =>
    git(
      ctx,
      root,
      [
        ...["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--relative", "-M"],
        ...["--raw", "--numstat", "-p", `-U${context}`, "-z", ...revisions, "--", "."],
      ],
      PATCH_BYTES,
    );
  // The staged change names no base (git diff --cached compares the index with HEAD, or with nothing before the first
  // commit), so its diff runs beside the work tree's check instead of after it.
  const staged = request.mode === "staged" ? diffOf(["--cached"]) : null;
  staged?.catch(() => {}); // a root that is not a working tree is openWorkTree's to say
  const tree = await openWorkTree(ctx, root);
  const base = tree.head ?? EMPTY_TREE;
  let revisions: string[];
  if (request.mode === "range") {
    await checkRevisions(ctx, root, request.revisions ?? []);
    revisions = ["--end-of-options", ...request.revisions!];
  } else {
    revisions = [base];
  }
  const [whole, status] = await Promise.all([
    staged ?? diffOf(revisions),
    request.mode === "working"
      ? git(ctx, root, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."])
      : null,
  ]);
  for (const result of [whole, status]) {
    if (result && result.exitCode !== 0) {
      throw new WardenError("tool_failed", problem("git failed", firstLine(result.stderr)));
    }
  }
  const diff = whole.stdoutTruncated ? await diffOf(request.mode === "staged" ? ["--cached"] : revisions, 0) : whole;
  if (diff.exitCode !== 0) throw new WardenError("tool_failed", problem("git failed", firstLine(diff.stderr)));
  const patchAt = diff.stdout.indexOf("\0\0");

  const files = new Map<string, { -readonly [K in keyof ChangedFile]: ChangedFile[K] }>();
  const fields = (patchAt === -1 ? diff.stdout : diff.stdout.slice(0, patchAt + 1)).split("\0");
  let i = 0;
  // A raw entry is `:<modes> <ids> <status>`, then its path, or its old and new path for a rename or copy.
  for (; i < fields.length - 1 && fields[i].startsWith(":");) {
    const code = fields[i++].split(" ").at(-1)!;
    // A file both sides changed is, for the checks, a modified file.
    const found = diffStatus(code);
    const status = found === "unmerged" ? "modified" : found;
    const oldPath = status === "renamed" || status === "copied" ? fields[i++] : undefined;
    const path = fields[i++];
    files.set(path, { path, status, ...(oldPath === undefined ? {} : { oldPath }), addedLines: [], binary: false });
  }
  // Then a numstat entry per file: `-` counts for a binary one.
  for (; i < fields.length - 1;) {
    const [added, , path] = fields[i++].split("\t");
    // A rename has an empty path here, then the old and the new path.
    const target = path === "" ? (i += 2, fields[i - 1]) : path;
    const file = files.get(target);
    if (file) file.binary = added === "-";
  }
  for (const [path, lines] of addedLines(patchAt === -1 ? "" : diff.stdout.slice(patchAt + 2))) {
    const file = files.get(path);
    if (file && !file.binary) file.addedLines = lines;
  }

  const unread: string[] = [];
  if (status) {
    // Untracked files are wholly added. Their paths are relative to the repository's top.
    for (const entry of status.stdout.split("\0")) {
      if (!entry.startsWith("?? ")) continue;
      const full = entry.slice(3);
      const path = full.startsWith(tree.prefix) ? full.slice(tree.prefix.length) : full;
      files.set(path, await untracked(ctx, root, path, unread));
    }
  }

  const all = [...files.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const keep = pathFilter(request);
  const kept = all.filter((f) => keep(f.path));
  return {
    scope: {
      root,
      mode: request.mode,
      range: request.mode === "range" ? request.revisions!.join(" ") : null,
      files: kept,
    },
    filesBeforeFilters: all.length,
    truncated: diff.stdoutTruncated ||
      (status?.stdoutTruncated ?? false),
    unread,
    rootPath: `${tree.top}/${tree.prefix}`,
    base: request.mode === "range" ? await rangeBase(ctx, root, request.revisions!) : base,
    before: diff === whole && patchAt !== -1 ? filesBefore(diff.stdout.slice(patchAt + 2)) : new Map(),
  };
}

/** The "before" side of a range: the left ref, or for `a...b` where b's history left a (their merge base). */
async function rangeBase(ctx: GateContext, root: string, revisions: readonly string[]): Promise<string> {
  const [first] = revisions;
  if (revisions.length === 1 && first.includes("...")) {
    const [left, right] = first.split("...");
    const found = await git(ctx, root, ["merge-base", "--end-of-options", left || "HEAD", right || "HEAD"]);
    if (found.exitCode === 0) return found.stdout.trim();
    return left || "HEAD";
  }
  if (revisions.length === 1 && first.includes("..")) return first.split("..")[0] || "HEAD";
  return first;
}

/**
 * Reads root-relative files as they were at `base`: each one's text, or null where it did not exist there. All of them
 * through one `git cat-file --batch` (one process, where a `git show` each cost a process per file of the change); a
 * name git's batch input cannot carry (a line break in it) or an answer that cannot be split by its byte sizes (text
 * that is not UTF-8) is read alone with `git show`. `./` makes git take the path relative to the root, which may be
 * below the repository's top.
 */
export function baseReader(
  ctx: GateContext,
  root: string,
  base: string,
  known: ReadonlyMap<string, string> = new Map(),
): BaseReader {
  const showOne = async (path: string): Promise<string | null> => {
    // `cat-file blob`, not `show`: a directory there is no file (show would list it).
    const shown = await git(ctx, root, ["cat-file", "blob", `${base}:./${path}`]);
    return shown.exitCode === 0 ? shown.stdout : null;
  };
  return async (paths) => {
    const texts = new Map<string, string | null>();
    for (const path of paths) if (known.has(path)) texts.set(path, known.get(path)!);
    const batch = [...new Set(paths)].filter((path) => !texts.has(path) && !/[\r\n]/.test(path));
    if (batch.length > 0) {
      const input = batch.map((path) => `${base}:./${path}\n`).join("");
      const shown = await git(ctx, root, ["cat-file", "--batch"], BATCH_BYTES, input);
      if (shown.exitCode === 0) splitBatch(shown.stdout, batch, texts);
    }
    for (const path of paths) if (!texts.has(path)) texts.set(path, await showOne(path));
    return texts;
  };
}

/** Reads files as they were before the change: each one's text, or null where it did not exist. */
export type BaseReader = (paths: readonly string[]) => Promise<ReadonlyMap<string, string | null>>;

/**
 * Splits `git cat-file --batch`'s answer to `names` into `texts`, as far as it can be trusted: each object is its
 * header (`<oid> <type> <bytes>` or `<name> missing`), then that many bytes and a line break. The answer reaches warden
 * decoded as UTF-8, so sizes are counted back in UTF-8 bytes; from an object whose content shows bytes that were not
 * UTF-8 (a replacement character: a directory's tree object, a Latin-1 file), or that does not end where its size
 * says, the rest is left out (and read one by one).
 */
export function splitBatch(answer: string, names: readonly string[], texts: Map<string, string | null>): void {
  let at = 0;
  for (const name of names) {
    const eol = answer.indexOf("\n", at);
    if (eol === -1) return;
    const header = answer.slice(at, eol);
    if (/ (?:missing|ambiguous)$/.test(header)) {
      texts.set(name, null);
      at = eol + 1;
      continue;
    }
    const found = /^[0-9a-f]{40,64} ([a-z]+) (\d+)$/.exec(header);
    if (!found) return;
    const size = Number(found[2]);
    let end = eol + 1;
    let bytes = 0;
    while (bytes < size && end < answer.length) {
      const code = answer.codePointAt(end)!;
      bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
      end += code > 0xffff ? 2 : 1;
    }
    const text = answer.slice(eol + 1, end);
    if (bytes !== size || answer[end] !== "\n" || text.includes("\uFFFD")) return;
    // A name that is a directory there (a tree) was no file.
    texts.set(name, found[1] === "blob" ? text : null);
    at = end + 1;
  }
}

/** An untracked file: every line added, or binary (a NUL in its first 8 KB), or unread (too large) with why. */
async function untracked(ctx: GateContext, root: string, path: string, unread: string[]): Promise<ChangedFile> {
  const file = { path, status: "untracked" as const, addedLines: [], binary: false };
  let bytes: Uint8Array;
  try {
    bytes = await ctx.fs.readBytes(root, path, { maxBytes: UNTRACKED_BYTES });
  } catch (error) {
    unread.push(`${path}: ${(error as Error).message}`);
    return file;
  }
  if (bytes.subarray(0, 8192).includes(0)) return { ...file, binary: true };
  const lines = new TextDecoder().decode(bytes).split("\n");
  if (lines.at(-1) === "") lines.pop();
  return { ...file, addedLines: lines.map((text, i) => ({ line: i + 1, text: text.replace(/\r$/, "") })) };
}

/**
 * The added lines of each file of a `-U0` patch, numbered in the new file, from each hunk's header
 * (`@@ -a,b +c,d @@`); a file is named by its `+++ b/<path>` line (C-quoted when git had to quote it).
 */
export function addedLines(patch: string): Map<string, { line: number; text: string }[]> {
  const out = new Map<string, { line: number; text: string }[]>();
  let current: { line: number; text: string }[] | null = null;
  let next = 0;
  let inHunk = false;
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      current = null;
      inHunk = false;
    } else if (!inHunk && line.startsWith("+++ ")) {
      const name = headerPath(line);
      current = name.startsWith("b/") ? [] : null;
      if (current) out.set(name.slice(2), current);
    } else if (line.startsWith("@@ ")) {
      const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      inHunk = hunk !== null;
      next = hunk ? Number(hunk[1]) : 0;
    } else if (inHunk && current && line.startsWith("+")) {
      current.push({ line: next++, text: line.slice(1).replace(/\r$/, "") });
    } else if (inHunk && line.startsWith(" ")) {
      next++;
    }
  }
  return out;
}

/**
 * The files as they were before the change, from a patch with unbounded context, by their old paths: a file's one hunk
 * then starts at its first line and holds every line it had (context and removed), which is checked against the
 * hunk's own count. A file with no hunk (a pure rename, a mode change), more than one, text that was not UTF-8 or a
 * count that does not match is left out, to be read from git.
 */
export function filesBefore(patch: string): Map<string, string> {
  const out = new Map<string, string>();
  let name: string | null = null;
  let lines: string[] = [];
  let expected = -1;
  let hunks = 0;
  let endsWithoutBreak = false;
  let last = "";
  const close = () => {
    if (name !== null && hunks === 1 && lines.length === expected) {
      const text = lines.join("\n") + (lines.length > 0 && !endsWithoutBreak ? "\n" : "");
      if (!text.includes("\uFFFD")) out.set(name, text);
    }
    name = null;
  };
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      close();
      lines = [];
      hunks = 0;
      expected = -1;
      endsWithoutBreak = false;
    } else if (hunks === 0 && line.startsWith("--- ")) {
      const old = headerPath(line);
      name = old.startsWith("a/") ? old.slice(2) : null;
    } else if (line.startsWith("@@ ")) {
      const hunk = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@/.exec(line);
      hunks++;
      expected = hunk && (hunk[1] === "1" || hunk[2] === "0") ? Number(hunk[2] ?? 1) : -2;
    } else if (hunks > 0 && (line.startsWith(" ") || line.startsWith("-"))) {
      lines.push(line.slice(1));
      last = line[0];
      continue;
    } else if (hunks > 0 && line.startsWith("\\")) {
      // "\ No newline at end of file" is about the line before it: the old file's last when that was context or removed.
      if (last === " " || last === "-") endsWithoutBreak = true;
    }
    if (line.startsWith("+")) last = "+";
  }
  close();
  return out;
}

/** The path of a `--- ` or `+++ ` line: git ends a name holding a space with a tab there, which is no part of it. */
function headerPath(line: string): string {
  return unquote(line.slice(4).replace(/\t$/, ""));
}

/** A path as git prints it in a patch header: C-quoted (`"b/t\tab"`) when it holds special characters. */
function unquote(text: string): string {
  if (!text.startsWith('"') || !text.endsWith('"')) return text;
  const bytes: number[] = [];
  const body = text.slice(1, -1);
  const escapes: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, "\\": 92 };
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "\\" && /^[0-7]{3}$/.test(body.slice(i + 1, i + 4))) {
      bytes.push(parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
    } else if (body[i] === "\\" && escapes[body[i + 1]] !== undefined) {
      bytes.push(escapes[body[++i]]);
    } else {
      bytes.push(...new TextEncoder().encode(body[i]));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Whether a root-relative path is kept by the request's file, dir and exclude globs. */
export function pathFilter(request: Pick<ScopeRequest, "file" | "dir" | "exclude">): (path: string) => boolean {
  const matcher = (glob: string) => {
    const re = globToRegExp(glob);
    // A glob without a slash names a file or directory anywhere, as in .gitignore.
    return glob.replace(/\/+$/, "").includes("/")
      ? (p: string) => re.test(p)
      : (p: string) => re.test(p.slice(p.lastIndexOf("/") + 1));
  };
  /** True when the path or one of its directories matches. */
  const underOne = (tests: ((p: string) => boolean)[]) => (path: string) => {
    const parts = path.split("/");
    for (let i = parts.length; i > 0; i--) if (tests.some((test) => test(parts.slice(0, i).join("/")))) return true;
    return false;
  };
  const files = (request.file ?? []).map(matcher);
  const dirs = (request.dir ?? []).map((glob) => {
    // `.` is the root itself: every file is under it.
    if (/^\.?\/*$/.test(glob)) return () => true;
    const re = globToRegExp(glob);
    return (p: string) => re.test(p);
  });
  const excluded = underOne((request.exclude ?? []).map(matcher));
  const inDir = underOne(dirs);
  return (path) =>
    (files.length === 0 || files.some((test) => test(path))) &&
    (dirs.length === 0 || inDir(path.slice(0, Math.max(0, path.lastIndexOf("/"))) || "")) &&
    !excluded(path);
}
