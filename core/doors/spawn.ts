// ctx.spawn for `gate` tools: only programs on the tool's allowlist, resolved
// to absolute paths once; argv arrays, never a shell; a working directory
// inside a root; an environment with nothing of the host's but PATH and
// LANG; a time limit that kills the whole process group; capped output with
// an honest `truncated`; and, where bubblewrap works, no network and no
// writes outside a per-call scratch directory, which is removed afterwards.
import path from "node:path";
import { problem, received, WardenError } from "../errors.ts";
import { log } from "../log.ts";
import { platform } from "../platform/mod.ts";
import { isInside, realDirectory, type RootFs } from "./roots.ts";

/** What a tool may ask of ctx.spawn. */
export interface SpawnRequest {
  /** Root id for the working directory (default: the first root). */
  readonly root?: string;
  /** Working directory inside the root (default: the root itself). */
  readonly cwd?: string;
  /** Extra environment variables: upper-case names, no loader or shell hooks. */
  readonly env?: Readonly<Record<string, string>>;
  /** Text written to the program's stdin, which is then closed. */
  readonly stdin?: string;
  /** Default 30 s; never beyond what is left of the call. */
  readonly timeoutMs?: number;
  /** Per stream; default 1 MiB, at most 16 MiB. */
  readonly maxOutputBytes?: number;
  /**
   * In a job's run, the log of the job's report that the program's stdout and stderr go to as they come (one file
   * per name, e.g. a check's name, for the whole job); nothing is written outside a job.
   */
  readonly log?: string;
}

/** Where the core copies a program's output as it comes (a job's log), besides what ctx.spawn returns. */
export interface OutputLog {
  /** A program starts: `argv` as the tool gave it, in the root whose host path is `rootPath`. */
  begin(argv: readonly string[], rootPath: string): void;
  write(stream: "stdout" | "stderr", chunk: Uint8Array): void;
  /** It ended, `how` in words. */
  end(how: string): void;
}

/** What ctx.spawn returns: the program ran (whatever its exit code). */
export interface SpawnResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** Present when the scratch directory could not be removed: why. */
  readonly scratchLeft?: string;
}

/** What confines a spawned program, as host_context reports it. */
export interface SpawnIsolation {
  readonly kind: "bubblewrap" | "none";
  readonly network: "unshared" | "host";
  readonly writes: "scratch-only" | "unrestricted";
  readonly detail: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_OUTPUT = 1024 * 1024;
const MAX_OUTPUT = 16 * 1024 * 1024;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const ENV_REFUSED = /^(LD_|DYLD_)|^(PATH|HOME|TMPDIR|IFS|BASH_ENV|ENV|NODE_OPTIONS|PS4|SHELLOPTS)$/;

async function findInPath(name: string): Promise<string | null> {
  const fs = platform().fs;
  for (const dir of (platform().env("PATH") ?? "").split(platform().pathDelimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      if ((await fs.stat(candidate)).isFile) return await fs.realPath(candidate);
    } catch {
      // Not in this directory.
    }
  }
  return null;
}

/** Allowlisted program names: plain names, never paths, so PATH tricks have nothing to work with. */
export const PROGRAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

/**
 * Resolves program names and runs them confined. One per host; programs are
 * resolved when the host starts, so a PATH changed later changes nothing.
 */
export class Spawner {
  readonly #programs = new Map<string, string | null>();
  #isolation: Promise<{ isolation: SpawnIsolation; bwrap: string | null }> | undefined;

  /** Resolves every name the tools declared; call once at startup. */
  async resolve(names: Iterable<string>): Promise<void> {
    await Promise.all([...new Set(names)].map(async (name) => this.#programs.set(name, await findInPath(name))));
  }

  /** The programs and where they resolved (null: not installed). */
  programs(): ReadonlyMap<string, string | null> {
    return this.#programs;
  }

  /** Probes bubblewrap once: present and able to unshare the network here. */
  isolation(): Promise<SpawnIsolation> {
    return this.#probe().then((p) => p.isolation);
  }

  #probe(): Promise<{ isolation: SpawnIsolation; bwrap: string | null }> {
    this.#isolation ??= (async () => {
      const none = (why: string) => ({
        isolation: { kind: "none" as const, network: "host" as const, writes: "unrestricted" as const, detail: why },
        bwrap: null,
      });
      const bwrap = await findInPath("bwrap");
      if (!bwrap) {
        return none("bubblewrap (bwrap) is not installed: programs run with the host's network and file access");
      }
      const probe = await this.#run(
        bwrap,
        [...bwrapArgs("/", null), "--", bwrap, "--version"],
        {},
        null,
        5000,
        4096,
        undefined,
      )
        .catch((error) => ({ exitCode: -1, stderr: String(error) }));
      if (probe.exitCode !== 0) {
        return none(
          `bubblewrap cannot isolate here (${probe.stderr.trim().split("\n")[0] || `exit ${probe.exitCode}`})`,
        );
      }
      return {
        isolation: {
          kind: "bubblewrap" as const,
          network: "unshared" as const,
          writes: "scratch-only" as const,
          detail: "bubblewrap: no network, the file system read-only but for a per-call scratch directory",
        },
        bwrap,
      };
    })();
    return this.#isolation;
  }

  /** Runs `argv` for a tool whose allowlist is `allowed`; every refusal names the tool. */
  async spawn(
    who: string,
    allowed: readonly string[],
    fs: RootFs,
    argv: readonly string[],
    request: SpawnRequest,
    signal: AbortSignal,
    deadline: number,
    output?: OutputLog,
  ): Promise<SpawnResult> {
    if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== "string" || a.includes("\0"))) {
      throw new WardenError(
        "capability_denied",
        problem("Invalid argv", `expected a non-empty array of strings without NUL, received ${received(argv)}`),
      );
    }
    const [name, ...args] = argv;
    if (!allowed.includes(name)) {
      throw new WardenError(
        "capability_denied",
        problem(
          `Program ${received(name)} is not on the allowlist of ${who}`,
          allowed.length ? `it may run ${allowed.join(", ")}` : "it may run no program",
        ),
      );
    }
    const program = this.#programs.get(name);
    if (!program) {
      throw new WardenError(
        "not_found",
        problem(
          `Cannot run ${name}`,
          "it was not found in PATH when warden started",
          `install ${name} and restart warden`,
        ),
      );
    }
    const env: Record<string, string> = {
      PATH: platform().env("PATH") ?? "/usr/bin:/bin",
      LANG: "C.UTF-8",
    };
    for (const [key, value] of Object.entries(request.env ?? {})) {
      if (!ENV_NAME.test(key) || ENV_REFUSED.test(key) || typeof value !== "string" || value.includes("\0")) {
        throw new WardenError(
          "capability_denied",
          problem(
            `Environment variable ${received(key)} refused`,
            "names are upper case; loader, shell and PATH hooks are not allowed",
          ),
        );
      }
      env[key] = value;
    }
    const root = request.root ?? fs.rootIds[0];
    const cwd = await realDirectory(fs, root, request.cwd ?? ".");
    await refuseOutsidePaths(who, fs, cwd, args);
    const timeoutMs = Math.max(1, Math.min(request.timeoutMs ?? DEFAULT_TIMEOUT_MS, deadline - Date.now()));
    const maxOutput = Math.max(1, Math.min(request.maxOutputBytes ?? DEFAULT_OUTPUT, MAX_OUTPUT));
    // The log shows the root's host path as the result does: relative to the root.
    const rootPath = output ? await realDirectory(fs, root, ".") : "";
    const scratch = await platform().fs.makeTempDir("warden-gate-");
    env.HOME = scratch;
    env.TMPDIR = scratch;
    output?.begin(argv, rootPath);
    try {
      const { bwrap } = await this.#probe();
      const result = bwrap
        ? await this.#run(
          bwrap,
          [...bwrapArgs(cwd, scratch), "--", program, ...args],
          env,
          cwd,
          timeoutMs,
          maxOutput,
          request.stdin,
          signal,
          output,
        )
        : await this.#run(program, args, env, cwd, timeoutMs, maxOutput, request.stdin, signal, output);
      output?.end(endedHow(result));
      return await withScratchRemoved(result, scratch);
    } catch (error) {
      output?.end(`it could not run: ${(error as Error)?.message ?? String(error)}`);
      await platform().fs.removeTree(scratch).catch(() => {});
      throw error;
    }
  }

  async #run(
    command: string,
    args: readonly string[],
    env: Record<string, string>,
    cwd: string | null,
    timeoutMs: number,
    maxOutput: number,
    stdin: string | undefined,
    signal?: AbortSignal,
    output?: OutputLog,
  ): Promise<SpawnResult> {
    const started = performance.now();
    const streams = { stdout: new Capture(maxOutput), stderr: new Capture(maxOutput) };
    let timedOut = false;
    const child = await platform().spawnProcess(command, args, {
      env,
      cwd: cwd ?? undefined,
      newProcessGroup: true,
      onStdout: (chunk) => {
        output?.write("stdout", chunk);
        if (!streams.stdout.add(chunk)) stop();
      },
      onStderr: (chunk) => {
        output?.write("stderr", chunk);
        if (!streams.stderr.add(chunk)) stop();
      },
    });
    // A program that floods far past the cap is stopped, not drained forever.
    function stop() {
      if (streams.stdout.flooded || streams.stderr.flooded) child.kill("SIGKILL");
      return undefined;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    // Aborted while the program was being set up: no event will come.
    if (signal?.aborted) onAbort();
    if (stdin !== undefined) child.write(stdin);
    child.end();
    try {
      const exit = await child.exited;
      await child.closed;
      return {
        exitCode: exit.code,
        signal: exit.signal,
        stdout: streams.stdout.text(),
        stderr: streams.stderr.text(),
        stdoutTruncated: streams.stdout.truncated,
        stderrTruncated: streams.stderr.truncated,
        timedOut,
        durationMs: Math.round(performance.now() - started),
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

/** Devices a program may be pointed at: they hold nothing of anyone's. */
const HARMLESS_PATHS = new Set([
  "/dev/null",
  "/dev/zero",
  "/dev/urandom",
  "/dev/random",
  "/dev/stdin",
  "/dev/stdout",
  "/dev/stderr",
]);

/**
 * An argument that names a path outside every root is refused before the
 * program starts: an absolute path, a `~` path, or a relative one that leads
 * out of the root, by `..` or through a symlink; also after `=` (as in
 * `--output=/tmp/x`). Every other argument is read as a path too: one that is
 * not (`-c`, a script) resolves inside the working directory.
 */
async function refuseOutsidePaths(who: string, fs: RootFs, cwd: string, args: readonly string[]): Promise<void> {
  const roots: string[] = [];
  for (const id of fs.rootIds) roots.push(await realDirectory(fs, id, "."));
  for (const arg of args) {
    const eq = arg.indexOf("=");
    for (const text of eq > 0 ? [arg, arg.slice(eq + 1)] : [arg]) {
      if (HARMLESS_PATHS.has(text)) continue;
      const real = text.startsWith("~") ? null : await wouldBe(path.resolve(cwd, text));
      if (real === null || !roots.some((root) => isInside(root, real))) {
        throw new WardenError(
          "capability_denied",
          problem(
            `Argument ${received(arg)} refused for ${who}`,
            "it names a path outside the roots",
            "pass paths inside a root, relative to the working directory",
          ),
        );
      }
    }
  }
}

/**
 * Where `target` is or would be: the real path of its deepest part that
 * exists, with the rest appended, so a symlink on the way counts even when the
 * file itself does not exist yet.
 */
async function wouldBe(target: string): Promise<string> {
  let rest = "";
  for (let at = target;;) {
    try {
      return path.join(await platform().fs.realPath(at), rest);
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return target;
      rest = path.join(path.basename(at), rest);
      at = parent;
    }
  }
}

/**
 * bubblewrap: no network, everything read-only but the scratch directory, its
 * own pid namespace (when bwrap is killed, the kernel kills every process in
 * it, however it forked), and it dies with warden.
 */
function bwrapArgs(cwd: string, scratch: string | null): string[] {
  return [
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-pid",
    "--die-with-parent",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    ...(scratch ? ["--bind", scratch, scratch] : []),
    "--chdir",
    cwd,
  ];
}

/** How a program ended, for the last line of its log. */
function endedHow(result: SpawnResult): string {
  const how = result.timedOut
    ? "killed at its time limit"
    : result.exitCode === null
    ? `killed by ${result.signal ?? "a signal"}`
    : `exit code ${result.exitCode}`;
  return `${how} after ${result.durationMs} ms`;
}

async function withScratchRemoved(result: SpawnResult, scratch: string): Promise<SpawnResult> {
  try {
    await platform().fs.removeTree(scratch);
    return result;
  } catch (error) {
    log("warn", "scratch_left", { error: (error as Error).message });
    return { ...result, scratchLeft: `the scratch directory could not be removed: ${(error as Error).message}` };
  }
}

/** Keeps the first `max` bytes of a stream and counts the rest. */
class Capture {
  readonly #chunks: Uint8Array[] = [];
  #kept = 0;
  #seen = 0;
  constructor(readonly max: number) {}
  /** Returns false when the stream went far past its cap. */
  add(chunk: Uint8Array): boolean {
    this.#seen += chunk.length;
    if (this.#kept < this.max) {
      const part = chunk.subarray(0, this.max - this.#kept);
      this.#chunks.push(part.slice());
      this.#kept += part.length;
    }
    return !this.flooded;
  }
  get truncated(): boolean {
    return this.#seen > this.#kept;
  }
  get flooded(): boolean {
    return this.#seen > this.max * 4 + 65536;
  }
  text(): string {
    const all = new Uint8Array(this.#kept);
    let offset = 0;
    for (const chunk of this.#chunks) {
      all.set(chunk, offset);
      offset += chunk.length;
    }
    return new TextDecoder().decode(all);
  }
}
