// What governance costs: the policy check and the ledger row on a trivial
// call, timed in-process from the call's start to its result, as a share of
// warden's tools/call round trip of a trivial tool over stdio measured in the
// same run (as roundtrip.mjs does; target ≤ 5%), and ctx.spawn's confinement
// against a bare execFile of the same program. Node (bundled) and deno
// (source), side by side.
//
//   node scripts/bench/governance.mjs [--calls 20000] [--spawns 30] [--roundtrips 3000]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  blockStats,
  contendersFor,
  denoBinary,
  ensureBuilt,
  markdownTable,
  parseFlags,
  print,
  repoRoot,
  startInitialized,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { calls: 20000, spawns: 30, roundtrips: 3000 });
ensureBuilt({ tests: true });
const fixtureTools = {
  node: path.join(repoRoot, "dist/test/fixtures/tools"),
  deno: path.join(repoRoot, "test/fixtures/tools"),
};

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
const rows = [];
for (const runtime of ["node", "deno"]) {
  const ledger = mkdtempSync(path.join(tmpdir(), "warden-bench-ledger-"));
  try {
    const args = [ledger, repoRoot, String(flags.calls), String(flags.spawns)];
    const command = runtime === "node"
      ? [process.execPath, [path.join(out, "entry.mjs"), ...args]]
      : [denoBinary(), ["run", "-A", path.join(repoRoot, "scripts/bench/_governance_entry.ts"), ...args]];
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
