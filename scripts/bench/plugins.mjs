// What signed plugins cost. (1) Cold start to the initialize response with
// an empty plugins directory against 100 verified (signed, trusted, pinned)
// plugins, and against one (the fixed cost of the plugin host), all servers
// (node and deno; 0, 1 and 100) alternating round-robin. (2) Plugin calls
// against the same tool built in: the first call of a plugin tool in a fresh
// server (it spawns the plugin's sandboxed deno child), and warm tools/call
// round trips of `p000_echo` against the test fixture `fixture_echo` in one
// server, in alternating blocks.
//
// The 100 plugins are generated once into .bench/plugins100/ and pinned in
// .bench/plugins100.lock.json, signed with the test key of
// test/fixtures/trust/ (which only test/fixtures/trust/allowed_signers trusts).
//
//   node scripts/bench/plugins.mjs [--runs 15] [--first-calls 7] [--calls 2000] [--warmup 200] [--blocks 20]
//                                  [--runtime node|deno|both] [--startup-only]
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import {
  benchDir,
  blockStats,
  coldStart,
  contendersFor,
  ensureBuilt,
  environmentLines,
  fail,
  fixed,
  fixtureTools,
  markdownTable,
  median,
  note,
  parseFlags,
  print,
  quantile,
  ratio,
  repoRoot,
  rotate,
  runtimesOf,
  startInitialized,
} from "./_harness.mjs";

/** Most startup time 100 verified plugins may add on node, in ms. */
const STARTUP_TARGET_MS = 100;
/** Most a warm plugin round trip may add to the built-in one at the median, in µs. */
const WARM_TARGET_US = 500;

const PLUGIN_COUNT = 100;
const NAMESPACE = "warden-plugin-v1";
const PRINCIPAL = "test-signer@warden.invalid";
const trustDir = path.join(repoRoot, "test/fixtures/trust");
const signingKey = path.join(trustDir, "plugin_test_key");
const allowedSigners = path.join(trustDir, "allowed_signers");
const pluginsDir = path.join(benchDir, "plugins100");
const lockFile = path.join(benchDir, "plugins100.lock.json");
const emptyPluginsDir = path.join(benchDir, "plugins0");
/** p000 alone: splits the startup cost into the plugin host's fixed share and a per-plugin share. */
const onePluginDir = path.join(benchDir, "plugins1");

const flags = parseFlags(process.argv.slice(2), {
  runs: 15,
  firstCalls: 7,
  calls: 2000,
  warmup: 200,
  blocks: 20,
  runtime: "both",
  startupOnly: false,
});
const runtimes = runtimesOf(flags.runtime);
/** The runtimes of part 2 (calls); none with --startup-only. */
const callRuntimes = flags.startupOnly ? [] : runtimes;
const perBlock = Math.ceil(flags.calls / flags.blocks);
ensureBuilt({ tests: callRuntimes.includes("node") });

// ---------------------------------------------------------------------------
// The 100 plugins

const ids = Array.from({ length: PLUGIN_COUNT }, (_, i) => `p${String(i).padStart(3, "0")}`);
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

/** RFC 8785 for these manifests (strings, integers, booleans, no floats): keys sorted by UTF-16 code units, no whitespace. */
function canonicalJson(value) {
  const sorted = (v) => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v === null || typeof v !== "object") return v;
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  };
  return JSON.stringify(sorted(value));
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: repoRoot, encoding: "utf8" });
  if (result.status !== 0) {
    fail(
      `${command} ${
        args.slice(0, 6).join(" ")
      } ... failed (status ${result.status}):\n${result.stdout}${result.stderr}`,
    );
  }
  return result.stdout;
}

function generated() {
  if (!existsSync(lockFile)) return false;
  try {
    const pins = JSON.parse(readFileSync(lockFile, "utf8")).plugins;
    return ids.every((id) =>
      pins[id] &&
      ["plugin.js", "manifest.json", "manifest.json.sig"].every((f) => existsSync(path.join(pluginsDir, id, f)))
    );
  } catch {
    return false;
  }
}

/** Writes .bench/plugins100/ and its lock file, unless a complete set is there. */
function generatePlugins() {
  mkdirSync(emptyPluginsDir, { recursive: true });
  if (generated()) return;
  note(`plugins: generating ${PLUGIN_COUNT} signed plugins in ${path.relative(repoRoot, pluginsDir)}/ ...`);
  rmSync(pluginsDir, { recursive: true, force: true });
  rmSync(lockFile, { force: true });
  const fingerprint = run("ssh-keygen", ["-l", "-E", "sha256", "-f", `${signingKey}.pub`]).split(/\s+/)[1];
  if (!/^SHA256:[A-Za-z0-9+/]{43}$/.test(fingerprint ?? "")) fail(`unexpected key fingerprint "${fingerprint}"`);
  const entry = "export const tools = { echo: async (args) => ({ text: args.text }) };\n";
  const manifests = [];
  const pins = {};
  for (const id of ids) {
    const dir = path.join(pluginsDir, id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "plugin.js"), entry);
    const manifest = canonicalJson({
      schemaVersion: 1,
      id,
      version: "1.0.0",
      description: `Benchmark plugin ${id}: echoes its text.`,
      author: "warden bench",
      risk: "read",
      entry: { path: "plugin.js", sha256: sha256(entry) },
      capabilities: { readRoots: [] },
      tools: [{
        name: "echo",
        title: "Echo",
        description: "Echoes its text.",
        inputSchema: {
          type: "object",
          properties: { text: { type: "string" } },
          required: ["text"],
          additionalProperties: false,
        },
      }],
    });
    const file = path.join(dir, "manifest.json");
    writeFileSync(file, manifest);
    manifests.push(file);
    pins[id] = {
      manifestDigest: `sha256:${sha256(manifest)}`,
      version: "1.0.0",
      principal: PRINCIPAL,
      fingerprint,
      pinnedAt: new Date().toISOString(),
    };
  }
  // One ssh-keygen signs them all (manifest.json -> manifest.json.sig).
  run("ssh-keygen", ["-q", "-Y", "sign", "-f", signingKey, "-n", NAMESPACE, ...manifests]);
  writeFileSync(lockFile, `${JSON.stringify({ lockVersion: 1, plugins: pins }, null, 2)}\n`);
}

const pluginEnv = (dir) => ({
  WARDEN_PLUGINS_DIR: dir,
  WARDEN_PLUGINS_LOCK: lockFile,
  WARDEN_ALLOWED_SIGNERS: allowedSigners,
});

/** Fails unless `warden plugin list --json` (node build) shows all 100 plugins verified. */
function verifyPlugins() {
  const [warden] = contendersFor("node", { wardenEnv: pluginEnv(pluginsDir), peers: [] });
  const result = spawnSync(warden.command, [...warden.args, "plugin", "list", "--json"], {
    cwd: repoRoot,
    env: warden.env,
    encoding: "utf8",
  });
  let records;
  try {
    records = JSON.parse(result.stdout);
  } catch {
    fail(`warden plugin list --json did not print JSON (status ${result.status}):\n${result.stdout}${result.stderr}`);
  }
  const bad = records.filter((r) => r.status !== "verified");
  const listed = records.map((r) => r.id).join(",");
  if (result.status !== 0 || records.length !== PLUGIN_COUNT || bad.length > 0 || listed !== ids.join(",")) {
    fail(
      `expected ${PLUGIN_COUNT} verified plugins p000..p099, warden plugin list shows ${records.length}, ${bad.length} not verified:\n${
        JSON.stringify(bad.slice(0, 3), null, 2)
      }\n(delete ${path.relative(repoRoot, pluginsDir)}/ and ${
        path.relative(repoRoot, lockFile)
      } to generate them again)`,
    );
  }
  note(`plugins: warden plugin list: ${records.length} plugins, all verified`);
}

generatePlugins();
verifyPlugins();
rmSync(onePluginDir, { recursive: true, force: true });
cpSync(path.join(pluginsDir, "p000"), path.join(onePluginDir, "p000"), { recursive: true });

// ---------------------------------------------------------------------------
// 1. Cold start: 0 against 100 plugins (and 1, to tell fixed from per-plugin cost)

function wardenOn(runtime, name, env) {
  const [warden] = contendersFor(runtime, { wardenEnv: env, peers: [] });
  return { ...warden, name };
}

const starters = runtimes.flatMap((runtime) => [
  { ...wardenOn(runtime, "0 plugins", pluginEnv(emptyPluginsDir)), plugins: 0 },
  { ...wardenOn(runtime, "1 plugin", pluginEnv(onePluginDir)), plugins: 1 },
  { ...wardenOn(runtime, "100 plugins", pluginEnv(pluginsDir)), plugins: PLUGIN_COUNT },
]);
note(`plugins: startup: warm-up start of ${starters.length} servers ...`);
for (const contender of starters) await coldStart(contender);
const startSamples = new Map(starters.map((c) => [c, []]));
for (let round = 0; round < flags.runs; round++) {
  for (const contender of rotate(starters, round)) startSamples.get(contender).push(await coldStart(contender));
  note(`plugins: startup: round ${round + 1}/${flags.runs} done`);
}

// ---------------------------------------------------------------------------
// 2. Calls: the plugin's echo against the built-in fixture_echo

const BUILTIN = { name: "fixture_echo", arguments: { text: "hi" } };
const PLUGIN = { name: "p000_echo", arguments: { text: "hi" } };
const callers = Object.fromEntries(
  callRuntimes.map((runtime) => [
    runtime,
    wardenOn(runtime, "100 plugins + fixtures", { ...pluginEnv(pluginsDir), WARDEN_TOOLS_DIR: fixtureTools[runtime] }),
  ]),
);

/** One call; fails unless it echoes. Returns its round trip in µs. */
async function call(server, tool, timeoutMs = 30_000) {
  const started = performance.now();
  const { result, at } = await server.request("tools/call", tool, timeoutMs);
  if (result?.isError || !JSON.stringify(result?.content).includes("hi")) {
    fail(`${server.contender.runtime} ${tool.name}: unexpected result ${JSON.stringify(result)}`);
  }
  return (at - started) * 1000;
}

/** A fresh server: the first built-in call, then the first and second plugin calls, in µs. */
async function firstCalls(contender) {
  const server = await startInitialized(contender);
  try {
    const builtin = await call(server, BUILTIN);
    const plugin = await call(server, PLUGIN);
    const second = await call(server, PLUGIN);
    return { builtin, plugin, second };
  } finally {
    await server.stop();
  }
}

const firstCallers = callRuntimes.map((runtime) => callers[runtime]);
if (firstCallers.length > 0) note("plugins: first calls: warm-up server each (fills the plugin child's DENO_DIR) ...");
for (const contender of firstCallers) await firstCalls(contender);
const firstSamples = new Map(firstCallers.map((c) => [c, []]));
for (let round = 0; round < flags.firstCalls; round++) {
  for (const contender of rotate(firstCallers, round)) firstSamples.get(contender).push(await firstCalls(contender));
}
if (firstCallers.length > 0) note(`plugins: first calls: ${flags.firstCalls} fresh servers per runtime done`);

/** The names in tools/list (one page: warden's catalog is never paginated). */
async function toolNames(server) {
  const { result } = await server.request("tools/list", {}, 30_000);
  if (result.nextCursor !== undefined) fail("tools/list is paginated; the benchmark reads one page");
  return result.tools.map((t) => t.name);
}

const warm = [];
for (const runtime of callRuntimes) {
  note(`plugins: warm round trips: ${runtime} ...`);
  const server = await startInitialized(callers[runtime]);
  try {
    const names = await toolNames(server);
    const missing = [BUILTIN.name, ...ids.map((id) => `${id}_echo`)].filter((n) => !names.includes(n));
    if (missing.length > 0) fail(`${runtime}: tools/list lacks ${missing.slice(0, 5).join(", ")} (${missing.length})`);
    const tools = [BUILTIN, PLUGIN];
    for (const tool of tools) for (let i = 0; i < flags.warmup; i++) await call(server, tool);
    const blocks = new Map(tools.map((t) => [t, []]));
    for (let block = 0; block < flags.blocks; block++) {
      for (const tool of rotate(tools, block)) {
        const times = [];
        for (let i = 0; i < perBlock; i++) times.push(await call(server, tool));
        blocks.get(tool).push(times);
      }
    }
    warm.push({ runtime, tools, blocks, catalogSize: names.length });
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------
// Report

const ms = (us) => us / 1000;
const signed = (n, digits = 1) => (Number.isFinite(n) ? `${n >= 0 ? "+" : ""}${n.toFixed(digits)}` : "n/a");
const verdicts = [];

print("## Plugins: startup and call latency");
print();
print(
  `warden with ${PLUGIN_COUNT} verified plugins (signed with the test key, trusted by test/fixtures/trust/allowed_signers, pinned; one \`echo\` tool each) against warden with an empty plugins directory (and with one of them, \`p000\`), and a plugin tool against the same tool built in. node runs dist/core/main.js, deno runs core/main.ts from source; plugin tools run in a sandboxed deno child either way.`,
);
print();
for (const line of environmentLines(runtimes)) print(line);

print();
print("### Cold start to the initialize response");
print();
print(
  `${flags.runs} alternating rounds over the ${starters.length} servers (rotating which starts first), after one unmeasured start each. ms from spawn to the initialize response line.`,
);
print();
const startRows = [];
for (const runtime of runtimes) {
  const [none, one, full] = starters.filter((c) => c.runtime === runtime);
  const base = median(startSamples.get(none));
  for (const c of [none, one, full]) {
    const s = startSamples.get(c);
    startRows.push([
      runtime,
      String(c.plugins),
      fixed(median(s)),
      fixed(quantile(s, 0.1)),
      fixed(quantile(s, 0.9)),
      fixed(Math.min(...s)),
      c === none ? "" : signed(median(s) - base),
      ratio(median(s), base),
    ]);
  }
  const added = median(startSamples.get(full)) - base;
  const fixedShare = median(startSamples.get(one)) - base;
  const perPlugin = (median(startSamples.get(full)) - median(startSamples.get(one))) / (PLUGIN_COUNT - 1);
  const line = `- startup, ${runtime}: ${PLUGIN_COUNT} plugins add ${fixed(added)} ms at the median (${
    ratio(median(startSamples.get(full)), base)
  } of 0 plugins; the first plugin ${fixed(fixedShare)} ms, each further one ${fixed(perPlugin, 2)} ms)`;
  verdicts.push(
    runtime === "node"
      ? `${line}, target ≤ ${STARTUP_TARGET_MS} ms: **${added <= STARTUP_TARGET_MS ? "met" : "NOT met"}**`
      : `${line} (no target)`,
  );
}
print(
  markdownTable(
    ["runtime", ">plugins", ">median ms", ">p10 ms", ">p90 ms", ">min ms", ">added ms", ">vs 0 plugins"],
    startRows,
  ),
);

if (!flags.startupOnly) {
  print();
  print("### First call in a fresh server");
  print();
  print(
    `${flags.firstCalls} fresh servers per runtime (runtimes alternating), after one unmeasured server each. In each: initialize, then the first \`${BUILTIN.name}\` call, the first \`${PLUGIN.name}\` call (which spawns the plugin's deno child) and a second \`${PLUGIN.name}\` call. ms from request to response; medians over the servers; "added" is the median of each server's first plugin call less its first built-in call.`,
  );
  print();
  const firstRows = [];
  for (const contender of firstCallers) {
    const s = firstSamples.get(contender);
    const col = (key) => s.map((r) => ms(r[key]));
    const added = median(s.map((r) => ms(r.plugin - r.builtin)));
    firstRows.push([
      contender.runtime,
      fixed(median(col("builtin")), 2),
      fixed(median(col("plugin")), 1),
      `${fixed(quantile(col("plugin"), 0.1), 1)}–${fixed(quantile(col("plugin"), 0.9), 1)}`,
      fixed(median(col("second")), 2),
      signed(added),
    ]);
    verdicts.push(
      `- first plugin call, ${contender.runtime}: ${fixed(added)} ms more than the first built-in call (no target)`,
    );
  }
  print(
    markdownTable(
      [
        "runtime",
        `>first ${BUILTIN.name} ms`,
        `>first ${PLUGIN.name} ms`,
        ">p10–p90 ms",
        `>second ${PLUGIN.name} ms`,
        ">added ms",
      ],
      firstRows,
    ),
  );

  print();
  print("### Warm tools/call round trip");
  print();
  print(
    `One server per runtime serving ${PLUGIN_COUNT} plugins and the test fixture tools: ${flags.warmup} warm-up calls per tool, then ${flags.blocks} alternating blocks of ${perBlock} sequential calls per tool. µs from writing the request to reading its response line; "median" and "mean" are the medians over blocks of each block's median and mean.`,
  );
  print();
  const warmRows = [];
  for (const { runtime, tools, blocks } of warm) {
    const stats = new Map(tools.map((t) => [t, blockStats(blocks.get(t))]));
    const base = stats.get(BUILTIN);
    for (const t of tools) {
      const st = stats.get(t);
      warmRows.push([
        runtime,
        t.name,
        fixed(st.median, 0),
        fixed(st.mean, 0),
        fixed(st.p10, 0),
        fixed(st.p90, 0),
        fixed(st.p99, 0),
        t === BUILTIN ? "" : signed(st.median - base.median, 0),
        ratio(st.median, base.median),
      ]);
    }
    const added = stats.get(PLUGIN).median - base.median;
    verdicts.push(
      `- warm call, ${runtime}: ${PLUGIN.name} adds ${fixed(added, 0)} µs to ${BUILTIN.name} at the median (${
        ratio(stats.get(PLUGIN).median, base.median)
      }), target ≤ ${WARM_TARGET_US} µs: **${added <= WARM_TARGET_US ? "met" : "NOT met"}**`,
    );
  }
  print(
    markdownTable(
      ["runtime", "tool", ">median µs", ">mean µs", ">p10 µs", ">p90 µs", ">p99 µs", ">added µs", ">vs built-in"],
      warmRows,
    ),
  );
}

print();
print("### Verdict");
print();
for (const line of verdicts) print(line);
process.exit(0);
