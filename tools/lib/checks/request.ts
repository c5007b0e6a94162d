// What a run_checks run is asked and answers, as schemas: the tool file and
// the catalog need these at startup, the runner (run.ts, with git, the code
// graph and warden's own checks) only when a run starts.
import * as v from "valibot";
import { type HandlerArgs, projectIdInput } from "../../../core/tool.ts";
import { REF_PATTERN } from "../git.ts";
import { CheckOutcomeSchema, FindingSchema, SEVERITIES } from "./types.ts";
import { SIGNAL_OUTPUT } from "./signal_fields.ts";

/** The bundled check groups, and `repo`: the checks of the root's own manifest, when the operator trusts it. */
export const GROUPS = ["default", "typescript", "lint", "hygiene", "repo"] as const;
export type GroupName = (typeof GROUPS)[number];

/** The programs bundled checks run; run_checks declares them as its `capabilities.spawn`. */
export const CHECK_PROGRAMS = ["git", "node", "tsc", "eslint", "deno"] as const;

const GLOBS = (what: string) =>
  v.optional(v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(512))),
    v.maxLength(100),
    v.description(what),
  ));

/** The arguments of a run (run_checks's input, less paging): declarative, so the catalog shows them. */
export const RUN_INPUT = {
  project_id: projectIdInput,
  group: v.optional(v.pipe(
    v.picklist(GROUPS),
    v.description(
      "Which checks: `typescript` (tsc --noEmit for each tsconfig.json), `lint` (eslint where the project has it, deno lint for deno projects), `hygiene` (warden's own checks), `repo` (the checks of the root's .warden/checks.json, run only when an allowed signer signed it and the operator pinned it) or `default` (all that apply, a trusted manifest's too; the default).",
    ),
  )),
  scope: v.optional(v.pipe(
    v.picklist(["staged", "working"]),
    v.description(
      "The change to check: `staged` (the index against HEAD; the default) or `working` (the work tree against HEAD, untracked files included). Give `diff` instead for a range.",
    ),
  )),
  diff: v.optional(v.pipe(
    v.array(v.pipe(
      v.string(),
      v.regex(REF_PATTERN, "a ref, a commit or a range, not an option"),
      v.maxLength(256),
    )),
    v.minLength(1),
    v.maxLength(2),
    v.description('A range to check instead of `scope`, as git diff takes it: ["main...HEAD"], or two commits.'),
  )),
  file: GLOBS("Only files matching one of these globs (`src/**/*.ts`; a glob without `/` matches the file name)."),
  dir: GLOBS("Only files under one of these directories (root-relative, globs allowed)."),
  exclude: GLOBS("Leave out files matching these globs or under these directories."),
  fail_on: v.optional(v.pipe(
    v.picklist([...SEVERITIES, "any", "none"]),
    v.description(
      "The gate fails when a finding is at least this severe (default `high`); `any` fails on any finding, `none` never fails on findings (an error still makes it ERROR).",
    ),
  )),
  min_severity: v.optional(v.pipe(
    v.picklist(SEVERITIES),
    v.description("Findings below this severity are not returned (default `info`: all); they still count for fail_on."),
  )),
};
const RunRequestSchema = v.strictObject(RUN_INPUT);
/** A run's arguments as the host hands them over: its project settled (see projectIdInput). */
export type RunRequest = HandlerArgs<typeof RunRequestSchema>;

/** The answer of a run, before paging. */
export const RUN_OUTPUT = {
  gate: v.pipe(
    v.picklist(["PASS", "FAIL", "ERROR"]),
    v.description("PASS only when every check that applies ran and none tripped fail_on; anything else is not safe."),
  ),
  summary: v.pipe(v.string(), v.description("The verdict in one sentence.")),
  passed: v.number(),
  failed: v.number(),
  skipped: v.number(),
  errors: v.number(),
  checks: v.array(CheckOutcomeSchema),
  findings: v.array(FindingSchema),
  severities: v.pipe(
    v.record(v.string(), v.number()),
    v.description("Findings by severity, all of them (those below min_severity too)."),
  ),
  reducedCoverage: v.boolean(),
  coverageReasons: v.array(v.string()),
  scope: v.object({
    project_id: v.pipe(v.string(), v.description("The project read.")),
    mode: v.picklist(["staged", "working", "range"]),
    range: v.nullable(v.string()),
    files: v.pipe(v.number(), v.description("Files of the change the checks looked at (after file/dir/exclude).")),
    filesBeforeFilters: v.number(),
  }),
  group: v.string(),
  /** The repository's check manifest, when the root has one the operator trusts (its checks are group `repo`). */
  manifest: v.pipe(
    v.nullable(v.object({
      digest: v.string(),
      signer: v.object({ principal: v.string(), fingerprint: v.string() }),
    })),
    v.description(
      "The repository's check manifest (.warden/checks.json) this run trusted: its digest and who signed it; null when the root has none.",
    ),
  ),
  failOn: v.string(),
  minSeverity: v.string(),
  ...SIGNAL_OUTPUT,
  durationMs: v.number(),
};
const RunResultSchema = v.object(RUN_OUTPUT);
export type RunResult = v.InferOutput<typeof RunResultSchema>;
