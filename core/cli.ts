// The shell commands besides serving: list the catalog, call one tool, check
// or update the golden catalog. None of them loads the MCP SDK.
import type { Ledger } from "./governance/ledger.ts";
import { governedCall } from "./governance/governed_call.ts";
import type { Policy } from "./governance/policy.ts";
import { type Catalog, goldenText, refusedToolProblem, summaryLine } from "./catalog.ts";
import { messageOf, problem, received, WardenError } from "./errors.ts";
import { unifiedDiff } from "./line_diff.ts";
import { platform } from "./platform/mod.ts";
import type { RootFs } from "./doors/roots.ts";
import type { Spawner } from "./doors/spawn.ts";
import type { ManifestDoor } from "./doors/manifests.ts";
import type { HostFacts } from "./tool.ts";

/** What every command is given: the catalog and the facts to build a context from. */
export interface CommandEnv {
  readonly catalog: Catalog;
  readonly fs: RootFs;
  readonly host: HostFacts;
  readonly callTimeoutMs: number;
  readonly spawner: Spawner;
  readonly manifests: ManifestDoor;
  readonly policy: Policy;
  readonly ledger: Ledger;
  /** Where the golden catalog lives. */
  readonly goldenUrl: URL;
}

function usage(detail: string, fix: string): WardenError {
  return new WardenError("config_invalid", problem("Invalid command line", detail, fix));
}

function print(text: string): void {
  platform().writeStdout(text.endsWith("\n") ? text : text + "\n");
}

/** `warden tools [--json]`: name, risk class and one-line summary of each tool. */
export function toolsCommand(env: CommandEnv, args: readonly string[]): number {
  const unknown = args.find((arg) => arg !== "--json");
  if (unknown) throw usage(`unknown option ${received(unknown)} for "warden tools"`, "the only option is --json");
  const tools = env.catalog.listResult.tools;
  if (args.includes("--json")) {
    print(JSON.stringify(env.catalog.listResult, null, 2));
    return 0;
  }
  const nameWidth = Math.max(4, ...tools.map((t) => t.name.length));
  const riskWidth = Math.max(4, ...tools.map((t) => t._meta["warden/risk"].length));
  const rows = [`${"NAME".padEnd(nameWidth)}  ${"RISK".padEnd(riskWidth)}  DESCRIPTION`];
  for (const t of tools) {
    rows.push(
      `${t.name.padEnd(nameWidth)}  ${t._meta["warden/risk"].padEnd(riskWidth)}  ${summaryLine(t.description)}`,
    );
  }
  print(rows.join("\n"));
  return 0;
}

type PropertySchema = { type?: string | string[] };

/** Turns `key=value` text into the JSON type the tool's input schema declares for `key`. */
export function coerceArgument(schema: PropertySchema | undefined, text: string): unknown {
  const types = schema?.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes("string") || (types.length === 0 && !/^[[{"\d-]|^(true|false|null)$/.test(text))) return text;
  try {
    return JSON.parse(text);
  } catch {
    // Left as text so that validation reports what was received.
    return text;
  }
}

const CALL_USAGE = "warden call <tool> [--arg key=value]... [--args <json>] [--json]";

type SchemaNode = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  description?: string;
  default?: unknown;
  pattern?: string;
  [bound: string]: unknown;
};

/** A range in words: `1..100`, `>=1`, `<=9`, or "" without bounds. */
function range(low: unknown, high: unknown, lowOpen = false, highOpen = false): string {
  const lo = typeof low === "number" ? `${lowOpen ? ">" : ">="}${low}` : "";
  const hi = typeof high === "number" ? `${highOpen ? "<" : "<="}${high}` : "";
  if (lo && hi && !lowOpen && !highOpen) return low === high ? `${low}` : `${low}..${high}`;
  return [lo, hi].filter(Boolean).join(" and ");
}

/** What a JSON Schema accepts, in the words `warden call --help` prints. */
function schemaWords(s: SchemaNode | undefined): string {
  if (!s) return "any value";
  if (Array.isArray(s.enum)) return s.enum.map((o) => JSON.stringify(o)).join(" | ");
  if (s.const !== undefined) return JSON.stringify(s.const);
  const options = s.anyOf ?? s.oneOf;
  if (options) return options.map(schemaWords).join(" | ");
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  return types.map((type) => {
    if (type === "integer" || type === "number") {
      const bounds = range(
        s.exclusiveMinimum ?? s.minimum,
        s.exclusiveMaximum ?? s.maximum,
        s.exclusiveMinimum !== undefined,
        s.exclusiveMaximum !== undefined,
      );
      const multiple = typeof s.multipleOf === "number" ? `, multiple of ${s.multipleOf}` : "";
      return `${type}${bounds ? ` ${bounds}` : ""}${multiple}`;
    }
    if (type === "string") {
      const length = range(s.minLength, s.maxLength);
      return `string${s.pattern ? ` matching /${s.pattern}/` : ""}${length ? `, length ${length}` : ""}`;
    }
    if (type === "array") {
      const length = range(s.minItems, s.maxItems);
      return `array${length ? ` (length ${length})` : ""} of ${schemaWords(s.items)}`;
    }
    if (type === "boolean") return "true | false";
    if (type === "object") return "object (JSON)";
    return type;
  }).join(" | ") || "any value";
}

/** `warden call <tool> --help`: the tool's description and its arguments, read from its input schema. */
function toolHelp(descriptor: Catalog["listResult"]["tools"][number]): string {
  const schema = descriptor.inputSchema as SchemaNode;
  const required = new Set(schema.required ?? []);
  const lines = [
    `Usage: ${CALL_USAGE.replace("<tool>", descriptor.name)}`,
    "",
    `${descriptor.title} (risk class ${descriptor._meta["warden/risk"]}): ${descriptor.description}`,
    "",
  ];
  const entries = Object.entries(schema.properties ?? {});
  if (entries.length === 0) lines.push("It takes no arguments.");
  else lines.push("Arguments:");
  for (const [name, property] of entries) {
    const facts = [schemaWords(property), required.has(name) ? "required" : "optional"];
    if (property.default !== undefined) facts.push(`default ${JSON.stringify(property.default)}`);
    lines.push(`  ${name}: ${facts.join(", ")}`);
    if (property.description) lines.push(`      ${property.description}`);
  }
  if (entries.length > 0) {
    lines.push(
      "",
      "Pass each as --arg name=value (typed by the schema; a repeated name builds an array), or all at once as",
      `--args '<JSON object>'.`,
    );
  }
  return lines.join("\n");
}

/** `warden call <tool> [--arg key=value]... [--args <json>] [--json]`. */
export async function callCommand(env: CommandEnv, argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--help" || name === "-h") {
    print(
      `Usage: ${CALL_USAGE}\n\nRuns one tool and prints its result; "warden call <tool> --help" describes its arguments.`,
    );
    return 0;
  }
  if (!name || name.startsWith("-")) {
    throw usage("missing the tool name", 'run "warden call <tool> --arg key=value", see "warden tools"');
  }
  const descriptor = env.catalog.listResult.tools.find((t) => t.name === name);
  const tool = env.catalog.tools.get(name);
  if (!descriptor || !tool) {
    throw new WardenError(
      "unknown_tool",
      refusedToolProblem(name, env.host.extensions) ??
        problem("Unknown tool", received(name), 'run "warden tools" to list the tools'),
    );
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    print(toolHelp(descriptor));
    return 0;
  }
  const properties = (descriptor.inputSchema.properties ?? {}) as Record<string, PropertySchema>;
  let args: Record<string, unknown> = {};
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === "--json") {
      json = true;
    } else if (arg === "--arg" || arg.startsWith("--arg=")) {
      const pair = arg === "--arg" ? rest[++i] : arg.slice("--arg=".length);
      const eq = pair?.indexOf("=") ?? -1;
      if (!pair || eq <= 0) {
        throw usage(`--arg expects key=value, received ${received(pair)}`, "for example --arg root=default");
      }
      const key = pair.slice(0, eq);
      const value = coerceArgument(properties[key], pair.slice(eq + 1));
      const declared = properties[key]?.type;
      if (declared === "array" && !Array.isArray(value)) {
        args[key] = [...(Array.isArray(args[key]) ? args[key] as unknown[] : []), value];
      } else {
        args[key] = value;
      }
    } else if (arg === "--args" || arg.startsWith("--args=")) {
      const text = arg === "--args" ? rest[++i] : arg.slice("--args=".length);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text ?? "");
      } catch {
        throw usage(
          `--args expects a JSON object, received ${received(text)}`,
          `for example --args '{"project_id":"default"}'`,
        );
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        throw usage(
          `--args expects a JSON object, received ${received(text)}`,
          `for example --args '{"project_id":"default"}'`,
        );
      }
      args = { ...args, ...parsed };
    } else {
      throw usage(`unknown option ${received(arg)} for "warden call"`, "use --arg key=value, --args <json> or --json");
    }
  }
  const controller = new AbortController();
  const stopListening = platform().onInterrupt(() => controller.abort());
  const result = await governedCall(tool, args, {
    policy: env.policy,
    ledger: env.ledger,
    fs: env.fs,
    host: env.host,
    timeoutMs: env.callTimeoutMs,
    spawner: env.spawner,
    manifests: env.manifests,
    signal: controller.signal,
    sendProgress: (progress, total, message) => {
      platform().writeStderr(
        `progress ${progress}${total !== undefined ? `/${total}` : ""}${message ? ` ${message}` : ""}\n`,
      );
      return Promise.resolve();
    },
    sendLog: (level, data) =>
      platform().writeStderr(`${level}: ${typeof data === "string" ? data : JSON.stringify(data)}\n`),
  });
  stopListening();
  if (json) {
    print(JSON.stringify(result, null, 2));
  } else if (result.isError) {
    // The message, as text: an error's structuredContent (of a tool without an output schema) repeats it as JSON.
    platform().writeStderr(result.content.map((c) => c.text).join("\n") + "\n");
  } else {
    print(
      result.structuredContent
        ? JSON.stringify(result.structuredContent, null, 2)
        : result.content.map((c) => c.text).join("\n"),
    );
  }
  return result.isError ? 1 : 0;
}

/**
 * The plugins beside the golden catalog, for `warden catalog`: each is its own contract, identified by its manifest
 * digest (which the lock pins), and the served catalog's digest covers them with the built-in tools.
 */
function pluginsBeside(env: CommandEnv, goldenName: string): string {
  const records = env.host.extensions;
  if (records.length === 0) return "";
  const lines = [`Plugins beside it, not in ${goldenName}; each pinned by its manifest digest in the lock file:`];
  for (const r of records) {
    const served = r.status === "verified" ? "served" : `${r.status}, not served`;
    lines.push(
      `  ${r.id} ${r.version ?? "-"} (${served}): manifest ${r.manifestDigest ?? "-"}, tools ${
        r.tools.join(", ") || "-"
      }`,
    );
  }
  if (records.some((r) => r.status === "verified")) {
    lines.push(
      `Served catalog, built-in tools and plugins together (host_context's digest): ${env.host.catalogDigest}`,
    );
  }
  return lines.join("\n") + "\n";
}

/**
 * `warden catalog [--check | --update] [--golden <file>]`: prints, checks or rewrites the golden catalog, which
 * pins the built-in tools (`contract`); the plugins are reported beside it.
 */
export async function catalogCommand(
  env: CommandEnv,
  args: readonly string[],
  contract: Catalog,
): Promise<number> {
  let mode: "print" | "check" | "update" = "print";
  let goldenPath = platform().fromFileUrl(env.goldenUrl);
  let goldenName = "schema/catalog.json";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if ((arg === "--check" || arg === "--update") && mode === "print") mode = arg === "--check" ? "check" : "update";
    else if (arg === "--golden" && args[i + 1]) goldenPath = goldenName = args[++i];
    else {
      throw usage(
        `unexpected ${received(arg)} for "warden catalog"`,
        "use one of --check or --update, and optionally --golden <file>",
      );
    }
  }
  const current = await goldenText(contract);
  const beside = () => platform().writeStderr(pluginsBeside(env, goldenName));
  if (mode === "print") {
    print(current);
    beside();
    return 0;
  }
  if (mode === "update") {
    try {
      await platform().fs.writeFileAtomic(goldenPath, current);
    } catch (error) {
      throw new WardenError("config_invalid", problem(`Cannot write ${goldenName}`, messageOf(error)));
    }
    platform().writeStderr(
      `Updated ${goldenName}: ${contract.listResult.tools.length} tools, ${await contract.digest()}\n`,
    );
    beside();
    return 0;
  }
  let golden: string;
  try {
    golden = await platform().fs.readTextFile(goldenPath);
  } catch {
    platform().writeStderr(
      `The golden catalog ${goldenName} is missing; run "warden catalog --update" and commit it\n`,
    );
    return 1;
  }
  if (golden === current) {
    platform().writeStderr(`Catalog matches ${goldenName} (${await contract.digest()})\n`);
    beside();
    return 0;
  }
  platform().writeStderr(
    unifiedDiff(golden, current, [`${goldenName} (golden)`, "catalog (this build)"]) +
      `The catalog differs from ${goldenName}. If the change is intended, run "warden catalog --update" and commit the file.\n`,
  );
  return 1;
}
