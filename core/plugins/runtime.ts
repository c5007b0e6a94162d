// The host side of the plugin sandbox. Each plugin runs in a Deno child
// process of its own with no permissions at all, an environment of four
// variables, its own process group, and the verified bundle bytes imported
// from memory; see core/plugins/child.ts for the other end. Every capability
// the plugin has is an RPC answered here: file access through the RootFs the
// host hands in (already confined to the plugin's roots), progress and log
// through the call's context. Nothing the child writes is trusted: a line
// that is not a well-formed message, too much output, an exit or a call that
// ignores its cancellation fails the child's calls with `plugin_failed`, kills
// its process group, and the next call starts a fresh child.
//
// What the child may use is bounded too (core/plugins/limits.ts): its memory
// by RLIMIT_DATA (prlimit), each call's CPU time by sampling the child's
// (from /proc, through cat where the host may not read it), and between
// calls the child is frozen (SIGSTOP), so nothing a plugin leaves running
// spends anything. It gets no cache directory: DENO_DIR names a path that
// cannot be created. Errors the host relays to it lose host paths and
// addresses.
import path from "node:path";
import { concatBytes } from "../bytes.ts";
import { type ErrorCode, messageOf, problem, received, WardenError } from "../errors.ts";
import { type ChildProcessHandle, platform, type ProcessExit } from "../platform/mod.ts";
import { DEFAULT_MAX_READ_BYTES, type GlobOptions, type RootFs } from "../doors/roots.ts";
import { CLIENT_LOG_LEVELS, type ClientLogLevel } from "../tool.ts";
import { childSource } from "./child.ts";
import { limitsOf, osLimits, PLUGIN_LIMITS, RUNTIME_RESERVE_MB } from "./limits.ts";
import type { FetchRequest, FetchResult, WriteResult } from "../doors/egress.ts";
import type { SpawnRequest, SpawnResult } from "../doors/spawn.ts";

/** What a plugin call gets from the host besides its arguments: the tool context's own members fit. */
export interface PluginCallContext {
  /** Aborted on client cancellation or timeout; the call then rejects with the signal's reason. */
  readonly signal: AbortSignal;
  progress(progress: number, total?: number, message?: string): Promise<void>;
  log(level: ClientLogLevel, data: unknown): void;
  /**
   * The host tool context's own capability methods, which check the plugin's
   * class and manifest declarations: the child's ctx.spawn, ctx.fetch and
   * ctx.fs.write are requests answered by these. Absent: refused.
   */
  readonly capabilities?: {
    spawn(argv: readonly string[], options?: SpawnRequest): Promise<SpawnResult>;
    fetch(url: string, request?: FetchRequest): Promise<FetchResult>;
    write(root: string, file: string, data: string): Promise<WriteResult>;
  };
}

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

/** File requests a child may have running at once; more wait in a queue. */
const FS_CONCURRENCY = 8;
/** File requests a child may have running and queued; more is a flood. */
const FS_MAX_PENDING = 10_000;
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
/** Error codes of the host's file access that a plugin's error may carry through. */
const FS_ERROR_CODES: ReadonlySet<string> = new Set(["unknown_root", "path_refused", "not_found", "too_large"]);
const LOG_LEVELS: ReadonlySet<string> = new Set(CLIENT_LOG_LEVELS);
/** What a child that died of its memory limit leaves on stderr: V8's fatal error, or Rust's failed allocation. */
const OUT_OF_MEMORY = /out of memory|memory allocation of \d+ bytes failed|Failed to reserve virtual memory/i;

/**
 * The `deno run` flags of a plugin child, before the bootstrap URL: no
 * permission flag at all (so every permission is denied without a prompt),
 * no config, lock file, remote or npm modules, nothing fetched.
 */
export function pluginDenoArgs(memoryMb: number = PLUGIN_RUNTIME_DEFAULTS.memoryMb): string[] {
  return [
    "run",
    "--no-prompt",
    "--cached-only",
    "--no-config",
    "--no-lock",
    "--no-remote",
    "--no-npm",
    `--v8-flags=--max-old-space-size=${memoryMb}`,
  ];
}

/**
 * DENO_DIR of a plugin child: a path below a character device, which no one,
 * root included, can create. deno keeps the Cache API's data and its caches
 * there; with none, nothing a plugin does persists or fills a disk.
 */
export const PLUGIN_DENO_DIR = "/dev/null/warden-plugin";

/** The whole environment of a plugin child. TZ: the host's time zone is not the plugin's business. */
export function pluginEnv(): Record<string, string> {
  return {
    DENO_DIR: PLUGIN_DENO_DIR,
    DENO_NO_UPDATE_CHECK: "1",
    DENO_NO_PACKAGE_JSON: "1",
    NO_COLOR: "1",
    TZ: "UTC",
  };
}

/**
 * The program and arguments that start a plugin child: deno, under prlimit
 * (RLIMIT_DATA: deno's own reservations plus `memoryMb`) and setpriv (killed
 * when warden dies, even frozen) where they exist. Both execute the next
 * program in place, so the pid is deno's.
 */
export function pluginCommand(deno: string, memoryMb: number): { command: string; args: string[] } {
  const os = osLimits();
  let command = deno;
  let args = [...pluginDenoArgs(memoryMb), bootstrap()];
  if (os.prlimit) {
    args = [`--data=${(memoryMb + RUNTIME_RESERVE_MB) * 1024 * 1024}`, "--", command, ...args];
    command = os.prlimit;
  }
  if (os.setpriv) {
    args = ["--pdeathsig", "KILL", "--", command, ...args];
    command = os.setpriv;
  }
  return { command, args };
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

let bootstrapUrl: string | undefined;

/** The child bootstrap as a `data:` URL, built once. */
function bootstrap(): string {
  bootstrapUrl ??= "data:text/javascript;base64," + toBase64(new TextEncoder().encode(childSource()));
  return bootstrapUrl;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

function isOptional(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || value === null || check(value);
}

const isString = (value: unknown) => typeof value === "string";
const isFiniteNumber = (value: unknown) => typeof value === "number" && Number.isFinite(value);

/** A message from the child whose fields have been checked. */
type ChildMessage =
  | { type: "loaded"; ok: true; tools: string[] }
  | { type: "loaded"; ok: false; error: { message: string } }
  | { type: "result"; callId: number; token: string; ok: true; value: unknown }
  | {
    type: "result";
    callId: number;
    token: string;
    ok: false;
    error: { message: string; code?: string; kind?: string };
  }
  | { type: "fs"; id: number; callId: number; token: string; op: string; args: unknown[] }
  | {
    type: "progress";
    callId: number;
    token: string;
    progress: number;
    total?: number | null;
    message?: string | null;
  }
  | { type: "log"; callId: number; token: string; level: ClientLogLevel; data: unknown };

/** The checked message, or why it is not one. */
function checkMessage(value: unknown): ChildMessage | string {
  if (!isRecord(value) || typeof value.type !== "string") {
    return `it sent a line that is not a message: ${received(value)}`;
  }
  const m = value;
  const errorOk = (e: unknown) => isRecord(e) && typeof e.message === "string";
  let valid: boolean;
  switch (m.type) {
    case "loaded":
      valid = m.ok === true ? Array.isArray(m.tools) && m.tools.every(isString) : m.ok === false && errorOk(m.error);
      break;
    case "result":
      valid = isId(m.callId) && isString(m.token) && (m.ok === true || (m.ok === false && errorOk(m.error)));
      break;
    case "fs":
      valid = isId(m.id) && isId(m.callId) && isString(m.token) && typeof m.op === "string" &&
        Array.isArray(m.args);
      break;
    case "progress":
      valid = isId(m.callId) && isString(m.token) && isFiniteNumber(m.progress) &&
        isOptional(m.total, isFiniteNumber) && isOptional(m.message, isString);
      break;
    case "log":
      valid = isId(m.callId) && isString(m.token) && typeof m.level === "string" && LOG_LEVELS.has(m.level);
      break;
    default:
      return `it sent a message of unknown type ${received(m.type)}`;
  }
  return valid ? (m as unknown as ChildMessage) : `it sent an invalid "${m.type}" message: ${received(m)}`;
}

function invalidFileRequest(detail: string): WardenError {
  return new WardenError("invalid_arguments", problem("Invalid file request", detail));
}

function stringArg(value: unknown, name: string): string {
  if (typeof value !== "string") throw invalidFileRequest(`${name} must be a string, received ${received(value)}`);
  return value;
}

function globOptions(value: unknown): GlobOptions {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw invalidFileRequest(`glob options must be an object, received ${received(value)}`);
  const out: { cwd?: string; gitignore?: boolean; dot?: boolean; ignore?: string[] } = {};
  for (const [key, option] of Object.entries(value)) {
    if (option === undefined || option === null) continue;
    if (key === "cwd" && typeof option === "string") out.cwd = option;
    else if ((key === "gitignore" || key === "dot") && typeof option === "boolean") out[key] = option;
    else if (key === "ignore" && Array.isArray(option) && option.every(isString)) out.ignore = option as string[];
    else throw invalidFileRequest(`glob option ${received(key)} is unknown or has the wrong type`);
  }
  return out;
}

const CAPABILITY_OPS = ["spawn", "fetch", "write"];

/** Runs a spawn, fetch or write request through the host context, which checks class and declarations. */
function runCapabilityRequest(
  id: string,
  capabilities: PluginCallContext["capabilities"],
  op: string,
  args: unknown[],
): Promise<unknown> {
  if (!capabilities) {
    return Promise.reject(
      new WardenError(
        "capability_denied",
        problem(`Plugin "${id}" may not use ${op}`, "the host offers it no capabilities"),
      ),
    );
  }
  const [first, second, third] = args;
  const options = (value: unknown) => (isRecord(value) ? value : {});
  switch (op) {
    case "spawn":
      if (!Array.isArray(first) || !first.every(isString)) {
        throw invalidFileRequest(`argv must be an array of strings, received ${received(first)}`);
      }
      return capabilities.spawn(first as string[], options(second) as SpawnRequest);
    case "fetch":
      return capabilities.fetch(stringArg(first, "url"), options(second) as FetchRequest);
    default:
      return capabilities.write(stringArg(first, "root"), stringArg(second, "path"), stringArg(third, "data"));
  }
}

/** Runs one file request of a plugin against its confined RootFs. */
function runFileRequest(fs: RootFs, op: string, args: unknown[]): Promise<unknown> {
  const [root, first, second] = args;
  switch (op) {
    case "readText": {
      let maxBytes = DEFAULT_MAX_READ_BYTES;
      if (isRecord(second) && typeof second.maxBytes === "number" && second.maxBytes > 0) {
        maxBytes = Math.min(Math.floor(second.maxBytes), DEFAULT_MAX_READ_BYTES);
      }
      return fs.readText(stringArg(root, "root"), stringArg(first, "path"), { maxBytes });
    }
    case "list":
      return fs.list(
        stringArg(root, "root"),
        first === undefined || first === null ? undefined : stringArg(first, "dir"),
      );
    case "stat":
      return fs.stat(stringArg(root, "root"), stringArg(first, "path"));
    case "stats":
      if (!Array.isArray(first) || !first.every(isString)) {
        return Promise.reject(invalidFileRequest(`paths must be an array of strings, received ${received(first)}`));
      }
      return fs.stats(stringArg(root, "root"), first as string[]);
    case "glob": {
      const patterns = typeof first === "string"
        ? first
        : Array.isArray(first) && first.every(isString)
        ? (first as string[])
        : undefined;
      if (patterns === undefined) {
        throw invalidFileRequest(`patterns must be a string or an array of strings, received ${received(first)}`);
      }
      return fs.glob(stringArg(root, "root"), patterns, globOptions(second));
    }
    default:
      return Promise.reject(invalidFileRequest(`unknown operation ${received(op)}`));
  }
}

/**
 * Host facts out of a text that leaves for a plugin: absolute paths (the
 * host's layout) and IP addresses (its resolver, its network's private
 * addresses). What a plugin asked for keeps its shape: an origin stays
 * `https://<address>`, a relative path stays.
 */
export function withoutHostFacts(text: string): string {
  return text
    .replace(/(?<=^|[\s"'`(=,[])\/(?!\/)[^\s"'`),;\]]*/g, "<path>")
    .replace(/(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])/g, "<address>")
    .replace(
      /(?<![\w:.])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:.])/gi,
      (match) => match.includes("::") || /[a-f]/i.test(match) ? "<address>" : match,
    );
}

/** The error a plugin sees for a failed request: host paths and addresses never leave the host. */
function fileError(op: string, error: unknown): { code: string; message: string } {
  if (error instanceof WardenError) return { code: error.code, message: withoutHostFacts(error.message) };
  const code = (error as { code?: unknown } | null)?.code;
  const what = CAPABILITY_OPS.includes(op) ? `${op[0].toUpperCase()}${op.slice(1)} failed` : "File access failed";
  return {
    code: CAPABILITY_OPS.includes(op) ? "tool_failed" : "fs_failed",
    message: problem(what, typeof code === "string" && /^E[A-Z]+$/.test(code) ? code : "unexpected error"),
  };
}

/** A capability's result as the plugin sees it: a path the host could not remove is not the plugin's to know. */
function replyValue(op: string, value: unknown): unknown {
  if (op === "spawn" && isRecord(value) && typeof value.scratchLeft === "string") {
    return { ...value, scratchLeft: withoutHostFacts(value.scratchLeft) };
  }
  return value;
}

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

interface Settings {
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
class Session {
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
  #fsActive = 0;
  readonly #fsQueue: { id: number; callId: number; op: string; args: unknown[] }[] = [];
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
   * unreferenced only after a quiet moment: ref/unref cost ~90 µs each on deno.
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
    this.#fsQueue.length = 0;
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
      case "fs":
        return this.#onFileRequest(message);
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
    } else if (code !== undefined && FS_ERROR_CODES.has(code)) {
      // The host's own file-access error, let through by the plugin as a built-in tool would.
      call.reject(new WardenError(code as ErrorCode, text));
    } else {
      call.reject(new WardenError("tool_failed", problem(`Tool "${id}_${call.tool}" failed`, text)));
    }
  }

  #onFileRequest(message: Extract<ChildMessage, { type: "fs" }>): void {
    const call = this.#owner(message.callId, message.token, "request");
    if (call === null) return;
    if (!call || !call.sent || call.state !== "running") {
      this.#write({
        type: "fs-reply",
        id: message.id,
        ok: false,
        error: { code: "cancelled", message: `File access refused: call ${message.callId} is not running` },
      });
      return;
    }
    if (this.#fsActive + this.#fsQueue.length >= FS_MAX_PENDING) {
      this.#fail(`it made more than ${FS_MAX_PENDING} file requests at once`);
      return;
    }
    this.#fsQueue.push({ id: message.id, callId: message.callId, op: message.op, args: message.args });
    this.#pumpFiles();
  }

  #pumpFiles(): void {
    while (this.#fsActive < FS_CONCURRENCY && this.#fsQueue.length > 0 && this.#phase !== "dead") {
      const request = this.#fsQueue.shift()!;
      this.#fsActive++;
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
        (value) => ({ type: "fs-reply", id: request.id, ok: true, value: replyValue(request.op, value) }),
        (error: unknown) => ({ type: "fs-reply", id: request.id, ok: false, error: fileError(request.op, error) }),
      ).then((reply) => {
        this.#fsActive--;
        if (this.#phase === "dead") return;
        this.#write(reply);
        this.#pumpFiles();
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
