// warden's own checks, the `hygiene` group: what no linter does and what the
// code graph already knows, each over the change alone. run_checks makes them
// with the group's options (plain JSON, checked here) and, per run, what only
// the runner can read (the files before the change).
import * as v from "valibot";
import { problem, WardenError } from "../../../../core/errors.ts";
import { issueWords } from "./issues.ts";
import { type BuiltinCheck, SEVERITIES } from "../types.ts";
import { blastRadiusCheck } from "./blast_radius.ts";
import { boundariesCheck, BoundaryRuleSchema } from "./boundaries.ts";
import { deadExportsCheck } from "./dead_exports.ts";
import type { BaseReader } from "../scope.ts";
import { debtMarkersCheck } from "./debt_markers.ts";
import { lockfileCheck } from "./lockfile.ts";
import { secretsCheck } from "./secrets.ts";

export type { BlastRadiusOptions } from "./blast_radius.ts";
export type { BoundariesOptions, BoundaryRule } from "./boundaries.ts";
export type { DeadExportsOptions } from "./dead_exports.ts";
export type { BaseReader } from "../scope.ts";
export type { DebtMarkersOptions } from "./debt_markers.ts";
export type { LockfileOptions } from "./lockfile.ts";

const Severity = v.picklist(SEVERITIES);
const Globs = v.array(v.pipe(v.string(), v.minLength(1)));

/** The `hygiene` group's options, as an operator's configuration writes them; every key optional. */
export const HygieneOptionsSchema = v.strictObject({
  "debt-markers": v.optional(v.strictObject({
    tags: v.optional(
      v.pipe(v.array(v.pipe(v.string(), v.regex(/^\w+$/, "a tag is letters, digits or _"))), v.minLength(1)),
    ),
    severities: v.optional(v.record(v.string(), Severity)),
  })),
  "dead-exports": v.optional(v.strictObject({
    entries: v.optional(Globs),
    defaultEntries: v.optional(v.boolean()),
    includeTypes: v.optional(v.boolean()),
    severity: v.optional(Severity),
  })),
  "blast-radius": v.optional(v.strictObject({
    budget: v.optional(v.pipe(v.number(), v.integer("the budget is a whole number of modules"), v.minValue(0))),
    runtimeOnly: v.optional(v.boolean()),
    severity: v.optional(Severity),
  })),
  boundaries: v.optional(v.strictObject({ rules: v.optional(v.array(BoundaryRuleSchema)) })),
  secrets: v.optional(v.strictObject({})),
  lockfile: v.optional(v.strictObject({ severity: v.optional(Severity) })),
});
export type HygieneOptions = v.InferInput<typeof HygieneOptionsSchema>;

/** The keys the options take where `at` (a dot path) points. */
function keysAt(at: string | null): string[] {
  const [check] = (at ?? "").split(".");
  const inner = (HygieneOptionsSchema.entries as Record<string, v.GenericSchema>)[check];
  if (inner && at?.includes(".")) {
    const wrapped = (inner as { wrapped?: { entries?: Record<string, unknown> } }).wrapped;
    return Object.keys(wrapped?.entries ?? {});
  }
  return Object.keys(HygieneOptionsSchema.entries);
}

/** What the runner gives for one run, beside the options. */
export interface HygieneRun {
  /** The files as they were before the change, for exports the change leaves dead (see dead_exports.ts). */
  readonly readBase?: BaseReader;
}

/**
 * Checks a group's hygiene options. Throws a `config_invalid` WardenError that names the key and what is wrong.
 *
 * @example
 * ```ts
 * parseHygieneOptions({ "blast-radius": { budget: 20 }, boundaries: { rules: [{ from: "core/**", disallow: "tools/**" }] } });
 * ```
 */
export function parseHygieneOptions(options: unknown): HygieneOptions {
  const parsed = v.safeParse(HygieneOptionsSchema, options ?? {});
  if (parsed.success) return parsed.output;
  const issue = parsed.issues[0];
  const at = v.getDotPath(issue);
  throw new WardenError(
    "config_invalid",
    problem(
      `Invalid hygiene options${at ? ` at ${at}` : ""}`,
      issueWords(issue, keysAt(at)),
      `options are keyed by check: ${Object.keys(HygieneOptionsSchema.entries).join(", ")}, each optional`,
    ),
  );
}

/** The hygiene checks, made with `options` (checked by parseHygieneOptions) and the run's `readBase`. */
export function hygieneChecks(options: unknown = {}, run: HygieneRun = {}): BuiltinCheck[] {
  const o = parseHygieneOptions(options);
  return [
    debtMarkersCheck(o["debt-markers"]),
    deadExportsCheck({ ...o["dead-exports"], ...(run.readBase ? { readBase: run.readBase } : {}) }),
    blastRadiusCheck(o["blast-radius"]),
    boundariesCheck(o.boundaries),
    secretsCheck(),
    lockfileCheck(o.lockfile),
  ];
}

/** The checks with their defaults (no boundaries declared, no base to compare with). */
export const HYGIENE_CHECKS: readonly BuiltinCheck[] = Object.freeze(hygieneChecks());
