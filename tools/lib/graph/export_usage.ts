// Which exports of a root's modules some other module binds. Demands start at
// every import binding (a named import, a default import, the members read
// from a namespace) and at the entry points (everything they export is
// public), and flow through re-exports: `export { a } from`, `export *`,
// `export * as ns`. An export no demand reaches is dead; one that only a
// place the graph cannot see through may reach is undetermined, with why.
import path from "node:path";
import type { GraphModule, ModuleGraph } from "./module_graph.ts";
import { conventionalSourceStem, globToRegExp, OUTPUT_EXTENSION, type PackageInfo } from "./packages.ts";
import { MODULE_EXTENSIONS } from "./module_summary.ts";
import type { ExportRecord, ModuleSummary, SymbolKind } from "./records.ts";

/** Why a module is an entry point. */
export interface EntryPoint {
  readonly file: string;
  /** `package.json main`, `packages/a/package.json exports["."]`, `default pattern src/index.*`, `entries "x"`. */
  readonly from: string;
}

/** One export and what became of it. */
export interface ExportFinding {
  readonly file: string;
  readonly name: string;
  readonly line: number;
  readonly kind: SymbolKind;
  readonly typeOnly: boolean;
  /** Mentioned elsewhere in its own file: drop `export`, keep the declaration. */
  readonly usedInFile: boolean;
  /** For undetermined exports: what could use it. */
  readonly reason?: string;
}

/** The answer for a whole root (scoping to a sub-path is the caller's). */
export interface ExportUsage {
  readonly entryPoints: readonly EntryPoint[];
  readonly dead: readonly ExportFinding[];
  readonly undetermined: readonly ExportFinding[];
  readonly used: number;
  /** The file of each used export, for totals under a sub-path. */
  readonly usedIn: readonly string[];
  readonly total: number;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+^${}()|[\]\\]/g, "\\$&");
}

/** The modules a package.json target names: itself, its source (outDir or dist/ → src/), a pattern's matches. */
function targetModules(graph: ModuleGraph, target: string): string[] {
  const modules = graph.modules;
  const bases = new Set<string>([target]);
  const mapped = graph.configs.sourceFor(target);
  if (mapped) bases.add(mapped);
  for (const config of graph.configs.configs) {
    for (const { out, src } of config.outputs) {
      if (target.startsWith(out + "/")) bases.add(path.posix.join(src, target.slice(out.length + 1)));
    }
  }
  const conventional = conventionalSourceStem(target);
  if (conventional !== undefined) bases.add(conventional);
  const found = new Set<string>();
  for (const base of bases) {
    if (base.includes("*")) {
      const stem = base.replace(OUTPUT_EXTENSION, "");
      const re = new RegExp(
        `^${stem.split("*").map(escapeRegExp).join(".*")}(?:\\.(?:d\\.)?[mc]?[jt]sx?)?$`,
      );
      for (const m of modules.keys()) if (re.test(m)) found.add(m);
      continue;
    }
    if (modules.has(base)) {
      found.add(base);
      continue;
    }
    const stem = base.replace(OUTPUT_EXTENSION, "");
    const hit = [
      ...MODULE_EXTENSIONS.map((ext) => stem + ext),
      ...MODULE_EXTENSIONS.map((ext) => `${stem}/index${ext}`),
      ...MODULE_EXTENSIONS.map((ext) => `${base}/index${ext}`),
    ].find((candidate) => modules.has(candidate));
    if (hit) found.add(hit);
  }
  return [...found];
}

/** Entry points: what package.json files name, and modules matching the patterns. */
export function entryPoints(
  graph: ModuleGraph,
  patterns: readonly { readonly glob: string; readonly from: string }[],
): EntryPoint[] {
  const entries = new Map<string, string>();
  const add = (file: string, from: string) => {
    if (!entries.has(file)) entries.set(file, from);
  };
  const packages: readonly PackageInfo[] = graph.packages;
  for (const pkg of packages) {
    for (const { target, field } of pkg.entries) {
      for (const file of targetModules(graph, target)) add(file, `${pkg.manifest} ${field}`);
    }
  }
  for (const { glob, from } of patterns) {
    const re = globToRegExp(glob);
    for (const file of graph.modules.keys()) if (re.test(file)) add(file, from);
  }
  // The declaration file beside a JavaScript entry types it for TypeScript (`index.d.ts` for `index.js`): public too.
  for (const [file, from] of [...entries]) {
    const declaration = /\.(?:([mc]?)js|jsx)$/.exec(file);
    if (!declaration) continue;
    const types = `${file.slice(0, declaration.index)}.d.${declaration[1] ?? ""}ts`;
    if (graph.modules.has(types)) add(types, `${from} (its declaration file)`);
  }
  return [...entries].map(([file, from]) => ({ file, from })).sort((a, b) => (a.file < b.file ? -1 : 1));
}

/** `via`: where a module's default is read, for the reason when that turns out to be a CommonJS module object. */
type Certainty = { readonly used: true; readonly via?: string } | { readonly used: false; readonly reason: string };
/** How a binding uses what it names, when that is a namespace: some members, or all of it (escapes, where). */
type Members = { readonly only: readonly string[] } | { readonly escapes: string };
interface Demand {
  readonly module: string;
  readonly name: string;
  readonly certainty: Certainty;
  /** Absent: the name is public as a whole (an entry point). */
  readonly members?: Members;
}
const USED: Certainty = { used: true };

/**
 * Works out which exports are used. `entries` are public: everything they
 * export counts as used.
 */
export function exportUsage(graph: ModuleGraph, entries: readonly EntryPoint[]): ExportUsage {
  const modules = graph.modules;
  /** Status by module and export name: used, or maybe-used with a reason. */
  const status = new Map<string, Map<string, Certainty>>();
  const queue: Demand[] = [];
  const seenDemands = new Map<string, Map<string, Set<number>>>();
  const wholeDone = new Map<string, boolean>();

  const mark = (module: string, name: string, certainty: Certainty): boolean => {
    let names = status.get(module);
    if (!names) status.set(module, names = new Map());
    const before = names.get(name);
    if (before?.used || (before && !certainty.used)) return false;
    names.set(name, certainty);
    return true;
  };
  const demand = (module: string, name: string, certainty: Certainty, members?: Members) => {
    if (modules.get(module)?.summary) queue.push({ module, name, certainty, ...(members ? { members } : {}) });
  };
  /** The names `module` exports: its own, and through `export *` those not shadowed, never `default`. */
  const exportedNames = (module: string, seen: Set<string> = new Set()): Set<string> => {
    const names = new Set<string>();
    const summary = modules.get(module)?.summary;
    if (!summary || seen.has(module)) return names;
    seen.add(module);
    for (const record of summary.exports) if (record.name !== "*") names.add(record.name);
    for (const record of summary.exports) {
      if (record.name !== "*") continue;
      for (const target of resolvedModules(modules.get(module)!, record.from!)) {
        for (const name of exportedNames(target, seen)) if (name !== "default") names.add(name);
      }
    }
    return names;
  };
  /** Every name `module` exports, demanded at once; demands flow through re-exports from there. */
  const whole = (module: string, certainty: Certainty) => {
    const done = wholeDone.get(module);
    if (done === true || (done === false && !certainty.used)) return;
    wholeDone.set(module, certainty.used);
    for (const name of exportedNames(module)) demand(module, name, certainty);
  };

  for (const entry of entries) whole(entry.file, USED);

  // Every binding of every import is a demand on the module it names.
  for (const [from, module] of modules) {
    const summary = module.summary;
    if (!summary) continue;
    summary.imports.forEach((record, index) => {
      if (record.kind === "re-export") return; // flows only when its own export is demanded
      const resolution = module.resolutions[index];
      const targets = resolution.kind === "module"
        ? [resolution.path, resolution.also].filter((t): t is string => !!t)
        : [];
      for (const target of targets) {
        const targetSummary = modules.get(target)?.summary;
        for (const binding of record.bindings) {
          const where = `${from}:${record.line}`;
          if (binding.imported === "*" || (binding.imported === "default" && targetSummary?.commonjs)) {
            // The module object: its members read, or all of it when it escapes; unused, nothing.
            if (binding.escapes) whole(target, { used: false, reason: `the module object escapes in ${where}` });
            for (const member of binding.members ?? []) {
              demand(target, member, member === "default" ? { used: true, via: where } : USED);
            }
            if (binding.escapes || binding.members) demand(target, "export=", USED);
            continue;
          }
          demand(
            target,
            binding.imported,
            USED,
            binding.escapes ? { escapes: where } : { only: binding.members ?? [] },
          );
        }
      }
    });
  }

  // Imports the graph could not resolve may name a module: their names are maybe-used there.
  const byStem = new Map<string, string[]>();
  for (const file of modules.keys()) {
    let base = path.posix.basename(file).replace(/(\.d)?\.[^.]+$/, "");
    if (base === "index") base = path.posix.basename(path.posix.dirname(file));
    const key = base.toLowerCase();
    byStem.set(key, [...(byStem.get(key) ?? []), file]);
  }
  for (const [from, module] of modules) {
    module.summary?.imports.forEach((record, index) => {
      const resolution = module.resolutions[index];
      if (resolution.kind !== "unresolved" || !resolution.internal) return;
      const spec = record.specifier.replace(/^#/, "").replace(/[?#].*$/, "").replace(/\/+$/, "");
      const last = spec.slice(spec.lastIndexOf("/") + 1).replace(/(\.d)?\.[^.]+$/, "").toLowerCase();
      const reason = `${from}:${record.line} imports ${JSON.stringify(record.specifier)}, which does not resolve`;
      for (const candidate of byStem.get(last) ?? []) {
        for (const binding of record.bindings) {
          if (binding.imported === "*" || record.kind === "re-export") whole(candidate, { used: false, reason });
          else demand(candidate, binding.imported, { used: false, reason });
        }
      }
    });
  }

  // Computed import() and require(): modules no static import reaches, under the pattern when there is one.
  const computed = graph.unknowns.filter((u) => u.kind === "computed-import");
  if (computed.length > 0) {
    const imported = new Set<string>();
    for (const module of modules.values()) {
      for (const resolution of module.resolutions) {
        if (resolution.kind === "module") {
          imported.add(resolution.path);
          if (resolution.also) imported.add(resolution.also);
        }
      }
    }
    const entrySet = new Set(entries.map((e) => e.file));
    for (const unknown of computed) {
      const re = unknown.pattern ? globToRegExp(unknown.pattern) : undefined;
      const reason = `${unknown.path}:${unknown.line} ${unknown.reason} may load it`;
      for (const [file, module] of modules) {
        if (module.outside || imported.has(file) || entrySet.has(file) || file === unknown.path) continue;
        if (re && !re.test(file) && !re.test(file.replace(/\.[^./]+$/, ""))) continue;
        whole(file, { used: false, reason });
      }
    }
  }

  // Flow demands through re-exports. A demand seen before is not followed again; its members are told apart by
  // identity (a binding's list travels as one object along the re-exports), which only risks following twice.
  const memberIds = new Map<Members, number>();
  const exportsByName = new Map<string, Map<string, ExportRecord[]>>();
  const exportsNamed = (module: string, summary: ModuleSummary, name: string): readonly ExportRecord[] => {
    let byName = exportsByName.get(module);
    if (!byName) {
      exportsByName.set(module, byName = new Map());
      for (const record of summary.exports) {
        const list = byName.get(record.name);
        if (list) list.push(record);
        else byName.set(record.name, [record]);
      }
    }
    return byName.get(name) ?? [];
  };
  while (queue.length > 0) {
    const { module, name, members, certainty } = queue.pop()!;
    const graphModule = modules.get(module)!;
    const summary = graphModule.summary!;
    const changed = mark(module, name, certainty);
    let membersId = 0;
    if (members) {
      membersId = memberIds.get(members) ?? memberIds.size + 1;
      memberIds.set(members, membersId);
    }
    // By module and name (strings already hashed), then certainty and members: no key string to build and hash.
    let byName = seenDemands.get(module);
    if (!byName) seenDemands.set(module, byName = new Map());
    let variants = byName.get(name);
    if (!variants) byName.set(name, variants = new Set());
    const variant = membersId * 2 + (certainty.used ? 1 : 0);
    if (!changed && variants.has(variant)) continue;
    variants.add(variant);
    const own = exportsNamed(module, summary, name);
    for (const record of own) {
      if (record.from === undefined) continue;
      // To a declaration file and the module it types, both (`export * from "./a.js"` → a.d.ts, a.js).
      for (const target of resolvedModules(graphModule, record.from)) {
        if (record.sourceName !== "*") {
          demand(target, record.sourceName!, certainty, members);
        } else if (members === undefined) {
          whole(target, certainty); // a public namespace: all of it
        } else if ("escapes" in members) {
          whole(target, {
            used: false,
            reason: `${module} re-exports it as ${name}, which escapes in ${members.escapes}`,
          });
        } else {
          for (const member of members.only) demand(target, member, certainty);
        }
      }
    }
    if (own.length > 0) continue;
    // What `module.exports = value` (or `export =`) assigned is the module: a name it does not export is read from
    // that value, and so is the default an interop helper or Node's `import` reads.
    if (exportsNamed(module, summary, "export=").length > 0 && name !== "export=") {
      demand(module, "export=", certainty);
      continue;
    }
    if (name === "default") {
      // `export *` never carries default. A CommonJS module without `exports.default` gives its module object as
      // default (`__importDefault(require("x")).default`): all its exports, read who knows how.
      if (summary.commonjs) {
        whole(module, {
          used: false,
          reason: certainty.used
            ? `the module object is read as its default${certainty.via ? ` in ${certainty.via}` : ""}`
            : certainty.reason,
        });
      }
      continue;
    }
    for (const record of exportsNamed(module, summary, "*")) {
      for (const target of resolvedModules(graphModule, record.from!)) demand(target, name, certainty, members);
    }
  }

  // Files that do not parse: any name they mention may be used.
  const broken = graph.unknowns.filter((u) => u.kind === "parse-error" || u.kind === "unreadable");
  const mentioned = new Map<string, string>();
  for (const unknown of broken) {
    const words = modules.get(unknown.path)?.summary?.words;
    if (!words) continue;
    for (const word of words) if (!mentioned.has(word)) mentioned.set(word, unknown.path);
  }
  const unreadable = broken.find((u) => u.kind === "unreadable");

  const dead: ExportFinding[] = [];
  const undetermined: ExportFinding[] = [];
  let used = 0;
  const usedIn: string[] = [];
  let total = 0;
  for (const [file, module] of [...modules].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (module.outside || !module.summary) continue;
    // A name declared as a type and as a value (`interface Z` and `const Z`) is one export, and a value: its kinds are
    // the union of its declarations, so the finding is the first value declaration when there is one.
    const byName = new Map<string, ExportRecord>();
    for (const record of module.summary.exports) {
      const first = byName.get(record.name);
      if (!first || (first.typeOnly && !record.typeOnly)) byName.set(record.name, record);
    }
    for (const record of byName.values()) {
      if (record.name === "*") continue;
      total++;
      const finding = {
        file,
        name: record.name,
        line: record.line,
        kind: record.kind === "value" && record.local === undefined && record.name !== "default"
          ? "value" as const
          : record.kind,
        typeOnly: record.typeOnly,
        usedInFile: record.usedInFile === true,
      };
      const state = status.get(file)?.get(record.name);
      if (state?.used) {
        used++;
        usedIn.push(file);
        continue;
      }
      if (state) {
        undetermined.push({ ...finding, reason: state.reason });
        continue;
      }
      const mention = mentioned.get(record.name);
      if (mention && mention !== file) {
        undetermined.push({ ...finding, reason: `${mention} does not parse and mentions ${record.name}` });
      } else if (unreadable) {
        undetermined.push({ ...finding, reason: `${unreadable.path} could not be read (${unreadable.reason})` });
      } else dead.push(finding);
    }
  }
  return { entryPoints: entries, dead, undetermined, used, usedIn, total };
}

/** The modules an import leads to: a module, or a declaration file and the module it types. */
function resolvedModules(module: GraphModule, index: number): string[] {
  const resolution = module.resolutions[index];
  if (resolution?.kind !== "module") return [];
  return resolution.also ? [resolution.path, resolution.also] : [resolution.path];
}
