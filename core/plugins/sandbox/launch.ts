// How a plugin child is started: deno with no permission flag at all, an
// environment of its own, under prlimit (its memory) and setpriv (killed when
// warden dies) where they exist, and the bootstrap of child.ts as a `data:`
// URL. session.ts spawns it, in a process group of its own.
import { childSource } from "./child.ts";
import { osLimits, PLUGIN_LIMITS, RUNTIME_RESERVE_MB } from "./limits.ts";

/**
 * The `deno run` flags of a plugin child, before the bootstrap URL: no
 * permission flag at all (so every permission is denied without a prompt),
 * no config, lock file, remote or npm modules, nothing fetched.
 */
export function pluginDenoArgs(memoryMb: number = PLUGIN_LIMITS.memoryMb.default): string[] {
  return [
    "run",
    "--no-prompt",
    "--cached-only",
    "--no-config",
    "--no-lock",
    "--no-remote",
    "--no-npm",
    `--v8-flags=--max-old-space-size=${memoryMb}`,
  ];
}

/**
 * DENO_DIR of a plugin child: a path below a character device, which no one,
 * root included, can create. deno keeps the Cache API's data and its caches
 * there; with none, nothing a plugin does persists or fills a disk.
 */
export const PLUGIN_DENO_DIR = "/dev/null/warden-plugin";

/** The whole environment of a plugin child. TZ: the host's time zone is not the plugin's business. */
export function pluginEnv(): Record<string, string> {
  return {
    DENO_DIR: PLUGIN_DENO_DIR,
    DENO_NO_UPDATE_CHECK: "1",
    DENO_NO_PACKAGE_JSON: "1",
    NO_COLOR: "1",
    TZ: "UTC",
  };
}

/**
 * The program and arguments that start a plugin child: deno, under prlimit
 * (RLIMIT_DATA: deno's own reservations plus `memoryMb`) and setpriv (killed
 * when warden dies, even frozen) where they exist. Both execute the next
 * program in place, so the pid is deno's.
 */
export function pluginCommand(deno: string, memoryMb: number): { command: string; args: string[] } {
  const os = osLimits();
  let command = deno;
  let args = [...pluginDenoArgs(memoryMb), bootstrap()];
  if (os.prlimit) {
    args = [`--data=${(memoryMb + RUNTIME_RESERVE_MB) * 1024 * 1024}`, "--", command, ...args];
    command = os.prlimit;
  }
  if (os.setpriv) {
    args = ["--pdeathsig", "KILL", "--", command, ...args];
    command = os.setpriv;
  }
  return { command, args };
}

/** Base64 of `bytes`, in slices: one spread of a large array would overflow the stack. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

let bootstrapUrl: string | undefined;

/** The child bootstrap as a `data:` URL, built once. */
function bootstrap(): string {
  bootstrapUrl ??= "data:text/javascript;base64," + toBase64(new TextEncoder().encode(childSource()));
  return bootstrapUrl;
}
