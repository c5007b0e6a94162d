// The tool API: one object of one shape per tool. The core knows nothing else
// about a tool than what this file describes.
import * as v from "valibot";
import type { RootFs } from "./doors/roots.ts";
import type { SpawnIsolation, SpawnRequest, SpawnResult } from "./doors/spawn.ts";
import type { FetchRequest, FetchResult, WriteResult } from "./doors/egress.ts";
import type { Confinement } from "./platform/confinement.ts";
import type { CheckManifestTrust } from "./doors/manifest_status.ts";
import type { Plan, PlanState } from "./governance/approvals.ts";

/**
 * What a tool may touch. Which capabilities each class holds is the table in core/capabilities.ts; the classes are not
 * nested (gate's spawn is not external-side-effect's), and the context types below follow the table.
 */
export type RiskClass = "read" | "gate" | "external-side-effect";

export const RISK_CLASSES: readonly RiskClass[] = Object.freeze(["read", "gate", "external-side-effect"]);

/** Tool names every MCP client accepts; the file name must equal the name. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** Levels of `notifications/message` and `logging/setLevel`, as RFC 5424 and MCP name them, least severe first. */
export const CLIENT_LOG_LEVELS = Object.freeze(
  ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const,
);

/** One of CLIENT_LOG_LEVELS. */
export type ClientLogLevel = (typeof CLIENT_LOG_LEVELS)[number];

/** Every status a plugin directory can have; only `verified` loads. */
export type PluginStatus =
  | "verified"
  | "unsigned"
  | "bad-signature"
  | "unknown-signer"
  | "revoked"
  | "key-expired"
  | "wrong-namespace"
  | "entry-digest-mismatch"
  | "not-canonical"
  | "invalid-manifest"
  | "not-pinned"
  | "pin-mismatch"
  | "name-conflict"
  | "duplicate-id"
  | "project-not-accepted"
  | "deno-missing";

/** What the audit shows for one plugin directory. No host paths. */
export interface PluginRecord {
  readonly id: string;
  /** Whose plugin it is: the user's (their plugins directory) or the project's (its `.warden/plugins/`). */
  readonly scope: "user" | "project";
  readonly status: PluginStatus;
  /** Why, when not verified; what the operator can do about it. */
  readonly reason: string | null;
  readonly fix: string | null;
  readonly version: string | null;
  readonly manifestDigest: string | null;
  readonly entryDigest: string | null;
  readonly signer: { readonly principal: string | null; readonly fingerprint: string } | null;
  readonly pinned: boolean;
  readonly risk: RiskClass | null;
  readonly capabilities: PluginCapabilities | null;
  /** Catalog names of its tools. */
  readonly tools: readonly string[];
  readonly isolation: string;
}

/** The capabilities a plugin's manifest declares, as core/plugins/manifest.ts reads them (its `capabilities`). */
export interface PluginCapabilities {
  readonly readRoots: string[];
  readonly argv?: string[];
  readonly writeRoots?: string[];
  readonly netHosts?: string[];
}

/** Facts about the running host, safe to show: no paths, no environment. */
export interface HostFacts {
  readonly name: string;
  readonly version: string;
  readonly runtime: { readonly name: string; readonly version: string };
  readonly transport: "stdio" | "http" | "cli";
  /** The protocol version agreed at initialize; null outside an MCP session. */
  readonly protocolVersion: string | null;
  readonly catalogDigest: string;
  readonly toolsByRisk: Readonly<Record<RiskClass, number>>;
  readonly rootIds: readonly string[];
  /** Whether a call that names no project fails when several are registered (--strict-project-selection). */
  readonly strictProjectSelection: boolean;
  /** This server process, as a random id made at its start: tells one replica or restart from another. */
  readonly instanceId: string;
  /** The X-MCP-Project header of the HTTP request being answered; null on stdio, in the shell, or without it. */
  readonly projectHeader: string | null;
  /**
   * Those of `ids` the caller may see, as the operator's policy engine decides (`--policy-url`, action
   * `projects/list`); absent where there is no engine: every one.
   */
  readonly visibleProjects?: (ids: readonly string[]) => Promise<readonly string[]>;
  /** Every plugin directory and what the host decided about it, sorted by id. */
  readonly extensions: readonly PluginRecord[];
  /** Programs gate tools declared, and whether each was found at startup. */
  readonly programs: Readonly<Record<string, boolean>>;
  /** What confines spawned programs here (probed once, on first ask). */
  gateIsolation(): Promise<SpawnIsolation>;
  /**
   * Checks the operator allows to run without isolation where none is in force (`--allow-unisolated`), by name
   * (`typescript/tsc`, `repo/<id>`): a gate tool runs them there, and says so, instead of refusing them.
   */
  readonly allowUnisolated: readonly string[];
  /** The run_checks groups the operator runs only as approved plans (`--require-approval`). */
  readonly requireApproval: readonly string[];
  /** Whether the runtime itself holds this process to what it needs (see core/confinement.ts). */
  readonly confinement: Confinement;
  /**
   * Each path setting by flag: where it came from (the flag, the variable, or the default: `project`, `user config`,
   * `user state`) and, for a default, its file named by its base (`<user config>/plugins`, `<root default>/.warden`);
   * null for a path a setting gave, which would be a host path.
   */
  readonly settings: Readonly<Record<string, { readonly file: string | null; readonly from: string }>>;
}

/** What every tool gets, whatever its class. */
export interface BaseContext {
  /** Aborted when the client cancels the call or the call times out. */
  readonly signal: AbortSignal;
  /**
   * Reports progress when the client asked for it (a no-op otherwise).
   * Values that do not increase are dropped, as the protocol requires.
   */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /** Sends a `notifications/message` to the client, subject to its log level. */
  log(level: ClientLogLevel, data: unknown): void;
  /**
   * Adds a text block to the call's result, after its JSON (or text) block, which stays as it is: words for the
   * model beside the data, such as a warning that parts of the data came from a repository. Only a result the tool
   * returns carries its notes; an error result does not.
   */
  note(text: string): void;
  readonly host: HostFacts;
}

/**
 * A signal of text shaped like instructions in what a tool read or returns, as the ledger records it: where it was,
 * the detector's rule and a hash of the span, never the text itself.
 */
export interface SignalRecord {
  /** `input`: the call's arguments; `output`: what the tool returns. */
  readonly source: "input" | "output";
  /** Where in them, as the tool's result names it (`file[1]`, `findings[3].message`); at most 200 characters. */
  readonly where: string;
  /** The detector's rule id: lower-case words joined by `-`. */
  readonly rule: string;
  /** The first 16 hex digits of the SHA-256 of the span. */
  readonly spanHash: string;
}

/** What became of the signals a tool recorded: rows written, and rows the ledger could not take. */
export interface RecordedSignals {
  readonly written: number;
  readonly failed: number;
}

/** `read`: files under the configured roots, nothing else. */
export interface ReadContext extends BaseContext {
  readonly fs: RootFs;
}

/** `gate`: read, plus the programs on the tool's allowlist, confined (see core/doors/spawn.ts). */
export interface GateContext extends ReadContext {
  spawn(argv: readonly string[], options?: SpawnRequest): Promise<SpawnResult>;
  /**
   * Records signals of untrusted text in the call ledger, one hash-chained row each (the call's tool, its job when it
   * runs as one, and its intent row): the rows are written by the host, which a tool never writes to. Never rejects
   * for a ledger that cannot be written: those rows count as failed. Rejects a malformed signal (a bug in the tool).
   */
  recordSignals(signals: readonly SignalRecord[]): Promise<RecordedSignals>;
  /**
   * Whether a check manifest read from root `root` (its bytes, and its signature's, or null when it has none) may
   * run: signed by a key the operator's allowed_signers allows for namespace `warden-checks`, and pinned for that root
   * in the lock file (`warden checks trust <root>`). The trust store and the lock are outside every root: this is the
   * only way a tool learns what they say. Answers why not, with the fix, when it may not.
   */
  checkManifest(root: string, manifest: Uint8Array, signature: Uint8Array | null): Promise<CheckManifestTrust>;
  /**
   * The approved plan this run was submitted as (checks_submit), or null for every other call: a run that needs
   * approval runs only as one, and only while the repository is what its plan says (core/governance/approvals.ts).
   */
  readonly approval: ApprovedRun | null;
}

/** A run submitted as an approved plan: the request, its digest and the plan. */
export interface ApprovedRun {
  readonly requestId: string;
  readonly planDigest: string;
  readonly plan: Plan;
}

/** The file door of an external-side-effect tool: read, and write under its declared roots. */
export interface WritableRootFs extends RootFs {
  write(root: string, file: string, data: string | Uint8Array): Promise<WriteResult>;
}

/** `external-side-effect`: read, plus writes under declared roots and fetches to declared origins. */
export interface ExternalContext extends ReadContext {
  readonly fs: WritableRootFs;
  fetch(url: string, request?: FetchRequest): Promise<FetchResult>;
}

/** The context each class receives. */
export interface ContextByRisk {
  read: ReadContext;
  gate: GateContext;
  "external-side-effect": ExternalContext;
}

/**
 * What a tool may reach beyond reading roots, declared in its file and
 * published nowhere but checked at every use: `spawn` names programs,
 * `writeRoots` roots and `netHosts` origins. The loader refuses a key whose
 * capability the tool's class does not hold (core/capabilities.ts).
 */
export interface ToolCapabilities {
  readonly spawn?: readonly string[];
  readonly writeRoots?: readonly string[];
  readonly netHosts?: readonly string[];
}

/** Any tool context. */
export type ToolContext = ContextByRisk[RiskClass];

/** The input schema shape warden accepts: a strict object, so unknown keys are refused. */
export type InputSchema = v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>;

/** An output schema: any object schema, its JSON Schema is published as `outputSchema`. */
export type OutputSchema =
  | v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>
  | v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>;

/** What a handler may return: text, or a JSON value rendered as text. */
export type ToolReturn<O extends OutputSchema | undefined> = O extends OutputSchema ? v.InferInput<O>
  : unknown;

/**
 * The `project_id` argument of a tool that reads a project's tree (a root, by its id). Taking it is how a tool says
 * it reads one: the host settles the call's project before the tool runs (core/call/projects.ts), from this argument,
 * the HTTP request's X-MCP-Project header or the default, so the handler always gets an id that exists.
 */
export const projectIdInput = v.optional(
  v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(256),
    v.description(
      "Project (root) id to read; host_context lists them. Default: over HTTP the X-MCP-Project header, else the first root (with --strict-project-selection and several roots, name one).",
    ),
  ),
);

/** A handler's arguments: as validated, with `project_id` settled by the host when the tool takes one. */
export type HandlerArgs<I extends InputSchema> = "project_id" extends keyof v.InferOutput<I>
  ? Omit<v.InferOutput<I>, "project_id"> & { readonly project_id: string }
  : v.InferOutput<I>;

/** Everything a tool file declares. */
export interface ToolSpec<R extends RiskClass, I extends InputSchema, O extends OutputSchema | undefined> {
  /** `^[a-z][a-z0-9_]{0,63}$`, equal to the file name. */
  readonly name: string;
  readonly title: string;
  /** First sentence is the one-line summary shown by `warden tools`. */
  readonly description: string;
  readonly risk: R;
  readonly input: I;
  readonly output?: O;
  readonly capabilities?: ToolCapabilities;
  /**
   * Also served as a job (core/jobs/tools.ts): `<name>_start` queues a call and answers at once, `<name>_result`
   * answers for it, across restarts. For tools that take longer than an agent should wait on one call.
   */
  readonly job?: boolean;
  /**
   * For a job tool: what a run would refuse before it starts work (a root, a repository's manifest, a ref), asked by
   * `<name>_start` (and a task's start) with its own context, so that such a request is an error at start, never a job
   * that fails later. Throws a WardenError to refuse.
   */
  readonly precheck?: (args: HandlerArgs<I>, ctx: ContextByRisk[R]) => Promise<void>;
  /**
   * For the job tool whose runs may need approval (run_checks, core/governance/approval_tools.ts): what a run with
   * `args` depends on in its project's repository now. checks_request binds a plan to it, every later step reads it
   * again, and a plan whose state moved is stale.
   */
  readonly planState?: (args: HandlerArgs<I>, ctx: ContextByRisk[R]) => Promise<PlanState>;
  readonly handler: (args: HandlerArgs<I>, ctx: ContextByRisk[R]) => Promise<ToolReturn<O>> | ToolReturn<O>;
}

const TOOL_BRAND: unique symbol = Symbol.for("warden.tool");

/** A tool as the loader sees it: the spec, branded by `defineTool`. */
export interface Tool {
  readonly [TOOL_BRAND]: true;
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly risk: RiskClass;
  readonly input: InputSchema;
  readonly output?: OutputSchema;
  readonly capabilities?: ToolCapabilities;
  readonly job?: boolean;
  readonly precheck?: (args: never, ctx: never) => Promise<void>;
  readonly planState?: (args: never, ctx: never) => Promise<PlanState>;
  // The handler's argument types are erased here; the host validates
  // arguments against `input` before it calls, which restores them.
  readonly handler: (args: never, ctx: never) => unknown;
}

/**
 * Declares a tool: the only export a tool file needs. The handler gets the
 * arguments validated against `input`, and the context of its `risk` class
 * (see core/context.ts); with `output`, it returns that object.
 *
 * @example A read tool, saved as tools/line_count.ts (the file is named after the tool)
 * ```ts
 * import * as v from "valibot";
 * import { defineTool, projectIdInput } from "../core/tool.ts";
 *
 * export const tool = defineTool({
 *   name: "line_count",
 *   title: "Line count",
 *   description: "Counts the lines of one file of a project.",
 *   risk: "read",
 *   input: v.strictObject({ path: v.string(), project_id: projectIdInput }),
 *   output: v.object({ path: v.string(), lines: v.number() }),
 *   handler: async ({ path, project_id }, ctx) => {
 *     const text = await ctx.fs.readText(project_id, path);
 *     return { path, lines: text === "" ? 0 : text.split("\n").length };
 *   },
 * });
 * ```
 */
export function defineTool<R extends RiskClass, I extends InputSchema, O extends OutputSchema | undefined = undefined>(
  spec: ToolSpec<R, I, O>,
): Tool {
  return Object.freeze({ ...spec, [TOOL_BRAND]: true as const }) as unknown as Tool;
}

/** True for values made by `defineTool`, even from another copy of this module. */
export function isTool(value: unknown): value is Tool {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[TOOL_BRAND] === true;
}
