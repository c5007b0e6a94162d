// What bounds a plugin child besides its missing permissions: its memory (an
// operating-system limit where there is one) and its CPU time per call, with
// the host's defaults and maxima for what a manifest may ask; and the
// isolation text that extension_list and `warden plugin list` show.
import { platform } from "../../platform/mod.ts";

/** Memory and CPU a plugin's manifest may set under `limits`; absent ones take the default. */
export const PLUGIN_LIMITS = Object.freeze({
  /** MiB the plugin's code may use: typed arrays, WebAssembly memories and the JS heap together. */
  memoryMb: Object.freeze({ default: 512, min: 64, max: 4096 }),
  /** CPU time (all threads of the child) one call may use, in ms. */
  cpuMsPerCall: Object.freeze({ default: 30_000, min: 100, max: 600_000 }),
});

/** The limits one plugin runs under. */
export interface PluginLimits {
  readonly memoryMb: number;
  readonly cpuMsPerCall: number;
}

/** The limits of a manifest's `limits` (or of none). */
export function limitsOf(declared: Partial<PluginLimits> | undefined): PluginLimits {
  return {
    memoryMb: declared?.memoryMb ?? PLUGIN_LIMITS.memoryMb.default,
    cpuMsPerCall: declared?.cpuMsPerCall ?? PLUGIN_LIMITS.cpuMsPerCall.default,
  };
}

/**
 * Writable private memory deno maps before any plugin code runs, which
 * RLIMIT_DATA counts though it is never touched: V8 reserves a 512 MiB code
 * range per isolate (the child's main thread and the plugin's worker), and
 * the runtime ~50 MiB more (measured on deno 2.9, x86-64: 1072 MiB idle).
 * The OS limit is this plus the plugin's memoryMb, so what the plugin gets is
 * memoryMb plus the margin (~200 MiB) kept for the runtime's own growth; each
 * Worker a plugin starts takes another 512 MiB of it.
 */
export const RUNTIME_RESERVE_MB = 1280;

/** The helpers that put OS limits on a child and measure what it spends, where they exist. */
export interface OsLimits {
  /** util-linux prlimit: sets RLIMIT_DATA, then executes the child in place (same pid). */
  readonly prlimit: string | null;
  /** util-linux setpriv: kills the child when warden dies, even while it is frozen between calls. */
  readonly setpriv: string | null;
  /**
   * coreutils cat: reads a child's /proc/<pid>/stat where this host may not read /proc itself (deno: only with
   * --allow-all; node under its permission model), given that one path as its only argument.
   */
  readonly cat: string | null;
  /** Whether this host can read a child's CPU time (the per-call budget needs it): /proc, read itself or by cat. */
  readonly procStat: boolean;
}

let found: OsLimits | undefined;

/**
 * Looked up once, at fixed system paths only: a PATH entry is the operator's
 * environment, and what limits a plugin should not depend on it.
 */
export function osLimits(): OsLimits {
  if (found) return found;
  const fs = platform().fs; // outside the try: an uninitialised platform is a bug, not a missing file
  const exists = (file: string) => {
    try {
      return fs.lstatSync(file) !== null;
    } catch {
      return false;
    }
  };
  const first = (name: string) => [`/usr/bin/${name}`, `/bin/${name}`].find(exists) ?? null;
  const cat = first("cat");
  found = Object.freeze({
    prlimit: first("prlimit"),
    setpriv: first("setpriv"),
    cat,
    // Not a check of /proc under deno, which refuses even to lstat it: on Linux it is there.
    procStat: platform().os === "linux" && (cat !== null || exists("/proc/self/stat")),
  });
  return found;
}

/** The isolation a plugin child runs under, as extension_list shows it. No host paths. */
export function pluginIsolation(limits: PluginLimits): string {
  const os = osLimits();
  const memory = os.prlimit
    ? `memory ${limits.memoryMb} MiB (OS limit RLIMIT_DATA, and the V8 heap)`
    : `memory: V8 heap ${limits.memoryMb} MiB only (no OS limit: prlimit is not available here, so typed arrays and WebAssembly memory are unbounded)`;
  const cpu = os.procStat ? `CPU ${limits.cpuMsPerCall} ms per call` : `CPU: no per-call budget (${noCpuBudgetWhy()})`;
  return "deno subprocess: no permissions (--no-prompt --cached-only, no --allow-*), empty environment, " +
    "own process group, entry imported from the verified bytes, no web storage and no cache directory, " +
    `frozen between calls; ${memory}; ${cpu}`;
}

/** Why a child's CPU time cannot be read here, when it cannot (osLimits().procStat false). */
export function noCpuBudgetWhy(): string {
  return platform().os !== "linux"
    ? "no /proc here"
    : "this host may not read /proc itself and cat is not at /usr/bin/cat or /bin/cat";
}
