// Runs one tool call: validates the arguments, builds the context, enforces
// the timeout and cancellation, and shapes the result. Every failure becomes
// a result with isError and a message that names the problem; nothing thrown
// by a tool reaches the protocol layer.
import * as v from "valibot";
import { type ContextParts, createContext } from "./context.ts";
import { type ErrorCode, messageOf, problem, received, WardenError } from "./errors.ts";
import { log } from "./log.ts";
import type { Tool } from "./tool.ts";

/** A `tools/call` result, as MCP defines it. */
export interface CallResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: true;
  _meta?: { "warden/error_code": ErrorCode };
}

/** What the host supplies for one call besides the arguments. */
export interface CallOptions extends Omit<ContextParts, "signal"> {
  readonly timeoutMs: number;
  /** The client's cancellation, when it has one. */
  readonly signal?: AbortSignal;
}

/** An error result: the message as text, the code in `_meta`. */
export function errorResult(code: ErrorCode, message: string): CallResult {
  return { content: [{ type: "text", text: message }], isError: true, _meta: { "warden/error_code": code } };
}

function issuePath(issue: v.BaseIssue<unknown>): string {
  let out = "";
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** What the schema at `issue.path` expects, e.g. `string`; unwraps optional and friends. */
function expectedAt(tool: Tool, issue: v.BaseIssue<unknown>): string {
  type Node = { expects?: string; entries?: Record<string, Node>; wrapped?: Node; item?: Node };
  let node: Node | undefined = tool.input as unknown as Node;
  for (const item of issue.path ?? []) {
    while (node?.wrapped) node = node.wrapped;
    const key = (item as { key: unknown }).key;
    node = typeof key === "number" ? node?.item : node?.entries?.[String(key)];
  }
  while (node?.wrapped) node = node.wrapped;
  return node?.expects ?? issue.expected ?? "a value";
}

function describeIssue(tool: Tool, issue: v.BaseIssue<unknown>): string {
  const where = issuePath(issue);
  if (where === "") {
    return problem("Invalid arguments", `expected an object of named arguments, received ${received(issue.input)}`);
  }
  if (issue.type === "strict_object" && issue.expected === "never") {
    const accepted = Object.keys(tool.input.entries);
    return problem(
      `Unknown argument "${where}"`,
      `${tool.name} does not take it`,
      accepted.length ? `it accepts ${accepted.join(", ")}` : "it takes no arguments",
    );
  }
  if (issue.input === undefined && issue.received === "undefined") {
    return problem(`Missing argument "${where}"`, `expected ${expectedAt(tool, issue)}`);
  }
  return problem(`Invalid argument "${where}"`, `expected ${issue.expected} but received ${issue.received}`);
}

/** Validates `args` against the tool's input schema; the messages of every issue, or the typed value. */
export function validateArguments(
  tool: Tool,
  args: unknown,
): { ok: true; value: unknown } | { ok: false; message: string } {
  const parsed = v.safeParse(tool.input, args ?? {});
  if (parsed.success) return { ok: true, value: parsed.output };
  const lines = [...new Set(parsed.issues.map((issue) => describeIssue(tool, issue)))];
  return { ok: false, message: lines.join("\n") };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function shapeOutput(tool: Tool, value: unknown): CallResult {
  if (tool.output) {
    const parsed = v.safeParse(tool.output, value);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      return errorResult(
        "invalid_output",
        problem(
          `Tool "${tool.name}" returned output that does not match its schema`,
          `${issuePath(issue) || "(root)"}: ${issue.message}`,
          "this is a bug in the tool",
        ),
      );
    }
    const structured = parsed.output as Record<string, unknown>;
    return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
  }
  if (typeof value === "string") return { content: [{ type: "text", text: value }] };
  return { content: [{ type: "text", text: value === undefined ? "" : JSON.stringify(value) }] };
}

/** Runs `tool` with `args`; always resolves, never throws. */
export async function runTool(tool: Tool, args: unknown, options: CallOptions): Promise<CallResult> {
  const validated = validateArguments(tool, args);
  if (!validated.ok) return errorResult("invalid_arguments", validated.message);

  const controller = new AbortController();
  // Promise.withResolvers is missing from node 20.
  let settle!: (result: CallResult) => void;
  const settled = new Promise<CallResult>((resolve) => (settle = resolve));
  const onClientAbort = () => {
    controller.abort(new WardenError("cancelled", `Tool "${tool.name}" was cancelled by the client`));
  };
  if (options.signal?.aborted) onClientAbort();
  options.signal?.addEventListener("abort", onClientAbort, { once: true });
  const timer = setTimeout(() => {
    controller.abort(
      new WardenError(
        "timeout",
        problem(
          `Tool "${tool.name}" timed out`,
          `no result after ${formatSeconds(options.timeoutMs)}`,
          "narrow the request or raise --call-timeout",
        ),
      ),
    );
  }, options.timeoutMs);
  controller.signal.addEventListener("abort", () => {
    const reason = controller.signal.reason as WardenError;
    settle(errorResult(reason.code, reason.message));
  }, { once: true });

  try {
    const ctx = createContext(tool.risk, { ...options, signal: controller.signal });
    const handler = tool.handler as (args: unknown, ctx: unknown) => unknown;
    Promise.resolve()
      .then(() => handler(validated.value, ctx))
      .then(
        (value) => settle(shapeOutput(tool, value)),
        (error: unknown) => {
          if (controller.signal.aborted) return;
          if (error instanceof WardenError) {
            settle(errorResult(error.code, error.message));
            return;
          }
          log("error", "tool_failed", { tool: tool.name, error: messageOf(error), stack: (error as Error)?.stack });
          settle(errorResult("tool_failed", problem(`Tool "${tool.name}" failed`, messageOf(error))));
        },
      );
    return await settled;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onClientAbort);
  }
}
