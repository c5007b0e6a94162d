// The one path every tools/call takes: decide, run (or refuse), record in the
// ledger. The row is written before the result returns, and a row that could
// not be written is reported in that result.
import { type CallOptions, runTool } from "../call/run.ts";
import { type CallResult, errorResult } from "../call/result.ts";
import type { CatalogEntry } from "../catalog.ts";
import { problem, WardenError } from "../errors.ts";
import type { RecordedSignals, SignalRecord } from "../tool.ts";
import { type Ledger, signalProblem } from "./ledger.ts";
import { decide, type Policy } from "./policy.ts";

function withLedgerWarning(result: CallResult, error: string): CallResult {
  return {
    ...result,
    content: [...result.content, { type: "text", text: `warning: ${error}` }],
    _meta: { ...result._meta, "warden/ledger": { written: false, error } },
  };
}

/**
 * Decides, runs and records one call. Its row is written before the result
 * returns; a `gate` or `external-side-effect` tool runs only once its intent
 * row is written, so a crash during it leaves a call that never finished.
 */
export function governedCall(
  tool: CatalogEntry,
  args: unknown,
  options: CallOptions & { readonly policy: Policy; readonly ledger: Ledger },
): Promise<CallResult> {
  const started = performance.now();
  const { ledger, policy } = options;
  const refusal = decide(policy, tool);
  const argsHash = ledger.argsHash(args);
  const plugin = tool.descriptor._meta["warden/plugin"] ?? null;
  let intent: number | null = null;
  /** Set once the call's row is queued: a signal after it (a tool still running past its timeout) is not recorded. */
  let ended = false;
  const record = (result: CallResult): Promise<CallResult> => {
    ended = true;
    return ledger.call({
      tool: tool.descriptor.name,
      risk: tool.risk,
      plugin,
      principal: policy.principal,
      argsHash,
      decision: refusal ? "denied" : "allowed",
      reason: refusal?.code ?? null,
      outcome: refusal ? "denied" : result.isError ? "error" : "ok",
      errorCode: result._meta?.["warden/error_code"] ?? null,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      intent,
    }).then((written) => written.ok ? result : withLedgerWarning(result, written.error));
  };
  const run = (recordSignals?: CallOptions["recordSignals"]): Promise<CallResult> => {
    const outcome = runTool(tool, args, recordSignals ? { ...options, recordSignals } : options);
    return outcome instanceof Promise ? outcome.then(record) : record(outcome);
  };
  if (refusal) return record(errorResult(refusal.code, refusal.message));
  if (tool.risk === "read") return run();
  // A gate call's signals (ctx.recordSignals): rows of their own, after its intent row and before its call row.
  const recordSignals = async (signals: readonly SignalRecord[]): Promise<RecordedSignals> => {
    for (const [i, signal] of signals.entries()) {
      const why = signalProblem(signal);
      if (why !== null) {
        throw new WardenError(
          "invalid_output",
          problem(
            `Tool "${tool.descriptor.name}" recorded a malformed signal`,
            `signals[${i}].${why}`,
            "nothing was recorded",
          ),
        );
      }
    }
    // Its row would follow the call's, which closed the intent it names: verify would read the chain as broken.
    if (ended) return { written: 0, failed: signals.length };
    const name = tool.descriptor.name;
    const job = options.job ?? null;
    const written = await ledger.signals(
      signals.map(({ source, where, rule, spanHash }) => ({ tool: name, job, intent, source, where, rule, spanHash })),
    );
    return written.ok ? { written: signals.length, failed: 0 } : { written: 0, failed: signals.length };
  };
  const declared = ledger.intent({
    tool: tool.descriptor.name,
    risk: tool.risk,
    plugin,
    principal: policy.principal,
    argsHash,
  });
  return declared.written.then((written) => {
    // A ledger that cannot be written never stops a call: its row fails too, and the result says so.
    if (written.ok) intent = declared.seq;
    return run(recordSignals);
  });
}
