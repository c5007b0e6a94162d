// Runs one tool call: validates the arguments, builds the context, enforces
// the timeout and cancellation, and shapes the result. Every failure becomes
// a result with isError and a message that names the problem; nothing thrown
// by a tool reaches the protocol layer.
import { argumentsProblem, stoppedError, timeoutError } from "./messages.ts";
import { type CallResult, errorResult, shapeOutput } from "./result.ts";
import type { CatalogEntry } from "../catalog.ts";
import { type ContextParts, createContext, notesOf } from "../context.ts";
import { forgetDeadline, type PendingCall, stopWatched, watchDeadline } from "./deadlines.ts";
import { messageOf, problem, WardenError } from "../errors.ts";
import { log } from "../log.ts";
import { PROJECT_ARGUMENT, projectOfCall, readsProject } from "./projects.ts";

/** What the host supplies for one call besides the arguments. */
export interface CallOptions extends Omit<ContextParts, "signal" | "tool" | "deadline" | "principal"> {
  readonly timeoutMs: number;
  /** The client's cancellation, when it has one. */
  readonly signal?: AbortSignal;
  /** The job this call runs as (core/jobs), for its ledger rows. */
  readonly job?: string;
  /** The X-MCP-Project header of the HTTP request the call came in, when it has one. */
  readonly projectHeader?: string | null;
  /** The caller's policy (governed_call.ts): its principal is the core's own tools' to read (principalOf). */
  readonly policy?: { readonly principal: string | null };
}

function failure(tool: CatalogEntry, error: unknown): CallResult {
  const name = tool.descriptor.name;
  if (error instanceof WardenError) return errorResult(error.code, error.message, error.details);
  log("error", "tool_failed", { tool: name, error: messageOf(error), stack: (error as Error)?.stack });
  return errorResult("tool_failed", problem(`Tool "${name}" failed`, messageOf(error)));
}

/** Why calls are refused and running ones cancelled: the host is stopping (see stopCalls). */
let stoppedBecause: string | undefined;

/**
 * The host is stopping: every running call is cancelled now, answered with a
 * `cancelled` result that says `why`, and any call that starts later is refused the same way.
 */
export function stopCalls(why: string): void {
  stoppedBecause = why;
  stopWatched(why);
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
    return errorResult("invalid_arguments", argumentsProblem(tool, validated.issues));
  }
  if (options.signal?.aborted) {
    return errorResult("cancelled", `Tool "${name}" was cancelled by the client`);
  }
  if (stoppedBecause !== undefined) return errorResult("cancelled", stoppedError(name, stoppedBecause).message);
  let input = validated.value as Record<string, unknown>;
  if (readsProject(tool)) {
    let project: string;
    try {
      project = projectOfCall(options.fs.rootIds, input[PROJECT_ARGUMENT], options);
    } catch (error) {
      return failure(tool, error);
    }
    if (input[PROJECT_ARGUMENT] !== project) input = { ...input, [PROJECT_ARGUMENT]: project };
  }

  // The tool's signal is made on first use: an AbortController is a measurable
  // share of a trivial call, and most tools never look at their signal.
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
  let ctx: ReturnType<typeof createContext>;
  try {
    // The parts are named one by one: spreading `options` (which carries the
    // policy and ledger too) was a measurable share of a trivial call on node 20.
    const parts: ContextParts = {
      fs: options.fs,
      host: options.host,
      sendProgress: options.sendProgress,
      sendLog: options.sendLog,
      spawner: options.spawner,
      recordSignals: options.recordSignals,
      report: options.report,
      manifests: options.manifests,
      approval: options.approval,
      principal: options.policy?.principal ?? null,
      signal,
      tool: about,
      deadline,
    };
    ctx = createContext(tool.risk, parts);
    returned = tool.invoke(input, ctx);
  } catch (error) {
    return failure(tool, error);
  }
  // A synchronous handler is done: no timer, no listener, no promise race.
  if (typeof (returned as PromiseLike<unknown> | null)?.then !== "function") {
    return shapeOutput(tool, returned, notesOf(ctx));
  }

  return new Promise<CallResult>((resolve) => {
    let done = false;
    const finish = (result: CallResult) => {
      if (done) return;
      done = true;
      forgetDeadline(call);
      options.signal?.removeEventListener("abort", onClientAbort);
      resolve(result);
    };
    const abort = (reason: WardenError) => {
      if (done) return;
      abortReason = reason;
      controller?.abort(reason);
      finish(errorResult(reason.code, reason.message));
    };
    const onClientAbort = () => abort(new WardenError("cancelled", `Tool "${name}" was cancelled by the client`));
    const call: PendingCall = {
      deadline,
      expire: () => abort(timeoutError(name, options.timeoutMs)),
      stop: (why) => abort(stoppedError(name, why)),
    };
    watchDeadline(call);
    options.signal?.addEventListener("abort", onClientAbort, { once: true });
    try {
      (returned as PromiseLike<unknown>).then(
        (value) => finish(shapeOutput(tool, value, notesOf(ctx))),
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
