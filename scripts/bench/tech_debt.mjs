// Throughput of warden's tech_debt_check on a large tree: files scanned per
// second, through raw JSON-RPC over stdio, on node (the build) and deno (the
// source). The tree is ~5,000 generated TypeScript files under .bench/tree
// (deterministic, made once); --package also scans the sources of an npm
// package (rxjs unless named) unpacked under .bench/pkg.
//
//   node scripts/bench/tech_debt.mjs [--runs 5] [--runtime node|deno|both] [--package [spec]]
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  benchDir,
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
  ratio,
  rotate,
  runtimesOf,
  startInitialized,
} from "./_harness.mjs";

// A bare `--package` means rxjs.
const argv = process.argv.slice(2).map((arg, i, all) =>
  arg === "--package" && (all[i + 1] === undefined || all[i + 1].startsWith("--")) ? "--package=rxjs" : arg
);
const flags = parseFlags(argv, { runs: 5, runtime: "both", files: 5000, package: "" });
const runtimes = runtimesOf(flags.runtime);
ensureBuilt();

// ---------------------------------------------------------------------------
// The generated tree

const TREE_VERSION = 2;
const treeDir = path.join(benchDir, "tree");
const treeManifest = path.join(treeDir, ".bench-tree.json");

/** mulberry32: a small seeded PRNG, so the tree is the same on every machine. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  "account batch cache config cursor draft entry event filter graph index ledger matrix node order parser queue record report route schema session shard signal token window"
    .split(" ");
const NOTES = [
  "handle the empty case",
  "remove after the migration",
  "this is O(n^2)",
  "ask the API team",
  "flaky on CI",
  "rename once callers move",
  "use the shared helper",
];

/** One TypeScript module; `expect` counts the markers it plants by tag. */
function moduleSource(random, name, expect) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const cap = (w) => w[0].toUpperCase() + w.slice(1);
  const mark = (tag) => (expect[tag] = (expect[tag] ?? 0) + 1, tag);
  const out = [
    `// ${name}: ${pick(WORDS)} and ${pick(WORDS)} handling.`,
    `import { ${pick(WORDS)}Of } from "./${pick(WORDS)}.ts";`,
    "",
  ];
  // Decoys the scanner must not count: markers in strings and identifiers.
  if (random() < 0.2) {
    out.push(`export const TODO_URL = "https://example.com/TODO";`, `const label = "FIXME later";`, "");
  }
  const parts = 2 + Math.floor(random() * 10);
  for (let p = 0; p < parts; p++) {
    const noun = cap(pick(WORDS));
    const doc = random() < 0.015
      ? ` * ${mark("XXX")}: ${pick(NOTES)}`
      : ` * Builds the ${noun.toLowerCase()} for a ${pick(WORDS)}.`;
    out.push("/**", doc, " */");
    if (random() < 0.5) {
      out.push(`export interface ${noun}${p} {`);
      for (let f = 0; f < 2 + Math.floor(random() * 8); f++) {
        out.push(`  readonly ${pick(WORDS)}${f}: ${pick(["string", "number", "boolean", "string[]"])};`);
      }
      out.push("}", "");
    }
    out.push(
      `export function make${noun}${p}(input: readonly number[], limit = ${Math.floor(random() * 100)}): number {`,
    );
    if (random() < 0.04) out.push(`  // ${mark("TODO")}: ${pick(NOTES)}`);
    out.push("  let total = 0;", "  for (const value of input) {");
    for (let s = 0; s < 2 + Math.floor(random() * 12); s++) {
      out.push(`    if (value % ${s + 2} === 0) total += value * ${s + 1}; // ${pick(WORDS)}`);
    }
    if (random() < 0.02) out.push(`    /* ${mark("FIXME")}: ${pick(NOTES)} */`);
    out.push("    if (total > limit) break;", "  }");
    if (random() < 0.01) out.push(`  return total; // ${mark("HACK")}: ${pick(NOTES)}`);
    else out.push("  return total;");
    out.push("}", "");
    if (random() < 0.005) {
      mark("STUB");
      out.push(`export function pending${noun}${p}(): never {`, '  throw new Error("not implemented");', "}", "");
    }
  }
  return out.join("\n");
}

/** Writes .bench/tree once (again only when the generator or --files changed). */
function ensureTree(count) {
  try {
    const manifest = JSON.parse(readFileSync(treeManifest, "utf8"));
    if (manifest.version === TREE_VERSION && manifest.files === count) return manifest;
  } catch { /* not there yet */ }
  note(`tech_debt: generating ${count} files under ${path.relative(process.cwd(), treeDir) || treeDir} ...`);
  rmSync(treeDir, { recursive: true, force: true });
  const random = prng(20251129);
  const expect = { TODO: 0, FIXME: 0, HACK: 0, XXX: 0, STUB: 0 };
  const perDir = 25;
  for (let i = 0; i < count; i++) {
    const dir = path.join(
      treeDir,
      `packages/pkg-${String(Math.floor(i / (perDir * 10))).padStart(2, "0")}/src/area-${Math.floor(i / perDir) % 10}`,
    );
    if (i % perDir === 0) mkdirSync(dir, { recursive: true });
    const name = `${WORDS[i % WORDS.length]}_${i}.ts`;
    writeFileSync(path.join(dir, name), moduleSource(random, name, expect));
  }
  finishRoot(treeDir);
  const manifest = { version: TREE_VERSION, files: count, expect };
  writeFileSync(treeManifest, `${JSON.stringify(manifest)}\n`);
  return manifest;
}

/**
 * Makes a benchmark tree its own git root: globby honours the .gitignore of
 * the enclosing repository, whose `.bench/` entry would otherwise hide every
 * file from tech_debt_check. An empty `.git` directory is all globby looks for.
 */
function finishRoot(dir) {
  mkdirSync(path.join(dir, ".git"), { recursive: true });
}

/** `npm pack <spec>` unpacked under .bench/pkg/, once. */
function ensurePackage(spec) {
  const home = path.join(benchDir, "pkg", spec.replace(/[^\w.@-]+/g, "_"));
  const root = path.join(home, "package");
  if (existsSync(path.join(root, "package.json"))) return root;
  note(`tech_debt: fetching ${spec} with npm pack ...`);
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home, { recursive: true });
  const pack = spawnSync("npm", ["pack", spec, "--pack-destination", home, "--json", "--silent"], { encoding: "utf8" });
  if (pack.status !== 0) fail(`npm pack ${spec} failed:\n${pack.stderr}`);
  const [{ filename }] = JSON.parse(pack.stdout);
  const untar = spawnSync("tar", ["-xzf", path.join(home, path.basename(filename)), "-C", home], { encoding: "utf8" });
  if (untar.status !== 0) fail(`tar could not unpack ${filename}:\n${untar.stderr}`);
  finishRoot(root);
  return root;
}

/** Reads every file once so that "cold" means a cold process, not a cold disk. */
function warmPageCache(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) readFileSync(path.join(entry.parentPath ?? entry.path, entry.name));
  }
}

// ---------------------------------------------------------------------------
// Runs

const trees = [{ label: `generated (${flags.files} .ts files)`, dir: treeDir, manifest: ensureTree(flags.files) }];
if (flags.package) {
  const dir = ensurePackage(flags.package);
  const version = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).version;
  trees.push({ label: `${flags.package.replace(/@[^@/]*$/, "") || flags.package}@${version} (npm pack)`, dir });
}

async function scan(server) {
  const started = performance.now();
  const { result, at } = await server.request("tools/call", { name: "tech_debt_check", arguments: {} }, 600_000);
  if (result?.isError) fail(`${server.contender.runtime} warden: ${JSON.stringify(result.content)}`);
  const content = result.structuredContent;
  if (!content || !(content.filesScanned > 0)) {
    fail(`${server.contender.runtime} warden scanned no files: ${JSON.stringify(result).slice(0, 500)}`);
  }
  const seconds = (at - started) / 1000;
  return { ms: seconds * 1000, filesPerSecond: content.filesScanned / seconds, content };
}

const results = [];
for (const tree of trees) {
  warmPageCache(tree.dir);
  const contenders = runtimes.map((runtime) =>
    contendersFor(runtime, { wardenArgs: ["--root", `default=${tree.dir}`, "--call-timeout", "10m"], peers: [] })[0]
  );
  const servers = [];
  try {
    for (const contender of contenders) servers.push(await startInitialized(contender));
    const samples = new Map(servers.map((s) => [s, []]));
    for (let run = 0; run <= flags.runs; run++) {
      for (const server of rotate(servers, run)) samples.get(server).push(await scan(server));
      note(`tech_debt: ${tree.label}: ${run === 0 ? "cold run" : `run ${run}/${flags.runs}`} done`);
    }
    results.push({ tree, servers, samples });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

print("## tech_debt_check throughput");
print();
print(
  `Files scanned per second (structuredContent.filesScanned / seconds from writing tools/call to reading its response), one warden process per runtime and tree, \`--root default=<tree>\`, arguments \`{}\`. "cold" is each process's first call (page cache pre-warmed); "warm" is the median of the next ${flags.runs}, runtimes alternating.`,
);
print();
for (const line of environmentLines(runtimes)) print(line);
const notes = [];
for (const { tree, servers, samples } of results) {
  const rows = servers.map((s) => {
    const [cold, ...warm] = samples.get(s);
    const c = cold.content;
    return {
      runtime: s.contender.runtime,
      warmFps: median(warm.map((w) => w.filesPerSecond)),
      cells: [
        s.contender.runtime,
        c.filesScanned,
        fixed(cold.ms, 0),
        fixed(cold.filesPerSecond, 0),
        fixed(median(warm.map((w) => w.ms)), 0),
        fixed(median(warm.map((w) => w.filesPerSecond)), 0),
        fixed(Math.min(...warm.map((w) => w.filesPerSecond)), 0) + "–" +
        fixed(Math.max(...warm.map((w) => w.filesPerSecond)), 0),
        Object.values(c.skipped).reduce((a, b) => a + b, 0),
        c.totalFindings,
        `${c.filesWithFindings}`,
      ],
      content: c,
    };
  });
  const node = rows.find((r) => r.runtime === "node");
  for (const row of rows) row.cells.push(node ? ratio(row.warmFps, node.warmFps) : "n/a");
  print();
  print(`### ${tree.label}`);
  print();
  print(
    markdownTable(
      [
        "runtime",
        ">files",
        ">cold ms",
        ">cold files/s",
        ">warm ms",
        ">warm files/s",
        ">warm range files/s",
        ">skipped",
        ">findings",
        ">files with findings",
        ">vs node",
      ],
      rows.map((r) => r.cells),
    ),
  );
  const counts = new Set(rows.map((r) => `${r.content.filesScanned}/${r.content.totalFindings}`));
  if (counts.size > 1) {
    notes.push(`- ${tree.label}: node and deno disagree on files/findings: ${[...counts].join(" vs ")}`);
  }
  if (tree.manifest) {
    const expected = tree.manifest.expect;
    const got = rows[0].content.totals;
    const same = Object.keys(expected).every((tag) => expected[tag] === got[tag]) &&
      rows[0].content.filesScanned === tree.manifest.files;
    notes.push(
      `- ${tree.label}: planted markers ${JSON.stringify(expected)}; reported ${JSON.stringify(got)}, ${
        rows[0].content.filesScanned
      } files: **${same ? "match" : "MISMATCH"}**`,
    );
  }
}
print();
print("### Checks");
print();
for (const line of notes) print(line);
process.exit(0);
