// One run_checks run, callable from the tool and from anything that runs it
// later (a job): the request checked, a repository manifest refused, the
// scope read from git, each check of the group run in turn, and the gate
// decided. A tripped gate is an answer; only a run that cannot start (not a
// repository, a bad range, a manifest refused) throws.
import { messageOf, problem, received, WardenError } from "../../../core/errors.ts";
import type { GateContext } from "../../../core/tool.ts";
import { git } from "../git.ts";
import { noRepoChecks, planGroup } from "./groups.ts";
import type { GroupName, RunRequest, RunResult } from "./request.ts";
import { pathMapper, runProgramCheck } from "./program.ts";
import { baseReader, changeScope, checkScope, type ScopeRequest } from "./scope.ts";
import { hygieneChecks } from "./hygiene/mod.ts";
import { type CheckLog, scanRun } from "./signals.ts";
import { type RepoManifest, repoManifest } from "./manifest.ts";
import { checkApproval, readPlanState } from "./approval.ts";
import { type PlanState, stateMoved } from "../../../core/governance/approvals.ts";

/** A state no repository has: what a plan is compared with when the repository cannot be read any more. */
const NO_STATE: PlanState = { head: "", tree: "", worktree: "", manifest_sha256: null };
import {
  atLeast,
  type BuiltinCheck,
  type ChangeScope,
  type CheckOutcome,
  type Finding,
  SEVERITIES,
  type Severity,
} from "./types.ts";

/** What a caller other than the tool may change about a run. */
export interface RunOptions {
  /** The checks of the `hygiene` group (default: warden's own, HYGIENE_CHECKS). */
  readonly hygiene?: readonly BuiltinCheck[];
  /**
   * Whether to write the signals' ledger rows (default true). A later page of the same answer (a cursor, which is
   * honoured only for that answer) writes none: the call of its first page wrote them.
   */
  readonly recordSignals?: boolean;
}

/** What a request asks for, checked against the roots and the repository's manifest. */
interface PreparedRun {
  readonly root: string;
  readonly group: GroupName;
  readonly scope: Omit<ScopeRequest, "root">;
  readonly manifest: RepoManifest | null;
}

/**
 * Checks what a run needs before it reads the change: scope or diff, the repository's manifest (refused
 * unless trusted), and the group (`repo` needs a manifest). Throws the WardenError the run would.
 */
async function prepareRun(request: RunRequest, ctx: GateContext): Promise<PreparedRun> {
  const root = request.project_id;
  if (request.scope !== undefined && request.diff !== undefined) {
    throw new WardenError(
      "invalid_arguments",
      problem(
        'Invalid arguments "scope" and "diff"',
        `both given (${received(request.scope)} and ${received(request.diff)})`,
        "give scope for the staged change or the working tree, or diff for a range, not both",
      ),
    );
  }
  const group = request.group ?? "default";
  // A manifest in the root refuses the run unless the operator trusts it; a trusted one's checks are group `repo`.
  const manifest = await repoManifest(ctx, root);
  if (group === "repo" && manifest === null) throw noRepoChecks(root);
  return {
    root,
    group,
    manifest,
    scope: {
      mode: request.diff ? "range" : request.scope ?? "staged",
      revisions: request.diff,
      file: request.file,
      dir: request.dir,
      exclude: request.exclude,
    },
  };
}

/**
 * Refuses now what a run would refuse before it reads the change (a refused manifest, a root that is
 * not a git working tree, a range whose refs do not exist): run_checks_start asks it, so that a request that cannot
 * run is an error at start, never a job that fails later.
 */
export async function precheckRun(request: RunRequest, ctx: GateContext): Promise<void> {
  const prepared = await prepareRun(request, ctx);
  await checkScope(ctx, { root: prepared.root, ...prepared.scope });
  // Last, so that checks_request (which asks this to learn whether a plan is needed) is refused everything else first.
  await checkApproval(ctx, request, prepared.group, prepared.manifest);
}

/** The checks of the request over its change, and the gate. Throws a WardenError when the run cannot start. */
export async function runChecks(
  request: RunRequest,
  ctx: GateContext,
  signal: AbortSignal = ctx.signal,
  options: RunOptions = {},
): Promise<RunResult> {
  const started = performance.now();
  const { root, group, manifest, scope: asked } = await prepareRun(request, ctx);
  // A group that must not run on an agent's say-so runs only as the approved plan it was submitted as.
  await checkApproval(ctx, request, group, manifest);
  const failOn = request.fail_on ?? "high";
  const minSeverity = request.min_severity ?? "info";
  const scoped = await changeScope(ctx, { root, ...asked });
  const { scope } = scoped;
  const hidePath = (text: string) =>
    text.replaceAll(scoped.rootPath, "").replaceAll(scoped.rootPath.replace(/\/$/, ""), ".");
  // warden's own checks read the files as they were before the change through git (exports the change left dead).
  const hygiene = options.hygiene ?? hygieneChecks({}, { readBase: baseReader(ctx, root, scoped.base, scoped.before) });
  const plan = await planGroup(group, ctx, root, hygiene, manifest?.checks ?? null);
  const isolation = await ctx.host.gateIsolation();

  const trips = (severity: Severity) => failOn !== "none" && (failOn === "any" || atLeast(severity, failOn));
  const checks: CheckOutcome[] = [];
  const findings: Finding[] = [];
  const coverageReasons: string[] = [];
  /** Why the run cannot be trusted: each check that applies and gave no verdict. */
  const untrusted: string[] = [];
  /** What the program checks printed, for the detector. */
  const logs: CheckLog[] = [];
  for (const [index, planned] of plan.entries()) {
    if (signal.aborted) throw new WardenError("cancelled", problem("run_checks cancelled", "the call was aborted"));
    const name = "check" in planned ? planned.check.name : planned.name;
    await ctx.progress(index, plan.length, name);
    const began = performance.now();
    /** `blocking`: the check applies and gave no verdict, so the run cannot be trusted. */
    const outcome = (
      status: CheckOutcome["status"],
      reason: string | null,
      found: Finding[],
      exitCode: number | null,
      blocking = false,
    ) => {
      checks.push({
        name,
        status,
        reason,
        findings: found.length,
        durationMs: Math.round(performance.now() - began),
        exitCode,
      });
      findings.push(...found);
      if (blocking || status === "error") untrusted.push(`${name}: ${reason}`);
    };
    if (planned.kind === "not-applicable") {
      outcome("skipped", `does not apply: ${planned.reason}`, [], null);
    } else if (planned.kind === "unavailable") {
      outcome("skipped", planned.reason, [], null, true);
    } else if (
      planned.kind === "program" && planned.check.executesRepoCode && isolation.kind !== "bubblewrap" &&
      !ctx.host.allowUnisolated.includes(name)
    ) {
      outcome(
        "skipped",
        `it runs the repository's own code (${
          planned.check.argv.slice(0, 2).join(" ")
        }), which warden runs only in isolation, and none is in force here (${isolation.detail}); it runs where bubblewrap isolates, or where the operator allows it by name (--allow-unisolated ${name})`,
        [],
        null,
        true,
      );
    } else if (planned.kind === "program") {
      const log: CheckLog = { check: name, stdout: [], stderr: [] };
      logs.push(log);
      const run = await runProgramCheck(
        planned.check,
        scope,
        ctx,
        pathMapper(scoped.rootPath, planned.check.cwd),
        hidePath,
        (stdout, stderr) => (log.stdout.push(stdout), log.stderr.push(stderr)),
      );
      if (planned.check.executesRepoCode && isolation.kind !== "bubblewrap" && run.kind !== "skipped") {
        coverageReasons.push(
          `${name} ran the repository's own code without isolation, by the operator's choice (--allow-unisolated ${name}): ${isolation.detail}`,
        );
      }
      if (run.kind === "ran") {
        outcome(run.findings.some((f) => trips(f.severity)) ? "failed" : "passed", null, run.findings, run.exitCode);
      } else if (run.kind === "skipped") outcome("skipped", run.reason, [], null);
      else outcome("error", run.reason, [], run.exitCode);
    } else {
      try {
        const found = await planned.check.run(scope, ctx);
        outcome(found.some((f) => trips(f.severity)) ? "failed" : "passed", null, found, null);
      } catch (error) {
        outcome("error", hidePath(messageOf(error)), [], null);
      }
    }
  }
  await ctx.progress(plan.length, plan.length, "done");

  const ran = checks.filter((c) => c.status === "passed" || c.status === "failed").length;
  if (ran === 0 && untrusted.length === 0) {
    untrusted.push(`no check of group "${group}" applies to root "${root}" or to its change: nothing was checked`);
  }
  if (scoped.truncated) coverageReasons.push("git's output was cut at its size limit: files or lines may be missing");
  for (const why of scoped.unread) coverageReasons.push(`an untracked file was not read: ${hidePath(why)}`);
  const binary = scope.files.filter((f) => f.binary).length;
  if (binary > 0) coverageReasons.push(`${binary} binary file(s) of the change were not read line by line`);
  if (scope.files.length === 0) {
    coverageReasons.push(
      scoped.filesBeforeFilters > 0
        ? `file/dir/exclude left none of the change's ${scoped.filesBeforeFilters} file(s): only whole-project checks looked at anything`
        : `the ${
          scope.mode === "range" ? "range" : scope.mode === "staged" ? "staged change" : "working tree's change"
        } is empty: only whole-project checks looked at anything${
          scope.mode === "staged" ? " (stage the change, or pass scope: working)" : ""
        }`,
    );
  }
  if (checks.some((c, i) => plan[i].kind === "program" && (c.status === "passed" || c.status === "failed"))) {
    const why = await workTreeDiffers(ctx, root, scope.mode);
    if (why) coverageReasons.push(why);
  }
  // An approved run ran on the repository its plan names only if that is still what it is: a change while it ran
  // (files the checks read, or code they ran) is not what the approver approved.
  if (ctx.approval !== null) {
    const moved = stateMoved(ctx.approval.plan, await readPlanState(ctx, root).catch(() => null) ?? NO_STATE);
    if (moved !== null) {
      untrusted.push(
        `the repository changed while this approved run ran (${moved}): it is not the approved plan's run`,
      );
    }
  }
  coverageReasons.push(...untrusted);

  const severities = Object.fromEntries(SEVERITIES.map((s) => [s, findings.filter((f) => f.severity === s).length]));
  const tripping = findings.filter((f) => trips(f.severity));
  const gate = untrusted.length > 0 ? "ERROR" : tripping.length > 0 ? "FAIL" : "PASS";
  const shown = findings.filter((f) => atLeast(f.severity, minSeverity)).sort(bySeverity);
  const count = (status: CheckOutcome["status"]) => checks.filter((c) => c.status === status).length;
  // After the gate is decided: what the detector finds changes nothing above.
  const content = await scanRun(
    ctx,
    request,
    shown,
    logs,
    { checks, coverage: coverageReasons },
    options.recordSignals ?? true,
  );
  return {
    gate,
    summary: summarise(gate, {
      ran,
      tripping,
      untrusted,
      failOn,
      findings: findings.length,
      scopeFiles: scope.files.length,
      reduced: coverageReasons.length > 0,
    }),
    passed: count("passed"),
    failed: count("failed"),
    skipped: count("skipped"),
    errors: count("error"),
    checks,
    findings: shown,
    severities,
    reducedCoverage: coverageReasons.length > 0,
    coverageReasons,
    scope: {
      project_id: root,
      mode: scope.mode,
      range: scope.range,
      files: scope.files.length,
      filesBeforeFilters: scoped.filesBeforeFilters,
    },
    group,
    manifest: manifest === null ? null : { digest: manifest.digest, signer: manifest.signer },
    failOn,
    minSeverity,
    ...content,
    durationMs: Math.round(performance.now() - started),
  };
}

/**
 * Programs read the files as they are in the working tree, which warden never changes (no stash, no checkout): when
 * that is not the change asked about, their verdict is on another tree, and the answer says so.
 */
async function workTreeDiffers(ctx: GateContext, root: string, mode: ChangeScope["mode"]): Promise<string | null> {
  if (mode === "working") return null;
  if (mode === "range") {
    return "program checks (tsc, linters) read the working tree, not the range's commits: check out the range's end for their verdict on it";
  }
  const unstaged = await git(ctx, root, ["diff", "--quiet", "--no-ext-diff", "--no-textconv", "--relative", "--", "."]);
  return unstaged.exitCode === 0
    ? null
    : "program checks (tsc, linters) read the working tree, which has changes that are not staged: their verdict is on those too";
}

function bySeverity(a: Finding, b: Finding): number {
  return SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) ||
    (a.file ?? "").localeCompare(b.file ?? "") || (a.line ?? 0) - (b.line ?? 0);
}

/** The verdict in words: PASS says what it rests on, anything else says it is not safe and why. */
function summarise(
  gate: RunResult["gate"],
  facts: {
    ran: number;
    tripping: Finding[];
    untrusted: string[];
    failOn: string;
    findings: number;
    scopeFiles: number;
    reduced: boolean;
  },
): string {
  const threshold = facts.failOn === "any" ? "of any severity" : `at or above ${facts.failOn}`;
  const byCheck = () => {
    const counts = new Map<string, number>();
    for (const f of facts.tripping) counts.set(f.check, (counts.get(f.check) ?? 0) + 1);
    return [...counts].map(([check, n]) => `${check}: ${n}`).join(", ");
  };
  if (gate === "ERROR") {
    return `ERROR: not safe to ship, the run cannot be trusted: ${facts.untrusted.join("; ")}${
      facts.tripping.length > 0 ? `; besides, ${facts.tripping.length} finding(s) ${threshold} (${byCheck()})` : ""
    }.`;
  }
  if (gate === "FAIL") {
    return `FAIL: not safe to ship: ${facts.tripping.length} finding(s) ${threshold} (${byCheck()}).`;
  }
  return `PASS: ${facts.ran} check(s) ran over ${facts.scopeFiles} changed file(s) and found nothing ${
    facts.failOn === "none" ? "that fails the gate (fail_on none)" : threshold
  }${facts.findings > 0 ? `; ${facts.findings} finding(s) below it are listed` : ""}${
    facts.reduced ? "; coverage was reduced (see coverageReasons)" : ""
  }.`;
}
