// Measured by scripts/bench/governance.mjs, under node (bundled) and deno
// (source). Two modes:
//   <ledgerDir> <rootDir> <calls> <spawns>   in-process: what the policy and
//     the ledger add to a trivial call, the ledger's own CPU apart from its
//     write, rows per write with 64 calls in flight, and what ctx.spawn's
//     confinement adds to running a program;
//   serve <ledgerDir | none>   a stdio server of one trivial read tool, with
//     the real ledger or none at all, for the throughput with 64 calls in flight.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { runTool } from "../../core/call/run.ts";
import type { CallResult } from "../../core/call/result.ts";
import { buildCatalog, builtinEntry } from "../../core/catalog.ts";
import { type AppendOutcome, Ledger } from "../../core/governance/ledger.ts";
import { initPlatform, platform } from "../../core/platform/mod.ts";
import { openRoots } from "../../core/doors/roots.ts";
import { Spawner } from "../../core/doors/spawn.ts";
import { governedCall } from "../../core/governance/governed_call.ts";
import { defineTool, type RiskClass } from "../../core/tool.ts";
import * as v from "valibot";

await initPlatform();
const [mode, ...rest] = platform().args;

function echoTool(risk: RiskClass) {
  return builtinEntry({
    file: "echo.ts",
    tool: defineTool({
      name: "echo",
      title: "Echo",
      description: "Echo.",
      risk,
      capabilities: risk === "read" ? {} : { spawn: ["true"] },
      input: v.strictObject({ text: v.string() }),
      handler: ({ text }) => text,
    }),
    inputSchema: {},
  });
}

const policy = {
  maxRisk: "external-side-effect" as const,
  disabled: new Set<string>(),
  principalRequired: new Set<string>(),
  principal: null,
  engine: null,
};

const WRITTEN: Promise<AppendOutcome> = Promise.resolve({ ok: true });
/** No ledger at all: what a call costs without one (the policy check stays). */
const noLedger = {
  argsHash: () => "sha256:" + "0".repeat(64),
  call: () => WRITTEN,
  intent: () => ({ seq: 0, written: WRITTEN }),
  settle: () => {},
  seal: () => Promise.resolve(),
  prepare: () => Promise.resolve(),
} as unknown as Ledger;

/**
 * A ledger whose file counts its appends; `rows()` counts the lines written so far, read back from the file, so that
 * the count costs the server nothing while it is measured.
 */
function countingLedger(dir: string): { ledger: Ledger; counts: { appends: number; rows: () => number } } {
  let written: string | undefined;
  const counts = {
    appends: 0,
    rows: () => written === undefined ? 0 : readFileSync(written, "utf8").split("\n").length - 1,
  };
  const ledger = new Ledger(dir, (file) => {
    const real = platform().fs.createAppendOnly(file);
    written = file;
    return {
      append: (text) => {
        counts.appends++;
        real.append(text);
      },
      close: () => real.close(),
    };
  });
  return { ledger, counts };
}

if (mode === "serve") {
  const [ledgerDir] = rest;
  const { serve } = await import("../../core/transport/server.ts");
  // `cpu` reports the server's own CPU time, so that a pass can be measured in it as well as in wall time.
  const cpuTool = builtinEntry({
    file: "cpu.ts",
    tool: defineTool({
      name: "cpu",
      title: "CPU time",
      description: "This process's CPU time in µs.",
      risk: "read",
      input: v.strictObject({}),
      handler: () => {
        const { user, system } = process.cpuUsage();
        return String(user + system);
      },
    }),
    inputSchema: {},
  });
  const catalog = await buildCatalog([echoTool("read"), cpuTool]);
  const counted = ledgerDir === "none" || ledgerDir.endsWith("/null") ? undefined : countingLedger(ledgerDir);
  // `<dir>/null`: the ledger with a file that discards its text, to tell its CPU from its writes.
  const ledger = counted?.ledger ??
    (ledgerDir === "none" ? noLedger : new Ledger(ledgerDir, () => ({ append: () => {}, close: () => {} })));
  await ledger.prepare();
  await serve({
    name: "warden-bench",
    version: "0",
    catalog,
    fs: await openRoots([{ id: "default", path: platform().cwd() }]),
    callTimeoutMs: 60_000,
    spawner: new Spawner(),
    policy,
    ledger,
    host: {} as never,
    // The bench's two tools read neither the host's facts nor plugin manifests.
    manifests: {} as never,
    shutdown: async () => {
      await ledger.seal();
      if (counted) {
        platform().writeStderr(JSON.stringify({ rowsPerWrite: counted.counts.rows() / counted.counts.appends }) + "\n");
      }
    },
  });
} else {
  await inProcess(mode, rest[0], rest[1], rest[2]);
}

async function inProcess(ledgerDir: string, rootDir: string, callsText: string, spawnsText: string): Promise<void> {
  const calls = Number(callsText);
  const spawns = Number(spawnsText);
  const echo = echoTool("gate");
  const readEcho = echoTool("read");
  const fs = await openRoots([{ id: "default", path: rootDir }]);
  const options = { fs, host: {} as never, timeoutMs: 60_000 };
  // Appends counted, to see the rows a write carries with calls in flight.
  const { ledger, counts } = countingLedger(ledgerDir);
  await ledger.prepare();
  // The same ledger with a file that writes nothing: all of the ledger's own work, none of its write.
  const nullDir = `${ledgerDir}/null`;
  await platform().fs.mkdir(nullDir);
  const nullSink = new Ledger(nullDir, () => ({ append: () => {}, close: () => {} }));

  function median(values: number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }

  /** CPU time (user and system) of this process, in µs: a busy shared machine inflates wall time far more. */
  const cpuNow = () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  };

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

  /**
   * CPU time per call of each variant, everything its `work` does counted, in
   * short blocks taken in turn, so that whatever else the machine runs falls
   * on all of them alike; medians over blocks, and the median of each block's
   * difference with the variant before it (paired, steadier than a difference of medians).
   */
  async function cpuPerCall(variants: Record<string, () => unknown>, blocks: number, n = 300) {
    const names = Object.keys(variants);
    const per: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
    for (let b = 0; b < blocks; b++) {
      for (const name of names) {
        const work = variants[name];
        const started = cpuNow();
        for (let i = 0; i < n; i++) await work();
        per[name].push((cpuNow() - started) / n);
      }
    }
    const added = Object.fromEntries(
      names.slice(1).map((name, i) => [
        name,
        median(per[name].map((value, b) => value - per[names[i]][b])),
      ]),
    );
    return { perCall: Object.fromEntries(names.map((name) => [name, median(per[name])])), added };
  }

  const governedWith = (l: Ledger, tool = readEcho) => {
    const o = { ...options, policy, ledger: l };
    return () => governedCall(tool, { text: "hi" }, o);
  };
  const bareEcho = () => runTool(readEcho, { text: "hi" }, options);
  const governedEcho = governedWith(ledger);
  const unrecorded = governedWith(noLedger);
  const nullEcho = governedWith(nullSink);
  const gateEcho = governedWith(ledger, echo);
  const settle = () => ledger.settle();
  const settleNull = () => nullSink.settle();
  // Warm every path, then alternate rounds.
  await perCall(bareEcho, 2000);
  await perCall(unrecorded, 2000);
  await perCall(nullEcho, 2000, settleNull);
  await perCall(governedEcho, 2000, settle);
  await perCall(gateEcho, 2000, settle);
  const bare: number[] = [];
  const governed: number[] = [];
  const settled: number[] = [];
  for (let round = 0; round < 5; round++) {
    bare.push(await perCall(bareEcho, calls));
    governed.push(await perCall(governedEcho, calls, settle));
    // The same, with the row's hash counted too: all the ledger costs the process.
    settled.push(await perCall(() => governedEcho().then(settle), calls));
  }
  // CPU time, which a busy machine inflates less than wall time: no ledger, the ledger without its write, with it,
  // and a gate call (its intent row besides).
  const cpu = await cpuPerCall({
    policy: unrecorded,
    noWrite: () => nullEcho().then(settleNull),
    ledger: () => governedEcho().then(settle),
    gate: () => gateEcho().then(settle),
  }, Math.max(20, Math.round((5 * calls) / 300)));

  // 64 calls in flight, each worker starting its next call when one ends: rows per write.
  const inFlight = async (work: () => Promise<CallResult>, n: number): Promise<number> => {
    const started = performance.now();
    await Promise.all(Array.from({ length: 64 }, async () => {
      for (let i = 0; i < n / 64; i++) await work();
    }));
    return performance.now() - started;
  };
  await inFlight(governedEcho, 6400);
  const before = { appends: counts.appends, rows: counts.rows() };
  await inFlight(governedEcho, 64 * 200);
  const rowsPerWrite = (counts.rows() - before.rows) / (counts.appends - before.appends);

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
  await ledger.seal();
  console.log(JSON.stringify({
    runToolUs: median(bare),
    governedUs: median(governed),
    governedWithHashUs: median(settled),
    cpu,
    rowsPerWrite,
    spawnMs: median(viaSpawner),
    execFileMs: median(viaExecFile),
    isolation: isolation.kind,
  }));
}
