// hygiene/dead-exports: exports the change leaves dead, from the code graph's
// export usage (tools/lib/graph/export_usage.ts, as code_dead_exports reads
// it). Two kinds, and nothing of the project's older dead exports: an export
// the change adds (its line is an added line) that nothing imports, and an
// export that was used before the change and is not after it (its last user
// was removed or deleted), which needs the files as they were before.
import { messageOf, problem, WardenError } from "../../../../core/errors.ts";
import type { ModuleGraph } from "../../graph/module_graph.ts";
import type { Resolution } from "../../graph/resolver.ts";
import type { ExportUsage } from "../../graph/export_usage.ts";
import type { ModuleSummary } from "../../graph/records.ts";
import { DEFAULT_ENTRY_PATTERNS } from "../../graph/entry_patterns.ts";
import type { BaseReader } from "../scope.ts";
import type { BuiltinCheck, ChangeScope, Finding, Severity } from "../types.ts";
import { addedLineNumbers, changedModules, graphOf, isModulePath } from "./change.ts";

const CHECK = "hygiene/dead-exports";

/** Options of hygiene/dead-exports. */
export interface DeadExportsOptions {
  /** More entry points, as root-relative globs: their exports are public. */
  readonly entries?: readonly string[];
  /** Also treat DEFAULT_ENTRY_PATTERNS as entry points (default true). */
  readonly defaultEntries?: boolean;
  /** Report type-only exports (interfaces, types) too (default true). */
  readonly includeTypes?: boolean;
  /** Default low: a dead export is code to delete, not a defect. */
  readonly severity?: Severity;
  /**
   * The files as they were before the change, for exports whose last user the change removed. Without it only the
   * exports the change adds are looked at (run_checks gives it from git; this check never runs git itself).
   */
  readonly readBase?: BaseReader;
}

/** Export usage of `graph` with `patterns` as entry points, kept in the graph's memo while the graph stands. */
async function usageOf(graph: ModuleGraph, patterns: readonly { glob: string; from: string }[]): Promise<ExportUsage> {
  const key = `hygiene/dead-exports\0${JSON.stringify(patterns)}`;
  const known = graph.memo.get(key) as ExportUsage | undefined;
  if (known) return known;
  const { entryPoints, exportUsage } = await import("../../graph/export_usage.ts");
  const usage = exportUsage(graph, entryPoints(graph, patterns));
  graph.memo.set(key, usage);
  return usage;
}

/** Exports used (certainly) in `usage`, as `file\0name`. */
function usedKeys(graph: ModuleGraph, usage: ExportUsage): Set<string> {
  const notUsed = new Set([...usage.dead, ...usage.undetermined].map((f) => `${f.file}\0${f.name}`));
  const used = new Set<string>();
  for (const [file, module] of graph.modules) {
    if (module.outside || !module.summary) continue;
    for (const record of module.summary.exports) {
      const key = `${file}\0${record.name}`;
      if (record.name !== "*" && !notUsed.has(key)) used.add(key);
    }
  }
  return used;
}

/** `dir/../x` → `x`, root-relative; undefined when it leaves the root. */
function normalise(path: string): string | undefined {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(part);
  }
  return out.join("/");
}

/**
 * Where an import of a file as it was before the change leads, in the graph of after: the same specifier of the same
 * file resolves as it does now; a relative one to the module it names (`./a.js` → `a.ts`, `./dir` → `dir/index.ts`);
 * another (an alias, a workspace package) as the same specifier resolves elsewhere in the graph. What none of these
 * places is left external: it cannot make an export of the root used.
 */
function resolveBefore(
  graph: ModuleGraph,
  file: string,
  specifier: string,
  byOthers: ReadonlyMap<string, Resolution>,
  extensions: readonly string[],
): Resolution {
  const now = graph.modules.get(file);
  const index = now?.summary?.imports.findIndex((record) => record.specifier === specifier) ?? -1;
  if (now && index >= 0) return now.resolutions[index];
  if (specifier.startsWith(".")) {
    const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
    const target = normalise(`${dir}/${specifier.replace(/[?#].*$/, "")}`);
    if (target !== undefined) {
      const stem = target.replace(/\.(?:[mc]?js|jsx)$/, "");
      const candidates = [
        target,
        ...extensions.map((ext) => stem + ext),
        ...extensions.map((ext) => `${stem}.d${ext}`),
        ...extensions.map((ext) => `${target}/index${ext}`),
      ];
      const hit = candidates.find((candidate) => graph.modules.has(candidate));
      if (hit) return { kind: "module", path: hit };
    }
    return { kind: "unresolved", reason: "resolved before the change only", internal: true };
  }
  return byOthers.get(specifier) ?? { kind: "external", package: specifier, installed: false };
}

/** What an import takes, as a set of keys: what a file lost between two summaries is what it no longer demands. */
function demands(summary: ModuleSummary | undefined): Set<string> {
  const keys = new Set<string>();
  for (const record of summary?.imports ?? []) {
    for (const binding of record.bindings) {
      keys.add(
        [record.kind, record.specifier, binding.imported, binding.local, binding.escapes, binding.members].join("\0"),
      );
    }
    if (record.bindings.length === 0) keys.add([record.kind, record.specifier].join("\0"));
  }
  return keys;
}

/**
 * The graph as it was before the change, as far as export usage needs it: the changed and deleted modules with their
 * old imports, every other module as it is now. undefined when no file of the change lost an import (or a binding of
 * one): then no export lost a user, and export usage need not be worked out again.
 */
async function graphBefore(
  graph: ModuleGraph,
  scope: ChangeScope,
  readBase: BaseReader,
): Promise<ModuleGraph | undefined> {
  const { loadTypeScript } = await import("../../typescript/typescript.ts");
  const { MODULE_EXTENSIONS, summarizeModule } = await import("../../graph/module_summary.ts");
  const ts = await loadTypeScript();
  const old: { path: string; renamedTo?: string; summary: ModuleSummary }[] = [];
  let lost = false;
  const read = scope.files.filter((file) =>
    !file.binary && file.status !== "added" && file.status !== "untracked" && isModulePath(file.oldPath ?? file.path)
  );
  let texts: ReadonlyMap<string, string | null>;
  const names = read.map((file) => file.oldPath ?? file.path);
  try {
    texts = await readBase(names);
  } catch (error) {
    const named = names.length <= 3 ? names.join(", ") : `${names.slice(0, 3).join(", ")} and ${names.length - 3} more`;
    throw new WardenError(
      "tool_failed",
      problem(
        `Cannot read ${named} as ${names.length === 1 ? "it was" : "they were"} before the change`,
        messageOf(error),
        "the check cannot tell",
      ),
    );
  }
  for (const file of read) {
    const before = file.oldPath ?? file.path;
    const text = texts.get(before) ?? null;
    if (text === null) continue;
    const summary = summarizeModule(ts, before, text);
    const now = file.status === "deleted" ? new Set<string>() : demands(graph.modules.get(file.path)?.summary);
    if (!lost) { for (const key of demands(summary)) if (!now.has(key)) lost = true; }
    old.push({ path: before, ...(file.status === "renamed" ? { renamedTo: file.path } : {}), summary });
  }
  if (!lost) return undefined;
  const byOthers = new Map<string, Resolution>();
  for (const module of graph.modules.values()) {
    module.summary?.imports.forEach((record, index) => {
      const resolution = module.resolutions[index];
      if (!record.specifier.startsWith(".") && resolution.kind === "module") byOthers.set(record.specifier, resolution);
    });
  }
  const modules = new Map(graph.modules);
  for (const { path, renamedTo, summary } of old) {
    if (renamedTo !== undefined) modules.delete(renamedTo);
    const resolutions = summary.imports.map((record) =>
      resolveBefore(graph, path, record.specifier, byOthers, MODULE_EXTENSIONS)
    );
    modules.set(path, { path, summary, resolutions, outside: false });
  }
  return { ...graph, modules, memo: new Map() };
}

/** The check, with its options. */
export function deadExportsCheck(options: DeadExportsOptions = {}): BuiltinCheck {
  const severity = options.severity ?? "low";
  const includeTypes = options.includeTypes ?? true;
  const patterns = [
    ...(options.defaultEntries ?? true
      ? DEFAULT_ENTRY_PATTERNS.map((glob) => ({ glob, from: `default pattern ${glob}` }))
      : []),
    ...(options.entries ?? []).map((glob) => ({ glob: glob.replace(/^\.\//, ""), from: `entries ${glob}` })),
  ];
  return {
    name: CHECK,
    description:
      "Exports the change leaves dead: exports it adds that no module imports, and exports whose last user it removed (when the files before the change are given). Entry points (package.json, index/main/cli, tests, config files) are public. Low by default.",
    async run(scope, ctx) {
      const modules = changedModules(scope);
      const removals = options.readBase !== undefined &&
        scope.files.some((f) =>
          !f.binary && f.status !== "added" && f.status !== "untracked" && isModulePath(f.oldPath ?? f.path)
        );
      if (modules.length === 0 && !removals) return [];
      const graph = await graphOf(scope, ctx);
      const usage = await usageOf(graph, patterns);
      const dead = usage.dead.filter((f) => includeTypes || !f.typeOnly);
      const findings: Finding[] = [];
      /** A finding of `rule` for a dead export, with what to do about it. */
      const found = (finding: (typeof dead)[number], rule: string, what: string): Finding => ({
        check: CHECK,
        file: finding.file,
        line: finding.line,
        column: null,
        severity,
        rule,
        message: `${what}${
          finding.usedInFile ? "; it is used in its own file: drop the export keyword" : "; remove it"
        }`,
      });
      const reported = new Set<string>();
      const added = new Map(modules.map((file) => [file.path, addedLineNumbers(file)]));
      for (const finding of dead) {
        if (!added.get(finding.file)?.has(finding.line)) continue;
        reported.add(`${finding.file}\0${finding.name}`);
        findings.push(
          found(
            finding,
            "added-unused",
            `Added export ${finding.name} (${finding.kind}) is not imported by any module`,
          ),
        );
      }
      if (removals && options.readBase) {
        const before = await graphBefore(graph, scope, options.readBase);
        const usedBefore = before ? usedKeys(before, await usageOf(before, patterns)) : new Set<string>();
        for (const finding of dead) {
          const key = `${finding.file}\0${finding.name}`;
          if (reported.has(key) || !usedBefore.has(key)) continue;
          findings.push(
            found(
              finding,
              "left-unused",
              `Export ${finding.name} (${finding.kind}) was imported before this change and is not after it`,
            ),
          );
        }
      }
      return findings.sort((a, b) => (a.file! < b.file! ? -1 : a.file! > b.file! ? 1 : a.line! - b.line!));
    },
  };
}
