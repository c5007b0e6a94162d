// The frozen catalog: built once at startup, deep-frozen, identified by the
// sha256 of its canonical JSON. `tools/list` serves it unchanged for the life
// of the process; the golden file in schema/ pins it.
import { sha256Digest } from "./sha256.ts";
import { canonicalJson, prettyCanonicalJson } from "./canonical_json.ts";
import * as v from "valibot";
import type { SchemaIssue } from "./json_schema.ts";
import type { JsonSchema, LoadedTool } from "./loader.ts";
import { RISK_CLASSES, type RiskClass, type ToolCapabilities, type ToolContext } from "./tool.ts";

/** MCP tool annotations, derived from the risk class only. */
export interface ToolAnnotations {
  readonly title: string;
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/** One entry of `tools/list`. */
export interface ToolDescriptor {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly annotations: ToolAnnotations;
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
}

/** The catalog and what is derived from it once. */
export interface Catalog {
  /** The `tools/list` result, deep-frozen. */
  readonly listResult: { readonly tools: readonly ToolDescriptor[] };
  /** `sha256:<hex>` of the canonical JSON of `listResult`. */
  readonly digest: string;
  readonly toolsByRisk: Readonly<Record<RiskClass, number>>;
  /** The entry behind each name. */
  readonly tools: ReadonlyMap<string, CatalogEntry>;
}

const HINTS: Record<RiskClass, Omit<ToolAnnotations, "title">> = {
  read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  gate: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  "external-side-effect": { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
};

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
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
  },
  plugin?: PluginOrigin,
): ToolDescriptor {
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: structuredClone(spec.inputSchema),
    ...(spec.outputSchema ? { outputSchema: structuredClone(spec.outputSchema) } : {}),
    annotations: { title: spec.title, ...HINTS[spec.risk] },
    _meta: plugin ? { "warden/risk": spec.risk, "warden/plugin": { ...plugin } } : { "warden/risk": spec.risk },
  };
}

/** Converts valibot issues to the shape every argument message uses. */
function valibotIssues(schema: v.GenericSchema, issues: readonly v.BaseIssue<unknown>[]): SchemaIssue[] {
  type Node = { expects?: string; entries?: Record<string, Node>; wrapped?: Node; item?: Node };
  return issues.map((issue) => {
    const path = (issue.path ?? []).map((item) => (item as { key: string | number }).key);
    if (issue.type === "strict_object" && issue.expected === "never") {
      return { path, kind: "unknown-key" as const, expected: "never", received: issue.received };
    }
    if (issue.input === undefined && issue.received === "undefined" && path.length > 0) {
      // valibot names the missing key as expected; the schema at that path says what it should be.
      let node: Node | undefined = schema as unknown as Node;
      for (const key of path) {
        while (node?.wrapped) node = node.wrapped;
        node = typeof key === "number" ? node?.item : node?.entries?.[key];
      }
      while (node?.wrapped) node = node.wrapped;
      return {
        path,
        kind: "missing" as const,
        expected: node?.expects ?? issue.expected ?? "a value",
        received: "undefined",
      };
    }
    // A custom message (one not written by valibot, whose own start with "Invalid") says what is expected.
    const expected = issue.message && !issue.message.startsWith("Invalid ")
      ? issue.message
      : issue.expected ?? issue.message;
    return { path, kind: "invalid" as const, expected, received: issue.received };
  });
}

function validator(schema: v.GenericSchema): (value: unknown) => Validated {
  return (value) => {
    const parsed = v.safeParse(schema, value);
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
  };
}

/** Builds the catalog from its entries (names must be unique), sorted by name. */
export async function buildCatalog(entries: readonly CatalogEntry[]): Promise<Catalog> {
  const sorted = [...entries].sort((a, b) => (a.descriptor.name < b.descriptor.name ? -1 : 1));
  const listResult = deepFreeze({ tools: sorted.map((entry) => entry.descriptor) });
  const digest = await sha256Digest(canonicalJson(listResult));
  const toolsByRisk = Object.fromEntries(RISK_CLASSES.map((risk) => [risk, 0])) as Record<RiskClass, number>;
  for (const entry of sorted) toolsByRisk[entry.risk]++;
  return Object.freeze({
    listResult,
    digest,
    toolsByRisk: Object.freeze(toolsByRisk),
    tools: new Map(sorted.map((entry) => [entry.descriptor.name, entry])),
  });
}

/** The golden file's text: digest and tools, canonical key order, indented. */
export function goldenText(catalog: Catalog): string {
  return prettyCanonicalJson({ digest: catalog.digest, tools: catalog.listResult.tools });
}

/** The first summary sentence of a description, for one-line listings. */
export function summaryLine(description: string): string {
  const firstLine = description.trim().split("\n")[0];
  const sentence = /^.*?[.!?](?=\s|$)/.exec(firstLine);
  return (sentence ? sentence[0] : firstLine).trim();
}
