// The plugin sandbox: each plugin runs in a Deno child with no permissions.
// Well-behaved bundles work (files through the host, progress, logs, one warm
// child, idle stop, cancellation); hostile bundles fail at every door, and the
// test checks that nothing happened behind it; a child that crashes, hangs,
// floods or talks garbage fails its calls, loses its process group, and the
// next call gets a fresh child.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { connect, createServer, type Server } from "node:net";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { WardenError } from "../core/errors.ts";
import { initPlatform, platform } from "../core/platform/mod.ts";
import { childSource } from "../core/plugins/sandbox/child.ts";
import { osLimits } from "../core/plugins/sandbox/limits.ts";
import { pluginDenoArgs, pluginEnv } from "../core/plugins/sandbox/launch.ts";
import { withoutHostFacts } from "../core/plugins/sandbox/requests.ts";
import { PLUGIN_RUNTIME_DEFAULTS, PluginRuntime, type PluginRuntimeOptions } from "../core/plugins/sandbox/runtime.ts";
import type { PluginCallContext } from "../core/plugins/sandbox/session.ts";
import { openRoots, type RootFs } from "../core/doors/roots.ts";
import type { ClientLogLevel } from "../core/tool.ts";
import { eventually, repoRoot, runtimeName, skipOrFail, tempDir } from "./helpers.ts";

const bundlesDir = path.join(repoRoot, "test/fixtures/plugin_bundles");

function bundle(name: string): Uint8Array {
  return new Uint8Array(readFileSync(path.join(bundlesDir, `${name}.js`)));
}

/** A call context that records what the plugin sent. */
interface RecordingContext extends PluginCallContext {
  readonly progressed: [number, number | undefined, string | undefined][];
  readonly logged: [ClientLogLevel, unknown][];
}

function context(signal: AbortSignal = new AbortController().signal): RecordingContext {
  const progressed: [number, number | undefined, string | undefined][] = [];
  const logged: [ClientLogLevel, unknown][] = [];
  return {
    signal,
    progressed,
    logged,
    progress(progress, total, message) {
      progressed.push([progress, total, message]);
      return Promise.resolve();
    },
    log(level, data) {
      logged.push([level, data]);
    },
  };
}

/** A signal aborted after `ms` with a timeout error, as the host's call timeout does. */
function timeoutAfter(ms: number, tool: string): { signal: AbortSignal; reason: WardenError } {
  const controller = new AbortController();
  const reason = new WardenError("timeout", `Tool "${tool}" timed out: no result after ${ms}ms`);
  setTimeout(() => controller.abort(reason), ms);
  return { signal: controller.signal, reason };
}

/** Whether any process of group `pgid` exists. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code !== "ESRCH";
  }
}

/** What a hostile tool reports for one attempt. */
interface Attempt {
  ok: boolean;
  name?: string;
  message?: string;
  value?: string;
}

/** The error a promise rejects with; fails when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<WardenError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WardenError, `expected a WardenError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected the call to reject");
}

describe(`plugin runtime (${runtimeName})`, () => {
  let dir: string;
  let remove: () => void;
  let root: string;
  let fs: RootFs;
  const runtimes: PluginRuntime[] = [];

  /** A runtime for a fixture bundle (by name) or for the given bytes. */
  function runtime(
    id: string,
    entry: string | Uint8Array,
    options: Partial<PluginRuntimeOptions> = {},
  ): PluginRuntime {
    const created = new PluginRuntime({
      id,
      entryBytes: typeof entry === "string" ? bundle(entry) : entry,
      fs,
      ...options,
    });
    runtimes.push(created);
    return created;
  }

  before(async () => {
    await initPlatform();
    ({ dir, remove } = tempDir("warden-plugin-"));
    root = path.join(dir, "root");
    mkdirSync(path.join(root, "sub"), { recursive: true });
    writeFileSync(path.join(root, "hello.txt"), "hello plugin\n");
    writeFileSync(path.join(root, "sub", "a.txt"), "a\n");
    writeFileSync(path.join(dir, "secret.txt"), "top secret\n");
    symlinkSync(path.join(dir, "secret.txt"), path.join(root, "link.txt"));
    fs = await openRoots([{ id: "main", path: root }]);
  });

  after(async () => {
    await Promise.all(runtimes.map((r) => r.stop()));
    remove();
  });

  describe("a well-behaved plugin", () => {
    it("runs its tools in a child process and returns their JSON results", async () => {
      const plugin = runtime("good", "well_behaved");
      assert.equal(plugin.pid, null);
      assert.deepEqual(await plugin.call("echo", { text: "hi", n: [1, 2] }, context()), {
        echoed: { text: "hi", n: [1, 2] },
      });
      assert.equal(typeof plugin.pid, "number");
      assert.notEqual(plugin.pid, process.pid);
      assert.equal(await plugin.call("nothing", {}, context()), undefined);
    });

    it("reads files through the host, under its roots", async () => {
      const plugin = runtime("good", "well_behaved");
      assert.deepEqual(await plugin.call("roots", {}, context()), ["main"]);
      assert.equal(await plugin.call("read", { path: "hello.txt" }, context()), "hello plugin\n");
      assert.deepEqual(await plugin.call("list", {}, context()), [
        { name: "hello.txt", kind: "file" },
        { name: "link.txt", kind: "symlink" },
        { name: "sub", kind: "directory" },
      ]);
      assert.deepEqual(await plugin.call("glob", { patterns: "**/*.txt" }, context()), ["hello.txt", "sub/a.txt"]);
      const stat = await plugin.call("stat", { path: "sub/a.txt" }, context()) as Record<string, unknown>;
      assert.deepEqual({ ...stat, mtimeMs: 0 }, { path: "sub/a.txt", kind: "file", size: 2, mtimeMs: 0 });
      const stats = await plugin.call("stats", { paths: ["sub/a.txt", "none.txt", "../x", "sub"] }, context());
      assert.deepEqual(
        (stats as ({ path: string; kind: string } | null)[]).map((s) => s && [s.path, s.kind]),
        [["sub/a.txt", "file"], null, null, ["sub", "directory"]],
      );
      await assert.rejects(
        plugin.call("stats", { paths: "sub/a.txt" }, context()),
        /paths must be an array of strings/,
      );
    });

    it("runs a bundle in the SDK's shape (plugin.tools[name].handler)", async () => {
      const plugin = runtime("sdk", "sdk_style");
      assert.deepEqual(await plugin.call("greet", { name: "Ada" }, context()), {
        greeting: "Hello, Ada!",
        roots: ["main"],
        first: "hello plugin\n",
      });
    });

    it("forwards progress and log messages to the call's context", async () => {
      const plugin = runtime("good", "well_behaved");
      const ctx = context();
      assert.equal(await plugin.call("progress", { steps: 3 }, ctx), "done");
      assert.deepEqual(ctx.progressed, [[1, 3, "step 1"], [2, 3, "step 2"], [3, 3, "step 3"]]);
      assert.deepEqual(ctx.logged, [["info", { done: 3 }]]);
    });

    it("keeps one warm child for sequential and concurrent calls", async () => {
      const plugin = runtime("good", "well_behaved");
      await plugin.call("echo", {}, context());
      const pid = plugin.pid;
      for (let i = 0; i < 20; i++) assert.deepEqual(await plugin.call("echo", { i }, context()), { echoed: { i } });
      const started = performance.now();
      const results = await Promise.all([300, 300, 300, 300].map((ms) => plugin.call("sleep", { ms }, context())));
      assert.deepEqual(results, [{ slept: 300 }, { slept: 300 }, { slept: 300 }, { slept: 300 }]);
      assert.ok(performance.now() - started < 1000, "the four calls ran side by side");
      assert.equal(plugin.pid, pid);
    });

    it("keeps the protocol when a tool writes to the console (it goes to stderr)", async () => {
      const plugin = runtime("good", "well_behaved");
      assert.equal(await plugin.call("chatty", {}, context()), "said hello");
      assert.equal(await plugin.call("echo", { after: true }, context()) !== undefined, true);
    });

    it("stops an idle child and starts a fresh one on the next call", async () => {
      const plugin = runtime("good", "well_behaved", { idleMs: 200 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      assert.ok(await eventually(() => plugin.pid === null && !groupAlive(pid), 3000), "the idle child is gone");
      await plugin.call("echo", {}, context());
      assert.notEqual(plugin.pid, null);
      assert.notEqual(plugin.pid, pid);
    });

    it("reports a tool's own error as tool_failed and lets the host's file errors through", async () => {
      const plugin = runtime("good", "well_behaved");
      const thrown = await rejection(plugin.call("throws", {}, context()));
      assert.equal(thrown.code, "tool_failed");
      assert.equal(thrown.message, 'Tool "good_throws" failed: something went wrong');
      const refused = await rejection(plugin.call("passthrough", { path: "../secret.txt" }, context()));
      assert.equal(refused.code, "path_refused");
      assert.equal(
        refused.message,
        'Path refused in root "main": "../secret.txt" leads outside the root; remove the `..` segments',
      );
      const pid = plugin.pid;
      const missing = await rejection(plugin.call("no_such_tool", {}, context()));
      assert.equal(missing.code, "plugin_failed");
      assert.equal(missing.message, 'Plugin "good" failed: its bundle has no tool "no_such_tool"');
      assert.equal(plugin.pid, pid, "the child survives");
    });

    it("rejects a cancelled call at once and keeps a child that stops it", async () => {
      const plugin = runtime("good", "well_behaved", { cancelGraceMs: 500 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid;
      const controller = new AbortController();
      const reason = new WardenError("cancelled", 'Tool "good_sleep" was cancelled by the client');
      const started = performance.now();
      // The child is ready, so the call is written at once: the cancellation follows it on the pipe.
      const call = plugin.call("sleep", { ms: 5000 }, context(controller.signal));
      controller.abort(reason);
      assert.equal(await rejection(call), reason);
      assert.ok(performance.now() - started < 1000);
      // Not a synchronisation: the kill this guards against would come when the 500 ms grace ends.
      await new Promise((resolve) => setTimeout(resolve, 700));
      assert.equal(plugin.pid, pid, "the child stopped the call and lives on");
      assert.deepEqual(await plugin.call("echo", { still: "here" }, context()), { echoed: { still: "here" } });

      const plain = new AbortController();
      plain.abort();
      const early = await rejection(plugin.call("echo", {}, context(plain.signal)));
      assert.equal(early.code, "cancelled");
      assert.equal(early.message, 'Tool "good_echo" was cancelled');
    });

    it("stop() rejects running calls and kills the process group", async () => {
      const plugin = runtime("good", "well_behaved");
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const running = rejection(plugin.call("sleep", { ms: 10_000 }, context()));
      await plugin.stop();
      const error = await running;
      assert.equal(error.code, "plugin_failed");
      assert.equal(error.message, 'Plugin "good" failed: it was stopped');
      assert.equal(plugin.pid, null);
      assert.ok(await eventually(() => !groupAlive(pid), 2000));
    });

    it("stop() while the child is starting rejects the waiting call", async () => {
      const plugin = runtime("good", "well_behaved");
      const waiting = rejection(plugin.call("echo", {}, context()));
      await plugin.stop();
      assert.equal((await waiting).message, 'Plugin "good" failed: it was stopped');
      assert.equal(plugin.pid, null);
      assert.deepEqual(await plugin.call("echo", { again: true }, context()), { echoed: { again: true } });
    });

    it("starts children with no permission flag and an environment of five variables", () => {
      const args = pluginDenoArgs();
      assert.deepEqual(args.filter((arg) => arg.startsWith("--allow") || arg === "-A"), []);
      assert.ok(args.includes("--no-prompt") && args.includes("--cached-only") && args.includes("--no-remote"));
      assert.deepEqual(pluginEnv(), {
        DENO_DIR: "/dev/null/warden-plugin",
        DENO_NO_UPDATE_CHECK: "1",
        DENO_NO_PACKAGE_JSON: "1",
        NO_COLOR: "1",
        TZ: "UTC",
      });
      assert.equal(PLUGIN_RUNTIME_DEFAULTS.maxMessageBytes, 8 * 1024 * 1024);
    });
  });

  describe("a hostile plugin is refused at every door", () => {
    let plugin: PluginRuntime;
    before(() => {
      plugin = runtime("hostile", "hostile");
    });

    function names(attempts: Attempt[]): (string | undefined)[] {
      return attempts.map((attempt) => (attempt.ok ? `succeeded: ${attempt.value}` : attempt.name));
    }

    it("cannot read files directly, import them, or stat the file system", async () => {
      const local = path.join(dir, "module.js");
      writeFileSync(local, "export const secret = 42;\n");
      const attempts = await plugin.call("readFile", { path: local }, context()) as Attempt[];
      assert.deepEqual(names(attempts), [
        "NotCapable",
        "NotCapable",
        "NotCapable",
        "NotCapable",
        "NotCapable",
        "NotCapable",
        "TypeError",
      ]);
      // A local import is refused for lack of read permission too.
      assert.match(attempts[6].message ?? "", /Requires read access/);
    });

    it("cannot read the environment (it has none of the host's anyway)", async () => {
      const attempts = await plugin.call("env", {}, context()) as Attempt[];
      assert.deepEqual(names(attempts), ["NotCapable", "NotCapable", "NotCapable", "NotCapable", "NotCapable"]);
    });

    it("cannot open a connection or a listener", async () => {
      let connections = 0;
      const server: Server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      try {
        const attempts = await plugin.call("net", { port }, context()) as Attempt[];
        assert.deepEqual(names(attempts), ["NotCapable", "NotCapable", "NotCapable", "NotCapable"]);
        // Connections are accepted in order: once this one is, any the plugin made was counted.
        const probe = connect(port, "127.0.0.1");
        await new Promise<void>((resolve) => server.once("connection", () => resolve()));
        probe.destroy();
        assert.equal(connections, 1, "only the probe's connection reached the listener");
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it("cannot run a program", async () => {
      const marker = path.join(dir, "spawned-marker");
      const attempts = await plugin.call(
        "spawn",
        { marker, deno: platform().denoExecutable() },
        context(),
      ) as Attempt[];
      assert.deepEqual(names(attempts), ["NotCapable", "NotCapable", "NotCapable"]);
      assert.equal(existsSync(marker), false);
    });

    it("cannot kill its host or its own group", async () => {
      const attempts = await plugin.call("kill", { pid: process.pid }, context()) as Attempt[];
      assert.deepEqual(names(attempts), ["NotCapable", "NotCapable", "NotCapable"]);
      assert.equal(process.kill(process.pid, 0), true);
      assert.deepEqual(await plugin.call("echo", { alive: true }, context()), { alive: true });
    });

    it("cannot write a file", async () => {
      const target = path.join(dir, "written-by-plugin");
      const attempts = await plugin.call("write", { path: target }, context()) as Attempt[];
      assert.deepEqual(names(attempts), ["NotCapable", "NotCapable", "NotCapable"]);
      assert.equal(existsSync(target), false);
      assert.equal(existsSync(target + ".d"), false);
    });

    it("cannot load native code", async () => {
      const attempt = await plugin.call("ffi", {}, context()) as Attempt;
      assert.equal(attempt.name, "NotCapable");
    });

    it("cannot leave its roots through the host's file access", async () => {
      const attempts = await plugin.call("escape", {}, context()) as Attempt[];
      assert.deepEqual(attempts.map((attempt) => [attempt.name, attempt.message]), [
        [
          "WardenError",
          'Path refused in root "main": "../secret.txt" leads outside the root; remove the `..` segments',
        ],
        [
          "WardenError",
          'Path refused in root "main": "link.txt" leads outside the root through a symlink; only files inside the root can be read',
        ],
        [
          "WardenError",
          'Path refused in root "main": an absolute path outside the root; pass a path relative to the root',
        ],
        ["WardenError", 'Path refused in root "main": ".." leads outside the root; remove the `..` segments'],
        [
          "WardenError",
          'Glob pattern refused: "../**" could leave the root; use a pattern relative to the root, without `..`',
        ],
        ["WardenError", 'Unknown root: received "elsewhere"; use one of: main'],
      ]);
    });
  });

  describe("a plugin is sealed: no storage, no host facts, bounded memory and CPU, its own calls only", () => {
    const storageFailures = [
      ["ReferenceError", "caches is not defined"],
      ["ReferenceError", "localStorage is not defined"],
      ["ReferenceError", "sessionStorage is not defined"],
      ["ReferenceError", "indexedDB is not defined"],
      ["TypeError", "Deno.openKv is not a function"],
      ["TypeError", "Cannot read properties of undefined (reading 'core')"],
    ];

    it("has no web storage, in its worker or in a Worker it starts, before or after a restart", async () => {
      const plugin = runtime("hostile", "hostile");
      for (const round of ["first child", "after a restart"]) {
        const { here, worker } = await plugin.call("storage", {}, context()) as { here: Attempt[]; worker: Attempt[] };
        for (const attempts of [here, worker]) {
          assert.deepEqual(attempts.map((a) => (a.ok ? `stored (${round})` : [a.name, a.message])), storageFailures);
        }
        await plugin.stop();
      }
    });

    it("has no cache directory: its DENO_DIR cannot be created, even by root", () => {
      const denoDir = pluginEnv().DENO_DIR;
      assert.throws(() => mkdirSync(denoDir, { recursive: true }), { code: "ENOTDIR" });
      assert.equal(existsSync(denoDir), false);
    });

    it("sees nothing of the host: paths, addresses, environment, pids", async () => {
      const plugin = runtime("hostile", "hostile");
      const seen = await plugin.call("hostFacts", {}, context()) as { here: Attempt[]; worker: Attempt[] };
      const hostFacts = [
        platform().denoExecutable(),
        path.dirname(platform().denoExecutable()),
        repoRoot.replace(/\/$/, ""),
        dir,
        process.cwd(),
        homedir(),
        ...readFileSync("/etc/resolv.conf", "utf8").split("\n").flatMap((line) =>
          /^nameserver\s+(\S+)/.exec(line)?.slice(1) ?? []
        ),
      ].filter((fact) => fact !== "/");
      for (const attempts of [seen.here, seen.worker]) {
        const text = JSON.stringify(attempts);
        for (const fact of hostFacts) assert.ok(!text.includes(fact), `${fact} reached the plugin: ${text}`);
        const [execPath, cwd, , pid, ppid] = attempts.map((a) => a.ok ? a.value : a.name);
        assert.deepEqual([execPath, cwd, pid, ppid], ["deno", "/", "1", "0"]);
        assert.equal(attempts[15].message, "Requires net access, run again with the --allow-net flag");
        assert.equal(attempts[19].value, "UTC");
      }
    });

    it("gets the host's capability errors without host paths or addresses", async () => {
      const plugin = runtime("hostile", "hostile");
      const attempts = await plugin.call("capabilityErrors", {}, {
        ...context(),
        capabilities: {
          fetch: () =>
            Promise.reject(
              new WardenError(
                "tool_failed",
                "Fetch from https://api.example.com failed: dns error: no record found for 10.255.255.53:53 " +
                  "and fd00::53, config /etc/resolv.conf",
              ),
            ),
          spawn: () => Promise.reject(Object.assign(new Error(`spawn ${dir}/bin/git ENOENT`), { code: "ENOENT" })),
          write: () =>
            Promise.reject(
              new WardenError("capability_denied", `Cannot write "out.txt": ${dir}/root/out.txt is read-only`),
            ),
        },
      }) as Attempt[];
      assert.deepEqual(attempts.map((a) => a.message), [
        "Fetch from https://api.example.com failed: dns error: no record found for <address>:53 and <address>, " +
        "config <path>",
        "Spawn failed: ENOENT",
        'Cannot write "out.txt": <path> is read-only',
      ]);
      assert.equal(
        withoutHostFacts('Path refused in root "main": "../secret.txt"'),
        'Path refused in root "main": "../secret.txt"',
      );
    });

    for (const [tool, what] of [["allocTyped", "typed arrays"], ["allocWasm", "WebAssembly memory"]] as const) {
      it(`stops ${what} at its memory limit (an OS limit), and the next call gets a fresh child`, async (t) => {
        if (!osLimits().prlimit) return skipOrFail(t, "needs prlimit (util-linux) for an OS memory limit");
        const plugin = runtime("hostile", "hostile", { memoryMb: 128 });
        assert.equal(await plugin.call(tool, { mb: 32 }, context()) !== undefined, true);
        const pid = plugin.pid as number;
        const error = await rejection(plugin.call(tool, { mb: 512 }, context()));
        assert.equal(error.code, "plugin_failed");
        assert.match(error.message, /^Plugin "hostile" failed: it reached its memory limit of 128 MiB \(.+\)$/);
        assert.ok(await eventually(() => !groupAlive(pid), 2000), "the child is gone");
        assert.deepEqual(await plugin.call("echo", { after: tool }, context()), { after: tool });
        assert.notEqual(plugin.pid, pid);
      });
    }

    it("stops huge strings at its memory limit, and the next call gets a fresh child", async () => {
      const plugin = runtime("hostile", "hostile", { memoryMb: 128 });
      const error = await rejection(plugin.call("allocStrings", { mb: 512 }, context()));
      assert.equal(error.code, "plugin_failed");
      assert.match(error.message, /^Plugin "hostile" failed: it reached its memory limit of 128 MiB \(its process /);
      assert.deepEqual(await plugin.call("echo", { after: "strings" }, context()), { after: "strings" });
    });

    it("spends no CPU between calls: a Worker left spinning is frozen once the call returns", async (t) => {
      if (!osLimits().procStat) return skipOrFail(t, "needs /proc to measure the child's CPU time");
      const plugin = runtime("hostile", "hostile");
      assert.equal(await plugin.call("spinLeftover", {}, context()), "left a worker spinning");
      const pid = plugin.pid as number;
      const before = (await platform().processCpuMs(pid, osLimits().cat))!;
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the window measured, not a synchronisation
      const after = (await platform().processCpuMs(pid, osLimits().cat))!;
      assert.ok(after - before <= 20, `the child used ${after - before} ms of CPU between calls`);
      assert.deepEqual(await plugin.call("echo", { thawed: true }, context()), { thawed: true });
      assert.equal(plugin.pid, pid);
    });

    it("fails a call over its CPU budget and kills the child", async (t) => {
      if (!osLimits().procStat) return skipOrFail(t, "needs /proc to measure the child's CPU time");
      const plugin = runtime("hostile", "hostile", { cpuMsPerCall: 300 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const { signal } = timeoutAfter(10_000, "hostile_hang");
      const started = performance.now();
      const error = await rejection(plugin.call("hang", {}, context(signal)));
      assert.equal(error.code, "plugin_failed");
      assert.equal(
        error.message,
        'Plugin "hostile" failed: call 2 ("hang") used more than 300 ms of CPU time, its budget per call',
      );
      assert.ok(performance.now() - started < 5000);
      assert.ok(await eventually(() => !groupAlive(pid), 2000));
    });

    it("refuses progress forged for another call: the child fails, the other call gets none", async () => {
      const plugin = runtime("hostile", "hostile");
      await plugin.call("echo", {}, context());
      // Timeouts only so that a missed forgery fails the test instead of hanging it.
      const victim = context(timeoutAfter(5000, "hostile_hangAsync").signal);
      const waiting = rejection(plugin.call("hangAsync", {}, victim));
      const error = await rejection(
        plugin.call("forgeProgress", { victim: 2 }, context(timeoutAfter(5000, "hostile_forgeProgress").signal)),
      );
      assert.equal(
        error.message,
        'Plugin "hostile" failed: it sent a progress for call 2 with a token that is not that call\'s',
      );
      assert.equal((await waiting).code, "plugin_failed");
      assert.deepEqual(victim.progressed, []);
    });

    it("keeps each call's token from the plugin's code, whatever it patches", async () => {
      const plugin = runtime("hostile", "hostile");
      assert.equal(await plugin.call("stealTokens", {}, context()), "traps set");
      const ctx = context();
      assert.deepEqual(await plugin.call("progressOrder", {}, ctx), "sent");
      assert.deepEqual(await plugin.call("stolen", {}, context()), { stolen: [] });
    });

    it("forwards only increasing progress, and nothing after a call's result", async () => {
      const plugin = runtime("hostile", "hostile");
      const ctx = context();
      assert.equal(await plugin.call("progressOrder", {}, ctx), "sent");
      assert.deepEqual(ctx.progressed.map(([p]) => p), [1, 3, 4]);
      const kept = context();
      assert.equal(await plugin.call("keepCtx", {}, kept), "kept");
      // The kept ctx's messages come before this call's result on the one channel.
      assert.equal(await plugin.call("useKeptCtx", {}, context()), "used");
      assert.deepEqual([kept.progressed, kept.logged], [[], []]);
    });

    it("gives a call that arrives during a cancelled call's grace period to a fresh child", async () => {
      const plugin = runtime("hostile", "hostile", { cancelGraceMs: 1000 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const controller = new AbortController();
      const hung = rejection(plugin.call("hang", {}, context(controller.signal)));
      controller.abort();
      assert.equal((await hung).code, "cancelled");
      const started = performance.now();
      assert.deepEqual(await plugin.call("echo", { during: "grace" }, context()), { during: "grace" });
      assert.ok(performance.now() - started < 900, "answered before the grace period ended");
      assert.notEqual(plugin.pid, pid);
      assert.ok(await eventually(() => !groupAlive(pid), 3000), "the old child is killed at the end of its grace");
      const fresh = plugin.pid as number;
      assert.ok(groupAlive(fresh));
    });
  });

  describe("a misbehaving plugin fails its calls, not the host", () => {
    it("a crash (exit mid-call) rejects the call with the last stderr lines; the next call gets a fresh child", async () => {
      const plugin = runtime("hostile", "hostile");
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const error = await rejection(plugin.call("crash", {}, context()));
      assert.equal(error.code, "plugin_failed");
      assert.equal(
        error.message,
        'Plugin "hostile" failed: its process exited with code 3\nLast lines of its stderr:\nabout to crash',
      );
      assert.equal(plugin.pid, null);
      assert.ok(await eventually(() => !groupAlive(pid), 2000));
      assert.deepEqual(await plugin.call("echo", { again: 1 }, context()), { again: 1 });
      assert.notEqual(plugin.pid, pid);
    });

    it("an uncaught error ends the child like a crash", async () => {
      const plugin = runtime("hostile", "hostile");
      const error = await rejection(plugin.call("uncaught", {}, context()));
      assert.equal(error.code, "plugin_failed");
      assert.match(
        error.message,
        /^Plugin "hostile" failed: its process exited with code 1\nLast lines of its stderr:\n.*uncaught boom/,
      );
    });

    it("closing its own worker ends the child", async () => {
      const plugin = runtime("hostile", "hostile");
      const error = await rejection(plugin.call("selfClose", {}, context()));
      assert.equal(error.message, 'Plugin "hostile" failed: its process exited with code 0');
    });

    it("a call that hangs past its timeout is rejected and its process group killed", async () => {
      const plugin = runtime("hostile", "hostile", { cancelGraceMs: 300 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const { signal, reason } = timeoutAfter(200, "hostile_hang");
      const started = performance.now();
      const hung = plugin.call("hang", {}, context(signal));
      const bystander = plugin.call("echo", { waiting: true }, context());
      assert.equal(await rejection(hung), reason);
      assert.ok(performance.now() - started < 1000);
      const other = await rejection(bystander);
      assert.equal(other.code, "plugin_failed");
      assert.equal(
        other.message,
        'Plugin "hostile" failed: call 2 ("hang") did not stop within 300 ms of being cancelled',
      );
      assert.ok(await eventually(() => !groupAlive(pid), 2000), "the process group is gone");
      assert.deepEqual(await plugin.call("echo", { fresh: true }, context()), { fresh: true });
      assert.notEqual(plugin.pid, pid);
    });

    it("a call that ignores its cancellation gets its child killed after the grace period", async () => {
      const plugin = runtime("hostile", "hostile", { cancelGraceMs: 300 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const controller = new AbortController();
      // The child is ready, so the call is written at once: the cancellation follows it on the pipe.
      const call = plugin.call("hangAsync", {}, context(controller.signal));
      controller.abort();
      assert.equal((await rejection(call)).code, "cancelled");
      assert.equal(plugin.pid, pid, "the child has its grace period");
      assert.ok(await eventually(() => plugin.pid === null && !groupAlive(pid), 2000), "then it is killed");
    });

    it("a child spinning in a worker thread as well is killed whole", async () => {
      const plugin = runtime("hostile", "hostile", { cancelGraceMs: 200 });
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const { signal, reason } = timeoutAfter(300, "hostile_spinWorker");
      assert.equal(await rejection(plugin.call("spinWorker", {}, context(signal))), reason);
      assert.ok(await eventually(() => !groupAlive(pid), 2000), "the process group is gone");
    });

    it("a flood of stdout (a line over maxMessageBytes) fails the child", async () => {
      const plugin = runtime("hostile", "hostile");
      await plugin.call("echo", {}, context());
      const pid = plugin.pid as number;
      const error = await rejection(plugin.call("flood", { bytes: 9 * 1024 * 1024 }, context()));
      assert.equal(error.code, "plugin_failed");
      assert.equal(error.message, 'Plugin "hostile" failed: it wrote a line of more than 8388608 bytes to stdout');
      assert.ok(await eventually(() => !groupAlive(pid), 2000));
    });

    it("a flood of stderr fails the child", async () => {
      const plugin = runtime("hostile", "hostile");
      const error = await rejection(plugin.call("floodStderr", { bytes: 4 * 1024 * 1024 }, context()));
      assert.equal(error.code, "plugin_failed");
      assert.ok(
        error.message.startsWith(
          'Plugin "hostile" failed: it wrote more than 1048576 bytes to stderr within one second\nLast lines of its stderr:\nyyy',
        ),
        error.message.slice(0, 200),
      );
    });

    it("garbage on stdout fails the child", async () => {
      const cases: [string, string][] = [
        ["garbage", 'it wrote a line that is not JSON: "this is not json"'],
        ["unknownType", 'it sent a message of unknown type "hello"'],
        ["fakeResult", "it sent a result for call 999, which is not running"],
      ];
      for (const [tool, detail] of cases) {
        const plugin = runtime("hostile", "hostile");
        const error = await rejection(plugin.call(tool, {}, context()));
        assert.equal(error.code, "plugin_failed");
        assert.equal(error.message, `Plugin "hostile" failed: ${detail}`);
      }
    });

    it("a result that is not JSON fails the call, not the child", async () => {
      const plugin = runtime("hostile", "hostile");
      await plugin.call("echo", {}, context());
      const pid = plugin.pid;
      const error = await rejection(plugin.call("bigint", {}, context()));
      assert.equal(error.code, "plugin_failed");
      assert.equal(error.message, 'Plugin "hostile" failed: tool "bigint" returned a value that is not JSON');
      assert.equal(plugin.pid, pid);
    });

    it("a result over maxMessageBytes fails the call, not the child", async () => {
      const plugin = runtime("hostile", "hostile", { maxMessageBytes: 64 * 1024 });
      assert.equal(await plugin.call("huge", { bytes: 1000 }, context()), "z".repeat(1000));
      const pid = plugin.pid;
      const error = await rejection(plugin.call("huge", { bytes: 64 * 1024 }, context()));
      assert.equal(error.code, "plugin_failed");
      assert.equal(error.message, 'Plugin "hostile" failed: tool "huge" returned a result of more than 65536 bytes');
      assert.equal(plugin.pid, pid);
    });

    it("a bundle that does not load fails every call with the reason", async () => {
      // Inline: a fixture file that does not parse would break `deno lint test/`.
      const unparsable = new TextEncoder().encode("export const tools = {\n");
      const broken = await rejection(runtime("broken", unparsable).call("any", {}, context()));
      assert.equal(broken.code, "plugin_failed");
      assert.match(broken.message, /^Plugin "broken" failed: its bundle did not load: SyntaxError: Unexpected token/);
      const empty = await rejection(runtime("empty", "no_tools").call("any", {}, context()));
      assert.equal(
        empty.message,
        'Plugin "empty" failed: its bundle did not load: the bundle exports neither "tools" nor a "plugin" with tools',
      );
      const slow = await rejection(runtime("slow", "load_hang", { loadTimeoutMs: 500 }).call("any", {}, context()));
      assert.equal(slow.message, 'Plugin "slow" failed: it did not load its bundle within 500 ms');
    });

    it("a child exits when its stdin closes, even while its plugin spins (no orphan outlives the host)", async () => {
      const source = childSource();
      const url = "data:text/javascript;base64," + btoa(source);
      const child = spawn(platform().denoExecutable(), [...pluginDenoArgs(), url], {
        env: pluginEnv(),
        cwd: "/",
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      let out = "";
      let err = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
      const code = readFileSync(path.join(bundlesDir, "hostile.js")).toString("base64");
      child.stdin.write(JSON.stringify({ type: "load", code, rootIds: [] }) + "\n");
      assert.ok(await eventually(() => out.includes('"loaded"'), 5000), "the bundle loaded");
      // Sent before the bundle loaded, the call was answered "no tool" and nothing spun: it goes now.
      child.stdin.write(JSON.stringify({ type: "call", id: 1, tool: "hangSaying", args: {} }) + "\n");
      // hangSaying says so on stderr just before its loop.
      assert.ok(await eventually(() => err.includes("hang: spinning"), 5000), `the plugin spins; stdout: ${out}`);
      const closedAt = performance.now();
      child.stdin.end();
      const status = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("alive"), 3000))]);
      if (status === "alive") process.kill(-(child.pid as number), "SIGKILL");
      assert.equal(status, 0);
      assert.ok(performance.now() - closedAt < 1000);
    });
  });
});
