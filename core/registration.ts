// The command that registers this server: what its frozen catalog and its
// settings need from the runtime (core/confinement.ts computes the flags), found
// at startup, checked against what the runtime grants, and printed by the
// startup line and `warden command`.
import type { Catalog } from "./catalog.ts";
import { type Config, optionalPath, PATH_SETTINGS, type PathSetting, SETTINGS } from "./config.ts";
import { USER_DIR_VARIABLES } from "./platform/user_dirs.ts";
import { denoPermissionFlags, nodePermissionFlags, type PermissionNeeds, permissionNeeds } from "./confinement.ts";
import { problem, received, WardenError } from "./errors.ts";
import { DENO_RUN_FLAGS, type FileStat, platform } from "./platform/mod.ts";
import { type Confinement, denoConfinement, nodeConfinement } from "./platform/confinement.ts";
import type { PluginRecord } from "./plugins/trust/discover.ts";
import { osLimits } from "./plugins/sandbox/limits.ts";
import type { Spawner } from "./doors/spawn.ts";

/** Where warden is installed, and where its built-in tools load from (the source, under deno from a clone, or the build). */
export interface Install {
  readonly appRoot: URL;
  /** The package's name and version (package.json): what an agent's `npx -y <name>@<version>` installs. */
  readonly name: string;
  readonly version: string;
  toolsDir(fromSource: boolean): URL;
}

/**
 * Whether warden runs from an installed package rather than a clone: npm puts every package it installs (as a
 * dependency, globally, or in npx's cache) in a `node_modules` directory, and a clone is never inside one (an
 * `npm link`ed clone runs from its real path). An installed package is registered with the `npx` form.
 */
export function isInstalled(appRoot: URL): boolean {
  return platform().fromFileUrl(appRoot).split(/[\\/]/).includes("node_modules");
}

/**
 * The `node_modules` directory npm installed this package in: its dependencies sit beside it (hoisted) or in its
 * own `node_modules` (a global install); null for a clone.
 */
function installedIn(appRoot: URL): string | null {
  if (!isInstalled(appRoot)) return null;
  const parts = platform().fromFileUrl(appRoot).replace(/[\\/]$/, "").split(/[\\/]/);
  return parts.slice(0, parts.lastIndexOf("node_modules") + 1).join(platform().pathDelimiter === ";" ? "\\" : "/");
}

/**
 * Every environment variable warden reads: its settings, PATH (gate programs) and TMPDIR (their scratch), and
 * those its dependencies read as they load (TypeScript's `sys`, for the code graph). deno refuses any other name,
 * so a variable missing here fails a tool: test/confinement.test.ts runs every built-in tool confined.
 */
const ENV_READ = Object.freeze([
  ...SETTINGS.flatMap((s) => s.env ? [s.env] : []),
  // Where the user's config and state directories are (core/platform/user_dirs.ts).
  ...USER_DIR_VARIABLES,
  "PATH",
  "TMPDIR",
  // TSC_WATCHFILE, TSC_WATCH_POLLINGINTERVAL_LOW and eleven more, read when TypeScript's sys is made; the rest
  // as TypeScript loads (its debug and colour checks).
  "TSC_*",
  // OpenTelemetry's standard variables, which its SDK reads once WARDEN_OTEL_ENABLED=1 loads it.
  "OTEL_*",
  "NODE_INSPECTOR_IPC",
  "VSCODE_INSPECTOR_OPTIONS",
  "NODE_ENV",
  "NO_COLOR",
  "FORCE_COLOR",
  "COLORTERM",
  "TERM",
  "TERM_PROGRAM",
  "WT_SESSION",
  "OS",
]);

/** The OS temp directory, as both runtimes pick it for a new temporary directory. */
function tempDir(): string {
  return platform().env("TMPDIR") || (platform().pathDelimiter === ";" ? "C:\\Windows\\Temp" : "/tmp");
}

/**
 * The deno binary a deno command starts: this one under deno; from node, the link `npm install` made at
 * node_modules/deno/deno (see scripts/build.mjs), else the one the platform package holds.
 */
function denoBinary(appRoot: URL): string {
  if (platform().runtime.name === "deno") return platform().runtime.execPath;
  const windows = platform().pathDelimiter === ";";
  const linked = platform().fromFileUrl(new URL(`node_modules/deno/deno${windows ? ".exe" : ""}`, appRoot));
  return platform().fs.lstatSync(linked)?.isFile ? linked : platform().denoExecutable();
}

/** The deno that runs plugins under node, or null where there is none. */
function denoOrNull(): string | null {
  try {
    return platform().denoExecutable();
  } catch {
    return null;
  }
}

/**
 * Where `name` is first found in PATH, as spawn.ts looks for it, and the real path if that is a link; empty when
 * nowhere. lstat without a thread hop, so that startup pays microseconds (a directory deno does not let warden
 * read holds nothing for it).
 */
async function inPath(name: string): Promise<string[]> {
  for (const dir of (platform().env("PATH") ?? "").split(platform().pathDelimiter)) {
    if (!dir.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(dir)) continue;
    const candidate = `${dir.replace(/[\\/]$/, "")}/${name}`;
    let found: FileStat | null;
    try {
      found = platform().fs.lstatSync(candidate);
    } catch {
      continue;
    }
    if (found?.isFile) return [candidate];
    if (found?.isSymlink) {
      const real = await platform().fs.realPath(candidate).catch(() => null);
      if (real && platform().fs.lstatSync(real)?.isFile) return [candidate, real];
    }
  }
  return [];
}

/**
 * The record of accepted projects, when the user state directory is known: without it (no HOME) a server whose
 * ledger and jobs are named by flags still runs, and only a project's plugins need it (they are refused, saying why).
 */
function acceptedProjects(config: Config): string[] {
  try {
    return [config.acceptedProjectsFile];
  } catch {
    return [];
  }
}

/**
 * What this server needs from the runtime `runtime` (this one unless asked), from its catalog and settings, run from
 * its TypeScript source (`deno task start` in a clone) or from its build (every command warden prints).
 */
export async function needsOf(
  install: Install,
  config: Config,
  catalog: Catalog,
  spawner: Spawner,
  records: readonly PluginRecord[],
  source: boolean,
  runtime: "node" | "deno" = platform().runtime.name,
): Promise<PermissionNeeds> {
  const entries = [...catalog.tools.values()];
  const gate = spawner.programs().size > 0;
  const [reals, bwrap, ...programs] = await Promise.all([
    Promise.all(config.roots.map((root) => platform().fs.realPath(root.path).catch(() => root.path))),
    gate ? inPath("bwrap") : [],
    ...[...spawner.programs().keys()].map(inPath),
  ]);
  const roots = new Map(
    config.roots.map((root, i) => [root.id, reals[i] === root.path ? [root.path] : [root.path, reals[i]]]),
  );
  const verified = records.some((record) => record.status === "verified");
  // Under deno, plugins run in the binary the deno command starts; under node, in the one node finds.
  // A verified plugin without a deno to run it (an install without the optional deno) runs nothing: its calls say why.
  const deno = runtime === "deno" ? denoBinary(install.appRoot) : verified ? denoOrNull() : null;
  return permissionNeeds({
    appRoot: platform().fromFileUrl(install.appRoot).replace(/[\\/]$/, ""),
    fromSource: source,
    dependencies: installedIn(install.appRoot),
    toolsDir: platform().fromFileUrl(install.toolsDir(source)).replace(/[\\/]$/, ""),
    roots,
    pluginsDir: config.pluginsDir,
    // The project's plugins, lock and allowed_signers are under its .warden (by default the first root's, which
    // the root's grant covers); whether the user accepted them, in the state directory.
    trustFiles: [
      config.allowedSignersFile,
      config.revokedKeysFile,
      ...[optionalPath(config, "approversSignersFile")].filter((file) => file !== null),
      config.lockFile,
      ...(config.sources.projectDir === "project" ? [] : [config.projectDir]),
      ...acceptedProjects(config),
    ],
    ledgerDir: config.ledgerDir,
    jobsDir: entries.some((entry) => entry.job) ? config.jobsDir : null,
    execPath: runtime === "deno" ? deno! : platform().runtime.execPath,
    pluginDeno: verified ? deno : null,
    pluginHelpers: [osLimits().setpriv, osLimits().prlimit, osLimits().cat].filter((file): file is string =>
      file !== null
    ),
    programs: spawner.programs(),
    programFiles: [...bwrap, ...programs.flat()],
    // Where gate programs run inside bubblewrap, warden starts bwrap, not them (see spawn.ts).
    bwrap: bwrap.at(-1) ?? null,
    tempDir: tempDir(),
    writeRoots: entries.flatMap((entry) => entry.capabilities.writeRoots),
    netHosts: entries.flatMap((entry) => entry.capabilities.netHosts),
    services: [
      ...(config.telemetry ? [config.telemetry.tracesEndpoint, config.telemetry.metricsEndpoint] : []),
      ...(config.policyEngine ? [config.policyEngine.url] : []),
    ],
    env: ENV_READ,
  });
}

/** What the runtime holds this process to; under deno, also the needed permissions it does not grant. */
export function confinementOf(needs: PermissionNeeds): { state: Confinement; missing: string[] } {
  const { runtime } = platform();
  if (runtime.name === "deno") {
    const found = denoConfinement(needs, tempDir());
    if (found) return found;
  }
  return { state: nodeConfinement(needs, tempDir(), runtime.version), missing: [] };
}

/** Whether the roots were given (flag or variable) rather than the default, the directory warden starts in. */
function explicitRoots(argv: readonly string[]): boolean {
  return argv.includes("--root") || argv.some((a) => a.startsWith("--root=")) || !!platform().env("WARDEN_ROOTS");
}

/**
 * The environment every deno command warden prints or documents adds: deno's update check off. Without it, `deno
 * run` reads `<DENO_DIR>/latest.txt` as it starts and, about 500 ms later, looks up dl.deno.land for a newer deno:
 * a request from a sealed host that no one asked for, and a failing DNS lookup on an offline machine.
 */
export const DENO_ENV: Readonly<Record<string, string>> = Object.freeze({ DENO_NO_UPDATE_CHECK: "1" });

/** A command that starts this server: its program, its arguments and the variables it adds to the environment. */
export interface ServerCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * The command that starts this same server with exactly the permissions it needs: under deno its permission flags
 * (and DENO_ENV), under node the plain command, or with `nodePermission` node's permission model. File settings that
 * differ from the defaults are passed as flags, so the command needs no environment to grant and use the same paths.
 */
export function serverCommand(
  install: Install,
  config: Config,
  argv: readonly string[],
  needs: PermissionNeeds,
  runtime: "node" | "deno",
  nodePermission = false,
): ServerCommand {
  const explicit = explicitRoots(argv);
  const args: string[] = [];
  if (explicit) { for (const root of config.roots) args.push("--root", `${root.id}=${root.path}`); }
  // Paths a flag or a variable named are passed as flags, so the command needs no environment for them.
  for (const [key, flag] of Object.entries(PATH_SETTINGS) as [PathSetting, string][]) {
    if (config.sources[key] === flag || config.sources[key].startsWith("WARDEN_")) args.push(flag, config[key]);
  }
  // A command registered without roots reads the directory the agent starts it in: "." in deno's flags.
  const cwd = explicit ? null : platform().cwd();
  // Both runtimes run the build: deno starts it faster than the source (scripts/bench/README.md, start-up), and an
  // installed package has no other (deno strips no types from files under node_modules).
  const main = platform().fromFileUrl(new URL("dist/core/main.js", install.appRoot));
  if (runtime === "deno") {
    const v8 = DENO_RUN_FLAGS.filter((flag) => flag.startsWith("--v8-flags="));
    return {
      command: denoBinary(install.appRoot),
      args: ["run", ...denoPermissionFlags(needs, cwd), ...v8, main, ...args],
      env: DENO_ENV,
    };
  }
  // An installed package is registered as agents take a package, pinned to this version: npx fetches it once into
  // its cache and starts its bin with the node in PATH. A clone, for contributors, runs its own build.
  if (!nodePermission && isInstalled(install.appRoot)) {
    return { command: "npx", args: ["-y", `${install.name}@${install.version}`, ...args], env: {} };
  }
  const node = platform().runtime.name === "node" ? platform().runtime.execPath : "node";
  if (!nodePermission) return { command: node, args: [main, ...args], env: {} };
  // node's permission model takes absolute paths only: this command reads the directory it was printed in.
  const major = Number((platform().runtime.name === "node" ? platform().runtime.version : "20").split(".")[0]);
  return { command: node, args: [...nodePermissionFlags(needs, major, true), main, ...args], env: {} };
}

/** The command for sh: its variables first (`NAME=value program args`), each word quoted only when it must be. */
export function shellCommand({ command, args, env }: ServerCommand): string {
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${shellQuote(value)}`);
  return [...assignments, ...[command, ...args].map(shellQuote)].join(" ");
}

/** How Claude Code registers it: `claude mcp add warden [-e NAME=value]... -- program args`. */
export function claudeCodeCommand({ command, args, env }: ServerCommand): string {
  const variables = Object.entries(env).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
  return ["claude", "mcp", "add", "warden", ...variables, "--", command, ...args].map(shellQuote).join(" ");
}

/** The server's entry in `.mcp.json` (Cursor's and VS Code's files take the same keys): `env` only when it has one. */
export function mcpServerEntry(
  { command, args, env }: ServerCommand,
): { command: string; args: string[]; env?: Record<string, string> } {
  return Object.keys(env).length > 0 ? { command, args: [...args], env: { ...env } } : { command, args: [...args] };
}

/** One word for sh, quoted only when it must be. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The startup error when deno grants less than the server needs: what is missing, and `fix`. */
export function missingPermissions(missing: readonly string[], fix: string): WardenError {
  return new WardenError(
    "config_invalid",
    problem(
      "Missing permissions",
      `deno does not grant what this server's catalog and settings need: ${missing.join(", ")}`,
      fix,
    ),
  );
}

/**
 * `warden command [--runtime node|deno] [--node-permission] [--json]`: the registration command, printed for sh, or
 * with `--json` as `.mcp.json` takes it (command, args, and env when it sets variables).
 */
export async function registrationCommand(
  install: Install,
  config: Config,
  argv: readonly string[],
  catalog: Catalog,
  spawner: Spawner,
  records: readonly PluginRecord[],
  args: readonly string[],
): Promise<number> {
  let runtime = platform().runtime.name;
  let json = false;
  let nodePermission = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--json") json = true;
    else if (arg === "--node-permission") nodePermission = true;
    else if (arg === "--runtime" && (args[i + 1] === "node" || args[i + 1] === "deno")) runtime = args[++i] as "node";
    else if (arg === "--runtime") {
      throw new WardenError(
        "config_invalid",
        problem("Invalid --runtime", `expected node or deno, received ${received(args[i + 1])}`),
      );
    } else {
      throw new WardenError(
        "config_invalid",
        problem(
          "Invalid command line",
          `unexpected ${received(arg)} for "warden command"`,
          "use --runtime node or --runtime deno, --node-permission and --json",
        ),
      );
    }
  }
  const needs = await needsOf(install, config, catalog, spawner, records, false, runtime);
  const server = serverCommand(install, config, argv, needs, runtime, nodePermission);
  platform().writeStdout(
    json ? JSON.stringify(mcpServerEntry(server), null, 2) + "\n" : shellCommand(server) + "\n",
  );
  return 0;
}
