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
 * The permissions `deno task start` grants the host. One list, used by the
 * registration hint and checked against deno.json by a test.
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
]);
