// What the hygiene checks read of a change: its files as they are now, the
// lines each adds, and whether a file is a JavaScript or TypeScript module.
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
