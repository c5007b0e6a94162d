// Shared test helpers: start warden the way an agent runtime does (node on
// the build, deno on the source), drive it with the SDK Client, or talk raw
// JSON-RPC lines to it when a test needs to send what a Client never would.
// The SDK's "./*" export maps types to "*.js.d.ts", which do not exist; name them for deno check.
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.d.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.d.ts"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.d.ts"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { DENO_RUN_FLAGS } from "../core/platform/mod.ts";

/** True when this test file runs under deno (from source), false under node (from dist/test). */
export const onDeno = "Deno" in globalThis;
export const runtimeName = onDeno ? "deno" : "node";

/** The repository root: tests run from test/ under deno and from dist/test/ under node. */
export const repoRoot = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "../" : "../../", import.meta.url));

/** The test fixture tools: sources under deno, their build under node. */
export const fixtureToolsDir = path.join(repoRoot, onDeno ? "test/fixtures/tools" : "dist/test/fixtures/tools");

/** The test fixture tools as the commands warden prints load them, on both runtimes: their build. */
export const builtFixtureToolsDir = path.join(repoRoot, "dist/test/fixtures/tools");

/** Fixture directory of deliberately broken tools, by case name. */
export function brokenToolsDir(name: string): string {
  return path.join(repoRoot, onDeno ? "test/fixtures/broken" : "dist/test/fixtures/broken", name);
}

/** The command line that starts warden with `args` on the runtime running the tests. */
export function wardenCommand(
  args: readonly string[] = [],
  denoFlags: readonly string[] = [],
): { command: string; args: string[] } {
  if (onDeno) {
    return {
      command: process.execPath,
      args: ["run", ...DENO_RUN_FLAGS, ...denoFlags, path.join(repoRoot, "core/main.ts"), ...args],
    };
  }
  return { command: process.execPath, args: [path.join(repoRoot, "dist/core/main.js"), ...args] };
}

/** The plugins directory of every child warden unless a test names another: empty. */
export const NO_PLUGINS = path.join(repoRoot, ".test-tmp", "no-plugins");

/** The user config and state directories of every child warden (XDG_CONFIG_HOME, XDG_STATE_HOME), never the real user's. */
export const TEST_XDG = {
  config: path.join(repoRoot, ".test-tmp", `xdg-config-${runtimeName}`),
  state: path.join(repoRoot, ".test-tmp", `xdg-state-${runtimeName}`),
};

/**
 * Environment for a child warden: the parent's, less anything WARDEN_* or XDG_*, plus `extra`. The user's
 * directories are the test's own (TEST_XDG), so that no test reads or writes the real ~/.config/warden or
 * ~/.local/state/warden. A plugins directory stays empty unless a test names one, so that refusal lines do not reach
 * every test's stderr.
 */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  // An existing, empty directory: a plugins directory a setting names but that is missing gets a warning.
  mkdirSync(NO_PLUGINS, { recursive: true });
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("WARDEN_") && !key.startsWith("XDG_")) env[key] = value;
  }
  return {
    ...env,
    XDG_CONFIG_HOME: TEST_XDG.config,
    XDG_STATE_HOME: TEST_XDG.state,
    WARDEN_PLUGINS_DIR: NO_PLUGINS,
    WARDEN_LEDGER: path.join(repoRoot, ".test-tmp", `ledger-${runtimeName}`),
    WARDEN_JOBS_DIR: path.join(repoRoot, ".test-tmp", `jobs-${runtimeName}`),
    ...extra,
  };
}

/**
 * For childEnv's `extra`: the user's directories `config` and `state` (XDG_CONFIG_HOME, XDG_STATE_HOME; "" is unset)
 * and the path settings childEnv fixes unset again, so that every path takes its default under them.
 */
export function defaultPathsUnder(config: string, state: string): Record<string, string> {
  return {
    XDG_CONFIG_HOME: config,
    XDG_STATE_HOME: state,
    WARDEN_PLUGINS_DIR: "",
    WARDEN_LEDGER: "",
    WARDEN_JOBS_DIR: "",
  };
}

/** A connected SDK Client and what the server wrote to stderr. */
export interface Session {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  stderr(): string;
  close(): Promise<void>;
}

/** Starts warden and connects the SDK Client to it over stdio, as an agent does. */
export async function connect(
  options: {
    args?: string[];
    env?: Record<string, string>;
    cwd?: string;
    capabilities?: Record<string, unknown>;
    /** Called with the client before it connects: to answer the server's requests (roots/list). */
    setup?: (client: Client) => void;
    /** Runs warden inside another command (e.g. a bubblewrap sandbox): given warden's command line, returns the one to run. */
    wrap?: (command: string, args: string[]) => { command: string; args: string[] };
  } = {},
): Promise<Session> {
  const plain = wardenCommand(options.args ?? []);
  const { command, args } = options.wrap ? options.wrap(plain.command, plain.args) : plain;
  const transport = new StdioClientTransport({
    command,
    args,
    env: childEnv(options.env),
    cwd: options.cwd ?? repoRoot,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => (stderr += new TextDecoder().decode(chunk)));
  const client = new Client({ name: "warden-test", version: "1.0.0" }, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  try {
    await client.connect(transport);
  } catch (error) {
    // A server that started but did not complete initialize must not outlive the test.
    await transport.close().catch(() => {});
    throw new Error(`${(error as Error).message}; warden's stderr:\n${stderr}`);
  }
  return {
    client,
    transport,
    stderr: () => stderr,
    close: () => client.close(),
  };
}

/** A raw line-level conversation with a warden process. */
export interface RawSession {
  send(line: string): void;
  /** Sends a JSON-RPC message. */
  request(message: Record<string, unknown>): void;
  /** Waits for the next stdout line that parses to a message matching `predicate`. */
  next(predicate?: (message: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Every stdout line so far, as written. */
  lines(): string[];
  stderr(): string;
  /** Writes `last` (as is: a line without its newline, if so) and ends stdin. */
  closeStdin(last?: string): void;
  /**
   * Resolves, once stdout and stderr are read to their end, with the exit code
   * and the milliseconds from stdin's end to the exit.
   */
  exited(): Promise<{ code: number | null; msAfterStdinClosed: number }>;
  pid: number;
  kill(): void;
}

/** Starts warden with plain pipes, for what the SDK Client cannot send. */
export function startRaw(options: { args?: string[]; env?: Record<string, string>; cwd?: string } = {}): RawSession {
  const { command, args } = wardenCommand(options.args ?? []);
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: childEnv(options.env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const parsed: Record<string, unknown>[] = [];
  const waiters: {
    predicate: (m: Record<string, unknown>) => boolean;
    resolve: (m: Record<string, unknown>) => void;
  }[] = [];
  let buffer = "";
  let stderr = "";
  let closedAt = 0;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      lines.push(line);
      // A line that does not parse is kept in lines() for the test to fail on.
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      const waiter = waiters.findIndex((w) => w.predicate(message));
      if (waiter !== -1) waiters.splice(waiter, 1)[0].resolve(message);
      else parsed.push(message);
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  let exitedAfter = -1;
  child.on("exit", () => (exitedAfter = closedAt ? performance.now() - closedAt : -1));
  const exit = new Promise<{ code: number | null; msAfterStdinClosed: number }>((resolve) => {
    child.on("close", (code) => resolve({ code, msAfterStdinClosed: exitedAfter }));
  });
  return {
    pid: child.pid ?? -1,
    send: (line) => child.stdin.write(line + "\n"),
    request: (message) => child.stdin.write(JSON.stringify(message) + "\n"),
    next(predicate = () => true, timeoutMs = 10_000) {
      const index = parsed.findIndex(predicate);
      if (index !== -1) return Promise.resolve(parsed.splice(index, 1)[0]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`No matching message within ${timeoutMs} ms; stderr:\n${stderr}`)),
          timeoutMs,
        );
        waiters.push({
          predicate,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    lines: () => [...lines],
    stderr: () => stderr,
    closeStdin(last) {
      closedAt = performance.now();
      child.stdin.end(last);
    },
    exited: () => exit,
    kill: () => child.kill("SIGKILL"),
  };
}

/** The initialize request a client sends first. */
export function initializeMessage(id: number, protocolVersion = "2025-11-25"): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw-test", version: "1.0.0" } },
  };
}

/** Runs warden as a shell command and collects its output. */
export function runWarden(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; denoFlags?: string[] } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { command, args: full } = wardenCommand(args, options.denoFlags);
  const child = spawn(command, full, {
    cwd: options.cwd ?? repoRoot,
    env: childEnv(options.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** A fresh temporary directory (real path), removed by the returned function. */
export function tempDir(prefix = "warden-test-"): { dir: string; remove: () => void } {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Makes a FIFO at `file` (coreutils' mkfifo). */
export function mkfifo(file: string): void {
  const made = spawnSync("mkfifo", [file]);
  if (made.status !== 0) throw new Error(`mkfifo failed (coreutils is needed): ${made.stderr}`);
}

/** Polls `check` every 20 ms until it returns true or `timeoutMs` passes; returns its last answer. */
export async function eventually(check: () => boolean, timeoutMs = 5000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!check() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return check();
}

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  const content = (result as { content?: unknown }).content as { type: string; text?: string }[] | undefined;
  return content?.[0]?.text ?? "";
}

/**
 * bubblewrap's path, for the tests that run warden in a sandbox of their own (a network, a tmpfs, a read-only disk);
 * undefined, the test skipped with why (failed under CI, which installs it), where it is not installed.
 */
export function bwrapOrSkip(t: { skip(message?: string): void }): string | undefined {
  const found = bwrapPath();
  if (!found) skipOrFail(t, BWRAP_MISSING);
  return found;
}

/** bubblewrap's path in PATH, if it is installed. */
export function bwrapPath(): string | undefined {
  return (process.env.PATH ?? "").split(path.delimiter).map((d) => path.join(d, "bwrap")).find((p) => existsSync(p));
}

/** Why a test that needs bubblewrap did not run, and how to make it run. */
export const BWRAP_MISSING =
  "needs bubblewrap (bwrap) to run warden in a sandbox of its own: apt-get install bubblewrap (CI installs it)";

/** One word for sh, quoted. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * Skips a test that needs something this machine lacks, saying what; under CI (`CI=true`), which installs
 * everything the tests need, the same lack fails the test instead, so no test is skipped unseen.
 */
export function skipOrFail(t: { skip(message?: string): void }, why: string): void {
  if (process.env.CI === "true") throw new Error(`CI installs everything the tests need, yet: ${why}`);
  t.skip(why);
}

/**
 * Runs a program (git, mostly) in `cwd` with no system or global git configuration, so fixture repositories are the
 * same on every machine; its stdout, or a throw with its stderr when it fails.
 */
export function sh(cwd: string, ...argv: string[]): string {
  const run = spawnSync(argv[0], argv.slice(1), {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  });
  if (run.status !== 0) throw new Error(`${argv.join(" ")} failed: ${run.stderr}`);
  return run.stdout;
}

/** Runs the real ssh-keygen to its end; throws with its stderr when it fails. Its stdout. */
export function sshKeygen(...args: string[]): string {
  const result = spawnSync("ssh-keygen", args, { encoding: "utf8" });
  if (result.error) throw new Error(`ssh-keygen did not run (apt-get install openssh-client): ${result.error.message}`);
  if (result.status !== 0) throw new Error(`ssh-keygen ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

/**
 * Writes a plugin `id` of one tool, `echo`, in `dir`: its entry and its canonical (RFC 8785: keys sorted, no spaces)
 * manifest, signed with `key` in warden's plugin namespace by ssh-keygen itself. Returns the manifest's digest, as a
 * lock pins it. With `project`, echo also takes `project_id` and answers the one the host settled.
 */
export function writeSignedEchoPlugin(dir: string, id: string, key: string, project = false): string {
  mkdirSync(dir, { recursive: true });
  const entry = project
    ? `export const tools = { echo: async (args) => ({ text: args.text, project_id: args.project_id }) };\n`
    : `export const tools = { echo: async (args) => ({ text: args.text }) };\n`;
  writeFileSync(path.join(dir, "plugin.js"), entry);
  const manifest = JSON.stringify({
    author: "tests",
    capabilities: { readRoots: ["*"] },
    description: `Test plugin ${id}.`,
    entry: { path: "plugin.js", sha256: createHash("sha256").update(entry).digest("hex") },
    id,
    risk: "read",
    schemaVersion: 1,
    tools: [{
      description: "Echoes.",
      inputSchema: {
        additionalProperties: false,
        properties: project
          ? { project_id: { type: "string" }, text: { type: "string" } }
          : { text: { type: "string" } },
        required: ["text"],
        type: "object",
      },
      name: "echo",
      title: "Echo",
    }],
    version: "1.0.0",
  });
  writeFileSync(path.join(dir, "manifest.json"), manifest);
  sshKeygen("-Y", "sign", "-q", "-n", "warden-plugin-v1", "-f", key, path.join(dir, "manifest.json"));
  return `sha256:${createHash("sha256").update(manifest).digest("hex")}`;
}

/** A `warden serve --http` a test started. */
export interface HttpServer {
  readonly port: number;
  readonly url: URL;
  stderr(): string;
  stdout(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: "SIGTERM" | "SIGINT"): Promise<number | null>;
}

/** Starts `warden serve --http --port 0` with `args`, resolving once its `listening` line names the port. */
export function startHttp(args: string[] = [], env: Record<string, string> = {}, fixtures = true): Promise<HttpServer> {
  const { command, args: full } = wardenCommand(["serve", "--http", "--port", "0", ...args]);
  const child = spawn(command, full, {
    env: childEnv({ ...(fixtures && { WARDEN_TOOLS_DIR: fixtureToolsDir }), ...env }),
  });
  let stderr = "";
  let stdout = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      const port = /"event":"listening".*?"port":(\d+)/.exec(stderr)?.[1];
      if (port !== undefined) {
        resolve({
          port: Number(port),
          url: new URL(`http://127.0.0.1:${port}/mcp`),
          stderr: () => stderr,
          stdout: () => stdout,
          stop: (signal = "SIGTERM") => {
            // Not child.kill: deno's node:child_process then reports the exit as by that signal, whatever the code.
            process.kill(child.pid!, signal);
            return exited;
          },
        });
      }
    });
    void exited.then((code) => reject(new Error(`warden exited (${code}) before listening:\n${stderr}`)));
  });
}

/** The SDK Client over Streamable HTTP, with a bearer token when given, and these headers on every request. */
export async function httpClient(url: URL, token?: string, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } },
  });
  const client = new Client({ name: "warden-http-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** What a raw HTTP request was answered: status, headers and body text. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/**
 * One HTTP request to 127.0.0.1:`port` with exactly these headers (node:http lets a test set Host, which fetch does
 * not): by default a POST to /mcp with MCP's content type, accept and protocol version headers.
 */
export function rawHttp(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      method: options.method ?? "POST",
      path: options.path ?? "/mcp",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        ...options.headers,
      },
    }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A loopback port nobody listens on now (a server a test starts a moment later may take it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    }).on("error", reject);
  });
}
