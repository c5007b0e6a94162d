// The deployment policy, and the one path every tools/call takes: decide,
// run (or refuse), record in the ledger. Disabled tools stay in the catalog,
// so the catalog never depends on policy; calling one says why it is refused.
import { type CallOptions, type CallResult, errorResult, runTool } from "./call.ts";
import type { CatalogEntry } from "./catalog.ts";
import { type ErrorCode, problem } from "./errors.ts";
import type { Ledger } from "./ledger.ts";
import { RISK_CLASSES, type RiskClass } from "./tool.ts";

/** What the operator allows. */
export interface Policy {
  /** The highest class that may run at all. */
  readonly maxRisk: RiskClass;
  readonly disabled: ReadonlySet<string>;
  /** Tools that run only when the server was started with a principal. */
  readonly principalRequired: ReadonlySet<string>;
  /** Who operates this server, recorded with every call. */
  readonly principal: string | null;
}

/** Why a call is refused before it runs, or null. */
export function decide(policy: Policy, tool: CatalogEntry): { code: ErrorCode; message: string } | null {
  const name = tool.descriptor.name;
  if (RISK_CLASSES.indexOf(tool.risk) > RISK_CLASSES.indexOf(policy.maxRisk)) {
    return {
      code: "risk_class_disabled",
      message: problem(
        `Tool "${name}" is refused`,
        `its risk class "${tool.risk}" is above this deployment's --max-risk "${policy.maxRisk}"`,
        "nothing was run",
      ),
    };
  }
  if (policy.disabled.has(name)) {
    return {
      code: "policy_denied",
      message: problem(`Tool "${name}" is refused`, "this deployment disables it (--disable-tool)", "nothing was run"),
    };
  }
  if (policy.principalRequired.has(name) && policy.principal === null) {
    return {
      code: "policy_denied",
      message: problem(
        `Tool "${name}" is refused`,
        "it needs a principal and this server has none",
        "start warden with --principal <who>",
      ),
    };
  }
  return null;
}

/** Decides, runs and records one call. The ledger row is written before the result returns. */
export function governedCall(
  tool: CatalogEntry,
  args: unknown,
  options: CallOptions & { readonly policy: Policy; readonly ledger: Ledger },
): Promise<CallResult> {
  const started = performance.now();
  const refusal = decide(options.policy, tool);
  const record = (result: CallResult): CallResult => {
    const written = options.ledger.append({
      tool: tool.descriptor.name,
      risk: tool.risk,
      plugin: tool.descriptor._meta["warden/plugin"] ?? null,
      principal: options.policy.principal,
      args,
      decision: refusal ? "denied" : "allowed",
      reason: refusal?.code ?? null,
      outcome: refusal ? "denied" : result.isError ? "error" : "ok",
      errorCode: result._meta?.["warden/error_code"] ?? null,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    });
    if (written.ok) return result;
    return {
      ...result,
      content: [...result.content, { type: "text", text: `warning: ${written.error}` }],
      _meta: { ...result._meta, "warden/ledger": { written: false, error: written.error } },
    };
  };
  if (refusal) return Promise.resolve(record(errorResult(refusal.code, refusal.message, tool)));
  const outcome = runTool(tool, args, options);
  // No await for a synchronous tool: one promise, the one the protocol layer waits on.
  return outcome instanceof Promise ? outcome.then(record) : Promise.resolve(record(outcome));
}
