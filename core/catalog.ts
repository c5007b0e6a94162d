// The frozen catalog: built once at startup, deep-frozen, identified by the
// sha256 of its canonical JSON. `tools/list` serves it unchanged for the life
// of the process; the golden file in schema/ pins it.
import { canonicalJson, prettyCanonicalJson } from "./canonical_json.ts";
import type { JsonSchema, LoadedTool } from "./loader.ts";
import { RISK_CLASSES, type RiskClass, type Tool } from "./tool.ts";

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
  readonly _meta: { readonly "warden/risk": RiskClass };
}

/** The catalog and what is derived from it once. */
export interface Catalog {
  /** The `tools/list` result, deep-frozen. */
  readonly listResult: { readonly tools: readonly ToolDescriptor[] };
  /** `sha256:<hex>` of the canonical JSON of `listResult`. */
  readonly digest: string;
  readonly toolsByRisk: Readonly<Record<RiskClass, number>>;
  /** The tool behind each name. */
  readonly tools: ReadonlyMap<string, Tool>;
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

function describe(loaded: LoadedTool): ToolDescriptor {
  const { tool } = loaded;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: structuredClone(loaded.inputSchema),
    ...(loaded.outputSchema ? { outputSchema: structuredClone(loaded.outputSchema) } : {}),
    annotations: { title: tool.title, ...HINTS[tool.risk] },
    _meta: { "warden/risk": tool.risk },
  };
}

/** `sha256:<hex>` of a text's UTF-8 bytes (WebCrypto: node:crypto costs deno ~20 ms to load). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return "sha256:" + Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Builds the catalog from loaded tools, sorted by name. */
export async function buildCatalog(loaded: readonly LoadedTool[]): Promise<Catalog> {
  const sorted = [...loaded].sort((a, b) => (a.tool.name < b.tool.name ? -1 : 1));
  const listResult = deepFreeze({ tools: sorted.map(describe) });
  const digest = await sha256Hex(canonicalJson(listResult));
  const toolsByRisk = Object.fromEntries(RISK_CLASSES.map((risk) => [risk, 0])) as Record<RiskClass, number>;
  for (const { tool } of sorted) toolsByRisk[tool.risk]++;
  return Object.freeze({
    listResult,
    digest,
    toolsByRisk: Object.freeze(toolsByRisk),
    tools: new Map(sorted.map(({ tool }) => [tool.name, tool])),
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
