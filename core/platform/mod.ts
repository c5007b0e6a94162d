// Runtime detection, in one function; the adapter for the other runtime is
// never loaded.
import type { Platform } from "./types.ts";

export type * from "./types.ts";

let current: Platform | undefined;

/** Loads the adapter of the running runtime; call once, first thing. */
export async function initPlatform(): Promise<Platform> {
  if (!current) {
    current = "Deno" in globalThis
      ? (await import("./deno.ts")).denoPlatform()
      : (await import("./node.ts")).nodePlatform();
  }
  return current;
}

/** The running platform; `initPlatform` must have resolved before. */
export function platform(): Platform {
  if (!current) throw new Error("initPlatform() was not awaited before platform() was used");
  return current;
}

/**
 * The flags `deno task start` runs the host with: its permissions, and V8's
 * young generation at node's size or less. One list, used by the registration
 * hint and checked against deno.json by a test.
 */
export const DENO_RUN_FLAGS: readonly string[] = Object.freeze([
  "--no-prompt",
  "--allow-read",
  "--allow-env",
  "--allow-sys",
  // Plugins run in deno children, gate tools run their programs: the host
  // spawns them and kills their process groups. Gate calls get a scratch
  // directory; external-side-effect tools write under roots and fetch. Deno
  // grants the host these doors; warden's own checks decide what each tool gets.
  "--allow-run",
  "--allow-write",
  "--allow-net",
  // Deno.serve's request.signal then aborts only when the client goes away, not also after every answer (deno's
  // coming default; without it deno warns on stderr once). The HTTP transport cancels calls on that signal.
  "--unstable-no-legacy-abort",
  // Deno's default young generation is large: 8 MB semi-spaces cut a 3,200-file code graph's peak memory by a
  // fifth in the same time; 4 MB saved little more but slowed warm queries (scripts/bench/README.md).
  "--v8-flags=--max-semi-space-size=8",
]);
