// The one path every tools/call takes: decide, run (or refuse), record in the
// ledger. The row is written before the result returns, and a row that could
// not be written is reported in that result.
import { type CallOptions, runTool } from "../call/run.ts";
import { type CallResult, errorResult } from "../call/result.ts";
import type { CatalogEntry } from "../catalog.ts";
import { problem, WardenError } from "../errors.ts";
import type { HostFacts, RecordedSignals, SignalRecord } from "../tool.ts";
import { type Ledger, signalProblem } from "./ledger.ts";
import { decide, type Policy, type Refusal } from "./policy.ts";
import { askPolicy, type PolicyDecision } from "./policy_engine.ts";
import { PROJECT_ARGUMENT, projectOfCall, readsProject } from "../call/projects.ts";

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
  options: GovernedCallOptions,
): Promise<CallResult> {
  const started = performance.now();
  const { ledger, policy } = options;
  const refusal = decide(policy, tool);
  const argsHash = ledger.argsHash(args);
  const plugin = tool.descriptor._meta["warden/plugin"] ?? null;
  const engine = policy.engine;
  if (refusal !== null || engine === null) return governed(tool, args, options, started, argsHash, refusal);
  // What warden's own policy allows, the operator's engine decides; its decision is a row before the call's.
  const projectId = projectOf(tool, args, options);
  return askPolicy(engine, {
    action: "tools/call",
    tool: tool.descriptor.name,
    risk: tool.risk,
    plugin: plugin ? { id: plugin.id, manifest_digest: plugin.manifestDigest } : null,
    principal: policy.principal,
    project_id: projectId,
    args_sha256: argsHash,
    transport: options.host.transport,
  }).then((decision) => {
    void ledger.decision({
      tool: tool.descriptor.name,
      principal: policy.principal,
      projectId,
      argsHash,
      allow: decision.allow,
      reasons: decision.reasons,
      failure: decision.failure,
      policyMs: decision.latencyMs,
    });
    if (!decision.allow) return governed(tool, args, options, started, argsHash, engineRefusal(tool, decision));
    // The project the engine allowed is the one the tool reads, whatever the roots become meanwhile (--client-roots).
    const decided = projectId === null ? args : { ...(args as Record<string, unknown>), [PROJECT_ARGUMENT]: projectId };
    // The projects the tool may show (host_context lists them) are those the engine shows this principal.
    const visibleProjects = async (ids: readonly string[]) => {
      const shown: string[] = [];
      // A few at a time: a question waiting for a connection would spend its --policy-timeout waiting.
      for (let i = 0; i < ids.length; i += PROJECT_QUESTIONS_AT_ONCE) {
        const batch = ids.slice(i, i + PROJECT_QUESTIONS_AT_ONCE);
        const decisions = await Promise.all(batch.map((id) =>
          askPolicy(engine, {
            action: "projects/list",
            tool: null,
            risk: null,
            plugin: null,
            principal: policy.principal,
            project_id: id,
            args_sha256: null,
            transport: options.host.transport,
          })
        ));
        shown.push(...batch.filter((_, j) => decisions[j].allow));
      }
      return shown;
    };
    const host = withVisibleProjects(options.host, visibleProjects);
    return governed(tool, decided, { ...options, host }, started, argsHash, null);
  });
}

/** `host` with `visibleProjects`, its getters kept (the protocol version and digest are read when asked). */
function withVisibleProjects(host: HostFacts, visibleProjects: HostFacts["visibleProjects"]): HostFacts {
  return Object.freeze(Object.create(host, { visibleProjects: { value: visibleProjects, enumerable: true } }));
}

type GovernedCallOptions = CallOptions & { readonly policy: Policy; readonly ledger: Ledger };

/** How many projects/list questions are in flight at once for host_context. */
const PROJECT_QUESTIONS_AT_ONCE = 8;

/** The project a call reads, as runTool will settle it; null for a tool that reads none or a call it will refuse. */
function projectOf(tool: CatalogEntry, args: unknown, options: GovernedCallOptions): string | null {
  if (!readsProject(tool)) return null;
  try {
    return projectOfCall(
      options.fs.rootIds,
      (args as Record<string, unknown> | undefined)?.[PROJECT_ARGUMENT],
      options,
    );
  } catch {
    return null;
  }
}

/** The refusal of a call the engine denied, with the policy's reasons; or, when it did not decide, why. */
function engineRefusal(tool: CatalogEntry, decision: PolicyDecision): Refusal {
  const name = tool.descriptor.name;
  if (decision.failure !== null) {
    return {
      code: "policy_unavailable",
      message: problem(
        `Tool "${name}" is refused`,
        `${decision.failure}, and without a decision every call is denied`,
        "nothing was run; retry later, or ask the operator to check the policy engine",
      ),
    };
  }
  return {
    code: "policy_denied",
    message: problem(
      `Tool "${name}" is refused by the operator's policy`,
      decision.reasons.length > 0 ? decision.reasons.join("; ") : "it gave no reason",
      "nothing was run",
    ),
    details: { reasons: decision.reasons },
  };
}

/** Runs (or refuses) and records one call whose decision is made. */
function governed(
  tool: CatalogEntry,
  args: unknown,
  options: GovernedCallOptions,
  started: number,
  argsHash: string,
  refusal: Refusal | null,
): Promise<CallResult> {
  const { ledger, policy } = options;
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
  if (refusal) return record(errorResult(refusal.code, refusal.message, refusal.details));
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
