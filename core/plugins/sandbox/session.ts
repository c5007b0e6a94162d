// One plugin child process and the calls it serves: it spawns the child
// (launch.ts), sends it the bundle and the calls, reads its stdout line by
// line into checked messages (protocol.ts), answers its host requests
// (requests.ts), forwards progress and log, counts each call's CPU time,
// freezes the child between calls, and on any failure kills it and rejects
// every call it had. Which session serves a call is runtime.ts's business.
import path from "node:path";
import { concatBytes } from "../../bytes.ts";
import { type ErrorCode, messageOf, problem, received, WardenError } from "../../errors.ts";
import { type ChildProcessHandle, platform, type ProcessExit } from "../../platform/mod.ts";
import type { RootFs } from "../../doors/roots.ts";
import type { ClientLogLevel } from "../../tool.ts";
import { pluginCommand, pluginEnv } from "./launch.ts";
import { osLimits } from "./limits.ts";
import { checkMessage, type ChildMessage } from "./protocol.ts";
import {
  CAPABILITY_OPS,
  type PluginCapabilities,
  replyValue,
  requestError,
  runCapabilityRequest,
  runFileRequest,
} from "./requests.ts";

/** What a plugin call gets from the host besides its arguments: the tool context's own members fit. */
export interface PluginCallContext {
  /** Aborted on client cancellation or timeout; the call then rejects with the signal's reason. */
  readonly signal: AbortSignal;
  progress(progress: number, total?: number, message?: string): Promise<void>;
  log(level: ClientLogLevel, data: unknown): void;
  /** The host context's spawn, fetch and write, which answer the plugin's requests (requests.ts). Absent: refused. */
  readonly capabilities?: PluginCapabilities;
}

/** Host requests (file access, spawn, fetch, write) a child may have running at once; more wait in a queue. */
const HOST_REQUEST_CONCURRENCY = 8;
/** Host requests a child may have running and queued; more is a flood. */
const HOST_REQUEST_MAX_PENDING = 10_000;
/** A child without calls stops keeping the host alive after this long. */
const QUIET_MS = 50;
/** How often the CPU time of a child with calls is sampled. */
const CPU_SAMPLE_MS = 100;
/** Progress and log messages forwarded per child per second; more are dropped. */
const NOTIFICATIONS_PER_SECOND = 200;
const STDERR_TAIL_BYTES = 4096;
const STDERR_TAIL_LINES = 10;
/** Longest error message taken from a plugin. */
const MAX_PLUGIN_MESSAGE = 2000;
/** Error codes of the host's file access (reads and writes) that a plugin's error may carry through. */
const RELAYED_ERROR_CODES: ReadonlySet<string> = new Set(["unknown_root", "path_refused", "not_found", "too_large"]);
/** What a child that died of its memory limit leaves on stderr: V8's fatal error, or Rust's failed allocation. */
const OUT_OF_MEMORY = /out of memory|memory allocation of \d+ bytes failed|Failed to reserve virtual memory/i;

function describeExit(exit: ProcessExit): string {
  return exit.signal ? `its process was killed by ${exit.signal}` : `its process exited with code ${exit.code}`;
}

/** Last lines of what the child wrote to stderr, without terminal escapes. */
function tailText(bytes: Uint8Array): string {
  const text = new TextDecoder().decode(bytes)
    // deno-lint-ignore no-control-regex
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "")
    // deno-lint-ignore no-control-regex
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
  const lines = text.split("\n").map((line) => line.trimEnd()).filter((line) => line !== "");
  return lines.slice(-STDERR_TAIL_LINES).map((line) => (line.length > 300 ? `${line.slice(0, 297)}...` : line))
    .join("\n");
}

type Timer = ReturnType<typeof setTimeout>;

interface PendingCall {
  readonly id: number;
  /** Unguessable: every message about this call must carry it. */
  readonly token: string;
  readonly tool: string;
  readonly argsJson: string;
  readonly ctx: PluginCallContext;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: WardenError) => void;
  readonly onAbort: () => void;
  sent: boolean;
  /** "cancelled": already rejected, waiting for the child to settle it within the grace period. */
  state: "running" | "cancelled";
  graceTimer?: Timer;
  /** The highest progress forwarded: MCP progress only increases. */
  progress: number;
  /** CPU time of the child counted against this call, in ms. */
  cpuMs: number;
}

/** How a session runs its child: the runtime's options, resolved. */
export interface Settings {
  readonly id: string;
  readonly code: string;
  readonly fs: RootFs;
  readonly idleMs: number;
  readonly maxMessageBytes: number;
  readonly maxStderrBytesPerSecond: number;
  readonly cancelGraceMs: number;
  readonly loadTimeoutMs: number;
  readonly memoryMb: number;
  readonly cpuMsPerCall: number;
}

/** One child process and the calls it serves. */
export class Session {
  readonly #s: Settings;
  readonly #onEnd: (session: Session) => void;
  #handle: ChildProcessHandle | null = null;
  #starting: Promise<void> | undefined;
  #phase: "starting" | "ready" | "dead" = "starting";
  /** Set when the process has exited, before the failure is reported. */
  #exited = false;
  #tools: ReadonlySet<string> = new Set();
  readonly #calls = new Map<number, PendingCall>();
  #nextCallId = 1;
  #idleTimer: Timer | undefined;
  #quietTimer: Timer | undefined;
  #lastActive = 0;
  /** Whether the child may keep the host alive (it does from spawn on). */
  #referenced = true;
  #loadTimer: Timer | undefined;
  #stdoutParts: Uint8Array[] = [];
  #stdoutSize = 0;
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });
  #stderrTail = new Uint8Array(0);
  #stderrWindowStart = 0;
  #stderrWindowBytes = 0;
  #notifyWindowStart = 0;
  #notifyWindowCount = 0;
  #requestsActive = 0;
  readonly #requestQueue: { id: number; callId: number; op: string; args: unknown[] }[] = [];
  /** Stopped with SIGSTOP: it has no calls. */
  #frozen = false;
  #cpuTimer: ReturnType<typeof setInterval> | undefined;
  /** The child's CPU time at the last reading, in ms; null before the first. */
  #cpuLast: number | null = null;
  /** A reading of the child's CPU time is under way. */
  #cpuReading = false;
  /** Replaced by a fresh child: it takes no calls and stops once its own are settled. */
  #retired = false;

  constructor(settings: Settings, onEnd: (session: Session) => void) {
    this.#s = settings;
    this.#onEnd = onEnd;
  }

  /**
   * Whether new calls may go to this session: not while a cancelled call has
   * its grace period, since the child may be killed at its end.
   */
  get usable(): boolean {
    if (this.#phase === "dead" || this.#exited || this.#retired) return false;
    for (const call of this.#calls.values()) if (call.state === "cancelled") return false;
    return true;
  }

  /** Whether the child is alive (or starting). */
  get alive(): boolean {
    return this.#phase !== "dead";
  }

  /** Takes no more calls; stops once the ones it has are settled. */
  retire(): void {
    this.#retired = true;
    if (this.#calls.size === 0) void this.stop("it was replaced");
  }

  get pid(): number | null {
    return this.#phase !== "dead" && !this.#exited ? this.#handle?.pid ?? null : null;
  }

  /** Spawns the child and sends it the bundle; calls made meanwhile wait for it to load. */
  start(): void {
    this.#starting = this.#spawn();
  }

  async #spawn(): Promise<void> {
    let handle: ChildProcessHandle;
    try {
      const { command, args } = pluginCommand(platform().denoExecutable(), this.#s.memoryMb);
      handle = await platform().spawnProcess(command, args, {
        env: pluginEnv(),
        // Deno.cwd() needs no permission: show the child nothing of the host's layout.
        cwd: path.parse(path.resolve(platform().cwd())).root,
        newProcessGroup: true,
        onStdout: (chunk) => this.#onStdout(chunk),
        onStderr: (chunk) => this.#onStderr(chunk),
      });
    } catch (error) {
      this.#fail(`its process could not be started: ${messageOf(error)}`);
      return;
    }
    this.#handle = handle;
    handle.exited.then(async (exit) => {
      this.#exited = true;
      if (this.#phase === "dead") return;
      // Give the last stderr lines a moment to arrive: they say why.
      await Promise.race([handle.closed, new Promise((resolve) => setTimeout(resolve, 250))]);
      this.#fail(
        OUT_OF_MEMORY.test(new TextDecoder().decode(this.#stderrTail))
          ? `it reached its memory limit of ${this.#s.memoryMb} MiB (${describeExit(exit)})`
          : describeExit(exit),
      );
    });
    if (this.#phase === "dead") {
      // Stopped while starting.
      handle.kill("SIGKILL");
      handle.end();
      return;
    }
    this.#write({
      type: "load",
      code: this.#s.code,
      rootIds: this.#s.fs.rootIds,
      maxMessageBytes: this.#s.maxMessageBytes,
    });
    this.#loadTimer = setTimeout(
      () => this.#fail(`it did not load its bundle within ${this.#s.loadTimeoutMs} ms`),
      this.#s.loadTimeoutMs,
    );
    platform().unrefTimer(this.#loadTimer);
    this.#activity();
  }

  /**
   * Starts counting once the bundle is loaded: the first reading is the
   * baseline (starting deno and importing the bundle is no call's CPU time),
   * then a sample every CPU_SAMPLE_MS, which reads nothing while the child is
   * frozen.
   */
  #startCpuCount(): void {
    if (!osLimits().procStat) return;
    this.#sampleCpu();
    this.#cpuTimer = setInterval(() => this.#sampleCpu(), CPU_SAMPLE_MS);
    platform().unrefTimer(this.#cpuTimer);
  }

  /**
   * Counts the child's CPU time since the last reading against each running
   * call, and fails the child when a call goes over its budget. Between calls
   * the child is frozen and its time does not move; what it spent between the
   * last reading of one call and its freeze counts for the next. One reading
   * at a time: where cat reads /proc for the host (see limits.ts), it takes a
   * few ms.
   */
  #sampleCpu(): void {
    if (this.#cpuReading || this.#phase === "dead" || (this.#frozen && this.#calls.size === 0)) return;
    this.#cpuReading = true;
    void platform().processCpuMs(this.#handle!.pid, osLimits().cat).then((cpu) => {
      this.#cpuReading = false;
      if (cpu === null || this.#phase === "dead") return;
      const spent = this.#cpuLast === null ? 0 : cpu - this.#cpuLast;
      this.#cpuLast = cpu;
      if (spent <= 0) return;
      for (const call of this.#calls.values()) {
        if (!call.sent) continue;
        call.cpuMs += spent;
        if (call.cpuMs > this.#s.cpuMsPerCall) {
          this.#fail(
            `call ${call.id} ("${call.tool}") used more than ${this.#s.cpuMsPerCall} ms of CPU time, its budget per call`,
          );
          return;
        }
      }
    });
  }

  call(tool: string, argsJson: string, ctx: PluginCallContext): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = this.#nextCallId++;
      const call: PendingCall = {
        id,
        token: crypto.randomUUID(),
        tool,
        argsJson,
        ctx,
        resolve,
        reject,
        onAbort: () => this.#abort(call),
        sent: false,
        state: "running",
        progress: -Infinity,
        cpuMs: 0,
      };
      ctx.signal.addEventListener("abort", call.onAbort, { once: true });
      this.#calls.set(id, call);
      this.#activity();
      if (this.#phase === "ready") this.#send(call);
    });
  }

  /** Kills the child; its running calls reject with `detail`. Resolves once the process is gone. */
  async stop(detail: string): Promise<void> {
    this.#fail(detail, false);
    await this.#starting;
    await this.#handle?.exited;
  }

  #write(message: Record<string, unknown>): void {
    this.#handle?.write(JSON.stringify(message) + "\n");
  }

  #send(call: PendingCall): void {
    if (!this.#tools.has(call.tool)) {
      this.#settle(call);
      call.reject(
        new WardenError(
          "plugin_failed",
          problem(`Plugin "${this.#s.id}" failed`, `its bundle has no tool "${call.tool}"`),
        ),
      );
      return;
    }
    call.sent = true;
    this.#thaw();
    this.#handle?.write(
      `{"type":"call","id":${call.id},"token":"${call.token}","tool":${
        JSON.stringify(call.tool)
      },"args":${call.argsJson}}\n`,
    );
  }

  /** Stops the child's every thread between calls: what a plugin left running spends nothing. */
  #freeze(): void {
    if (this.#frozen || this.#phase !== "ready" || !this.#handle || this.#calls.size > 0) return;
    this.#frozen = true;
    this.#handle.kill("SIGSTOP");
  }

  #thaw(): void {
    if (!this.#frozen) return;
    this.#frozen = false;
    this.#handle?.kill("SIGCONT");
  }

  /** The call a message names, if it is running; fails the child when the message's token is not that call's. */
  #owner(callId: number, token: string, what: string): PendingCall | undefined | null {
    const call = this.#calls.get(callId);
    if (call && call.token !== token) {
      this.#fail(`it sent a ${what} for call ${callId} with a token that is not that call's`);
      return null;
    }
    return call;
  }

  /** Forgets a call: it is answered or given up. */
  #settle(call: PendingCall): void {
    call.ctx.signal.removeEventListener("abort", call.onAbort);
    if (call.graceTimer !== undefined) clearTimeout(call.graceTimer);
    this.#calls.delete(call.id);
    this.#activity();
    if (this.#retired && this.#calls.size === 0) void this.stop("it was replaced");
  }

  #abort(call: PendingCall): void {
    if (call.state !== "running" || this.#phase === "dead") return;
    const reason = call.ctx.signal.reason;
    call.reject(
      reason instanceof WardenError
        ? reason
        : new WardenError("cancelled", `Tool "${this.#s.id}_${call.tool}" was cancelled`),
    );
    if (!call.sent) {
      this.#settle(call);
      return;
    }
    call.state = "cancelled";
    this.#write({ type: "cancel", callId: call.id });
    call.graceTimer = setTimeout(() => {
      this.#fail(`call ${call.id} ("${call.tool}") did not stop within ${this.#s.cancelGraceMs} ms of being cancelled`);
    }, this.#s.cancelGraceMs);
  }

  /**
   * Keeps the host alive while calls run, and lets it exit once they are done
   * (the child is killed when the host exits); stops the child once it has
   * been without calls for idleMs. Timers are re-armed lazily and the child
   * unreferenced only after a quiet moment, so that a run of calls does not
   * unref and ref it again for each.
   */
  #activity(): void {
    if (this.#phase === "dead") return;
    this.#lastActive = performance.now();
    if (this.#calls.size === 0) this.#freeze();
    if (this.#calls.size > 0) {
      if (!this.#referenced && this.#handle) {
        this.#handle.ref();
        this.#referenced = true;
      }
      return;
    }
    if (this.#referenced && this.#quietTimer === undefined) {
      this.#quietTimer = setTimeout(() => {
        this.#quietTimer = undefined;
        if (this.#calls.size === 0 && this.#referenced && this.#handle && this.#phase !== "dead") {
          this.#handle.unref();
          this.#referenced = false;
        }
      }, QUIET_MS);
      platform().unrefTimer(this.#quietTimer);
    }
    if (this.#idleTimer === undefined) this.#armIdle(this.#s.idleMs);
  }

  #armIdle(ms: number): void {
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#phase === "dead" || this.#calls.size > 0) return;
      const left = this.#lastActive + this.#s.idleMs - performance.now();
      if (left > 1) this.#armIdle(left);
      else void this.stop("it was idle");
    }, ms);
    platform().unrefTimer(this.#idleTimer);
  }

  #fail(detail: string, withStderr = true): void {
    if (this.#phase === "dead") return;
    this.#phase = "dead";
    for (const timer of [this.#idleTimer, this.#loadTimer, this.#quietTimer]) {
      if (timer !== undefined) clearTimeout(timer);
    }
    if (this.#cpuTimer !== undefined) clearInterval(this.#cpuTimer);
    this.#handle?.kill("SIGKILL");
    this.#handle?.end();
    this.#requestQueue.length = 0;
    const tail = withStderr ? tailText(this.#stderrTail) : "";
    const message = problem(`Plugin "${this.#s.id}" failed`, detail) +
      (tail ? `\nLast lines of its stderr:\n${tail}` : "");
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) {
      call.ctx.signal.removeEventListener("abort", call.onAbort);
      if (call.graceTimer !== undefined) clearTimeout(call.graceTimer);
      if (call.state === "running") call.reject(new WardenError("plugin_failed", message));
    }
    this.#onEnd(this);
  }

  #onStdout(chunk: Uint8Array): void {
    let start = 0;
    while (start < chunk.length && this.#phase !== "dead") {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      if (this.#stdoutSize + (end - start) > this.#s.maxMessageBytes) {
        this.#fail(`it wrote a line of more than ${this.#s.maxMessageBytes} bytes to stdout`);
        return;
      }
      // Copied: a runtime may reuse the chunk's memory.
      this.#stdoutParts.push(chunk.slice(start, end));
      this.#stdoutSize += end - start;
      if (newline === -1) return;
      const line = this.#stdoutParts.length === 1
        ? this.#stdoutParts[0]
        : concatBytes(this.#stdoutParts, this.#stdoutSize);
      this.#stdoutParts = [];
      this.#stdoutSize = 0;
      start = newline + 1;
      this.#onLine(line);
    }
  }

  #onStderr(chunk: Uint8Array): void {
    if (this.#phase === "dead") return;
    const now = performance.now();
    if (now - this.#stderrWindowStart >= 1000) {
      this.#stderrWindowStart = now;
      this.#stderrWindowBytes = 0;
    }
    this.#stderrWindowBytes += chunk.length;
    const kept = Math.min(STDERR_TAIL_BYTES, this.#stderrTail.length + chunk.length);
    const tail = new Uint8Array(kept);
    const fromChunk = Math.min(chunk.length, kept);
    tail.set(this.#stderrTail.subarray(this.#stderrTail.length - (kept - fromChunk)), 0);
    tail.set(chunk.subarray(chunk.length - fromChunk), kept - fromChunk);
    this.#stderrTail = tail;
    if (this.#stderrWindowBytes > this.#s.maxStderrBytesPerSecond) {
      this.#fail(`it wrote more than ${this.#s.maxStderrBytesPerSecond} bytes to stderr within one second`);
    }
  }

  #onLine(bytes: Uint8Array): void {
    let value: unknown;
    try {
      value = JSON.parse(this.#decoder.decode(bytes));
    } catch {
      const shown = new TextDecoder().decode(bytes.subarray(0, 200));
      this.#fail(`it wrote a line that is not JSON: ${received(shown)}`);
      return;
    }
    const message = checkMessage(value);
    if (typeof message === "string") {
      this.#fail(message);
      return;
    }
    switch (message.type) {
      case "loaded":
        return this.#onLoaded(message);
      case "result":
        return this.#onResult(message);
      case "host-request":
        return this.#onHostRequest(message);
      case "progress":
      case "log":
        return this.#onNotification(message);
    }
  }

  #onLoaded(message: Extract<ChildMessage, { type: "loaded" }>): void {
    if (this.#phase !== "starting") {
      this.#fail('it sent a second "loaded" message');
      return;
    }
    if (!message.ok) {
      this.#fail(`its bundle did not load: ${message.error.message.slice(0, MAX_PLUGIN_MESSAGE)}`);
      return;
    }
    if (this.#loadTimer !== undefined) clearTimeout(this.#loadTimer);
    this.#startCpuCount();
    this.#tools = new Set(message.tools);
    this.#phase = "ready";
    for (const call of [...this.#calls.values()]) if (!call.sent && call.state === "running") this.#send(call);
  }

  #onResult(message: Extract<ChildMessage, { type: "result" }>): void {
    const call = this.#owner(message.callId, message.token, "result");
    if (call === null) return;
    if (!call || !call.sent) {
      this.#fail(`it sent a result for call ${message.callId}, which is not running`);
      return;
    }
    this.#settle(call);
    if (call.state === "cancelled") return;
    if (message.ok) {
      call.resolve(message.value);
      return;
    }
    const { code, kind } = message.error;
    const text = message.error.message.slice(0, MAX_PLUGIN_MESSAGE);
    const id = this.#s.id;
    if (kind === "memory") {
      // Its memory is spent and may stay held: the next call gets a fresh child.
      const detail = `it reached its memory limit of ${this.#s.memoryMb} MiB (${text})`;
      call.reject(new WardenError("plugin_failed", problem(`Plugin "${id}" failed`, detail)));
      this.#fail(detail, false);
      return;
    }
    if (kind === "unknown_tool" || kind === "invalid_result" || kind === "too_large") {
      const detail = kind === "unknown_tool"
        ? `its bundle has no tool "${call.tool}"`
        : kind === "invalid_result"
        ? `tool "${call.tool}" returned a value that is not JSON`
        : `tool "${call.tool}" returned a result of more than ${this.#s.maxMessageBytes} bytes`;
      call.reject(new WardenError("plugin_failed", problem(`Plugin "${id}" failed`, detail)));
    } else if (code !== undefined && RELAYED_ERROR_CODES.has(code)) {
      // The host's own file-access error, let through by the plugin as a built-in tool would.
      call.reject(new WardenError(code as ErrorCode, text));
    } else {
      call.reject(new WardenError("tool_failed", problem(`Tool "${id}_${call.tool}" failed`, text)));
    }
  }

  #onHostRequest(message: Extract<ChildMessage, { type: "host-request" }>): void {
    const call = this.#owner(message.callId, message.token, "request");
    if (call === null) return;
    if (!call || !call.sent || call.state !== "running") {
      this.#write({
        type: "host-reply",
        id: message.id,
        ok: false,
        error: { code: "cancelled", message: `Request refused: call ${message.callId} is not running` },
      });
      return;
    }
    if (this.#requestsActive + this.#requestQueue.length >= HOST_REQUEST_MAX_PENDING) {
      this.#fail(`it made more than ${HOST_REQUEST_MAX_PENDING} requests to the host at once`);
      return;
    }
    this.#requestQueue.push({ id: message.id, callId: message.callId, op: message.op, args: message.args });
    this.#pumpRequests();
  }

  #pumpRequests(): void {
    while (
      this.#requestsActive < HOST_REQUEST_CONCURRENCY && this.#requestQueue.length > 0 && this.#phase !== "dead"
    ) {
      const request = this.#requestQueue.shift()!;
      this.#requestsActive++;
      let work: Promise<unknown>;
      try {
        const capabilities = this.#calls.get(request.callId)?.ctx.capabilities;
        work = CAPABILITY_OPS.includes(request.op)
          ? runCapabilityRequest(this.#s.id, capabilities, request.op, request.args)
          : runFileRequest(this.#s.fs, request.op, request.args);
      } catch (error) {
        work = Promise.reject(error);
      }
      work.then(
        (value) => ({ type: "host-reply", id: request.id, ok: true, value: replyValue(request.op, value) }),
        (error: unknown) => ({ type: "host-reply", id: request.id, ok: false, error: requestError(request.op, error) }),
      ).then((reply) => {
        this.#requestsActive--;
        if (this.#phase === "dead") return;
        this.#write(reply);
        this.#pumpRequests();
      });
    }
  }

  /**
   * Forwards progress and log of a running call. After its result (or its
   * cancellation) nothing more is forwarded; progress that does not increase
   * is dropped, as MCP requires of progress.
   */
  #onNotification(message: Extract<ChildMessage, { type: "progress" | "log" }>): void {
    const call = this.#owner(message.callId, message.token, message.type === "progress" ? "progress" : "log");
    if (!call || call.state !== "running") return;
    if (message.type === "progress") {
      if (!(message.progress > call.progress)) return;
      call.progress = message.progress;
    }
    const now = performance.now();
    if (now - this.#notifyWindowStart >= 1000) {
      this.#notifyWindowStart = now;
      this.#notifyWindowCount = 0;
    }
    if (++this.#notifyWindowCount > NOTIFICATIONS_PER_SECOND) return;
    try {
      if (message.type === "progress") {
        call.ctx.progress(
          message.progress,
          message.total ?? undefined,
          message.message === undefined || message.message === null ? undefined : message.message.slice(0, 1000),
        ).catch(() => {});
      } else {
        call.ctx.log(message.level, message.data);
      }
    } catch {
      // A context that throws is the host's concern, not the plugin's.
    }
  }
}
