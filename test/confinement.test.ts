// Runtime confinement behind the context: a hostile built-in tool (test/fixtures/hostile/read.ts) reaches past
// ctx with a computed dynamic import of node:fs, globalThis.process, Deno.env, child_process and fetch. Run the
// way warden prints its registration command, deno stops every attempt and node's permission model stops the
// file and process ones; host_context says which, and a server that lacks what it needs refuses to start.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import process from "node:process";
import {
  builtFixtureToolsDir,
  childEnv,
  connect,
  onDeno,
  repoRoot,
  runtimeName,
  runWarden,
  type Session,
  tempDir,
  textOf,
} from "./helpers.ts";
import { ATTEMPTS } from "./fixtures/hostile/read.ts";

// Built on both runtimes: the commands warden prints run warden's build, which loads built tools (deno would take the
// sources too, but they import core/ from source, which those commands do not grant).
const hostileTools = path.join(repoRoot, "dist/test/fixtures/hostile");
const SECRET = "hunter2-confinement-secret";
type Attempt = (typeof ATTEMPTS)[number];
type Outcome = { attempt: Attempt; outcome: "done"; value: string } | {
  attempt: Attempt;
  outcome: "blocked";
  error: string;
};
interface Confinement {
  runtime: string;
  inForce: boolean;
  open: string[];
  detail: string;
}

/** The registration command warden prints for `args` (`warden command --json`). */
async function printedCommand(
  args: string[],
  env: Record<string, string>,
  extra: string[] = [],
): Promise<{ command: string; args: string[]; env?: Record<string, string> }> {
  const printed = await runWarden(["command", "--json", ...extra, ...args], { env });
  assert.equal(printed.code, 0, printed.stderr);
  return JSON.parse(printed.stdout);
}

async function confinementOf(session: Session): Promise<Confinement> {
  const result = await session.client.callTool({ name: "host_context", arguments: {} });
  assert.equal(result.isError, undefined, textOf(result));
  return (result.structuredContent as { confinement: Confinement }).confinement;
}

describe(`runtime confinement of built-in tools (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let root: string;
  let secretFile: string;
  let secretJson: string;
  let listener: Server;
  let url: string;
  /** Connections the listener accepted: fetch and a bare TCP connect both count. */
  let connections = 0;
  let env: Record<string, string>;

  before(async () => {
    work = tempDir();
    root = path.join(work.dir, "root");
    mkdirSync(root);
    writeFileSync(path.join(root, "inside.txt"), "inside\n");
    mkdirSync(path.join(work.dir, "outside"));
    secretFile = path.join(work.dir, "outside", "secret.txt");
    writeFileSync(secretFile, `${SECRET}\n`);
    secretJson = path.join(work.dir, "outside", "secret.json");
    writeFileSync(secretJson, JSON.stringify({ secret: SECRET }));
    listener = createServer((_request, response) => response.end("reached"));
    listener.on("connection", () => connections++);
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/`;
    env = { WARDEN_TOOLS_DIR: hostileTools, CONFINEMENT_SECRET: SECRET };
  });
  after(async () => {
    await new Promise((resolve) => listener.close(resolve));
    work.remove();
  });

  /** Each attempt of the hostile tool against this test's targets, by name. */
  async function attempts(session: Session, written: string): Promise<Record<Attempt, Outcome>> {
    const targets: Record<Attempt, string> = {
      "read-file": secretFile,
      "write-file": written,
      "env-process": "CONFINEMENT_SECRET",
      "env-deno": "CONFINEMENT_SECRET",
      spawn: "/bin/echo",
      fetch: url,
      "deno-read": secretFile,
      "deno-command": "/bin/echo",
      "env-all": SECRET,
      "import-file": secretJson,
      connect: new URL(url).host,
      "proc-environ": SECRET,
    };
    const out = {} as Record<Attempt, Outcome>;
    for (const attempt of ATTEMPTS) {
      const result = await session.client.callTool({ name: "read", arguments: { attempt, target: targets[attempt] } });
      assert.equal(result.isError, undefined, textOf(result));
      out[attempt] = JSON.parse(textOf(result));
    }
    return out;
  }

  it("lets the hostile tool through where nothing confines the runtime, and says so", async () => {
    // The control: the same attempts succeed under the broad flags the other suites use (deno) and the plain
    // node command, so the blocks below are the runtime's doing, not a broken fixture.
    const session = await connect({ env, args: ["--root", `default=${root}`] });
    try {
      const confinement = await confinementOf(session);
      assert.equal(confinement.runtime, runtimeName);
      assert.equal(confinement.inForce, false, confinement.detail);
      for (const open of ["read", "write", "run", "net", "env"]) assert.ok(confinement.open.includes(open), open);
      const written = path.join(work.dir, "outside", "written-control.txt");
      const before = connections;
      const outcomes = await attempts(session, written);
      const done = (attempt: Attempt) => {
        const outcome = outcomes[attempt];
        assert.equal(outcome.outcome, "done", `${attempt}: ${JSON.stringify(outcome)}`);
        return (outcome as { value: string }).value;
      };
      assert.equal(done("read-file"), `${SECRET}\n`);
      assert.ok(existsSync(written), "the control wrote its file");
      assert.equal(done("env-process"), SECRET);
      assert.equal(done("env-all"), '["CONFINEMENT_SECRET"]');
      assert.equal(done("spawn"), "spawned past ctx\n");
      assert.equal(done("fetch"), "reached");
      assert.equal(done("connect"), "connected");
      assert.equal(connections, before + 2);
      assert.equal(done("import-file"), JSON.stringify({ secret: SECRET }));
      if (onDeno) {
        assert.equal(done("env-deno"), SECRET);
        assert.equal(done("deno-read"), `${SECRET}\n`);
        assert.equal(done("deno-command"), "spawned past ctx\n");
        // Deno keeps /proc/self/environ for --allow-all even here.
        assert.equal(outcomes["proc-environ"].outcome, "blocked");
      } else {
        for (const attempt of ["env-deno", "deno-read", "deno-command"] as const) {
          assert.match((outcomes[attempt] as { error: string }).error, /^Unavailable/, attempt);
        }
        assert.equal(done("proc-environ"), "found");
      }
      if (!onDeno) assert.match(confinement.detail, /--experimental-permission|--permission/);
    } finally {
      await session.close();
    }
  });

  // Each runtime's suite holds the tests of its own permission model: registered, never skipped.
  const onDenoIt = onDeno ? it : () => {};
  const onNodeIt = onDeno ? () => {} : it;

  onDenoIt("is stopped by deno's permissions under the command warden prints", async () => {
    const args = ["--root", `default=${root}`];
    const { command, args: commandArgs, env: variables } = await printedCommand(args, env);
    assert.equal(command, process.execPath, "the printed command starts the deno binary itself");
    assert.ok(commandArgs.includes("--no-prompt") && !commandArgs.includes("-A"), commandArgs.join(" "));
    for (const flag of ["--allow-read", "--allow-write", "--allow-env", "--allow-run", "--allow-net"]) {
      assert.ok(!commandArgs.includes(flag), `${flag} is never granted whole here`);
    }
    const session = await connect({ env, wrap: () => ({ command, args: commandArgs }) });
    try {
      const confinement = await confinementOf(session);
      assert.deepEqual({ ...confinement, detail: "" }, { runtime: "deno", inForce: true, open: [], detail: "" });
      const written = path.join(work.dir, "outside", "written-deno.txt");
      const before = connections;
      const outcomes = await attempts(session, written);
      for (const attempt of ATTEMPTS) {
        const outcome = outcomes[attempt];
        assert.equal(outcome.outcome, "blocked", `${attempt}: ${JSON.stringify(outcome)}`);
        assert.match((outcome as { error: string }).error, /NotCapable|Requires \w+ access/, attempt);
        assert.ok(!JSON.stringify(outcome).includes(SECRET), `${attempt} leaked nothing`);
      }
      assert.ok(!existsSync(written), "nothing was written");
      assert.equal(connections, before, "the listener was never reached");
      // The server started narrowed prints the command it runs under: the startup line is a fixed point.
      const ready = JSON.parse(session.stderr().split("\n").find((line) => line.includes('"event":"ready"'))!);
      assert.deepEqual(ready.register.mcpJson.mcpServers.warden, { command, args: commandArgs, env: variables });
      assert.deepEqual(ready.confinement, { inForce: true, open: [] });
    } finally {
      await session.close();
    }
  });

  onNodeIt(
    "is held by node's permission model for files and processes, which leaves env and network open",
    async () => {
      const args = ["--root", `default=${root}`];
      const { command, args: commandArgs } = await printedCommand(args, env, ["--node-permission"]);
      assert.ok(commandArgs[0] === "--experimental-permission" || commandArgs[0] === "--permission", commandArgs[0]);
      assert.ok(!commandArgs.includes("--allow-child-process"), "no gate tool and no plugin: no child processes");
      const session = await connect({ env, wrap: () => ({ command, args: commandArgs }) });
      try {
        const confinement = await confinementOf(session);
        assert.equal(confinement.inForce, true, confinement.detail);
        assert.ok(confinement.open.includes("env") && confinement.open.includes("net"), confinement.open.join());
        for (const held of ["read", "write", "run"]) assert.ok(!confinement.open.includes(held), held);
        const written = path.join(work.dir, "outside", "written-node.txt");
        const before = connections;
        const outcomes = await attempts(session, written);
        for (const attempt of ["read-file", "write-file", "spawn", "import-file", "proc-environ"] as const) {
          assert.match((outcomes[attempt] as { error?: string }).error ?? "", /ERR_ACCESS_DENIED/, attempt);
        }
        assert.ok(!existsSync(written), "nothing was written");
        // What host_context reports open is open: the model has no say over these.
        for (const attempt of ["env-process", "env-all", "fetch", "connect"] as const) {
          assert.equal(outcomes[attempt].outcome, "done", attempt);
        }
        assert.equal((outcomes["env-process"] as { value: string }).value, SECRET);
        assert.equal(connections, before + 2);
      } finally {
        await session.close();
      }
    },
  );

  onDenoIt("refuses to start when deno grants less than the catalog and settings need", async () => {
    const { command, args } = await printedCommand(["--root", `default=${root}`], env);
    const elsewhere = path.join(work.dir, "outside");
    const narrowed = args.map((arg) => (arg === `default=${root}` ? `default=${elsewhere}` : arg));
    const run = spawnSync(command, narrowed, { cwd: repoRoot, env: childEnv(env), input: "", encoding: "utf8" });
    assert.equal(run.status, 2, run.stderr);
    const line = JSON.parse(run.stderr.split("\n").find((l) => l.includes("startup_failed"))!);
    assert.equal(
      line.error,
      `Missing permissions: deno does not grant what this server's catalog and settings need: read ${elsewhere}; ` +
        'run "warden command" with the same settings',
    );
    // Granted the roots but not what a dependency asks of the system: the fix is the whole command.
    const noSys = args.filter((arg) => !arg.startsWith("--allow-sys="));
    const late = spawnSync(command, noSys, { cwd: repoRoot, env: childEnv(env), input: "", encoding: "utf8" });
    assert.equal(late.status, 2, late.stderr);
    const lateLine = JSON.parse(late.stderr.split("\n").find((l) => l.includes("startup_failed"))!);
    assert.ok(
      lateLine.error.startsWith(
        "Missing permissions: deno does not grant what this server's catalog and settings need: sys cpus; start it with ",
      ),
      lateLine.error,
    );
    const quoted = ["DENO_NO_UPDATE_CHECK=1", command, ...args].map((a) => /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`)
      .join(" ");
    assert.ok(lateLine.error.endsWith(`start it with ${quoted}`), lateLine.error);
  });
});

(onDeno ? describe : () => {})(`built-in tools and plugins under the printed deno command (${runtimeName})`, () => {
  it("grants an external-side-effect tool its write roots, and the network whole only for named origins", async () => {
    // Outside the OS temp directory, which the fixtures' gate tool needs written (its scratch directories).
    mkdirSync(path.join(repoRoot, ".test-tmp"), { recursive: true });
    const dir = mkdtempSync(path.join(repoRoot, ".test-tmp", "confine-"));
    const work = { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
    // And a temp directory of the test's own for that scratch: the OS one may hold this clone (CI may clone in /tmp).
    const temp = tempDir();
    try {
      const [src, out] = ["src", "out"].map((name) => path.join(work.dir, name));
      mkdirSync(src);
      mkdirSync(out);
      const args = ["--root", `src=${src}`, "--root", `out=${out}`];
      const env = { WARDEN_TOOLS_DIR: builtFixtureToolsDir, TMPDIR: temp.dir };
      const { command, args: commandArgs } = await printedCommand(args, env);
      const flag = (name: string) => commandArgs.find((a) => a === name || a.startsWith(`${name}=`));
      assert.ok(flag("--allow-write")!.split("=")[1].split(",").includes(out), flag("--allow-write"));
      assert.ok(!flag("--allow-write")!.split("=")[1].split(",").includes(src), "src is read, not written");
      // fixture_egress declares http://localhost:47613 and http://rebind.test:47613 beside an IP origin: warden
      // connects to the addresses it resolved, so deno must let it reach any.
      assert.equal(flag("--allow-net"), "--allow-net");
      const session = await connect({ env, wrap: () => ({ command, args: commandArgs }) });
      try {
        const call = (write: Record<string, string>) =>
          session.client.callTool({ name: "fixture_egress", arguments: { write } });
        const written = await call({ root: "out", path: "report.txt", text: "report\n" });
        assert.equal(written.isError, undefined, textOf(written));
        assert.equal(readFileSync(path.join(out, "report.txt"), "utf8"), "report\n");
        const refused = await call({ root: "src", path: "report.txt", text: "no\n" });
        assert.equal(refused.isError, true);
        assert.ok(!existsSync(path.join(src, "report.txt")));
        // Unrestricted because it is needed, so not "open": confinement is in force (the fixtures have no host_context).
        const ready = JSON.parse(session.stderr().split("\n").find((line) => line.includes('"event":"ready"'))!);
        assert.deepEqual(ready.confinement, { inForce: true, open: [] });
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
      temp.remove();
    }
  });

  it("every built-in tool and a verified plugin work with exactly the permissions it grants", async () => {
    const work = tempDir();
    try {
      const root = path.join(work.dir, "project");
      mkdirSync(path.join(root, "src"), { recursive: true });
      mkdirSync(path.join(root, "node_modules", "left-pad"), { recursive: true });
      writeFileSync(
        path.join(root, "node_modules", "left-pad", "package.json"),
        JSON.stringify({ name: "left-pad", version: "1.3.0", license: "WTFPL" }),
      );
      writeFileSync(path.join(root, ".gitignore"), "node_modules/\n");
      writeFileSync(path.join(root, "package.json"), JSON.stringify({ name: "p", version: "1.0.0" }));
      writeFileSync(path.join(root, "src", "a.ts"), 'import { b } from "./b.ts";\nexport const a = b;\n');
      writeFileSync(path.join(root, "src", "b.ts"), "export const b = 1; // TODO: two\n");
      const git = (...args: string[]) =>
        spawnSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd: root, encoding: "utf8" });
      git("init", "-q");
      git("add", ".");
      git("commit", "-qm", "start");
      writeFileSync(path.join(root, "src", "b.ts"), "export const b = 2; // TODO: two\n");
      const plugins = path.join(work.dir, "plugins");
      cpSync(path.join(repoRoot, "plugins", "licenses"), path.join(plugins, "licenses"), { recursive: true });
      const env = {
        WARDEN_PLUGINS_DIR: plugins,
        WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
        WARDEN_ALLOWED_SIGNERS: path.join(repoRoot, "test/fixtures/trust/allowed_signers"),
      };
      const trust = await runWarden(["plugin", "trust", path.join(plugins, "licenses")], {
        env,
        denoFlags: ["--allow-write"],
      });
      assert.equal(trust.code, 0, trust.stderr);
      const { command, args } = await printedCommand(["--root", `default=${root}`], env);
      assert.ok(args.some((a) => a.startsWith("--allow-run=") && a.includes(process.execPath)), "deno for plugins");
      const session = await connect({ env, wrap: () => ({ command, args }) });
      try {
        const calls: [string, Record<string, unknown>][] = [
          ["host_context", {}],
          ["tech_debt_check", {}],
          ["component_discover", {}],
          ["code_about", { module: "src/a.ts" }],
          ["code_blast_radius", { module: "src/b.ts" }],
          ["code_dead_exports", {}],
          ["change_summary", {}],
          ["extension_list", {}],
          ["licenses_list", {}],
        ];
        for (const [name, args] of calls) {
          const result = await session.client.callTool({ name, arguments: args });
          assert.equal(result.isError, undefined, `${name}: ${textOf(result)}`);
        }
        const changed = await session.client.callTool({ name: "change_summary", arguments: {} });
        assert.deepEqual(
          (changed.structuredContent as { files: { path: string }[] }).files.map((f) => f.path),
          ["src/b.ts"],
        );
        const licenses = await session.client.callTool({ name: "licenses_list", arguments: {} });
        assert.equal((licenses.structuredContent as { total: number }).total, 1);
        // The plugin child is still started under its OS limits: the printed command lets warden find and run them.
        const listed = await session.client.callTool({ name: "extension_list", arguments: {} });
        assert.match(JSON.stringify(listed.structuredContent), /OS limit RLIMIT_DATA/);
        assert.equal((await confinementOf(session)).inForce, true);
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});
