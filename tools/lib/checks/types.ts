// What run_checks is made of, shared by its parts: the change a run looks at
// (its scope), a finding, what one check reports, and the interface of a
// check warden runs itself. Program checks (tsc, eslint, deno lint) and
// warden's own (hygiene) both end in the same CheckOutcome.
import * as v from "valibot";
import type { GateContext } from "../../../core/tool.ts";

/** Most severe first; `fail_on` and `min_severity` name one of these. */
export const SEVERITIES = ["critical", "high", "medium", "low", "info"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** True when `severity` is at least as severe as `threshold`. */
export function atLeast(severity: Severity, threshold: Severity): boolean {
  return SEVERITIES.indexOf(severity) <= SEVERITIES.indexOf(threshold);
}

export const FindingSchema = v.object({
  /** The check that found it, e.g. `hygiene/secrets` or `typescript/tsc`. */
  check: v.string(),
  /** Root-relative path, or null for a finding about the whole change. */
  file: v.nullable(v.string()),
  /** 1-based, or null when the check names no line. */
  line: v.nullable(v.number()),
  column: v.nullable(v.number()),
  severity: v.picklist(SEVERITIES),
  /** The check's own rule id (`TS2322`, `no-unused-vars`, `aws-access-key`), or null. */
  rule: v.nullable(v.string()),
  message: v.string(),
});
export type Finding = v.InferOutput<typeof FindingSchema>;

/** How one check ended: `error` means its verdict cannot be trusted (it could not run, its output did not parse). */
export const CheckStatus = v.picklist(["passed", "failed", "skipped", "error"]);

export const CheckOutcomeSchema = v.object({
  name: v.string(),
  status: CheckStatus,
  /** Why it was skipped or errored, in words; null when it ran. */
  reason: v.nullable(v.string()),
  findings: v.number(),
  durationMs: v.number(),
  /** A program check's exit code; null for warden's own checks and checks that did not run. */
  exitCode: v.nullable(v.number()),
});
export type CheckOutcome = v.InferOutput<typeof CheckOutcomeSchema>;

/** A file of the change, after the scope's file/dir/exclude filters. */
export interface ChangedFile {
  /** Root-relative, `/`-separated. */
  readonly path: string;
  readonly status: "added" | "modified" | "deleted" | "renamed" | "copied" | "type-changed" | "untracked";
  /** The path before a rename or copy. */
  readonly oldPath?: string;
  /** Lines the change adds, with their 1-based numbers in the new file (none for a deleted or binary file). */
  readonly addedLines: readonly { readonly line: number; readonly text: string }[];
  readonly binary: boolean;
}

/** The change a run looks at. */
export interface ChangeScope {
  /** Root id. */
  readonly root: string;
  /** `staged` (the index against HEAD, the default), `working` (the work tree against HEAD), or a git range. */
  readonly mode: "staged" | "working" | "range";
  /** For `range`: what git diff was given, e.g. `main...HEAD`. */
  readonly range: string | null;
  readonly files: readonly ChangedFile[];
}

/** A check warden runs itself, with no program: it reads the change and the root through the context. */
export interface BuiltinCheck {
  /** `hygiene/<name>`. */
  readonly name: string;
  readonly description: string;
  /** Runs over the scope; throws a WardenError when it cannot give a verdict (the check is then `error`). */
  run(scope: ChangeScope, ctx: GateContext): Promise<Finding[]>;
}
