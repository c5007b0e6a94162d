// run_checks end to end, as an agent calls it before it commits: a fixture repository built here (git, a tsconfig, a
// deno.json, a project-local TypeScript compiler) with a staged change that plants a type error and a lint error →
// FAIL naming each; a range; the fix staged → PASS; a check manifest in the repository → refused; bad input → errors
// that say what was wrong; a check that runs the repository's code without isolation, or with no compiler → ERROR.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { bwrapPath, connect, repoRoot, runtimeName, type Session, sh, skipOrFail, tempDir, textOf } from "./helpers.ts";

interface Finding {
  check: string;
  file: string | null;
  line: number | null;
  severity: string;
  rule: string | null;
  message: string;
}
interface Answer {
  gate: string;
  summary: string;
  passed: number;
  failed: number;
  skipped: number;
  errors: number;
  checks: {
    name: string;
    status: string;
    reason: string | null;
    findings: number;
    durationMs: number;
    exitCode: number | null;
  }[];
  findings: Finding[];
  reducedCoverage: boolean;
  coverageReasons: string[];
  scope: { mode: string; range: string | null; files: number; filesBeforeFilters: number };
}

/** Minutes: tsc loads a 9 MB compiler on a machine shared with other work. */
const CALL_TIMEOUT_MS = 5 * 60_000;

/** A git repository with one commit of `files`. */
function repository(dir: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  sh(dir, "git", "init", "-q", "-b", "main");
  sh(dir, "git", "config", "user.email", "test@example.com");
  sh(dir, "git", "config", "user.name", "test");
  sh(dir, "git", "add", "-A");
  sh(dir, "git", "commit", "-q", "-m", "start");
}

/**
 * The project's own TypeScript compiler, as `npm install typescript` leaves it (node_modules/typescript/bin/tsc),
 * made from the compiler warden's ts-morph bundles and its lib files: the machine needs no other TypeScript.
 */
function installTypeScript(dir: string): void {
  const lib = path.join(dir, "node_modules/typescript/lib");
  mkdirSync(lib, { recursive: true });
  mkdirSync(path.join(dir, "node_modules/typescript/bin"));
  const require = createRequire(path.join(repoRoot, "package.json"));
  copyFileSync(require.resolve("@ts-morph/common/dist/typescript.js"), path.join(lib, "typescript.js"));
  const common = require("@ts-morph/common") as { getLibFiles(): { fileName: string; text: string }[] };
  for (const file of common.getLibFiles()) writeFileSync(path.join(lib, file.fileName), file.text);
  writeFileSync(path.join(dir, "node_modules/typescript/package.json"), '{"name":"typescript","version":"6.0.2"}\n');
  writeFileSync(
    path.join(dir, "node_modules/typescript/bin/tsc"),
    '#!/usr/bin/env node\nconst ts = require("../lib/typescript.js");\nts.executeCommandLine(ts.sys, ts.noop, ts.sys.args);\n',
  );
}

const PROJECT = {
  ".gitignore": "node_modules\n",
  "tsconfig.json": JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext", lib: ["es2022"] },
    include: ["src"],
  }),
  "deno.json": "{}\n",
  "src/ok.ts": "export const ok: number = 1;\n",
};

/**
 * The staged change: a debt marker on line 1, a type error on line 2, a secret on line 3, a `debugger` statement (lint)
 * on line 5, and exports nothing imports (dead).
 */
const BAD = [
  "// FIXME: validate the input before shipping",
  'export const total: number = "12";',
  'export const awsKey = "AKIAZ7QW3RT5YU2PLK4M";',
  "export function trace(): void {",
  "  debugger;",
  "}",
  "",
].join("\n");
// No export, so that no check of exports the change leaves dead has anything to say about the fix.
const FIXED = ["const total: number = 12;", "void total;", ""].join("\n");

const DENO = path.join(repoRoot, "node_modules/.bin");

describe(`run_checks (${runtimeName})`, () => {
  let session: Session | undefined;
  const work = tempDir("warden-checks-");
  const repo = path.join(work.dir, "repo");
  const plain = path.join(work.dir, "plain");

  before(async () => {
    mkdirSync(repo);
    mkdirSync(plain);
    repository(repo, PROJECT);
    installTypeScript(repo);
    writeFileSync(path.join(plain, "notes.txt"), "not a repository\n");
    session = await connect({
      args: ["--root", `repo=${repo}`, "--root", `plain=${plain}`, "--call-timeout", "5m"],
      // deno lint's deno: the one warden's own npm install brings.
      env: { PATH: `${DENO}${path.delimiter}${process.env.PATH}` },
    });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  const call = async (args: Record<string, unknown>) => {
    const result = await session!.client.callTool({ name: "run_checks", arguments: args }, undefined, {
      timeout: CALL_TIMEOUT_MS,
    });
    return {
      result,
      answer: (result.isError ? null : result.structuredContent) as Answer | null,
      code: (result._meta as Record<string, unknown> | undefined)?.["warden/error_code"],
    };
  };
  const needsIsolation = (t: { skip(message?: string): void }) => {
    if (bwrapPath()) return true;
    skipOrFail(t, "needs bubblewrap: the project's own tsc runs only isolated (apt-get install bubblewrap)");
    return false;
  };

  it("FAIL on a staged type error and lint error, naming each with file, line and rule", async (t) => {
    if (!needsIsolation(t)) return;
    writeFileSync(path.join(repo, "src/bad.ts"), BAD);
    sh(repo, "git", "add", "src/bad.ts");
    const { result, answer } = await call({ project_id: "repo" });
    assert.ok(answer, textOf(result));
    assert.equal(answer.gate, "FAIL", answer.summary);
    assert.match(answer.summary, /^FAIL: not safe to ship: \d+ finding\(s\) at or above high \(.*typescript\/tsc: 1/);
    const brief = answer.findings.map((f) => `${f.check} ${f.file}:${f.line} ${f.rule} ${f.severity}`);
    assert.ok(brief.includes("typescript/tsc src/bad.ts:2 TS2322 high"), brief.join("\n"));
    assert.ok(brief.includes("lint/deno src/bad.ts:5 no-debugger high"), brief.join("\n"));
    // warden's own checks: the debt marker, the secret (never quoted whole), the exports nothing imports.
    assert.ok(brief.includes("hygiene/debt-markers src/bad.ts:1 FIXME medium"), brief.join("\n"));
    assert.ok(brief.includes("hygiene/secrets src/bad.ts:3 aws-access-key-id critical"), brief.join("\n"));
    assert.ok(brief.includes("hygiene/dead-exports src/bad.ts:4 added-unused low"), brief.join("\n"));
    assert.ok(!JSON.stringify(answer).includes("AKIAZ7QW3RT5YU2PLK4M"), "the secret is masked");
    const status = (name: string) => answer.checks.find((c) => c.name === name);
    assert.equal(status("typescript/tsc")?.status, "failed");
    assert.equal(status("lint/deno")?.status, "failed");
    assert.deepEqual(status("lint/eslint"), {
      name: "lint/eslint",
      status: "skipped",
      reason: "does not apply: no eslint config at the root",
      findings: 0,
      durationMs: status("lint/eslint")?.durationMs,
      exitCode: null,
    });
    assert.equal(answer.failed, answer.checks.filter((c) => c.status === "failed").length);
    assert.equal(answer.errors, 0);
    assert.deepEqual([answer.scope.mode, answer.scope.files], ["staged", 1]);
    // Nothing of the host shows: paths are the root's.
    assert.ok(!JSON.stringify(answer).includes(work.dir), "no host path in the answer");
  });

  it("fail_on and min_severity: a threshold above every finding passes, and the findings stay listed", async (t) => {
    if (!needsIsolation(t)) return;
    const { answer } = await call({ project_id: "repo", group: "lint", fail_on: "critical" });
    assert.equal(answer?.gate, "PASS", answer?.summary);
    assert.match(
      answer!.summary,
      /^PASS: 1 check\(s\) ran .* found nothing at or above critical; 1 finding\(s\) below it/,
    );
    assert.equal(answer!.findings.length, 1);
    const none = await call({ project_id: "repo", group: "lint", fail_on: "none", min_severity: "critical" });
    assert.equal(none.answer?.gate, "PASS");
    assert.deepEqual(none.answer?.findings, [], "high findings are below min_severity critical");
  });

  it("a range: the committed change between two refs, narrowed by globs", async (t) => {
    if (!needsIsolation(t)) return;
    sh(repo, "git", "commit", "-q", "-m", "bad");
    const { answer } = await call({ project_id: "repo", group: "lint", diff: ["main~1...main"] });
    assert.equal(answer?.gate, "FAIL", answer?.summary);
    assert.deepEqual([answer!.scope.mode, answer!.scope.range], ["range", "main~1...main"]);
    const excluded = await call({ project_id: "repo", group: "lint", diff: ["main~1", "main"], exclude: ["bad.ts"] });
    assert.equal(excluded.answer?.gate, "ERROR", "nothing left to lint: nothing was checked");
    assert.deepEqual([excluded.answer!.scope.files, excluded.answer!.scope.filesBeforeFilters], [0, 1]);
    assert.equal(excluded.answer!.checks.find((c) => c.name === "lint/deno")?.status, "skipped");
    assert.match(
      excluded.answer!.summary,
      /^ERROR: not safe to ship, the run cannot be trusted: no check of group "lint"/,
    );
  });

  it("PASS once the fix is staged", async (t) => {
    if (!needsIsolation(t)) return;
    writeFileSync(path.join(repo, "src/bad.ts"), FIXED);
    sh(repo, "git", "add", "src/bad.ts");
    const { answer } = await call({ project_id: "repo" });
    assert.equal(answer?.gate, "PASS", JSON.stringify(answer, null, 1));
    assert.deepEqual(answer!.findings, []);
    assert.match(
      answer!.summary,
      /^PASS: \d+ check\(s\) ran over 1 changed file\(s\) and found nothing at or above high\.$/,
    );
    assert.equal(answer!.reducedCoverage, false);
    assert.equal((answer as unknown as { manifest: unknown }).manifest, null, "no manifest in the root");
    sh(repo, "git", "commit", "-q", "-m", "fix");
  });

  it("run_checks_start runs the same request as a job; run_checks_result gives its answer once done", async () => {
    writeFileSync(path.join(repo, "src/todo.ts"), "// TODO: one more\nvoid 0;\n");
    sh(repo, "git", "add", "src/todo.ts");
    try {
      const started = await session!.client.callTool({
        name: "run_checks_start",
        arguments: { project_id: "repo", group: "hygiene", fail_on: "low" },
      });
      const job = started.structuredContent as { jobId: string; state: string; request: Record<string, unknown> };
      assert.ok(!started.isError, textOf(started));
      assert.deepEqual(job.request, { project_id: "repo", group: "hygiene", fail_on: "low" });
      let answer: { state: string; result: { structuredContent: Answer } } | undefined;
      for (;;) {
        const polled = await session!.client.callTool({ name: "run_checks_result", arguments: { jobId: job.jobId } });
        answer = JSON.parse(textOf(polled));
        if (answer!.state !== "queued" && answer!.state !== "running") break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(answer!.state, "done");
      const result = answer!.result.structuredContent;
      assert.equal(result.gate, "FAIL", result.summary);
      assert.deepEqual(
        result.findings.map((f) => `${f.check} ${f.file}:${f.line} ${f.rule}`),
        ["hygiene/debt-markers src/todo.ts:1 TODO"],
      );
      // Refused now, as run_checks refuses it: never a job that fails later.
      const refused = await session!.client.callTool({ name: "run_checks_start", arguments: { group: "everything" } });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /group/);
    } finally {
      sh(repo, "git", "rm", "-q", "-f", "src/todo.ts");
    }
  });

  it("scope working: untracked files too, a name that looks like an option passed as a path", async () => {
    const odd = path.join(repo, "src/-rf.ts");
    writeFileSync(odd, "export function f(): void {\n  debugger;\n  debugger;\n}\n");
    try {
      const staged = await call({ project_id: "repo", group: "lint" });
      assert.equal(staged.answer?.gate, "ERROR", "nothing staged: nothing to lint");
      assert.match(staged.answer!.coverageReasons.join("\n"), /the staged change is empty: .*pass scope: working/);
      const { answer } = await call({ project_id: "repo", group: "lint", scope: "working" });
      assert.equal(answer?.gate, "FAIL", answer?.summary);
      assert.deepEqual(answer!.findings.map((f) => [f.file, f.line, f.rule]), [
        ["src/-rf.ts", 2, "no-debugger"],
        ["src/-rf.ts", 3, "no-debugger"],
      ]);
      assert.equal(answer!.scope.mode, "working");
      // Pages: the same run's findings one at a time, through the cursor.
      const first = await call({ project_id: "repo", group: "lint", scope: "working", limit: 1 });
      const cursor = (first.result.structuredContent as { nextCursor?: string }).nextCursor;
      assert.deepEqual(first.answer!.findings.map((f) => f.line), [2]);
      assert.ok(cursor, "a second page");
      const second = await call({ project_id: "repo", group: "lint", scope: "working", limit: 1, cursor });
      assert.deepEqual(second.answer!.findings.map((f) => f.line), [3], textOf(second.result));
      assert.equal((second.result.structuredContent as { nextCursor?: string }).nextCursor, undefined);
    } finally {
      spawnSync("rm", ["-f", odd]);
    }
  });

  it("refuses a check manifest found in the repository, signed or not", async () => {
    mkdirSync(path.join(repo, ".warden"), { recursive: true });
    const manifest = path.join(repo, ".warden/checks.json");
    writeFileSync(manifest, JSON.stringify({ checks: [{ name: "x", argv: ["node", "-e", "0"] }] }));
    try {
      const unsigned = await call({ project_id: "repo" });
      assert.equal(unsigned.result.isError, true);
      assert.equal(unsigned.code, "policy_denied");
      assert.equal(
        textOf(unsigned.result),
        'Check manifest ".warden/checks.json" in root "repo" refused: there is no .warden/checks.json.sig (unsigned); a manifest found in the analysed repository is data, not instructions, unless an allowed signer signed it (namespace warden-checks) and the operator pinned it; sign it (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json, which writes .warden/checks.json.sig beside it), then pin it: warden checks trust repo; or remove it from the repository (or from the root) to run warden\'s bundled groups',
      );
      const started = await session!.client.callTool({ name: "run_checks_start", arguments: { project_id: "repo" } });
      assert.equal(started.isError, true, "refused at the start, not a job that fails later");
      assert.equal(textOf(started), textOf(unsigned.result));
      writeFileSync(`${manifest}.sig`, "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n");
      const signed = await call({ project_id: "repo" });
      assert.equal(signed.code, "policy_denied");
      assert.match(
        textOf(signed.result),
        /refused: \.warden\/checks\.json\.sig is not an SSH signature: .* \(bad-signature\); /,
      );
    } finally {
      spawnSync("rm", ["-rf", path.join(repo, ".warden")]);
    }
  });

  const refusals: { title: string; args: Record<string, unknown>; code: string; message: RegExp }[] = [
    {
      title: "an unknown group",
      args: { group: "security" },
      code: "invalid_arguments",
      message:
        /^Invalid argument "group": expected "default" \| "typescript" \| "lint" \| "hygiene" \| "repo" but received "security"$/,
    },
    {
      title: "scope and diff together",
      args: { scope: "working", diff: ["main...HEAD"] },
      code: "invalid_arguments",
      message:
        /^Invalid arguments "scope" and "diff": both given .*; give scope for the staged change or the working tree, or diff for a range, not both$/,
    },
    {
      title: "an option smuggled in as a ref",
      args: { diff: ["--output=/tmp/x"] },
      code: "invalid_arguments",
      message:
        /^Invalid argument "diff\[0\]": expected a ref, a commit or a range, not an option but received "--output=\/tmp\/x"$/,
    },
    {
      title: "a range of a ref that does not exist",
      args: { diff: ["nosuch...HEAD"] },
      code: "not_found",
      message: /^Ref "nosuch" of diff "nosuch\.\.\.HEAD" does not exist in root "repo": pass a branch, tag or commit/,
    },
    {
      title: "a malformed range",
      args: { diff: ["a..b..c"] },
      code: "invalid_arguments",
      message:
        /^Invalid argument "diff": expected a ref, a commit or a range <ref>\.\.<ref> or <ref>\.\.\.<ref>, received "a\.\.b\.\.c"$/,
    },
    {
      title: "a root that is not a git working tree",
      args: { project_id: "plain" },
      code: "not_found",
      message: /^Root "plain" is not a git working tree: git says: fatal: not a git repository/,
    },
    {
      title: "an unknown project",
      args: { project_id: "nope" },
      code: "project_unknown",
      message:
        /^Unknown project "nope": the projects you may use are repo, plain; pass one of them as project_id; to reach another, the operator adds it \(--root <id>=<dir>\) and you reconnect$/,
    },
    {
      title: "a fail_on that is no severity",
      args: { fail_on: "severe" },
      code: "invalid_arguments",
      message:
        /^Invalid argument "fail_on": expected "critical" \| "high" \| "medium" \| "low" \| "info" \| "any" \| "none" but received "severe"$/,
    },
  ];
  for (const { title, args, code, message } of refusals) {
    it(`refuses ${title}, saying what was wrong, as run_checks, run_checks_start and an MCP task`, async () => {
      const { result, code: got } = await call({ project_id: "repo", ...args });
      assert.equal(result.isError, true, textOf(result));
      assert.equal(got, code, textOf(result));
      assert.match(textOf(result), message);
      // A job is refused at its start with the same words, before an id is given out: never a job that fails later.
      const started = await session!.client.callTool({
        name: "run_checks_start",
        arguments: { project_id: "repo", ...args },
      });
      assert.equal(started.isError, true, textOf(started));
      assert.equal((started._meta as Record<string, unknown>)["warden/error_code"], code);
      assert.equal(textOf(started), textOf(result));
      // The SDK's client asks for a task where the tool, as listed, takes one.
      await session!.client.listTools();
      const errors: string[] = [];
      for await (
        const streamed of session!.client.experimental.tasks.callToolStream({
          name: "run_checks",
          arguments: { project_id: "repo", ...args },
        })
      ) {
        assert.notEqual(streamed.type, "taskCreated", "no task for a request that cannot run");
        if (streamed.type === "error") errors.push(streamed.error.message);
      }
      // (The SDK puts "MCP error -32602: " before the message on each side of the wire.)
      assert.equal(errors.length, 1, errors.join("\n"));
      assert.ok(errors[0].startsWith("MCP error -32602: ") && errors[0].endsWith(`: ${textOf(result)}`), errors[0]);
    });
  }
});

describe(`run_checks without isolation or a compiler (${runtimeName})`, () => {
  // A PATH of git, node and deno and no bubblewrap, tsc or eslint: warden finds nothing to isolate with.
  const work = tempDir("warden-checks-bare-");
  const bin = path.join(work.dir, "bin");
  const withTsc = path.join(work.dir, "with-tsc");
  const noTsc = path.join(work.dir, "no-tsc");
  const plugins = path.join(work.dir, "lint-plugins");
  let session: Session | undefined;

  before(async () => {
    mkdirSync(bin);
    for (const [name, dirs] of [["git", process.env.PATH], ["node", process.env.PATH], ["deno", DENO]] as const) {
      const found = (dirs ?? "").split(path.delimiter).map((d) => path.join(d, name)).find((p) => existsSync(p));
      if (found) symlinkSync(found, path.join(bin, name));
    }
    mkdirSync(withTsc);
    mkdirSync(noTsc);
    repository(withTsc, PROJECT);
    installTypeScript(withTsc);
    repository(noTsc, PROJECT);
    mkdirSync(plugins);
    repository(plugins, { ...PROJECT, "deno.json": JSON.stringify({ lint: { plugins: ["./lint_plugin.ts"] } }) });
    for (const dir of [noTsc, plugins]) {
      writeFileSync(path.join(dir, "src/lint_me.ts"), "export function f(): void {\n  debugger;\n}\n");
      sh(dir, "git", "add", "src/lint_me.ts");
    }
    session = await connect({
      args: ["--root", `tsc=${withTsc}`, "--root", `bare=${noTsc}`, "--root", `plugins=${plugins}`],
      env: { PATH: bin },
    });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  const call = async (root: string, group = "typescript") => {
    const result = await session!.client.callTool({ name: "run_checks", arguments: { project_id: root, group } });
    return (result.isError ? assert.fail(textOf(result)) : result.structuredContent) as Answer;
  };

  it("skips a check that runs the repository's code and says ERROR, naming the isolation missing", async () => {
    const answer = await call("tsc");
    assert.equal(answer.gate, "ERROR");
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status]), [["typescript/tsc", "skipped"]]);
    assert.match(
      answer.checks[0].reason!,
      /^it runs the repository's own code \(node \.\/node_modules\/typescript\/bin\/tsc\), which warden runs only in isolation, and none is in force here \(bubblewrap \(bwrap\) is not installed/,
    );
    assert.match(
      answer.summary,
      /^ERROR: not safe to ship, the run cannot be trusted: typescript\/tsc: it runs the repository's own code/,
    );
    assert.equal(answer.reducedCoverage, true);
  });

  it("says ERROR when a project has a tsconfig.json and no compiler, with what to install", async () => {
    const answer = await call("bare");
    assert.equal(answer.gate, "ERROR");
    assert.match(
      answer.checks[0].reason!,
      /^no TypeScript compiler: the project has no node_modules\/typescript and tsc was not in warden's PATH when it started; run npm install/,
    );
  });

  it("runs deno lint unisolated when the project names no lint plugin, and refuses it when it does", async () => {
    const plain = await call("bare", "lint");
    assert.equal(plain.gate, "FAIL", plain.summary);
    assert.deepEqual(plain.findings.map((f) => [f.check, f.file, f.rule]), [[
      "lint/deno",
      "src/lint_me.ts",
      "no-debugger",
    ]]);
    const withPlugins = await call("plugins", "lint");
    assert.equal(withPlugins.gate, "ERROR");
    assert.match(
      withPlugins.checks.find((c) => c.name === "lint/deno")!.reason!,
      /^it runs the repository's own code \(deno lint\), which warden runs only in isolation/,
    );
  });
});
