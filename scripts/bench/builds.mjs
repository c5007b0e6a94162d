// This build against another commit's, side by side: the tools/call round trip
// of fixture_echo over stdio (initialize era), node. The base commit is checked
// out into .bench/builds/<commit> (a git worktree) and built there with its own
// build script; the two servers take turns, one block of sequential calls each,
// so that the machine's noise falls on both. For a change's own cost, where a
// ratio against a peer server moves with the machine more than with the code.
//
//   node scripts/bench/builds.mjs --base <commit> [--calls 1500] [--blocks 16]
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import {
  benchDir,
  blockStats,
  childEnv,
  contendersFor,
  ensureBuilt,
  fail,
  fixed,
  markdownTable,
  note,
  parseFlags,
  print,
  repoRoot,
  rotate,
  startInitialized,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { base: "", calls: 1500, blocks: 16 });
if (flags.base === "") fail("name the commit to compare with: --base <commit>, e.g. --base HEAD~3");
ensureBuilt({ tests: true });

const git = (...args) => execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim();
let commit;
try {
  commit = git("rev-parse", "--verify", `${flags.base}^{commit}`);
} catch {
  fail(`--base ${flags.base}: not a commit of this repository`);
}
const baseDir = path.join(benchDir, "builds", commit.slice(0, 12));
if (!existsSync(path.join(baseDir, "dist", "core", "main.js"))) {
  note(`builds: checking out and building ${commit.slice(0, 12)} in ${path.relative(repoRoot, baseDir)} ...`);
  mkdirSync(path.dirname(baseDir), { recursive: true });
  if (!existsSync(baseDir)) git("worktree", "add", "--detach", baseDir, commit);
  // The same dependencies: a base whose package.json differs is measured with this one's node_modules.
  if (!existsSync(path.join(baseDir, "node_modules"))) {
    symlinkSync(path.join(repoRoot, "node_modules"), path.join(baseDir, "node_modules"));
  }
  execFileSync(process.execPath, ["scripts/build.mjs", "--tests"], {
    cwd: baseDir,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

const [template] = contendersFor("node", { peers: [] });
const contender = (name, root) => ({
  ...template,
  name,
  args: [path.join(root, "dist/core/main.js")],
  cwd: root,
  env: childEnv({ WARDEN_TOOLS_DIR: path.join(root, "dist/test/fixtures/tools") }),
});
const servers = [];
try {
  for (const c of [contender("base", baseDir), contender("this build", repoRoot)]) {
    servers.push(await startInitialized(c));
  }
  const blocks = new Map(servers.map((server) => [server, []]));
  const perBlock = flags.calls;
  for (let block = 0; block < flags.blocks; block++) {
    for (const server of rotate(servers, block)) {
      const times = [];
      for (let i = 0; i < perBlock; i++) {
        const started = performance.now();
        const { result, at } = await server.request("tools/call", server.contender.tool, 10_000);
        if (result?.isError) fail(`${server.contender.name}: tool error ${JSON.stringify(result.content)}`);
        times.push((at - started) * 1000);
      }
      blocks.get(server).push(times);
    }
  }
  const [base, current] = servers.map((server) => blockStats(blocks.get(server)));
  print(`### This build against ${commit.slice(0, 12)}: fixture_echo round trip, node ${process.versions.node}`);
  print();
  print(markdownTable(["build", ">median µs", ">mean µs", ">p10 µs", ">p90 µs", ">median vs base"], [
    ["base", fixed(base.median), fixed(base.mean), fixed(base.p10), fixed(base.p90), "1.000×"],
    [
      "this build",
      fixed(current.median),
      fixed(current.mean),
      fixed(current.p10),
      fixed(current.p90),
      `${(current.median / base.median).toFixed(3)}×`,
    ],
  ]));
  print();
  print(`${flags.blocks} blocks of ${perBlock} calls each, taken in turn; median of the blocks' medians.`);
} finally {
  for (const server of servers) await server.stop(0);
}
