// core/doors/spawn.ts in process: every environment name a program may not be
// given, the limits a request is clamped to, stdin, stderr's own cap, the
// devices a program may be pointed at, and what each refusal says. What a
// refused request would have run writes a marker, which stays absent.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WardenError } from "../core/errors.ts";
import { initPlatform } from "../core/platform/mod.ts";
import { openRoots, type RootFs } from "../core/doors/roots.ts";
import { Spawner, type SpawnRequest } from "../core/doors/spawn.ts";
import process from "node:process";
import { eventually, runtimeName, tempDir } from "./helpers.ts";

/** Whether a live process has `word` among its arguments (Linux /proc). */
function running(word: string): boolean {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").includes(word)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") return true;
    } catch {
      // Gone while we looked.
    }
  }
  return false;
}

describe(`ctx.spawn requests (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let fs: RootFs;
  let spawner: Spawner;
  let marker: string;
  before(async () => {
    await initPlatform();
    work = tempDir();
    mkdirSync(path.join(work.dir, "root", "sub"), { recursive: true });
    mkdirSync(path.join(work.dir, "second"));
    fs = await openRoots([{ id: "root", path: path.join(work.dir, "root") }]);
    spawner = new Spawner();
    await spawner.resolve(["sh", "cat", "head", "printenv", "no-such-program-here"]);
    marker = path.join(work.dir, "ran");
  });
  after(() => work.remove());

  const spawn = (argv: unknown, request: SpawnRequest = {}, allowed = ["sh", "cat", "head", "printenv"]) =>
    spawner.spawn(
      'tool "t"',
      allowed,
      fs,
      argv as string[],
      request,
      new AbortController().signal,
      Date.now() + 30_000,
    );
  // Were the refused request run, this would leave a marker outside the root (there is no bubblewrap to stop it
  // from writing where the test runs without one, and the refusal must come first either way).
  const touch = () => ["sh", "-c", `echo > ${marker}`];

  const refused = async (promise: Promise<unknown>, message: string | RegExp, code = "capability_denied") => {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof WardenError, String(error));
      assert.equal(error.code, code);
      if (typeof message === "string") assert.equal(error.message, message);
      else assert.match(error.message, message);
      return true;
    });
    assert.ok(!existsSync(marker), "nothing ran");
  };

  for (
    const name of [
      "LD_PRELOAD",
      "LD_LIBRARY_PATH",
      "DYLD_INSERT_LIBRARIES",
      "PATH",
      "HOME",
      "TMPDIR",
      "IFS",
      "BASH_ENV",
      "ENV",
      "NODE_OPTIONS",
      "PS4",
      "SHELLOPTS",
      "lower",
      "1DIGIT",
      "WITH-DASH",
    ]
  ) {
    it(`refuses the environment variable ${name}`, async () => {
      await refused(
        spawn(touch(), { env: { [name]: "x" } }),
        `Environment variable ${
          JSON.stringify(name)
        } refused: names are upper case; loader, shell and PATH hooks are not allowed`,
      );
    });
  }

  it("refuses an environment value with a NUL, and accepts ordinary names, even ones that contain a refused one", async () => {
    await refused(spawn(touch(), { env: { GOOD_NAME: "a\0b" } }), /^Environment variable "GOOD_NAME" refused/);
    const names = ["GOOD_NAME", "_UNDER", "BUILD_DIR", "MYPATH", "PATHEXT", "HOMEPAGE", "OLD_ENV"];
    const ok = await spawn(["printenv", ...names], { env: Object.fromEntries(names.map((n) => [n, n.toLowerCase()])) });
    assert.equal(ok.stdout, names.map((n) => n.toLowerCase() + "\n").join(""));
  });

  it("refuses an environment value that is not a string, as a refusal, not a crash", async () => {
    for (const value of [5, null, ["x"]]) {
      await refused(
        spawn(touch(), { env: { GOOD_NAME: value as unknown as string } }),
        /^Environment variable "GOOD_NAME" refused/,
      );
    }
  });

  it("gives the program warden's own PATH, and LANG", async () => {
    const result = await spawn(["printenv", "PATH", "LANG"]);
    assert.equal(result.stdout, `${process.env.PATH}\nC.UTF-8\n`);
  });

  it("refuses argv that is not a non-empty array of strings without NUL", async () => {
    for (const argv of [[], "sh", [1], ["sh", "a\0"], null]) {
      await refused(spawn(argv), /^Invalid argv: expected a non-empty array of strings without NUL, received /);
    }
  });

  it("names what a tool with no programs may run", async () => {
    await refused(spawn(touch(), {}, []), 'Program "sh" is not on the allowlist of tool "t": it may run no program');
  });

  it("says a listed program that was not found at startup cannot run", async () => {
    await refused(
      spawn(["no-such-program-here"], {}, ["no-such-program-here"]),
      "Cannot run no-such-program-here: it was not found in PATH when warden started; " +
        "install no-such-program-here and restart warden",
      "not_found",
    );
  });

  it("lets a program be pointed at harmless devices, and nothing else outside the roots", async () => {
    const result = await spawn(["head", "-c", "3", "/dev/zero"]);
    assert.equal(result.stdout, "\0\0\0");
    for (const device of ["/dev/null", "/dev/urandom", "/dev/random"]) {
      const ok = await spawn(["head", "-c", "0", device]);
      assert.equal(ok.exitCode, 0, `${device}: ${ok.stderr}`);
    }
    // The standard streams are pipes or sockets that head may not open: that they are not refused is the point.
    for (const device of ["/dev/stdin", "/dev/stdout", "/dev/stderr"]) await spawn(["head", "-c", "0", device]);
    await refused(spawn(["head", "/dev/sda"]), /^Argument "\/dev\/sda" refused for tool "t": it names a path/);
    await refused(spawn(["head", "--file=/etc/hostname"]), /^Argument "--file=\/etc\/hostname" refused/);
    await refused(
      spawn(["head", `${work.dir}/root-evil/x`]),
      /refused for tool "t": it names a path outside the roots/,
    );
  });

  it("refuses a path inside a root that a symlink leads out of, absolute or relative, with the whole message", async () => {
    const link = path.join(work.dir, "root", "out-link");
    symlinkSync(work.dir, link);
    writeFileSync(path.join(work.dir, "outside.txt"), "outside\n");
    try {
      // A file that exists and one a program would create, both outside through the link: absolute, and relative
      // to the working directory (the root) with no `..` to give them away.
      const absolute = [`${link}/outside.txt`, `${link}/new/ran`, `--output=${link}/ran`];
      for (
        const file of [...absolute, "out-link/outside.txt", "out-link/new/ran", "--output=out-link/ran", "out-link"]
      ) {
        await refused(
          spawn(["head", file]),
          `Argument ${JSON.stringify(file)} refused for tool "t": it names a path outside the roots; ` +
            "pass paths inside a root, relative to the working directory",
        );
      }
    } finally {
      rmSync(link);
    }
  });

  it("accepts a root itself and paths in any of the roots", async () => {
    const two = await openRoots([
      { id: "root", path: path.join(work.dir, "root") },
      { id: "second", path: path.join(work.dir, "second") },
    ]);
    const result = await spawner.spawn(
      'tool "t"',
      ["sh"],
      two,
      ["sh", "-c", "echo ok", path.join(work.dir, "root"), path.join(work.dir, "second", "file")],
      {},
      new AbortController().signal,
      Date.now() + 30_000,
    );
    assert.equal(result.stdout, "ok\n");
  });

  it("accepts any path under a root that is / itself", async () => {
    const all = await openRoots([{ id: "all", path: "/" }]);
    const result = await spawner.spawn(
      'tool "t"',
      ["sh"],
      all,
      ["sh", "-c", "pwd", work.dir, "tmp", "../etc"],
      {},
      new AbortController().signal,
      Date.now() + 30_000,
    );
    assert.deepEqual([result.exitCode, result.stdout], [0, "/\n"]);
  });

  it("accepts paths inside the root, absolute or climbing back into it", async () => {
    const root = path.join(work.dir, "root");
    const inside = await spawn(["sh", "-c", "pwd", `${root}/sub`, "sub/../sub", "--dir=../root/sub"], { cwd: "sub" });
    assert.equal(inside.exitCode, 0, inside.stderr);
    assert.equal(inside.stdout, `${root}/sub\n`, "the working directory is the one asked for, inside the root");
  });

  it("gives the program its stdin, then closes it; nothing when none is given", async () => {
    const result = await spawn(["cat"], { stdin: "line one\nline two\n" });
    assert.deepEqual([result.exitCode, result.stdout], [0, "line one\nline two\n"]);
    const none = await spawn(["cat"]);
    assert.deepEqual([none.exitCode, none.stdout], [0, ""]);
  });

  it("caps stderr on its own, and says so", async () => {
    const result = await spawn(["sh", "-c", "head -c 5000 /dev/zero >&2; echo out"], { maxOutputBytes: 100 });
    assert.deepEqual(
      [result.stdout, result.stdoutTruncated, result.stderr.length, result.stderrTruncated],
      ["out\n", false, 100, true],
    );
  });

  it("lets a program that goes somewhat past the cap finish", async () => {
    const result = await spawn(["sh", "-c", "head -c 3000 /dev/zero; echo done >&2"], { maxOutputBytes: 1000 });
    assert.deepEqual(
      [result.exitCode, result.stderr, result.stdout.length, result.stdoutTruncated],
      [0, "done\n", 1000, true],
    );
  });

  it("stops a program that floods stderr forever", async () => {
    const result = await spawn(["sh", "-c", "cat /dev/zero >&2"], { maxOutputBytes: 1000, timeoutMs: 5000 });
    assert.deepEqual([result.timedOut, result.signal, result.stderr.length, result.stderrTruncated], [
      false,
      "SIGKILL",
      1000,
      true,
    ]);
  });

  it("stops a running program when its call is aborted, and times it honestly", async () => {
    const controller = new AbortController();
    const tag = `32.${process.pid}${Date.now() % 100000}`;
    const started = performance.now();
    const pending = spawner.spawn(
      'tool "t"',
      ["sh"],
      fs,
      ["sh", "-c", `exec sleep ${tag}`],
      { timeoutMs: 10_000 },
      controller.signal,
      Date.now() + 60_000,
    );
    // Aborted once the program runs, as the process table shows.
    assert.ok(await eventually(() => running(tag)), "the program started");
    controller.abort();
    const result = await pending;
    const wall = performance.now() - started;
    assert.deepEqual([result.timedOut, result.signal, result.exitCode], [false, "SIGKILL", null]);
    assert.ok(result.durationMs >= 0 && result.durationMs <= wall + 1, `${result.durationMs} ms of ${wall}`);
  });

  it("keeps output at exactly the cap untruncated", async () => {
    const result = await spawn(["head", "-c", "100", "/dev/zero"], { maxOutputBytes: 100 });
    assert.deepEqual([result.stdout.length, result.stdoutTruncated], [100, false]);
  });

  it("keeps at most 16 MiB and at least 1 byte, whatever is asked", async () => {
    const least = await spawn(["head", "-c", "10", "/dev/zero"], { maxOutputBytes: 0 });
    assert.deepEqual([least.stdout.length, least.stdoutTruncated], [1, true]);
    const most = await spawn(["head", "-c", String(16 * 1024 * 1024 + 10), "/dev/zero"], {
      maxOutputBytes: 64 * 1024 * 1024,
    });
    assert.deepEqual([most.stdout.length, most.stdoutTruncated], [16 * 1024 * 1024, true]);
  });

  it("keeps 1 MiB by default", async () => {
    const result = await spawn(["head", "-c", String(1024 * 1024 + 10), "/dev/zero"]);
    assert.deepEqual([result.stdout.length, result.stdoutTruncated], [1024 * 1024, true]);
  });

  it("stops a program at what is left of the call, shorter than its own time limit", async () => {
    const result = await spawner.spawn(
      'tool "t"',
      ["sh"],
      fs,
      ["sh", "-c", "exec sleep 30"],
      { timeoutMs: 60_000 },
      new AbortController().signal,
      Date.now() + 300,
    );
    assert.equal(result.timedOut, true);
    assert.ok(result.durationMs < 5000, `${result.durationMs} ms`);
  });

  it("stops a program whose call was aborted before it started, without calling it a timeout", async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await spawner.spawn(
      'tool "t"',
      ["sh"],
      fs,
      ["sh", "-c", "exec sleep 30"],
      { timeoutMs: 10_000 },
      controller.signal,
      Date.now() + 60_000,
    );
    assert.deepEqual([result.timedOut, result.signal, result.exitCode], [false, "SIGKILL", null]);
  });
});
