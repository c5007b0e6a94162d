// Runs one tool call: validates the arguments, builds the context, enforces
// the timeout and cancellation, and shapes the result. Every failure becomes
// a result with isError and a message that names the problem; nothing thrown
// by a tool reaches the protocol layer.
import type { CatalogEntry } from "./catalog.ts";
import { type ContextParts, createContext } from "./context.ts";
import { type ErrorCode, messageOf, problem, WardenError } from "./errors.ts";
import type { SchemaIssue } from "./json_schema.ts";
import { log } from "./log.ts";

/** A `tools/call` result, as MCP defines it. */
export interface CallResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: true;
  _meta?: { "warden/error_code"?: ErrorCode; "warden/ledger"?: { written: false; error: string } };
}

/** What the host supplies for one call besides the arguments. */
export interface CallOptions extends Omit<ContextParts, "signal" | "tool" | "deadline"> {
  readonly timeoutMs: number;
  /** The client's cancellation, when it has one. */
  readonly signal?: AbortSignal;
}

/**
 * An error result: the message as text and the code in `_meta`; also as
 * `structuredContent` when the tool declares no output schema (clients check
 * structuredContent against a declared schema even on errors, so a tool with
 * one gets its error as text and `_meta` only).
 */
export function errorResult(code: ErrorCode, message: string, tool?: CatalogEntry): CallResult {
  return {
    content: [{ type: "text", text: message }],
    ...(tool && !tool.validateOutput ? { structuredContent: { error_code: code, message } } : {}),
    isError: true,
    _meta: { "warden/error_code": code },
  };
}

function issuePath(path: readonly (string | number)[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : out === "" ? key : `.${key}`;
  return out;
}

/** The one sentence an agent reads for an argument problem. */
export function describeIssue(tool: CatalogEntry, issue: SchemaIssue): string {
  const where = issuePath(issue.path);
  if (where === "") {
    return problem("Invalid arguments", `expected an object of named arguments, received ${issue.received}`);
  }
  if (issue.kind === "unknown-key") {
    // The keys of the object the unknown one sits in, read from the published schema.
    type Node = { properties?: Record<string, Node>; items?: Node; anyOf?: Node[] };
    let node: Node | undefined = tool.descriptor.inputSchema as Node;
    for (const key of issue.path.slice(0, -1)) {
      node = typeof key === "number"
        ? node?.items
        : node?.properties?.[key] ?? node?.anyOf?.find((n) => n.properties)?.properties?.[key];
    }
    const accepted = Object.keys(node?.properties ?? {});
    const parent = issue.path.length > 1 ? ` in "${issuePath(issue.path.slice(0, -1))}"` : "";
    return problem(
      `Unknown argument "${where}"`,
      `${tool.descriptor.name} does not take it`,
      accepted.length ? `it accepts ${accepted.join(", ")}${parent}` : `it takes no arguments${parent}`,
    );
  }
  if (issue.kind === "missing") return problem(`Missing argument "${where}"`, `expected ${issue.expected}`);
  return problem(`Invalid argument "${where}"`, `expected ${issue.expected} but received ${issue.received}`);
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** Results shaped from structured output, with the JSON text of that output (their text content). */
const structuredTexts = new WeakMap<CallResult, string>();

/**
 * The JSON text of a result shaped from structured output, made from the text it holds already: a large answer is
 * serialized once, not twice. undefined for any other result (then serialize it as usual).
 */
export function resultJson(result: CallResult): string | undefined {
  const text = structuredTexts.get(result);
  if (text === undefined) return undefined;
  return `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`;
}

/** The result of what a tool returned; never throws, so that every call is answered. */
function shapeOutput(tool: CatalogEntry, value: unknown): CallResult {
  try {
    return shapeValue(tool, value);
  } catch (error) {
    // JSON.stringify throws on a BigInt or a cycle, and a validator may on a hostile value.
    return errorResult(
      "invalid_output",
      problem(
        `Tool "${tool.descriptor.name}" returned output that cannot be sent as JSON`,
        messageOf(error),
        "this is a bug in the tool",
      ),
      tool,
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
    structuredTexts.set(result, text);
    return result;
  }
  if (typeof value === "string") return { content: [{ type: "text", text: value }] };
  return { content: [{ type: "text", text: value === undefined ? "" : JSON.stringify(value) }] };
}

/** A running call the deadline sweep, or the host stopping, may abort. */
interface Pending {
  readonly deadline: number;
  readonly expire: () => void;
  readonly stop: (why: string) => void;
}

/**
 * Every running call's deadline, checked by one timer armed for the earliest.
 * A timer per call cost deno ~3 µs of a ~8 µs call; here a call that ends
 * before the earliest deadline touches no timer at all.
 */
const pending = new Set<Pending>();
let armedFor = Infinity;
let armed: ReturnType<typeof setTimeout> | undefined;

function sweep(): void {
  armed = undefined;
  armedFor = Infinity;
  const now = Date.now();
  for (const call of pending) {
    if (call.deadline <= now) {
      pending.delete(call);
      call.expire();
    }
  }
  let next = Infinity;
  for (const call of pending) next = Math.min(next, call.deadline);
  if (next !== Infinity) arm(next);
}

function arm(deadline: number): void {
  if (deadline >= armedFor) return;
  if (armed !== undefined) clearTimeout(armed);
  armedFor = deadline;
  armed = setTimeout(sweep, Math.max(0, deadline - Date.now()));
  // A pending deadline must not keep the process alive on its own.
  (armed as { unref?: () => void }).unref?.();
}

/** Why calls are refused and running ones cancelled: the host is stopping (see stopCalls). */
let stoppedBecause: string | undefined;

/**
 * The host is stopping: every running call is cancelled now, answered with a
 * `cancelled` result that says `why`, and any call that starts later is refused the same way.
 */
export function stopCalls(why: string): void {
  stoppedBecause = why;
  for (const call of [...pending]) call.stop(why);
}

function stoppedError(name: string, why: string): WardenError {
  return new WardenError("cancelled", problem(`Tool "${name}" was cancelled`, why));
}

function timeoutError(name: string, ms: number): WardenError {
  return new WardenError(
    "timeout",
    problem(
      `Tool "${name}" timed out`,
      `no result after ${formatSeconds(ms)}`,
      "narrow the request or raise --call-timeout",
    ),
  );
}

function failure(tool: CatalogEntry, error: unknown): CallResult {
  const name = tool.descriptor.name;
  if (error instanceof WardenError) return errorResult(error.code, error.message, tool);
  log("error", "tool_failed", { tool: name, error: messageOf(error), stack: (error as Error)?.stack });
  return errorResult("tool_failed", problem(`Tool "${name}" failed`, messageOf(error)), tool);
}

/**
 * Runs `tool` with `args`; never throws, and a promise never rejects. A call
 * refused before it runs, or a synchronous handler, gives its result as is:
 * the caller's own await is the only promise on that path.
 */
export function runTool(tool: CatalogEntry, args: unknown, options: CallOptions): CallResult | Promise<CallResult> {
  const name = tool.descriptor.name;
  const validated = tool.validateInput(args ?? {});
  if (!validated.ok) {
    const lines = [...new Set(validated.issues.map((issue) => describeIssue(tool, issue)))];
    return errorResult("invalid_arguments", lines.join("\n"), tool);
  }
  if (options.signal?.aborted) {
    return errorResult("cancelled", `Tool "${name}" was cancelled by the client`, tool);
  }
  if (stoppedBecause !== undefined) return errorResult("cancelled", stoppedError(name, stoppedBecause).message, tool);

  // The tool's signal is made on first use: an AbortController costs node
  // about 7% of a trivial call, and most tools never look at their signal.
  let abortReason: WardenError | undefined;
  let controller: AbortController | undefined;
  const signal = () => {
    if (!controller) {
      controller = new AbortController();
      if (abortReason) controller.abort(abortReason);
    }
    return controller.signal;
  };

  const deadline = Date.now() + options.timeoutMs;
  const about = { name, risk: tool.risk, capabilities: tool.capabilities };
  let returned: unknown;
  try {
    // The parts are named one by one: spreading `options` (which carries the
    // policy and ledger too) cost node 20 about 4 µs a call.
    const parts: ContextParts = {
      fs: options.fs,
      host: options.host,
      sendProgress: options.sendProgress,
      sendLog: options.sendLog,
      spawner: options.spawner,
      signal,
      tool: about,
      deadline,
    };
    returned = tool.invoke(validated.value, createContext(tool.risk, parts));
  } catch (error) {
    return failure(tool, error);
  }
  // A synchronous handler is done: no timer, no listener, no promise race.
  if (typeof (returned as PromiseLike<unknown> | null)?.then !== "function") {
    return shapeOutput(tool, returned);
  }

  return new Promise<CallResult>((resolve) => {
    let done = false;
    const finish = (result: CallResult) => {
      if (done) return;
      done = true;
      pending.delete(call);
      options.signal?.removeEventListener("abort", onClientAbort);
      resolve(result);
    };
    const abort = (reason: WardenError) => {
      if (done) return;
      abortReason = reason;
      controller?.abort(reason);
      finish(errorResult(reason.code, reason.message, tool));
    };
    const onClientAbort = () => abort(new WardenError("cancelled", `Tool "${name}" was cancelled by the client`));
    const call: Pending = {
      deadline,
      expire: () => abort(timeoutError(name, options.timeoutMs)),
      stop: (why) => abort(stoppedError(name, why)),
    };
    pending.add(call);
    arm(call.deadline);
    options.signal?.addEventListener("abort", onClientAbort, { once: true });
    try {
      (returned as PromiseLike<unknown>).then(
        (value) => finish(shapeOutput(tool, value)),
        (error: unknown) => {
          if (!done) finish(failure(tool, error));
        },
      );
    } catch (error) {
      // A thenable whose then() throws: the call ends here, with the error.
      finish(failure(tool, error));
    }
  });
}
