// code_about (read): one module of a root, what it exports, imports (resolved
// as TypeScript would), declares, and which modules import it.
import * as v from "valibot";
import { defineTool, projectIdInput } from "../core/tool.ts";
import type { Binding } from "./lib/graph/records.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

const Target = v.object({
  kind: v.picklist(["module", "asset", "external", "builtin", "unresolved"]),
  path: v.optional(v.string()),
  also: v.optional(v.string()),
  package: v.optional(v.string()),
  installed: v.optional(v.boolean()),
  name: v.optional(v.string()),
  reason: v.optional(v.string()),
  internal: v.optional(v.boolean()),
});

const Unknown = v.object({
  path: v.string(),
  kind: v.string(),
  reason: v.string(),
  line: v.optional(v.number()),
  specifier: v.optional(v.string()),
});

/** How a binding reads in a listing: `a`, `a as b`, `type A`, `* as ns`, `default as X`. */
function bindingText(binding: Binding, reExport: boolean): string {
  const type = binding.typeOnly ? "type " : "";
  if (reExport && binding.local === "*") return `${type}*`;
  if (!binding.local) return `${type}${binding.imported}`;
  return binding.imported === binding.local
    ? `${type}${binding.local}`
    : `${type}${binding.imported} as ${binding.local}`;
}

/**
 * Risk class `read`: lists and reads the files of one configured root through
 * `ctx.fs` (node_modules left out) and touches nothing else.
 */
export const tool = defineTool({
  name: "code_about",
  title: "About a module",
  description:
    "Describes one JavaScript or TypeScript module of a root: its exports, one per name (kind, `kinds` when declarations merge, type-only as TypeScript's checker says: every declaration a type, or a type-only step on the way; for re-exports the specifier and module they come from, `export *` expanded, names that `declare module` blocks elsewhere add marked `augmentedBy`), its imports (specifier, line, kind, type-only, the names bound, and where it resolves: a module of the root, an asset, an external or built-in package, or `unresolved` with why), the modules that import it, and the symbols it declares. An import's `typeOnly` is the run-time edge rule of isolated-module emit, read from the statement's form: `import type`, `export type`, an import or re-export whose every name is marked `type`, an `import()` type, an import in a declaration file or a `declare module` block, and the `augmentation` of a module are type-only; every other form (`import {} from`, names used only as types included) is a run-time edge. Resolution follows tsconfig paths/baseUrl/extends/references, package.json exports/imports and workspaces, as TypeScript does. `importersLowerBound` is true when files that do not parse or imports that do not resolve could add importers; `unknownFrom` lists them. The answer leads with totals; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    module: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Module path relative to the root, e.g. "src/app.ts" (the extension and `index` may be left out).'),
    ),
    project_id: projectIdInput,
    ...pageInput("rows"),
  }),
  output: v.object({
    totals: v.object({ exports: v.number(), imports: v.number(), importedBy: v.number(), symbols: v.number() }),
    ...pageOutput,
    project_id: v.pipe(v.string(), v.description("The project read.")),
    module: v.string(),
    language: v.string(),
    project: v.nullable(v.string()),
    outside: v.boolean(),
    parseError: v.optional(v.object({ line: v.number(), message: v.string() })),
    exports: v.array(v.object({
      name: v.string(),
      kind: v.string(),
      kinds: v.optional(v.array(v.string())),
      typeOnly: v.boolean(),
      line: v.number(),
      from: v.optional(v.object({ specifier: v.string(), name: v.string(), target: Target })),
      viaStar: v.optional(v.boolean()),
      augmentedBy: v.optional(v.string()),
    })),
    starExportsNotExpanded: v.array(v.object({ specifier: v.string(), line: v.number(), target: Target })),
    imports: v.array(v.object({
      specifier: v.string(),
      line: v.number(),
      kind: v.string(),
      typeOnly: v.boolean(),
      names: v.array(v.string()),
      target: Target,
    })),
    importedBy: v.array(v.object({
      path: v.string(),
      typeOnly: v.boolean(),
      imports: v.array(
        v.object({ line: v.number(), specifier: v.string(), kind: v.string(), names: v.array(v.string()) }),
      ),
    })),
    importersLowerBound: v.boolean(),
    unknownFrom: v.array(Unknown),
    symbols: v.array(v.object({
      name: v.string(),
      kind: v.string(),
      line: v.number(),
      exported: v.boolean(),
      typeOnly: v.boolean(),
    })),
    warnings: v.array(v.string()),
  }),
  handler: async (args, ctx) => {
    // The graph code loads on the first call, not at startup (scripts/bench/README.md, "Start-up").
    const { moduleGraph } = await import("./lib/graph/module_graph.ts");
    const { fileArgument, languageOf, moduleExports, targetView, unknownsReaching } = await import(
      "./lib/graph/graph_queries.ts"
    );
    const root = args.project_id;
    const graph = await moduleGraph(ctx, root);
    const file = await fileArgument(ctx, graph, args.module, "module");
    const module = graph.modules.get(file);
    const summary = module?.summary;
    const { exports, opaque } = moduleExports(graph, file);
    const imports = (summary?.imports ?? []).map((record, index) => ({
      specifier: record.specifier,
      line: record.line,
      kind: record.kind,
      typeOnly: record.typeOnly,
      names: record.bindings.map((b) => bindingText(b, record.kind === "re-export")),
      target: targetView(module!.resolutions[index]),
    })).sort((a, b) => a.line - b.line || (a.specifier < b.specifier ? -1 : a.specifier > b.specifier ? 1 : 0));

    const byImporter = new Map<
      string,
      { typeOnly: boolean; imports: { line: number; specifier: string; kind: string; names: string[] }[] }
    >();
    for (const edge of graph.importersOf(file)) {
      const record = graph.modules.get(edge.from)!.summary!.imports[edge.index];
      let entry = byImporter.get(edge.from);
      if (!entry) byImporter.set(edge.from, entry = { typeOnly: true, imports: [] });
      entry.typeOnly &&= record.typeOnly;
      entry.imports.push({
        line: record.line,
        specifier: record.specifier,
        kind: record.kind,
        names: record.bindings.map((b) => bindingText(b, record.kind === "re-export")),
      });
    }
    const importedBy = [...byImporter.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([path, entry]) => ({
        path,
        typeOnly: entry.typeOnly,
        imports: entry.imports.sort((a, b) => a.line - b.line),
      }));
    const unknownFrom = unknownsReaching(graph, [file], new Set([file, ...byImporter.keys()]));
    const symbols = summary?.symbols ?? [];

    const answer = {
      totals: {
        exports: exports.length,
        imports: imports.length,
        importedBy: importedBy.length,
        symbols: symbols.length,
      },
      project_id: root,
      module: file,
      language: languageOf(file),
      project: graph.configs.configFor(file)?.path ?? null,
      outside: module?.outside ?? graph.ignored.has(file),
      ...(summary?.parseError ? { parseError: summary.parseError } : {}),
      exports: exports.sort((a, b) => a.line - b.line || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      starExportsNotExpanded: opaque,
      imports,
      importedBy,
      importersLowerBound: unknownFrom.length > 0,
      unknownFrom,
      symbols: [...symbols].sort((a, b) => a.line - b.line || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      warnings: [...graph.warnings],
    };
    return await paginate(answer, {
      tool: "code_about",
      args,
      lists: ["exports", "imports", "importedBy", "unknownFrom", "starExportsNotExpanded"],
      later: ["symbols", "warnings"],
      memo: graph.memo,
    });
  },
});
