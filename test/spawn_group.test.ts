// ctx.spawn's limits, each proved where it is the only thing that acts: a
// program stopped at its time limit takes every process it forked with it,
// and a program that would flood its output forever is stopped by the flood
// cap, not by its time limit. bubblewrap's pid namespace also kills what a
// sandboxed program forked, so each test runs twice: as the host is (with
// bubblewrap where installed) and with bubblewrap out of warden's PATH, where
// the process group is the only net. Liveness is read from what the
// processes themselves show: their output through the pipe, and the process
// table (by a unique argument, since pids inside bubblewrap are its own).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import {
  connect,
  eventually,
  fixtureToolsDir,
  runtimeName,
  type Session,
  skipOrFail,
  tempDir,
  textOf,
} from "./helpers.ts";

type SpawnResult = {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stdoutTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
};

/** The programs fixture_gate may run, and sh's helpers, found on the host's PATH. */
const PROGRAMS = ["sh", "printenv", "sleep", "cat", "head"];

function which(name: string): string {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`${name} is not on PATH`);
}

/** Whether bubblewrap is installed and can give a program no network and a read-only file system here. */
function bubblewrapWorks(): boolean {
  const bwrap = (process.env.PATH ?? "").split(path.delimiter).map((d) => path.join(d, "bwrap")).find(existsSync);
  if (!bwrap) return false;
  const args = ["--unshare-net", "--unshare-ipc", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/"];
  return spawnSync(bwrap, [...args, "--dev", "/dev", "--proc", "/proc", "--", "true"]).status === 0;
}

/** Pids of live (not zombie) processes whose command line contains `word` as an argument. */
function processesWith(word: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (!args.includes(word)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

for (const mode of ["as the host is", "without bubblewrap"] as const) {
  describe(`ctx.spawn limits, ${mode} (${runtimeName})`, () => {
    let session: Session;
    let work: { dir: string; remove: () => void };
    before(async () => {
      work = tempDir();
      const env: Record<string, string> = {};
      if (mode === "without bubblewrap") {
        // A PATH with the programs the tests run and no bwrap: warden finds nothing to isolate with.
        const bin = path.join(work.dir, "bin");
        mkdirSync(bin);
        for (const name of PROGRAMS) symlinkSync(which(name), path.join(bin, name));
        // Before it on PATH, what warden must pass over: a directory named like a program, and a relative entry
        // (warden starts in work.dir) holding an impostor.
        mkdirSync(path.join(work.dir, "dirs", "cat"), { recursive: true });
        mkdirSync(path.join(work.dir, "rel"));
        writeFileSync(path.join(work.dir, "rel", "head"), "#!/bin/sh\necho impostor\n", { mode: 0o755 });
        env.PATH = ["rel", path.join(work.dir, "dirs"), bin].join(path.delimiter);
      }
      const root = path.join(work.dir, "root");
      mkdirSync(path.join(root, "sub"), { recursive: true });
      // What the host says of its isolation, from the built-in tools (the fixture directory replaces them).
      const builtins = await connect({ env, cwd: work.dir });
      let facts: Record<string, unknown>;
      try {
        const result = await builtins.client.callTool({ name: "host_context", arguments: {} });
        facts = (result.structuredContent as { gate: { isolation: Record<string, unknown> } }).gate.isolation;
      } finally {
        await builtins.close();
      }
      if (mode === "without bubblewrap") {
        assert.deepEqual(facts, {
          kind: "none",
          network: "host",
          writes: "unrestricted",
          detail: "bubblewrap (bwrap) is not installed: programs run with the host's network and file access",
        }, "the test runs what it says it runs, and the host says so");
      } else if (bubblewrapWorks()) {
        // Where bubblewrap works, warden uses it.
        assert.deepEqual(facts, {
          kind: "bubblewrap",
          network: "unshared",
          writes: "scratch-only",
          detail: "bubblewrap: no network, the file system read-only but for a per-call scratch directory",
        });
      }
      session = await connect({
        env: { ...env, WARDEN_TOOLS_DIR: fixtureToolsDir },
        args: ["--root", `default=${root}`],
        cwd: work.dir,
      });
    });
    after(async () => {
      await session?.close();
      work.remove();
    });

    const run = async (args: Record<string, unknown>) => {
      const result = await session.client.callTool({ name: "fixture_gate", arguments: args });
      assert.equal(result.isError, undefined, textOf(result));
      return JSON.parse(textOf(result)) as SpawnResult;
    };

    it("kills every process the program forked at its time limit", async () => {
      // Unique arguments name the forked processes in the process table, inside bubblewrap or not.
      const tag = `${process.pid}${Date.now() % 100000}`;
      const detached = `61.${tag}`;
      const piped = `2.${tag}`;
      const spawn = await run({
        argv: [
          "sh",
          "-c",
          // One child keeps the output pipe and speaks after 2 s; one leaves the pipes and sleeps a minute.
          `(sleep ${piped}; echo late) & sleep ${detached} </dev/null >/dev/null 2>&1 & echo started; exec sleep 30`,
        ],
        timeoutMs: 300,
      });
      assert.equal(spawn.timedOut, true);
      assert.equal(spawn.stdout, "started\n", "nothing the program forked spoke after the time limit");
      const gone = await eventually(() => processesWith(detached).length === 0 && processesWith(piped).length === 0);
      assert.ok(gone, `forked processes outlived the call: ${processesWith(detached)} ${processesWith(piped)}`);
    });

    it("runs in the directory asked for, with a scratch HOME and TMPDIR that are gone afterwards, and stdin", async () => {
      const spawn = await run({
        argv: [
          "sh",
          "-c",
          'pwd; echo "$HOME"; echo "$TMPDIR"; echo "$LANG"; cat; test -d "$HOME" && echo scratch-there',
        ],
        cwd: "sub",
        stdin: "from stdin\n",
      });
      const [cwd, home, tmp, lang, input, there] = spawn.stdout.split("\n");
      assert.deepEqual([cwd, lang, input, there, spawn.exitCode], [
        path.join(work.dir, "root", "sub"),
        "C.UTF-8",
        "from stdin",
        "scratch-there",
        0,
      ]);
      assert.equal(home, tmp);
      assert.match(home, /\/warden-gate-[^/]+$/);
      assert.ok(!existsSync(home), "the scratch directory was removed");
    });

    it("runs the programs PATH names, never a directory or a relative entry's", async () => {
      const head = await run({ argv: ["head", "-c", "5", "/dev/zero"] });
      assert.deepEqual([head.exitCode, head.stdout], [0, "\0".repeat(5)]);
      const cat = await run({ argv: ["cat"], stdin: "real cat\n" });
      assert.deepEqual([cat.exitCode, cat.stdout], [0, "real cat\n"]);
    });

    it("stops a program that floods its output forever, promptly, keeping what fits", async () => {
      const spawn = await run({ argv: ["cat", "/dev/zero"], maxOutputBytes: 1000, timeoutMs: 5000 });
      assert.equal(spawn.timedOut, false, "the flood cap stopped it, not the time limit");
      assert.equal(spawn.stdout, "\0".repeat(1000));
      assert.equal(spawn.stdoutTruncated, true);
      assert.equal(spawn.signal, "SIGKILL");
    });
  });
}

describe(`a bubblewrap that cannot isolate (${runtimeName})`, () => {
  for (
    const [stderr, detail] of [
      ["bwrap: No permissions to create new namespace\nmore\n", "bwrap: No permissions to create new namespace"],
      ["\n  bwrap: setting up uid map: Permission denied\n", "bwrap: setting up uid map: Permission denied"],
      ["", "exit 1"],
    ]
  ) {
    it(`is not claimed as isolation, and says why (${detail})`, async () => {
      const work = tempDir();
      try {
        const bin = path.join(work.dir, "bin");
        mkdirSync(bin);
        for (const name of PROGRAMS) symlinkSync(which(name), path.join(bin, name));
        // A bwrap that fails as one does where user namespaces are off.
        writeFileSync(path.join(bin, "bwrap"), `#!/bin/sh\nprintf '%s' '${stderr}' >&2\nexit 1\n`, { mode: 0o755 });
        const session = await connect({ env: { PATH: bin } });
        try {
          const result = await session.client.callTool({ name: "host_context", arguments: {} });
          const isolation = (result.structuredContent as { gate: { isolation: unknown } }).gate.isolation;
          assert.deepEqual(isolation, {
            kind: "none",
            network: "host",
            writes: "unrestricted",
            detail: `bubblewrap cannot isolate here (${detail})`,
          });
        } finally {
          await session.close();
        }
      } finally {
        work.remove();
      }
    });
  }

  it("is not claimed when it cannot even be started, and says why", async () => {
    const work = tempDir();
    try {
      const bin = path.join(work.dir, "bin");
      mkdirSync(bin);
      for (const name of PROGRAMS) symlinkSync(which(name), path.join(bin, name));
      // A bwrap that is a file but not a program: starting it fails before it runs.
      writeFileSync(path.join(bin, "bwrap"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
      const session = await connect({ env: { PATH: bin } });
      try {
        const result = await session.client.callTool({ name: "host_context", arguments: {} });
        const isolation = (result.structuredContent as { gate: { isolation: Record<string, unknown> } }).gate.isolation;
        const { detail, ...rest } = isolation;
        assert.deepEqual(rest, { kind: "none", network: "host", writes: "unrestricted" });
        assert.match(String(detail), /^bubblewrap cannot isolate here \(.*(EACCES|Permission denied).*\)$/);
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});

describe(`what warden cannot clean up after a program (${runtimeName})`, () => {
  // Root removes any directory through CAP_DAC_OVERRIDE, so when the tests run as root warden runs without it
  // (setpriv drops it from the bounding set; warden stays uid 0, which owns the clone and the directories here). Not
  // as another uid: that one cannot reach a clone inside a directory only root may enter, such as /root or
  // StrykerJS's sandbox (mode 0700), and the test skipped there, so every mutant it guards survived. Without
  // bubblewrap (PATH holds the programs and no bwrap), so that a program can be made to vanish: printenv is a file
  // of this test's, deleted before it is run.
  let session: Session | undefined;
  let work: { dir: string; remove: () => void };
  let bin: string;
  let tmp: string;
  let unable = "";
  before(async () => {
    work = tempDir();
    bin = path.join(work.dir, "bin");
    tmp = path.join(work.dir, "tmp");
    const root = path.join(work.dir, "root");
    const ownDirs = [tmp, path.join(work.dir, "deno"), path.join(work.dir, "ledger")];
    for (const dir of [bin, root, ...ownDirs]) mkdirSync(dir);
    for (const name of [...PROGRAMS.filter((name) => name !== "printenv"), "mkdir", "touch", "chmod"]) {
      symlinkSync(which(name), path.join(bin, name));
    }
    writeFileSync(path.join(bin, "printenv"), "#!/bin/sh\necho printenv\n", { mode: 0o755 });
    let wrap: ((command: string, args: string[]) => { command: string; args: string[] }) | undefined;
    if (process.getuid?.() === 0) {
      const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find(existsSync);
      if (!setpriv) {
        unable = "needs setpriv (util-linux) to run warden without root's power to remove any directory";
        return;
      }
      const drop = ["--bounding-set=-dac_override"];
      const check = spawnSync(setpriv, [...drop, "true"]);
      if (check.status !== 0) {
        unable = `setpriv cannot drop CAP_DAC_OVERRIDE here (${String(check.stderr).trim()}): needs CAP_SETPCAP`;
        return;
      }
      wrap = (command, args) => ({ command: setpriv, args: [...drop, command, ...args] });
    }
    session = await connect({
      env: {
        PATH: bin,
        TMPDIR: tmp,
        HOME: tmp,
        DENO_DIR: ownDirs[1],
        WARDEN_LEDGER: ownDirs[2],
        WARDEN_TOOLS_DIR: fixtureToolsDir,
      },
      args: ["--root", `default=${root}`],
      cwd: work.dir,
      wrap,
    });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  const scratches = () => readdirSync(tmp).filter((name) => name.startsWith("warden-gate-"));

  it("says so, in the result and on stderr, when a program left a scratch directory warden cannot remove", async (t) => {
    if (unable) return skipOrFail(t, unable);
    const result = await session!.client.callTool({
      name: "fixture_gate",
      arguments: { argv: ["sh", "-c", 'mkdir "$HOME/kept" && touch "$HOME/kept/file" && chmod 500 "$HOME/kept"'] },
    });
    const scratch = path.join(tmp, scratches()[0] ?? "none");
    try {
      assert.equal(result.isError, undefined, textOf(result));
      const spawn = JSON.parse(textOf(result)) as { exitCode: number; scratchLeft?: string };
      assert.equal(spawn.exitCode, 0);
      assert.ok(existsSync(path.join(scratch, "kept", "file")), "the scratch directory is still there");
      assert.ok(await eventually(() => session!.stderr().includes('"scratch_left"')), session!.stderr());
      const logged = session!.stderr().split("\n").filter((line) => line.includes('"scratch_left"')).map((line) =>
        JSON.parse(line)
      );
      assert.deepEqual(logged.map(({ level, event }) => [level, event]), [["warn", "scratch_left"]]);
      assert.match(logged[0].error, /.+/);
      assert.equal(spawn.scratchLeft, `the scratch directory could not be removed: ${logged[0].error}`);
    } finally {
      if (existsSync(path.join(scratch, "kept"))) chmodSync(path.join(scratch, "kept"), 0o700);
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("fails the call of a program gone since startup, and removes its scratch directory", async (t) => {
    if (unable) return skipOrFail(t, unable);
    rmSync(path.join(bin, "printenv"));
    const result = await session!.client.callTool({ name: "fixture_gate", arguments: { argv: ["printenv"] } });
    assert.equal(result.isError, true, textOf(result));
    assert.match(textOf(result), /^Tool "fixture_gate" failed: .*printenv/);
    assert.deepEqual(scratches(), []);
  });
});
