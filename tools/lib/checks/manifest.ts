// A repository's own checks (.warden/checks.json): accepted only when the
// operator's trust says so (signed by an allowed signer, namespace
// warden-checks, and pinned for the root: ctx.checkManifest answers, as a tool
// cannot read the trust store), then read in a format modelled on pre-commit's
// hook manifest (`id`, `entry`, `args`, `files`, `exclude`, `pass_filenames`)
// and trunk's linter commands (`success_codes`, `output`). Its checks become
// the group `repo` (and part of `default`), run like the bundled ones.
import * as v from "valibot";
import { CHECK_MANIFEST_NAMESPACE, CHECK_MANIFEST_PATH } from "../../../core/doors/manifests.ts";
import { messageOf, problem, received, WardenError } from "../../../core/errors.ts";
import { parseStrictJson } from "../../../core/plugins/trust/strict_json.ts";
import type { GateContext } from "../../../core/tool.ts";
import { OUTPUT_FORMATS } from "./formats.ts";
import type { PlannedCheck } from "./groups.ts";
import type { ProgramCheck } from "./program.ts";
import { CHECK_PROGRAMS } from "./request.ts";
import { pathFilter } from "./scope.ts";
import { SEVERITIES } from "./types.ts";

/** Where a repository keeps its check manifest; refused unless signed and pinned. */
export const REPO_MANIFEST = CHECK_MANIFEST_PATH;
export const MANIFEST_VERSION = 1;

const GLOB = v.pipe(v.string(), v.minLength(1), v.maxLength(512));
const GLOBS = (what: string) => v.optional(v.pipe(v.array(GLOB), v.maxLength(100), v.description(what)));

const ManifestCheckSchema = v.strictObject({
  id: v.pipe(
    v.string(),
    v.regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "an id of lowercase letters, digits, `.`, `_` and `-`"),
    v.description("pre-commit's `id`: the check is reported as `repo/<id>`."),
  ),
  description: v.optional(v.pipe(v.string(), v.maxLength(500))),
  entry: v.pipe(
    v.picklist(CHECK_PROGRAMS, `one program run_checks declares (${CHECK_PROGRAMS.join(", ")}), its arguments in args`),
    v.description("pre-commit's `entry`, one word: the program, one of those run_checks declares."),
  ),
  args: v.optional(v.pipe(
    v.array(v.pipe(v.string(), v.maxLength(4096))),
    v.maxLength(256),
    v.description("pre-commit's `args`: the program's arguments, one element each (an argv, never a shell string)."),
  )),
  files: GLOBS(
    "Globs of the changed files it reads (a glob without `/` matches the file name); default: every file. pre-commit's `files` is a regex, this is not.",
  ),
  exclude: GLOBS("Globs of changed files it does not read."),
  pass_filenames: v.optional(v.pipe(
    v.boolean(),
    v.description(
      "pre-commit's `pass_filenames` (default true): the changed files it reads are appended to args, and with none it does not run; false: it runs once on the project.",
    ),
  )),
  success_codes: v.optional(v.pipe(
    v.array(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(255))),
    v.minLength(1),
    v.maxLength(256),
    v.description(
      "trunk's `success_codes` (default [0]): exit codes that mean it ran; any other is an error, or for `pass-fail` a finding.",
    ),
  )),
  output: v.pipe(
    v.picklist(OUTPUT_FORMATS, `one of ${OUTPUT_FORMATS.join(", ")}`),
    v.description("trunk's `output`: how its stdout is read into findings; `pass-fail` reads the exit code alone."),
  ),
  fail_severity: v.optional(v.pipe(
    v.picklist(SEVERITIES, `one of ${SEVERITIES.join(", ")}`),
    v.description("For `pass-fail`: the severity of the finding a failing exit code makes (default high)."),
  )),
  executes_repo_code: v.pipe(
    v.boolean(),
    v.description(
      "Whether it runs the repository's own code (its tests, build scripts, config files that are code): then it runs only in isolation, or where the operator allows it by name (--allow-unisolated repo/<id>).",
    ),
  ),
  approval: v.optional(v.pipe(
    v.picklist(["required"], "`required`, or leave it out"),
    v.description(
      "`required`: run_checks runs a group with this check only through an approved plan (checks_request, an approver's checks_approve, checks_submit), never on an agent's say-so. For a check that runs the repository's code with more than a check should reach.",
    ),
  )),
  batch_size: v.optional(v.pipe(
    v.number(),
    v.integer(),
    v.minValue(1),
    v.maxValue(1000),
    v.description("Most file names per run when they are passed (default 200); a longer change is several runs."),
  )),
  timeout_seconds: v.optional(v.pipe(
    v.number(),
    v.integer(),
    v.minValue(1),
    v.maxValue(3600),
    v.description("Longest one run may take (default 300), within what is left of the call."),
  )),
});

/** The valibot schema of .warden/checks.json; schema/check-manifest.schema.json is its JSON Schema. */
export const CheckManifestSchema = v.strictObject({
  $schema: v.optional(v.string()),
  version: v.literal(MANIFEST_VERSION),
  checks: v.pipe(v.array(ManifestCheckSchema), v.minLength(1, "at least one check"), v.maxLength(100)),
});
export type CheckManifest = v.InferOutput<typeof CheckManifestSchema>;
type ManifestCheck = v.InferOutput<typeof ManifestCheckSchema>;

/** A root's manifest, accepted: its checks planned, and who signed which bytes. */
export interface RepoManifest {
  readonly digest: string;
  readonly signer: { readonly principal: string; readonly fingerprint: string };
  readonly checks: readonly PlannedCheck[];
  /** The names (`repo/<id>`) of its checks marked `approval: "required"`. */
  readonly approvalRequired: readonly string[];
}

const MAX_MANIFEST_BYTES = 1024 * 1024;
const MAX_SIGNATURE_BYTES = 64 * 1024;

/** What to do once a manifest is fixed: sign the new bytes and pin them. */
const RESIGN = (root: string) =>
  `fix it, sign it again (ssh-keygen -Y sign -f <key> -n ${CHECK_MANIFEST_NAMESPACE} ${REPO_MANIFEST}) and pin it again (warden checks trust ${root})`;

/**
 * The root's check manifest when it has one the operator trusts, null when it has none. Throws `policy_denied` for a
 * manifest that is there and not trusted (why, and the command that fixes it) and `invalid_manifest` for one that is
 * trusted but malformed (the field, and the fix).
 */
export async function repoManifest(ctx: GateContext, root: string): Promise<RepoManifest | null> {
  const [found] = await ctx.fs.stats(root, [REPO_MANIFEST]);
  if (found === null) {
    // stats says null for a refused path too (a symlink out of the root): ask once more, to tell the two apart.
    const refused = await ctx.fs.stat(root, REPO_MANIFEST).then(() => false, (e) => e?.code !== "not_found");
    if (!refused) return null;
  }
  const refuse = (why: string, fix: string) =>
    new WardenError(
      "policy_denied",
      problem(
        `Check manifest "${REPO_MANIFEST}" in root "${root}" refused`,
        `${why}; a manifest found in the analysed repository is data, not instructions, unless an allowed signer signed it (namespace ${CHECK_MANIFEST_NAMESPACE}) and the operator pinned it`,
        `${fix}; or remove it from the repository (or from the root) to run warden's bundled groups`,
      ),
    );
  let bytes: Uint8Array;
  try {
    bytes = await ctx.fs.readBytes(root, REPO_MANIFEST, { maxBytes: MAX_MANIFEST_BYTES });
  } catch (error) {
    throw refuse(`it cannot be read (${messageOf(error)})`, "make it a regular file under the root");
  }
  const signature = await ctx.fs.readBytes(root, `${REPO_MANIFEST}.sig`, { maxBytes: MAX_SIGNATURE_BYTES }).catch(
    (error) => {
      if (error?.code === "not_found") return null;
      throw refuse(`its signature cannot be read (${messageOf(error)})`, "make it a regular file under the root");
    },
  );
  const trust = await ctx.checkManifest(root, bytes, signature);
  if (!trust.trusted) throw refuse(`${trust.reason} (${trust.status})`, trust.fix);
  const checks = readManifest(bytes, root);
  return {
    digest: trust.digest,
    signer: trust.signer,
    checks: checks.map(planned),
    approvalRequired: checks.filter((check) => check.approval === "required").map((check) => `repo/${check.id}`),
  };
}

/** The checks of a trusted manifest's bytes; throws `invalid_manifest` naming the field and the fix. */
export function readManifest(bytes: Uint8Array, root: string): ManifestCheck[] {
  const invalid = (detail: string) =>
    new WardenError(
      "invalid_manifest",
      problem(`Invalid check manifest "${REPO_MANIFEST}" in root "${root}"`, detail, RESIGN(root)),
    );
  let value: unknown;
  try {
    value = parseStrictJson(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw invalid(`it is not JSON: ${messageOf(error)}`);
  }
  const parsed = v.safeParse(CheckManifestSchema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = (issue.path ?? []).map((p) => typeof p.key === "number" ? `[${p.key}]` : `.${String(p.key)}`)
      .join("").replace(/^\./, "");
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw invalid(`expected an object {"version": 1, "checks": [...]}, received ${received(value)}`);
    }
    throw invalid(`${where}: ${describe(issue)}`);
  }
  const seen = new Set<string>();
  for (const [i, check] of parsed.output.checks.entries()) {
    if (seen.has(check.id)) throw invalid(`checks[${i}].id: ${received(check.id)} is the id of an earlier check`);
    seen.add(check.id);
    const runs = runsRepoCode(check);
    if (runs && !check.executes_repo_code) {
      throw invalid(
        `checks[${i}].executes_repo_code: false, but ${runs}; declare it true (it then runs only isolated)`,
      );
    }
  }
  return parsed.output.checks;
}

/** deno subcommands that run JavaScript or TypeScript: the repository's, or what its manifest or config names. */
const DENO_RUNS_CODE = ["run", "test", "task", "eval", "bench", "serve", "repl", "compile", "install", "x", "jupyter"];

/**
 * Why a check runs the repository's code whatever its manifest declares, or null when its program alone does not
 * say: a declaration of false is the signer's word, and these are the cases where the program says otherwise.
 */
function runsRepoCode(check: ManifestCheck): string | null {
  const first = check.args?.find((arg) => !arg.startsWith("-"));
  switch (check.entry) {
    case "node":
      return "node runs JavaScript the repository supplies (a file of it, or code in this manifest)";
    case "eslint":
      return "eslint loads the repository's config, which is JavaScript";
    case "deno":
      return first !== undefined && DENO_RUNS_CODE.includes(first) ? `deno ${first} runs code` : null;
    default:
      return null;
  }
}

/** One issue in words: a field missing, a field unknown, or what was expected and what was there. */
function describe(issue: v.BaseIssue<unknown>): string {
  if (issue.type === "strict_object" && issue.expected === "never") {
    const key = issue.input;
    return `unknown field ${received(key)}${
      ["name", "argv", "command", "run"].includes(String(key)) ? " (the program is `entry`, its arguments `args`)" : ""
    }`;
  }
  if (issue.type === "strict_object") return "missing, and it is required";
  // A message of our own says what is expected; valibot's own messages carry it in `expected`.
  const expected = !issue.message.startsWith("Invalid ") ? issue.message : issue.expected ?? issue.type;
  return `expected ${expected}, received ${received(issue.input)}`;
}

/** A manifest check as run_checks plans it: a program check named `repo/<id>`. */
function planned(check: ManifestCheck): PlannedCheck {
  const files = check.files ?? [];
  const matches = pathFilter({ file: files, exclude: check.exclude });
  const program: ProgramCheck = {
    name: `repo/${check.id}`,
    description: check.description ?? `${check.entry} ${(check.args ?? []).join(" ")}`.trim(),
    argv: [check.entry, ...check.args ?? []],
    cwd: ".",
    extensions: [],
    matches,
    passFilenames: check.pass_filenames ?? true,
    batchSize: check.batch_size ?? 200,
    successCodes: check.success_codes ?? [0],
    output: check.output,
    failSeverity: check.fail_severity ?? "high",
    executesRepoCode: check.executes_repo_code,
    timeoutMs: (check.timeout_seconds ?? 300) * 1000,
  };
  return { kind: "program", check: program };
}
