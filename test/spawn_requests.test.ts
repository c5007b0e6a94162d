// core/spawn.ts in process: every environment name a program may not be
// given, the limits a request is clamped to, stdin, stderr's own cap, the
// devices a program may be pointed at, and what each refusal says. What a
// refused request would have run writes a marker, which stays absent.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WardenError } from "../core/errors.ts";
import { initPlatform } from "../core/platform/mod.ts";
import { openRoots, type RootFs } from "../core/roots.ts";
import { Spawner, type SpawnRequest } from "../core/spawn.ts";
import { runtimeName, tempDir } from "./helpers.ts";

describe(`ctx.spawn requests (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let fs: RootFs;
  let spawner: Spawner;
  let marker: string;
  before(async () => {
    await initPlatform();
    work = tempDir();
    mkdirSync(path.join(work.dir, "root", "sub"), { recursive: true });
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

  it("refuses an environment value with a NUL, and accepts ordinary names and values", async () => {
    await refused(spawn(touch(), { env: { GOOD_NAME: "a\0b" } }), /^Environment variable "GOOD_NAME" refused/);
    const ok = await spawn(["printenv", "GOOD_NAME", "_UNDER"], { env: { GOOD_NAME: "a b", _UNDER: "1" } });
    assert.equal(ok.stdout, "a b\n1\n");
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

  it("accepts paths inside the root, absolute or climbing back into it", async () => {
    const root = path.join(work.dir, "root");
    const inside = await spawn(["sh", "-c", "pwd", `${root}/sub`, "sub/../sub", "--dir=../root/sub"], { cwd: "sub" });
    assert.equal(inside.exitCode, 0, inside.stderr);
    assert.equal(inside.stdout, `${root}/sub\n`, "the working directory is the one asked for, inside the root");
  });

  it("gives the program its stdin, then closes it", async () => {
    const result = await spawn(["cat"], { stdin: "line one\nline two\n" });
    assert.deepEqual([result.exitCode, result.stdout], [0, "line one\nline two\n"]);
  });

  it("caps stderr on its own, and says so", async () => {
    const result = await spawn(["sh", "-c", "head -c 5000 /dev/zero >&2; echo out"], { maxOutputBytes: 100 });
    assert.deepEqual(
      [result.stdout, result.stdoutTruncated, result.stderr.length, result.stderrTruncated],
      ["out\n", false, 100, true],
    );
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
