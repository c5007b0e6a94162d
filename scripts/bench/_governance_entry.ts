// Measured by scripts/bench/governance.mjs, in-process under node (bundled)
// and deno (source): what the policy and the ledger add to a trivial call,
// and what ctx.spawn's confinement adds to running a program.
import { execFile } from "node:child_process";
import { runTool } from "../../core/call.ts";
import { builtinEntry } from "../../core/catalog.ts";
import { Ledger } from "../../core/ledger.ts";
import { initPlatform, platform } from "../../core/platform/mod.ts";
import { governedCall } from "../../core/policy.ts";
import { openRoots } from "../../core/roots.ts";
import { Spawner } from "../../core/spawn.ts";
import { defineTool } from "../../core/tool.ts";
import * as v from "valibot";

await initPlatform();
const [ledgerDir, rootDir, callsText, spawnsText] = platform().args;
const calls = Number(callsText);
const spawns = Number(spawnsText);
const echo = builtinEntry({
  file: "echo.ts",
  tool: defineTool({
    name: "echo",
    title: "Echo",
    description: "Echo.",
    risk: "gate",
    capabilities: { spawn: ["true"] },
    input: v.strictObject({ text: v.string() }),
    handler: ({ text }) => text,
  }),
  inputSchema: {},
});
const fs = await openRoots([{ id: "default", path: rootDir }]);
const options = { fs, host: {} as never, timeoutMs: 60_000 };
const policy = {
  maxRisk: "external-side-effect" as const,
  disabled: new Set<string>(),
  principalRequired: new Set<string>(),
  principal: null,
};
const ledger = new Ledger(ledgerDir);
await ledger.prepare();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Median over blocks of the time from a call's start to its result, timed
 * call by call. `afterResult` runs untimed after each, as the transport does
 * once the response is written (the ledger hashes the row there).
 */
async function perCall(work: () => unknown, n: number, afterResult = () => {}): Promise<number> {
  const blocks: number[] = [];
  for (let b = 0; b < 10; b++) {
    let spent = 0;
    for (let i = 0; i < n / 10; i++) {
      const started = performance.now();
      await work();
      spent += performance.now() - started;
      afterResult();
    }
    blocks.push((spent * 1000) / (n / 10));
  }
  return median(blocks);
}

const bareEcho = () => runTool(echo, { text: "hi" }, options);
const governedOptions = { ...options, policy, ledger };
const governedEcho = () => governedCall(echo, { text: "hi" }, governedOptions);
const settle = () => ledger.settle();
// Warm both paths, then alternate rounds.
await perCall(bareEcho, 2000);
await perCall(governedEcho, 2000, settle);
const bare: number[] = [];
const governed: number[] = [];
const settled: number[] = [];
for (let round = 0; round < 5; round++) {
  bare.push(await perCall(bareEcho, calls));
  governed.push(await perCall(governedEcho, calls, settle));
  // The same, with the row's hash counted too: all the ledger costs the process.
  settled.push(await perCall(() => governedEcho().then(settle), calls));
}

const spawner = new Spawner();
await spawner.resolve(["true"]);
const isolation = await spawner.isolation();
const signal = new AbortController().signal;
const truePath = spawner.programs().get("true")!;
const viaSpawner: number[] = [];
const viaExecFile: number[] = [];
for (let i = 0; i < spawns; i++) {
  let started = performance.now();
  await spawner.spawn("bench", ["true"], fs, ["true"], {}, signal, Date.now() + 60_000);
  viaSpawner.push(performance.now() - started);
  started = performance.now();
  await new Promise((resolve, reject) =>
    execFile(truePath, [], (error) => (error ? reject(error) : resolve(undefined)))
  );
  viaExecFile.push(performance.now() - started);
}
ledger.close();
console.log(JSON.stringify({
  runToolUs: median(bare),
  governedUs: median(governed),
  governedWithHashUs: median(settled),
  spawnMs: median(viaSpawner),
  execFileMs: median(viaExecFile),
  isolation: isolation.kind,
}));
