// code_dead_exports (read): exported symbols of a root's modules that no
// other module binds, as dead or undetermined (with why), entry points kept.
import * as v from "valibot";
import { defineTool, projectIdInput } from "../core/tool.ts";
import { DEFAULT_ENTRY_PATTERNS } from "./lib/graph/entry_patterns.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

const Finding = v.object({
  file: v.string(),
  name: v.string(),
  line: v.number(),
  kind: v.string(),
  typeOnly: v.boolean(),
  usedInFile: v.boolean(),
});

/**
 * Risk class `read`: lists and reads the files of one configured root through
 * `ctx.fs` (node_modules left out) and touches nothing else.
 */
export const tool = defineTool({
  name: "code_dead_exports",
  title: "Dead exports",
  description:
    "Finds exported symbols of a root's JavaScript and TypeScript modules that no other module binds: not imported by name, not read from a namespace import (`ns.member`), not re-exported onward to a user. CommonJS is read as compilers emit it (`exports.a =`, `module.exports =`, `Object.defineProperty(exports, …)`, the re-export and interop helpers of TypeScript, babel, swc and esbuild). `dead` ones can be removed; `undetermined` ones might be used where the graph cannot see (a namespace or CommonJS module object that escapes, a CommonJS module object read as its default, a dynamic import with a computed specifier, an import that does not resolve, a file that does not parse), each with the reason. Entry points are not dead: what package.json `main`/`module`/`types`/`typesVersions`/`bin`/`exports` name (mapped from dist/ to sources) and the declaration files beside them, index/main/cli files, tests and config files, and the `entries` globs. Each finding has file, line, kind, whether it is type-only, and `usedInFile` when its own file mentions it again (then remove the `export`, not the declaration). The analysis covers the whole root; `path` narrows what is reported. The answer leads with totals; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    project_id: projectIdInput,
    path: v.optional(
      v.pipe(v.string(), v.description("Report exports of modules under this directory or file only (default: all).")),
    ),
    entries: v.optional(v.pipe(
      v.array(v.pipe(v.string(), v.minLength(1))),
      v.description(
        'More entry points, as globs relative to the root, e.g. ["scripts/**/*.ts"]: their exports are public.',
      ),
    )),
    defaultEntries: v.optional(v.pipe(
      v.boolean(),
      v.description(`Also treat ${DEFAULT_ENTRY_PATTERNS.join(", ")} as entry points (default true).`),
    )),
    includeTypes: v.optional(
      v.pipe(v.boolean(), v.description("Report type-only exports (interfaces, types) too (default true).")),
    ),
    ...pageInput("findings"),
  }),
  output: v.object({
    totals: v.object({
      modules: v.number(),
      exports: v.number(),
      used: v.number(),
      dead: v.number(),
      undetermined: v.number(),
    }),
    ...pageOutput,
    truncated: v.boolean(),
    project_id: v.pipe(v.string(), v.description("The project read.")),
    path: v.string(),
    dead: v.array(Finding),
    undetermined: v.array(v.object({ ...Finding.entries, reason: v.string() })),
    entryPoints: v.array(v.object({ file: v.string(), from: v.string() })),
    warnings: v.array(v.string()),
    graph: v.object({ modules: v.number(), cached: v.boolean(), parsed: v.number(), ms: v.number() }),
  }),
  handler: async (args, ctx) => {
    // The graph code loads on the first call, not at startup (scripts/bench/README.md, "Start-up").
    const { moduleGraph } = await import("./lib/graph/module_graph.ts");
    const { dirArgument, within } = await import("./lib/graph/graph_queries.ts");
    const { entryPoints, exportUsage } = await import("./lib/graph/export_usage.ts");
    const root = args.project_id;
    const graph = await moduleGraph(ctx, root);
    const scope = await dirArgument(ctx, graph, args.path, "path");
    const includeTypes = args.includeTypes ?? true;
    const patterns = [
      ...(args.defaultEntries ?? true
        ? DEFAULT_ENTRY_PATTERNS.map((glob) => ({ glob, from: `default pattern ${glob}` }))
        : []),
      ...(args.entries ?? []).map((glob) => ({
        glob: glob.replace(/^\.\//, ""),
        from: `entries ${JSON.stringify(glob)}`,
      })),
    ];
    const key = `dead-exports\0${JSON.stringify(patterns)}`;
    let usage = graph.memo.get(key) as ReturnType<typeof exportUsage> | undefined;
    if (!usage) {
      usage = exportUsage(graph, entryPoints(graph, patterns));
      graph.memo.set(key, usage);
    }
    const keep = <T extends { file: string; typeOnly: boolean }>(list: readonly T[]) =>
      list.filter((f) => within(f.file, scope) && (includeTypes || !f.typeOnly));
    const dead = keep(usage.dead);
    const undetermined = keep(usage.undetermined);
    const usedInScope = scope === "." ? usage.used : usage.usedIn.filter((file) => within(file, scope)).length;
    let modules = 0;
    for (const [file, module] of graph.modules) if (!module.outside && module.summary && within(file, scope)) modules++;
    const answer = {
      totals: {
        modules,
        exports: scope === "." ? usage.total : dead.length + undetermined.length + usedInScope,
        used: usedInScope,
        dead: dead.length,
        undetermined: undetermined.length,
      },
      truncated: false,
      project_id: root,
      path: scope,
      dead: dead.map(({ reason: _, ...f }) => f),
      undetermined: undetermined.map((f) => ({ ...f, reason: f.reason ?? "" })),
      entryPoints: usage.entryPoints.filter((e) => within(e.file, scope)).map((e) => ({ ...e })),
      warnings: [...graph.warnings],
      graph: {
        modules: graph.modules.size,
        cached: graph.build.cached,
        parsed: graph.build.parsed,
        ms: graph.build.ms,
      },
    };
    const paged = await paginate(answer, {
      tool: "code_dead_exports",
      args,
      lists: ["dead", "undetermined"],
      later: ["entryPoints", "warnings"],
      volatile: ["graph"],
      memo: graph.memo,
    });
    return { ...paged, truncated: paged.nextCursor !== undefined };
  },
});
