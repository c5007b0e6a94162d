// What governance costs: the policy check and the ledger row on a trivial
// call, timed in-process from the call's start to its result, as a share of
// warden's tools/call round trip of a trivial tool over stdio measured in the
// same run (as roundtrip.mjs does; target ≤ 5%); the ledger's own CPU per
// call apart from its write (target ≤ 5 µs); the throughput of a stdio server
// with 64 calls in flight, with the ledger and without one (target ≥ 0.9×);
// and ctx.spawn's confinement against a bare execFile of the same program.
// Node (bundled) and deno (source), side by side.
//
//   node scripts/bench/governance.mjs [--calls 20000] [--spawns 30] [--roundtrips 3000] [--runs 3] [--blocks 20] [--inflight 4000]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  blockStats,
  childEnv,
  contendersFor,
  denoBinary,
  ensureBuilt,
  fixtureTools,
  markdownTable,
  median,
  parseFlags,
  print,
  repoRoot,
  startInitialized,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), {
  calls: 20000,
  spawns: 30,
  roundtrips: 3000,
  runs: 3,
  blocks: 20,
  inflight: 4000,
});
ensureBuilt({ tests: true });

/** Median over blocks of the median round trip (µs) of warden's trivial fixture_echo. */
async function roundTripUs(runtime) {
  const [warden] = contendersFor(runtime, { wardenEnv: { WARDEN_TOOLS_DIR: fixtureTools[runtime] }, peers: [] });
  const server = await startInitialized(warden);
  try {
    const blocks = [];
    for (let block = 0; block < 11; block++) {
      const times = [];
      for (let i = 0; i < Math.ceil(flags.roundtrips / 10); i++) {
        const started = performance.now();
        const { result, at } = await server.request("tools/call", warden.tool, 10_000);
        if (result?.isError) throw new Error(`fixture_echo failed: ${JSON.stringify(result.content)}`);
        times.push((at - started) * 1000);
      }
      if (block > 0) blocks.push(times); // the first block warms up
    }
    return blockStats(blocks).median;
  } finally {
    await server.stop();
  }
}
const out = path.join(repoRoot, ".bench", "governance");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(repoRoot, "scripts/bench/_governance_entry.ts")],
  outfile: path.join(out, "entry.mjs"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});
/** The bench entry's command line on `runtime`. */
function entryCommand(runtime, args) {
  return runtime === "node"
    ? [process.execPath, [path.join(out, "entry.mjs"), ...args]]
    : [denoBinary(), ["run", "-A", path.join(repoRoot, "scripts/bench/_governance_entry.ts"), ...args]];
}

/** A stdio server of one trivial read tool (the entry's `serve` mode), with the ledger in `ledgerDir` or none. */
async function startServe(runtime, ledgerDir) {
  const [command, args] = entryCommand(runtime, ["serve", ledgerDir ?? "none"]);
  const server = await startInitialized({
    runtime,
    name: ledgerDir ? "with the ledger" : "without a ledger",
    command,
    args,
    cwd: repoRoot,
    env: childEnv(),
  });
  const cpu = async () =>
    Number((await server.request("tools/call", { name: "cpu", arguments: {} })).result.content[0].text);
  /** `n` calls, 64 in flight (each answer sends the next request): calls per second and the server's CPU µs a call. */
  const block = async (n) => {
    let sent = 0;
    const cpuBefore = await cpu();
    const started = performance.now();
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (sent < n) {
        sent++;
        const { result } = await server.request("tools/call", { name: "echo", arguments: { text: "hi" } }, 30_000);
        if (result?.isError) throw new Error(`echo failed: ${JSON.stringify(result.content)}`);
      }
    }));
    const seconds = (performance.now() - started) / 1000;
    return { rate: n / seconds, cpuUs: ((await cpu()) - cpuBefore) / n };
  };
  return { server, block };
}

/**
 * One run: a server without a ledger and one with it, both started, warmed,
 * then measured in short blocks taken in turn (the order alternating), so
 * that a busy second on a shared machine falls on both alike; each block of
 * the one is paired with the block of the other next to it.
 */
async function throughputRun(runtime, ledgerDir) {
  const without = await startServe(runtime, undefined);
  const withLedger = await startServe(runtime, ledgerDir);
  try {
    await without.block(flags.inflight * 2);
    await withLedger.block(flags.inflight * 2);
    const pairs = [];
    for (let b = 0; b < flags.blocks; b++) {
      const first = b % 2 === 0 ? without : withLedger;
      const second = first === without ? withLedger : without;
      const a = await first.block(flags.inflight);
      const z = await second.block(flags.inflight);
      pairs.push(first === without ? { without: a, with: z } : { without: z, with: a });
    }
    await withLedger.server.stop(5000);
    const stats = withLedger.server.stderr().split("\n").filter((l) => l.startsWith('{"rowsPerWrite"')).map((l) =>
      JSON.parse(l)
    );
    return { pairs, rowsPerWrite: stats[0]?.rowsPerWrite };
  } finally {
    await without.server.stop(5000);
    await withLedger.server.stop(5000);
  }
}

const rows = [];
const ledgerRows = [];
for (const runtime of ["node", "deno"]) {
  const ledger = mkdtempSync(path.join(tmpdir(), "warden-bench-ledger-"));
  try {
    const args = [ledger, repoRoot, String(flags.calls), String(flags.spawns)];
    const command = entryCommand(runtime, args);
    const result = JSON.parse(
      execFileSync(command[0], command[1], { cwd: repoRoot, encoding: "utf8" }).trim().split("\n").at(-1),
    );
    const added = result.governedUs - result.runToolUs;
    const roundTrip = await roundTripUs(runtime);
    rows.push([
      runtime,
      result.runToolUs.toFixed(2),
      result.governedUs.toFixed(2),
      added.toFixed(2),
      roundTrip.toFixed(0),
      `${((100 * added) / roundTrip).toFixed(1)}%`,
      (result.governedWithHashUs - result.runToolUs).toFixed(2),
      result.execFileMs.toFixed(2),
      result.spawnMs.toFixed(2),
      `${(result.spawnMs / result.execFileMs).toFixed(2)}×`,
      result.isolation,
    ]);
    const pairs = [];
    const serverRowsPerWrite = [];
    const serverLedger = path.join(ledger, "server");
    for (let run = 0; run < flags.runs; run++) {
      const measured = await throughputRun(runtime, serverLedger);
      pairs.push(...measured.pairs);
      serverRowsPerWrite.push(measured.rowsPerWrite);
    }
    const files = readdirSync(serverLedger);
    const sealed = files.filter((f) => readFileSync(path.join(serverLedger, f), "utf8").includes('"kind":"seal"'));
    if (sealed.length !== files.length) throw new Error(`${files.length - sealed.length} server ledger(s) not sealed`);
    const verified = execFileSync(
      process.execPath,
      [path.join(repoRoot, "dist/core/main.js"), "ledger", "verify", "--ledger", serverLedger],
      { encoding: "utf8" },
    );
    if (!verified.startsWith("Ledger intact")) throw new Error(`the servers' ledger does not verify: ${verified}`);
    ledgerRows.push([
      runtime,
      result.cpu.added.noWrite.toFixed(2),
      result.cpu.added.ledger.toFixed(2),
      result.cpu.added.gate.toFixed(2),
      result.rowsPerWrite.toFixed(1),
      median(serverRowsPerWrite).toFixed(1),
      median(pairs.map((p) => p.without.rate)).toFixed(0),
      median(pairs.map((p) => p.with.rate)).toFixed(0),
      `${median(pairs.map((p) => p.with.rate / p.without.rate)).toFixed(2)}×`,
      median(pairs.map((p) => p.without.cpuUs)).toFixed(1),
      median(pairs.map((p) => p.with.cpuUs)).toFixed(1),
      `${median(pairs.map((p) => p.without.cpuUs / p.with.cpuUs)).toFixed(2)}×`,
      `${flags.runs} × ${flags.blocks} × ${flags.inflight}`,
    ]);
  } finally {
    rmSync(ledger, { recursive: true, force: true });
  }
}
print("## Governance cost\n");
print(markdownTable(
  [
    "runtime",
    "runTool µs",
    "with policy + ledger µs",
    "added before the result µs",
    "round trip µs",
    "share",
    "added with the row hash µs",
    "execFile ms",
    "ctx.spawn ms",
    "spawn / execFile",
    "isolation",
  ],
  rows,
));
print(
  "\nAdded before the result: what a call waits for (policy, argument hash, the row written). The row's own hash, which only the next row needs, runs after the response is written; the next column counts it too. Share: of warden's median round trip of the same trivial tool over stdio (target ≤ 5%).",
);

print("\n## Ledger cost\n");
print(markdownTable(
  [
    "runtime",
    "ledger's own CPU µs/call",
    "its write, CPU µs",
    "gate: the intent row, CPU µs",
    "rows per write, 64 in flight",
    "the same, stdio server",
    "calls/s without a ledger",
    "calls/s with the ledger",
    "with / without",
    "server CPU µs/call without",
    "with",
    "throughput by CPU, with / without",
    "calls measured",
  ],
  ledgerRows,
));
print(
  "\nCPU time (user and system, `process.cpuUsage`) per call, one call at a time, in-process, in blocks of 300 calls taken in turn; each figure is the median over blocks of the difference with the variant before it. A busy shared machine inflates CPU time less than wall time. Own CPU: a trivial call with the ledger writing to a file that discards its text, its row's hash included, less the same call with no ledger (target ≤ 5 µs). Its write: the same with the real file, less the discarding one. Intent row: what a gate call adds, its intent written before the tool runs (a second row, and a second write when calls come one at a time). Rows per write: in-process, 64 calls in flight. Throughput: a stdio server of one trivial read tool (the bench entry's `serve` mode), 64 calls in flight, with the ledger against the same server with none, both running, measured in blocks taken in turn; the ratios are medians over every pair of neighbouring blocks of every run (target ≥ 0.9×). The server's own CPU time per call in the same passes (read through a second tool), and the throughput it allows: the steadier figure on a shared machine, where wall time depends on who else runs. Every server's file is sealed and the directory verifies intact.",
);
