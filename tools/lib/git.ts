// git for gate tools: run through ctx.spawn with switches that keep git to
// itself, and the checks every tool that reads a working tree starts with.
// Shared by change_summary and run_checks.
import { problem, WardenError } from "../../core/errors.ts";
import type { SpawnResult } from "../../core/doors/spawn.ts";
import type { GateContext } from "../../core/tool.ts";

/** The empty tree: what a repository without commits is compared to. */
export const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/**
 * git reads the repository's own config, which can name programs to run
 * (fsmonitor, external diff, textconv); these switches keep git to itself.
 */
const HERMETIC = ["-c", "core.fsmonitor=false", "-c", "core.quotepath=off", "-c", "color.ui=never"];

/** What the first letter of a `git diff --name-status` line says of a file. */
export const DIFF_STATUS = Object.freeze(
  {
    M: "modified",
    A: "added",
    D: "deleted",
    R: "renamed",
    C: "copied",
    T: "type-changed",
    U: "unmerged",
  } as const,
);
export type DiffStatus = (typeof DIFF_STATUS)[keyof typeof DIFF_STATUS];

/** The status of a `--name-status` code; an unknown letter reads as modified. */
export function diffStatus(code: string): DiffStatus {
  return (DIFF_STATUS as Record<string, DiffStatus>)[code[0]] ?? "modified";
}

/** A ref or commit as an argument: never an option (`--output=…`), never spaces. */
export const REF_PATTERN = /^[^-\s][^\s]*$/;

/** Runs git in `root` with the hermetic switches and an environment that never prompts or locks. */
export async function git(
  ctx: GateContext,
  root: string,
  args: readonly string[],
  maxOutputBytes = 8 * 1024 * 1024,
  stdin?: string,
): Promise<SpawnResult> {
  return await ctx.spawn(["git", ...HERMETIC, ...args], {
    root,
    env: { GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0", GIT_CONFIG_NOSYSTEM: "1" },
    maxOutputBytes,
    ...(stdin === undefined ? {} : { stdin }),
  });
}

/** The first line of a program's message, for an error. */
export function firstLine(text: string): string {
  return text.trim().split("\n")[0] ?? "";
}

/** A root that is a git working tree: where it sits in the repository, and its HEAD commit (null before the first). */
export interface WorkTree {
  /** The root's path from the repository's top, `/`-terminated, or "" at the top. */
  readonly prefix: string;
  /** The repository's top, as git names it (a host path: never shown to a caller). */
  readonly top: string;
  readonly head: string | null;
}

/** Checks that `root` is in a git working tree; throws `not_found` naming what git said when it is not. */
export async function openWorkTree(ctx: GateContext, root: string): Promise<WorkTree> {
  // One git for the three: before the first commit HEAD does not resolve, so git fails after printing the rest.
  const found = await git(ctx, root, [
    "rev-parse",
    "--is-inside-work-tree",
    "--show-prefix",
    "--show-toplevel",
    "HEAD^{commit}",
  ]);
  const [inside, prefix = "", top = "", head = ""] = found.stdout.split("\n");
  if (inside !== "true") {
    throw new WardenError(
      "not_found",
      problem(
        `Root "${root}" is not a git working tree`,
        `git says: ${
          firstLine(found.stderr) || `it is inside the repository's .git directory or a bare repository (${inside})`
        }`,
      ),
    );
  }
  return { prefix, top, head: found.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(head) ? head : null };
}

/** The commit `ref` names, or null when git knows no such commit. */
export async function resolveCommit(ctx: GateContext, root: string, ref: string): Promise<string | null> {
  const found = await git(ctx, root, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`]);
  return found.exitCode === 0 ? found.stdout.trim() : null;
}
