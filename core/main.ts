#!/usr/bin/env node
// warden's entry point: `warden [serve]` runs the stdio MCP server; `tools`,
// `call` and `catalog` are shell commands over the same frozen catalog.
import pkg from "../package.json" with { type: "json" };
import { buildCatalog, builtinEntry, type Catalog } from "./catalog.ts";
import { callCommand, catalogCommand, type CommandEnv, toolsCommand } from "./cli.ts";
import { type Config, parseConfig, SETTINGS } from "./config.ts";
import { messageOf, problem, received, WardenError } from "./errors.ts";
import { loadTools } from "./loader.ts";
import { hasPluginDirectories } from "./plugins/presence.ts";
import { log, setLogLevel } from "./log.ts";
import { openRoots, type RootFs } from "./roots.ts";
import { Spawner } from "./spawn.ts";
import { Ledger } from "./ledger.ts";
import type { Policy } from "./policy.ts";
import { DENO_RUN_FLAGS, type FileStat, initPlatform, platform } from "./platform/mod.ts";
import type { HostFacts } from "./tool.ts";
import { denoPermissionFlags, nodePermissionFlags, type PermissionNeeds, permissionNeeds } from "./confinement.ts";
import { type Confinement, denoConfinement, denoMissing, nodeConfinement } from "./platform/confinement.ts";
import type { PluginRecord } from "./plugins/discover.ts";

// From source (deno) this file is core/main.ts; in the build it is dist/core/main.js.
const fromSource = import.meta.url.endsWith(".ts");
const appRoot = new URL(fromSource ? "../" : "../../", import.meta.url);

const HELP = `warden ${pkg.version}: a sealed MCP tool host

Usage:
  warden [serve]                    run the MCP server on stdin/stdout
  warden tools [--json]             list the tools: name, risk class, summary
  warden call <tool> [--arg key=value]... [--args <json>] [--json]
                                    run one tool and print its result
  warden plugin <new|build|sign|allow-signer|verify|trust|list>
                                    author, sign, audit and pin plugins
                                    ("warden plugin help")
  warden ledger verify [--json]     check the call ledger's hash chains
  warden command [--runtime node|deno] [--node-permission] [--json]
                                    the command that registers this server,
                                    with exactly the permissions it needs
  warden catalog [--check|--update] [--golden <file>]
                                    print, check or rewrite the golden catalog
                                    (default schema/catalog.json)
  warden help | --version

Settings (flag, environment variable, default):
${SETTINGS.map((s) => `  ${(s.flag ?? "").padEnd(28)} ${(s.env ?? "").padEnd(20)} ${s.default}`).join("\n")}
`;

const SHELL_COMMANDS = [
  "tools",
  "call",
  "catalog",
  "command",
  "plugin",
  "ledger",
  "help",
  "--help",
  "-h",
  "version",
  "--version",
];

/** Whether `args` ask for the server (its stderr is a log) rather than a shell command. */
function isServing(args: readonly string[]): boolean {
  try {
    const command = parseConfig(args, "/").rest[0];
    return command === undefined || command === "serve";
  } catch {
    return !args.some((arg) => SHELL_COMMANDS.includes(arg));
  }
}

/** The policy, with every tool it names checked against the catalog. */
function policyOf(config: Config, catalog: Catalog): Policy {
  for (
    const [flag, names] of [["--disable-tool", config.disabledTools], [
      "--require-principal",
      config.principalTools,
    ]] as const
  ) {
    const unknown = names.find((name) => !catalog.tools.has(name));
    if (unknown) {
      throw new WardenError(
        "config_invalid",
        `Invalid ${flag}: no tool is named "${unknown}"; run "warden tools" for the names`,
      );
    }
  }
  return Object.freeze({
    maxRisk: config.maxRisk,
    disabled: new Set(config.disabledTools),
    principalRequired: new Set(config.principalTools),
    principal: config.principal,
  });
}

function toolsDir(source = fromSource): { url: URL; extensions: string[] } {
  const override = platform().env("WARDEN_TOOLS_DIR");
  if (override) {
    const base = new URL(`file://${encodeURI(platform().cwd())}/`);
    const url = new URL(override.endsWith("/") ? override : override + "/", base);
    return { url, extensions: source ? [".ts", ".js", ".mjs"] : [".js", ".mjs"] };
  }
  return source
    ? { url: new URL("tools/", appRoot), extensions: [".ts"] }
    : { url: new URL("dist/tools/", appRoot), extensions: [".js"] };
}

/**
 * Every environment variable warden reads: its settings, PATH (gate programs) and TMPDIR (their scratch), and
 * those its dependencies read as they load (TypeScript's `sys`, for the code graph). deno refuses any other name,
 * so a variable missing here fails a tool: tests/confinement.test.ts runs every built-in tool confined.
 */
const ENV_READ = Object.freeze([
  ...SETTINGS.flatMap((s) => s.env ? [s.env] : []),
  "PATH",
  "TMPDIR",
  // TSC_WATCHFILE, TSC_WATCH_POLLINGINTERVAL_LOW and eleven more, read when TypeScript's sys is made; the rest
  // as TypeScript loads (its debug and colour checks).
  "TSC_*",
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
function denoBinary(): string {
  if (platform().runtime.name === "deno") return platform().runtime.execPath;
  const windows = platform().pathDelimiter === ";";
  const linked = platform().fromFileUrl(new URL(`node_modules/deno/deno${windows ? ".exe" : ""}`, appRoot));
  return platform().fs.lstatSync(linked)?.isFile ? linked : platform().denoExecutable();
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

/** What this server needs from the runtime `runtime` (this one unless asked), from its catalog and settings. */
async function needsOf(
  config: Config,
  catalog: Catalog,
  spawner: Spawner,
  records: readonly PluginRecord[],
  runtime: "node" | "deno" = platform().runtime.name,
): Promise<PermissionNeeds> {
  const entries = [...catalog.tools.values()];
  const source = runtime === "deno";
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
  const deno = runtime === "deno" ? denoBinary() : verified ? platform().denoExecutable() : null;
  return permissionNeeds({
    appRoot: platform().fromFileUrl(appRoot).replace(/[\\/]$/, ""),
    fromSource: source,
    toolsDir: platform().fromFileUrl(toolsDir(source).url).replace(/[\\/]$/, ""),
    roots,
    pluginsDir: config.pluginsDir,
    trustFiles: [config.allowedSignersFile, config.revokedKeysFile, config.lockFile],
    ledgerDir: config.ledgerDir,
    execPath: runtime === "deno" ? deno! : platform().runtime.execPath,
    pluginDeno: verified ? deno : null,
    programs: spawner.programs(),
    programFiles: [...bwrap, ...programs.flat()],
    // Where gate programs run inside bubblewrap, warden starts bwrap, not them (see spawn.ts).
    bwrap: bwrap.at(-1) ?? null,
    tempDir: tempDir(),
    writeRoots: entries.flatMap((entry) => entry.capabilities.writeRoots),
    netHosts: entries.flatMap((entry) => entry.capabilities.netHosts),
    env: ENV_READ,
  });
}

/** What the runtime holds this process to; under deno, also the needed permissions it does not grant. */
function confinementOf(needs: PermissionNeeds): { state: Confinement; missing: string[] } {
  const { runtime } = platform();
  if (runtime.name === "deno") {
    const found = denoConfinement(needs, tempDir());
    if (found) return found;
  }
  return { state: nodeConfinement(needs, tempDir(), runtime.version), missing: [] };
}

function hostFacts(
  catalog: Catalog,
  fs: RootFs,
  transport: HostFacts["transport"],
  extensions: HostFacts["extensions"],
  spawner: Spawner,
  confinement: Confinement,
): HostFacts {
  const { runtime } = platform();
  return Object.freeze({
    name: pkg.name,
    version: pkg.version,
    runtime: Object.freeze({ name: runtime.name, version: runtime.version }),
    transport,
    protocolVersion: null,
    catalogDigest: catalog.digest,
    toolsByRisk: catalog.toolsByRisk,
    rootIds: fs.rootIds,
    extensions,
    programs: Object.freeze(Object.fromEntries([...spawner.programs()].map(([name, found]) => [name, found !== null]))),
    gateIsolation: () => spawner.isolation(),
    confinement,
  });
}

/** Whether the roots were given (flag or variable) rather than the default, the directory warden starts in. */
function explicitRoots(argv: readonly string[]): boolean {
  return argv.includes("--root") || argv.some((a) => a.startsWith("--root=")) || !!platform().env("WARDEN_ROOTS");
}

/**
 * The argv that starts this same server with exactly the permissions it needs: under deno its permission flags,
 * under node the plain command, or with `nodePermission` node's permission model. File settings that differ from
 * the defaults are passed as flags, so the command needs no environment to grant and use the same paths.
 */
function serverArgv(
  config: Config,
  argv: readonly string[],
  needs: PermissionNeeds,
  runtime: "node" | "deno",
  nodePermission = false,
): string[] {
  const explicit = explicitRoots(argv);
  const args: string[] = [];
  if (explicit) { for (const root of config.roots) args.push("--root", `${root.id}=${root.path}`); }
  const defaults = parseConfig([], platform().fromFileUrl(appRoot), () => undefined).config;
  for (
    const [flag, key] of [
      ["--plugins-dir", "pluginsDir"],
      ["--allowed-signers", "allowedSignersFile"],
      ["--revoked-keys", "revokedKeysFile"],
      ["--plugins-lock", "lockFile"],
      ["--ledger", "ledgerDir"],
    ] as const
  ) if (config[key] !== defaults[key]) args.push(flag, config[key]);
  // A command registered without roots reads the directory the agent starts it in: "." in deno's flags.
  const cwd = explicit ? null : platform().cwd();
  if (runtime === "deno") {
    const main = platform().fromFileUrl(new URL("core/main.ts", appRoot));
    const v8 = DENO_RUN_FLAGS.filter((flag) => flag.startsWith("--v8-flags="));
    return [denoBinary(), "run", ...denoPermissionFlags(needs, cwd), ...v8, main, ...args];
  }
  const main = platform().fromFileUrl(new URL("dist/core/main.js", appRoot));
  const node = platform().runtime.name === "node" ? platform().runtime.execPath : "node";
  if (!nodePermission) return [node, main, ...args];
  // node's permission model takes absolute paths only: this command reads the directory it was printed in.
  const major = Number((platform().runtime.name === "node" ? platform().runtime.version : "20").split(".")[0]);
  return [node, ...nodePermissionFlags(needs, major, true), main, ...args];
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function missingPermissions(missing: readonly string[], fix: string): WardenError {
  return new WardenError(
    "config_invalid",
    problem(
      "Missing permissions",
      `deno does not grant what this server's catalog and settings need: ${missing.join(", ")}`,
      fix,
    ),
  );
}

/** `warden command [--runtime node|deno] [--node-permission] [--json]`: the registration command, printed. */
async function registrationCommand(
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
  const needs = await needsOf(config, catalog, spawner, records, runtime);
  const [command, ...commandArgs] = serverArgv(config, argv, needs, runtime, nodePermission);
  platform().writeStdout(
    json
      ? JSON.stringify({ command, args: commandArgs }, null, 2) + "\n"
      : [command, ...commandArgs].map(shellQuote).join(" ") + "\n",
  );
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const { config, rest } = parseConfig(argv, platform().fromFileUrl(appRoot));
  setLogLevel(config.logLevel);
  const [command = "serve", ...args] = rest;
  if (command === "help" || command === "--help" || command === "-h") {
    platform().writeStdout(HELP);
    return 0;
  }
  if (command === "--version" || command === "version") {
    platform().writeStdout(`warden ${pkg.version}\n`);
    return 0;
  }
  if (command !== "serve" && !SHELL_COMMANDS.includes(command)) {
    throw new WardenError("config_invalid", `Unknown command "${command}": run "warden help" for the commands`);
  }
  if (command === "ledger") {
    const { ledgerCommand } = await import("./ledger.ts");
    return await ledgerCommand(config.ledgerDir, args);
  }
  const dir = toolsDir();
  if (command === "plugin") {
    const { pluginCommand } = await import("./plugins/cli.ts");
    const builtinNames = async () => new Set((await loadTools(dir.url, dir.extensions)).map(({ tool }) => tool.name));
    return await pluginCommand(config, platform().fromFileUrl(appRoot), args, builtinNames);
  }
  if (command === "serve") {
    // Before the roots are opened: under deno, a root it does not let warden read looks like a missing one.
    const missing = denoMissing({ read: config.roots.map((root) => root.path), write: [config.ledgerDir] });
    if (missing.length > 0) throw missingPermissions(missing, 'run "warden command" with the same settings');
  }
  const [fs, withPlugins] = await Promise.all([openRoots(config.roots), hasPluginDirectories(config.pluginsDir)]);
  // Built-in tools and plugins are read side by side; plugins learn the
  // built-in names (for name clashes) only when they need them.
  const builtinsLoading = loadTools(dir.url, dir.extensions).then((loaded) => loaded.map(builtinEntry));
  builtinsLoading.catch(() => {});
  // The plugin code of the host (signatures, manifests, sandbox) loads only when there are plugins.
  const pluginsLoading = withPlugins
    ? import("./plugins/host.ts").then((host) =>
      host.loadPlugins(
        config,
        fs,
        builtinsLoading.then((builtins) => new Set(builtins.map((entry) => entry.descriptor.name))),
        platform().fromFileUrl(new URL(".cache/plugins/", appRoot)),
      )
    )
    : Promise.resolve({ records: [], entries: [], stop: () => Promise.resolve() });
  const [builtins, plugins] = await Promise.all([builtinsLoading, pluginsLoading]);
  const catalog = await buildCatalog([...builtins, ...plugins.entries]);
  const policy = policyOf(config, catalog);
  const ledger = new Ledger(config.ledgerDir);
  const spawner = new Spawner();
  const programs = [...catalog.tools.values()].flatMap((entry) => entry.capabilities.spawn);
  // Only commands that run tools need the ledger directory and the programs.
  if (command === "serve" || command === "call") {
    await Promise.all([ledger.prepare(), spawner.resolve(programs)]);
  } else if (command === "command") {
    await spawner.resolve(programs);
  }
  if (command === "command") return registrationCommand(config, argv, catalog, spawner, plugins.records, args);
  const needs = await needsOf(config, catalog, spawner, plugins.records);
  const confinement = confinementOf(needs);
  if (command === "serve" && confinement.missing.length > 0) {
    throw missingPermissions(
      confinement.missing,
      `start it with ${serverArgv(config, argv, needs, "deno").map(shellQuote).join(" ")}`,
    );
  }

  if (command === "serve") {
    if (args.length > 0) {
      throw new WardenError("config_invalid", `Unexpected argument "${args[0]}" for "warden serve": run "warden help"`);
    }
    const { serve } = await import("./server.ts").catch((error) => {
      // Under deno the SDK comes from dist/vendor/, which npm install builds.
      throw new WardenError(
        "config_invalid",
        `Cannot load the MCP server module (${messageOf(error).split("\n")[0]}); run "npm install" first`,
      );
    });
    const facts = hostFacts(catalog, fs, "stdio", plugins.records, spawner, confinement.state);
    await serve({
      name: pkg.name,
      version: pkg.version,
      catalog,
      fs,
      callTimeoutMs: config.callTimeoutMs,
      spawner,
      policy,
      ledger,
      host: facts,
      shutdown: plugins.stop,
    });
    const [commandPath, ...commandArgs] = serverArgv(config, argv, needs, facts.runtime.name as "node" | "deno");
    log("info", "ready", {
      version: pkg.version,
      runtime: `${facts.runtime.name} ${facts.runtime.version}`,
      tools: catalog.toolsByRisk,
      catalog: catalog.digest,
      roots: fs.rootIds,
      plugins: {
        loaded: plugins.records.filter((r) => r.status === "verified").map((r) => r.id),
        refused: plugins.records.filter((r) => r.status !== "verified").map((r) => r.id),
      },
      confinement: { inForce: confinement.state.inForce, open: confinement.state.open },
      register: {
        claudeCode: ["claude", "mcp", "add", "warden", "--", commandPath, ...commandArgs].map(shellQuote).join(" "),
        mcpJson: { mcpServers: { warden: { command: commandPath, args: commandArgs } } },
      },
    });
    return -1;
  }
  const env: CommandEnv = {
    catalog,
    fs,
    host: hostFacts(catalog, fs, "cli", plugins.records, spawner, confinement.state),
    callTimeoutMs: config.callTimeoutMs,
    spawner,
    policy,
    ledger,
    goldenUrl: new URL("schema/catalog.json", appRoot),
  };
  try {
    if (command === "tools") return toolsCommand(env, args);
    if (command === "call") return await callCommand(env, args);
    return await catalogCommand(env, args);
  } finally {
    await plugins.stop();
  }
}

const { args } = await initPlatform();
main(args).then(
  (code) => {
    // -1: the server is running and exits when stdin closes.
    if (code >= 0) platform().setExitCode(code);
  },
  (error: unknown) => {
    // Structured for the server (its stderr is a log); plain for shell commands.
    const serving = isServing(args);
    if (serving) log("error", "startup_failed", { error: messageOf(error), code: (error as WardenError)?.code });
    else platform().writeStderr(`warden: ${messageOf(error)}\n`);
    if (!(error instanceof WardenError)) platform().writeStderr(`${(error as Error)?.stack ?? ""}\n`);
    platform().setExitCode(error instanceof WardenError ? 2 : 70);
  },
);
