// gate tools: ctx.spawn runs only allowlisted programs, confined, and
// change_summary reads a git working tree through it. Each refusal is proved
// by what did not happen.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import {
  connect,
  fixtureToolsDir,
  repoRoot,
  runtimeName,
  runWarden,
  type Session,
  tempDir,
  textOf,
} from "./helpers.ts";

type SpawnResult = {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
};

describe(`ctx.spawn (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let isolation: { kind: string; network: string; writes: string };
  before(async () => {
    work = tempDir();
    mkdirSync(path.join(work.dir, "sub"));
    writeFileSync(path.join(work.dir, "sub", "file.txt"), "inside\n");
    session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_TEST_SECRET: "hunter2", SECRET_TOKEN: "s3cr3t" },
      args: ["--root", `default=${work.dir}`],
    });
    // What the host claims; the tests below hold it to the claim.
    const builtins = await connect({});
    try {
      const facts = await builtins.client.callTool({ name: "host_context", arguments: {} });
      isolation = (facts.structuredContent as { gate: { isolation: typeof isolation } }).gate.isolation;
    } finally {
      await builtins.close();
    }
    if (process.env.CI) assert.equal(isolation.kind, "bubblewrap", ".ci/run installs bubblewrap");
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  const run = async (args: Record<string, unknown>) => {
    const result = await session.client.callTool({ name: "fixture_gate", arguments: args });
    return { result, spawn: (result.isError ? null : JSON.parse(textOf(result))) as SpawnResult | null };
  };

  it("runs an allowlisted program with argv, in a directory inside the root", async () => {
    const { spawn } = await run({ argv: ["cat", "file.txt"], cwd: "sub" });
    assert.deepEqual([spawn?.exitCode, spawn?.stdout], [0, "inside\n"]);
  });

  const refusals: { title: string; args: Record<string, unknown>; message: RegExp }[] = [
    {
      title: "a program not on the allowlist",
      args: { argv: ["touch", "pwned"] },
      message:
        /^Program "touch" is not on the allowlist of tool "fixture_gate": it may run sh, printenv, sleep, cat, head$/,
    },
    {
      title: "a path instead of a name (PATH tricks)",
      args: { argv: ["/bin/sh", "-c", "touch pwned"] },
      message: /^Program "\/bin\/sh" is not on the allowlist/,
    },
    { title: "a relative path", args: { argv: ["./sh"] }, message: /^Program "\.\/sh" is not on the allowlist/ },
    {
      title: "a PATH override in the environment",
      args: { argv: ["sh", "-c", "touch pwned"], env: { PATH: "/tmp/evil" } },
      message: /^Environment variable "PATH" refused/,
    },
    {
      title: "a loader hook",
      args: { argv: ["sh", "-c", "touch pwned"], env: { LD_PRELOAD: "/tmp/x.so" } },
      message: /^Environment variable "LD_PRELOAD" refused/,
    },
    {
      title: "a working directory outside the root",
      args: { argv: ["sh", "-c", "touch pwned"], cwd: ".." },
      message: /^Path refused in root "default": "\.\." leads outside the root/,
    },
    {
      title: "an argument naming a path outside the roots",
      args: { argv: ["cat", "/etc/passwd"] },
      message: /^Argument "\/etc\/passwd" refused for tool "fixture_gate": it names a path outside the roots/,
    },
    {
      title: "an option whose value climbs out of the root",
      args: { argv: ["head", "--lines=../../etc/passwd"], cwd: "sub" },
      message: /^Argument "--lines=\.\.\/\.\.\/etc\/passwd" refused/,
    },
    {
      title: "a home-relative path",
      args: { argv: ["cat", "~/.ssh/id_ed25519"] },
      message: /^Argument "~\/\.ssh\/id_ed25519" refused/,
    },
    {
      title: "a NUL byte in argv",
      args: { argv: ["sh", "-c", "touch pwned\u0000"] },
      message: /^Invalid argv: expected a non-empty array of strings without NUL/,
    },
  ];
  for (const { title, args, message } of refusals) {
    it(`refuses ${title}, and nothing runs`, async () => {
      const { result } = await run(args);
      assert.equal(result.isError, true);
      assert.match(textOf(result), message);
      assert.ok(!existsSync(path.join(work.dir, "pwned")) && !existsSync(path.join(path.dirname(work.dir), "pwned")));
    });
  }

  it("refuses ctx.spawn to a read tool, naming the capability and the class", async () => {
    const result = await session.client.callTool({ name: "fixture_read_spawn", arguments: {} });
    assert.equal(result.isError, true);
    assert.equal(
      textOf(result),
      'ctx.spawn needs risk class "gate": tool "fixture_read_spawn" is "read"; nothing was run',
    );
    assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "capability_denied");
    assert.ok(!existsSync("/tmp/warden-overreach"));
  });

  it("gives the program nothing of the host's environment but PATH and LANG", async () => {
    const { spawn } = await run({ argv: ["printenv"], env: { EXTRA: "yes" } });
    const names = spawn!.stdout.trim().split("\n").map((line) => line.split("=")[0]).sort();
    assert.deepEqual(names.filter((n) => !["PWD", "SHLVL", "_"].includes(n)), [
      "EXTRA",
      "HOME",
      "LANG",
      "PATH",
      "TMPDIR",
    ]);
    assert.ok(!spawn!.stdout.includes("hunter2") && !spawn!.stdout.includes("s3cr3t"));
  });

  it("kills the whole process group at the time limit, forked children included", async () => {
    const marker = path.join(work.dir, "late");
    const { spawn } = await run({ argv: ["sh", "-c", `(sleep 1; echo late > ${marker}) & sleep 30`], timeoutMs: 200 });
    assert.equal(spawn?.timedOut, true);
    assert.ok(spawn!.durationMs < 5000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.ok(!existsSync(marker), "the forked child was killed with its group");
  });

  it("caps captured output and says it was truncated, stopping a flood", async () => {
    const { spawn } = await run({ argv: ["head", "-c", "50000000", "/dev/zero"], maxOutputBytes: 1000 });
    assert.equal(spawn?.stdout.length, 1000);
    assert.equal(spawn?.stdoutTruncated, true);
  });

  it("writes only into its scratch directory, which is removed afterwards (when the host isolates writes)", async () => {
    const { spawn } = await run({
      argv: ["sh", "-c", 'echo x > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR" && touch inroot 2>&1; echo rc=$?'],
    });
    const [content, scratch] = spawn!.stdout.split("\n");
    assert.equal(content, "x");
    assert.ok(!existsSync(scratch), "the scratch directory is gone after the call");
    if (isolation.writes === "scratch-only") {
      assert.match(spawn!.stdout, /rc=1/);
      assert.ok(!existsSync(path.join(work.dir, "inroot")), "the root is read-only to the program");
    } else {
      assert.equal(isolation.writes, "unrestricted", "without isolation the host says so");
    }
  });

  it("has no network (when the host isolates it), proved by a listener that hears nothing", async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const { spawn } = await run({
        argv: [
          "sh",
          "-c",
          `cat /proc/net/dev | tail -n +3 | cut -d: -f1; (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>&1; echo done`,
        ],
      });
      if (isolation.network === "unshared") {
        assert.equal(spawn!.stdout.trim().split("\n")[0].trim(), "lo", "only a loopback of its own");
        assert.equal(connections, 0);
      } else {
        assert.equal(isolation.network, "host", "without isolation the host says so");
      }
    } finally {
      server.close();
    }
  });
});

describe(`a gate tool's allowlist (${runtimeName})`, () => {
  // Plain JavaScript tools inside the repository, so that "valibot" resolves from node_modules.
  const dir = path.join(repoRoot, ".test-tmp", `gate-names-${runtimeName}-${process.pid}`);
  const tool = (name: string, programs: string[]) =>
    'import * as v from "valibot";\nexport const tool = { [Symbol.for("warden.tool")]: true, name: ' +
    `${JSON.stringify(name)}, title: "T", description: "D.", risk: "gate", capabilities: { spawn: ` +
    `${JSON.stringify(programs)} }, input: v.strictObject({}), handler: () => "ok" };\n`;
  // What would reach the file system or the shell as more than a name: paths, options, words, controls.
  const notNames = [
    "/bin/sh",
    "./sh",
    "sh/x",
    "../sh",
    "-rf",
    ".hidden",
    "_x",
    "git status",
    "sh\n",
    "",
    "a".repeat(65),
  ];
  const names = ["sh", "g++", "x86_64-linux-gnu-gcc", "python3.12", "7z", "a".repeat(64)];
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("names programs, never paths or options: startup names each entry that is not a program name", async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "paths.js"), tool("paths", notNames));
    writeFileSync(path.join(dir, "names.js"), tool("names", names));
    const { code, stdout, stderr } = await runWarden(["tools"], { env: { WARDEN_TOOLS_DIR: dir } });
    assert.deepEqual([code, stdout], [2, ""]);
    assert.deepEqual(stderr.trimEnd().split("\n"), [
      "warden: Cannot load the built-in tools:",
      ...notNames.map((name) =>
        `  paths.js: spawn allowlist entry ${JSON.stringify(name)} is not a program name; ` +
        "name programs (e.g. git), never paths"
      ),
    ]);
  });
});

describe(`change_summary (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let repo: string;
  const git = (...args: string[]) => {
    const result = spawnSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      encoding: "utf8",
    });
    assert.equal(result.status, 0, result.stderr);
  };
  before(async () => {
    work = tempDir();
    repo = path.join(work.dir, "repo");
    mkdirSync(path.join(repo, "src"), { recursive: true });
    git("init", "-q", "-b", "main");
    writeFileSync(path.join(repo, "src", "a.ts"), "a\nb\nc\n");
    writeFileSync(path.join(repo, "src", "gone.ts"), "x\n");
    writeFileSync(path.join(repo, "src", "user.ts"), 'import { a } from "./a.ts";\nexport const b = a;\n');
    writeFileSync(path.join(repo, "src", "top.ts"), 'import type { b } from "./user.ts";\nexport type T = typeof b;\n');
    writeFileSync(path.join(repo, "src", "old.ts"), "one\ntwo\nthree\nfour\nfive\n");
    writeFileSync(path.join(repo, "logo.bin"), new Uint8Array([0, 1, 2, 3]));
    git("add", "-A");
    git("commit", "-q", "-m", "first");
    git("tag", "v1");
    writeFileSync(path.join(repo, "src", "a.ts"), "a\nB\nc\nd\n");
    rmSync(path.join(repo, "src", "gone.ts"));
    renameSync(path.join(repo, "src", "old.ts"), path.join(repo, "src", "new.ts"));
    writeFileSync(path.join(repo, "src", "added.ts"), "new\n");
    writeFileSync(path.join(repo, "logo.bin"), new Uint8Array([0, 9, 9, 9, 9]));
    git("add", "-A");
    writeFileSync(path.join(repo, "notes.md"), "untracked\n");
    mkdirSync(path.join(work.dir, "plain"));
    session = await connect({ args: ["--root", `repo=${repo}`, "--root", `plain=${path.join(work.dir, "plain")}`] });
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  it("lists modified, added, deleted, renamed and untracked files with line counts", async () => {
    const result = await session.client.callTool({ name: "change_summary", arguments: {} });
    assert.equal(result.isError, undefined, textOf(result));
    const summary = result.structuredContent as {
      files: Record<string, unknown>[];
      totals: Record<string, number>;
      base: string;
      head: string;
    };
    assert.deepEqual(summary.files, [
      { path: "logo.bin", status: "modified", insertions: null, deletions: null, binary: true },
      { path: "notes.md", status: "untracked", insertions: null, deletions: null, binary: false },
      {
        path: "src/a.ts",
        status: "modified",
        insertions: 2,
        deletions: 1,
        binary: false,
        dependents: { direct: 1, total: 2, runtime: 1 },
      },
      {
        path: "src/added.ts",
        status: "added",
        insertions: 1,
        deletions: 0,
        binary: false,
        dependents: { direct: 0, total: 0, runtime: 0 },
      },
      { path: "src/gone.ts", status: "deleted", insertions: 0, deletions: 1, binary: false },
      {
        path: "src/new.ts",
        status: "renamed",
        oldPath: "src/old.ts",
        insertions: 0,
        deletions: 0,
        binary: false,
        dependents: { direct: 0, total: 0, runtime: 0 },
      },
    ]);
    assert.deepEqual(summary.totals, {
      files: 6,
      modified: 2,
      added: 1,
      deleted: 1,
      renamed: 1,
      untracked: 1,
      insertions: 3,
      deletions: 2,
    });
    assert.equal(summary.base, "HEAD");
    assert.deepEqual((result.structuredContent as { blastRadius: unknown }).blastRadius, {
      modules: 3,
      dependents: ["src/top.ts", "src/user.ts"],
      lowerBound: false,
    });
    assert.match(summary.head, /^[0-9a-f]{40}$/);
  });

  it("compares with a base ref", async () => {
    const result = await session.client.callTool({ name: "change_summary", arguments: { base: "v1" } });
    assert.equal((result.structuredContent as { base: string }).base, "v1");
  });

  it("says clearly when the root is not a git working tree", async () => {
    const result = await session.client.callTool({ name: "change_summary", arguments: { project_id: "plain" } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^Root "plain" is not a git working tree: git says: fatal: not a git repository/);
  });

  it("says clearly when the base ref does not exist, and refuses one that looks like an option", async () => {
    const missing = await session.client.callTool({ name: "change_summary", arguments: { base: "no-such-branch" } });
    assert.equal(
      textOf(missing),
      'Base ref "no-such-branch" does not exist in root "repo": pass a branch, tag or commit that git log knows',
    );
    const option = await session.client.callTool({ name: "change_summary", arguments: { base: "--output=/tmp/x" } });
    assert.equal(option.isError, true);
    assert.match(textOf(option), /^Invalid argument "base": expected a ref name or commit, not an option/);
  });

  it("says clearly when git is not installed", async () => {
    const bare = await connect({ args: ["--root", `repo=${repo}`], env: { PATH: path.join(work.dir, "empty-path") } });
    try {
      const result = await bare.client.callTool({ name: "change_summary", arguments: {} });
      assert.equal(
        textOf(result),
        "Cannot run git: it was not found in PATH when warden started; install git and restart warden",
      );
    } finally {
      await bare.close();
    }
  });
});
