// Cold start to the initialize response: the time from spawn until the line
// answering an `initialize` request (written to stdin right after the spawn)
// arrives on stdout. warden against the SDK's bare low-level Server and a
// FastMCP server with one tool, on node (warden's build) and deno (warden's
// source), all contenders alternating round-robin in one run.
//
//   node scripts/bench/startup.mjs [--runs 15] [--runtime node|deno|both]
import {
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
  rotate,
  runtimesOf,
  verifyDenoPeerResolution,
} from "./_harness.mjs";

/** Largest warden/bare median ratio that meets the startup target, by runtime. */
const TARGET = { node: 0.7, deno: 0.8 };

const flags = parseFlags(process.argv.slice(2), { runs: 15, runtime: "both" });
const runtimes = runtimesOf(flags.runtime);
ensureBuilt();
const peerVersions = preparePeers();
if (runtimes.includes("deno")) verifyDenoPeerResolution(denoBinary());

const contenders = runtimes.flatMap((runtime) => contendersFor(runtime));

// One unmeasured start each fills the OS page cache and deno's caches (and proves every contender answers).
note(`startup: warm-up start of ${contenders.length} contenders ...`);
for (const contender of contenders) await coldStart(contender);

const samples = new Map(contenders.map((c) => [c, []]));
for (let round = 0; round < flags.runs; round++) {
  for (const contender of rotate(contenders, round)) samples.get(contender).push(await coldStart(contender));
  note(`startup: round ${round + 1}/${flags.runs} done`);
}

print("## Cold start to the initialize response");
print();
print(
  `${flags.runs} alternating rounds (round-robin over all contenders, rotating which starts first), after one unmeasured warm-up start each. ms from spawn to the initialize response line.`,
);
print();
for (const line of environmentLines(runtimes, peerVersions)) print(line);
const verdicts = [];
for (const runtime of runtimes) {
  const group = contenders.filter((c) => c.runtime === runtime);
  const baseline = median(samples.get(group.find((c) => c.baseline)));
  const rows = group.map((c) => {
    const s = samples.get(c);
    return [
      c.name,
      fixed(median(s)),
      fixed(quantile(s, 0.1)),
      fixed(quantile(s, 0.9)),
      fixed(Math.min(...s)),
      ratio(median(s), baseline),
    ];
  });
  const warden = median(samples.get(group.find((c) => c.name === "warden")));
  const holds = warden / baseline <= TARGET[runtime];
  verdicts.push(
    `- ${runtime}: warden ${ratio(warden, baseline)} bare SDK, target ≤ ${TARGET[runtime].toFixed(2)}×: **${
      holds ? "met" : "NOT met"
    }**`,
  );
  print();
  print(`### ${runtime}${runtime === "node" ? " (warden: dist/core/main.js)" : " (warden: core/main.ts from source)"}`);
  print();
  print(markdownTable(["contender", ">median ms", ">p10 ms", ">p90 ms", ">min ms", ">vs bare SDK"], rows));
}
print();
print("### Verdict");
print();
for (const line of verdicts) print(line);
process.exit(0);
