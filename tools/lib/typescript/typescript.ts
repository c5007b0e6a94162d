// The TypeScript compiler API (the copy ts-morph bundles) for the tools that
// analyse code, loaded on first use (code_cache.ts): it is several megabytes
// that start-up should not pay for.
// Only the compiler file is loaded, as CommonJS: importing "ts-morph" (its
// project layer too) is slower by far, and importing the file
// as ESM makes node scan all 9 MB for export names (scripts/bench/README.md).
import type { ts as TS } from "ts-morph";

/** The `ts` namespace as a value. */
export type TsApi = typeof TS;

let loading: Promise<TsApi> | undefined;

/** Loads TypeScript once per process; later calls share the same promise. */
export function loadTypeScript(): Promise<TsApi> {
  loading ??= import("./code_cache.ts").then((cache) =>
    cache.requireDependency("ts-morph", "@ts-morph/common/dist/typescript.js") as TsApi
  );
  return loading;
}

/**
 * Tells the code cache that TypeScript's compiler has done real work (a graph of many modules read): the code it keeps
 * between runs can now hold the functions that work compiled, which later runs then need not compile.
 */
export function typeScriptWarm(): void {
  if (loading) void import("./code_cache.ts").then((cache) => cache.dependenciesWarm());
}
