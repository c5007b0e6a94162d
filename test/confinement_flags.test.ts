// The pure half of runtime confinement: from a catalog's capabilities and the settings to the permissions needed,
// and from those to deno's and node's flags. test/confinement.test.ts runs the commands; this pins the rules.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { denoPermissionFlags, type NeedsInput, nodePermissionFlags, permissionNeeds } from "../core/confinement.ts";
import { runtimeName } from "./helpers.ts";

const base: NeedsInput = {
  appRoot: "/opt/warden",
  fromSource: true,
  toolsDir: "/opt/warden/tools",
  roots: new Map([["default", ["/work/project"]]]),
  pluginsDir: "/opt/warden/plugins",
  trustFiles: ["/opt/warden/trust/allowed_signers"],
  ledgerDir: "/opt/warden/.ledger",
  jobsDir: null,
  execPath: "/opt/warden/node_modules/deno/deno",
  pluginDeno: null,
  pluginHelpers: ["/usr/bin/setpriv", "/usr/bin/prlimit", "/usr/bin/cat"],
  programs: new Map(),
  programFiles: [],
  bwrap: null,
  tempDir: "/tmp",
  writeRoots: [],
  netHosts: [],
  env: ["WARDEN_ROOTS", "PATH"],
};
const flag = (flags: string[], name: string) => flags.find((f) => f === name || f.startsWith(`${name}=`));

describe(`confinement flags (${runtimeName})`, () => {
  it("a read-only catalog reads its roots and warden's files, writes its ledger, runs and reaches nothing", () => {
    const needs = permissionNeeds(base);
    const flags = denoPermissionFlags(needs, null);
    assert.equal(
      flag(flags, "--allow-read"),
      "--allow-read=/opt/warden/.ledger,/opt/warden/core,/opt/warden/deno.json,/opt/warden/dist," +
        "/opt/warden/node_modules,/opt/warden/package.json,/opt/warden/plugins,/opt/warden/tools," +
        "/opt/warden/trust/allowed_signers,/work/project",
    );
    assert.equal(flag(flags, "--allow-write"), "--allow-write=/opt/warden/.ledger");
    assert.equal(flag(flags, "--allow-run"), undefined);
    assert.equal(flag(flags, "--allow-net"), undefined);
    assert.equal(flag(flags, "--allow-env"), "--allow-env=PATH,WARDEN_ROOTS");
    assert.equal(flag(flags, "--allow-sys"), "--allow-sys=cpus");
    assert.equal(flags[0], "--no-prompt");
  });

  it("writes the working directory as . and lets it cover nothing else", () => {
    // The agent starts warden elsewhere: warden's own files under today's directory must still be listed.
    const needs = permissionNeeds({ ...base, appRoot: "/work/warden", roots: new Map([["default", ["/work"]]]) });
    const read = flag(denoPermissionFlags(needs, "/work"), "--allow-read")!.split("=")[1].split(",");
    assert.equal(read[0], ".");
    assert.ok(read.includes("/work/warden/core") && !read.includes("/work"), read.join());
    const absolute = flag(denoPermissionFlags(needs, null), "--allow-read")!.split("=")[1].split(",");
    assert.deepEqual(absolute, [
      "/opt/warden/.ledger",
      "/opt/warden/node_modules/deno/deno",
      "/opt/warden/plugins",
      "/opt/warden/tools",
      "/opt/warden/trust/allowed_signers",
      "/work",
    ], "an absolute /work does cover what is under it");
  });

  it("gate programs: bubblewrap alone where it isolates, the unrestricted --allow-run where not", () => {
    const gate = { ...base, programs: new Map([["git", "/usr/bin/git"]]), programFiles: ["/usr/bin/git"] };
    const withBwrap = permissionNeeds({
      ...gate,
      bwrap: "/usr/bin/bwrap",
      programFiles: ["/usr/bin/bwrap", "/usr/bin/git"],
    });
    assert.deepEqual(withBwrap.run, ["/usr/bin/bwrap"]);
    assert.deepEqual(withBwrap.write, ["/opt/warden/.ledger", "/tmp"], "gate scratch in the temp directory");
    assert.ok(withBwrap.read.includes("/usr/bin/git"), "found by lstat in PATH, so read");
    const without = permissionNeeds(gate);
    assert.equal(without.run, "all");
    assert.match(without.runAllWhy!, /process group/);
    assert.equal(flag(denoPermissionFlags(without, null), "--allow-run"), "--allow-run");
  });

  it("plugins: the deno binary they run in and the OS helpers that limit and measure it, read and run", () => {
    const needs = permissionNeeds({ ...base, pluginDeno: "/opt/warden/node_modules/deno/deno" });
    assert.deepEqual(needs.run, [
      "/opt/warden/node_modules/deno/deno",
      "/usr/bin/cat",
      "/usr/bin/prlimit",
      "/usr/bin/setpriv",
    ]);
    for (const helper of ["/usr/bin/cat", "/usr/bin/prlimit", "/usr/bin/setpriv"]) {
      assert.ok(needs.read.includes(helper), helper);
    }
    // No plugin may run: the helpers are neither read nor run.
    const none = permissionNeeds(base);
    assert.ok(!none.read.includes("/usr/bin/prlimit") && !none.read.includes("/usr/bin/cat"));
    assert.deepEqual(none.run, []);
  });

  it("write roots by id, IP origins by host and port, a named origin the whole network", () => {
    const roots = new Map([["src", ["/p/src"]], ["out", ["/p/out", "/real/out"]]]);
    const ip = permissionNeeds({
      ...base,
      roots,
      writeRoots: ["out"],
      netHosts: ["https://10.0.0.1", "http://[::1]:8080"],
    });
    assert.deepEqual(ip.write, ["/opt/warden/.ledger", "/p/out", "/real/out"]);
    assert.deepEqual(ip.net, ["10.0.0.1:443", "[::1]:8080"]);
    const named = permissionNeeds({ ...base, netHosts: ["https://10.0.0.1", "https://api.github.com"] });
    assert.equal(named.net, "all");
    assert.match(named.netAllWhy!, /https:\/\/api\.github\.com/);
    // Telemetry's collector and the policy engine are reached by name: their hosts and ports, not the whole network.
    const collector = permissionNeeds({
      ...base,
      services: [
        "http://otel.internal:4318/v1/traces",
        "https://otel.internal/v1/metrics",
        "http://[::1]:8181/v1/data/x",
      ],
    });
    assert.deepEqual(collector.net, ["[::1]:8181", "otel.internal:4318", "otel.internal:443"]);
  });

  it("node's model: one flag per path (node 20 reads only the first of a list), children only when needed", () => {
    const needs = permissionNeeds({ ...base, fromSource: false });
    const flags = nodePermissionFlags(needs, 20, true);
    assert.equal(flags[0], "--experimental-permission");
    assert.equal(nodePermissionFlags(needs, 22, true)[0], "--permission");
    assert.ok(
      flags.includes("--allow-fs-read=/work/project/*") && flags.includes("--allow-fs-read=/opt/warden/dist/*"),
    );
    assert.ok(!flags.some((f) => f.includes(",")), flags.join(" "));
    assert.deepEqual(flags.filter((f) => f.startsWith("--allow-fs-write")), ["--allow-fs-write=/opt/warden/.ledger/*"]);
    assert.ok(!flags.includes("--allow-child-process") && flags.includes("--allow-worker"));
    const plugins = nodePermissionFlags(permissionNeeds({ ...base, pluginDeno: "/x/deno" }), 20, false);
    assert.ok(plugins.includes("--allow-child-process") && !plugins.includes("--allow-worker"));
  });

  it("node's model: paths that begin with another as strings are one wildcard, which node 20 keeps", () => {
    const needs = permissionNeeds({
      ...base,
      fromSource: false,
      roots: new Map([["app", ["/x/app"]], ["app2", ["/x/app2"]], ["lib", ["/x/lib"]]]),
      trustFiles: ["/opt/warden/trust/allowed_signers", "/opt/warden/plugins.lock.json"],
      writeRoots: ["app", "app2"],
    });
    const flags = nodePermissionFlags(needs, 20, true);
    const reads = flags.filter((f) => f.startsWith("--allow-fs-read=")).map((f) => f.slice("--allow-fs-read=".length));
    const writes = flags.filter((f) => f.startsWith("--allow-fs-write=")).map((f) => f.slice(17));
    assert.ok(reads.includes("/opt/warden/plugins*") && reads.includes("/x/app*"), reads.join(" "));
    assert.ok(reads.includes("/x/lib/*") && reads.includes("/opt/warden/dist/*"), "the others keep /*");
    assert.ok(writes.includes("/x/app*"), writes.join(" "));
    // The class: no granted path begins with another (node 20 would refuse the shorter one itself).
    for (const grants of [reads, writes]) {
      const bare = grants.map((g) => g.replace(/\/?\*$/, ""));
      for (const a of bare) {
        for (const b of bare) assert.ok(a === b || !b.startsWith(a), `${a} and ${b} in ${grants.join(" ")}`);
      }
    }
  });
});
