// Questions the code tools ask of a module graph: which module an argument
// names, what a module exports once re-exports are followed, and which of the
// places the graph cannot see through could change an answer.
import path from "node:path";
import { problem, received, WardenError } from "../../../core/errors.ts";
import type { ReadContext } from "../../../core/tool.ts";
import type { GraphModule, ModuleGraph, UnknownSource } from "./module_graph.ts";
import { globToRegExp } from "./packages.ts";
import type { ExportRecord, SymbolKind } from "./records.ts";
import { MODULE_EXTENSIONS } from "./module_summary.ts";
import type { Resolution } from "./resolver.ts";

/**
 * The root-relative path the root's door gives `input`, or null when nothing is there (an import-style name such
 * as `src/a` may still name a module). A path that leads out of the root (`..`, an absolute path outside it, a
 * symlink) is refused here, by the door, so that every tool refuses it with one message.
 */
async function pathInRoot(ctx: ReadContext, root: string, input: string): Promise<string | null> {
  try {
    return (await ctx.fs.stat(root, input)).path;
  } catch (error) {
    if (error instanceof WardenError && error.code === "path_refused") throw error;
    return null;
  }
}

/** The lexical root-relative form of a path the door found nothing at; an absolute one is refused. */
function relativeArgument(input: string, bad: (detail: string, fix: string) => WardenError): string {
  const slashed = input.replace(/\\/g, "/");
  if (slashed.startsWith("/") || /^[a-z]:\//i.test(slashed)) {
    throw bad(`${received(input)} is an absolute path`, "pass a path relative to the root");
  }
  return path.posix.normalize(slashed).replace(/^\.\//, "").replace(/\/$/, "") || ".";
}

/**
 * The root-relative file a path argument names: exact, or as an import
 * would find it (extension added, `index` file). Throws a WardenError that
 * names the argument when it is not a file of the root, and the door's
 * refusal when it leads out of the root.
 */
export async function fileArgument(
  ctx: ReadContext,
  graph: ModuleGraph,
  input: string,
  argument: string,
): Promise<string> {
  const bad = (detail: string, fix: string) =>
    new WardenError("invalid_arguments", problem(`Invalid argument "${argument}"`, detail, fix));
  const rel = (await pathInRoot(ctx, graph.root, input)) ?? relativeArgument(input, bad);
  if (graph.files.has(rel)) return rel;
  const candidates = [
    ...MODULE_EXTENSIONS.map((ext) => rel + ext),
    ...MODULE_EXTENSIONS.map((ext) => `${rel === "." ? "" : rel + "/"}index${ext}`),
  ];
  const found = candidates.find((c) => graph.modules.has(c)) ?? candidates.find((c) => graph.files.has(c));
  if (found) return found;
  const near = [...graph.modules.keys()].filter((m) => path.posix.basename(m).startsWith(path.posix.basename(rel)))
    .slice(0, 3);
  throw bad(
    `${received(input)} is not a file in root "${graph.root}"`,
    near.length ? `did you mean ${near.map((n) => JSON.stringify(n)).join(", ")}?` : "pass a path relative to the root",
  );
}

/**
 * A directory argument (`.` for the whole root); throws when no file of the root lies under it, and the door's
 * refusal when it leads out of the root.
 */
export async function dirArgument(
  ctx: ReadContext,
  graph: ModuleGraph,
  input: string | undefined,
  argument: string,
): Promise<string> {
  if (input === undefined) return ".";
  const bad = (detail: string, fix: string) =>
    new WardenError("invalid_arguments", problem(`Invalid argument "${argument}"`, detail, fix));
  const rel = (await pathInRoot(ctx, graph.root, input)) ?? relativeArgument(input, bad);
  if (rel === ".") return rel;
  if (graph.files.has(rel)) return rel;
  for (const file of graph.files) if (file.startsWith(rel + "/")) return rel;
  throw bad(
    `${received(input)} is not a directory or file in root "${graph.root}"`,
    "pass a path relative to the root",
  );
}

/** Whether `file` is `scope` or lies under it (`.` holds everything). */
export function within(file: string, scope: string): boolean {
  return scope === "." || file === scope || file.startsWith(scope + "/");
}

/** An import target as the tools print it. */
export interface TargetView {
  readonly kind: Resolution["kind"];
  readonly path?: string;
  readonly also?: string;
  readonly package?: string;
  readonly installed?: boolean;
  readonly name?: string;
  readonly reason?: string;
}

/** A resolution, flattened for output. */
export function targetView(resolution: Resolution): TargetView {
  return { ...resolution };
}

/** One name a module exports, re-exports followed. */
export interface ExportView {
  readonly name: string;
  readonly kind: SymbolKind;
  /** Each kind of declaration the name merges, when there are several (`interface Z` and `const Z`). */
  readonly kinds?: SymbolKind[];
  /** Whether what the name finally names is a type only, as the checker says (see exportMeaning). */
  readonly typeOnly: boolean;
  readonly line: number;
  /** For re-exports: the specifier written, and where it leads. */
  readonly from?: { readonly specifier: string; readonly target: TargetView; readonly name: string };
  /** Reached through `export * from`. */
  readonly viaStar?: boolean;
  /** Added by `declare module "…"` in this module (`line` is that block's line there). */
  readonly augmentedBy?: string;
}

/** The import binding a local name of `module` comes from, if it is one. */
export function importOfLocal(
  module: GraphModule,
  local: string,
): { index: number; imported: string; typeOnly: boolean } | undefined {
  const imports = module.summary?.imports ?? [];
  for (let index = 0; index < imports.length; index++) {
    const record = imports[index];
    if (record.kind === "re-export" || record.kind === "augmentation") continue;
    for (const binding of record.bindings) {
      if (binding.local === local) return { index, imported: binding.imported, typeOnly: binding.typeOnly };
    }
  }
  return undefined;
}

/** What an exported name finally names: the kinds of its declarations, and whether each of them is a type only. */
export interface ExportMeaning {
  readonly kinds: readonly SymbolKind[];
  readonly typeOnly: boolean;
}

/** Kinds that never have a value. */
const TYPE_KINDS: ReadonlySet<SymbolKind> = new Set(["interface", "type"]);

function resolvedPath(module: GraphModule, index: number): string | undefined {
  const resolution = module.resolutions[index];
  return resolution?.kind === "module" ? resolution.path : undefined;
}

/** The names `declare module "…"` blocks of other modules add to `path`, with the module each comes from. */
function augmentationsOf(graph: ModuleGraph, path: string): { from: string; record: ExportRecord }[] {
  let memo = graph.memo.get("augmentations") as Map<string, { from: string; record: ExportRecord }[]> | undefined;
  if (!memo) graph.memo.set("augmentations", memo = new Map());
  const known = memo.get(path);
  if (known) return known;
  const out: { from: string; record: ExportRecord }[] = [];
  memo.set(path, out);
  for (const edge of graph.importersOf(path)) {
    const summary = graph.modules.get(edge.from)?.summary;
    const block = summary?.augmentations?.find((a) => a.index === edge.index);
    for (const record of block?.exports ?? []) out.push({ from: edge.from, record });
  }
  return out;
}

/**
 * What `name`, exported by `path`, finally names, as TypeScript's checker sees it: the union of its declarations
 * (merged declarations, augmentations), followed through `export { a } from`, `export { a }` of an import and
 * `export *`; type-only when each declaration is a type (an interface, a type alias, a namespace of types only) or when
 * a step on the way is type-only (`export type`, `import type`). undefined when the graph cannot follow it (a package,
 * an unresolved import): callers keep what the statement itself says. Answers are kept in the graph's memo.
 */
export function exportMeaning(graph: ModuleGraph, path: string, name: string): ExportMeaning | undefined {
  let memo = graph.memo.get("exportMeaning") as Map<string, ExportMeaning | null> | undefined;
  if (!memo) graph.memo.set("exportMeaning", memo = new Map());
  const key = `${path}\0${name}`;
  // null: being worked out further up (a cycle of re-exports), which adds nothing.
  if (memo.has(key)) return memo.get(key) ?? undefined;
  memo.set(key, null);
  const found = meaningOf(graph, path, name);
  memo.set(key, found ?? null);
  return found;
}

function meaningOf(graph: ModuleGraph, path: string, name: string): ExportMeaning | undefined {
  const module = graph.modules.get(path);
  const summary = module?.summary;
  if (!module || !summary) return undefined;
  const parts: ExportMeaning[] = [];
  const own = summary.exports.filter((record) => record.name === name);
  for (const record of own) parts.push(recordMeaning(graph, module, record));
  for (const { record } of augmentationsOf(graph, path)) {
    if (record.name === name) parts.push({ kinds: [record.kind], typeOnly: record.typeOnly });
  }
  if (own.length === 0 && name !== "default") {
    for (const star of summary.exports) {
      if (star.name !== "*") continue;
      const target = resolvedPath(module, star.from!);
      const inner = target === undefined ? undefined : exportMeaning(graph, target, name);
      if (inner) {
        parts.push(star.typeOnly ? { kinds: inner.kinds, typeOnly: true } : inner);
        break;
      }
    }
  }
  if (parts.length === 0) return undefined;
  return { kinds: [...new Set(parts.flatMap((p) => p.kinds))], typeOnly: parts.every((p) => p.typeOnly) };
}

function recordMeaning(graph: ModuleGraph, module: GraphModule, record: ExportRecord): ExportMeaning {
  const as = (inner: ExportMeaning | undefined, typeOnly: boolean): ExportMeaning =>
    inner
      ? { kinds: inner.kinds, typeOnly: typeOnly || inner.typeOnly }
      : { kinds: [record.kind], typeOnly: typeOnly || record.typeOnly };
  if (record.from !== undefined) {
    if (record.sourceName === "*") return { kinds: ["namespace"], typeOnly: record.typeOnly };
    const target = resolvedPath(module, record.from);
    return as(target === undefined ? undefined : exportMeaning(graph, target, record.sourceName!), record.typeOnly);
  }
  if (record.kind !== "value" || record.local === undefined) {
    return { kinds: [record.kind], typeOnly: record.typeOnly };
  }
  // `export { a }`, `export default a`: a declaration of the module, or an import.
  const local = record.local;
  const declarations = module.summary!.symbols.filter((symbol) => symbol.name === local);
  if (declarations.length > 0) {
    return {
      kinds: [...new Set(declarations.map((d) => d.kind))],
      typeOnly: record.typeOnly || declarations.every((d) => d.typeOnly),
    };
  }
  const binding = importOfLocal(module, local);
  if (!binding) return { kinds: [record.kind], typeOnly: record.typeOnly };
  if (binding.imported === "*") return { kinds: ["namespace"], typeOnly: record.typeOnly || binding.typeOnly };
  const target = resolvedPath(module, binding.index);
  return as(
    target === undefined ? undefined : exportMeaning(graph, target, binding.imported),
    record.typeOnly || binding.typeOnly,
  );
}

/**
 * What `path` exports, one row per name: its own exports, re-exports with their source, the names `export *` brings
 * from modules of the root (recursively; a local name wins over a star, as in TypeScript) and those `declare module`
 * blocks of other modules add. Stars that lead outside the root or nowhere are returned as `opaque`.
 */
export function moduleExports(
  graph: ModuleGraph,
  path: string,
  seen: Set<string> = new Set(),
): { exports: ExportView[]; opaque: { specifier: string; line: number; target: TargetView }[] } {
  const module = graph.modules.get(path);
  const summary = module?.summary;
  if (!module || !summary || seen.has(path)) return { exports: [], opaque: [] };
  seen.add(path);
  const byName = new Map<string, ExportView>();
  const opaque: { specifier: string; line: number; target: TargetView }[] = [];
  const stars: ExportRecord[] = [];
  const own = new Map<string, ExportRecord[]>();
  for (const record of summary.exports) {
    if (record.name === "*") stars.push(record);
    else own.set(record.name, [...(own.get(record.name) ?? []), record]);
  }
  for (const [name, records] of own) {
    // Merged declarations read as their value, when one has a value (`interface Z` and `const Z` is a variable).
    const record = records.find((r) => !r.typeOnly && !TYPE_KINDS.has(r.kind)) ?? records[0];
    let from: ExportView["from"];
    if (record.from !== undefined) {
      const imp = summary.imports[record.from];
      from = {
        specifier: imp.specifier,
        target: targetView(module.resolutions[record.from]),
        name: record.sourceName!,
      };
    } else if (record.local !== undefined) {
      const binding = importOfLocal(module, record.local);
      if (binding) {
        const imp = summary.imports[binding.index];
        from = {
          specifier: imp.specifier,
          target: targetView(module.resolutions[binding.index]),
          name: binding.imported,
        };
      }
    }
    const kinds = [...new Set(records.map((r) => r.kind))];
    byName.set(name, {
      name,
      kind: from && record.kind === "value" ? "re-export" : record.kind,
      ...(kinds.length > 1 ? { kinds } : {}),
      typeOnly: exportMeaning(graph, path, name)?.typeOnly ?? records.every((r) => r.typeOnly),
      line: records[0].line,
      ...(from ? { from } : {}),
    });
  }
  for (const star of stars) {
    const imp = summary.imports[star.from!];
    const resolution = module.resolutions[star.from!];
    if (resolution.kind !== "module" || !graph.modules.get(resolution.path)?.summary) {
      opaque.push({ specifier: imp.specifier, line: star.line, target: targetView(resolution) });
      continue;
    }
    const inner = moduleExports(graph, resolution.path, new Set(seen));
    opaque.push(...inner.opaque.map((o) => ({ ...o, line: star.line, specifier: imp.specifier })));
    for (const exp of inner.exports) {
      if (exp.name === "default" || byName.has(exp.name)) continue;
      byName.set(exp.name, {
        name: exp.name,
        kind: exp.kind,
        ...(exp.kinds ? { kinds: exp.kinds } : {}),
        typeOnly: exp.typeOnly || star.typeOnly,
        line: star.line,
        from: { specifier: imp.specifier, target: targetView(resolution), name: exp.name },
        viaStar: true,
      });
    }
  }
  for (const { from, record } of augmentationsOf(graph, path)) {
    const known = byName.get(record.name);
    if (!known) {
      byName.set(record.name, {
        name: record.name,
        kind: record.kind,
        typeOnly: record.typeOnly,
        line: record.line,
        augmentedBy: from,
      });
      continue;
    }
    const kinds = [...new Set([...(known.kinds ?? [known.kind]), record.kind])];
    byName.set(record.name, {
      ...known,
      ...(kinds.length > 1 ? { kinds } : {}),
      typeOnly: known.typeOnly && record.typeOnly,
    });
  }
  return { exports: [...byName.values()], opaque };
}

/** A file whose imports are not fully known and that could change an answer. */
export interface UnknownView {
  readonly path: string;
  readonly kind: UnknownSource["kind"];
  readonly reason: string;
  readonly line?: number;
  readonly specifier?: string;
}

function stemOf(file: string): string[] {
  const base = path.posix.basename(file).replace(/(\.d)?\.[^.]+$/, "");
  if (base === "index") {
    const dir = path.posix.basename(path.posix.dirname(file));
    return dir && dir !== "." ? [dir] : [];
  }
  return [base];
}

/**
 * The unknown sources that could import one of `targets` without the graph
 * seeing it: a file that does not parse and mentions a target's name, an
 * unresolved specifier whose last segment names a target, a computed import
 * whose pattern matches one (or that has no pattern). Files in `known` (already
 * in the answer) are left out: their unknown imports cannot add them again.
 */
export function unknownsReaching(
  graph: ModuleGraph,
  targets: Iterable<string>,
  known: ReadonlySet<string>,
): UnknownView[] {
  if (graph.unknowns.length === 0) return [];
  const list = [...targets];
  const stems = new Set<string>();
  for (const target of list) for (const stem of stemOf(target)) stems.add(stem.toLowerCase());
  const out: UnknownView[] = [];
  for (const unknown of graph.unknowns) {
    if (known.has(unknown.path)) continue;
    let reaches = false;
    switch (unknown.kind) {
      case "unreadable":
        reaches = true;
        break;
      case "parse-error": {
        const words = graph.modules.get(unknown.path)?.summary?.words ?? [];
        reaches = words.some((w) => stems.has(w.toLowerCase()));
        break;
      }
      case "unresolved": {
        const spec = (unknown.specifier ?? "").replace(/^#/, "").replace(/[?#].*$/, "").replace(/\/+$/, "");
        const last = spec.slice(spec.lastIndexOf("/") + 1).replace(/(\.d)?\.[^.]+$/, "").toLowerCase();
        reaches = last === "" || last === "." || last === ".." || stems.has(last);
        break;
      }
      case "computed-import": {
        if (!unknown.pattern) reaches = true;
        else {
          const re = globToRegExp(unknown.pattern);
          reaches = list.some((t) => re.test(t) || re.test(t.replace(/\.[^./]+$/, "")));
        }
        break;
      }
    }
    if (reaches) {
      out.push({
        path: unknown.path,
        kind: unknown.kind,
        reason: unknown.reason,
        ...(unknown.line !== undefined ? { line: unknown.line } : {}),
        ...(unknown.specifier !== undefined ? { specifier: unknown.specifier } : {}),
      });
    }
  }
  return out;
}

/** The language of a file, by extension. */
export function languageOf(file: string): string {
  const ext = file.slice(file.lastIndexOf(".") + 1).toLowerCase();
  if (/\.d\.[mc]?ts$/.test(file)) return "typescript-declaration";
  if (["ts", "mts", "cts"].includes(ext)) return "typescript";
  if (ext === "tsx") return "tsx";
  if (["js", "mjs", "cjs"].includes(ext)) return "javascript";
  if (ext === "jsx") return "jsx";
  if (ext === "json") return "json";
  return ext || "unknown";
}

/** How many dependents answers a graph keeps. */
const RECENT_DEPENDENTS = 8;

/**
 * Every module that imports `file`, directly or through others, breadth
 * first: its shortest depth and one module at depth - 1 it is reached
 * through. `valueOnly` skips type-only edges (run-time dependents only).
 * The map iterates by depth, then by path: callers list it as it is.
 * The last few answers are kept in the graph's memo: asked again of the same graph, the same map.
 */
export function dependentsOf(
  graph: ModuleGraph,
  file: string,
  options: { valueOnly: boolean; maxDepth?: number },
): ReadonlyMap<string, { readonly depth: number; readonly via: string }> {
  const maxDepth = options.maxDepth ?? Infinity;
  let recent = graph.memo.get("dependents") as Map<string, Map<string, { depth: number; via: string }>> | undefined;
  if (!recent) graph.memo.set("dependents", recent = new Map());
  const key = `${file}\0${options.valueOnly}\0${maxDepth}`;
  const known = recent.get(key);
  if (known) return known;
  const found = new Map<string, { depth: number; via: string }>();
  // The last few answers only: one per module of a large graph would hold the graph's square.
  recent.set(key, found);
  if (recent.size > RECENT_DEPENDENTS) recent.delete(recent.keys().next().value!);
  let frontier = [file];
  for (let depth = 1; frontier.length > 0 && depth <= maxDepth; depth++) {
    // This depth's modules, each with the first module of the (sorted) frontier that reaches it.
    const level = new Map<string, string>();
    for (const target of frontier) {
      for (const edge of graph.importersOf(target)) {
        if (options.valueOnly && edge.typeOnly) continue;
        if (edge.from === file || found.has(edge.from) || level.has(edge.from)) continue;
        level.set(edge.from, target);
      }
    }
    frontier = [...level.keys()].sort();
    for (const path of frontier) found.set(path, { depth, via: level.get(path)! });
  }
  return found;
}
