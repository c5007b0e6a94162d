// What the hygiene checks read of a change: its files as they are now, the
// lines each adds, and whether a file is a JavaScript or TypeScript module.
import type { ReadContext } from "../../../../core/tool.ts";
import type { ModuleGraph } from "../../graph/module_graph.ts";
import type { ChangedFile, ChangeScope } from "../types.ts";

/**
 * Whether the graph parses `path` as a module (module_summary.ts's MODULE_EXTENSIONS), without loading the graph's
 * code: the checks import it on first use, not when run_checks loads.
 */
export function isModulePath(path: string): boolean {
  return /\.(?:[mc]?[jt]s|[jt]sx)$/i.test(path);
}

/** The files of the change that exist after it (everything but deletions). */
export function presentFiles(scope: ChangeScope): ChangedFile[] {
  return scope.files.filter((file) => file.status !== "deleted");
}

/** The files of the change that are modules of the code graph (JS/TS), as they are after it. */
export function changedModules(scope: ChangeScope): ChangedFile[] {
  return presentFiles(scope).filter((file) => !file.binary && isModulePath(file.path));
}

/** The numbers of the lines `file` adds. */
export function addedLineNumbers(file: ChangedFile): Set<number> {
  return new Set(file.addedLines.map((added) => added.line));
}

const graphs = new WeakMap<ChangeScope, Promise<ModuleGraph>>();

/**
 * The code graph of the scope's root, once per scope: the checks of one run share one refresh (a stat of every file
 * the graph watches) instead of one each. The graph's code loads here, on first use.
 */
export function graphOf(scope: ChangeScope, ctx: ReadContext): Promise<ModuleGraph> {
  let graph = graphs.get(scope);
  if (!graph) {
    graph = import("../../graph/module_graph.ts").then(({ moduleGraph }) => moduleGraph(ctx, scope.root));
    graphs.set(scope, graph);
    // A failed build is not kept: the next check asks again, and reports its own error.
    graph.catch(() => graphs.delete(scope));
  }
  return graph;
}
