// The plugin manifest: what a plugin is, what it may touch and the tools it
// serves, signed as exact bytes. The bytes must be their own RFC 8785
// canonical form, so one signed text has exactly one reading.
import { declaredOrigin } from "../../doors/egress.ts";
import { PROGRAM_NAME } from "../../doors/spawn.ts";
import * as v from "valibot";
import { canonicalJson } from "../../canonical_json.ts";
import { schemaProblems } from "../../json_schema.ts";
import { RISK_CLASSES, type RiskClass } from "../../tool.ts";
import { PLUGIN_LIMITS } from "../sandbox/limits.ts";
import { CAPABILITY_NAMES, holds, ruleOf } from "../../capabilities.ts";
import { isStrictJsonValue, parseStrictJson, StrictJsonError } from "./strict_json.ts";

/** An optional whole number within a limit's host bounds, described with its default. */
function limitSchema(limit: { readonly default: number; readonly min: number; readonly max: number }, what: string) {
  return v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(limit.min),
      v.maxValue(limit.max),
      v.description(`${what}; default ${limit.default}.`),
    ),
  );
}

/** The manifest format this host reads. */
export const MANIFEST_SCHEMA_VERSION = 1;

const ID = /^[a-z][a-z0-9]{0,29}$/;
const TOOL = /^[a-z][a-z0-9_]{0,31}$/;
const ENTRY_PATH =
  /^(?!\.{1,2}(?:\/|$))[A-Za-z0-9_-][A-Za-z0-9._-]*(?:\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

const JsonSchemaObject = v.pipe(
  v.record(v.string(), v.unknown()),
  v.description("A JSON Schema (2020-12 subset: the keywords @valibot/to-json-schema writes) with type object."),
);

const ManifestTool = v.strictObject({
  name: v.pipe(v.string(), v.regex(TOOL), v.description("Tool name; the catalog serves it as <id>_<name>.")),
  title: v.pipe(v.string(), v.minLength(1), v.maxLength(120)),
  description: v.pipe(v.string(), v.minLength(1), v.maxLength(4000)),
  inputSchema: JsonSchemaObject,
  outputSchema: v.optional(JsonSchemaObject),
});

/** The valibot schema of a manifest; schema/plugin-manifest.schema.json is its JSON Schema. */
export const ManifestSchema = v.strictObject({
  schemaVersion: v.literal(MANIFEST_SCHEMA_VERSION),
  id: v.pipe(v.string(), v.regex(ID), v.description("Lowercase letters and digits; equals the plugin directory name.")),
  version: v.pipe(v.string(), v.regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/), v.description("Semantic version.")),
  description: v.pipe(v.string(), v.minLength(1), v.maxLength(4000)),
  author: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  risk: v.picklist(RISK_CLASSES as [RiskClass, ...RiskClass[]]),
  entry: v.strictObject({
    path: v.pipe(v.string(), v.regex(ENTRY_PATH), v.description("The ESM bundle, relative to the plugin directory.")),
    sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/), v.description("Lowercase hex sha256 of the entry's bytes.")),
  }),
  capabilities: v.strictObject({
    readRoots: v.pipe(
      v.array(v.pipe(v.string(), v.regex(/^(\*|[a-z][a-z0-9_-]{0,31})$/))),
      v.description('Root ids the plugin may read, or "*" for every configured root.'),
    ),
    argv: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.regex(PROGRAM_NAME))),
        v.description("Program names (never paths) a gate plugin may run, resolved in PATH when the host starts."),
      ),
    ),
    writeRoots: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,31}$/))),
        v.description("Root ids an external-side-effect plugin may write under."),
      ),
    ),
    netHosts: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.regex(/^https?:\/\/[^/?#@\s]+$/))),
        v.description('Origins an external-side-effect plugin may fetch from, e.g. "https://api.example.com".'),
      ),
    ),
  }),
  limits: v.optional(
    v.pipe(
      v.strictObject({
        memoryMb: limitSchema(
          PLUGIN_LIMITS.memoryMb,
          "MiB the plugin may use (typed arrays, WebAssembly memory and the JS heap together)",
        ),
        cpuMsPerCall: limitSchema(PLUGIN_LIMITS.cpuMsPerCall, "CPU time one call may use, all threads together, in ms"),
      }),
      v.description("What the plugin's process may use; the host's maxima bound what a manifest may ask."),
    ),
  ),
  tools: v.pipe(v.array(ManifestTool), v.minLength(1), v.maxLength(64)),
});

/** A manifest that passed every check. */
export type Manifest = v.InferOutput<typeof ManifestSchema>;

/** Why a manifest is refused: `not-canonical` or `invalid-manifest`, with the detail. */
export interface ManifestProblem {
  readonly status: "not-canonical" | "invalid-manifest";
  readonly reason: string;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function firstDifference(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

const NOT_CANONICAL = Symbol("not canonical");

/**
 * The value of a text that is its own canonical form, read with the built-in JSON.parse, when the strict reader
 * could return it (`isStrictJsonValue`); `NOT_CANONICAL` for anything else (then the strict reader says why). This
 * is what the strict reader and the comparison would accept, at a fraction of the cost: a text equal to
 * `canonicalJson` of such a value has no whitespace, no duplicate key (canonical output has none), no number but a
 * plain integer and no deeper nesting than the reader allows, so the strict reader reads it to the same value.
 */
function canonicalValue(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return isStrictJsonValue(value) && canonicalJson(value) === text ? value : NOT_CANONICAL;
  } catch {
    return NOT_CANONICAL; // not JSON, or not canonicalizable: the strict reader or the comparison words it
  }
}

/**
 * Reads manifest bytes: strict JSON, canonical form, schema, and the rules a
 * schema cannot say. `directory` is the plugin directory's name.
 */
export function readManifest(bytes: Uint8Array, directory: string): Manifest | ManifestProblem {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { status: "invalid-manifest", reason: "manifest.json is not UTF-8" };
  }
  let value = canonicalValue(text);
  if (value === NOT_CANONICAL) {
    // The strict reader and the comparison below, which word what is wrong (or throw as they always did).
    try {
      value = parseStrictJson(text);
    } catch (error) {
      if (error instanceof StrictJsonError && error.kind !== "syntax") {
        return { status: "not-canonical", reason: error.message };
      }
      return { status: "invalid-manifest", reason: `manifest.json is not JSON: ${(error as Error).message}` };
    }
    let canonical: string;
    try {
      canonical = canonicalJson(value);
    } catch (error) {
      // A lone surrogate, for one: no canonical form exists, so no signature can mean one text.
      return { status: "not-canonical", reason: `manifest.json has no canonical form: ${(error as Error).message}` };
    }
    if (canonical !== text) {
      const at = firstDifference(canonical, text);
      const what = text.length > canonical.length && at === canonical.length
        ? "text after the JSON value (a trailing newline or space?)"
        : `differs from its canonical form at offset ${at} (keys must be sorted, no whitespace between tokens)`;
      return { status: "not-canonical", reason: `manifest.json ${what}; rewrite it with "warden plugin build"` };
    }
  }
  const parsed = v.safeParse(ManifestSchema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = (issue.path ?? []).map((p) => (p as { key: unknown }).key).join(".") || "(root)";
    return { status: "invalid-manifest", reason: `manifest.json ${where}: ${issue.message}` };
  }
  const manifest = parsed.output;
  if (manifest.id !== directory) {
    return {
      status: "invalid-manifest",
      reason: `manifest id "${manifest.id}" differs from its directory "${directory}"`,
    };
  }
  for (const capability of CAPABILITY_NAMES) {
    const key = ruleOf(capability).manifestKey;
    if ((manifest.capabilities[key] ?? []).length > 0 && !holds(manifest.risk, capability)) {
      return {
        status: "invalid-manifest",
        reason: `capability ${key} is not available to risk class "${manifest.risk}"`,
      };
    }
  }
  const notOrigin = (manifest.capabilities.netHosts ?? []).find((host) => declaredOrigin(host) !== host);
  if (notOrigin !== undefined) {
    return {
      status: "invalid-manifest",
      reason: `netHosts entry "${notOrigin}" is not an origin such as https://host or https://host:port`,
    };
  }
  const names = new Set<string>();
  for (const tool of manifest.tools) {
    if (names.has(tool.name)) return { status: "invalid-manifest", reason: `tool "${tool.name}" is declared twice` };
    names.add(tool.name);
    for (const key of ["inputSchema", "outputSchema"] as const) {
      const schema = tool[key];
      if (schema === undefined) continue;
      if (schema.type !== "object") {
        return { status: "invalid-manifest", reason: `tool "${tool.name}" ${key} must have type "object"` };
      }
      const problems = schemaProblems(schema, `tools.${tool.name}.${key}`);
      if (problems.length > 0) return { status: "invalid-manifest", reason: problems[0] };
    }
  }
  return manifest;
}

/** True when `readManifest` refused the bytes. */
export function isManifestProblem(value: Manifest | ManifestProblem): value is ManifestProblem {
  return "status" in value && "reason" in value && !("schemaVersion" in value);
}
