// runChecks as a job will call it, on a real gate context (the roots door, the spawner, git): the scope a built-in
// check receives (statuses, renames, binary files, added lines with their numbers), its findings against fail_on and
// min_severity, a built-in check that cannot give a verdict, and a group with nothing to run.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createContext } from "../core/context.ts";
import { openRoots } from "../core/doors/roots.ts";
import { Spawner } from "../core/doors/spawn.ts";
import { WardenError } from "../core/errors.ts";
import { initPlatform } from "../core/platform/mod.ts";
import type { ApprovedRun, GateContext, HostFacts } from "../core/tool.ts";
import { readPlanState } from "../tools/lib/checks/approval.ts";
import { pathMapper, type ProgramCheck, runProgramCheck } from "../tools/lib/checks/program.ts";
import { runChecks } from "../tools/lib/checks/run.ts";
import { baseReader, changeScope } from "../tools/lib/checks/scope.ts";
import type { BuiltinCheck, ChangeScope, Finding } from "../tools/lib/checks/types.ts";
import { runtimeName, sh, tempDir } from "./helpers.ts";

/** A built-in check that records the scope it got and reports what it is told to. */
function recording(found: (scope: ChangeScope) => Finding[]): BuiltinCheck & { scopes: ChangeScope[] } {
  const scopes: ChangeScope[] = [];
  return {
    name: "hygiene/probe",
    description: "records its scope",
    scopes,
    run: (scope) => {
      scopes.push(scope);
      return Promise.resolve(found(scope));
    },
  };
}

const finding = (severity: Finding["severity"], file: string, line: number): Finding => ({
  check: "hygiene/probe",
  file,
  line,
  column: null,
  severity,
  rule: "probe",
  message: `a ${severity} finding`,
});

/** A gate context of run_checks over one root, `id` at `dir`, that may run `programs`: what a run reads through. */
async function gitGate(
  id: string,
  dir: string,
  programs: string[] = ["git"],
  approvals: { requireApproval?: string[]; approval?: ApprovedRun } = {},
): Promise<GateContext> {
  const fs = await openRoots([{ id, path: dir }]);
  const spawner = new Spawner();
  await spawner.resolve(programs);
  return createContext("gate", {
    signal: () => new AbortController().signal,
    fs,
    host: {
      programs: { git: true },
      gateIsolation: () => spawner.isolation(),
      allowUnisolated: [],
      requireApproval: approvals.requireApproval ?? [],
    } as unknown as HostFacts, // The runner reads only these four.
    ...(approvals.approval ? { approval: approvals.approval } : {}),
    tool: { name: "run_checks", risk: "gate", capabilities: { spawn: programs, writeRoots: [], netHosts: [] } },
    deadline: Date.now() + 120_000,
    spawner,
  });
}

describe(`runChecks with built-in checks (${runtimeName})`, () => {
  const work = tempDir("warden-runner-");
  let ctx: GateContext;

  before(async () => {
    await initPlatform();
    const repo = work.dir;
    mkdirSync(path.join(repo, "src"));
    writeFileSync(path.join(repo, "src/keep.ts"), "one\ntwo\nthree\n");
    writeFileSync(path.join(repo, "src/old.ts"), "alpha\nbeta\ngamma\ndelta\nepsilon\n");
    writeFileSync(path.join(repo, "gone.txt"), "bye\n");
    // Read only as they were at HEAD (baseReader): text beyond ASCII, bytes that are not UTF-8, a line break in a name.
    writeFileSync(path.join(repo, "src/ünï.ts"), 'export const mark = "✓ 𝄞";\n');
    writeFileSync(path.join(repo, "latin1.ts"), new Uint8Array([0x2f, 0x2f, 0x20, 0xe9, 0x0a]));
    writeFileSync(path.join(repo, "two\nlines.ts"), "export const odd = 1;\n");
    sh(repo, "git", "init", "-q", "-b", "main");
    sh(repo, "git", "config", "user.email", "t@example.com");
    sh(repo, "git", "config", "user.name", "t");
    sh(repo, "git", "add", "-A");
    sh(repo, "git", "commit", "-q", "-m", "start");
    // The staged change: a line inserted after line 1, a rename with an edit, a deletion, a binary file, a new file.
    writeFileSync(path.join(repo, "src/keep.ts"), "one\ninserted\ntwo\nthree\n");
    sh(repo, "git", "mv", "src/old.ts", "src/new.ts");
    writeFileSync(path.join(repo, "src/new.ts"), "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n");
    sh(repo, "git", "rm", "-q", "gone.txt");
    writeFileSync(path.join(repo, "logo.png"), new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 0]));
    writeFileSync(path.join(repo, "src/added.ts"), "first\nsecond\n");
    sh(repo, "git", "add", "-A");
    // Not staged: only scope "working" sees it.
    writeFileSync(path.join(repo, "untracked.ts"), "loose\n");

    ctx = await gitGate("repo", repo, ["git", "sh"]);
  });
  after(() => work.remove());

  it("hands a built-in check the staged change: statuses, renames, binary files, added lines by their new number", async () => {
    const probe = recording(() => []);
    const answer = await runChecks({ project_id: "repo", group: "hygiene" }, ctx, undefined, { hygiene: [probe] });
    assert.equal(answer.gate, "PASS", answer.summary);
    const [scope] = probe.scopes;
    assert.deepEqual([scope.root, scope.mode, scope.range], ["repo", "staged", null]);
    assert.deepEqual(scope.files, [
      { path: "gone.txt", status: "deleted", addedLines: [], binary: false },
      { path: "logo.png", status: "added", addedLines: [], binary: true },
      {
        path: "src/added.ts",
        status: "added",
        addedLines: [{ line: 1, text: "first" }, { line: 2, text: "second" }],
        binary: false,
      },
      { path: "src/keep.ts", status: "modified", addedLines: [{ line: 2, text: "inserted" }], binary: false },
      {
        path: "src/new.ts",
        status: "renamed",
        oldPath: "src/old.ts",
        addedLines: [{ line: 6, text: "zeta" }],
        binary: false,
      },
    ]);
    assert.deepEqual(answer.coverageReasons, ["1 binary file(s) of the change were not read line by line"]);
  });

  it("reads files as they were at the base with one git, and alone what git's batch cannot carry", async () => {
    let spawned = 0;
    const counting = { ...ctx, spawn: (...args: Parameters<GateContext["spawn"]>) => (spawned++, ctx.spawn(...args)) };
    const read = baseReader(counting, "repo", "HEAD");
    const texts = await read(["src/old.ts", "src/ünï.ts", "src/added.ts", "gone.txt", "src/old.ts"]);
    assert.deepEqual([...texts], [
      ["src/old.ts", "alpha\nbeta\ngamma\ndelta\nepsilon\n"],
      ["src/ünï.ts", 'export const mark = "✓ 𝄞";\n'],
      ["src/added.ts", null],
      ["gone.txt", "bye\n"],
    ]);
    assert.equal(spawned, 1, "one git cat-file for all of them");

    spawned = 0;
    const alone = await read(["two\nlines.ts", "src/keep.ts", "latin1.ts", "src", "gone.txt"]);
    assert.deepEqual([...alone], [
      ["src/keep.ts", "one\ntwo\nthree\n"],
      ["two\nlines.ts", "export const odd = 1;\n"],
      ["latin1.ts", "// \uFFFD\n"],
      ["src", null],
      ["gone.txt", "bye\n"],
    ]);
    // The batch answers src/keep.ts and stops at latin1.ts's byte that is not UTF-8; the rest are read one by one.
    assert.equal(spawned, 5);
  });

  it("takes the files as they were from the change's own patch, each as git has it, and leaves out what it cannot", async () => {
    const repo = path.join(work.dir, "..", `${path.basename(work.dir)}-before`);
    mkdirSync(repo);
    try {
      const files: Record<string, string | Uint8Array> = {
        "plain.ts": "export const a = 1;\nexport const b = 2;\n",
        "no-break.ts": "export const last = 1;",
        "crlf.ts": "export const x = 1;\r\nexport const y = 2;\r\n",
        "emptied.ts": "export const gone = 1;\n",
        "was-empty.ts": "",
        "deleted.ts": "import { a } from './plain.ts';\nexport const d = a;\n",
        "moved.ts": "one\ntwo\nthree\nfour\nfive\nsix\n",
        "same.ts": "export const same = 1;\n",
        "latin1.ts": new Uint8Array([0x2f, 0x2f, 0x20, 0xe9, 0x0a]),
        "-- dashes.ts": "-- not a header\n--- nor this\n",
      };
      for (const [name, text] of Object.entries(files)) writeFileSync(path.join(repo, name), text);
      sh(repo, "git", "init", "-q", "-b", "main");
      sh(repo, "git", "add", "-A");
      sh(repo, "git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start");
      writeFileSync(path.join(repo, "plain.ts"), "export const a = 1;\nexport const c = 3;\n");
      writeFileSync(path.join(repo, "no-break.ts"), "export const last = 2;");
      writeFileSync(path.join(repo, "crlf.ts"), "export const x = 1;\r\n");
      writeFileSync(path.join(repo, "emptied.ts"), "");
      writeFileSync(path.join(repo, "was-empty.ts"), "export const now = 1;\n");
      writeFileSync(path.join(repo, "latin1.ts"), new Uint8Array([0x2f, 0x2f, 0x20, 0xe8, 0x0a]));
      writeFileSync(path.join(repo, "-- dashes.ts"), "--- still not\n");
      sh(repo, "git", "rm", "-q", "deleted.ts");
      sh(repo, "git", "mv", "moved.ts", "renamed.ts");
      writeFileSync(path.join(repo, "renamed.ts"), "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
      sh(repo, "git", "mv", "same.ts", "same-renamed.ts");
      sh(repo, "git", "add", "-A");
      const gate = await gitGate("before", repo);
      const { before, scope } = await changeScope(gate, { root: "before", mode: "staged" });
      // git ends a name with a space in it with a tab in the patch's header lines.
      assert.deepEqual(scope.files.find((file) => file.path === "-- dashes.ts")?.addedLines, [
        { line: 1, text: "--- still not" },
      ]);
      const whole = ["-- dashes.ts", "crlf.ts", "deleted.ts", "emptied.ts", "moved.ts", "no-break.ts", "plain.ts"];
      // A file empty before has no lines to show; a pure rename has no hunk; bytes that are not UTF-8 are git's to read.
      assert.deepEqual([...before.keys()].sort(), [...whole, "was-empty.ts"]);
      for (const name of [...whole, "was-empty.ts"]) {
        assert.equal(before.get(name), sh(repo, "git", "show", `HEAD:${name}`), name);
      }
      // The same files through baseReader, given them, spawn no git; what it was not given, it reads.
      let spawned = 0;
      const counting = {
        ...gate,
        spawn: (...args: Parameters<GateContext["spawn"]>) => (spawned++, gate.spawn(...args)),
      };
      const texts = await baseReader(counting, "before", "HEAD", before)(whole);
      assert.deepEqual(Object.fromEntries(texts), Object.fromEntries(whole.map((name) => [name, before.get(name)])));
      assert.equal(spawned, 0);
      const rest = await baseReader(counting, "before", "HEAD", before)(["same.ts", "plain.ts"]);
      assert.deepEqual([...rest], [["plain.ts", before.get("plain.ts")], ["same.ts", "export const same = 1;\n"]]);
      assert.equal(spawned, 1);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it("reads the staged change of a repository before its first commit as files added", async () => {
    const fresh = path.join(work.dir, "..", `${path.basename(work.dir)}-unborn`);
    mkdirSync(fresh);
    try {
      writeFileSync(path.join(fresh, "first.ts"), "export const first = 1;\n");
      sh(fresh, "git", "init", "-q", "-b", "main");
      sh(fresh, "git", "add", "first.ts");
      const unborn = await gitGate("unborn", fresh);
      const probe = recording(() => []);
      const answer = await runChecks({ project_id: "unborn", group: "hygiene" }, unborn, undefined, {
        hygiene: [probe],
      });
      assert.equal(answer.gate, "PASS", answer.summary);
      assert.deepEqual(probe.scopes[0].files, [
        {
          path: "first.ts",
          status: "added",
          addedLines: [{ line: 1, text: "export const first = 1;" }],
          binary: false,
        },
      ]);
    } finally {
      spawnSync("rm", ["-rf", fresh]);
    }
  });

  it("scope working adds untracked files, every line added; file globs narrow what the check sees", async () => {
    const probe = recording(() => []);
    await runChecks(
      { project_id: "repo", group: "hygiene", scope: "working", file: ["*.ts"], exclude: ["src/added.ts"] },
      ctx,
      undefined,
      {
        hygiene: [probe],
      },
    );
    const files = probe.scopes[0].files;
    assert.deepEqual(files.map((f) => [f.path, f.status]), [
      ["src/keep.ts", "modified"],
      ["src/new.ts", "renamed"],
      ["untracked.ts", "untracked"],
    ]);
    assert.deepEqual(files[2].addedLines, [{ line: 1, text: "loose" }]);
  });

  it("trips on a finding at fail_on, lists findings most severe first, and leaves out those below min_severity", async () => {
    const probe = recording(() => [finding("low", "src/keep.ts", 2), finding("critical", "src/added.ts", 1)]);
    const answer = await runChecks({ project_id: "repo", group: "hygiene" }, ctx, undefined, { hygiene: [probe] });
    assert.equal(answer.gate, "FAIL");
    assert.equal(answer.summary, "FAIL: not safe to ship: 1 finding(s) at or above high (hygiene/probe: 1).");
    assert.deepEqual(answer.findings.map((f) => f.severity), ["critical", "low"]);
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status, c.findings]), [["hygiene/probe", "failed", 2]]);

    const lenient = await runChecks(
      { project_id: "repo", group: "hygiene", fail_on: "none", min_severity: "medium" },
      ctx,
      undefined,
      {
        hygiene: [probe],
      },
    );
    assert.equal(lenient.gate, "PASS");
    assert.deepEqual(lenient.findings.map((f) => f.severity), ["critical"]);
    assert.equal(lenient.severities.low, 1, "counted though not listed");

    const strict = await runChecks({ project_id: "repo", group: "hygiene", fail_on: "any" }, ctx, undefined, {
      hygiene: [recording(() => [finding("info", "src/keep.ts", 2)])],
    });
    assert.equal(strict.gate, "FAIL");
  });

  it("a built-in check that cannot give a verdict makes the run ERROR, with its reason, and the others still run", async () => {
    const broken: BuiltinCheck = {
      name: "hygiene/broken",
      description: "throws",
      run: () => Promise.reject(new WardenError("tool_failed", "Cannot read the graph: it is too large")),
    };
    const probe = recording(() => [finding("high", "src/keep.ts", 2)]);
    const answer = await runChecks({ project_id: "repo", group: "hygiene" }, ctx, undefined, {
      hygiene: [broken, probe],
    });
    assert.equal(answer.gate, "ERROR");
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status, c.reason]), [
      ["hygiene/broken", "error", "Cannot read the graph: it is too large"],
      ["hygiene/probe", "failed", null],
    ]);
    assert.equal(
      answer.summary,
      "ERROR: not safe to ship, the run cannot be trusted: hygiene/broken: Cannot read the graph: it is too large; besides, 1 finding(s) at or above high (hygiene/probe: 1).",
    );
  });

  it("a group with no check to run is ERROR: nothing was checked", async () => {
    const answer = await runChecks({ project_id: "repo", group: "hygiene" }, ctx, undefined, { hygiene: [] });
    assert.equal(answer.gate, "ERROR");
    assert.match(
      answer.summary,
      /no check of group "hygiene" applies to root "repo" or to its change: nothing was checked/,
    );
  });

  it("runs a group that needs approval only as the submitted plan, while the repository is what it says", async () => {
    const gated = (approval?: ApprovedRun) =>
      gitGate("repo", work.dir, ["git"], { requireApproval: ["hygiene"], ...(approval ? { approval } : {}) });
    const probe = recording(() => []);
    const run = async (context: GateContext, request: Record<string, string> = { fail_on: "any" }) =>
      await runChecks({ project_id: "repo", group: "hygiene", ...request }, context, undefined, { hygiene: [probe] });
    await assert.rejects(run(await gated()), (error: WardenError) => {
      assert.equal(error.code, "approval_required");
      return true;
    });
    const plan = {
      request_id: "req_" + "0".repeat(32),
      project_id: "repo",
      group: "hygiene",
      filters: { fail_on: "any" },
      ...(await readPlanState(ctx, "repo")),
      requested_by: null,
    };
    const approval = (changed: Partial<typeof plan>) => ({
      requestId: plan.request_id,
      planDigest: "sha256:" + "1".repeat(64),
      plan: { ...plan, ...changed },
    });
    await assert.rejects(
      run(await gated(approval({})), { fail_on: "none" }),
      /its arguments are not the approved plan's/,
    );
    await assert.rejects(
      run(await gated(approval({ head: "f".repeat(40) }))),
      /the plan is stale: the repository's HEAD \(ffffffffffff → [0-9a-f]{12}\) since it was approved; nothing was run/,
    );
    await assert.rejects(
      run(await gated(approval({ worktree: "sha256:" + "2".repeat(64) }))),
      /the plan is stale: the working tree's changes/,
    );
    assert.equal(probe.scopes.length, 0, "no check ran");
    const answer = await run(await gated(approval({})), { fail_on: "any" });
    assert.equal(answer.group, "hygiene");
    assert.equal(probe.scopes.length, 1, "the plan's run ran");
    // A check that changes the repository while the approved run runs: the run is not the plan's, and says so.
    const planted = path.join(work.dir, "planted.txt");
    const meddling = recording(() => {
      writeFileSync(planted, "not what was approved\n");
      return [];
    });
    try {
      const meddled = await runChecks(
        { project_id: "repo", group: "hygiene", fail_on: "any" },
        await gated(approval({})),
        undefined,
        { hygiene: [meddling] },
      );
      assert.equal(meddled.gate, "ERROR");
      assert.match(
        meddled.coverageReasons.join("\n"),
        /the repository changed while this approved run ran \(the working tree's changes/,
      );
    } finally {
      rmSync(planted, { force: true });
    }
  });

  describe("a program check", () => {
    const scope: ChangeScope = {
      root: "repo",
      mode: "staged",
      range: null,
      files: [
        { path: "src/a.ts", status: "modified", addedLines: [], binary: false },
        { path: "src/b.ts", status: "added", addedLines: [], binary: false },
        { path: "src/c.ts", status: "deleted", addedLines: [], binary: false },
        { path: "doc.md", status: "added", addedLines: [], binary: false },
        { path: "src/d.ts", status: "added", addedLines: [], binary: false },
      ],
    };
    const shell = (script: string, fields: Partial<ProgramCheck> = {}): ProgramCheck => ({
      name: "probe/sh",
      description: "a shell script",
      argv: ["sh", "-c", script, "sh"],
      cwd: ".",
      extensions: [".ts"],
      passFilenames: false,
      batchSize: 10,
      successCodes: [0],
      output: "pass-fail",
      failSeverity: "medium",
      executesRepoCode: false,
      timeoutMs: 30_000,
      ...fields,
    });
    const run = (check: ProgramCheck) => runProgramCheck(check, scope, ctx, pathMapper("/nowhere/", "."), (t) => t);

    it("pass-fail: an exit code outside successCodes is one finding of failSeverity, with what it said", async () => {
      assert.deepEqual(await run(shell("exit 0")), { kind: "ran", findings: [], exitCode: 0 });
      const failed = await run(shell("echo 'two tests failed' >&2; exit 3"));
      assert.deepEqual(failed, {
        kind: "ran",
        exitCode: 3,
        findings: [{
          check: "probe/sh",
          file: null,
          line: null,
          column: null,
          severity: "medium",
          rule: null,
          message: "sh exited with 3: two tests failed",
        }],
      });
    });

    it("passes the changed files it reads as ./<path>, in batches, never deleted ones or other kinds", async () => {
      const batches = await run(shell('echo "$@" >&2; exit 1', { passFilenames: true, batchSize: 2 }));
      assert.equal(batches.kind, "ran");
      const messages = batches.kind === "ran" ? batches.findings.map((f) => f.message) : [];
      assert.deepEqual(messages, ["sh exited with 1: ./src/a.ts ./src/b.ts", "sh exited with 1: ./src/d.ts"]);
      const none = await run(shell("exit 0", { passFilenames: true, extensions: [".py"] }));
      assert.deepEqual(none, { kind: "skipped", reason: "no file of the change is one it reads (.py)" });
    });

    it("is an error, never a pass, when it crashes, prints what is not its format, or runs out of time", async () => {
      assert.deepEqual(await run(shell("echo 'config broken' >&2; exit 2", { output: "tsc", successCodes: [0, 1] })), {
        kind: "error",
        reason: "sh exited with 2, which is not one of its success codes (0, 1): config broken",
        exitCode: 2,
      });
      assert.deepEqual(await run(shell("echo 'not json'", { output: "sarif" })), {
        kind: "error",
        reason: "Output of probe/sh is not SARIF: " + (() => {
          try {
            JSON.parse("not json\n");
          } catch (error) {
            return (error as Error).message;
          }
        })(),
        exitCode: 0,
      });
      assert.deepEqual(await run(shell("exit 1", { output: "tsc", successCodes: [0, 1, 2] })), {
        kind: "error",
        reason: "sh exited with 1 but reported nothing",
        exitCode: 1,
      });
      const slow = await run(shell("sleep 20", { timeoutMs: 300 }));
      assert.equal(slow.kind, "error");
      assert.match(
        slow.kind === "error" ? slow.reason : "",
        /^it was killed after \d+ ms, at its time limit \(300 ms, or what was left of the call: raise --call-timeout\)$/,
      );
    });
  });
});
