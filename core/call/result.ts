// A call's result as MCP defines it: what a tool returned, shaped (and
// checked against its output schema), or an error result.
import type { CatalogEntry } from "../catalog.ts";
import { issuePath } from "./messages.ts";
import { type ErrorCode, messageOf, problem } from "../errors.ts";

/** A `tools/call` result, as MCP defines it. */
export interface CallResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: true;
  _meta?: { "warden/error_code"?: ErrorCode; "warden/ledger"?: { written: false; error: string } };
}

/**
 * An error result: the message as text, and as data in `structuredContent` (`error_code`, `message` and the error's
 * details), which every published output schema allows beside the tool's own answer (ERROR_RESULT_SCHEMA, core/catalog.ts); the
 * code is in `_meta` too, where it has always been.
 */
export function errorResult(code: ErrorCode, message: string, details?: Readonly<Record<string, unknown>>): CallResult {
  return {
    content: [{ type: "text", text: message }],
    structuredContent: { ...details, error_code: code, message },
    isError: true,
    _meta: { "warden/error_code": code },
  };
}

/**
 * The JSON text of a result shaped from structured output: its text content
 * is that text already, so the transport sends it without serializing the
 * output a second time (a large answer is serialized once). Kept beside the
 * result, not in it, so the result stays exactly what MCP defines.
 */
const structuredJson = new WeakMap<CallResult, string>();

/**
 * The whole JSON text of `result` when it was shaped from structured output,
 * made from the text it holds already; undefined for any other result (then
 * serialize it as usual).
 */
export function resultJson(result: CallResult): string | undefined {
  const text = structuredJson.get(result);
  if (text === undefined) return undefined;
  let notes = "";
  for (let i = 1; i < result.content.length; i++) notes += `,${JSON.stringify(result.content[i])}`;
  return `{"content":[{"type":"text","text":${JSON.stringify(text)}}${notes}],"structuredContent":${text}}`;
}

/**
 * The result of what a tool returned, with the notes it added (ctx.note) as text blocks after its own, which stays
 * as it is (a JSON block stays parseable); never throws, so that every call is answered.
 */
export function shapeOutput(tool: CatalogEntry, value: unknown, notes: readonly string[] = []): CallResult {
  try {
    const result = shapeValue(tool, value);
    if (notes.length === 0 || result.isError) return result;
    for (const text of notes) result.content.push({ type: "text", text });
    return result;
  } catch (error) {
    // JSON.stringify throws on a BigInt or a cycle, and a validator may on a hostile value.
    return errorResult(
      "invalid_output",
      problem(
        `Tool "${tool.descriptor.name}" returned output that cannot be sent as JSON`,
        messageOf(error),
        "this is a bug in the tool",
      ),
    );
  }
}

function shapeValue(tool: CatalogEntry, value: unknown): CallResult {
  const name = tool.descriptor.name;
  if (tool.validateOutput) {
    const checked = tool.validateOutput(value);
    if (!checked.ok) {
      const issue = checked.issues[0];
      return errorResult(
        "invalid_output",
        problem(
          `Tool "${name}" returned output that does not match its schema`,
          `${issuePath(issue.path) || "(root)"}: expected ${issue.expected} but received ${issue.received}`,
          "this is a bug in the tool",
        ),
      );
    }
    const structured = checked.value as Record<string, unknown>;
    const text = JSON.stringify(structured);
    const result: CallResult = { content: [{ type: "text", text }], structuredContent: structured };
    structuredJson.set(result, text);
    return result;
  }
  if (typeof value === "string") return { content: [{ type: "text", text: value }] };
  return { content: [{ type: "text", text: value === undefined ? "" : JSON.stringify(value) }] };
}
