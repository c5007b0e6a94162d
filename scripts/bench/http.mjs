// `warden serve --http` against the SDK's own stateless Streamable HTTP example
// server (peers/sdk_http_server.mjs), per runtime, both running side by side:
// the tools/call round trip of a trivial tool (median and p99, sequential
// calls on one keep-alive connection), the throughput of 64 clients calling at
// once, and each server's resident memory after 100,000 calls. Blocks of each
// measure alternate between the two, so that noise on the machine falls on
// both. warden runs as shipped: its ledger writes a row per call.
//
//   node scripts/bench/http.mjs [--calls 2000] [--blocks 10] [--clients 64] [--throughput 4000] [--rss-calls 100000] [--runtime node|deno|both]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  blockStats,
  childEnv,
  denoBinary,
  ensureBuilt,
  environmentLines,
  fail,
  fixed,
  fixtureTools,
  markdownTable,
  median,
  note,
  parseFlags,
  peersDir,
  preparePeers,
  print,
  ratio,
  repoRoot,
  rotate,
  runtimesOf,
  verifyDenoPeerResolution,
  WARDEN_DENO_FLAGS,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), {
  calls: 2000,
  blocks: 10,
  clients: 64,
  throughput: 4000,
  rssCalls: 100000,
  runtime: "both",
});
const runtimes = runtimesOf(flags.runtime);
ensureBuilt({ tests: runtimes.includes("node") });
const peerVersions = preparePeers();
if (runtimes.includes("deno")) verifyDenoPeerResolution(denoBinary());

/** Starts a contender and resolves once its `listening` line names its port. */
function start(contender) {
  const child = spawn(contender.command, contender.args, { cwd: contender.cwd, env: contender.env });
  let stderr = "";
  child.stdout.resume();
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      stderr = (stderr + chunk).slice(-8000);
      const port = /"event":"listening".*?"port":(\d+)/.exec(stderr)?.[1];
      if (port !== undefined && !contender.port) {
        contender.port = Number(port);
        resolve({ ...contender, child, stderr: () => stderr });
      }
    });
    child.on("exit", (code) => reject(new Error(`${contender.name} exited (${code}):\n${stderr}`)));
    setTimeout(() => reject(new Error(`${contender.name} did not say it listens within 30 s:\n${stderr}`)), 30_000)
      .unref();
  });
}

function contendersFor(runtime, ledger) {
  const deno = runtime === "deno" ? denoBinary() : undefined;
  return [
    {
      name: "warden",
      command: runtime === "node" ? process.execPath : deno,
      args: [
        ...(runtime === "node"
          ? [path.join(repoRoot, "dist/core/main.js")]
          : ["run", ...WARDEN_DENO_FLAGS, "core/main.ts"]),
        "serve",
        "--http",
        "--port",
        "0",
        "--max-calls",
        String(Math.max(16, flags.clients)),
      ],
      cwd: repoRoot,
      env: childEnv({ WARDEN_TOOLS_DIR: fixtureTools[runtime], WARDEN_LEDGER: ledger }),
      tool: "fixture_echo",
    },
    {
      name: "SDK HTTP example",
      baseline: true,
      command: runtime === "node" ? process.execPath : deno,
      args: runtime === "node" ? ["sdk_http_server.mjs"] : ["run", "-A", "sdk_http_server.mjs"],
      cwd: peersDir,
      env: childEnv(),
      tool: "echo",
    },
  ];
}

/** One tools/call over a keep-alive `agent`; resolves with its round trip in µs once the whole answer is read. */
function call(server, agent, id) {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: server.tool, arguments: { text: "hi" } },
  });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port: server.port,
      path: "/mcp",
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "content-length": Buffer.byteLength(body),
      },
    }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk) => (text += chunk));
      res.on("end", () => {
        if (res.statusCode !== 200 || !text.includes('"hi')) {
          reject(new Error(`${server.name}: ${res.statusCode} ${text.slice(0, 300)}`));
        } else resolve((performance.now() - started) * 1000);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** `n` calls from `clients` clients at once (each sends its next when answered): calls per second. */
async function burst(server, agent, n) {
  let sent = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: flags.clients }, async () => {
    while (sent < n) await call(server, agent, ++sent);
  }));
  return n / ((performance.now() - started) / 1000);
}

/** Resident memory of a process, in MiB (Linux /proc). */
function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

const perBlock = Math.ceil(flags.calls / flags.blocks);
const results = [];
for (const runtime of runtimes) {
  const ledger = mkdtempSync(path.join(tmpdir(), "warden-bench-http-"));
  const servers = [];
  try {
    for (const contender of contendersFor(runtime, ledger)) servers.push(await start(contender));
    note(`http: ${runtime}: ${servers.map((s) => `${s.name} on ${s.port}`).join(", ")}`);
    const agents = new Map(servers.map((s) => [s, new Agent({ keepAlive: true, maxSockets: flags.clients })]));
    for (const server of servers) for (let i = 0; i < 200; i++) await call(server, agents.get(server), i);
    const latency = new Map(servers.map((s) => [s, []]));
    const rates = new Map(servers.map((s) => [s, []]));
    for (let block = 0; block < flags.blocks; block++) {
      for (const server of rotate(servers, block)) {
        const times = [];
        for (let i = 0; i < perBlock; i++) times.push(await call(server, agents.get(server), i));
        latency.get(server).push(times);
        rates.get(server).push(await burst(server, agents.get(server), flags.throughput));
      }
    }
    // Memory: each server after at least rss-calls calls in all (those above count).
    const done = flags.blocks * (perBlock + flags.throughput) + 200;
    const rss = new Map();
    for (const server of servers) {
      if (flags.rssCalls > done) await burst(server, agents.get(server), flags.rssCalls - done);
      rss.set(server, rssMb(server.child.pid));
    }
    results.push({ runtime, servers, latency, rates, rss });
  } finally {
    for (const server of servers) server.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 500));
    rmSync(ledger, { recursive: true, force: true });
  }
}

print("## Streamable HTTP: warden against the SDK's example server");
print();
print(
  `Stateless Streamable HTTP on loopback, a trivial tool (warden's fixture_echo, the peer's echo), keep-alive connections. Round trip: ${flags.blocks} blocks of ${perBlock} sequential calls, µs from the request to the end of its answer (an SSE stream for both), median and p99 over each block, then the median of blocks. Throughput: in the same turns, ${flags.clients} clients calling at once, ${flags.throughput} calls a block, median calls/s. RSS: each server's resident memory after ${flags.rssCalls} calls. Targets: warden ≤ 1.0× the peer's latency and ≥ 1.0× its throughput.`,
);
print();
for (const line of environmentLines(runtimes, peerVersions)) print(line);
const verdicts = [];
for (const { runtime, servers, latency, rates, rss } of results) {
  const stats = new Map(servers.map((s) => [s, blockStats(latency.get(s))]));
  const base = servers.find((s) => s.baseline);
  const warden = servers.find((s) => !s.baseline);
  const rate = (s) => median(rates.get(s));
  print();
  print(`### ${runtime}`);
  print();
  print(markdownTable(
    ["server", ">median µs", ">p99 µs", ">latency vs peer", ">calls/s", ">throughput vs peer", ">RSS MiB"],
    servers.map((s) => [
      s.name,
      fixed(stats.get(s).median, 0),
      fixed(stats.get(s).p99, 0),
      ratio(stats.get(s).median, stats.get(base).median),
      fixed(rate(s), 0),
      ratio(rate(s), rate(base)),
      fixed(rss.get(s), 1),
    ]),
  ));
  const latencyRatio = stats.get(warden).median / stats.get(base).median;
  const throughputRatio = rate(warden) / rate(base);
  verdicts.push(
    `- ${runtime}: latency ${latencyRatio.toFixed(2)}× (≤ 1.0×: **${latencyRatio <= 1 ? "met" : "NOT met"}**), ` +
      `throughput ${throughputRatio.toFixed(2)}× (≥ 1.0×: **${throughputRatio >= 1 ? "met" : "NOT met"}**)`,
  );
}
print();
print("### Verdict");
print();
for (const line of verdicts) print(line);
if (results.length === 0) fail("no runtime measured");
process.exit(0);
