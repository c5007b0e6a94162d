// The deployment policy: what the operator allows, and why a call is refused
// before it runs. Disabled tools stay in the catalog, so the catalog never
// depends on policy; calling one says why it is refused (governed_call.ts).
import type { Catalog, CatalogEntry } from "../catalog.ts";
import type { Config, PolicyEngineSettings } from "../config.ts";
import { type ErrorCode, problem, WardenError } from "../errors.ts";
import { RISK_CLASSES, type RiskClass } from "../tool.ts";

/** What the operator allows. */
export interface Policy {
  /** The highest class that may run at all. */
  readonly maxRisk: RiskClass;
  readonly disabled: ReadonlySet<string>;
  /** Tools that run only when the server was started with a principal. */
  readonly principalRequired: ReadonlySet<string>;
  /** Who operates this server, recorded with every call. */
  readonly principal: string | null;
  /** The operator's policy engine, asked after warden's own policy allows a call (policy_engine.ts). */
  readonly engine: PolicyEngineSettings | null;
}

/** The policy, with every tool it names checked against the catalog. */
export function policyOf(config: Config, catalog: Catalog): Policy {
  for (
    const [flag, names] of [["--disable-tool", config.disabledTools], [
      "--require-principal",
      config.principalTools,
    ]] as const
  ) {
    const unknown = names.find((name) => !catalog.tools.has(name));
    if (unknown) {
      throw new WardenError(
        "config_invalid",
        `Invalid ${flag}: no tool is named "${unknown}"; run "warden tools" for the names`,
      );
    }
  }
  return Object.freeze({
    maxRisk: config.maxRisk,
    disabled: new Set(config.disabledTools),
    principalRequired: new Set(config.principalTools),
    principal: config.principal,
    engine: config.policyEngine,
  });
}

/** Why a call is refused before it runs: its error code, its words, and what else its result says. */
export interface Refusal {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** Why a call is refused before it runs, or null. */
export function decide(policy: Policy, tool: CatalogEntry): Refusal | null {
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
