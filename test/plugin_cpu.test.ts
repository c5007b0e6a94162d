// A plugin's CPU time, under the command warden prints for its runtime: there the host may not read /proc itself
// (deno refuses it short of --allow-all, node's permission model unless granted), so cat reads the child's
// /proc/<pid>/stat. A call over its budget fails and its child dies; one under it succeeds; between calls the workers
// a plugin left spinning spend nothing.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { canonicalJson } from "../core/canonical_json.ts";
import { cpuMsOfStat } from "../core/platform/proc_stat.ts";
import {
  connect,
  eventually,
  onDeno,
  repoRoot,
  runtimeName,
  runWarden,
  type Session,
  skipOrFail,
  tempDir,
  textOf,
} from "./helpers.ts";

const BUDGET_MS = 300;

/** The plugin: each tool spends CPU its own way. */
const ENTRY = `export const tools = {
  burn: ({ ms }) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      // Spends its ms, then returns.
    }
    return "burned";
  },
  spin: () => {
    while (true) {
      // Never yields: only the budget ends this.
    }
  },
  // One: each Worker reserves 512 MiB of the child's memory limit (see core/plugins/sandbox/limits.ts).
  leave_worker: () => {
    new Worker("data:text/javascript," + encodeURIComponent("while (true) {}"), { type: "module" });
    return "left a worker spinning";
  },
  echo: ({ text }) => text,
};
`;

const tool = (name: string, properties: Record<string, unknown> = {}) => ({
  name,
  title: name,
  description: `The ${name} tool.`,
  inputSchema: { type: "object", properties, required: Object.keys(properties), additionalProperties: false },
});

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The CPU time of process `pid` so far, in ms, read by the test itself (it may read /proc). */
function cpuMs(pid: number): number {
  return cpuMsOfStat(readFileSync(`/proc/${pid}/stat`, "latin1"))!;
}

/** The plugin child of the server `pid`: its one child that runs the sandbox bootstrap. */
function pluginChild(pid: number): number | null {
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean)) {
      try {
        if (readFileSync(`/proc/${child}/cmdline`, "utf8").includes("data:text/javascript")) return Number(child);
      } catch {
        // Gone meanwhile (a cat that read the child's CPU time).
      }
    }
  }
  return null;
}

describe(`a plugin's CPU budget under the printed ${runtimeName} command`, () => {
  let work: { dir: string; remove: () => void };
  let env: Record<string, string>;
  let root: string;

  before(async () => {
    work = tempDir();
    root = path.join(work.dir, "root");
    mkdirSync(root);
    const dir = path.join(work.dir, "plugins", "cpu");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "plugin.js"), ENTRY);
    const manifest = {
      schemaVersion: 1,
      id: "cpu",
      version: "1.0.0",
      description: "Spends CPU time.",
      author: "tests",
      risk: "read",
      entry: { path: "plugin.js", sha256: await sha256(ENTRY) },
      capabilities: { readRoots: [] },
      limits: { cpuMsPerCall: BUDGET_MS },
      tools: [
        tool("burn", { ms: { type: "integer" } }),
        tool("spin"),
        tool("leave_worker"),
        tool("echo", { text: { type: "string" } }),
      ],
    };
    writeFileSync(path.join(dir, "manifest.json"), canonicalJson(manifest));
    env = {
      WARDEN_PLUGINS_DIR: path.join(work.dir, "plugins"),
      // Not plugins.lock.json: node 20's permission model then refuses to list plugins/, granted beside a file whose
      // name it begins (seen on node 20.20; the default layout has both).
      WARDEN_PLUGINS_LOCK: path.join(work.dir, "lock.json"),
      WARDEN_ALLOWED_SIGNERS: path.join(repoRoot, "test/fixtures/trust/allowed_signers"),
    };
    const key = path.join(repoRoot, "test/fixtures/trust/plugin_test_key");
    for (const args of [["sign", dir, "--key", key], ["trust", dir]]) {
      const done = await runWarden(["plugin", ...args], { env, denoFlags: ["--allow-write"] });
      assert.equal(done.code, 0, done.stderr);
    }
  });
  after(() => work.remove());

  it("fails a call over its budget and kills the child; one under it succeeds; workers left spend nothing", async (t) => {
    if (!existsSync("/proc/self/stat")) return skipOrFail(t, "needs Linux's /proc");
    if (!["/usr/bin/cat", "/bin/cat"].some(existsSync)) return skipOrFail(t, "needs cat (coreutils)");
    const printed = await runWarden(
      ["command", "--json", ...(onDeno ? [] : ["--node-permission"]), "--root", `default=${root}`],
      { env },
    );
    assert.equal(printed.code, 0, printed.stderr);
    const { command, args } = JSON.parse(printed.stdout) as { command: string; args: string[] };
    const cat = ["/usr/bin/cat", "/bin/cat"].find(existsSync)!;
    if (onDeno) {
      const run = args.find((arg) => arg.startsWith("--allow-run="))!.slice("--allow-run=".length).split(",");
      assert.ok(run.includes(cat), `cat is granted: ${run.join(" ")}`);
      assert.ok(!args.includes("-A") && !args.includes("--allow-all"), "the host may not read /proc itself");
    }
    let session: Session | undefined;
    try {
      // A call the budget misses ends at this timeout instead, with another message.
      session = await connect({ env: { ...env, WARDEN_CALL_TIMEOUT: "15s" }, wrap: () => ({ command, args }) });
      const call = (name: string, args: Record<string, unknown> = {}) =>
        session!.client.callTool({ name: `cpu_${name}`, arguments: args });
      const listed = await session.client.callTool({ name: "extension_list", arguments: {} });
      assert.match(JSON.stringify(listed.structuredContent), new RegExp(`CPU ${BUDGET_MS} ms per call`));
      assert.doesNotMatch(session.stderr(), /no budget per call/);
      const context = await session.client.callTool({ name: "host_context", arguments: {} });
      const confinement = (context.structuredContent as { confinement: { inForce: boolean; detail: string } })
        .confinement;
      assert.equal(confinement.inForce, true, confinement.detail);
      if (onDeno) assert.match(confinement.detail, /it may start .*\bcat\b/);

      const burned = await call("burn", { ms: 30 });
      assert.equal(burned.isError, undefined, textOf(burned));
      const server = session.transport.pid!;
      const child = pluginChild(server)!;
      assert.ok(child, "the plugin child runs");

      const left = await call("leave_worker");
      assert.equal(left.isError, undefined, textOf(left));
      assert.equal(pluginChild(server), child, "the same child served both calls");
      const before = cpuMs(child);
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the window measured, not a synchronisation
      const spent = cpuMs(child) - before;
      assert.ok(spent <= 20, `the child used ${spent} ms of CPU between calls`);

      const spun = await call("spin");
      assert.equal(spun.isError, true);
      assert.equal(
        textOf(spun),
        `Plugin "cpu" failed: call 3 ("spin") used more than ${BUDGET_MS} ms of CPU time, its budget per call`,
      );
      assert.ok(await eventually(() => !existsSync(`/proc/${child}`), 5000), "the child is gone");

      const echoed = await call("echo", { text: "after" });
      assert.equal(textOf(echoed), "after");
      assert.notEqual(pluginChild(server), child, "the next call has a fresh child");
    } finally {
      await session?.close();
    }
  });
});
