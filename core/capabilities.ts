// Which risk class holds which capability: the one table the loader, the
// plugin manifest check, the context and the catalog's annotations read.
// Holding one is a class's right; a tool still names what it reaches
// (programs, write roots, origins) and every use is checked against that.
import { RISK_CLASSES, type RiskClass, type ToolCapabilities } from "./tool.ts";

/** What a tool can reach, by the door its context opens for it. */
export type Capability = "read" | "spawn" | "write" | "fetch";

/** One row of the table. */
export interface CapabilityRule {
  /** The risk classes that hold it; a context of any other class refuses it. */
  readonly classes: readonly RiskClass[];
  /** The context member a tool reaches it through, as refusals name it. */
  readonly door: string;
  /** Where a built-in tool names what it reaches (`capabilities.<key>` of defineTool); reading names nothing. */
  readonly toolKey?: keyof ToolCapabilities;
  /**
   * Where a plugin manifest names it (`capabilities.<key>`). The signed manifest format calls spawn's list `argv`,
   * and a signed field cannot be renamed, so this is the one place that knows.
   */
  readonly manifestKey: "readRoots" | "argv" | "writeRoots" | "netHosts";
  /**
   * It may change something that outlives the call: a tool holding it is neither read-only nor idempotent, and may
   * overwrite. A spawned program does not count: it runs with a scratch directory that is removed afterwards and,
   * under bubblewrap, a read-only file system (see core/doors/spawn.ts).
   */
  readonly changesState: boolean;
  /** It reaches past the configured roots, to a world the operator does not hold (the network). */
  readonly openWorld: boolean;
}

/**
 * The table. Adding a capability to a class changes that class's annotations (and so the golden catalog); the context
 * types of core/tool.ts are checked against it (core/capabilities.test.ts), so they must follow.
 */
export const CAPABILITIES = deepFreeze(
  {
    read: {
      classes: ["read", "gate", "external-side-effect"],
      door: "ctx.fs",
      manifestKey: "readRoots",
      changesState: false,
      openWorld: false,
    },
    spawn: {
      classes: ["gate"],
      door: "ctx.spawn",
      toolKey: "spawn",
      manifestKey: "argv",
      changesState: false,
      openWorld: false,
    },
    write: {
      classes: ["external-side-effect"],
      door: "ctx.fs.write",
      toolKey: "writeRoots",
      manifestKey: "writeRoots",
      changesState: true,
      openWorld: false,
    },
    fetch: {
      classes: ["external-side-effect"],
      door: "ctx.fetch",
      toolKey: "netHosts",
      manifestKey: "netHosts",
      changesState: true,
      openWorld: true,
    },
  } as const satisfies Record<Capability, CapabilityRule>,
);

/** Every capability, in the table's order (the order problems are reported in). */
export const CAPABILITY_NAMES: readonly Capability[] = Object.freeze(Object.keys(CAPABILITIES) as Capability[]);

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** The row of `capability`, in the wider type every row shares. */
export function ruleOf(capability: Capability): CapabilityRule {
  return CAPABILITIES[capability];
}

/** True when a tool of class `risk` may hold `capability`. */
export function holds(risk: RiskClass, capability: Capability): boolean {
  return ruleOf(capability).classes.includes(risk);
}

/** The capabilities of class `risk`, in the table's order. */
export function capabilitiesOf(risk: RiskClass): Capability[] {
  return CAPABILITY_NAMES.filter((capability) => holds(risk, capability));
}

/** The classes that hold `capability`, as a message names them: `"gate"`, or `"gate" or "external-side-effect"`. */
export function classesWords(capability: Capability): string {
  return ruleOf(capability).classes.map((risk) => `"${risk}"`).join(" or ");
}

/** The MCP annotation hints a risk class earns (the catalog adds the title). */
export interface RiskHints {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/** The hints of class `risk`, derived from what it holds: nothing it holds changes state, or reaches the world. */
export function hintsOf(risk: RiskClass): RiskHints {
  const held = capabilitiesOf(risk).map(ruleOf);
  const changesState = held.some((rule) => rule.changesState);
  return {
    readOnlyHint: !changesState,
    destructiveHint: changesState,
    idempotentHint: !changesState,
    openWorldHint: held.some((rule) => rule.openWorld),
  };
}

/** Each class's hints, computed once. */
export const HINTS: Readonly<Record<RiskClass, RiskHints>> = Object.freeze(
  Object.fromEntries(RISK_CLASSES.map((risk) => [risk, Object.freeze(hintsOf(risk))])) as Record<RiskClass, RiskHints>,
);
