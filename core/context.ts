// Builds the context a tool receives, by risk class. The context is the only
// door a tool has to files, processes and the network; each class gets the
// capabilities core/capabilities.ts gives it and no others.
import { type Capability, classesWords, holds, ruleOf } from "./capabilities.ts";
import { problem, received, WardenError } from "./errors.ts";
import type { RootFs } from "./doors/roots.ts";
import type { OutputLog, Spawner, SpawnRequest, SpawnResult } from "./doors/spawn.ts";
import type { JobReport } from "./jobs/reports.ts";
import type { CheckManifestTrust, ManifestDoor } from "./doors/manifests.ts";
import { fetchFor, type FetchRequest, type FetchResult, writeFile } from "./doors/egress.ts";
import type {
  ApprovedRun,
  ClientLogLevel,
  ContextByRisk,
  ExternalContext,
  GateContext,
  HostFacts,
  RecordedSignals,
  RiskClass,
  SignalRecord,
  ToolCapabilities,
  ToolContext,
  WritableRootFs,
} from "./tool.ts";

/** What the host supplies for one call. */
export interface ContextParts {
  /** Made on first use (see call/run.ts). */
  readonly signal: () => AbortSignal;
  readonly fs: RootFs;
  readonly host: HostFacts;
  /** Present when the client sent a progress token. */
  readonly sendProgress?: (progress: number, total?: number, message?: string) => Promise<void>;
  readonly sendLog?: (level: ClientLogLevel, data: unknown) => void;
  /** The tool this context is for: its name, class and declared capabilities. */
  readonly tool: { readonly name: string; readonly risk: RiskClass; readonly capabilities: Required<ToolCapabilities> };
  /** When the call's time is up (ms since the epoch). */
  readonly deadline: number;
  /** Runs programs for gate tools; absent where the host offers none. */
  readonly spawner?: Spawner;
  /** Writes the call's signal rows to the ledger (core/governance/governed_call.ts); absent where there is none. */
  readonly recordSignals?: (signals: readonly SignalRecord[]) => Promise<RecordedSignals>;
  /** A job's run only: its report, whose logs take what programs print (ctx.spawn's `log`). */
  readonly report?: JobReport;
  /** Answers gate tools whether a repository's check manifest may run; absent where the host offers none. */
  readonly manifests?: ManifestDoor;
  /** The approved plan a submitted run runs as (core/governance/approval_tools.ts); absent for every other call. */
  readonly approval?: ApprovedRun;
  /** The caller's principal, for the core's own tools (principalOf); never on a tool's context. */
  readonly principal?: string | null;
}

/** A tool's file door: read, and write checked against its class and its declared roots. */
function fileDoor(parts: ContextParts): WritableRootFs {
  const { tool, fs } = parts;
  const refused = () => Promise.reject(denied("read", tool));
  const reads = holds(tool.risk, "read");
  return Object.freeze({
    rootIds: fs.rootIds,
    readText: reads ? fs.readText.bind(fs) : refused,
    readBytes: reads ? fs.readBytes.bind(fs) : refused,
    stat: reads ? fs.stat.bind(fs) : refused,
    stats: reads ? fs.stats.bind(fs) : refused,
    list: reads ? fs.list.bind(fs) : refused,
    glob: reads ? fs.glob.bind(fs) : refused,
    write: (root: string, file: string, data: string | Uint8Array) =>
      holds(tool.risk, "write")
        ? writeFile(`tool "${tool.name}"`, tool.capabilities.writeRoots, fs, root, file, data)
        : Promise.reject(denied("write", tool)),
  });
}

/** The error for a capability the tool's class does not hold: it names the door and the classes, and nothing happens. */
function denied(capability: Capability, tool: ContextParts["tool"]): WardenError {
  return new WardenError(
    "capability_denied",
    problem(
      `${ruleOf(capability).door} needs risk class ${classesWords(capability)}`,
      `tool "${tool.name}" is "${tool.risk}"`,
      "nothing was run",
    ),
  );
}

/**
 * The context a tool's handler receives: `ctx.fs` (reads under the roots),
 * `ctx.signal`, `ctx.progress`, `ctx.log` and `ctx.host` for every class, plus
 * what its class holds (core/capabilities.ts): `ctx.spawn` for gate,
 * `ctx.fs.write` and `ctx.fetch` for external-side-effect. Each is checked
 * again at use against what the tool declared in `capabilities`.
 *
 * @example A gate tool, saved as tools/git_head.ts: it runs the one program it declares
 * ```ts
 * import * as v from "valibot";
 * import { defineTool, projectIdInput } from "../core/tool.ts";
 *
 * export const tool = defineTool({
 *   name: "git_head",
 *   title: "Git HEAD",
 *   description: "Names the commit a project's git checkout is at.",
 *   risk: "gate",
 *   capabilities: { spawn: ["git"] },
 *   input: v.strictObject({ project_id: projectIdInput }),
 *   handler: async ({ project_id }, ctx) => {
 *     await ctx.progress(0, 1, "asking git");
 *     const git = await ctx.spawn(["git", "rev-parse", "HEAD"], { root: project_id });
 *     ctx.log("debug", { exitCode: git.exitCode, ms: git.durationMs });
 *     if (git.exitCode !== 0) throw new Error(`git rev-parse failed: ${git.stderr.trim()}`);
 *     return git.stdout.trim();
 *   },
 * });
 * ```
 *
 * Every class gets this one context; what its class lacks throws
 * `capability_denied` (so a tool that casts its way to a method learns why).
 * A class rather than an object of closures: one is made per call, and this
 * keeps a trivial call's overhead to a few allocations.
 */
class CallContext implements GateContext, ExternalContext {
  readonly #parts: ContextParts;
  #lastProgress = -Infinity;
  /** Made on first use: most calls of most tools never open it. */
  #fs: WritableRootFs | undefined;
  /** The result's notes (ctx.note), made on the first. */
  #notes: string[] | undefined;
  readonly host: HostFacts;

  constructor(parts: ContextParts) {
    this.#parts = parts;
    this.host = parts.host;
  }

  get fs(): WritableRootFs {
    return this.#fs ??= fileDoor(this.#parts);
  }

  fetch(url: string, request: FetchRequest = {}): Promise<FetchResult> {
    const { tool } = this.#parts;
    if (!holds(tool.risk, "fetch")) return Promise.reject(denied("fetch", tool));
    return fetchFor(`tool "${tool.name}"`, tool.capabilities.netHosts, url, request, this.signal);
  }

  get signal(): AbortSignal {
    return this.#parts.signal();
  }

  progress(progress: number, total?: number, message?: string): Promise<void> {
    const { sendProgress } = this.#parts;
    // The protocol requires strictly increasing progress; a stale value is not an error worth failing a call for.
    if (!sendProgress || !Number.isFinite(progress) || progress <= this.#lastProgress || this.signal.aborted) {
      return Promise.resolve();
    }
    this.#lastProgress = progress;
    return sendProgress(progress, total, message).catch(() => {});
  }

  log(level: ClientLogLevel, data: unknown): void {
    this.#parts.sendLog?.(level, data);
  }

  note(text: string): void {
    if (typeof text !== "string" || text === "") return;
    (this.#notes ??= []).push(text);
  }

  get approval(): ApprovedRun | null {
    return this.#parts.approval ?? null;
  }

  /** The caller's principal of `ctx` (see principalOf). */
  static principalOf(ctx: ToolContext): string | null {
    return ctx instanceof CallContext ? ctx.#parts.principal ?? null : null;
  }

  /** The notes of `ctx` (see notesOf). */
  static notesOf(ctx: ToolContext): readonly string[] {
    return (ctx instanceof CallContext ? ctx.#notes : undefined) ?? [];
  }

  recordSignals(signals: readonly SignalRecord[]): Promise<RecordedSignals> {
    const { tool, recordSignals } = this.#parts;
    if (tool.risk !== "gate") {
      return Promise.reject(
        new WardenError(
          "capability_denied",
          problem(
            'ctx.recordSignals needs risk class "gate"',
            `tool "${tool.name}" is "${tool.risk}"`,
            "nothing was recorded",
          ),
        ),
      );
    }
    // No ledger behind this context (a bench, a test): nothing could be written, and the tool's result says so.
    if (!recordSignals) return Promise.resolve({ written: 0, failed: signals.length });
    return recordSignals(signals);
  }

  spawn(argv: readonly string[], options: SpawnRequest = {}): Promise<SpawnResult> {
    const { tool, spawner, report } = this.#parts;
    if (!holds(tool.risk, "spawn")) return Promise.reject(denied("spawn", tool));
    if (!spawner) {
      return Promise.reject(new WardenError("capability_denied", `ctx.spawn is not available in this host`));
    }
    const name = options.log;
    if (name !== undefined && (typeof name !== "string" || !/^\P{Cc}{1,200}$/u.test(name))) {
      return Promise.reject(
        new WardenError(
          "capability_denied",
          problem(
            `Invalid log ${received(name)} for tool "${tool.name}"`,
            "a log is named by 1 to 200 characters without control characters, such as the check's name",
          ),
        ),
      );
    }
    // Outside a job there is no report: the program's output is what ctx.spawn returns, and nothing is written.
    const output: OutputLog | undefined = name === undefined ? undefined : report?.log(name);
    return spawner.spawn(
      `tool "${tool.name}"`,
      tool.capabilities.spawn,
      this.#parts.fs,
      argv,
      options,
      this.signal,
      this.#parts.deadline,
      output,
    );
  }

  checkManifest(root: string, manifest: Uint8Array, signature: Uint8Array | null): Promise<CheckManifestTrust> {
    const { tool, manifests } = this.#parts;
    // A check manifest says which programs ctx.spawn runs: only a class that spawns may ask about one.
    if (!holds(tool.risk, "spawn")) {
      return Promise.reject(
        new WardenError(
          "capability_denied",
          problem(
            `ctx.checkManifest needs risk class ${classesWords("spawn")}`,
            `tool "${tool.name}" is "${tool.risk}"`,
            "nothing was read",
          ),
        ),
      );
    }
    if (!manifests) {
      return Promise.reject(new WardenError("capability_denied", "ctx.checkManifest is not available in this host"));
    }
    return manifests.checkManifest(root, manifest, signature);
  }
}

/**
 * The context for a tool of class `risk`: one object for every class, typed as the class's context (what the class
 * lacks, the object refuses).
 */
export function createContext<R extends RiskClass>(_risk: R, parts: ContextParts): ContextByRisk[R] {
  return new CallContext(parts);
}

/**
 * Who called, for the core's own tools (the approval tools: who requests, who approves): the call's principal, or null.
 * Not a property of the context, so that no tool file or plugin learns it.
 */
export function principalOf(ctx: ToolContext): string | null {
  return CallContext.principalOf(ctx);
}

/** The notes a tool added to its result through `ctx.note`, in order. */
export function notesOf(ctx: ToolContext): readonly string[] {
  return CallContext.notesOf(ctx);
}
