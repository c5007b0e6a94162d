// Shared by the benchmarks in scripts/bench/: the peer workspace, the
// contenders, spawning MCP servers over stdio and talking raw JSON-RPC lines
// to them, statistics, and markdown tables. Plain JavaScript: node 20 runs it
// without a TypeScript loader.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
/** Scratch space for the benchmarks (gitignored). */
export const benchDir = path.join(repoRoot, ".bench");
/** Where the peers run: outside the reach of the repository's deno.json "imports". */
export const peersDir = path.join(benchDir, "peers");
const peerSources = fileURLToPath(new URL("./peers/", import.meta.url));

/** The protocol version every contender is initialized with. */
export const PROTOCOL_VERSION = "2025-11-25";

/** warden's test fixture tools (fixture_echo and the rest) as each runtime loads them: node the build, deno the source. */
export const fixtureTools = Object.freeze({
  node: path.join(repoRoot, "dist/test/fixtures/tools"),
  deno: path.join(repoRoot, "test/fixtures/tools"),
});
/**
 * The permission flags `deno task start` grants warden, read from deno.json
 * (a test keeps that task equal to core/platform/mod.ts DENO_RUN_FLAGS).
 */
export const WARDEN_DENO_FLAGS = JSON.parse(readFileSync(path.join(repoRoot, "deno.json"), "utf8"))
  .tasks.start.split(" ")
  .filter((word) => word.startsWith("--"));

// ---------------------------------------------------------------------------
// Command line

/**
 * Parses `--name value`, `--name=value` and bare `--flag` against `defaults`:
 * numbers stay numbers, booleans are switches, strings take the next word.
 */
export function parseFlags(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--")) fail(`unexpected argument "${arg}"`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (name === "help") {
      const usage = Object.entries(defaults).map(([k, v]) => `  --${k} ${typeof v === "boolean" ? "" : `<${v}>`}`);
      process.stdout.write(`Flags (default in <>):\n${usage.join("\n")}\n`);
      process.exit(0);
    }
    const key = name.replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(key in defaults)) {
      fail(`unknown flag --${name}; known: ${Object.keys(defaults).map((k) => `--${k}`).join(" ")}`);
    }
    let value = eq === -1 ? undefined : arg.slice(eq + 1);
    if (typeof defaults[key] === "boolean") {
      out[key] = value === undefined ? true : value !== "false";
      continue;
    }
    if (value === undefined) value = argv[++i];
    if (value === undefined) fail(`--${name} needs a value`);
    if (typeof defaults[key] === "number") {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) fail(`--${name} takes a positive integer, received "${value}"`);
      out[key] = n;
    } else out[key] = value;
  }
  return out;
}

/** Runtimes named by `--runtime node|deno|both`. */
export function runtimesOf(flag) {
  if (flag === "both") return ["node", "deno"];
  if (flag === "node" || flag === "deno") return [flag];
  return fail(`--runtime takes node, deno or both, received "${flag}"`);
}

export function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  killAll();
  process.exit(2);
}

/** Progress for the reader, on stderr so stdout stays a clean markdown report. */
export function note(message) {
  process.stderr.write(`${message}\n`);
}

// ---------------------------------------------------------------------------
// Runtimes, build and peer workspace

export function denoBinary() {
  const direct = path.join(repoRoot, "node_modules/@deno/linux-x64-glibc/deno");
  if (existsSync(direct)) return direct;
  const shim = path.join(repoRoot, "node_modules/.bin/deno");
  if (existsSync(shim)) return shim;
  return fail("no deno binary under node_modules (expected node_modules/@deno/linux-x64-glibc/deno)");
}

function versionOf(dir, name) {
  try {
    return JSON.parse(readFileSync(path.join(dir, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}

function newestMtime(dir, suffix) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(suffix)) {
      newest = Math.max(newest, statSync(path.join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/** Refuses to run against a missing build and warns about a stale one (it never builds: dist/ may be in use). */
export function ensureBuilt({ tests = false } = {}) {
  const main = path.join(repoRoot, "dist/core/main.js");
  const echo = path.join(repoRoot, "dist/test/fixtures/tools/fixture_echo.js");
  if (!existsSync(main)) fail("dist/core/main.js is missing: run `npm run build` first");
  if (tests && !existsSync(echo)) {
    fail("dist/test/fixtures/tools is missing: run `node scripts/build.mjs --tests` first");
  }
  const source = Math.max(
    newestMtime(path.join(repoRoot, "core"), ".ts"),
    newestMtime(path.join(repoRoot, "tools"), ".ts"),
  );
  if (source > statSync(main).mtimeMs) {
    note("bench: warning: core/ or tools/ changed after dist/ was built; node numbers are for the old build");
  }
}

/**
 * Prepares .bench/peers/: the peer servers next to a package.json of their
 * own and their node_modules (the SDK at the repository's version, FastMCP,
 * zod). No deno.json there: deno still sees the repository's deno.json above,
 * but as an unrelated workspace, so its "imports" map does not apply; this is
 * checked by `verifyDenoPeerResolution`.
 */
export function preparePeers() {
  mkdirSync(peersDir, { recursive: true });
  for (const name of readdirSync(peerSources)) {
    if (name.endsWith(".mjs")) copyFileSync(path.join(peerSources, name), path.join(peersDir, name));
  }
  const sdkVersion = versionOf(repoRoot, "@modelcontextprotocol/sdk");
  if (!sdkVersion) fail("node_modules/@modelcontextprotocol/sdk is missing in the repository");
  const installed = versionOf(peersDir, "@modelcontextprotocol/sdk") === sdkVersion &&
    versionOf(peersDir, "fastmcp") && versionOf(peersDir, "zod");
  if (!installed) {
    const manifest = path.join(peersDir, "package.json");
    if (!existsSync(manifest)) {
      writeFileSync(manifest, `${JSON.stringify({ type: "module", private: true }, null, 2)}\n`);
    }
    note(`bench: installing the peers' dependencies into ${path.relative(repoRoot, peersDir)}/ ...`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const result = spawnSync(
      npm,
      [
        "install",
        "--prefix",
        peersDir,
        "--no-audit",
        "--no-fund",
        "--save-exact",
        `@modelcontextprotocol/sdk@${sdkVersion}`,
        "fastmcp",
        "zod",
      ],
      { stdio: ["ignore", "inherit", "inherit"], cwd: peersDir },
    );
    if (result.status !== 0) fail(`npm install in ${peersDir} failed (status ${result.status})`);
  }
  // FastMCP brings its own SDK copy if its range does not admit ours; say so.
  const nestedSdk = versionOf(path.join(peersDir, "node_modules/fastmcp"), "@modelcontextprotocol/sdk");
  return {
    sdk: sdkVersion,
    fastmcp: versionOf(peersDir, "fastmcp"),
    zod: versionOf(peersDir, "zod"),
    fastmcpSdk: nestedSdk ?? sdkVersion,
  };
}

/** Fails unless deno resolves the SDK specifiers of .bench/peers/ to .bench/peers/node_modules. */
export function verifyDenoPeerResolution(deno) {
  const probe = path.join(peersDir, "_resolve_probe.mjs");
  writeFileSync(
    probe,
    'for (const s of ["@modelcontextprotocol/sdk/server/index.js", "@modelcontextprotocol/sdk/types.js", "fastmcp"]) console.log(import.meta.resolve(s));\n',
  );
  const result = spawnSync(deno, ["run", "-A", probe], { cwd: peersDir, encoding: "utf8" });
  const expected = new URL(`file://${path.join(peersDir, "node_modules")}/`).href;
  const lines = result.stdout.trim().split("\n");
  if (result.status !== 0 || lines.length !== 3 || !lines.every((line) => line.startsWith(expected))) {
    fail(
      `deno resolves the peers' imports elsewhere than ${expected}:\n${result.stdout}${result.stderr}` +
        "(the repository's deno.json imports map must not apply to .bench/peers/)",
    );
  }
}

/**
 * Environment for a child: the parent's, less anything WARDEN_* or XDG_*, plus `extra`. The user's config and state
 * directories (plugins, trust, ledger, jobs) are the bench's own under .bench/, never the real user's.
 */
export function childEnv(extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("WARDEN_") && !key.startsWith("XDG_")) env[key] = value;
  }
  return {
    ...env,
    XDG_CONFIG_HOME: path.join(repoRoot, ".bench", "xdg-config"),
    XDG_STATE_HOME: path.join(repoRoot, ".bench", "xdg-state"),
    ...extra,
  };
}

/**
 * The command lines of warden and its peers on one runtime. `wardenArgs` and
 * `wardenEnv` are added to warden's; each contender names the tool and
 * arguments its round trip calls.
 */
export function contendersFor(runtime, { wardenArgs = [], wardenEnv = {}, peers = ["bare", "fastmcp"] } = {}) {
  const node = process.execPath;
  const deno = runtime === "deno" ? denoBinary() : undefined;
  const list = [{
    runtime,
    name: "warden",
    command: runtime === "node" ? node : deno,
    args: runtime === "node"
      ? [path.join(repoRoot, "dist/core/main.js"), ...wardenArgs]
      : ["run", ...WARDEN_DENO_FLAGS, "core/main.ts", ...wardenArgs],
    cwd: repoRoot,
    env: childEnv(wardenEnv),
    tool: { name: "fixture_echo", arguments: { text: "hi" } },
  }];
  const peerFiles = { bare: ["bare SDK", "bare_sdk_server.mjs"], fastmcp: ["FastMCP", "fastmcp_server.mjs"] };
  for (const peer of peers) {
    const [name, file] = peerFiles[peer];
    list.push({
      runtime,
      name,
      baseline: peer === "bare",
      command: runtime === "node" ? node : deno,
      args: runtime === "node" ? [file] : ["run", "-A", file],
      cwd: peersDir,
      env: childEnv(),
      tool: { name: "echo", arguments: { text: "hi" } },
    });
  }
  return list;
}

/** Versions and machine facts, as a markdown preamble. */
export function environmentLines(runtimes, peerVersions) {
  const lines = [`- node ${process.versions.node}`];
  if (runtimes.includes("deno")) {
    const out = spawnSync(denoBinary(), ["--version"], { encoding: "utf8" }).stdout ?? "";
    lines.push(`- ${out.split("\n")[0] || "deno (version unknown)"}`);
  }
  if (peerVersions) {
    lines.push(
      `- @modelcontextprotocol/sdk ${peerVersions.sdk}, fastmcp ${peerVersions.fastmcp} (on SDK ${peerVersions.fastmcpSdk}), zod ${peerVersions.zod}`,
    );
  }
  const load = os.loadavg().map((n) => n.toFixed(2)).join(" ");
  lines.push(`- ${os.cpus().length} CPUs (${os.cpus()[0]?.model?.trim() ?? "unknown"}), load average ${load}`);
  return lines;
}

// ---------------------------------------------------------------------------
// Servers over stdio

const live = new Set();

/** Kills every child still running (on exit, on a signal, on failure). */
export function killAll() {
  for (const child of live) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
  live.clear();
}
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

/**
 * Spawns an MCP server with plain pipes. `spawnedAt` is taken right before
 * the spawn; each response is stamped the moment its line is parsed.
 */
export function startServer(contender) {
  const spawnedAt = performance.now();
  const child = spawn(contender.command, contender.args, {
    cwd: contender.cwd,
    env: contender.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  const pending = new Map();
  let nextId = 1;
  let buffer = "";
  let stderr = "";
  let exited = false;
  const exit = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      exited = true;
      live.delete(child);
      const error = new Error(
        `${contender.runtime} ${contender.name} exited (code ${code}, signal ${signal}); stderr:\n${
          stderr.slice(-2000)
        }`,
      );
      for (const { reject, timer } of pending.values()) {
        clearTimeout(timer);
        reject(error);
      }
      pending.clear();
      resolve({ code, signal });
    });
  });
  child.on("error", (error) => fail(`cannot start ${contender.command}: ${error.message}`));
  child.stdin.on("error", () => {/* the child went away; its exit reports it */});
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    const at = performance.now();
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      const waiter = message && "id" in message && !("method" in message) ? pending.get(message.id) : undefined;
      if (!waiter) continue; // notifications and requests from the server are not measured
      pending.delete(message.id);
      clearTimeout(waiter.timer);
      if (message.error) waiter.reject(new Error(`${contender.name}: ${JSON.stringify(message.error)}`));
      else waiter.resolve({ result: message.result, at });
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-8000);
  });

  const write = (message) => child.stdin.write(`${JSON.stringify(message)}\n`);
  return {
    contender,
    spawnedAt,
    pid: child.pid,
    /** Sends a request; resolves with its result and the time its response line arrived. */
    request(method, params, timeoutMs = 30_000) {
      if (exited) return Promise.reject(new Error(`${contender.name} is not running; stderr:\n${stderr}`));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${contender.runtime} ${contender.name}: no answer to ${method} within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, { resolve, reject, timer });
        write({ jsonrpc: "2.0", id, method, params });
      });
    },
    notify(method, params) {
      write(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params });
    },
    /** Closes stdin, waits up to `graceMs` for the exit, then kills. */
    async stop(graceMs = 1000) {
      if (!exited) {
        child.stdin.end();
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exit;
        clearTimeout(timer);
      }
    },
    stderr: () => stderr,
  };
}

export const initializeParams = Object.freeze({
  protocolVersion: PROTOCOL_VERSION,
  capabilities: {},
  clientInfo: { name: "warden-bench", version: "1.0.0" },
});

/** Starts a server and completes the initialize handshake. */
export async function startInitialized(contender, timeoutMs = 30_000) {
  const server = startServer(contender);
  try {
    await server.request("initialize", initializeParams, timeoutMs);
    server.notify("notifications/initialized");
  } catch (error) {
    await server.stop(0);
    throw error;
  }
  return server;
}

/** One cold start: spawn, write initialize at once, time the response line, stop. */
export async function coldStart(contender) {
  const server = startServer(contender);
  try {
    const { at } = await server.request("initialize", initializeParams, 30_000);
    return at - server.spawnedAt;
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------
// Statistics and output

/** Linear-interpolated quantile, q in [0, 1]. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
export const median = (values) => quantile(values, 0.5);
export const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Per-call statistics of alternating blocks: "median" and "mean" are the
 * medians over blocks of each block's median and mean; quantiles over all calls.
 */
export function blockStats(blocks) {
  const all = blocks.flat();
  return {
    median: median(blocks.map(median)),
    mean: median(blocks.map(mean)),
    p10: quantile(all, 0.1),
    p90: quantile(all, 0.9),
    p99: quantile(all, 0.99),
  };
}

/** The contenders in a different order each round, so none always goes first. */
export function rotate(list, by) {
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

export const fixed = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
export const ratio = (a, b) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "n/a");

/** A markdown table; columns whose header starts with ">" are right-aligned. */
export function markdownTable(headers, rows) {
  const right = headers.map((h) => h.startsWith(">"));
  const names = headers.map((h) => h.replace(/^>/, ""));
  const cells = rows.map((row) => row.map(String));
  const widths = names.map((h, i) => Math.max(h.length, 3, ...cells.map((r) => r[i].length)));
  const pad = (text, i) => (right[i] ? text.padStart(widths[i]) : text.padEnd(widths[i]));
  const line = (row) => `| ${row.map(pad).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (right[i] ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`;
  return [line(names), rule, ...cells.map(line)].join("\n");
}

export function print(text = "") {
  process.stdout.write(`${text}\n`);
}

/** The packed tarball of an npm package spec, `npm pack`ed once into .bench/code-intel/pkgs/ (shared by the benches). */
export function packedTarball(spec) {
  const packsDir = path.join(benchDir, "code-intel", "pkgs");
  mkdirSync(packsDir, { recursive: true });
  let tarball = readdirSync(packsDir).find((f) => f.startsWith(`${spec}-`) && f.endsWith(".tgz"));
  if (!tarball) {
    note(`bench: npm pack ${spec} ...`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const result = spawnSync(npm, ["pack", spec, "--silent"], { cwd: packsDir, encoding: "utf8" });
    if (result.status !== 0) fail(`npm pack ${spec} failed: ${result.stderr}`);
    tarball = result.stdout.trim().split("\n").pop();
  }
  return { name: tarball.replace(/\.tgz$/, ""), file: path.join(packsDir, tarball) };
}
