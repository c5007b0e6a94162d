// tools/call round trip for a trivial tool over stdio, after initialize:
// warden (fixture_echo from the test fixtures) against the SDK's bare
// low-level Server and FastMCP (each with an `echo` tool), per runtime. All
// contenders of a runtime run side by side and take turns, one block of
// sequential calls each, so that noise on the machine spreads over all.
//
//   node scripts/bench/roundtrip.mjs [--calls 2000] [--warmup 200] [--blocks 20] [--runtime node|deno|both]
import {
  blockStats,
  contendersFor,
  denoBinary,
  ensureBuilt,
  environmentLines,
  fail,
  fixed,
  fixtureTools,
  markdownTable,
  note,
  parseFlags,
  preparePeers,
  print,
  ratio,
  rotate,
  runtimesOf,
  startInitialized,
  verifyDenoPeerResolution,
} from "./_harness.mjs";

/** Largest warden/bare median ratio that meets the round-trip target. */
const TARGET = 1.15;

const flags = parseFlags(process.argv.slice(2), { calls: 2000, warmup: 200, blocks: 20, runtime: "both" });
const runtimes = runtimesOf(flags.runtime);
const perBlock = Math.ceil(flags.calls / flags.blocks);
ensureBuilt({ tests: runtimes.includes("node") });
const peerVersions = preparePeers();
if (runtimes.includes("deno")) verifyDenoPeerResolution(denoBinary());

/** One sequential call; returns its round trip in microseconds. */
async function call(server) {
  const started = performance.now();
  const { result, at } = await server.request("tools/call", server.contender.tool, 10_000);
  if (result?.isError) fail(`${server.contender.name}: tool error ${JSON.stringify(result.content)}`);
  return (at - started) * 1000;
}

const report = [];
for (const runtime of runtimes) {
  const contenders = contendersFor(runtime, { wardenEnv: { WARDEN_TOOLS_DIR: fixtureTools[runtime] } });
  note(`roundtrip: ${runtime}: starting ${contenders.map((c) => c.name).join(", ")} ...`);
  const servers = [];
  try {
    for (const contender of contenders) servers.push(await startInitialized(contender));
    // The first call must echo: a wrong tool or argument fails here, not as a fast error path.
    for (const server of servers) {
      const { result } = await server.request("tools/call", server.contender.tool, 10_000);
      const text = JSON.stringify(result);
      if (result?.isError || !text.includes('"hi')) fail(`${server.contender.name}: unexpected result ${text}`);
    }
    for (const server of servers) for (let i = 0; i < flags.warmup; i++) await call(server);
    const blocks = new Map(servers.map((s) => [s, []]));
    for (let block = 0; block < flags.blocks; block++) {
      for (const server of rotate(servers, block)) {
        const times = [];
        for (let i = 0; i < perBlock; i++) times.push(await call(server));
        blocks.get(server).push(times);
      }
    }
    report.push({ runtime, servers, blocks });
    note(`roundtrip: ${runtime}: done`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

print("## tools/call round trip");
print();
print(
  `Sequential calls of a trivial tool after initialize: ${flags.warmup} warm-up calls each, then ${flags.blocks} alternating blocks of ${perBlock} calls per contender. µs per call from writing the request to reading its response line; "median" and "mean" are the medians over blocks of each block's median and mean.`,
);
print();
for (const line of environmentLines(runtimes, peerVersions)) print(line);
const verdicts = [];
for (const { runtime, servers, blocks } of report) {
  const stats = new Map(servers.map((s) => [s, blockStats(blocks.get(s))]));
  const base = stats.get(servers.find((s) => s.contender.baseline));
  const rows = servers.map((s) => {
    const st = stats.get(s);
    const tool = `${s.contender.tool.name}`;
    return [
      s.contender.name,
      tool,
      fixed(st.median, 0),
      fixed(st.mean, 0),
      fixed(st.p10, 0),
      fixed(st.p90, 0),
      fixed(st.p99, 0),
      ratio(st.median, base.median),
      ratio(st.mean, base.mean),
    ];
  });
  const warden = stats.get(servers.find((s) => s.contender.name === "warden"));
  const holds = warden.median / base.median <= TARGET;
  verdicts.push(
    `- ${runtime}: warden ${ratio(warden.median, base.median)} bare SDK by median (${
      ratio(warden.mean, base.mean)
    } by mean), target ≤ ${TARGET.toFixed(2)}×: **${holds ? "met" : "NOT met"}**`,
  );
  print();
  print(`### ${runtime}`);
  print();
  print(
    markdownTable(
      [
        "contender",
        "tool",
        ">median µs",
        ">mean µs",
        ">p10 µs",
        ">p90 µs",
        ">p99 µs",
        ">median vs bare",
        ">mean vs bare",
      ],
      rows,
    ),
  );
}
print();
print("### Verdict");
print();
for (const line of verdicts) print(line);
process.exit(0);
