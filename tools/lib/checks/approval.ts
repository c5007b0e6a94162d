// Runs that must not happen on an agent's say-so (core/governance/approvals.ts): which groups need an approved plan,
// what a plan binds to in the repository, and the check a run makes before it starts, whether it was called
// directly (refused, with the way to ask) or submitted as an approved plan (run only if it is that plan's, on the
// repository the plan was approved for).
import { type PlanState, stateMoved } from "../../../core/governance/approvals.ts";
import { problem, WardenError } from "../../../core/errors.ts";
import { sha256Hex } from "../../../core/sha256.ts";
import type { GateContext } from "../../../core/tool.ts";
import { canonicalJson } from "../../../core/canonical_json.ts";
import { firstLine, git, openWorkTree } from "../git.ts";
import type { RepoManifest } from "./manifest.ts";
import { type GroupName, GROUPS, type RunRequest } from "./request.ts";
import { REPO_MANIFEST } from "./manifest.ts";

/** The most bytes of working-tree changes a plan binds to: a larger change is committed (or stashed) first. */
const MAX_CHANGE_BYTES = 16 * 1024 * 1024;

/**
 * What a run in `root` depends on now: HEAD and its tree, the working tree's and the index's changes against HEAD (the
 * whole repository's: tracked files' binary diffs, untracked files' names and contents, not ignored ones), and the
 * check manifest's bytes. Throws when `root` is not a repository with a commit, when git is told not to look at some
 * files (their changes would be in no diff), or when its changes are too large to bind.
 */
export async function readPlanState(ctx: GateContext, root: string): Promise<PlanState> {
  const tree = await openWorkTree(ctx, root);
  if (tree.head === null) {
    throw new WardenError(
      "invalid_arguments",
      problem(`Root "${root}" has no commit yet`, "a plan is bound to a commit", "commit first, then request again"),
    );
  }
  const diffArgs = ["--binary", "--full-index", "--no-ext-diff", "--no-textconv", "--no-renames", "--", ":/"];
  const [treeId, diff, staged, flagged, untracked, manifest] = await Promise.all([
    git(ctx, root, ["rev-parse", "--verify", `${tree.head}^{tree}`]),
    // The working tree against HEAD, and the index against HEAD: which changes are staged decides what a run reads.
    git(ctx, root, ["diff", "HEAD", ...diffArgs], MAX_CHANGE_BYTES),
    git(ctx, root, ["diff", "--cached", ...diffArgs], MAX_CHANGE_BYTES),
    // Files git is told not to look at (assume-unchanged, skip-worktree): their changes are in no diff.
    git(ctx, root, ["ls-files", "-v", "-z", "--", ":/"], MAX_CHANGE_BYTES),
    git(ctx, root, ["ls-files", "--others", "--exclude-standard", "-z", "--", ":/"], MAX_CHANGE_BYTES),
    ctx.fs.readBytes(root, REPO_MANIFEST, { maxBytes: 1024 * 1024 }).catch((error) => {
      if (error?.code === "not_found") return null;
      throw error;
    }),
  ]);
  const failed = [treeId, diff, staged, flagged, untracked].find((run) => run.exitCode !== 0);
  if (failed) {
    throw new WardenError(
      "tool_failed",
      problem(`Cannot read root "${root}"'s state`, `git says: ${firstLine(failed.stderr)}`),
    );
  }
  const tooLarge = (what: string) =>
    new WardenError(
      "invalid_arguments",
      problem(
        `Root "${root}"'s ${what} are too large to bind a plan to`,
        `more than ${MAX_CHANGE_BYTES / 1024 / 1024} MiB`,
        "commit or stash them, then request again",
      ),
    );
  if ([diff, staged, flagged, untracked].some((run) => run.stdoutTruncated)) throw tooLarge("uncommitted changes");
  // `ls-files -v` tags an assume-unchanged file with a lower-case letter, a skip-worktree one with S.
  const hidden = flagged.stdout.split("\0").filter((line) => /^(?:[a-z]|S) /.test(line)).map((line) => line.slice(2));
  if (hidden.length > 0) {
    throw new WardenError(
      "invalid_arguments",
      problem(
        `Root "${root}" has files git is told not to look at (${hidden.slice(0, 3).join(", ")}${
          hidden.length > 3 ? `, and ${hidden.length - 3} more` : ""
        })`,
        "a plan cannot see their changes (assume-unchanged or skip-worktree)",
        "clear the flag (git update-index --no-assume-unchanged / --no-skip-worktree <file>), then request again",
      ),
    );
  }
  const names = untracked.stdout.split("\0").filter((name) => name !== "");
  const broken = names.find((name) => name.includes("\n"));
  if (broken !== undefined) {
    throw new WardenError(
      "invalid_arguments",
      problem(
        `Root "${root}" has an untracked file whose name holds a line break (${JSON.stringify(broken)})`,
        "a plan names untracked files one per line",
        "rename, remove or ignore it, then request again",
      ),
    );
  }
  // Untracked files' contents by git's own object ids, computed without writing them to the repository.
  const ids = names.length === 0
    ? { exitCode: 0, stdout: "", stderr: "", stdoutTruncated: false }
    : await git(ctx, root, ["hash-object", "--no-filters", "--stdin-paths"], MAX_CHANGE_BYTES, names.join("\n") + "\n");
  if (ids.exitCode !== 0) {
    throw new WardenError(
      "tool_failed",
      problem(`Cannot read root "${root}"'s untracked files`, `git says: ${firstLine(ids.stderr)}`),
    );
  }
  if (ids.stdoutTruncated) throw tooLarge("untracked files");
  return {
    head: tree.head,
    tree: treeId.stdout.trim(),
    worktree: "sha256:" +
      sha256Hex(
        canonicalJson({ diff: diff.stdout, staged: staged.stdout, untracked: names, ids: ids.stdout.split("\n") }),
      ),
    manifest_sha256: manifest === null ? null : "sha256:" + sha256Hex(manifest),
  };
}

/**
 * Why a run of `group` needs an approved plan, or [] when it does not: the operator's `--require-approval` names the
 * group (or, for `default`, a group it takes checks from); or names `unisolated` and `unisolated` lists checks of the
 * group that would run the repository's code here without isolation, with the host's network (the operator's
 * `--allow-unisolated`, where no isolation is in force); or the repository's trusted manifest marks one of the group's
 * checks `approval: "required"`.
 */
export function approvalReasons(
  group: GroupName,
  required: readonly string[],
  manifest: RepoManifest | null,
  unisolated: readonly string[],
): string[] {
  const reasons: string[] = [];
  const groups = group === "default" ? GROUPS : [group];
  const named = groups.filter((name) => required.includes(name));
  if (named.length > 0) {
    reasons.push(`the operator requires approval for group${named.length > 1 ? "s" : ""} ${named.join(", ")}`);
  }
  const exposed = unisolated.filter((name) => groups.some((g) => name.startsWith(`${g}/`)));
  if (required.includes("unisolated") && exposed.length > 0) {
    reasons.push(
      `the operator requires approval for runs of the repository's code without isolation, and ${
        exposed.join(", ")
      } would run so here (--allow-unisolated, no isolation in force: with the host's network and files)`,
    );
  }
  if ((group === "repo" || group === "default") && manifest && manifest.approvalRequired.length > 0) {
    reasons.push(`the repository's manifest marks ${manifest.approvalRequired.join(", ")} approval: required`);
  }
  return reasons;
}

/** A run's filters as a plan holds them: its arguments less the project, the group (and paging). */
function planFilters(request: RunRequest): Record<string, unknown> {
  const { project_id: _project, group: _group, limit: _limit, cursor: _cursor, ...filters } = request as
    & RunRequest
    & { limit?: unknown; cursor?: unknown };
  return filters;
}

/**
 * Refuses a run that needs an approved plan and is not one (`approval_required`, saying how to ask), and a run that
 * is one but not of this request or this repository state (`approval_refused`, stale).
 */
export async function checkApproval(
  ctx: GateContext,
  request: RunRequest,
  group: GroupName,
  manifest: RepoManifest | null,
): Promise<void> {
  const approved = ctx.approval;
  const root = request.project_id;
  if (approved === null) {
    // Checks the operator lets run the repository's code unisolated run so only where no isolation is in force.
    const unisolated = ctx.host.requireApproval.includes("unisolated") &&
        (await ctx.host.gateIsolation()).kind !== "bubblewrap"
      ? ctx.host.allowUnisolated
      : [];
    const reasons = approvalReasons(group, ctx.host.requireApproval, manifest, unisolated);
    if (reasons.length === 0) return;
    throw new WardenError(
      "approval_required",
      problem(
        `run_checks group "${group}" on project "${root}" needs an approved plan`,
        reasons.join("; "),
        "ask with checks_request (same arguments), have an approver approve its plan_digest (checks_approve), then checks_submit it; nothing was run",
      ),
    );
  }
  const { plan } = approved;
  if (
    plan.project_id !== root || plan.group !== group ||
    canonicalJson(plan.filters) !== canonicalJson(planFilters(request))
  ) {
    throw new WardenError(
      "approval_refused",
      problem(`Run refused for request ${plan.request_id}`, "its arguments are not the approved plan's"),
    );
  }
  const moved = stateMoved(plan, await readPlanState(ctx, root));
  if (moved !== null) {
    throw new WardenError(
      "approval_refused",
      problem(
        `Run refused for request ${plan.request_id}`,
        `the plan is stale: ${moved} since it was approved; nothing was run`,
        "request again, and have the new plan approved",
      ),
    );
  }
}
