// The frozen catalog: built once at startup, deep-frozen, identified by the
// sha256 of its canonical JSON. `tools/list` serves it unchanged for the life
// of the process; the golden file in schema/ pins it.
import { HINTS, type RiskHints } from "./capabilities.ts";
import { sha256Digest } from "./sha256.ts";
import { canonicalJson, prettyCanonicalJson } from "./canonical_json.ts";
import * as v from "valibot";
import { lengthIssue, patternExpected, type SchemaIssue } from "./json_schema.ts";
import type { JsonSchema, LoadedTool } from "./loader.ts";
import { RISK_CLASSES, type RiskClass, type ToolCapabilities, type ToolContext } from "./tool.ts";
import { problem } from "./errors.ts";
import type { PluginRecord } from "./plugins/trust/discover.ts";

/** MCP tool annotations: the title, and the hints of the risk class (from the capability table, core/capabilities.ts). */
export interface ToolAnnotations extends RiskHints {
  readonly title: string;
}

/** One entry of `tools/list`. */
export interface ToolDescriptor {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly annotations: ToolAnnotations;
  /** Present on a tool served as a job: clients may call it as a task (MCP 2025-11-25). */
  readonly execution?: { readonly taskSupport: "optional" };
  readonly _meta: ToolMeta;
}

/** Where a plugin tool comes from, as published in its descriptor. */
export interface PluginOrigin {
  readonly id: string;
  readonly version: string;
  readonly manifestDigest: string;
}

/** warden's own keys in a descriptor's `_meta`. */
export interface ToolMeta {
  readonly "warden/risk": RiskClass;
  readonly "warden/plugin"?: PluginOrigin;
}

/** The outcome of validating a value against a tool's schema. */
export type Validated = { readonly ok: true; readonly value: unknown } | {
  readonly ok: false;
  readonly issues: readonly SchemaIssue[];
};

/**
 * What the host calls, for a built-in tool and a plugin tool alike: its
 * descriptor, its validators and how to run it.
 */
export interface CatalogEntry {
  readonly descriptor: ToolDescriptor;
  readonly risk: RiskClass;
  /** What the tool declared it may reach; every use is checked against it. */
  readonly capabilities: Required<ToolCapabilities>;
  validateInput(args: unknown): Validated;
  /** Present when the tool declares an output schema. */
  validateOutput?(value: unknown): Validated;
  invoke(args: unknown, ctx: ToolContext): unknown;
  /** Also served as a job (`<name>_start`, `<name>_result`). */
  readonly job?: true;
}

/** The catalog and what is derived from it once. */
export interface Catalog {
  /** The `tools/list` result, deep-frozen. */
  readonly listResult: { readonly tools: readonly ToolDescriptor[] };
  /**
   * `sha256:<hex>` of the canonical JSON of `listResult`, hashed on the first ask and kept: the server answers
   * initialize before it, as the hash loads node's WebCrypto (scripts/bench/README.md, start-up).
   */
  digest(): Promise<string>;
  readonly toolsByRisk: Readonly<Record<RiskClass, number>>;
  /** The entry behind each name. */
  readonly tools: ReadonlyMap<string, CatalogEntry>;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * What an error result's `structuredContent` holds, as JSON Schema: every tool's published output schema is its own
 * answer or this (clients check structuredContent against it even on an error; SDK 1.x's client does). Short, as
 * every tool repeats it in tools/list: the details of an error (project_unknown's `project_id` and `projects`,
 * project_ambiguous's `reason`) are members it does not name.
 */
const ERROR_RESULT_SCHEMA = Object.freeze({
  type: "object",
  properties: { error_code: { type: "string" }, message: { type: "string" } },
  required: ["error_code", "message"],
});

/**
 * The output schema a tool publishes: its answer, or an error result's data (ERROR_RESULT_SCHEMA), as a call's
 * `structuredContent` is one or the other. Still an object schema at the top, as MCP requires.
 */
function orError(schema: JsonSchema): JsonSchema {
  const { $schema, ...answer } = structuredClone(schema) as Record<string, unknown>;
  return {
    ...($schema === undefined ? {} : { $schema }),
    type: "object",
    anyOf: [answer, structuredClone(ERROR_RESULT_SCHEMA)],
  } as JsonSchema;
}

/** A descriptor with the annotations and `_meta` every tool of `risk` gets. */
export function describeTool(
  spec: {
    name: string;
    title: string;
    description: string;
    risk: RiskClass;
    inputSchema: JsonSchema;
    outputSchema?: JsonSchema;
    job?: boolean;
  },
  plugin?: PluginOrigin,
): ToolDescriptor {
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: structuredClone(spec.inputSchema),
    ...(spec.outputSchema ? { outputSchema: orError(spec.outputSchema) } : {}),
    annotations: { title: spec.title, ...HINTS[spec.risk] },
    ...(spec.job === true ? { execution: { taskSupport: "optional" as const } } : {}),
    _meta: plugin ? { "warden/risk": spec.risk, "warden/plugin": { ...plugin } } : { "warden/risk": spec.risk },
  };
}

/**
 * valibot's words for what a schema expects, in the words of the JSON Schema the catalog publishes (and the plugin
 * validator uses): `array` and `object` in lower case, and no parentheses around a list of options.
 */
function typeWords(expects: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < expects.length; i++) {
    const ch = expects[i];
    if (ch === '"' && expects[i - 1] !== "\\") quoted = !quoted;
    if (!quoted && (ch === "(" || ch === ")")) continue;
    out += ch;
  }
  return out.replace(/(?<!")\b(Array|Object)\b(?!")/g, (word) => word.toLowerCase());
}

/** What a valibot check expected, for the checks that do not say it themselves (valibot's `expected` is null). */
const CHECK_WORDS: Record<string, string> = {
  integer: "integer",
  safe_integer: "safe integer",
  finite: "finite number",
};

type ValibotNode = {
  kind?: string;
  type?: string;
  expects?: string;
  entries?: Record<string, ValibotNode>;
  wrapped?: ValibotNode;
  item?: ValibotNode;
  pipe?: ValibotNode[];
};

/** Wrappers that only make a key optional: the value, when given, is checked by what they wrap. */
const OPTIONAL_WRAPPERS = new Set(["optional", "exact_optional", "undefinedable"]);

/** The schema node that checks the value at `path`. */
function nodeAt(schema: v.GenericSchema, path: readonly (string | number)[]): ValibotNode | undefined {
  let node: ValibotNode | undefined = schema as unknown as ValibotNode;
  for (const key of path) {
    while (node?.wrapped) node = node.wrapped;
    node = typeof key === "number" ? node?.item : node?.entries?.[key];
  }
  while (node?.wrapped && OPTIONAL_WRAPPERS.has(node.type ?? "")) node = node.wrapped;
  return node;
}

/** What a schema node accepts, in the words of its JSON Schema. */
function nodeWords(node: ValibotNode | undefined): string | undefined {
  if (!node?.expects) return undefined;
  // `v.pipe(v.number(), v.integer())` is published as `"type": "integer"`.
  if (node.expects === "number" && node.pipe?.some((step) => step.type === "integer")) return "integer";
  return typeWords(node.expects);
}

/** Converts valibot issues to the shape every argument message uses, worded as the JSON Schema validator words them. */
function valibotIssues(schema: v.GenericSchema, issues: readonly v.BaseIssue<unknown>[]): SchemaIssue[] {
  return issues.map((issue): SchemaIssue => {
    const path = (issue.path ?? []).map((item) => (item as { key: string | number }).key);
    if (issue.type === "strict_object" && issue.expected === "never") {
      return { path, kind: "unknown-key", expected: "never", received: issue.received };
    }
    if (issue.input === undefined && issue.received === "undefined" && path.length > 0) {
      // valibot names the missing key as expected; the schema at that path says what it should be.
      const expected = nodeWords(nodeAt(schema, path)) ?? issue.expected ?? "a value";
      return { path, kind: "missing", expected, received: "undefined" };
    }
    // A custom message (one not written by valibot, whose own start with "Invalid") says what is expected.
    if (issue.message && !issue.message.startsWith("Invalid ")) {
      return { path, kind: "invalid", expected: issue.message, received: issue.received };
    }
    const requirement = (issue as { requirement?: unknown }).requirement;
    switch (issue.type) {
      case "min_length":
      case "max_length":
      case "length":
        return lengthIssue(path, issue.expected ?? String(requirement), Number(issue.received));
      case "non_empty":
        return lengthIssue(path, ">=1", Number(issue.received));
      case "regex":
        return {
          path,
          kind: "invalid",
          expected: patternExpected((requirement as RegExp).source),
          received: issue.received,
        };
      case "multiple_of":
        return { path, kind: "invalid", expected: `multiple of ${requirement}`, received: issue.received };
    }
    const expected = issue.kind === "schema" && issue.expected !== null
      ? nodeWords(nodeAt(schema, path)) ?? typeWords(issue.expected)
      : issue.expected ?? CHECK_WORDS[issue.type] ?? issue.type.replaceAll("_", " ");
    return { path, kind: "invalid", expected, received: issue.received };
  });
}

function validator(schema: v.GenericSchema): (value: unknown) => Validated {
  return (value) => {
    // One issue per value, the first check it fails, as the JSON Schema validator reports it.
    const parsed = v.safeParse(schema, value, { abortPipeEarly: true });
    return parsed.success
      ? { ok: true, value: parsed.output }
      : { ok: false, issues: valibotIssues(schema, parsed.issues) };
  };
}

/** The catalog entry of a built-in tool: valibot validation, in-process handler. */
export function builtinEntry(loaded: LoadedTool): CatalogEntry {
  const { tool } = loaded;
  const handler = tool.handler as (args: unknown, ctx: ToolContext) => unknown;
  return {
    descriptor: describeTool({ ...tool, inputSchema: loaded.inputSchema, outputSchema: loaded.outputSchema }),
    risk: tool.risk,
    capabilities: {
      spawn: [...(tool.capabilities?.spawn ?? [])],
      writeRoots: [...(tool.capabilities?.writeRoots ?? [])],
      netHosts: [...(tool.capabilities?.netHosts ?? [])],
    },
    validateInput: validator(tool.input),
    ...(tool.output ? { validateOutput: validator(tool.output) } : {}),
    invoke: (args, ctx) => handler(args, ctx),
    ...(tool.job === true ? { job: true as const } : {}),
  };
}

/** Builds the catalog from its entries (names must be unique), sorted by name. */
export function buildCatalog(entries: readonly CatalogEntry[]): Catalog {
  const sorted = [...entries].sort((a, b) => (a.descriptor.name < b.descriptor.name ? -1 : 1));
  const listResult = deepFreeze({ tools: sorted.map((entry) => entry.descriptor) });
  // Canonicalized now, so that a catalog that has no canonical form fails the start, not its first digest.
  const canonical = canonicalJson(listResult);
  let digest: Promise<string> | undefined;
  const toolsByRisk = Object.fromEntries(RISK_CLASSES.map((risk) => [risk, 0])) as Record<RiskClass, number>;
  for (const entry of sorted) toolsByRisk[entry.risk]++;
  return Object.freeze({
    listResult,
    digest: () => digest ??= sha256Digest(canonical),
    toolsByRisk: Object.freeze(toolsByRisk),
    tools: new Map(sorted.map((entry) => [entry.descriptor.name, entry])),
  });
}

/**
 * Why `name` is not served when a refused plugin declares it (the plugin, its status and reason, and the fix);
 * undefined for a name no plugin declares.
 */
export function refusedToolProblem(name: string, extensions: readonly PluginRecord[]): string | undefined {
  const record = extensions.find((r) => r.status !== "verified" && r.tools.includes(name));
  if (!record) return undefined;
  return problem(
    `Tool ${JSON.stringify(name)} is not served`,
    `its plugin "${record.id}" is refused (${record.status}${record.reason ? `: ${record.reason}` : ""})`,
    record.fix ?? 'run "warden plugin list"',
  );
}

/** The golden file's text: digest and tools, canonical key order, indented. */
export async function goldenText(catalog: Catalog): Promise<string> {
  return prettyCanonicalJson({ digest: await catalog.digest(), tools: catalog.listResult.tools });
}

/** The first summary sentence of a description, for one-line listings. */
export function summaryLine(description: string): string {
  const firstLine = description.trim().split("\n")[0];
  const sentence = /^.*?[.!?](?=\s|$)/.exec(firstLine);
  return (sentence ? sentence[0] : firstLine).trim();
}
