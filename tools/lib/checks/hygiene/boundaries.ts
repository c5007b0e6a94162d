// hygiene/boundaries: imports the change adds that cross a declared boundary.
// A rule is dependency-cruiser's `forbidden` rule (a name, a severity, a
// comment, `from` and `to` with their `pathNot` exceptions), written with the
// globs warden takes everywhere instead of regular expressions:
//   { name: "core-stays-small", from: "core/**", disallow: ["tools/**", "plugins/**"] }
// `disallow` matches the file an import resolves to (root-relative) or, for a
// package or a built-in, what it names (`lodash`, `@scope/pkg/**`, `node:fs`).
import * as v from "valibot";
import { problem, received, WardenError } from "../../../../core/errors.ts";
import { issueWords } from "./issues.ts";
import { globToRegExp } from "../../graph/packages.ts";
import type { Resolution } from "../../graph/resolver.ts";
import { type BuiltinCheck, type Finding, SEVERITIES } from "../types.ts";
import { changedModules, graphOf } from "./change.ts";

const CHECK = "hygiene/boundaries";

const Glob = v.pipe(v.string("expected a glob"), v.minLength(1, "an empty glob matches nothing"));
const Globs = v.union(
  [Glob, v.pipe(v.array(Glob), v.minLength(1, "an empty list matches nothing"))],
  (issue) => `expected a glob or a list of globs, received ${received(issue.input)}`,
);

/** One boundary, as the group's options declare it. */
export const BoundaryRuleSchema = v.strictObject({
  /** The rule's id in findings (default: `<from> -> <disallow>`). */
  name: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Files the rule applies to: root-relative globs. */
  from: Globs,
  /** Files among `from` it does not apply to (dependency-cruiser's `from.pathNot`). */
  fromNot: v.optional(Globs),
  /** What those files may not import: root-relative globs, package names or `node:` built-ins. */
  disallow: Globs,
  /** Exceptions to `disallow` (dependency-cruiser's `to.pathNot`). */
  allow: v.optional(Globs),
  /** Whether imports of types only count (default true: a type couples modules too). */
  typeOnly: v.optional(v.boolean()),
  /** Default high: an architecture rule someone wrote down. */
  severity: v.optional(v.picklist(SEVERITIES)),
  /** Why the boundary exists, shown in the finding. */
  comment: v.optional(v.string()),
});
export type BoundaryRule = v.InferInput<typeof BoundaryRuleSchema>;

/** A rule made ready to match. */
export interface CompiledRule {
  readonly name: string;
  readonly severity: Finding["severity"];
  readonly comment?: string;
  readonly typeOnly: boolean;
  appliesTo(file: string): boolean;
  /** Whether an import of `targets` (the resolved path, or what a package import names) breaks the rule. */
  forbids(targets: readonly string[]): boolean;
}

const list = (globs: string | readonly string[] | undefined): readonly string[] =>
  globs === undefined ? [] : typeof globs === "string" ? [globs] : globs;

/**
 * Checks and compiles the rules of a group's options. Throws a `config_invalid` WardenError naming the rule and the
 * field that is wrong.
 */
export function compileRules(rules: unknown): CompiledRule[] {
  const parsed = v.safeParse(v.array(BoundaryRuleSchema), rules);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const at = v.getDotPath(issue) ?? "";
    const [index, ...field] = at.split(".");
    throw new WardenError(
      "config_invalid",
      problem(
        `Invalid boundary rule${index ? ` ${index}` : "s"}${field.length > 0 ? ` (${field.join(".")})` : ""}`,
        issueWords(issue, Object.keys(BoundaryRuleSchema.entries)),
        'write each as { from: "core/**", disallow: ["tools/**"] } with globs relative to the root',
      ),
    );
  }
  return parsed.output.map((rule) => {
    const matcher = (globs: readonly string[]) => {
      const res = globs.map((glob) => globToRegExp(glob));
      return (path: string) => res.some((re) => re.test(path));
    };
    const from = matcher(list(rule.from));
    const fromNot = matcher(list(rule.fromNot));
    const disallow = matcher(list(rule.disallow));
    const allow = matcher(list(rule.allow));
    return {
      name: rule.name ?? `${list(rule.from).join(",")} -> ${list(rule.disallow).join(",")}`,
      severity: rule.severity ?? "high",
      ...(rule.comment !== undefined ? { comment: rule.comment } : {}),
      typeOnly: rule.typeOnly ?? true,
      appliesTo: (file) => from(file) && !fromNot(file),
      forbids: (targets) => targets.some((t) => disallow(t)) && !targets.some((t) => allow(t)),
    };
  });
}

/**
 * What an import names, for matching: the file it resolves to, and for a package or a built-in the specifier, its
 * package name and, for a built-in, its `node:` form.
 */
export function importTargets(specifier: string, resolution: Resolution): string[] {
  switch (resolution.kind) {
    case "module":
      return resolution.also ? [resolution.path, resolution.also] : [resolution.path];
    case "asset":
      return [resolution.path];
    case "builtin":
      return [...new Set([specifier, `node:${resolution.name}`, resolution.name])];
    case "external":
      return [...new Set([specifier, resolution.package])];
    case "unresolved":
      return specifier.startsWith(".") ? [] : [specifier];
  }
}

/**
 * Whether an import written at `line` (the first line of its statement) is one the change adds: its first line is
 * added, or an added line of the next few carries its specifier in quotes (a multi-line import whose `from` changed).
 */
export function importAdded(specifier: string, line: number, added: ReadonlyMap<number, string>): boolean {
  if (added.has(line)) return true;
  const quoted = [`"${specifier}"`, `'${specifier}'`, `\`${specifier}\``];
  for (let n = line + 1; n <= line + 20; n++) {
    const text = added.get(n);
    if (text !== undefined && quoted.some((q) => text.includes(q))) return true;
  }
  return false;
}

/** Options of hygiene/boundaries. */
export interface BoundariesOptions {
  readonly rules?: readonly BoundaryRule[];
}

/** The check, with its rules; throws a `config_invalid` WardenError for a rule that is not one. */
export function boundariesCheck(options: BoundariesOptions = {}): BuiltinCheck {
  const rules = compileRules(options.rules ?? []);
  return {
    name: CHECK,
    description:
      'Imports the change adds that a declared boundary forbids: rules such as { from: "core/**", disallow: ["tools/**"] }, after dependency-cruiser\'s forbidden rules, with globs. High by default; no rules, no findings.',
    async run(scope, ctx) {
      if (rules.length === 0) return [];
      const changed = changedModules(scope).filter((file) => rules.some((rule) => rule.appliesTo(file.path)));
      if (changed.length === 0) return [];
      const graph = await graphOf(scope, ctx);
      const findings: Finding[] = [];
      for (const file of changed) {
        const module = graph.modules.get(file.path);
        if (!module?.summary) continue;
        const added = new Map(file.addedLines.map(({ line, text }) => [line, text]));
        const applying = rules.filter((rule) => rule.appliesTo(file.path));
        // A file moved or copied under a rule brings every import it has across the boundary.
        const moved = file.oldPath !== undefined;
        module.summary.imports.forEach((record, index) => {
          if (record.kind === "augmentation") return;
          const targets = importTargets(record.specifier, module.resolutions[index]);
          for (const rule of applying) {
            if (!rule.typeOnly && record.typeOnly) continue;
            if (!rule.forbids(targets)) continue;
            const isNew = (moved && !rule.appliesTo(file.oldPath!)) ||
              importAdded(record.specifier, record.line, added);
            if (!isNew) continue;
            const target = module.resolutions[index].kind === "module" || module.resolutions[index].kind === "asset"
              ? `${targets[0]} (${JSON.stringify(record.specifier)})`
              : JSON.stringify(record.specifier);
            findings.push({
              check: CHECK,
              file: file.path,
              line: record.line,
              column: null,
              severity: rule.severity,
              rule: rule.name,
              message: `${file.path} imports ${target}, which boundary ${JSON.stringify(rule.name)} forbids${
                rule.comment ? `: ${rule.comment}` : ""
              }`,
            });
          }
        });
      }
      return findings;
    },
  };
}
