// The check groups bundled with warden, and what each becomes for one root:
// `typescript` (tsc --noEmit for each tsconfig.json), `lint` (eslint where
// the project has it, deno lint for deno projects), `hygiene` (warden's own
// checks), `repo` (a trusted repository manifest's, see manifest.ts) and
// `default` (all of them that apply). A check that applies but
// cannot run here (its program missing) is planned as unavailable, so the run
// says so instead of passing without it.
import { CHECK_MANIFEST_PATH } from "../../../core/doors/manifests.ts";
import { problem, WardenError } from "../../../core/errors.ts";
import type { GateContext } from "../../../core/tool.ts";
import { HYGIENE_CHECKS } from "./hygiene/mod.ts";
import type { ProgramCheck } from "./program.ts";
import type { BuiltinCheck } from "./types.ts";
import type { GroupName } from "./request.ts";

/** What one check of a group is for this root. */
export type PlannedCheck =
  | { readonly kind: "program"; readonly check: ProgramCheck }
  | { readonly kind: "builtin"; readonly check: BuiltinCheck }
  /** It applies to this project but cannot run here: the run cannot be trusted without it. */
  | { readonly kind: "unavailable"; readonly name: string; readonly reason: string }
  /** It does not apply to this project (no tsconfig.json, no eslint config): listed, and nothing is lost. */
  | { readonly kind: "not-applicable"; readonly name: string; readonly reason: string };

const JS_TS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];
const TSC_TIMEOUT_MS = 10 * 60_000;
const LINT_TIMEOUT_MS = 5 * 60_000;

/**
 * The checks of `group` for `root`, in the order they run. `repo`: the checks of the root's manifest, when the
 * operator trusts it (null when the root has none).
 */
export async function planGroup(
  group: GroupName,
  ctx: GateContext,
  root: string,
  hygiene: readonly BuiltinCheck[] = HYGIENE_CHECKS,
  repo: readonly PlannedCheck[] | null = null,
): Promise<PlannedCheck[]> {
  switch (group) {
    case "repo":
      if (repo === null) throw noRepoChecks(root);
      return [...repo];
    case "typescript":
      return await typescriptChecks(ctx, root);
    case "lint":
      return await lintChecks(ctx, root);
    case "hygiene":
      return hygieneChecks(hygiene);
    case "default":
      return [
        ...await typescriptChecks(ctx, root),
        ...await lintChecks(ctx, root),
        ...hygieneChecks(hygiene),
        ...repo ?? [],
      ];
  }
}

/** The refusal of group `repo` for a root without a check manifest. */
export function noRepoChecks(root: string): WardenError {
  return new WardenError(
    "invalid_arguments",
    problem(
      `Group "repo" has no checks in root "${root}"`,
      `the root has no ${CHECK_MANIFEST_PATH}`,
      "pick a bundled group (default, typescript, lint, hygiene), or add a manifest and have the operator pin it (README: Repository checks)",
    ),
  );
}

function hygieneChecks(checks: readonly BuiltinCheck[]): PlannedCheck[] {
  return checks.map((check) => ({ kind: "builtin", check }));
}

/** Which of `files` (root-relative) exist, by one stat of them all. */
async function existing(ctx: GateContext, root: string, files: readonly string[]): Promise<string[]> {
  const stats = await ctx.fs.stats(root, files);
  return files.filter((_, i) => stats[i] !== null);
}

/** The nearest `<dir>/node_modules/<bin>` from `dir` up to the root, root-relative, or null. */
async function localBin(ctx: GateContext, root: string, dir: string, bin: string): Promise<string | null> {
  const candidates: string[] = [];
  for (let at = dir;; at = at.includes("/") ? at.slice(0, at.lastIndexOf("/")) : ".") {
    candidates.push(at === "." ? `node_modules/${bin}` : `${at}/node_modules/${bin}`);
    if (at === ".") break;
  }
  return (await existing(ctx, root, candidates))[0] ?? null;
}

function program(ctx: GateContext, name: string): boolean {
  return ctx.host.programs[name] === true;
}

async function typescriptChecks(ctx: GateContext, root: string): Promise<PlannedCheck[]> {
  const configs = await ctx.fs.glob(root, ["**/tsconfig.json"], { ignore: ["**/node_modules/**"] });
  if (configs.length === 0) {
    return [{ kind: "not-applicable", name: "typescript/tsc", reason: "no tsconfig.json under the root" }];
  }
  const planned: PlannedCheck[] = [];
  for (const config of configs) {
    const dir = config.includes("/") ? config.slice(0, config.lastIndexOf("/")) : ".";
    const name = dir === "." ? "typescript/tsc" : `typescript/tsc:${dir}`;
    // Every path as `./<path>`: a directory named like an option (`-r`) stays a path for node and tsc.
    const args = ["--noEmit", "--pretty", "false", "-p", `./${config}`];
    const base = {
      name,
      description: `tsc --noEmit -p ${config}: the project's type errors`,
      cwd: ".",
      extensions: [],
      passFilenames: false,
      batchSize: 1,
      // 0: no errors; 1 and 2: diagnostics (with outputs skipped or generated).
      successCodes: [0, 1, 2],
      output: "tsc",
      failSeverity: "high",
      timeoutMs: TSC_TIMEOUT_MS,
    } as const;
    // The project's own compiler first: its version is the one the project is written for.
    const local = await localBin(ctx, root, dir, "typescript/bin/tsc");
    if (local && program(ctx, "node")) {
      planned.push({
        kind: "program",
        check: { ...base, argv: ["node", `./${local}`, ...args], executesRepoCode: true },
      });
    } else if (program(ctx, "tsc")) {
      planned.push({ kind: "program", check: { ...base, argv: ["tsc", ...args], executesRepoCode: false } });
    } else {
      planned.push({
        kind: "unavailable",
        name,
        reason: local
          ? `the project has ${local} but node was not in warden's PATH when it started; install node and restart warden`
          : "no TypeScript compiler: the project has no node_modules/typescript and tsc was not in warden's PATH when it started; run npm install (with typescript as a devDependency) or install tsc, then restart warden",
      });
    }
  }
  return planned;
}

const ESLINT_CONFIGS = [
  "eslint.config.js",
  "eslint.config.mjs",
  "eslint.config.cjs",
  "eslint.config.ts",
  "eslint.config.mts",
  "eslint.config.cts",
  ".eslintrc",
  ".eslintrc.js",
  ".eslintrc.cjs",
  ".eslintrc.json",
  ".eslintrc.yml",
  ".eslintrc.yaml",
];

async function lintChecks(ctx: GateContext, root: string): Promise<PlannedCheck[]> {
  const planned: PlannedCheck[] = [];
  const [eslintConfig] = await existing(ctx, root, ESLINT_CONFIGS);
  const [denoConfig] = await existing(ctx, root, ["deno.json", "deno.jsonc"]);
  const lint = {
    cwd: ".",
    extensions: JS_TS,
    passFilenames: true,
    batchSize: 200,
    // 0: clean; 1: findings. 2 is a crash or a bad config.
    successCodes: [0, 1],
    failSeverity: "high",
    timeoutMs: LINT_TIMEOUT_MS,
  } as const;
  if (!eslintConfig) {
    planned.push({ kind: "not-applicable", name: "lint/eslint", reason: "no eslint config at the root" });
  } else {
    const description = `eslint with ${eslintConfig}, on the changed files`;
    const local = await localBin(ctx, root, ".", "eslint/bin/eslint.js");
    // The project's own eslint through node, else one in warden's PATH.
    const argv = local && program(ctx, "node")
      ? ["node", `./${local}`, "--format", "json"]
      : program(ctx, "eslint")
      ? ["eslint", "--format", "json"]
      : null;
    // eslint's config is JavaScript from the repository, whichever eslint runs it.
    if (argv) {
      planned.push({
        kind: "program",
        check: { ...lint, name: "lint/eslint", description, argv, output: "eslint-json", executesRepoCode: true },
      });
    } else {
      planned.push({
        kind: "unavailable",
        name: "lint/eslint",
        reason:
          `the project has ${eslintConfig} but no node_modules/eslint, and eslint was not in warden's PATH when it started; run npm install, then retry`,
      });
    }
  }
  if (!denoConfig) {
    planned.push({ kind: "not-applicable", name: "lint/deno", reason: "no deno.json or deno.jsonc at the root" });
  } else if (!program(ctx, "deno")) {
    planned.push({
      kind: "unavailable",
      name: "lint/deno",
      reason:
        `the project has ${denoConfig} but deno was not in warden's PATH when it started; install deno and restart warden`,
    });
  } else {
    // Lint plugins are JavaScript the config names: with any, deno lint runs the repository's code.
    const text = await ctx.fs.readText(root, denoConfig).catch(() => '"plugins"');
    planned.push({
      kind: "program",
      check: {
        ...lint,
        name: "lint/deno",
        description: `deno lint with ${denoConfig}, on the changed files`,
        // The root's config, named: deno would otherwise also look for one in the directories above the root.
        argv: ["deno", "lint", "--json", "--config", `./${denoConfig}`],
        output: "deno-lint-json",
        executesRepoCode: text.includes('"plugins"'),
      },
    });
  }
  return planned;
}
