// `warden doctor` and host_context, as a user meets them: a fresh HOME whose
// XDG variables point at temp directories, the defaults under them and their
// sources, a flag's or a variable's path named as such, a state directory
// warden cannot write, and no HOME at all.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { connect, defaultPathsUnder, repoRoot, runtimeName, runWarden, tempDir, TEST_XDG } from "./helpers.ts";

type Check = {
  name: string;
  ok: boolean;
  value: string | null;
  source: string | null;
  detail: string;
  fix: string | null;
};

describe(`warden doctor (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let project: string;
  let env: Record<string, string>;
  before(() => {
    work = tempDir();
    project = path.join(work.dir, "project");
    mkdirSync(project);
    env = {
      HOME: path.join(work.dir, "home"),
      ...defaultPathsUnder(path.join(work.dir, "config"), path.join(work.dir, "state")),
    };
  });
  after(() => work?.remove());

  const doctor = async (args: string[] = [], extra: Record<string, string> = {}) => {
    const result = await runWarden(["doctor", "--json", ...args], { env: { ...env, ...extra }, cwd: project });
    return { ...result, report: JSON.parse(result.stdout) as { ok: boolean; checks: Check[] } };
  };

  it("finds nothing wrong in a fresh home: each path under the user's directories or the project, with its source", async () => {
    const { code, report, stderr } = await doctor();
    assert.equal(code, 0, stderr);
    assert.equal(report.ok, true);
    const settings = Object.fromEntries(report.checks.map((c) => [c.name, [c.value, c.source]]));
    const config = path.join(work.dir, "config", "warden");
    const state = path.join(work.dir, "state", "warden");
    assert.deepEqual(
      {
        "--plugins-dir": settings["--plugins-dir"],
        "--allowed-signers": settings["--allowed-signers"],
        "--revoked-keys": settings["--revoked-keys"],
        "--plugins-lock": settings["--plugins-lock"],
        "--project-dir": settings["--project-dir"],
        "--ledger": settings["--ledger"],
        "--jobs-dir": settings["--jobs-dir"],
      },
      {
        "--plugins-dir": [path.join(config, "plugins"), "user config"],
        "--allowed-signers": [path.join(config, "allowed_signers"), "user config"],
        "--revoked-keys": [path.join(config, "revoked_keys"), "user config"],
        "--plugins-lock": [path.join(config, "plugins.lock.json"), "user config"],
        "--project-dir": [path.join(project, ".warden"), "project"],
        "--ledger": [path.join(state, "ledger"), "user state"],
        "--jobs-dir": [path.join(state, "jobs"), "user state"],
      },
    );
    const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
    assert.equal(byName["--ledger"].detail, "writable");
    assert.equal(byName["--allowed-signers"].detail, "absent: no key is trusted");
    assert.equal(byName.install.value, repoRoot.replace(/\/$/, ""));
    assert.equal(byName.install.detail, "read at run time, never written");
    assert.equal(byName.runtime.value?.split(" ")[0], runtimeName);
    for (const name of ["deno", "bubblewrap", "git", "confinement", "project"]) assert.ok(byName[name], name);
    // Nothing of the environment but the settings' own paths: not PATH, not HOME.
    assert.ok(!JSON.stringify(report).includes(process.env.PATH ?? "\0"), "PATH is not printed");
    assert.ok(!JSON.stringify(report).includes(env.HOME), "HOME is not printed");
  });

  it("names a flag's and a variable's path by the flag and the variable, and says it in words without --json", async () => {
    const ledger = path.join(work.dir, "my-ledger");
    const { report } = await doctor(["--ledger", ledger], { WARDEN_JOBS_DIR: path.join(work.dir, "my-jobs") });
    const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
    assert.deepEqual([byName["--ledger"].value, byName["--ledger"].source], [ledger, "--ledger"]);
    assert.equal(byName["--jobs-dir"].source, "WARDEN_JOBS_DIR");
    const text = await runWarden(["doctor"], { env, cwd: project });
    assert.equal(text.code, 0, text.stdout);
    assert.match(
      text.stdout,
      /^ok +--allowed-signers +\S+\/config\/warden\/allowed_signers \(user config\): absent: no key is trusted$/m,
    );
    assert.match(text.stdout, /\nNothing is wrong: .*no running server or connection was inspected\.\n$/);
  });

  it("checks what serve --http would do: its tokens file, and a non-loopback address without tokens", async () => {
    const fresh = Object.fromEntries((await doctor()).report.checks.map((c) => [c.name, c]));
    assert.deepEqual(
      [fresh.http.ok, fresh.http.value, fresh.http.detail],
      [true, "127.0.0.1:8790", "loopback, no tokens: every call is the operator's (--principal)"],
    );
    assert.equal(fresh["--tokens"].detail, "absent: no bearer token (serve --http then answers on loopback only)");
    const open = await doctor(["--host", "0.0.0.0", "--port", "9000"]);
    assert.equal(open.code, 1);
    const openHttp = open.report.checks.find((c) => c.name === "http")!;
    assert.deepEqual([openHttp.ok, openHttp.value], [false, "0.0.0.0:9000"]);
    assert.match(openHttp.detail, /not loopback and no tokens: serve --http refuses to start/);
    assert.match(openHttp.fix ?? "", /warden token add <principal>/);
    const tokens = path.join(work.dir, "tokens");
    writeFileSync(tokens, `sha256:${"a".repeat(64)} alice\nsha256:${"b".repeat(64)} alice\n`);
    const withTokens = Object.fromEntries(
      (await doctor(["--host", "0.0.0.0", "--tokens", tokens])).report.checks.map((c) => [c.name, c]),
    );
    assert.equal(withTokens["--tokens"].detail, "2 token(s) of 1 principal(s)");
    assert.deepEqual([withTokens.http.ok, withTokens.http.detail], [true, "every request needs one of 2 token(s)"]);
    writeFileSync(tokens, "alice wdn_plaintext\n");
    const broken = await doctor(["--tokens", tokens]);
    assert.equal(broken.code, 1);
    const brokenTokens = broken.report.checks.find((c) => c.name === "--tokens")!;
    assert.match(
      brokenTokens.detail,
      /Invalid tokens file .*, line 1: expected "sha256:<64 lowercase hex digits> <principal>"/,
    );
    assert.equal(broken.report.checks.find((c) => c.name === "http")!.ok, false);
  });

  it("checks the projects: each root a directory, and how a call that names none is settled", async () => {
    const lib = path.join(work.dir, "lib");
    mkdirSync(lib, { recursive: true });
    const one = Object.fromEntries((await doctor()).report.checks.map((c) => [c.name, c]));
    assert.deepEqual([one.projects.ok, one.projects.value, one.projects.detail], [true, "default", "the one project"]);
    const two = await doctor(["--root", `app=${project}`, "--root", `lib=${lib}`, "--strict-project-selection"]);
    const both = two.report.checks.find((c) => c.name === "projects")!;
    assert.deepEqual(
      [both.ok, both.value, both.detail],
      [true, "app, lib", "a call must name its project (--strict-project-selection)"],
    );
    const missing = path.join(work.dir, "missing");
    const broken = await doctor(["--root", `app=${project}`, "--root", `gone=${missing}`, "--client-roots"]);
    assert.equal(broken.code, 1);
    const gone = broken.report.checks.find((c) => c.name === "projects")!;
    assert.equal(gone.ok, false);
    assert.equal(
      gone.detail,
      `Invalid root "gone": ${JSON.stringify(missing)} does not exist; pass --root gone=<an existing directory>`,
    );
    const clientRoots = await doctor(["--root", `app=${project}`, "--root", `lib=${lib}`, "--client-roots"]);
    assert.equal(
      clientRoots.report.checks.find((c) => c.name === "projects")!.detail,
      "a call that names none reads app; over stdio the client's roots replace them when it offers roots (--client-roots)",
    );
  });

  it("fails, with the fix, where warden cannot write its state", async () => {
    // A file where the ledger directory should be: mkdir fails whoever runs the test (root included).
    const blocked = path.join(work.dir, "blocked");
    writeFileSync(blocked, "");
    const { code, report } = await doctor(["--ledger", blocked]);
    assert.equal(code, 1);
    assert.equal(report.ok, false);
    const ledger = report.checks.find((c) => c.name === "--ledger")!;
    assert.equal(ledger.ok, false);
    assert.match(ledger.detail, /^not writable: /);
    assert.equal(ledger.fix, "make it writable, or name another with --ledger");
  });

  it("without HOME, says which variable and which flags for each default it cannot place, and runs with the flags", async () => {
    const noHome = { HOME: "", XDG_CONFIG_HOME: "", XDG_STATE_HOME: "" };
    const { code, report } = await doctor([], noHome);
    assert.equal(code, 1);
    const plugins = report.checks.find((c) => c.name === "--plugins-dir")!;
    assert.deepEqual([plugins.ok, plugins.value, plugins.source], [false, null, "user config"]);
    assert.equal(
      plugins.detail,
      "Cannot find the user config directory: HOME (or XDG_CONFIG_HOME) is not set; set HOME or XDG_CONFIG_HOME, or name the files with --plugins-dir, --allowed-signers, --revoked-keys and --plugins-lock",
    );
    assert.match(
      report.checks.find((c) => c.name === "--ledger")!.detail,
      /HOME \(or XDG_STATE_HOME\) is not set; .*--ledger and --jobs-dir/,
    );
    const tools = await runWarden(["tools"], { env: { ...env, ...noHome }, cwd: project });
    assert.equal(tools.code, 2);
    assert.match(
      tools.stderr,
      /^warden: Cannot find the user config directory: HOME \(or XDG_CONFIG_HOME\) is not set/,
    );
    const flags = ["--plugins-dir", "--allowed-signers", "--revoked-keys", "--plugins-lock", "--ledger", "--jobs-dir"]
      .flatMap((flag) => [flag, path.join(work.dir, "flags", flag.slice(2))]);
    mkdirSync(path.join(work.dir, "flags", "plugins-dir"), { recursive: true });
    const withFlags = await runWarden([...flags, "tools"], { env: { ...env, ...noHome }, cwd: project });
    assert.equal(withFlags.code, 0, withFlags.stderr);
  });
});

describe(`a server on the default paths (${runtimeName})`, () => {
  it("keeps its ledger in the user state directory and writes nothing where warden is installed", async () => {
    const work = tempDir();
    const state = path.join(work.dir, "state");
    const before = readdirSync(repoRoot).sort();
    const session = await connect({
      cwd: work.dir,
      env: defaultPathsUnder(path.join(work.dir, "config"), state),
    });
    try {
      const result = await session.client.callTool({ name: "host_context", arguments: {} });
      assert.equal(result.isError, undefined);
      const ledger = path.join(state, "warden", "ledger");
      assert.ok(readdirSync(ledger).some((name) => name.endsWith(".jsonl")), "the ledger file is in the state dir");
    } finally {
      await session.close();
      work.remove();
    }
    assert.deepEqual(readdirSync(repoRoot).sort(), before, "no new file or directory in the install directory");
  });
});

describe(`host_context's settings (${runtimeName})`, () => {
  it("says where each path setting came from, a default's file by its base, and no host path", async () => {
    const session = await connect();
    try {
      const result = await session.client.callTool({ name: "host_context", arguments: {} });
      const settings = (result.structuredContent as { settings: Record<string, { file: string; from: string }> })
        .settings;
      assert.deepEqual(settings["--allowed-signers"], { file: "<user config>/allowed_signers", from: "user config" });
      assert.deepEqual(settings["--jobs-dir"], { file: null, from: "WARDEN_JOBS_DIR" });
      assert.deepEqual(settings["--ledger"], { file: null, from: "WARDEN_LEDGER" });
      assert.deepEqual(settings["--project-dir"], { file: "<root default>/.warden", from: "project" });
      const text = (result.content as { text: string }[])[0].text;
      assert.ok(!text.includes(TEST_XDG.config) && !text.includes(repoRoot), "no host path");
      assert.deepEqual(settings["--approvers-signers"], {
        file: "<user config>/approvers_allowed_signers",
        from: "user config",
      });
      assert.equal(Object.keys(settings).length, 9);
    } finally {
      await session.close();
    }
  });
});
