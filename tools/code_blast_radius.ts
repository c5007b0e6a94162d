// code_blast_radius (read): every module of a root that imports a module,
// directly or transitively, with depth and type-only dependencies marked.
import * as v from "valibot";
import { defineTool, projectIdInput } from "../core/tool.ts";
import type { ImportEdge } from "./lib/graph/module_graph.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

/** One import statement of a direct dependent that names the module. */
interface ImportView {
  line: number;
  specifier: string;
  kind: string;
  typeOnly: boolean;
}

/**
 * Risk class `read`: lists and reads the files of one configured root through
 * `ctx.fs` (node_modules left out) and touches nothing else.
 */
export const tool = defineTool({
  name: "code_blast_radius",
  title: "Blast radius of a module",
  description:
    "Lists every module of a root that imports a module, directly or through other modules: the direct importers (with the lines and specifiers that import it) and the transitive ones with their depth and one module they reach it through. `typeOnly` marks dependents that need the module for types only (every path to it goes through a type-only import), which a change to its runtime behaviour cannot break; an import is type-only by the run-time edge rule of isolated-module emit, read from its form (`import type`, `export type`, every name marked `type`, an `import()` type, an import in a declaration file or a `declare module` block, a module augmentation), never from how its names are used. When a file does not parse, an import does not resolve or a specifier is computed and that could add dependents, `lowerBound` is true and `unknownFrom` lists them: the answer is then a lower bound, never complete-looking. The graph is cached per root and refreshed by file size and mtime. The answer leads with totals; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    module: v.pipe(
      v.string(),
      v.minLength(1),
      v.description('Module path relative to the root, e.g. "src/db.ts" (the extension and `index` may be left out).'),
    ),
    project_id: projectIdInput,
    maxDepth: v.optional(v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.description("Follow importers this many levels up at most (default: all)."),
    )),
    includeTypeOnly: v.optional(v.pipe(
      v.boolean(),
      v.description("Follow type-only imports too (default true); false keeps run-time dependents only."),
    )),
    ...pageInput("dependents"),
  }),
  output: v.object({
    totals: v.object({
      direct: v.number(),
      transitive: v.number(),
      dependents: v.number(),
      runtime: v.number(),
      typeOnly: v.number(),
      maxDepth: v.number(),
    }),
    ...pageOutput,
    truncated: v.boolean(),
    lowerBound: v.boolean(),
    project_id: v.pipe(v.string(), v.description("The project read.")),
    module: v.string(),
    direct: v.array(v.object({
      path: v.string(),
      typeOnly: v.boolean(),
      imports: v.array(v.object({ line: v.number(), specifier: v.string(), kind: v.string(), typeOnly: v.boolean() })),
    })),
    transitive: v.array(v.object({ path: v.string(), depth: v.number(), typeOnly: v.boolean(), via: v.string() })),
    unknownFrom: v.array(v.object({
      path: v.string(),
      kind: v.string(),
      reason: v.string(),
      line: v.optional(v.number()),
      specifier: v.optional(v.string()),
    })),
    graph: v.object({ modules: v.number(), cached: v.boolean(), parsed: v.number(), ms: v.number() }),
  }),
  handler: async (args, ctx) => {
    // The graph code loads on the first call, not at startup (scripts/bench/README.md, "Start-up").
    const { moduleGraph } = await import("./lib/graph/module_graph.ts");
    const { dependentsOf, fileArgument, unknownsReaching } = await import("./lib/graph/graph_queries.ts");
    const root = args.project_id;
    const graph = await moduleGraph(ctx, root);
    const file = await fileArgument(ctx, graph, args.module, "module");
    const includeTypeOnly = args.includeTypeOnly ?? true;
    const maxDepth = args.maxDepth ?? Infinity;

    const runtime = dependentsOf(graph, file, { valueOnly: true, maxDepth });
    const all = includeTypeOnly ? dependentsOf(graph, file, { valueOnly: false, maxDepth }) : runtime;

    const edgesFrom = new Map<string, ImportEdge[]>();
    for (const edge of graph.importersOf(file)) {
      const list = edgesFrom.get(edge.from);
      if (list) list.push(edge);
      else edgesFrom.set(edge.from, [edge]);
    }
    // `all` is in order of depth, then path: the lists keep it.
    const direct: { path: string; typeOnly: boolean; imports: ImportView[] }[] = [];
    const transitive: { path: string; depth: number; typeOnly: boolean; via: string }[] = [];
    let deepest = 0;
    for (const [path, { depth, via }] of all) {
      deepest = depth;
      if (depth === 1) {
        const summary = graph.modules.get(path)!.summary!;
        const imports = (edgesFrom.get(path) ?? []).map((e): ImportView => {
          const record = summary.imports[e.index];
          return { line: record.line, specifier: record.specifier, kind: record.kind, typeOnly: record.typeOnly };
        }).sort((a, b) => a.line - b.line);
        direct.push({ path, typeOnly: !runtime.has(path), imports });
      } else transitive.push({ path, depth, typeOnly: !runtime.has(path), via });
    }
    const reached = [file, ...all.keys()];
    const unknownFrom = unknownsReaching(graph, reached, new Set(reached));
    const answer = {
      totals: {
        direct: direct.length,
        transitive: transitive.length,
        dependents: all.size,
        runtime: runtime.size,
        typeOnly: all.size - runtime.size,
        maxDepth: deepest,
      },
      truncated: false,
      lowerBound: unknownFrom.length > 0,
      project_id: root,
      module: file,
      direct,
      transitive,
      unknownFrom,
      graph: {
        modules: graph.modules.size,
        cached: graph.build.cached,
        parsed: graph.build.parsed,
        ms: graph.build.ms,
      },
    };
    const paged = await paginate(answer, {
      tool: "code_blast_radius",
      args,
      lists: ["direct", "transitive", "unknownFrom"],
      volatile: ["graph"],
      memo: graph.memo,
    });
    return { ...paged, truncated: paged.nextCursor !== undefined };
  },
});
