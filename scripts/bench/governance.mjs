// What governance costs: the policy check and the ledger row on a trivial
// call (against the tools/call round trip of the same trivial tool, as
// roundtrip.mjs measures it; target ≤ 5%), and ctx.spawn's confinement
// against a bare execFile of the same program. In-process, node (bundled)
// and deno (source), side by side.
//
//   node scripts/bench/governance.mjs [--calls 20000] [--spawns 30] [--roundtrip-us <µs>]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { denoBinary, markdownTable, parseFlags, print, repoRoot } from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { calls: 20000, spawns: 30, roundtripUs: 0 });
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
    rows.push([
      runtime,
      result.runToolUs.toFixed(2),
      result.governedUs.toFixed(2),
      added.toFixed(2),
      flags.roundtripUs ? `${((100 * added) / flags.roundtripUs).toFixed(1)}%` : "-",
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
    "added µs",
    "of round trip",
    "execFile ms",
    "ctx.spawn ms",
    "spawn / execFile",
    "isolation",
  ],
  rows,
));
print("\nPass the trivial round trip from roundtrip.mjs as --roundtrip-us to see the share (target ≤ 5%).");
