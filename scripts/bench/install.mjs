// What installing warden costs, as people install it: the tarball `npm pack` makes of this checkout, `npm install` of
// it into an empty directory (seconds and bytes on disk, with npm's cache warm), a cold `npm exec` of it (npx's form for
// a tarball: nothing installed for it yet, npm's cache warm) to the first initialize answer, and the start-up of the
// installed package against the bare SDK server, on node and deno. Each for the package alone (what `npx -y` installs:
// deno is an optional peer) and with deno beside it, alternating, median of --runs.
//
//   node scripts/bench/install.mjs [--runs 3] [--starts 15] [--runtime node|deno|both]
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  benchDir,
  childEnv,
  coldStart,
  contendersFor,
  ensureBuilt,
  environmentLines,
  fail,
  fixed,
  markdownTable,
  median,
  note,
  parseFlags,
  preparePeers,
  print,
  ratio,
  repoRoot,
  rotate,
  runtimesOf,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { runs: 3, starts: 15, runtime: "both" });
const runtimes = runtimesOf(flags.runtime);
ensureBuilt();
const peerVersions = preparePeers();
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
const work = path.join(benchDir, "install");
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

/** npm's environment: without the npm_config_* of an `npm run` around this script, which would point npm here. */
const npmEnv = () => Object.fromEntries(Object.entries(childEnv()).filter(([key]) => !/^npm_/i.test(key)));

function npmRun(args, cwd) {
  const started = performance.now();
  const result = spawnSync(npm, [...args, ...NPM_FLAGS], { cwd, env: npmEnv(), encoding: "utf8" });
  if (result.status !== 0) fail(`npm ${args.join(" ")} failed in ${cwd}:\n${result.stderr}`);
  return { ms: performance.now() - started, stdout: result.stdout };
}

/** Bytes on disk (allocated blocks) and files under `dir`, a hard link counted once. */
function diskUsage(dir) {
  const seen = new Set();
  let bytes = 0;
  let files = 0;
  for (const rel of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const stat = lstatSync(path.join(dir, rel));
    if (seen.has(`${stat.dev}:${stat.ino}`)) continue;
    seen.add(`${stat.dev}:${stat.ino}`);
    bytes += stat.blocks * 512;
    if (stat.isFile()) files++;
  }
  return { bytes, files };
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

note("install: npm pack ...");
const [packed] = JSON.parse(
  npmRun(["pack", "--ignore-scripts", "--json", "--pack-destination", work], repoRoot).stdout,
);
const tarball = path.join(work, packed.filename);
// deno is an optional peer: `npx -y mcp-warden` installs the package alone; plugins and the deno command need deno,
// installed beside it (`npm install mcp-warden deno`) or on its own.
const variants = [
  { name: "package alone", specs: [tarball] },
  { name: "with deno", specs: [tarball, "deno"] },
];

/** npm install of the variant into a new empty directory: its time and the size of what it installed. */
function installInto(variant, label) {
  const dir = path.join(work, `${variant.name.replace(" ", "-")}-${label}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "empty", private: true }));
  const { ms } = npmRun(["install", ...variant.specs], dir);
  return { dir, ms, ...diskUsage(path.join(dir, "node_modules")) };
}

// One unmeasured install each warms npm's cache (and the OS's) with every package either needs.
note("install: warm-up install of each ...");
for (const variant of variants) installInto(variant, "warmup");
const installs = new Map(variants.map((v) => [v, []]));
for (let round = 0; round < flags.runs; round++) {
  for (const variant of rotate(variants, round)) installs.get(variant).push(installInto(variant, `run${round}`));
  note(`install: round ${round + 1}/${flags.runs} of npm install done`);
}

// Cold npm exec: a tarball of a new name each time, so npx has nothing installed for it (its cache key is the spec).
const npxDir = path.join(
  spawnSync(npm, ["config", "get", "cache"], { env: npmEnv(), encoding: "utf8" }).stdout.trim(),
  "_npx",
);
const npxBefore = new Set(existsSync(npxDir) ? readdirSync(npxDir) : []);
const empty = path.join(work, "empty");
const state = path.join(work, "state");
mkdirSync(path.join(state, "plugins"), { recursive: true });
mkdirSync(empty);
/** Every state setting into the bench's scratch: nothing written into the package. */
const STATE_FLAGS = [
  ["--ledger", "ledger"],
  ["--jobs-dir", "jobs"],
  ["--plugins-dir", "plugins"],
  ["--plugins-lock", "plugins.lock.json"],
  ["--allowed-signers", "allowed_signers"],
  ["--revoked-keys", "revoked_keys"],
].flatMap(([flag, name]) => [flag, path.join(state, name)]);
const npxStarts = new Map(variants.map((v) => [v, []]));
let copies = 0;
note("install: cold npm exec ...");
for (let round = 0; round < flags.runs; round++) {
  for (const variant of rotate(variants, round)) {
    const copy = path.join(work, `npx-${copies++}-${path.basename(tarball)}`);
    cpSync(tarball, copy);
    const packages = [copy, ...variant.specs.slice(1)].flatMap((spec) => ["--package", spec]);
    const ms = await coldStart({
      runtime: "node",
      name: `npm exec (${variant.name})`,
      command: npm,
      args: ["exec", "--yes", ...NPM_FLAGS, ...packages, "--", "warden", ...STATE_FLAGS],
      cwd: empty,
      env: npmEnv(),
    });
    npxStarts.get(variant).push(ms);
  }
  note(`install: round ${round + 1}/${flags.runs} of npm exec done`);
}
// npm exec's installs of those tarballs: scratch.
for (const name of existsSync(npxDir) ? readdirSync(npxDir) : []) {
  if (!npxBefore.has(name)) rmSync(path.join(npxDir, name), { recursive: true, force: true });
}

// Start-up of the installed package (the install with deno, as npm put it) against the bare SDK server.
const installedDir = installs.get(variants[1])[0].dir;
const bin = path.join(installedDir, "node_modules", ".bin", "warden");
const printed = spawnSync(bin, ["command", "--runtime", "deno", "--json", ...STATE_FLAGS], {
  cwd: installedDir,
  env: childEnv(),
  encoding: "utf8",
});
if (printed.status !== 0) fail(`warden command --runtime deno failed: ${printed.stderr}`);
const denoCommand = JSON.parse(printed.stdout);
const contenders = runtimes.flatMap((runtime) => {
  const [clone, bare] = contendersFor(runtime, { wardenArgs: STATE_FLAGS, peers: ["bare"] });
  const installed = runtime === "node"
    ? { command: process.execPath, args: [path.join(installedDir, "node_modules", "mcp-warden", "dist/core/main.js")] }
    : { command: denoCommand.command, args: denoCommand.args.filter((a) => !STATE_FLAGS.includes(a)) };
  return [{
    runtime,
    name: "installed warden",
    command: installed.command,
    args: [...installed.args, ...STATE_FLAGS],
    cwd: installedDir,
    env: childEnv(runtime === "deno" ? denoCommand.env : {}),
  }, {
    ...clone,
    name: runtime === "node" ? "clone warden" : "clone warden, its source (deno task flags)",
    env: childEnv(runtime === "deno" ? denoCommand.env : {}),
  }, { ...bare, env: runtime === "deno" ? childEnv(denoCommand.env) : bare.env }];
});
note(`install: warm-up start of ${contenders.length} contenders ...`);
for (const contender of contenders) await coldStart(contender);
const starts = new Map(contenders.map((c) => [c, []]));
for (let round = 0; round < flags.starts; round++) {
  for (const contender of rotate(contenders, round)) starts.get(contender).push(await coldStart(contender));
}

print("## Install: the package as people install it");
print();
print(
  `${flags.runs} alternating rounds after one unmeasured install of each (npm's cache warm); \`npm install <tarball>\` into an empty directory with \`${
    NPM_FLAGS.join(" ")
  }\`. Bytes on disk: allocated blocks of node_modules, a hard link once.`,
);
print();
for (const line of environmentLines(runtimes, peerVersions)) print(line);
print(`- npm ${spawnSync(npm, ["--version"], { encoding: "utf8" }).stdout.trim()}`);
print();
print(
  markdownTable(
    [
      "",
      ">tarball",
      ">installed (disk)",
      ">files",
      ">npm install s (median)",
      ">cold npm exec to initialize ms (median)",
    ],
    variants.map((variant) => {
      const list = installs.get(variant);
      return [
        variant.name,
        mb(lstatSync(tarball).size),
        mb(median(list.map((i) => i.bytes))),
        String(median(list.map((i) => i.files))),
        fixed(median(list.map((i) => i.ms)) / 1000, 2),
        fixed(median(npxStarts.get(variant)), 0),
      ];
    }),
  ),
);
print();
print(`### Start-up of the installed package (${flags.starts} alternating rounds, spawn to the initialize answer)`);
print();
print(
  markdownTable(
    ["runtime", "contender", ">median ms", ">vs bare SDK"],
    contenders.map((c) => {
      const bare = contenders.find((b) => b.runtime === c.runtime && b.baseline);
      return [c.runtime, c.name, fixed(median(starts.get(c))), ratio(median(starts.get(c)), median(starts.get(bare)))];
    }),
  ),
);
rmSync(work, { recursive: true, force: true });
process.exit(0);
