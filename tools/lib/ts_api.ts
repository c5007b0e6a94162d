// TypeScript's compiler API (the copy ts-morph bundles), loaded on first use:
// it is several megabytes of JavaScript, and warden's start-up is measured.
import type { ts as TS } from "ts-morph";

/** The `ts` namespace as a value. */
export type TsApi = typeof TS;

let loading: Promise<TsApi> | undefined;

/** Loads TypeScript once per process; later calls share the same promise. */
export function loadTs(): Promise<TsApi> {
  loading ??= import("ts-morph").then((module) => module.ts);
  return loading;
}
