// Cold start to the initialize response: the time from spawn until the line
// answering an `initialize` request (written to stdin right after the spawn)
// arrives on stdout. warden, started by exactly the command README registers
// (node: `node dist/core/main.js`; deno: what `warden command --runtime deno`
// prints, the deno binary with only the permissions warden needs), against the
// SDK's bare low-level Server and a FastMCP server with one tool, and under deno
// also `deno task start` (for trying by hand: the task runner, broad flags), all
// contenders alternating round-robin in one run.
//
// With --cpu, each start also runs under /usr/bin/time and the table gains the CPU time (user + sys, whole process
// life) per start: on a machine shared with other work, wall time measures the neighbours as much as the servers.
//
//   node scripts/bench/startup.mjs [--runs 15] [--runtime node|deno|both] [--cpu]
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  childEnv,
  coldStart,
  contendersFor,
  denoBinary,
  ensureBuilt,
  environmentLines,
  fixed,
  markdownTable,
  median,
  note,
  parseFlags,
  preparePeers,
  print,
  quantile,
  ratio,
  repoRoot,
  rotate,
  runtimesOf,
  verifyDenoPeerResolution,
} from "./_harness.mjs";

/** Largest warden/bare median ratio that meets the startup target, by runtime. */
const TARGET = { node: 0.7, deno: 0.8 };

const flags = parseFlags(process.argv.slice(2), { runs: 15, runtime: "both", cpu: false });
if (flags.cpu && !existsSync("/usr/bin/time")) throw new Error("--cpu needs /usr/bin/time: apt-get install time");
const runtimes = runtimesOf(flags.runtime);
ensureBuilt();
const peerVersions = preparePeers();
if (runtimes.includes("deno")) verifyDenoPeerResolution(denoBinary());

/**
 * The deno command README registers: what `warden command --runtime deno --json` prints, here, with the defaults
 * (the program, its arguments and the variables it sets, deno's update check off).
 */
function readmeDenoCommand() {
  const printed = spawnSync(process.execPath, ["dist/core/main.js", "command", "--runtime", "deno", "--json"], {
    cwd: repoRoot,
    env: childEnv(),
    encoding: "utf8",
  });
  if (printed.status !== 0) throw new Error(`warden command failed: ${printed.stderr}`);
  return JSON.parse(printed.stdout);
}

const contenders = runtimes.flatMap((runtime) => {
  const list = contendersFor(runtime);
  if (runtime !== "deno") return list;
  const warden = list.find((c) => c.name === "warden");
  const { command, args, env } = readmeDenoCommand();
  // The peers start with deno's update check off as well (the task sets it itself): a peer that lives past ~500 ms
  // would otherwise look up dl.deno.land, which the CPU column (the whole life) would count.
  const peers = list.filter((c) => c !== warden).map((c) => ({ ...c, env: childEnv(env) }));
  return [
    { ...warden, command, args, env: childEnv(env), variables: env },
    { ...warden, name: "deno task start", args: ["task", "start"] },
    ...peers,
  ];
});

mkdirSync(path.join(repoRoot, ".bench"), { recursive: true });
const cpuFile = (contender) => path.join(repoRoot, ".bench", `startup-cpu-${contenders.indexOf(contender)}.txt`);
/** One start; with --cpu, under /usr/bin/time, whose report is read once the server has exited. */
async function start(contender) {
  if (!flags.cpu) return { ms: await coldStart(contender) };
  const timed = {
    ...contender,
    command: "/usr/bin/time",
    args: ["-f", "%U %S", "-o", cpuFile(contender), contender.command, ...contender.args],
  };
  const ms = await coldStart(timed);
  const [user, sys] = readFileSync(cpuFile(contender), "utf8").trim().split("\n").at(-1).split(" ").map(Number);
  return { ms, cpuMs: (user + sys) * 1000 };
}

// One unmeasured start each fills the OS page cache and deno's caches (and proves every contender answers).
note(`startup: warm-up start of ${contenders.length} contenders ...`);
for (const contender of contenders) await start(contender);

const samples = new Map(contenders.map((c) => [c, []]));
const cpu = new Map(contenders.map((c) => [c, []]));
for (let round = 0; round < flags.runs; round++) {
  for (const contender of rotate(contenders, round)) {
    const { ms, cpuMs } = await start(contender);
    samples.get(contender).push(ms);
    if (cpuMs !== undefined) cpu.get(contender).push(cpuMs);
  }
  note(`startup: round ${round + 1}/${flags.runs} done`);
}

print("## Cold start to the initialize response");
print();
print(
  `${flags.runs} alternating rounds (round-robin over all contenders, rotating which starts first), after one unmeasured warm-up start each. ms from spawn to the initialize response line${
    flags.cpu
      ? "; CPU ms: user + sys of the whole process life (start, answer, exit when stdin closes), from /usr/bin/time"
      : ""
  }.`,
);
print();
for (const contender of contenders) {
  if (contender.name === "warden" || contender.name === "deno task start") {
    const set = Object.entries(contender.variables ?? {}).map(([name, value]) => `${name}=${value} `).join("");
    print(`- ${contender.runtime} ${contender.name}: \`${set}${[contender.command, ...contender.args].join(" ")}\``);
  }
}
print();
for (const line of environmentLines(runtimes, peerVersions)) print(line);
const verdicts = [];
for (const runtime of runtimes) {
  const group = contenders.filter((c) => c.runtime === runtime);
  const bare = group.find((c) => c.baseline);
  const baseline = median(samples.get(bare));
  const rows = group.map((c) => {
    const s = samples.get(c);
    const row = [
      c.name,
      fixed(median(s)),
      fixed(quantile(s, 0.1)),
      fixed(quantile(s, 0.9)),
      fixed(Math.min(...s)),
      ratio(median(s), baseline),
    ];
    return flags.cpu ? [...row, fixed(median(cpu.get(c))), ratio(median(cpu.get(c)), median(cpu.get(bare)))] : row;
  });
  const warden = median(samples.get(group.find((c) => c.name === "warden")));
  const holds = warden / baseline <= TARGET[runtime];
  verdicts.push(
    `- ${runtime}: warden ${ratio(warden, baseline)} bare SDK, target ≤ ${TARGET[runtime].toFixed(2)}×: **${
      holds ? "met" : "NOT met"
    }**`,
  );
  print();
  print(
    `### ${runtime}${
      runtime === "node"
        ? " (warden: `node dist/core/main.js`)"
        : " (warden: the command `warden command --runtime deno` prints, which runs the build, dist/core/main.js; `deno task start`: the source)"
    }`,
  );
  print();
  const headers = ["contender", ">median ms", ">p10 ms", ">p90 ms", ">min ms", ">vs bare SDK"];
  print(markdownTable(flags.cpu ? [...headers, ">CPU ms (median)", ">CPU vs bare"] : headers, rows));
}
print();
print("### Verdict");
print();
for (const line of verdicts) print(line);
process.exit(0);
