// The TypeScript compiler API (the copy ts-morph bundles) for the tools that
// analyse code, loaded by the host on first use: tools may not load modules
// themselves, and it is several megabytes that start-up should not pay for.
// Only the compiler file is loaded, as CommonJS: importing "ts-morph" (its
// project layer too) cost node 454 ms against 177 ms, and importing the file
// as ESM makes node scan all 9 MB for export names (595 ms).
import type { ts as TS } from "ts-morph";
import { platform } from "./platform/mod.ts";

/** The `ts` namespace as a value. */
export type TsApi = typeof TS;

let loading: Promise<TsApi> | undefined;

/** Loads TypeScript once per process; later calls share the same promise. */
export function loadTypeScript(): Promise<TsApi> {
  loading ??= platform().requireDependency("ts-morph", "@ts-morph/common/dist/typescript.js") as Promise<TsApi>;
  return loading;
}

/**
 * Tells the host that TypeScript's compiler has done real work (a graph of many modules read): the code it keeps
 * between runs can now hold the functions that work compiled, which later runs then need not compile.
 */
export function typeScriptWarm(): void {
  if (loading) platform().dependenciesWarm();
}
