// README is part of the interface: its tool table, settings table, commands
// and example tool are checked against what the code does.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { SETTINGS } from "../core/config.ts";
import { DENO_RUN_FLAGS } from "../core/platform/mod.ts";
import process from "node:process";
import {
  childEnv,
  connect,
  defaultPathsUnder,
  fixtureToolsDir,
  onDeno,
  repoRoot,
  runtimeName,
  runWarden,
  skipOrFail,
  tempDir,
} from "./helpers.ts";

const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");

/** Rows of the first table after `heading`, as trimmed cell arrays, header and rule dropped. */
function tableAfter(heading: string): string[][] {
  const start = readme.indexOf(`\n${heading}\n`);
  assert.notEqual(start, -1, `README has a ${heading} section`);
  const lines = readme.slice(start).split("\n");
  const first = lines.findIndex((line) => line.startsWith("|"));
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith("|")) break;
    rows.push(line.slice(1, -1).split("|").map((cell) => cell.trim()));
  }
  return rows.slice(2);
}

const unquote = (cell: string) => cell.replace(/^`|`$/g, "");

/** What every deno command warden prints or documents sets: deno's check for a newer deno off. */
const NO_UPDATE_CHECK = "DENO_NO_UPDATE_CHECK=1";

/** Whether strace can trace a child here (installed, and ptrace allowed). */
const STRACE = ["-f", "-q", "--seccomp-bpf", "-e", "trace=openat,open,connect"];
const straceWorks = spawnSync("strace", [...STRACE, "-o", "/dev/null", "true"]).status === 0;

/**
 * The file opens and connects of a server started by `command` through an agent's connection, and of the processes
 * it starts, from its start to its exit; `env` is its whole DENO_NO_UPDATE_CHECK (none when empty), whatever this
 * process has. Rejects unless the trace reached the server's exit.
 */
async function traced(command: string, args: readonly string[], env: Record<string, string>): Promise<string> {
  const work = tempDir();
  const trace = path.join(work.dir, "trace");
  const variables = ["-E", "DENO_NO_UPDATE_CHECK", ...Object.entries(env).flatMap(([k, v]) => ["-E", `${k}=${v}`])];
  try {
    const session = await connect({
      wrap: () => ({
        command: "strace",
        args: [...STRACE, "-o", trace, ...variables, "--", command, ...args],
      }),
    });
    try {
      const { tools } = await session.client.listTools();
      assert.ok(tools.some((t) => t.name === "host_context"), "it serves");
    } finally {
      await session.close();
    }
    const text = readFileSync(trace, "utf8");
    assert.match(text, /\+\+\+ exited with 0 \+\+\+\n$/, "the trace reaches the server's exit");
    return text;
  } finally {
    work.remove();
  }
}

describe(`README (${runtimeName})`, () => {
  it("names in its Layout only folders and files that exist, and walks a tools/call in ten steps", () => {
    const start = readme.indexOf("\n## Layout\n");
    const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
    const folders = [...section.matchAll(/^([a-z]+\/(?:[a-z_]+\/)*)\s/gm)].map((m) => m[1]);
    const files = [...section.matchAll(/`((?:core|tools)\/[a-z_/]+\.ts)`/g)].map((m) => m[1]);
    assert.ok(folders.length >= 10 && files.length >= 15, "the Layout lists the rooms and the path's files");
    for (const named of [...folders, ...files]) {
      assert.ok(existsSync(path.join(repoRoot, named.replace("<name>", ""))), `README's Layout names ${named}`);
    }
    const coreRooms = [...new Set(folders.filter((f) => f.startsWith("core/")))];
    const onDisk = (dir: string): string[] =>
      readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).filter((e) => e.isDirectory())
        .flatMap((e) => [`${dir}${e.name}/`, ...onDisk(`${dir}${e.name}/`)]);
    const withFiles = onDisk("core/").filter((dir) =>
      readdirSync(path.join(repoRoot, dir)).some((name) => name.endsWith(".ts"))
    );
    assert.deepEqual(withFiles.filter((dir) => !coreRooms.includes(dir)), [], "every room of core/ is in the Layout");
    const steps = [...section.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1]));
    assert.deepEqual(steps, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("documents every tool of the catalog with its risk class, and no other", async () => {
    const { stdout } = await runWarden(["tools", "--json"]);
    const catalog = (JSON.parse(stdout).tools as { name: string; _meta: Record<string, string> }[])
      .map((t) => [t.name, t._meta["warden/risk"]]);
    const documented = tableAfter("## Tools").map(([name, risk]) => [unquote(name), risk]);
    assert.deepEqual(documented, catalog);
  });

  it("documents every setting with its flag, variable and default", () => {
    const documented = tableAfter("## Settings").map((
      [flag, env, def],
    ) => [unquote(flag) || null, unquote(env) || null, unquote(def)]);
    assert.deepEqual(documented, SETTINGS.map((s) => [s.flag, s.env, s.default]));
    for (const setting of SETTINGS) assert.ok(readme.includes(setting.description), `README describes ${setting.env}`);
  });

  it("shows commands that exist: npm scripts, deno tasks and the broad flags of deno task start", () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8"));
    const deno = JSON.parse(readFileSync(path.join(repoRoot, "deno.json"), "utf8"));
    for (const script of ["start", "test", "warden"]) assert.ok(pkg.scripts[script], `npm script ${script}`);
    for (const task of ["start", "test", "warden", "catalog:update", "plugin"]) {
      assert.ok(deno.tasks[task], `deno task ${task}`);
      assert.ok(readme.includes(`deno task ${task}`), `README shows deno task ${task}`);
    }
    const flags = DENO_RUN_FLAGS.join(" ");
    assert.ok(
      deno.tasks.start.startsWith(`${NO_UPDATE_CHECK} node_modules/.bin/deno run ${flags} core/main.ts`),
      "deno task start grants exactly DENO_RUN_FLAGS",
    );
    assert.ok(readme.includes("npm install") && readme.includes("npm start") && readme.includes("npm test"));
  });

  it("registers deno with the command warden command prints for the defaults", async (t) => {
    const inPath = (name: string) =>
      (process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, name)).find((p) => existsSync(p));
    if (inPath("git") !== "/usr/bin/git" || inPath("bwrap") !== "/usr/bin/bwrap") {
      return skipOrFail(t, "README's example is for git and bubblewrap in /usr/bin: apt-get install git bubblewrap");
    }
    // run_checks's other programs would be read too where found outside warden's node_modules (npm test puts its
    // .bin first in PATH, which the node_modules grant covers).
    const outside = ["tsc", "eslint", "deno"].filter((name) => inPath(name)?.startsWith(repoRoot) === false);
    if (outside.length > 0) {
      return skipOrFail(t, `README's example is for no tsc, eslint or deno in PATH; found ${outside.join(", ")}`);
    }
    // Wherever node is (CI installs its own), README shows it in /usr/bin.
    const nodeAt = inPath("node");
    const nodePaths = nodeAt ? [nodeAt, realpathSync(nodeAt)] : [];
    const block = /To run it under deno instead[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    const documented = block.replace(/\\\n\s*/g, "").trim();
    const work = tempDir();
    // Stands for /tmp: a directory that holds no clone of warden, wherever the clone is (CI may clone under /tmp).
    const temp = tempDir();
    try {
      // The defaults: the user's directories under HOME (no XDG variable, no path setting: "" is unset), the temp
      // directory in /tmp. Nothing is created there by printing a command.
      const home = "/home/warden-readme-example";
      const env = { HOME: home, ...defaultPathsUnder("", "") };
      const printed = await runWarden(["command", "--runtime", "deno"], {
        cwd: work.dir,
        env: { ...env, TMPDIR: temp.dir },
      });
      assert.equal(printed.code, 0, printed.stderr);
      // Each permission list is sorted by path, so its order depends on where warden is: compare them as sets.
      const asSets = (command: string) =>
        command.replace(
          /(--allow-[a-z]+=)([^ ']+)/g,
          (_, flag, list: string) =>
            flag +
            [...new Set(list.split(",").map((p) => nodePaths.includes(p) ? "/usr/bin/node" : p))].sort().join(","),
        );
      const shown = printed.stdout.trim().replaceAll(repoRoot.replace(/\/$/, ""), "<warden>").replaceAll(
        temp.dir,
        "/tmp",
      ).replaceAll(home, "<home>");
      assert.equal(asSets(shown), asSets(documented));
      assert.ok(
        documented.startsWith(`${NO_UPDATE_CHECK} <warden>/node_modules/deno/deno run `),
        "the binary itself, no node shim, its update check off",
      );
    } finally {
      work.remove();
      temp.remove();
    }
  });

  it("has a package-lock.json that npm install leaves as it is, with node 20's npm 10 as with npm 11", () => {
    // npm 11 records `libc` for platform packages (@deno/linux-*-glibc) and npm 10 drops it, rewriting the lock on a
    // fresh clone; without the field both write the lock as committed (checked with npm 10.9 and 11.19).
    const lock = JSON.parse(readFileSync(path.join(repoRoot, "package-lock.json"), "utf8"));
    const withLibc = Object.entries(lock.packages as Record<string, Record<string, unknown>>)
      .filter(([, entry]) => "libc" in entry).map(([name]) => name);
    assert.deepEqual(withLibc, [], "remove the libc fields npm 11 wrote (see the comment above)");
    assert.equal(lock.lockfileVersion, 3);
  });

  it("npm install points node_modules/.bin/deno at the deno binary, not at the package's node script", () => {
    // What every deno task and scripts/test.mjs start: a script there would start node before deno, every time.
    for (const file of ["node_modules/.bin/deno", "node_modules/deno/deno"]) {
      const fd = openSync(path.join(repoRoot, file), "r");
      const head = new Uint8Array(4);
      try {
        readSync(fd, head, 0, 4, 0);
      } finally {
        closeSync(fd);
      }
      assert.notEqual(new TextDecoder().decode(head.subarray(0, 2)), "#!", `${file} is a script`);
      assert.ok(statSync(path.join(repoRoot, file)).size > 1_000_000, `${file} is the binary`);
    }
  });

  it("deno task start serves MCP and deno task warden runs the CLI", async () => {
    // After npm install, node_modules/.bin/deno is the deno package's binary, and deno's task runner takes a bare
    // "deno" from node_modules/.bin for a JavaScript file and fails to parse it: the tasks name that path.
    const deno = onDeno ? process.execPath : path.join(repoRoot, "node_modules/.bin/deno");
    const session = await connect({ wrap: () => ({ command: deno, args: ["task", "start"] }) });
    try {
      const { tools } = await session.client.listTools();
      assert.ok(tools.some((t) => t.name === "host_context"), JSON.stringify(tools.map((t) => t.name)));
    } finally {
      await session.close();
    }
    const cli = spawnSync(deno, ["task", "warden", "tools"], { cwd: repoRoot, env: childEnv(), encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^host_context +read /m);
  });

  it("starts deno with its update check off: the printed command, the startup line's forms and every deno task", async (t) => {
    if (!straceWorks) return skipOrFail(t, "this test traces deno's system calls: apt-get install strace");
    const printed = await runWarden(["command", "--runtime", "deno", "--json"]);
    assert.equal(printed.code, 0, printed.stderr);
    const { command, args, env } = JSON.parse(printed.stdout);
    assert.deepEqual(env, { DENO_NO_UPDATE_CHECK: "1" }, "the .mcp.json entry carries the variable");
    const text = await runWarden(["command", "--runtime", "deno"]);
    assert.ok(text.stdout.startsWith(`${NO_UPDATE_CHECK} ${command} run `), text.stdout);
    const deno = JSON.parse(readFileSync(path.join(repoRoot, "deno.json"), "utf8"));
    for (const [name, task] of Object.entries(deno.tasks as Record<string, string>)) {
      assert.ok(task.startsWith(`${NO_UPDATE_CHECK} node_modules/.bin/deno `), `deno task ${name}: ${task}`);
    }
    // As it starts, deno run reads <DENO_DIR>/latest.txt to decide whether to check, and looks up dl.deno.land
    // ~500 ms later when it does: the read is the decision, made at every start before any module runs.
    const checks = (trace: string) => /latest\.txt/.test(trace);
    const inet = (trace: string) => trace.split("\n").filter((line) => /connect\(.*AF_INET/.test(line));
    const without = await traced(command, args, {});
    assert.ok(checks(without), "deno checks for updates when the variable is absent (this test's control)");
    const registered = await traced(command, args, env);
    assert.ok(!checks(registered), "the printed command does not check");
    assert.deepEqual(inet(registered), [], "and connects nowhere");
    const denoPath = onDeno ? process.execPath : path.join(repoRoot, "node_modules/.bin/deno");
    const task = await traced(denoPath, ["task", "start"], {});
    assert.ok(!checks(task), "deno task start does not check");
    assert.deepEqual(inet(task), [], "deno task start connects nowhere");
  });

  it("shows the variable of the deno command for every agent, and the startup line prints it", async () => {
    for (
      const form of [
        "claude mcp add warden -e DENO_NO_UPDATE_CHECK=1 -- <command>",
        "--env DENO_NO_UPDATE_CHECK=1",
        '"env": { "DENO_NO_UPDATE_CHECK": "1" }',
        'env = { DENO_NO_UPDATE_CHECK = "1" }',
      ]
    ) assert.ok(readme.includes(form), `README shows ${form}`);
    const { command, args } = JSON.parse((await runWarden(["command", "--runtime", "deno", "--json"])).stdout);
    const session = await connect({ wrap: () => ({ command, args }) });
    let digest: unknown;
    try {
      // A call waits for the start-up work after the initialize answer, which the ready line follows.
      const facts = await session.client.callTool({ name: "host_context", arguments: {} });
      digest = (facts.structuredContent as { catalogDigest: string }).catalogDigest;
    } finally {
      await session.close();
    }
    const ready = JSON.parse(session.stderr().split("\n").find((line) => line.includes('"event":"ready"'))!);
    assert.equal(ready.catalog, digest);
    assert.deepEqual(ready.register.mcpJson.mcpServers.warden, { command, args, env: { DENO_NO_UPDATE_CHECK: "1" } });
    assert.ok(
      ready.register.claudeCode.startsWith(`claude mcp add warden -e ${NO_UPDATE_CHECK} -- ${command} run `),
      ready.register.claudeCode,
    );
  });

  it("its example tool is a real tool that runs", async () => {
    const block = /## Writing a tool[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    const fixture = readFileSync(path.join(repoRoot, "test/fixtures/tools/line_count.ts"), "utf8");
    assert.equal(block, fixture.replace("../../../core/tool.ts", "../core/tool.ts"));
    const session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
    try {
      const result = await session.client.callTool({ name: "line_count", arguments: { path: "README.md" } });
      assert.deepEqual(result.structuredContent, { path: "README.md", lines: readme.split("\n").length - 1 });
    } finally {
      await session.close();
    }
  });
});
