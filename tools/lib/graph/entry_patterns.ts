// The entry points whose exports count as public when a caller names none, shared by code_dead_exports and
// run_checks' hygiene/dead-exports. Its own small module: both tools import it at start-up, before the graph's code.

/** Entry patterns used when the caller names none, as knip's defaults: index/main/cli, tests, config files. */
export const DEFAULT_ENTRY_PATTERNS: readonly string[] = Object.freeze([
  "{index,main,cli}.{js,mjs,cjs,jsx,ts,tsx,mts,cts}",
  "src/{index,main,cli}.{js,mjs,cjs,jsx,ts,tsx,mts,cts}",
  "**/*.{test,spec}.{js,mjs,cjs,jsx,ts,tsx,mts,cts}",
  "**/__tests__/**/*.{js,mjs,cjs,jsx,ts,tsx,mts,cts}",
  "**/*.config.{js,mjs,cjs,ts,mts,cts}",
]);
