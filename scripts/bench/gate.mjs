// What the gate costs, against what it runs (issue 16's figures):
//   1. run_checks' overhead over running its program directly: the `typescript` group on a fixture repository whose
//      tsc is the project's own (node_modules/typescript), through warden's stdio round trip, against the same tsc
//      command run directly, and run inside bubblewrap with a sandbox like ctx.spawn's (isolation's own cost, apart);
//      target: run_checks ≤ 1.1× the isolated direct run.
//   2. warden's own hygiene checks on a 3,000-file tree with a 20-file staged change, warm (the same server, calls
//      after the first); target ≤ 100 ms.
//   3. restoring a job store of 1,000 finished jobs at start: a server's first run_checks_result answer after
//      initialize, with that store against an empty one (the call waits for the restore); target ≤ 50 ms.
// Node (bundled) and deno (source), as README registers them.
//
//   node scripts/bench/gate.mjs [--runtime both] [--runs 7] [--warm 9] [--files 3000] [--changed 20] [--jobs 1000]
//     [--only overhead,hygiene,restore]
import { execFileSync, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  benchDir,
  childEnv,
  contendersFor,
  ensureBuilt,
  environmentLines,
  fail,
  fixed,
  markdownTable,
  median,
  note,
  parseFlags,
  print,
  quantile,
  repoRoot,
  runtimesOf,
  startInitialized,
} from "./_harness.mjs";
import { generateTree } from "./_trees.mjs";

const flags = parseFlags(process.argv.slice(2), {
  runtime: "both",
  runs: 7,
  warm: 9,
  files: 3000,
  changed: 20,
  jobs: 1000,
  only: "overhead,hygiene,restore",
});
const parts = new Set(flags.only.split(","));
const runtimes = runtimesOf(flags.runtime);
ensureBuilt();

const gateDir = path.join(benchDir, "gate");
const git = (cwd, ...args) => execFileSync("git", args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

/** Makes `dir` a git repository with what it holds committed. */
function commitAll(dir) {
  git(dir, "init", "-q", "-b", "main");
  git(dir, "config", "user.email", "bench@example.com");
  git(dir, "config", "user.name", "bench");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "start");
}

/** Writes `changes` (path → text) into `dir` and stages them. */
function stage(dir, changes) {
  for (const [file, text] of Object.entries(changes)) writeFileSync(path.join(dir, file), text);
  git(dir, "add", "-A");
}

/** A git repository at `dir` with `files` committed (path → text), then `changes` written and staged. */
function makeRepo(dir, files, changes) {
  rmSync(dir, { recursive: true, force: true });
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  commitAll(dir);
  stage(dir, changes);
}

/** The project's own TypeScript compiler, made from the one ts-morph bundles (as test/run_checks.test.ts does). */
function installTypeScript(dir) {
  const lib = path.join(dir, "node_modules/typescript/lib");
  mkdirSync(lib, { recursive: true });
  mkdirSync(path.join(dir, "node_modules/typescript/bin"), { recursive: true });
  const require = createRequire(path.join(repoRoot, "package.json"));
  copyFileSync(require.resolve("@ts-morph/common/dist/typescript.js"), path.join(lib, "typescript.js"));
  for (const file of require("@ts-morph/common").getLibFiles()) writeFileSync(path.join(lib, file.fileName), file.text);
  writeFileSync(path.join(dir, "node_modules/typescript/package.json"), '{"name":"typescript","version":"6.0.2"}\n');
  writeFileSync(
    path.join(dir, "node_modules/typescript/bin/tsc"),
    '#!/usr/bin/env node\nconst ts = require("../lib/typescript.js");\nts.executeCommandLine(ts.sys, ts.noop, ts.sys.args);\n',
  );
}

/** 40 modules importing each other, one of them with a type error staged: tsc has real work and one finding. */
function typescriptRepo() {
  const dir = path.join(gateDir, "typescript");
  const files = {
    ".gitignore": "node_modules\n",
    "tsconfig.json": JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext", lib: ["es2022"] },
      include: ["src"],
    }),
  };
  for (let i = 0; i < 40; i++) {
    const imports = i === 0 ? "" : `import { f${i - 1} } from "./m${i - 1}.js";\n`;
    files[`src/m${i}.ts`] = `${imports}export function f${i}(n: number): number {\n  return ${
      i === 0 ? "n" : `f${i - 1}(n)`
    } + 1;\n}\n`;
  }
  makeRepo(dir, files, { "src/m39.ts": files["src/m39.ts"] + 'export const wrong: number = "text";\n' });
  installTypeScript(dir);
  return dir;
}

/**
 * code_intel.mjs's generated tree of `count` modules (8 layers, imports skewed so that some modules have many
 * dependents), committed; `changed` modules spread over it gain a debt marker and an export nothing imports, staged.
 */
function hygieneRepo(count, changed) {
  const dir = path.join(gateDir, `hygiene-${count}`);
  generateTree(dir, count);
  // generateTree leaves an empty .git (so globby reads no .gitignore above it): a real repository here.
  rmSync(path.join(dir, ".git"), { recursive: true, force: true });
  commitAll(dir);
  const modules = git(dir, "ls-files", "src/layer*").split("\n").filter(Boolean).sort();
  const changes = {};
  for (let k = 0; k < changed; k++) {
    const file = modules[Math.floor((k * modules.length) / changed)];
    changes[file] = readFileSync(path.join(dir, file), "utf8") +
      `// TODO: remove before release ${k}\nexport const extra${k} = ${k};\n`;
  }
  stage(dir, changes);
  return dir;
}

/**
 * What an exited process leaves of `count` finished run_checks jobs, as warden writes it: its store file (the records,
 * each result kept in its job's report instead) and each job's report directory with its result.json (a real hygiene
 * result).
 */
function jobStore(count, result) {
  const dir = path.join(gateDir, `jobs-${count}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (count === 0) return { dir, id: "job_" + "0".repeat(32) };
  // A pid no process has: the kernel's limit is below it.
  const pid = 4_194_305;
  const now = new Date().toISOString();
  const jobs = [];
  for (let i = 0; i < count; i++) {
    const record = {
      id: `job_${i.toString(16).padStart(32, "0")}`,
      tool: "run_checks",
      request: { group: "hygiene", root: "tree" },
      state: "done",
      createdAt: now,
      startedAt: now,
      finishedAt: now,
      result: null,
      reason: null,
      resultInReport: true,
    };
    jobs.push(record);
    const report = path.join(dir, "reports", record.id);
    mkdirSync(report, { recursive: true });
    const { resultInReport: _, ...view } = record;
    writeFileSync(
      path.join(report, "result.json"),
      JSON.stringify({ ...view, jobId: record.id, result, queuePosition: null }) + "\n",
    );
  }
  const stamp = now.replace(/[:.]/g, "-");
  writeFileSync(
    path.join(dir, `${stamp}-${pid}.json`),
    JSON.stringify({ v: 1, pid, startedAt: now, updatedAt: now, jobs }) + "\n",
  );
  return { dir, id: jobs[count - 1].id };
}

function warden(runtime, args, env = {}) {
  const [contender] = contendersFor(runtime, { wardenArgs: args, wardenEnv: env, peers: [] });
  return contender;
}

async function callTool(server, name, args, timeoutMs = 600_000) {
  const started = performance.now();
  const { result, at } = await server.request("tools/call", { name, arguments: args }, timeoutMs);
  return { result, ms: at - started };
}

/** Where bubblewrap is and whether it runs here (it needs user namespaces). */
function bubblewrap() {
  const found = spawnSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).stdout.trim();
  if (!found) return null;
  const probe = spawnSync(found, [...sandboxArgs("/"), "true"], { encoding: "utf8" });
  return probe.status === 0 ? found : null;
}

/** A sandbox like ctx.spawn's: read-only tree, no network, own pid namespace, scratch /tmp. */
function sandboxArgs(cwd) {
  return [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--chdir",
    cwd,
    "--",
  ];
}

function timed(command, args, cwd) {
  const started = performance.now();
  const run = spawnSync(command, args, { cwd, encoding: "utf8", env: childEnv() });
  const ms = performance.now() - started;
  if (run.status !== 2 && run.status !== 1) {
    fail(`${command} ${args.join(" ")} exited ${run.status}: ${run.stderr.slice(0, 500)}`);
  }
  if (!run.stdout.includes("TS2322")) fail(`tsc found no TS2322 in ${cwd}: ${run.stdout.slice(0, 500)}`);
  return ms;
}

// ---------------------------------------------------------------------------

const bwrap = bubblewrap();
if (!bwrap) {
  fail("bubblewrap does not run here (apt-get install bubblewrap): run_checks runs a project's tsc only isolated");
}

note("making the fixture repositories in .bench/gate/");
const tsRepo = parts.has("overhead") ? typescriptRepo() : "";
const tree = hygieneRepo(flags.files, flags.changed);

print("# The gate: run_checks against what it runs");
print();
for (const line of environmentLines(runtimes, {})) print(line);
print(`- bubblewrap: ${bwrap}`);
print();

// 1. Overhead over the program run directly.
const tscArgs = ["node_modules/typescript/bin/tsc", "--noEmit", "--pretty", "false", "-p", "./tsconfig.json"];
const overheadRows = [];
for (const runtime of parts.has("overhead") ? runtimes : []) {
  note(`${runtime}: run_checks typescript against tsc direct and in bubblewrap, ${flags.runs} rounds`);
  const server = await startInitialized(warden(runtime, ["--root", `ts=${tsRepo}`], {
    WARDEN_JOBS_DIR: path.join(gateDir, `jobs-scratch-${runtime}`),
  }));
  const times = { run: [], direct: [], isolated: [] };
  try {
    // One of each first, unmeasured: the file cache warm for all three.
    for (let round = -1; round < flags.runs; round++) {
      const { result, ms } = await callTool(server, "run_checks", { root: "ts", group: "typescript" });
      const answer = result.structuredContent;
      if (answer?.gate !== "FAIL" || answer.failed !== 1) {
        fail(`run_checks did not FAIL the type error: ${JSON.stringify(result).slice(0, 800)}`);
      }
      const direct = timed(process.execPath, tscArgs, tsRepo);
      const isolated = timed(bwrap, [...sandboxArgs(tsRepo), process.execPath, ...tscArgs], tsRepo);
      if (round < 0) continue;
      times.run.push(ms);
      times.direct.push(direct);
      times.isolated.push(isolated);
    }
  } finally {
    await server.stop();
  }
  const [run, direct, isolated] = [median(times.run), median(times.direct), median(times.isolated)];
  overheadRows.push([
    runtime,
    fixed(direct, 0),
    fixed(isolated, 0),
    `${fixed(isolated / direct, 2)}×`,
    fixed(run, 0),
    `${fixed(run / isolated, 2)}×`,
    run / isolated <= 1.1 ? "met" : "NOT met",
  ]);
}
if (parts.has("overhead")) {
  print("## run_checks over its program (typescript group, 40 modules, one type error)");
  print();
  print(`Medians of ${flags.runs} rounds, each round the three in turn; ms of wall time.`);
  print();
  print(markdownTable(
    ["runtime", "tsc direct", "tsc in bubblewrap", "isolation's cost", "run_checks", "vs isolated direct", "≤ 1.1×"],
    overheadRows,
  ));
  print();
}

// 2. Hygiene on a large tree, warm.
const hygieneRows = [];
let storedResult;
for (const runtime of parts.has("hygiene") || parts.has("restore") ? runtimes : []) {
  note(`${runtime}: hygiene on ${flags.files} files, ${flags.changed} changed, 1 cold and ${flags.warm} warm calls`);
  const server = await startInitialized(warden(runtime, ["--root", `tree=${tree}`], {
    WARDEN_JOBS_DIR: path.join(gateDir, `jobs-scratch-${runtime}`),
  }));
  const walls = [];
  const own = [];
  let cold;
  try {
    for (let i = 0; i <= flags.warm; i++) {
      const { result, ms } = await callTool(server, "run_checks", { root: "tree", group: "hygiene" });
      const answer = result.structuredContent;
      const markers = answer?.findings?.filter((f) => f.check === "hygiene/debt-markers").length ?? 0;
      if (answer?.gate === "ERROR" || markers !== flags.changed) {
        fail(
          `hygiene on the tree: ${markers} debt markers found, ${flags.changed} planted: ${
            JSON.stringify(answer).slice(0, 800)
          }`,
        );
      }
      storedResult ??= result;
      if (i === 0) cold = ms;
      else {
        walls.push(ms);
        own.push(answer.durationMs);
      }
    }
  } finally {
    await server.stop();
  }
  const warm = median(walls);
  hygieneRows.push([
    runtime,
    fixed(cold, 0),
    fixed(warm, 1),
    fixed(quantile(walls, 0.9), 1),
    fixed(median(own), 1),
    warm <= 100 ? "met" : "NOT met",
  ]);
}
if (parts.has("hygiene")) {
  print(`## Hygiene checks, ${flags.files} files, ${flags.changed} changed and staged`);
  print();
  print('Round trip of `run_checks {group: "hygiene"}`; warm: the same server\'s later calls (median, p90).');
  print();
  print(
    markdownTable(["runtime", "cold ms", "warm ms", "warm p90", "durationMs (its own)", "warm ≤ 100 ms"], hygieneRows),
  );
  print();
}

// 3. Restoring 1,000 jobs.
const full = parts.has("restore") ? jobStore(flags.jobs, storedResult) : undefined;
const empty = parts.has("restore") ? jobStore(0) : undefined;
const restoreRows = [];
for (const runtime of parts.has("restore") ? runtimes : []) {
  note(
    `${runtime}: first run_checks_result after initialize, ${flags.jobs} stored jobs against none, ${flags.runs} rounds`,
  );
  const times = { full: [], empty: [] };
  for (let round = 0; round < flags.runs; round++) {
    for (
      const [which, store] of round % 2 === 0 ? [["full", full], ["empty", empty]] : [["empty", empty], ["full", full]]
    ) {
      const server = await startInitialized(
        warden(runtime, ["--root", `tree=${tree}`], { WARDEN_JOBS_DIR: store.dir }),
      );
      try {
        const { result, ms } = await callTool(server, "run_checks_result", { jobId: store.id }, 60_000);
        // The job's view is the text block's JSON (the tool declares no output schema: a job's result is a whole
        // CallToolResult).
        const view = result.isError ? undefined : JSON.parse(result.content[0].text);
        const restored = view?.restored === true && view?.state === "done" && view.result?.structuredContent?.gate;
        if (which === "full" ? !restored : !result.isError) {
          fail(`run_checks_result with the ${which} store: ${JSON.stringify(result).slice(0, 600)}`);
        }
        times[which].push(ms);
      } finally {
        await server.stop();
      }
    }
  }
  const cost = median(times.full) - median(times.empty);
  restoreRows.push([
    runtime,
    fixed(median(times.empty), 1),
    fixed(median(times.full), 1),
    fixed(cost, 1),
    cost <= 50 ? "met" : "NOT met",
  ]);
}
if (parts.has("restore")) {
  const storeFile = readdirSync(full.dir).find((name) => name.endsWith(".json"));
  const storeBytes = readFileSync(path.join(full.dir, storeFile)).length;
  const resultBytes = readFileSync(path.join(full.dir, "reports", full.id, "result.json")).length;
  print(
    `## Restoring ${flags.jobs} finished jobs at start (a ${fixed(storeBytes / 1024, 0)} KB store, results of ` +
      `${fixed(resultBytes / 1024, 1)} KB each in their reports)`,
  );
  print();
  print(
    "Wall time of the first `run_checks_result` call sent right after initialize (it waits for the restore), medians of " +
      `${flags.runs} starts each, alternating.`,
  );
  print();
  print(markdownTable(["runtime", "no jobs ms", `${flags.jobs} jobs ms`, "restore's cost ms", "≤ 50 ms"], restoreRows));
}
