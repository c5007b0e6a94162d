// A check run by a program, and running it through ctx.spawn. The fields
// follow pre-commit's hook manifest (`id`, `entry` + `args`, `files`/`types_or`,
// `pass_filenames`) and trunk's linter definitions (`success_codes`, `output`,
// `batch`), so that a check written for either reads the same here; warden adds
// `executesRepoCode`, which decides where a check may run at all.
import { messageOf } from "../../../core/errors.ts";
import type { GateContext } from "../../../core/tool.ts";
import { type OutputFormat, parseOutput, type PathMapper } from "./formats.ts";
import type { ChangeScope, Finding, Severity } from "./types.ts";

/** A check run by a program: an argv array, never a shell string. */
export interface ProgramCheck {
  /** pre-commit's `id`: `typescript/tsc`, `lint/eslint`. */
  readonly name: string;
  readonly description: string;
  /** pre-commit's `entry` and `args` in one array: a program warden's run_checks declares, then its arguments. */
  readonly argv: readonly string[];
  /** Root-relative working directory. */
  readonly cwd: string;
  /** pre-commit's `types_or`, as file name endings (`.ts`): the changed files it reads. */
  readonly extensions: readonly string[];
  /** Which changed files it reads, when a glob says so (a repository manifest's `files` and `exclude`) instead of `extensions`. */
  readonly matches?: (path: string) => boolean;
  /** pre-commit's `pass_filenames`: run on the changed files that match (appended to argv), not on the project. */
  readonly passFilenames: boolean;
  /** Most file names per run when they are passed (trunk's `batch`): a long change is several runs. */
  readonly batchSize: number;
  /** trunk's `success_codes`: exit codes that mean the program ran (with findings or none); any other is an error. */
  readonly successCodes: readonly number[];
  /** trunk's `output`: how its stdout is read into findings. */
  readonly output: OutputFormat;
  /** For `pass-fail`: the severity of the one finding a failing exit makes. */
  readonly failSeverity: Severity;
  /** Whether it runs code from the repository (its node_modules, its config files, its tests): then only isolated. */
  readonly executesRepoCode: boolean;
  readonly timeoutMs: number;
}

/** How a program check ended, before the gate's threshold is applied. */
export type ProgramRun =
  | { readonly kind: "ran"; readonly findings: Finding[]; readonly exitCode: number | null }
  | { readonly kind: "skipped"; readonly reason: string }
  | { readonly kind: "error"; readonly reason: string; readonly exitCode: number | null };

const MAX_OUTPUT = 16 * 1024 * 1024;

/** The files of the change a check that takes file names runs on: present, readable as text, of its kinds. */
export function filesFor(check: ProgramCheck, scope: ChangeScope): string[] {
  return scope.files
    .filter((f) =>
      f.status !== "deleted" && !f.binary &&
      (check.matches ? check.matches(f.path) : check.extensions.some((ext) => f.path.endsWith(ext)))
    )
    .map((f) => f.path);
}

/**
 * Runs one program check over the scope: once on the project, or once per batch of the changed files it reads
 * (each passed as `./<path>`, so that a file named `-x.ts` is never read as an option). `seen` gets what each run
 * printed (the run's detector scans it: tools/lib/checks/signals.ts).
 */
export async function runProgramCheck(
  check: ProgramCheck,
  scope: ChangeScope,
  ctx: GateContext,
  toRoot: PathMapper,
  hidePath: (text: string) => string,
  seen?: (stdout: string, stderr: string) => void,
): Promise<ProgramRun> {
  const batches: string[][] = [];
  if (check.passFilenames) {
    const files = filesFor(check, scope);
    if (files.length === 0) {
      return {
        kind: "skipped",
        reason: `no file of the change is one it reads (${
          check.matches ? "its files and exclude globs" : check.extensions.join(", ")
        })`,
      };
    }
    for (let i = 0; i < files.length; i += check.batchSize) {
      batches.push(files.slice(i, i + check.batchSize).map((f) => `./${f}`));
    }
  } else {
    batches.push([]);
  }
  const findings: Finding[] = [];
  let exitCode: number | null = null;
  for (const batch of batches) {
    let result;
    try {
      result = await ctx.spawn([...check.argv, ...batch], {
        root: scope.root,
        cwd: check.cwd,
        timeoutMs: check.timeoutMs,
        maxOutputBytes: MAX_OUTPUT,
        // In a job, its output also goes to the job's report, one log per check, as it comes.
        log: check.name,
      });
    } catch (error) {
      return { kind: "error", reason: `it could not be started: ${hidePath(messageOf(error))}`, exitCode: null };
    }
    seen?.(result.stdout, result.stderr);
    const said = hidePath(result.stderr.trim().split("\n")[0] ?? "").slice(0, 300);
    if (result.timedOut) {
      return {
        kind: "error",
        reason:
          `it was killed after ${result.durationMs} ms, at its time limit (${check.timeoutMs} ms, or what was left of the call: raise --call-timeout)`,
        exitCode: null,
      };
    }
    if (result.exitCode === null) {
      return { kind: "error", reason: `it was killed by ${result.signal ?? "a signal"}`, exitCode: null };
    }
    exitCode = Math.max(exitCode ?? 0, result.exitCode);
    if (check.output === "pass-fail") {
      if (!check.successCodes.includes(result.exitCode)) {
        findings.push({
          check: check.name,
          file: null,
          line: null,
          column: null,
          severity: check.failSeverity,
          rule: null,
          message: `${check.argv[0]} exited with ${result.exitCode}${said ? `: ${said}` : ""}`,
        });
      }
      continue;
    }
    if (!check.successCodes.includes(result.exitCode)) {
      return {
        kind: "error",
        reason: `${check.argv[0]} exited with ${result.exitCode}, which is not one of its success codes (${
          check.successCodes.join(", ")
        })${said ? `: ${said}` : ""}`,
        exitCode: result.exitCode,
      };
    }
    if (result.stdoutTruncated) {
      return {
        kind: "error",
        reason: `its output was cut at ${MAX_OUTPUT} bytes: findings would be missing`,
        exitCode: result.exitCode,
      };
    }
    let found: Finding[];
    try {
      found = parseOutput(check.output, result.stdout, check.name, toRoot);
    } catch (error) {
      return { kind: "error", reason: hidePath(messageOf(error)), exitCode: result.exitCode };
    }
    if (found.length === 0 && result.exitCode !== 0) {
      return {
        kind: "error",
        reason: `${check.argv[0]} exited with ${result.exitCode} but reported nothing${said ? `: ${said}` : ""}`,
        exitCode: result.exitCode,
      };
    }
    for (const f of found) findings.push({ ...f, message: hidePath(f.message) });
  }
  return { kind: "ran", findings, exitCode };
}

/**
 * Turns what a program printed (a path relative to its working directory, an absolute path, a `file:` URI) into a
 * root-relative path; null for a path outside the root. `rootPath` is absolute and `/`-terminated.
 */
export function pathMapper(rootPath: string, cwd: string): PathMapper {
  const base = cwd === "." || cwd === "" ? rootPath : `${rootPath}${cwd.replace(/\/+$/, "")}/`;
  return (printed) => {
    let path = printed;
    if (path.startsWith("file://")) {
      try {
        path = decodeURIComponent(new URL(path).pathname);
      } catch {
        return null;
      }
    }
    const absolute = normalize(path.startsWith("/") ? path : base + path);
    return absolute.startsWith(rootPath) && absolute.length > rootPath.length ? absolute.slice(rootPath.length) : null;
  };
}

/** `/a/./b/../c` → `/a/c`, for absolute `/`-separated paths. */
function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}
