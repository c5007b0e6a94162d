// The host side of the plugin sandbox. Each plugin runs in a Deno child
// process of its own with no permissions at all, an environment of its own,
// its own process group, and the verified bundle bytes imported from memory;
// see child.ts for the other end. Every capability the plugin has is a host
// request answered by the host: file access through the RootFs the host hands
// in (already confined to the plugin's roots); spawn, fetch and write through
// the host context of the call, which checks the plugin's class and manifest
// declarations; progress and log through the call's context. Nothing the child
// writes is trusted: a line that is not a well-formed message, too much
// output, an exit or a call that ignores its cancellation fails the child's
// calls with `plugin_failed`, kills its process group, and the next call
// starts a fresh child.
//
// What the child may use is bounded too (limits.ts): its memory by RLIMIT_DATA
// (prlimit), each call's CPU time by sampling the child's (from /proc, through
// cat where the host may not read it), and between calls the child is frozen
// (SIGSTOP), so nothing a plugin leaves running spends anything. It gets no
// cache directory: DENO_DIR names a path that cannot be created. Errors the
// host relays to it lose host paths and addresses.
//
// This file: which child serves a call, when one is replaced, and stopping.
// launch.ts starts a child, session.ts runs one child and its calls,
// protocol.ts checks its messages, requests.ts answers its host requests.
import { problem, received, WardenError } from "../../errors.ts";
import type { RootFs } from "../../doors/roots.ts";
import { toBase64 } from "./launch.ts";
import { limitsOf, PLUGIN_LIMITS } from "./limits.ts";
import { type PluginCallContext, Session, type Settings } from "./session.ts";

/** How to run one plugin. */
export interface PluginRuntimeOptions {
  /** The plugin id, named in every error message. */
  readonly id: string;
  /** The verified entry bundle (an ES module exporting `tools` or the SDK's `plugin`); copied, never re-read. */
  readonly entryBytes: Uint8Array;
  /** File access for the plugin, already confined to its declared roots. */
  readonly fs: RootFs;
  /** A child without calls is stopped after this long (default 60000). */
  readonly idleMs?: number;
  /** A line of output longer than this is a flood (default 8 MiB). */
  readonly maxMessageBytes?: number;
  /** More stderr than this within one second is a flood (default 1 MiB). */
  readonly maxStderrBytesPerSecond?: number;
  /** How long a cancelled call may take to stop before its child is killed (default 1000). */
  readonly cancelGraceMs?: number;
  /** How long the child may take to import its bundle (default 10000). */
  readonly loadTimeoutMs?: number;
  /** Memory the plugin may use, in MiB: the V8 heap limit, and the OS limit beside deno's own (default 512). */
  readonly memoryMb?: number;
  /** CPU time one call may use, all the child's threads together, in ms (default 30000). */
  readonly cpuMsPerCall?: number;
}

/** Defaults of the optional `PluginRuntimeOptions`. */
export const PLUGIN_RUNTIME_DEFAULTS = Object.freeze({
  idleMs: 60_000,
  maxMessageBytes: 8 * 1024 * 1024,
  maxStderrBytesPerSecond: 1024 * 1024,
  cancelGraceMs: 1000,
  loadTimeoutMs: 10_000,
  ...limitsOf(undefined),
});

/**
 * Runs one plugin's tools in a sandboxed Deno child. The child starts on the
 * first call, serves further calls (also concurrent ones), and stops after
 * `idleMs` without calls. A child that fails in any way is killed with its
 * process group; its running calls reject with `plugin_failed`, and the next
 * call starts a fresh one.
 *
 * Cancellation: when `ctx.signal` aborts (client cancel or timeout) the call
 * rejects at once with the signal's reason and the child is sent `cancel`; a
 * child that does not settle that call within `cancelGraceMs` is killed, with
 * its other calls.
 */
export class PluginRuntime {
  /** The plugin id. */
  readonly id: string;
  readonly #settings: Settings;
  #session: Session | null = null;
  /** Sessions replaced while a cancelled call had its grace period: they finish their calls, then stop. */
  readonly #retired = new Set<Session>();

  constructor(options: PluginRuntimeOptions) {
    const d = PLUGIN_RUNTIME_DEFAULTS;
    this.id = options.id;
    this.#settings = Object.freeze({
      id: options.id,
      code: toBase64(new Uint8Array(options.entryBytes)),
      fs: options.fs,
      idleMs: options.idleMs ?? d.idleMs,
      maxMessageBytes: options.maxMessageBytes ?? d.maxMessageBytes,
      maxStderrBytesPerSecond: options.maxStderrBytesPerSecond ?? d.maxStderrBytesPerSecond,
      cancelGraceMs: options.cancelGraceMs ?? d.cancelGraceMs,
      loadTimeoutMs: options.loadTimeoutMs ?? d.loadTimeoutMs,
      memoryMb: Math.min(options.memoryMb ?? d.memoryMb, PLUGIN_LIMITS.memoryMb.max),
      cpuMsPerCall: Math.min(options.cpuMsPerCall ?? d.cpuMsPerCall, PLUGIN_LIMITS.cpuMsPerCall.max),
    });
  }

  /** The pid (and process group id) of the running child, or null; for tests and diagnostics. */
  get pid(): number | null {
    return this.#session?.pid ?? null;
  }

  /**
   * Calls `tool` (its name in the bundle's `tools`, without the `<id>_`
   * prefix) with JSON `args`. Resolves with the tool's JSON result; rejects
   * with a `WardenError`: `plugin_failed` when the plugin or its process
   * misbehaves, `tool_failed` when the tool throws, the host's file-access
   * code when the tool lets such an error through, or the abort reason of
   * `ctx.signal`.
   */
  call(tool: string, args: unknown, ctx: PluginCallContext): Promise<unknown> {
    if (ctx.signal.aborted) {
      const reason = ctx.signal.reason;
      return Promise.reject(
        reason instanceof WardenError
          ? reason
          : new WardenError("cancelled", `Tool "${this.id}_${tool}" was cancelled`),
      );
    }
    let argsJson: string | undefined;
    try {
      argsJson = JSON.stringify(args ?? {});
    } catch {
      // Reported below.
    }
    if (argsJson === undefined) {
      return Promise.reject(
        new WardenError("invalid_arguments", problem("Invalid arguments", `expected JSON, received ${received(args)}`)),
      );
    }
    let session = this.#session;
    const fresh = !session?.usable;
    if (!session || fresh) {
      if (session?.alive) {
        // A child whose cancelled call has its grace period may be killed at its end: the call goes to a fresh one.
        this.#retired.add(session);
        session.retire();
      }
      session = new Session(this.#settings, (ended) => {
        if (this.#session === ended) this.#session = null;
        this.#retired.delete(ended);
      });
      this.#session = session;
    }
    const result = session.call(tool, argsJson, ctx);
    if (fresh) session.start();
    return result;
  }

  /** Stops the child, if any: its running calls reject; a later call starts a new one. Resolves once it is gone. */
  async stop(): Promise<void> {
    const sessions = [...this.#retired, ...(this.#session ? [this.#session] : [])];
    this.#session = null;
    await Promise.all(sessions.map((session) => session.stop("it was stopped")));
  }
}
