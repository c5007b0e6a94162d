// What the operator's policy engine costs a call: warden's tools/call round trip of a trivial tool over stdio with
// --policy-url naming a local endpoint that allows everything (it answers as OPA's data API, in microseconds: the
// figure is warden's own cost of asking, an HTTP round trip on loopback, not a policy's), against the same server
// without one. The two servers take turns, a block of sequential calls each; median of the blocks' medians.
// Node (bundled) and deno (source).
//
//   node scripts/bench/policy.mjs [--calls 2000] [--blocks 12] [--runtime node|deno|both]
import { createServer } from "node:http";
import {
  blockStats,
  contendersFor,
  ensureBuilt,
  fixed,
  fixtureTools,
  markdownTable,
  parseFlags,
  print,
  ratio,
  rotate,
  runtimesOf,
  startInitialized,
} from "./_harness.mjs";

const flags = parseFlags(process.argv.slice(2), { calls: 2000, blocks: 12, runtime: "both" });
ensureBuilt({ tests: true });

/** A decision endpoint that allows every call, and how many it was asked. */
async function allowEverything() {
  let asked = 0;
  const server = createServer((req, res) => {
    req.resume().on("end", () => {
      asked++;
      res.writeHead(200, { "content-type": "application/json" }).end('{"result":{"allow":true,"reasons":[]}}');
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/data/warden/authz`,
    asked: () => asked,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const engine = await allowEverything();
const rows = [];
for (const runtime of runtimesOf(flags.runtime)) {
  const env = { WARDEN_TOOLS_DIR: fixtureTools[runtime] };
  const [plain] = contendersFor(runtime, { wardenEnv: env, peers: [] });
  const [asking] = contendersFor(runtime, {
    wardenEnv: env,
    wardenArgs: ["--policy-url", engine.url, "--policy-timeout", "5s"],
    peers: [],
  });
  const servers = [
    { name: "without an engine", server: await startInitialized(plain), tool: plain.tool, blocks: [] },
    { name: "with --policy-url", server: await startInitialized(asking), tool: asking.tool, blocks: [] },
  ];
  const before = engine.asked();
  try {
    const perBlock = Math.ceil(flags.calls / flags.blocks);
    for (let block = 0; block <= flags.blocks; block++) {
      for (const contender of rotate(servers, block)) {
        const times = [];
        for (let i = 0; i < perBlock; i++) {
          const started = performance.now();
          const { result, at } = await contender.server.request("tools/call", contender.tool, 10_000);
          if (result?.isError) throw new Error(`${contender.name}: ${JSON.stringify(result.content)}`);
          times.push((at - started) * 1000);
        }
        if (block > 0) contender.blocks.push(times); // the first block warms up
      }
    }
  } finally {
    for (const { server } of servers) await server.stop();
  }
  const asked = engine.asked() - before;
  const expected = Math.ceil(flags.calls / flags.blocks) * (flags.blocks + 1);
  if (asked !== expected) throw new Error(`the engine was asked ${asked} times, not once a call (${expected})`);
  const [without, withEngine] = servers.map(({ blocks }) => blockStats(blocks));
  rows.push([
    runtime,
    fixed(without.median),
    fixed(withEngine.median),
    fixed(withEngine.median - without.median),
    ratio(withEngine.median, without.median),
    fixed(without.p99),
    fixed(withEngine.p99),
  ]);
}
await engine.close();

print(`policy engine: fixture_echo round trip over stdio, ${flags.calls} calls a server in ${flags.blocks} blocks`);
print();
print(markdownTable([
  "runtime",
  ">without (µs)",
  ">with --policy-url (µs)",
  ">cost (µs)",
  ">ratio",
  ">p99 without",
  ">p99 with",
], rows));
