// A job's report directory, over stdio as an agent reads it: run_checks_start on a fixture repository whose change
// deno lint finds fault with → the job's directory holds result.json and the program's log, written by warden as the
// program ran; resources/list names them and resources/read serves them fenced (the same bytes every time); every way
// of naming something else is refused; a restarted server still serves them; retention removes them with their job;
// a report directory that cannot be made refuses the start.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { createContext } from "../core/context.ts";
import { openRoots, type RootFs } from "../core/doors/roots.ts";
import { Spawner } from "../core/doors/spawn.ts";
import { FileJobReports, type JobReport } from "../core/jobs/reports.ts";
import { initPlatform } from "../core/platform/mod.ts";
import type { HostFacts } from "../core/tool.ts";
import { connect, eventually, repoRoot, runtimeName, type Session, sh, tempDir, textOf } from "./helpers.ts";

const DENO = path.join(repoRoot, "node_modules/.bin");

interface McpFailure {
  code: number;
  message: string;
}

describe(`job reports (${runtimeName})`, () => {
  const work = tempDir("warden-reports-");
  const repo = path.join(work.dir, "repo");
  const jobsDir = path.join(work.dir, "jobs");
  let jobId = "";

  const start = (extra: Record<string, string> = {}, jobs = jobsDir) =>
    connect({
      args: ["--root", `repo=${repo}`],
      env: {
        PATH: `${DENO}${path.delimiter}${process.env.PATH}`,
        WARDEN_JOBS_DIR: jobs,
        WARDEN_LEDGER: path.join(work.dir, "ledger"),
        ...extra,
      },
    });

  /** Starts a run_checks job and waits for it to finish; returns its id and its answer. */
  async function runJob(session: Session, args: Record<string, unknown>) {
    const started = await session.client.callTool({ name: "run_checks_start", arguments: args });
    assert.ok(!started.isError, textOf(started));
    const id = (started.structuredContent as { jobId: string }).jobId;
    for (;;) {
      const polled = await session.client.callTool({ name: "run_checks_result", arguments: { jobId: id } });
      const job = JSON.parse(textOf(polled));
      if (job.state !== "queued" && job.state !== "running") return { id, job };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const uriOf = (id: string, file: string) => `warden://jobs/${id}/${file}`;
  const reportDir = (id: string, jobs = jobsDir) => path.join(jobs, "reports", id);

  /** The text between a fenced body's markers, after checking the markers are the content's. */
  function unfenced(text: string): string {
    const match = /^The text between the two markers below is [^\n]*\n<<<warden-untrusted-([0-9a-f]{16})>>>\n/.exec(
      text,
    );
    assert.ok(match, text.slice(0, 300));
    const tail = `\n<<<end-${match[1]}>>>\n`;
    assert.ok(text.endsWith(tail), text.slice(-300));
    return text.slice(match[0].length, -tail.length);
  }

  async function refused(session: Session, uri: unknown): Promise<McpFailure> {
    try {
      await session.client.readResource({ uri: uri as string });
    } catch (error) {
      // The SDK puts "MCP error <code>: " before the message on each side of the wire.
      const { code, message } = error as McpFailure;
      return { code, message: message.replace(/^(?:MCP error -\d+: )+/, "") };
    }
    return assert.fail(`${JSON.stringify(uri)} was served`);
  }

  before(() => {
    mkdirSync(repo);
    writeFileSync(path.join(repo, "deno.json"), "{}\n");
    mkdirSync(path.join(repo, "src"));
    writeFileSync(path.join(repo, "src/ok.ts"), "export const ok = 1;\n");
    sh(repo, "git", "init", "-q", "-b", "main");
    sh(repo, "git", "config", "user.email", "test@example.com");
    sh(repo, "git", "config", "user.name", "test");
    sh(repo, "git", "add", "-A");
    sh(repo, "git", "commit", "-q", "-m", "start");
    writeFileSync(path.join(repo, "src/bad.ts"), "export function f(): void {\n  debugger;\n}\n");
    sh(repo, "git", "add", "src/bad.ts");
  });
  after(() => work.remove());

  it("writes a job's result and its program's log into the job's own report directory", async () => {
    const session = await start();
    try {
      const { id, job } = await runJob(session, { project_id: "repo", group: "lint" });
      jobId = id;
      assert.equal(job.state, "done");
      assert.equal(job.result.structuredContent.gate, "FAIL", job.result.structuredContent.summary);
      assert.deepEqual(readdirSync(reportDir(id)).sort(), ["logs", "result.json"]);
      assert.deepEqual(readdirSync(path.join(reportDir(id), "logs")), ["lint-deno.log"]);
      // The result as run_checks_result answered it once done.
      assert.deepEqual(JSON.parse(readFileSync(path.join(reportDir(id), "result.json"), "utf8")), job);
      // What deno lint printed, as it came, between warden's line of what ran and its line of how it ended.
      const log = readFileSync(path.join(reportDir(id), "logs/lint-deno.log"), "utf8");
      assert.ok(log.startsWith("$ deno lint --json"), log);
      assert.ok(log.includes("./src/bad.ts"), log);
      assert.match(log, /"code": ?"no-debugger"/);
      assert.match(log, /\n\[warden: exit code 1 after \d+ ms\]\n$/);
      // deno lint names files by their host path: the log shows them as the result does, relative to the root.
      assert.ok(!log.includes(repo), log);
      // A plain call runs no job: it writes no report.
      const plain = await session.client.callTool({
        name: "run_checks",
        arguments: { project_id: "repo", group: "lint" },
      });
      assert.equal((plain.structuredContent as { gate: string }).gate, "FAIL");
      assert.deepEqual(readdirSync(path.join(jobsDir, "reports")), [id]);
    } finally {
      await session.close();
    }
  });

  it("lists the report's files as resources and serves each fenced, the same bytes every time", async () => {
    assert.ok(jobId, "needs the job of the test before");
    const session = await start();
    try {
      assert.deepEqual(session.client.getServerCapabilities()?.resources, {});
      const { resources } = await session.client.listResources();
      assert.deepEqual(resources.map((r) => r.uri), [
        uriOf(jobId, "result.json"),
        uriOf(jobId, "logs/lint-deno.log"),
      ]);
      assert.deepEqual(resources[1], {
        uri: uriOf(jobId, "logs/lint-deno.log"),
        name: `${jobId}/logs/lint-deno.log`,
        title: `Log lint-deno.log of ${jobId}`,
        description: "What a program check of the job printed, stdout and stderr as they came, fenced.",
        mimeType: "text/plain",
        size: statSync(path.join(reportDir(jobId), "logs/lint-deno.log")).size,
      });
      assert.equal(resources[0].size, statSync(path.join(reportDir(jobId), "result.json")).size);
      assert.ok(resources.every((r) => (r.size ?? 0) > 0), "a log with output, a result: neither is empty");
      for (const file of ["result.json", "logs/lint-deno.log"]) {
        const first = await session.client.readResource({ uri: uriOf(jobId, file) });
        const second = await session.client.readResource({ uri: uriOf(jobId, file) });
        assert.deepEqual(second, first, "deterministic: the same report, the same bytes");
        const [body] = first.contents as { uri: string; mimeType: string; text: string }[];
        assert.deepEqual([body.uri, body.mimeType], [uriOf(jobId, file), "text/plain"]);
        assert.equal(unfenced(body.text), readFileSync(path.join(reportDir(jobId), file), "utf8"));
      }
      await assert.rejects(
        session.client.listResources({ cursor: "page-2" }),
        /Invalid cursor "page-2": the resource list has one page; omit the cursor/,
      );
      const { resourceTemplates } = await session.client.listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), [
        "warden://jobs/{jobId}/result.json",
        "warden://jobs/{jobId}/logs/{name}.log",
      ]);
    } finally {
      await session.close();
    }
  });

  it("refuses every URI that is not a report file of a job it knows, and reads nothing outside the reports", async () => {
    assert.ok(jobId, "needs the job of the test before");
    // Planted beside the job's log: a symlink to a file outside the report directories.
    const secret = path.join(work.dir, "secret.txt");
    writeFileSync(secret, "outside\n");
    symlinkSync(secret, path.join(reportDir(jobId), "logs/planted.log"));
    const session = await start();
    try {
      const listed = (await session.client.listResources()).resources.map((r) => r.uri);
      assert.ok(!listed.includes(uriOf(jobId, "logs/planted.log")), "a planted symlink is not listed");
      const invalid: [unknown, string][] = [
        [`warden://jobs/${jobId}/../../jobs/secret.txt`, "it has a . or .. segment"],
        [`warden://jobs/${jobId}/logs/..%2f..%2fresult.json`, "it contains a percent-encoded character"],
        [`warden://jobs/${jobId}/%2e%2e/%2e%2e/secret.txt`, "it contains a percent-encoded character"],
        [`warden://jobs/${jobId}%2Fresult.json`, "it contains a percent-encoded character"],
        [`warden://jobs//${secret}`, "it has an empty segment"],
        [secret, "it is not a warden job report"],
        [`file://${secret}`, "it is not a warden job report"],
        [`warden://jobs/${jobId}/logs/lint-deno.log\0.txt`, "it contains a NUL character"],
        [`warden://jobs/${jobId}\\..\\..\\secret.txt`, "it contains a backslash"],
        ["warden://jobs/job_42/result.json", '"job_42" is not a job id'],
        [`warden://jobs/${jobId}/store.json`, '"store.json" is not a report file'],
        [42, "params.uri must be a string"],
      ];
      for (const [uri, why] of invalid) {
        const error = await refused(session, uri);
        assert.equal(error.code, -32602, `${JSON.stringify(uri)}: ${error.message}`);
        assert.ok(
          error.message.startsWith("Invalid resource URI ") && error.message.includes(`: ${why}`),
          error.message,
        );
      }
      const planted = await refused(session, uriOf(jobId, "logs/planted.log"));
      assert.deepEqual([planted.code, planted.message], [
        -32602,
        `Report file logs/planted.log of job ${jobId} refused: it is a symlink, not a file warden ` +
        "wrote; warden serves only the regular files it wrote in a report directory",
      ]);
      const unknown = "job_" + "0".repeat(32);
      const notIssued = await refused(session, uriOf(unknown, "result.json"));
      assert.deepEqual([notIssued.code, notIssued.message], [
        -32002,
        `No job ${unknown}: neither this server nor an earlier one whose jobs it keeps issued it`,
      ]);
      const noLog = await refused(session, uriOf(jobId, "logs/typescript-tsc.log"));
      assert.equal(noLog.code, -32002);
      assert.match(noLog.message, /has no logs\/typescript-tsc\.log: no program wrote that log/);
    } finally {
      await session.close();
    }
  });

  it("retention removes a report with its job; a report directory that cannot be made refuses the start", async () => {
    const jobs = path.join(work.dir, "retained");
    const session = await start({ WARDEN_JOB_RETAINED: "1" }, jobs);
    try {
      const first = await runJob(session, { project_id: "repo", group: "hygiene" });
      assert.ok(existsSync(path.join(reportDir(first.id, jobs), "result.json")));
      const second = await runJob(session, { project_id: "repo", group: "hygiene" });
      // Only one finished job is kept: the first, and its report directory, are gone.
      assert.ok(await eventually(() => !existsSync(reportDir(first.id, jobs))), "the first job's report was pruned");
      assert.deepEqual((await session.client.listResources()).resources.map((r) => r.uri), [
        uriOf(second.id, "result.json"),
      ]);
      const expired = await refused(session, uriOf(first.id, "result.json"));
      assert.deepEqual([expired.code, expired.message], [
        -32002,
        `Job ${first.id} has expired: a finished job and its report are kept for the job ` +
        "retention, then removed",
      ]);
    } finally {
      await session.close();
    }
    const blocked = path.join(work.dir, "blocked");
    mkdirSync(blocked);
    // A file where the reports directory should be: no user, root included, can write under it.
    writeFileSync(path.join(blocked, "reports"), "");
    const refusing = await start({}, blocked);
    try {
      const started = await refusing.client.callTool({
        name: "run_checks_start",
        arguments: { project_id: "repo", group: "hygiene" },
      });
      assert.equal(started.isError, true);
      assert.match(
        textOf(started),
        new RegExp(
          `^The job report directory ${blocked}/reports/job_[0-9a-f]{32} cannot be made: .*; give --jobs-dir a directory warden can write$`,
        ),
      );
      assert.deepEqual((await refusing.client.listResources()).resources, []);
    } finally {
      await refusing.close();
    }
    assert.deepEqual(readdirSync(blocked), ["reports"], "no job was recorded: no store file");
  });

  it("a restarted server still lists and serves an earlier process's reports, byte for byte", async () => {
    assert.ok(jobId, "needs the job of the first test");
    const files = ["result.json", "logs/lint-deno.log"];
    const texts = files.map((file) => readFileSync(path.join(reportDir(jobId), file), "utf8"));
    const session = await start();
    try {
      const listed = (await session.client.listResources()).resources.map((r) => r.uri);
      for (const file of files) assert.ok(listed.includes(uriOf(jobId, file)), listed.join("\n"));
      for (const [i, file] of files.entries()) {
        const { contents } = await session.client.readResource({ uri: uriOf(jobId, file) });
        assert.equal(unfenced((contents[0] as { text: string }).text), texts[i]);
      }
      const job = JSON.parse(
        textOf(await session.client.callTool({ name: "run_checks_result", arguments: { jobId } })),
      );
      assert.equal(job.restored, true);
    } finally {
      await session.close();
    }
  });
});

describe(`ctx.spawn's log door (${runtimeName})`, () => {
  const work = tempDir("warden-log-door-");
  let spawner: Spawner;
  let fs: RootFs;

  before(async () => {
    await initPlatform();
    mkdirSync(path.join(work.dir, "root"));
    fs = await openRoots([{ id: "root", path: path.join(work.dir, "root") }]);
    spawner = new Spawner();
    await spawner.resolve(["sh"]);
  });
  after(() => work.remove());

  const context = (report?: JobReport) =>
    createContext("gate", {
      signal: () => new AbortController().signal,
      fs,
      host: {} as HostFacts, // ctx.spawn reads nothing of it
      tool: { name: "probe", risk: "gate", capabilities: { spawn: ["sh"], writeRoots: [], netHosts: [] } },
      deadline: Date.now() + 60_000,
      spawner,
      report,
    });
  const script = "echo out; echo err >&2; pwd";

  it("in a job's run, sends the program's output to the named log, and still returns it", async () => {
    const reports = new FileJobReports(path.join(work.dir, "jobs"));
    const id = "job_" + "12".repeat(16);
    const ctx = context(await reports.open(id));
    const result = await ctx.spawn(["sh", "-c", script], { log: "probe/sh" });
    assert.equal(result.stdout, `out\n${path.join(work.dir, "root")}\n`);
    const log = readFileSync(path.join(work.dir, "jobs/reports", id, "logs/probe-sh.log"), "utf8");
    // Both streams, the working directory shown as the root itself (`.`), and how it ended.
    assert.match(log, /^\$ sh -c 'echo out; echo err >&2; pwd'\n/);
    for (const line of ["out", "err", "."]) assert.ok(log.split("\n").includes(line), log);
    assert.match(log, /\n\[warden: exit code 0 after \d+ ms\]\n$/);
  });

  it("writes the output while the program runs, not once it has ended", async () => {
    const reports = new FileJobReports(path.join(work.dir, "jobs"));
    const id = "job_" + "34".repeat(16);
    const controller = new AbortController();
    const ctx = createContext("gate", {
      signal: () => controller.signal,
      fs,
      host: {} as HostFacts, // ctx.spawn reads nothing of it
      tool: { name: "probe", risk: "gate", capabilities: { spawn: ["sh"], writeRoots: [], netHosts: [] } },
      deadline: Date.now() + 60_000,
      spawner,
      report: await reports.open(id),
    });
    const file = path.join(work.dir, "jobs/reports", id, "logs/slow.log");
    let ended = false;
    const running = ctx.spawn(["sh", "-c", "echo first; sleep 30; echo never"], { log: "slow" }).finally(() => {
      ended = true;
    });
    assert.ok(
      await eventually(() => existsSync(file) && readFileSync(file, "utf8").includes("first\n"), 20_000),
      "the first line is in the log while the program still runs",
    );
    assert.equal(ended, false);
    controller.abort();
    const result = await running;
    assert.equal(result.exitCode, null);
    assert.match(
      readFileSync(file, "utf8"),
      /^\$ sh -c 'echo first; sleep 30; echo never'\nfirst\n\n\[warden: killed by SIGKILL after \d+ ms\]\n$/,
    );
  });

  it("outside a job writes nothing, and refuses a log name that is empty, too long or has control characters", async () => {
    const ctx = context();
    assert.equal((await ctx.spawn(["sh", "-c", script], { log: "probe/sh" })).exitCode, 0);
    assert.deepEqual(readdirSync(work.dir).sort(), ["jobs", "root"], "no report made outside a job");
    const cases: [unknown, string][] = [
      ["", '""'],
      ["a\nb", '"a\\nb"'],
      ["x".repeat(201), `"${"x".repeat(76)}...`],
      [7, "7"],
    ];
    for (const [log, shown] of cases) {
      await assert.rejects(ctx.spawn(["sh", "-c", "true"], { log: log as string }), {
        message: `Invalid log ${shown} for tool "probe": a log is named by 1 to 200 characters without control ` +
          "characters, such as the check's name",
      });
    }
    // 200 characters, not one more.
    assert.equal((await ctx.spawn(["sh", "-c", "true"], { log: "x".repeat(200) })).exitCode, 0);
  });
});
