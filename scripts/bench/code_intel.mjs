// warden's code intelligence tools side by side with madge (dependents) and
// knip (unused exports), on the same trees in one run: a generated tree of
// 3,200 TypeScript modules whose dependents and dead exports are known by
// construction, and the TypeScript sources npm packages ship (rxjs, zod,
// effect by default). Times are whole processes for the peers (their CLI is
// how they answer) and, for warden, spawn to answer and the tool call alone;
// peak RSS from /usr/bin/time (peers) and /proc/<pid>/status VmHWM (warden).
// The peers and the packages are installed under .bench/code-intel/, never as
// project dependencies.
//
//   node scripts/bench/code_intel.mjs [--runs 3] [--runtime node|deno|both] [--packages rxjs,zod,effect]
//     [--modules 3200] [--main dist/core/main.js] [--baseline <another build's core/main.js>]
//
// --baseline runs a second node build in the same rounds, right after the first (e.g. a copy of dist/ built from
// the commit before a change, kept under .bench/ so that it finds node_modules), for a before/after side by side.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import {
  benchDir,
  childEnv,
  denoBinary,
  environmentLines,
  fail,
  fixed,
  initializeParams,
  markdownTable,
  median,
  note,
  packedTarball,
  parseFlags,
  print,
  ratio,
  repoRoot,
  runtimesOf,
  startServer,
  WARDEN_DENO_FLAGS,
} from "./_harness.mjs";
import { generateTree, TREE_VERSION } from "./_trees.mjs";

const flags = parseFlags(process.argv.slice(2), {
  runs: 3,
  runtime: "both",
  packages: "rxjs,zod,effect",
  modules: 3200,
  main: "dist/core/main.js",
  baseline: "",
});
const runtimes = runtimesOf(flags.runtime);
const workDir = path.join(benchDir, "code-intel");
const peersDir = path.join(workDir, "peers");
const treesDir = path.join(workDir, "trees");
const emptyPlugins = path.join(workDir, "no-plugins");
const timeBin = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const mainJs = path.resolve(repoRoot, flags.main);
// Each warden measured: one per runtime, and the baseline build on node when given.
const wardens = [
  ...runtimes.map((runtime) => ({ label: runtime, runtime, main: mainJs })),
  ...(flags.baseline
    ? [{ label: `node (${flags.baseline})`, runtime: "node", main: path.resolve(repoRoot, flags.baseline) }]
    : []),
];

// ---------------------------------------------------------------------------
// Peers and trees

function installPeers() {
  mkdirSync(peersDir, { recursive: true });
  const manifest = path.join(peersDir, "package.json");
  if (!existsSync(manifest)) writeFileSync(manifest, '{ "private": true, "type": "module" }\n');
  const have = (name) => existsSync(path.join(peersDir, "node_modules", name, "package.json"));
  if (!have("madge") || !have("knip") || !have("typescript")) {
    note(`bench: installing madge, knip and typescript into ${path.relative(repoRoot, peersDir)}/ ...`);
    const result = spawnSync(
      npm,
      ["install", "--no-audit", "--no-fund", "--save-exact", "madge", "knip", "typescript"],
      {
        cwd: peersDir,
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    if (result.status !== 0) fail(`npm install in ${peersDir} failed (status ${result.status})`);
  }
  const version = (name) =>
    JSON.parse(readFileSync(path.join(peersDir, "node_modules", name, "package.json"), "utf8")).version;
  return { madge: version("madge"), knip: version("knip"), typescript: version("typescript") };
}

/** The source file (or pattern) under src/ a build output target is made from, as "./src/…". */
function sourceOf(dir, target) {
  const rel = target.replace(/^\.\//, "");
  if (rel.startsWith("src/")) {
    return existsSync(path.join(dir, rel.replace("*", ""))) || rel.includes("*") ? `./${rel}` : undefined;
  }
  const stem = rel.replace(
    /^(?:dist|build|lib|out)\/(?:(?:cjs|esm\d*|es\d*|mjs|types|typings|umd|node|browser)\/)?/,
    "",
  )
    .replace(/(?:\.d)?\.(?:[mc]?ts|[mc]?js|jsx|tsx)$/, "");
  for (const ext of [".ts", ".tsx", ".mts", ".js"]) {
    const candidate = `src/${stem}${ext}`;
    if (stem.includes("*") || existsSync(path.join(dir, candidate))) return `./${candidate}`;
  }
  return undefined;
}

function preparePackage(spec) {
  const { name, file } = packedTarball(spec);
  const dir = path.join(treesDir, spec);
  if (!existsSync(path.join(dir, "src"))) {
    mkdirSync(dir, { recursive: true });
    const result = spawnSync("tar", [
      "xzf",
      file,
      "-C",
      dir,
      "--strip-components=1",
      "package/src",
    ]);
    if (result.status !== 0) fail(`${name} has no src/ to unpack`);
    mkdirSync(path.join(dir, ".git"), { recursive: true });
  }
  // Both tools get the same entry points: the package's own exports, each mapped from its build output to
  // the source file it is built from (the packed package.json points at dist/, which is not unpacked).
  const packed = JSON.parse(
    spawnSync("tar", ["xzf", file, "-O", "package/package.json"], { encoding: "utf8" }).stdout,
  );
  const exports = {};
  const targets = (value) =>
    typeof value === "string"
      ? [value]
      : Array.isArray(value)
      ? value.flatMap(targets)
      : value && typeof value === "object"
      ? Object.values(value).flatMap(targets)
      : [];
  const entries = packed.exports && typeof packed.exports === "object" && !Array.isArray(packed.exports) &&
      Object.keys(packed.exports).every((k) => k.startsWith("."))
    ? Object.entries(packed.exports)
    : [[".", packed.exports ?? packed.module ?? packed.main ?? "./index.js"]];
  for (const [subpath, value] of entries) {
    for (const target of targets(value)) {
      const source = sourceOf(dir, target);
      if (source) {
        exports[subpath] = source;
        break;
      }
    }
  }
  if (!exports["."] && existsSync(path.join(dir, "src/index.ts"))) exports["."] = "./src/index.ts";
  writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify({ name: packed.name, version: packed.version, private: true, type: "module", exports }, null, 2) +
      "\n",
  );
  writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { module: "esnext", moduleResolution: "bundler", target: "es2022", strict: true, allowJs: true },
      include: ["src"],
    }) + "\n",
  );
  return { name: `${name} (src/)`, dir };
}

// ---------------------------------------------------------------------------
// Running things

/**
 * Runs a command to completion; wall time, peak RSS (KB, when /usr/bin/time
 * exists) and stdout. stdout goes through a file: a CLI that ends with
 * process.exit() loses what is still buffered for a pipe.
 */
function runMeasured(command, args, cwd) {
  return new Promise((resolve) => {
    const full = timeBin ? [timeBin, ["-f", "__RSS__%M", command, ...args]] : [command, args];
    const outFile = path.join(workDir, `stdout-${process.pid}.txt`);
    const out = openSync(outFile, "w");
    const started = performance.now();
    const child = spawn(full[0], full[1], { cwd, env: childEnv(), stdio: ["ignore", out, "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c) => (stderr += c));
    child.on("close", (code) => {
      const ms = performance.now() - started;
      closeSync(out);
      const stdout = readFileSync(outFile, "utf8");
      rmSync(outFile, { force: true });
      const rss = /__RSS__(\d+)/.exec(stderr);
      resolve({ code, ms, rssKb: rss ? Number(rss[1]) : NaN, stdout, stderr: stderr.replace(/__RSS__\d+\n?/, "") });
    });
  });
}

function vmHwmKb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

function wardenContender(runtime, dir, main) {
  const args = ["--root", `default=${dir}`];
  return {
    runtime,
    name: "warden",
    command: runtime === "node" ? process.execPath : denoBinary(),
    args: runtime === "node" ? [main, ...args] : ["run", ...WARDEN_DENO_FLAGS, "core/main.ts", ...args],
    cwd: repoRoot,
    env: childEnv({ WARDEN_PLUGINS_DIR: emptyPlugins }),
  };
}

/** One warden process: spawn, initialize, then `calls` in order; times per call, spawn-to-first-answer, peak RSS. */
async function wardenSession({ runtime, main }, dir, calls) {
  const server = startServer(wardenContender(runtime, dir, main));
  try {
    await server.request("initialize", initializeParams, 60_000);
    server.notify("notifications/initialized");
    const results = [];
    for (const [name, args] of calls) {
      const sent = performance.now();
      const { result, at } = await server.request("tools/call", { name, arguments: args }, 600_000);
      if (result.isError) fail(`warden ${name} failed: ${result.content?.[0]?.text}`);
      results.push({ ms: at - sent, sinceSpawn: at - server.spawnedAt, value: result.structuredContent });
    }
    return { results, rssKb: vmHwmKb(server.pid) };
  } finally {
    await server.stop();
  }
}

function madgeArgs(dir) {
  return [
    path.join(peersDir, "node_modules/madge/bin/cli.js"),
    "--json",
    "--extensions",
    "ts,tsx,mts,cts,js,jsx,mjs,cjs",
    "--ts-config",
    path.join(dir, "tsconfig.json"),
    "src",
  ];
}

function knipArgs() {
  return [
    path.join(peersDir, "node_modules/knip/bin/knip.js"),
    "--include",
    "files,exports,types",
    "--reporter",
    "json",
  ];
}

/** madge's graph as dependents: direct importers and all transitive ones of `target`. */
function madgeDependents(json, target) {
  const graph = JSON.parse(json);
  const importers = new Map();
  for (const [file, deps] of Object.entries(graph)) {
    for (const dep of deps) {
      const key = `src/${dep}`;
      if (!importers.has(key)) importers.set(key, new Set());
      importers.get(key).add(`src/${file}`);
    }
  }
  const all = new Set();
  for (let frontier = [target]; frontier.length;) {
    const next = [];
    for (const t of frontier) {
      for (const from of importers.get(t) ?? []) if (from !== target && !all.has(from)) all.add(from), next.push(from);
    }
    frontier = next;
  }
  const top = [...importers].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1))[0]?.[0];
  return { modules: Object.keys(graph).length, direct: new Set(importers.get(target) ?? []), all, top };
}

function knipFindings(json) {
  const report = JSON.parse(json);
  const exports = new Set();
  const unusedFiles = new Set();
  for (const issue of report.issues ?? []) {
    for (const kind of ["exports", "types"]) for (const e of issue[kind] ?? []) exports.add(`${issue.file}#${e.name}`);
    if ((issue.files ?? []).length || issue.files === true) unusedFiles.add(issue.file);
  }
  for (const file of report.files ?? []) unusedFiles.add(file);
  return { exports, unusedFiles };
}

const mb = (kb) => (Number.isFinite(kb) ? (kb / 1024).toFixed(0) : "n/a");
const sample = (set, n = 4) =>
  [...set].sort().slice(0, n).map((s) => `\`${s}\``).join(", ") + (set.size > n ? ", …" : "");

// ---------------------------------------------------------------------------
// The run

if (runtimes.includes("node") && !existsSync(mainJs)) fail(`${flags.main} is missing: run \`npm run build\` first`);
if (flags.baseline && !existsSync(path.resolve(repoRoot, flags.baseline))) fail(`${flags.baseline} is missing`);
mkdirSync(emptyPlugins, { recursive: true });
const versions = installPeers();
const trees = [];
{
  const dir = path.join(treesDir, `generated-${flags.modules}`);
  let truth;
  try {
    truth = JSON.parse(readFileSync(path.join(dir, ".bench-truth.json"), "utf8"));
    if (truth.version !== TREE_VERSION) truth = undefined;
  } catch { /* not made yet */ }
  if (!truth) {
    note(`bench: generating ${flags.modules} modules under ${path.relative(repoRoot, dir)}/ ...`);
    truth = generateTree(dir, flags.modules);
  }
  trees.push({ name: `generated (${truth.count} files)`, dir, truth });
}
for (const spec of flags.packages.split(",").filter(Boolean)) trees.push(preparePackage(spec));

const rows = { radius: [], dead: [], accuracy: [] };
const notes = [];
for (const tree of trees) {
  // Rounds: madge, knip, then warden on each runtime, so that every tool sees the machine as loaded as the others
  // (in blocks, a busy minute would fall on one tool only).
  const madgeRuns = [];
  const knipRuns = [];
  const radiusByRuntime = new Map(wardens.map((warden) => [warden.label, []]));
  const deadByRuntime = new Map(wardens.map((warden) => [warden.label, []]));
  let target;
  for (let i = 0; i < flags.runs; i++) {
    note(
      `bench: ${tree.name}: round ${i + 1} of ${flags.runs}: madge, knip, warden on ${
        wardens.map((w) => w.label).join(" and ")
      } ...`,
    );
    const madgeRun = await runMeasured(process.execPath, madgeArgs(tree.dir), tree.dir);
    if (madgeRun.code !== 0) fail(`madge failed on ${tree.name}: ${madgeRun.stderr.slice(0, 500)}`);
    madgeRuns.push(madgeRun);
    target ??= tree.truth?.target ?? madgeDependents(madgeRun.stdout, "").top;
    const knipRun = await runMeasured(process.execPath, knipArgs(), tree.dir);
    if (!knipRun.stdout.trim().startsWith("{")) fail(`knip failed on ${tree.name}: ${knipRun.stderr.slice(0, 500)}`);
    knipRuns.push(knipRun);
    for (const warden of wardens) {
      // One process: the cold query builds the graph; the warm ones answer from it (another module each time).
      radiusByRuntime.get(warden.label).push(
        await wardenSession(warden, tree.dir, [
          ["code_blast_radius", { module: target, limit: 100000 }],
          ["code_blast_radius", { module: target, limit: 100000 }],
          ["code_about", { module: target }],
          ["code_blast_radius", { module: "src/index.ts", limit: 100000 }],
        ]),
      );
      // Timed at the default page (about 16 KB), as an agent calls it; the full lists come last, for the comparison.
      deadByRuntime.get(warden.label).push(
        await wardenSession(warden, tree.dir, [
          ["code_dead_exports", {}],
          ["code_dead_exports", {}],
          ["code_dead_exports", { limit: 100000 }],
        ]),
      );
    }
  }
  const madge = madgeDependents(madgeRuns[0].stdout, target);
  const knip = knipFindings(knipRuns[0].stdout);
  const madgeMs = median(madgeRuns.map((r) => r.ms));
  const knipMs = median(knipRuns.map((r) => r.ms));
  for (const { label: runtime } of wardens) {
    const radiusRuns = radiusByRuntime.get(runtime);
    const deadRuns = deadByRuntime.get(runtime);
    const cold = median(radiusRuns.map((r) => r.results[0].ms));
    const coldSpawn = median(radiusRuns.map((r) => r.results[0].sinceSpawn));
    const warm = median(radiusRuns.flatMap((r) => [r.results[1].ms, r.results[2].ms, r.results[3].ms]));
    const rss = median(radiusRuns.map((r) => r.rssKb));
    const first = radiusRuns[0].results[0].value;
    rows.radius.push([
      tree.name,
      runtime,
      String(first.graph.modules),
      fixed(madgeMs, 0),
      mb(median(madgeRuns.map((r) => r.rssKb))),
      fixed(coldSpawn, 0),
      fixed(cold, 0),
      ratio(coldSpawn, madgeMs),
      fixed(warm, 1),
      mb(rss),
    ]);
    const deadCold = median(deadRuns.map((r) => r.results[0].ms));
    const deadSpawn = median(deadRuns.map((r) => r.results[0].sinceSpawn));
    const deadWarm = median(deadRuns.map((r) => r.results[1].ms));
    const dead = deadRuns[0].results[2].value;
    rows.dead.push([
      tree.name,
      runtime,
      fixed(knipMs, 0),
      mb(median(knipRuns.map((r) => r.rssKb))),
      fixed(deadSpawn, 0),
      fixed(deadCold, 0),
      ratio(deadSpawn, knipMs),
      fixed(deadWarm, 1),
      mb(median(deadRuns.map((r) => r.rssKb))),
    ]);
    if (runtime !== wardens[0].label) continue;

    // Answers, compared once per tree.
    const wardenDirect = new Set(first.direct.map((d) => d.path));
    const wardenAll = new Set([...wardenDirect, ...first.transitive.map((t) => t.path)]);
    const wardenDead = new Set(dead.dead.map((d) => `${d.file}#${d.name}`));
    const usedInFile = new Set(dead.dead.filter((d) => d.usedInFile).map((d) => `${d.file}#${d.name}`));
    const wardenUndetermined = new Set(dead.undetermined.map((d) => `${d.file}#${d.name}`));
    const onlyKnip = new Set([...knip.exports].filter((x) => !wardenDead.has(x)));
    const onlyWarden = new Set([...wardenDead].filter((x) => !knip.exports.has(x)));
    const inUnusedFile = new Set([...onlyWarden].filter((x) => knip.unusedFiles.has(x.split("#")[0])));
    const inFile = new Set([...onlyWarden].filter((x) => !inUnusedFile.has(x) && usedInFile.has(x)));
    const otherWarden = new Set([...onlyWarden].filter((x) => !inUnusedFile.has(x) && !inFile.has(x)));
    const knipUndetermined = new Set([...onlyKnip].filter((x) => wardenUndetermined.has(x)));
    const otherKnip = new Set([...onlyKnip].filter((x) => !knipUndetermined.has(x)));
    rows.accuracy.push([
      tree.name,
      `\`${target}\``,
      `${wardenDirect.size} / ${wardenAll.size}${first.lowerBound ? " (lower bound)" : ""}`,
      `${madge.direct.size} / ${madge.all.size}`,
      String(wardenDead.size),
      String(wardenUndetermined.size),
      String(knip.exports.size),
      String([...knip.exports].filter((x) => wardenDead.has(x)).length),
    ]);
    const missed = new Set([...madge.all].filter((x) => !wardenAll.has(x)));
    const extra = new Set([...wardenAll].filter((x) => !madge.all.has(x)));
    let line =
      `- ${tree.name}: dependents of \`${target}\`: ${missed.size} only madge finds${
        missed.size ? ` (${sample(missed)})` : ""
      }, ` +
      `${extra.size} only warden finds${
        extra.size ? ` (${sample(extra)})` : ""
      }. Unused exports only knip reports: ${onlyKnip.size} ` +
      `(${knipUndetermined.size} undetermined in warden${
        knipUndetermined.size ? `, e.g. ${sample(knipUndetermined, 2)}` : ""
      }; ` +
      `${otherKnip.size} other${
        otherKnip.size ? `: ${sample(otherKnip)}` : ""
      }). Only warden reports: ${onlyWarden.size} ` +
      `(${inUnusedFile.size} in files knip reports unused${
        inUnusedFile.size ? `, e.g. ${sample(inUnusedFile, 2)}` : ""
      }; ` +
      `${inFile.size} mentioned in their own file${
        inFile.size ? `, e.g. ${sample(inFile, 2)}` : ""
      }; ${otherWarden.size} other` +
      `${otherWarden.size ? `: ${sample(otherWarden)}` : ""}).`;
    if (tree.truth) {
      const truthDead = new Set(tree.truth.dead);
      const deadOk = truthDead.size === wardenDead.size && [...truthDead].every((x) => wardenDead.has(x));
      line += ` By construction: ${tree.truth.direct} direct and ${tree.truth.dependents} dependents in all, ` +
        `${truthDead.size} dead exports; warden's dead exports are ${deadOk ? "exactly these" : "DIFFERENT"}, ` +
        `knip reports ${[...knip.exports].filter((x) => truthDead.has(x)).length} of them and ` +
        `${[...knip.exports].filter((x) => !truthDead.has(x)).length} others.`;
    }
    notes.push(line);
  }
}

print("## Code intelligence: warden vs madge and knip");
print();
print(
  environmentLines(runtimes)
    .concat(
      `- madge ${versions.madge}, knip ${versions.knip} (typescript ${versions.typescript}); ${flags.runs} runs each, medians`,
    )
    .join("\n"),
);
print();
print("### Dependents (code_blast_radius vs madge --json)");
print();
print(
  "warden spawn→answer is a fresh server's spawn to its first code_blast_radius answer (graph built cold); call is that " +
    "call alone; warm is the median of later calls in the same process (cached graph); madge is its whole CLI run. " +
    "Target: spawn→answer ≤ 0.25× madge, ≤ 200 MB RSS at 3,000 files, warm ≤ 20 ms.",
);
print();
print(markdownTable(
  [
    "tree",
    "runtime",
    ">modules",
    ">madge ms",
    ">madge MB",
    ">warden spawn→answer ms",
    ">call ms",
    ">vs madge",
    ">warm ms",
    ">warden MB",
  ],
  rows.radius,
));
print();
print("### Unused exports (code_dead_exports vs knip --include files,exports,types)");
print();
print("Target: spawn→answer ≤ 0.8× knip.");
print();
print(markdownTable(
  [
    "tree",
    "runtime",
    ">knip ms",
    ">knip MB",
    ">warden spawn→answer ms",
    ">call ms",
    ">vs knip",
    ">warm ms",
    ">warden MB",
  ],
  rows.dead,
));
print();
print("### Answers");
print();
print(markdownTable(
  [
    "tree",
    "module",
    ">warden direct / all",
    ">madge direct / all",
    ">warden dead",
    ">undetermined",
    ">knip unused",
    ">both",
  ],
  rows.accuracy,
));
print();
print(notes.join("\n"));
