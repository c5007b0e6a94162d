// Turns verified plugins into catalog entries. Each plugin tool is validated
// by the host against its manifest schema, then run in the plugin's sandboxed
// child, which starts on the first call; refusals are logged one line each.
import { type CatalogEntry, describeTool, type Validated } from "../../catalog.ts";
import type { Config } from "../../config.ts";
import { messageOf, problem, WardenError } from "../../errors.ts";
import { validateJsonSchema } from "../../json_schema.ts";
import { log } from "../../log.ts";
import { restrictRoots, type RootFs } from "../../doors/roots.ts";
import type { ExternalContext, GateContext, ToolContext } from "../../tool.ts";
import { CAPABILITY_NAMES, ruleOf } from "../../capabilities.ts";
import type { Manifest } from "../trust/manifest.ts";
import { discoverPlugins, type PluginRecord, pluginSources, type VerifiedPlugin } from "../trust/discover.ts";
import { limitsOf, noCpuBudgetWhy, osLimits } from "./limits.ts";
import { platform } from "../../platform/mod.ts";
import { DENO_MISSING_FIX } from "../../platform/types.ts";
import type { PluginRuntime } from "./runtime.ts";

/** What a manifest declares, under the names a built-in tool's capabilities use: the table maps one to the other. */
function toolCapabilities(manifest: Manifest): CatalogEntry["capabilities"] {
  const capabilities: Record<string, readonly string[]> = {};
  for (const capability of CAPABILITY_NAMES) {
    const { toolKey, manifestKey } = ruleOf(capability);
    if (toolKey) capabilities[toolKey] = [...(manifest.capabilities[manifestKey] ?? [])];
  }
  return capabilities as CatalogEntry["capabilities"];
}
/** The plugins as the host serves them. */
export interface LoadedPlugins {
  readonly records: readonly PluginRecord[];
  readonly entries: readonly CatalogEntry[];
  /** Stops every plugin child. */
  stop(): Promise<void>;
}

function jsonValidator(schema: Record<string, unknown>): (value: unknown) => Validated {
  return (value) => {
    const issues = validateJsonSchema(schema, value);
    return issues.length === 0 ? { ok: true, value } : { ok: false, issues };
  };
}

function entriesOf(plugin: VerifiedPlugin, runtime: () => PluginRuntime): CatalogEntry[] {
  const { manifest, record } = plugin;
  return manifest.tools.map((tool) => ({
    descriptor: describeTool(
      {
        name: `${manifest.id}_${tool.name}`,
        title: tool.title,
        description: tool.description,
        risk: manifest.risk,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
      },
      { id: manifest.id, version: manifest.version, manifestDigest: record.manifestDigest! },
    ),
    risk: manifest.risk,
    capabilities: toolCapabilities(manifest),
    validateInput: jsonValidator(tool.inputSchema),
    ...(tool.outputSchema ? { validateOutput: jsonValidator(tool.outputSchema) } : {}),
    invoke: (args: unknown, ctx: ToolContext) =>
      runtime().call(tool.name, args, {
        signal: ctx.signal,
        progress: (progress, total, message) => ctx.progress(progress, total, message),
        log: (level, data) => ctx.log(level, data),
        // The host context checks the class and the manifest's declarations before anything happens.
        capabilities: {
          spawn: (argv, options) => (ctx as GateContext).spawn(argv, options),
          fetch: (url, request) => (ctx as ExternalContext).fetch(url, request),
          write: (root, file, data) => (ctx as ExternalContext).fs.write(root, file, data),
        },
      }),
  }));
}

/** Why no plugin can run here, or null when a deno is there to run them. */
function denoMissing(): string | null {
  try {
    platform().denoExecutable();
    return null;
  } catch (error) {
    return messageOf(error);
  }
}

function logRefused(refused: readonly PluginRecord[]): void {
  for (const record of refused) {
    log("warn", "plugin_refused", { plugin: record.id, status: record.status, reason: record.reason, fix: record.fix });
  }
}

/**
 * Inspects the plugins directory and returns the entries of the verified
 * plugins. With `strictPlugins`, any refusal stops startup.
 */
export async function loadPlugins(
  config: Config,
  fs: RootFs,
  reservedNames: ReadonlySet<string> | Promise<ReadonlySet<string>>,
  /** How each refusal is said: by default a `plugin_refused` log line (the server's stderr is a log). */
  reportRefused: (refused: readonly PluginRecord[]) => void = logRefused,
): Promise<LoadedPlugins> {
  const discovered = await discoverPlugins(pluginSources(config, reservedNames));
  // A plugin that passed every check but has no deno to run it here (under node, warden installed without its
  // optional deno) is refused with a status of its own, saying how to install one: its tools would only fail.
  const missing = discovered.verified.length > 0 ? denoMissing() : null;
  const found = missing === null
    ? discovered.records
    : discovered.records.map((record): PluginRecord =>
      record.status === "verified"
        ? {
          ...record,
          status: "deno-missing",
          reason:
            "it passed every check, but no deno is here to run it (neither warden's optional deno package nor a deno in PATH)",
          fix: DENO_MISSING_FIX,
        }
        : record
    );
  const verified = missing === null ? discovered.verified : [];
  const refused = found.filter((record) => record.status !== "verified");
  if (refused.length > 0) reportRefused(refused);
  if (config.strictPlugins && refused.length > 0) {
    throw new WardenError(
      "config_invalid",
      problem(
        "Plugins refused with --strict-plugins",
        refused.map((record) => `${record.id} is ${record.status} (${record.reason})`).join("; "),
        "fix them or start without --strict-plugins",
      ),
    );
  }
  // The sandbox runtime (with the child's source) loads only for a verified plugin: refused ones, like the shipped
  // example until its signer is allowed, cost startup their checks and no more.
  if (verified.length === 0) return { records: found, entries: [], stop: () => Promise.resolve() };
  const { PluginRuntime } = await import("./runtime.ts");
  const os = osLimits();
  if ((!os.prlimit || !os.procStat)) {
    log("warn", "plugin_limits_partial", {
      memory: os.prlimit ? "OS limit (RLIMIT_DATA)" : "V8 heap only: prlimit is not available, so no OS memory limit",
      cpu: os.procStat ? "budget per call" : `no budget per call: ${noCpuBudgetWhy()}`,
    });
  }
  const runtimes = new Map<string, PluginRuntime>();
  const entries = verified.flatMap((plugin) =>
    entriesOf(plugin, () => {
      let runtime = runtimes.get(plugin.manifest.id);
      if (!runtime) {
        runtime = new PluginRuntime({
          id: plugin.manifest.id,
          entryBytes: plugin.entryBytes,
          fs: restrictRoots(fs, plugin.manifest.capabilities.readRoots, `plugin ${plugin.manifest.id}`),
          ...limitsOf(plugin.manifest.limits),
        });
        runtimes.set(plugin.manifest.id, runtime);
      }
      return runtime;
    })
  );
  return {
    records: found,
    entries,
    stop: async () => {
      await Promise.all([...runtimes.values()].map((runtime) => runtime.stop()));
    },
  };
}
