#!/usr/bin/env node
// warden's entry point: `warden [serve]` runs the stdio MCP server; `tools`,
// `call` and `catalog` are shell commands over the same frozen catalog.
import path from "node:path";
import pkg from "../package.json" with { type: "json" };
import { buildCatalog, builtinEntry, type Catalog } from "./catalog.ts";
import type { CommandEnv } from "./cli.ts";
import {
  type Config,
  hostAndPort,
  optionalPath,
  parseConfig,
  PATH_SETTINGS,
  type PathSetting,
  SETTINGS,
} from "./config.ts";
import { messageOf, problem, received, WardenError } from "./errors.ts";
import { loadTools } from "./loader.ts";
import { hasPluginDirectories } from "./plugins/trust/presence.ts";
import type { LoadedPlugins } from "./plugins/sandbox/host.ts";
import { log, setLogLevel } from "./log.ts";
import { openRoots, type RootFs } from "./doors/roots.ts";
import { Spawner } from "./doors/spawn.ts";
import { manifestDoor } from "./doors/manifests.ts";
import { Ledger } from "./governance/ledger.ts";
import type { JobQueue } from "./jobs/queue.ts";
import type { ApprovalHost } from "./governance/approval_tools.ts";
import type { JobHost } from "./jobs/tools.ts";
import { policyOf } from "./governance/policy.ts";
import { startTelemetry, type Telemetry, TELEMETRY_SHUTDOWN_MS } from "./governance/telemetry.ts";
import { initPlatform, platform } from "./platform/mod.ts";
import type { HostFacts } from "./tool.ts";
import { type Confinement, denoMissing } from "./platform/confinement.ts";
import {
  claudeCodeCommand,
  confinementOf,
  type Install,
  mcpServerEntry,
  missingPermissions,
  needsOf,
  registrationCommand,
  serverCommand,
  shellCommand,
} from "./registration.ts";

// From source (deno) this file is core/main.ts; in the build it is dist/core/main.js.
const fromSource = import.meta.url.endsWith(".ts");
const appRoot = new URL(fromSource ? "../" : "../../", import.meta.url);

/** The server's name in its initialize answer and host_context: warden, whatever the package is called on npm. */
const SERVER_NAME = "warden";

const HELP = `warden ${pkg.version}: a sealed MCP tool host

Usage:
  warden [serve]                    run the MCP server on stdin/stdout
  warden serve --http [--host <address>] [--port <n>]
                                    run it over Streamable HTTP at /mcp, for
                                    several clients (README, "Shared server")
  warden token <add|list|remove> [<principal>]
                                    bearer tokens for HTTP: make one (printed
                                    once), list them, remove a principal's
  warden tools [--json]             list the tools: name, risk class, summary
  warden call <tool> [--arg key=value]... [--args <json>] [--json]
                                    run one tool and print its result
  warden call <tool> --help         the tool's arguments: types, bounds, meaning
  warden plugin <new|build|sign|allow-signer|verify|trust|list>
                                    author, sign, audit and pin plugins
                                    ("warden plugin help")
  warden checks <allow-signer|verify|trust> <root>
                                    review and pin a repository's signed check
                                    manifest ("warden checks help")
  warden project <status|accept>    whether you accepted the project's .warden trust
                                    files, and accepting them ("warden project help")
  warden doctor [--json]            each setting's path and where it came from, and
                                    what warden needs here; exit 1 on a problem
  warden ledger verify [--json]     check the call ledger's hash chains and the
                                    approvals it records
  warden approve <request_id> --key <file> [--reject]
                                    show a checks_request plan and sign its
                                    plan_digest as an approver (for checks_approve)
  warden init [--client claude|cursor|vscode|codex] [--runtime node|deno]
              [--project <dir>] [--print] [--force]
                                    register warden with this project's agent
                                    (npx -y ${pkg.name}@${pkg.version}, or with
                                    --runtime its command, absolute paths)
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
  "token",
  "call",
  "catalog",
  "command",
  "plugin",
  "checks",
  "ledger",
  "approve",
  "init",
  "project",
  "doctor",
  "help",
  "--help",
  "-h",
  "version",
  "--version",
];

/** Whether `args` ask for the server (its stderr is a log) rather than a shell command. */
function isServing(args: readonly string[]): boolean {
  try {
    const command = parseConfig(args).rest[0];
    return command === undefined || command === "serve";
  } catch {
    return !args.some((arg) => SHELL_COMMANDS.includes(arg));
  }
}

/**
 * A plugins directory named by a setting that is not a directory: with --strict-plugins a refusal, else said once
 * (a log line when serving, a line for a shell command), as no plugin can load from it. The default directory (the
 * user's) may be missing: a user without plugins of their own, as the project's `.warden/plugins/` may be.
 */
async function checkPluginsDir(config: Config, serving: boolean): Promise<void> {
  if (config.pluginsDirFrom === null) return;
  if (await platform().fs.stat(config.pluginsDir).then((s) => s.isDirectory, () => false)) return;
  const fix = "create it, or fix the setting";
  if (config.strictPlugins) {
    throw new WardenError(
      "config_invalid",
      problem(`Invalid ${config.pluginsDirFrom}`, `${received(config.pluginsDir)} is not a directory`, fix),
    );
  }
  if (serving) {
    log("warn", "plugins_dir_missing", { setting: config.pluginsDirFrom, dir: config.pluginsDir, fix });
  } else {
    platform().writeStderr(
      `warden: ${config.pluginsDirFrom} ${
        received(config.pluginsDir)
      } is not a directory, so no plugin loads; ${fix}\n`,
    );
  }
}

/** One short line for the plugins a shell command leaves out; `warden plugin list` has the rest. */
function refusedLine(refused: readonly { id: string; status: string }[]): string {
  const which = refused.map((r) => `${r.id} (${r.status})`).join(", ");
  return `${
    refused.length === 1 ? "plugin" : "plugins"
  } ${which} refused, so not listed; "warden plugin list" says why`;
}

const install: Install = { appRoot, name: pkg.name, version: pkg.version, toolsDir: (source) => toolsDir(source).url };

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

/** The name each user-directory default has under its base (core/config.ts). */
const DEFAULT_NAMES: Readonly<Record<PathSetting, string>> = Object.freeze({
  pluginsDir: "plugins",
  allowedSignersFile: "allowed_signers",
  revokedKeysFile: "revoked_keys",
  lockFile: "plugins.lock.json",
  projectDir: ".warden",
  ledgerDir: "ledger",
  jobsDir: "jobs",
  tokensFile: "tokens",
  approversSignersFile: "approvers_allowed_signers",
});

/** This process among replicas and restarts (host_context): random, made once. */
const INSTANCE_ID = crypto.randomUUID();

function hostFacts(
  catalog: Catalog,
  digest: () => string,
  fs: RootFs,
  transport: HostFacts["transport"],
  extensions: () => HostFacts["extensions"],
  spawner: Spawner,
  confinement: Confinement,
  allowUnisolated: readonly string[],
  config: Config,
): HostFacts {
  const { runtime } = platform();
  // Results never show host paths: a default is named by its base (`<user config>/plugins`, `<root default>/.warden`),
  // a path a flag or a variable gave by that setting alone (the operator knows it; `warden doctor` prints it).
  const settings = Object.fromEntries(
    (Object.entries(PATH_SETTINGS) as [PathSetting, string][]).map(([key, flag]) => {
      const from = config.sources[key];
      const file = from === "project"
        ? `<root ${config.roots[0].id}>/.warden`
        : from === "user config" || from === "user state"
        ? `<${from}>/${DEFAULT_NAMES[key]}`
        : null;
      return [flag, Object.freeze({ file, from })];
    }),
  );
  return Object.freeze({
    name: SERVER_NAME,
    version: pkg.version,
    runtime: Object.freeze({ name: runtime.name, version: runtime.version }),
    transport,
    protocolVersion: null,
    projectHeader: null,
    // A getter: the server hashes the catalog after its initialize answer (see the deferred work in main).
    get catalogDigest() {
      return digest();
    },
    toolsByRisk: catalog.toolsByRisk,
    // A getter: the client's roots may replace the configured ones (--client-roots).
    get rootIds() {
      return fs.rootIds;
    },
    strictProjectSelection: config.strictProjectSelection,
    instanceId: INSTANCE_ID,
    // A getter: a server whose plugin checks run after initialize (see checksCanWait) fills them in then.
    get extensions() {
      return extensions();
    },
    programs: Object.freeze(Object.fromEntries([...spawner.programs()].map(([name, found]) => [name, found !== null]))),
    gateIsolation: () => spawner.isolation(),
    allowUnisolated,
    requireApproval: config.requireApproval,
    confinement,
    settings: Object.freeze(settings),
  });
}

/** Whether nothing is at `file`; false when that cannot be told (a permission refused: the checks say why). */
function absent(file: string): boolean {
  try {
    return platform().fs.lstatSync(file) === null;
  } catch {
    return false;
  }
}

/** True when `file` is missing or holds no line but blanks and comments: it names no key. */
async function namesNoKey(file: string): Promise<boolean> {
  if (absent(file)) return true;
  // Unreadable or large: the checks say why, at startup.
  const text = await platform().fs.readTextFile(file, 64 * 1024).catch(() => null);
  return text !== null && !/^[ \t]*[^#\s]/m.test(text);
}

/**
 * Whether the server may answer before its plugins are checked: when no key is trusted, no plugin can be verified,
 * so none adds a tool and the catalog (and its digest) is the built-ins' whichever way the checks go. Only when
 * nothing they read can fail the start either: no --strict-plugins, trust files that name no key, no lock file.
 * Then the checks (signatures, manifests, node:crypto) run after the initialize answer, and a tools/call
 * waits for them, as extension_list and an unknown tool's message read their records.
 */
async function checksCanWait(config: Config): Promise<boolean> {
  // Without a lock of either scope, nothing is pinned: no plugin can load.
  return !config.strictPlugins && absent(config.lockFile) &&
    absent(path.join(config.projectDir, "plugins.lock.json")) &&
    await namesNoKey(config.allowedSignersFile) && await namesNoKey(config.revokedKeysFile);
}

async function main(argv: readonly string[]): Promise<number> {
  const { config, rest } = parseConfig(argv);
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
  // With --runtime, init writes the command `warden command` prints, which the catalog decides (below).
  const initRuntime = command === "init" && args.some((arg) => arg === "--runtime" || arg.startsWith("--runtime="));
  if (command === "init" && !initRuntime) {
    const { initCommand } = await import("./init.ts");
    return await initCommand(pkg, platform().cwd(), args);
  }
  if (command === "token") {
    const { tokenCommand } = await import("./transport/tokens.ts");
    return await tokenCommand(config.tokensFile, args);
  }
  if (command === "ledger") {
    const { ledgerCommand } = await import("./governance/ledger_command.ts");
    // Without the approvers' file (or a user config directory to find it in), approvals are checked from their
    // signatures alone.
    const signersFile = optionalPath(config, "approversSignersFile");
    return await ledgerCommand(
      config.ledgerDir,
      args,
      signersFile === null ? null : { signersFile, revokedKeysFile: config.revokedKeysFile },
    );
  }
  if (command === "approve") {
    const { approveCommand } = await import("./governance/approve_command.ts");
    return await approveCommand(config.jobsDir, args);
  }
  if (command === "project") {
    const { projectCommand } = await import("./plugins/authoring/project_cli.ts");
    return await projectCommand(config, args);
  }
  if (command === "checks") {
    const { checksCommand } = await import("./plugins/authoring/checks_cli.ts");
    return await checksCommand(config, args);
  }
  const dir = toolsDir();
  if (command === "doctor") {
    // Before anything reads a setting: the doctor reports a path it cannot place (no HOME) instead of stopping on it.
    const [{ doctorCommand }, { projectStatus }] = await Promise.all([
      import("./doctor.ts"),
      import("./plugins/authoring/project_cli.ts"),
    ]);
    const spawner = new Spawner();
    return await doctorCommand({
      config,
      installDir: platform().fromFileUrl(appRoot).replace(/[\\/]$/, ""),
      spawner,
      // What the runtime holds this process to, against what the built-in tools and these settings need.
      confinement: async () => {
        const catalog = buildCatalog((await loadTools(dir.url, dir.extensions)).map(builtinEntry));
        return confinementOf(await needsOf(install, config, catalog, spawner, [], fromSource)).state;
      },
      plugins: async () => {
        const { discoverPlugins, pluginSources } = await import("./plugins/trust/discover.ts");
        return (await discoverPlugins(pluginSources(config, new Set()))).records;
      },
      project: () => projectStatus(config),
    }, args);
  }
  if (command === "plugin") {
    const { pluginCommand } = await import("./plugins/authoring/cli.ts");
    // A tool served as a job also takes the names of its two job tools.
    const builtinNames = async () => {
      const { APPROVAL_TOOL_NAMES } = await import("./governance/approval_tools.ts");
      return new Set(
        (await loadTools(dir.url, dir.extensions)).flatMap(({ tool }) =>
          tool.job === true
            ? [
              tool.name,
              `${tool.name}_start`,
              `${tool.name}_result`,
              ...(tool.planState ? APPROVAL_TOOL_NAMES : []),
            ]
            : [tool.name]
        ),
      );
    };
    return await pluginCommand(config, platform().fromFileUrl(appRoot), args, builtinNames);
  }
  if (command === "serve") {
    // Before the roots and plugins are read: under deno, a root it does not let warden read looks like a missing one,
    // and a plugins directory it does not let warden list is an error that would not name the fix.
    const missing = denoMissing({
      // A project directory named by a setting; the default one is under the first root.
      read: [
        ...config.roots.map((root) => root.path),
        config.pluginsDir,
        ...(config.sources.projectDir === "project" ? [] : [config.projectDir]),
        ...(config.http.enabled ? [config.tokensFile] : []),
      ],
      write: [config.ledgerDir],
      // Over HTTP, the address it listens on (any port for --port 0).
      net: config.http.enabled ? [hostAndPort(config.http.host, config.http.port === 0 ? null : config.http.port)] : [],
    });
    if (missing.length > 0) {
      throw missingPermissions(
        missing,
        config.http.enabled
          ? `grant them (deno task start serve --http grants what it needs)`
          : 'run "warden command" with the same settings',
      );
    }
  }
  const [fs, withPlugins] = await Promise.all([
    openRoots(config.roots),
    Promise.all([config.pluginsDir, path.join(config.projectDir, "plugins")].map(hasPluginDirectories)).then((found) =>
      found.includes(true)
    ),
    checkPluginsDir(config, command === "serve"),
  ]);
  // Built-in tools and plugins are read side by side; plugins learn the
  // built-in names (for name clashes) only when they need them.
  // A tool declared as a job is served with its two job tools (core/jobs/tools.ts), attached to the queue below.
  // The tool whose runs may need approval (run_checks) is served with the approval tools
  // (core/governance/approval_tools.ts), attached with the queue.
  let jobHost: JobHost | undefined;
  let approvalHost: ApprovalHost | undefined;
  const builtinsLoading = loadTools(dir.url, dir.extensions).then(async (loaded) => {
    const asJobs = loaded.filter(({ tool }) => tool.job === true);
    if (asJobs.length === 0) return loaded.map(builtinEntry);
    const approved = asJobs.filter(({ tool }) => tool.planState !== undefined);
    const [{ JobHost, jobTools }, approvals] = await Promise.all([
      import("./jobs/tools.ts"),
      approved.length === 0 ? undefined : import("./governance/approval_tools.ts"),
    ]);
    const host = jobHost = new JobHost();
    const approvalTools = approvals === undefined
      ? []
      : approved.flatMap((run) => approvals.approvalTools(run, host, approvalHost ??= new approvals.ApprovalHost()));
    return [...loaded, ...asJobs.flatMap((job) => jobTools(job, host)), ...approvalTools].map(builtinEntry);
  });
  builtinsLoading.catch(() => {});
  // The plugin code of the host (signatures, manifests, sandbox) loads only when there are plugins.
  const loadPlugins = () =>
    import("./plugins/sandbox/host.ts").then((host) =>
      host.loadPlugins(
        config,
        fs,
        builtinsLoading.then((builtins) => new Set(builtins.map((entry) => entry.descriptor.name))),
        // A shell command says a refusal where it matters (the tools it leaves out, the tool called), in a line.
        command === "serve" ? undefined : () => {},
      )
    );
  const none: LoadedPlugins = { records: [], entries: [], stop: () => Promise.resolve() };
  const later = withPlugins && command === "serve" && await checksCanWait(config);
  const pluginsLoading = withPlugins && !later ? loadPlugins() : Promise.resolve(none);
  const [builtins, plugins] = await Promise.all([builtinsLoading, pluginsLoading]);
  const catalog = buildCatalog([...builtins, ...plugins.entries]);
  const policy = policyOf(config, catalog);
  const ledger = new Ledger(config.ledgerDir);
  const spawner = new Spawner();
  const manifests = manifestDoor(config);
  const programs = [...catalog.tools.values()].flatMap((entry) => entry.capabilities.spawn);
  // Only commands that run tools need the ledger directory and the programs.
  if (command === "serve" || command === "call") {
    await Promise.all([ledger.prepare(), spawner.resolve(programs)]);
  } else if (command === "command" || command === "init") {
    await spawner.resolve(programs);
  }
  if (command === "command") {
    return registrationCommand(install, config, argv, catalog, spawner, plugins.records, args);
  }
  if (command === "init") {
    const { initCommand } = await import("./init.ts");
    return await initCommand(pkg, platform().cwd(), args, async (runtime) => {
      const needs = await needsOf(install, config, catalog, spawner, plugins.records, false, runtime);
      const server = serverCommand(install, config, argv, needs, runtime);
      if (path.isAbsolute(server.command)) return server;
      // node from deno (or npx for an installed package) is a name: the file gets the path it has in PATH now.
      await spawner.resolve([server.command]);
      const found = spawner.programs().get(server.command);
      if (!found) {
        throw new WardenError(
          "config_invalid",
          `Cannot register warden with --runtime ${runtime}: "${server.command}" is not in PATH; install it first`,
        );
      }
      return { ...server, command: found };
    });
  }
  const needs = await needsOf(install, config, catalog, spawner, plugins.records, fromSource);
  const confinement = confinementOf(needs);
  // What the commands warden prints need: they run the build, which `deno task start` does not.
  const printedNeeds = fromSource ? await needsOf(install, config, catalog, spawner, plugins.records, false) : needs;
  if (command === "serve" && confinement.missing.length > 0) {
    throw missingPermissions(
      confinement.missing,
      `start it with ${shellCommand(serverCommand(install, config, argv, printedNeeds, "deno"))}`,
    );
  }

  if (command === "serve") {
    if (args.length > 0) {
      throw new WardenError("config_invalid", `Unexpected argument "${args[0]}" for "warden serve": run "warden help"`);
    }
    const { serve } = await import("./transport/server.ts").catch((error) => {
      // Under deno the SDK comes from dist/vendor/, which npm install builds.
      throw new WardenError(
        "config_invalid",
        `Cannot load the MCP server module (${messageOf(error).split("\n")[0]}); run "npm install" first`,
      );
    });
    let checked = plugins;
    let digest = "";
    let settled: [() => void, (error: unknown) => void] = [() => {}, () => {}];
    const deferredDone = new Promise<void>((...both) => settled = both);
    const facts = hostFacts(
      catalog,
      () => digest,
      fs,
      "stdio",
      () => checked.records,
      spawner,
      confinement.state,
      config.allowUnisolated,
      config,
    );
    let jobs: JobQueue | undefined;
    /** The job queue, with the jobs of earlier processes read: after the initialize answer, before any call. */
    const openJobs = async (host: JobHost) => {
      const [{ FileJobStore }, { JobQueue }, { FileJobReports }] = await Promise.all([
        import("./jobs/store.ts"),
        import("./jobs/queue.ts"),
        import("./jobs/reports.ts"),
      ]);
      const queue = new JobQueue(
        new FileJobStore(config.jobsDir),
        config.jobLimits,
        Date.now,
        new FileJobReports(config.jobsDir),
      );
      await queue.restore();
      host.attach(
        queue,
        config.jobLimits,
        { policy, ledger, fs, host: facts, spawner, manifests, timeoutMs: config.jobTimeoutMs },
        catalog.tools,
      );
      if (approvalHost) {
        const { approvalDeskIn } = await import("./governance/approval_desk.ts");
        approvalHost.attach(approvalDeskIn(config.jobsDir), host, ledger, {
          approvers: config.approvers,
          signersFile: optionalPath(config, "approversSignersFile"),
          revokedKeysFile: config.revokedKeysFile,
        });
      }
      jobs = queue;
      // After the jobs answer: old reports go while the server serves.
      queue.tidy().catch((error) => log("warn", "jobs_tidy_failed", { error: messageOf(error) }));
    };
    // Read once, as the catalog is: a token added later takes a restart.
    const http = config.http.enabled
      ? { settings: config.http, tokens: await (await import("./transport/tokens.ts")).readTokens(config.tokensFile) }
      : undefined;
    let telemetry: Telemetry | null = null;
    const served = await serve({
      http,
      telemetry: () => telemetry,
      shutdownBudgetMs: config.telemetry ? TELEMETRY_SHUTDOWN_MS : undefined,
      clientRoots: config.clientRoots,
      name: SERVER_NAME,
      version: pkg.version,
      catalog,
      fs,
      callTimeoutMs: config.callTimeoutMs,
      spawner,
      manifests,
      policy,
      ledger,
      host: facts,
      // What the initialize answer does not need, done after it, before any tools/call: the catalog's digest, and
      // the plugin checks when they cannot change the catalog.
      deferred: () =>
        Promise.all([
          catalog.digest().then((hash) => void (digest = hash)),
          jobHost ? openJobs(jobHost) : undefined,
          later ? loadPlugins().then((loaded) => void (checked = loaded)) : undefined,
          // Telemetry loads the OpenTelemetry SDK: after the first answer, before the first call.
          config.telemetry
            ? startTelemetry(config.telemetry, { serviceVersion: pkg.version, instanceId: INSTANCE_ID })
              .then((started) => void (telemetry = started))
            : undefined,
        ]).then(() => settled[0](), (error) => {
          settled[1](error);
          throw error;
        }),
      // The seal is the ledger file's last row, a clean exit as against a crash: written first, as the process
      // exits on a deadline, and after the rows of the calls stopped by the end of input.
      // Jobs still running are stopped (their process groups killed) and kept as interrupted before the seal.
      jobs: jobHost,
      shutdown: () =>
        (jobs?.stop(
          config.http.enabled
            ? "the server stopped (SIGTERM or SIGINT)"
            : "the server stopped (its client closed its input)",
        ) ?? Promise.resolve()).catch(() => {})
          .then(() => ledger.seal()).finally(() => checked.stop())
          .then(() => telemetry?.shutdown(TELEMETRY_SHUTDOWN_MS - 100)),
    });
    answering = true;
    // Said once the deferred work is done: it names the digest and the plugins.
    await deferredDone;
    const registered = serverCommand(install, config, argv, printedNeeds, facts.runtime.name as "node" | "deno");
    log("info", "ready", {
      version: pkg.version,
      runtime: `${facts.runtime.name} ${facts.runtime.version}`,
      tools: catalog.toolsByRisk,
      catalog: digest,
      roots: fs.rootIds,
      plugins: {
        loaded: checked.records.filter((r) => r.status === "verified").map((r) => r.id),
        refused: checked.records.filter((r) => r.status !== "verified").map((r) => r.id),
      },
      confinement: { inForce: confinement.state.inForce, open: confinement.state.open },
      // Checks that may run the repository's code without isolation: the operator's choice, said where they look.
      allowUnisolated: config.allowUnisolated,
      // Over HTTP an agent registers the URL (README, "Shared server"); a token goes in a header.
      register: served.url !== null
        ? {
          claudeCode: `claude mcp add --transport http warden ${served.url}`,
          mcpJson: { mcpServers: { warden: { type: "http", url: served.url } } },
        }
        : {
          claudeCode: claudeCodeCommand(registered),
          mcpJson: { mcpServers: { warden: mcpServerEntry(registered) } },
        },
    });
    return -1;
  }
  const digest = await catalog.digest();
  const env: CommandEnv = {
    catalog,
    fs,
    host: hostFacts(
      catalog,
      () => digest,
      fs,
      "cli",
      () => plugins.records,
      spawner,
      confinement.state,
      config.allowUnisolated,
      config,
    ),
    callTimeoutMs: config.callTimeoutMs,
    spawner,
    manifests,
    policy,
    ledger,
    goldenUrl: new URL("schema/catalog.json", appRoot),
  };
  try {
    // The shell commands load only for themselves: the server never needs them.
    const { callCommand, catalogCommand, toolsCommand } = await import("./cli.ts");
    if (command === "tools") {
      const code = toolsCommand(env, args);
      const refused = plugins.records.filter((r) => r.status !== "verified");
      if (refused.length > 0) platform().writeStderr(`warden: ${refusedLine(refused)}\n`);
      return code;
    }
    if (command === "call") return await callCommand(env, args);
    return await catalogCommand(env, args, buildCatalog(builtins));
  } finally {
    await ledger.seal();
    await plugins.stop();
  }
}

/** Set once the server answers: a failure after that ends the process, which stdin would keep alive. */
let answering = false;
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
    if (answering) void platform().flushStdout().finally(() => platform().exit(error instanceof WardenError ? 2 : 70));
  },
);
