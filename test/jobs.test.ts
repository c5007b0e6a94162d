// A tool served as a job, over stdio as an agent uses it: `<name>_start`
// checks the arguments as the tool does and answers at once, `<name>_result`
// follows the job to its result; the bounds, the ids it does not know, and
// what a restarted server says of the jobs of the one before (killed, or
// stopped by the end of its input).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { connect, repoRoot, runtimeName, runWarden, type Session, tempDir, textOf } from "./helpers.ts";

const jobToolsDir = path.join(repoRoot, runtimeName === "deno" ? "test/fixtures/jobs" : "dist/test/fixtures/jobs");

type Result = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
};

describe(`jobs (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(() => {
    work = tempDir();
  });
  after(() => work.remove());

  const env = (jobsDir: string, extra: Record<string, string> = {}) => ({
    WARDEN_TOOLS_DIR: jobToolsDir,
    WARDEN_JOBS_DIR: jobsDir,
    WARDEN_LEDGER: path.join(work.dir, "ledger"),
    ...extra,
  });

  async function call(session: Session, name: string, args: Record<string, unknown>): Promise<Result> {
    return (await session.client.callTool({ name, arguments: args })) as Result;
  }

  /** Asks for the job's result until it is no longer queued or running. */
  async function settled(session: Session, jobId: string): Promise<Record<string, unknown>> {
    for (;;) {
      const result = await call(session, "fixture_wait_result", { jobId });
      assert.ok(!result.isError, textOf(result));
      const job = JSON.parse(textOf(result));
      if (job.state !== "queued" && job.state !== "running") return job;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it("serves <name>_start with the tool's own input schema, and <name>_result", async () => {
    const session = await connect({ env: env(path.join(work.dir, "list")) });
    try {
      const { tools } = await session.client.listTools();
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      assert.deepEqual([...byName.keys()].sort(), ["fixture_wait", "fixture_wait_result", "fixture_wait_start"]);
      assert.deepEqual(byName.get("fixture_wait_start")!.inputSchema, byName.get("fixture_wait")!.inputSchema);
      assert.deepEqual(byName.get("fixture_wait_result")!.annotations?.readOnlyHint, true);
      // Arguments the tool refuses are refused at the start, in the same words, and no job is made.
      const bad = { ms: -1, text: 3 };
      const direct = await call(session, "fixture_wait", bad);
      const started = await call(session, "fixture_wait_start", bad);
      assert.equal(started.isError, true);
      assert.equal(textOf(started), textOf(direct).replace(/fixture_wait/g, "fixture_wait_start"));
    } finally {
      await session.close();
    }
  });

  it("answers a start at once, runs one job at a time by default, and keeps each job's result", async () => {
    const session = await connect({ env: env(path.join(work.dir, "run")) });
    try {
      const first = await call(session, "fixture_wait_start", { ms: 300, text: "first" });
      const second = await call(session, "fixture_wait_start", { ms: 0, text: "second" });
      const failing = await call(session, "fixture_wait_start", { ms: 0, text: "third", fail: true });
      const [a, b, c] = [first, second, failing].map((r) => r.structuredContent as Record<string, unknown>);
      assert.deepEqual([a.state, a.queuePosition, b.state, b.queuePosition, c.queuePosition], [
        "running",
        null,
        "queued",
        1,
        2,
      ]);
      assert.deepEqual(a.request, { ms: 300, text: "first" });
      assert.deepEqual(a.limits, {
        concurrency: 1,
        queue: 8,
        retained: 50,
        retentionMs: 3_600_000,
        timeoutMs: 600_000,
      });
      const done = await settled(session, a.jobId as string);
      assert.equal(done.state, "done");
      assert.deepEqual((done.result as Result).content, [{ type: "text", text: "first" }]);
      assert.ok(Date.parse(done.finishedAt as string) >= Date.parse(done.startedAt as string));
      assert.equal((await settled(session, b.jobId as string)).state, "done");
      const failed = await settled(session, c.jobId as string);
      assert.equal(failed.state, "failed", "a tool error is a failed job, with the tool's error as its result");
      assert.match(textOf(failed.result), /failed on purpose: third/);
    } finally {
      await session.close();
    }
    // Each job ran as a call of the tool itself: its row is in the ledger beside the starts.
    const ledger = path.join(work.dir, "ledger");
    const rows = readdirSync(ledger).flatMap((file) =>
      readFileSync(path.join(ledger, file), "utf8").trim().split("\n").map((line) => JSON.parse(line))
    );
    const tools = rows.filter((row) => row.kind === "call").map((row) => `${row.tool}:${row.outcome}`);
    for (const expected of ["fixture_wait_start:ok", "fixture_wait:ok", "fixture_wait:error"]) {
      assert.ok(tools.includes(expected), `${expected} in ${tools.join(", ")}`);
    }
  });

  it("refuses a start beyond the queue with the counts, and says which ids it does not know", async () => {
    const session = await connect({ env: env(path.join(work.dir, "bounds"), { WARDEN_JOB_QUEUE: "1" }) });
    try {
      assert.equal((await call(session, "fixture_wait_start", { ms: 5000, text: "a" })).isError, undefined);
      assert.equal((await call(session, "fixture_wait_start", { ms: 5000, text: "b" })).isError, undefined);
      const refused = await call(session, "fixture_wait_start", { ms: 0, text: "c" });
      assert.equal(refused.isError, true);
      assert.equal(
        textOf(refused),
        "The job queue is full: 1 jobs are waiting and 1 running (at most 1 wait); ask again once one has finished " +
          "(fixture_wait_result), or raise --job-queue",
      );
      const unknown = "job_" + "f".repeat(32);
      const notIssued = await call(session, "fixture_wait_result", { jobId: unknown });
      assert.deepEqual([notIssued.isError, textOf(notIssued)], [
        true,
        `No job ${unknown}: neither this server nor an earlier one whose jobs it keeps issued it`,
      ]);
      const malformed = await call(session, "fixture_wait_result", { jobId: "42" });
      assert.equal(malformed.isError, true);
      assert.match(textOf(malformed), /jobId.*a job id: job_ and 32 hex digits, as fixture_wait_start returns/);
    } finally {
      await session.close();
    }
  });

  it("after a kill -9, a restarted server reports the running and queued jobs as interrupted, and runs neither", async () => {
    const jobsDir = path.join(work.dir, "killed");
    const first = await connect({ env: env(jobsDir) });
    let pid: number | null = null;
    const ids: string[] = [];
    try {
      for (const text of ["running", "queued"]) {
        const started = await call(first, "fixture_wait_start", { ms: 60_000, text });
        ids.push((started.structuredContent as { jobId: string }).jobId);
      }
      pid = first.transport.pid;
      assert.ok(pid !== null);
      process.kill(pid, "SIGKILL");
    } finally {
      await first.close().catch(() => {});
    }
    const second = await connect({ env: env(jobsDir) });
    try {
      for (const [i, was] of ["running", "queued"].entries()) {
        const job = JSON.parse(textOf(await call(second, "fixture_wait_result", { jobId: ids[i] })));
        assert.deepEqual([job.state, job.restored, job.pid, job.heldBy], ["interrupted", true, pid, undefined]);
        assert.match(job.reason, new RegExp(`^its server \\(pid ${pid}\\) exited while it was ${was}; last recorded `));
      }
    } finally {
      await second.close();
    }
  });

  it("a clean stop keeps the unfinished jobs as interrupted, with why", async () => {
    const jobsDir = path.join(work.dir, "stopped");
    const first = await connect({ env: env(jobsDir) });
    let jobId = "";
    try {
      jobId = ((await call(first, "fixture_wait_start", { ms: 60_000, text: "x" })).structuredContent as {
        jobId: string;
      }).jobId;
    } finally {
      await first.close();
    }
    const second = await connect({ env: env(jobsDir) });
    try {
      const job = JSON.parse(textOf(await call(second, "fixture_wait_result", { jobId })));
      assert.deepEqual([job.state, job.reason, job.restored], [
        "interrupted",
        "the server stopped (its client closed its input)",
        true,
      ]);
    } finally {
      await second.close();
    }
  });

  it("serves a job tool as an MCP task: created at once, polled, its result, cancelled, listed", async () => {
    const session = await connect({ env: env(path.join(work.dir, "tasks")) });
    try {
      const { tools } = await session.client.listTools();
      assert.deepEqual(tools.find((tool) => tool.name === "fixture_wait")!.execution, { taskSupport: "optional" });
      assert.equal(tools.find((tool) => tool.name === "fixture_wait_start")!.execution, undefined);
      // The SDK client's own task flow: tools/call with params.task, tasks/get until done, tasks/result.
      const seen: string[] = [];
      let result: Result | undefined;
      for await (
        const message of session.client.experimental.tasks.callToolStream({
          name: "fixture_wait",
          arguments: { ms: 200, text: "from a task" },
        })
      ) {
        seen.push(message.type === "taskStatus" ? `${message.type}:${message.task.status}` : message.type);
        if (message.type === "result") result = message.result as Result;
        if (message.type === "error") throw message.error;
      }
      assert.equal(seen[0], "taskCreated");
      assert.equal(seen.at(-1), "result");
      assert.deepEqual(result?.content, [{ type: "text", text: "from a task" }]);

      // Cancelled while it waits: its signal aborts, and it reads cancelled.
      const stream = session.client.experimental.tasks.callToolStream({
        name: "fixture_wait",
        arguments: { ms: 60_000, text: "x" },
      });
      const first = await stream.next();
      assert.equal(first.value?.type, "taskCreated");
      const created = first.value as { task: { taskId: string; status: string; ttl: number } };
      await stream.return(undefined);
      const taskId = created.task.taskId;
      assert.equal(created.task.status, "working");
      assert.equal(created.task.ttl, 3_600_000);
      const cancelled = await session.client.experimental.tasks.cancelTask(taskId);
      assert.deepEqual([cancelled.status, cancelled.statusMessage], ["cancelled", "cancelled by the client"]);
      const listed = await session.client.experimental.tasks.listTasks();
      assert.deepEqual(listed.tasks.map((task) => task.status), ["completed", "cancelled"]);
      // The same job through the job tools.
      const job = JSON.parse(textOf(await call(session, "fixture_wait_result", { jobId: taskId })));
      assert.equal(job.state, "cancelled");
      await assert.rejects(
        session.client.experimental.tasks.cancelTask(taskId),
        /cannot be cancelled: it is cancelled already/,
      );
      await assert.rejects(
        session.client.experimental.tasks.getTask("job_" + "0".repeat(32)),
        /No task job_0{32}: neither this server nor an earlier one whose jobs it keeps issued it/,
      );
      // Arguments the tool refuses: refused as a JSON-RPC error in the plain call's words, and no task made.
      const plain = await call(session, "fixture_wait", { ms: "soon" });
      const errors: string[] = [];
      for await (
        const message of session.client.experimental.tasks.callToolStream({
          name: "fixture_wait",
          arguments: { ms: "soon" },
        })
      ) if (message.type === "error") errors.push(message.error.message);
      assert.equal(errors.length, 1);
      assert.ok(errors[0].startsWith("MCP error -32602: ") && errors[0].endsWith(textOf(plain)), errors[0]);
      assert.equal((await session.client.experimental.tasks.listTasks()).tasks.length, 2);
    } finally {
      await session.close();
    }
  });

  it("refuses malformed job settings by name", async () => {
    const cases: [string[], string][] = [
      [["--job-queue", "many"], 'Invalid --job-queue: expected a whole number from 0 to 1000, received "many"'],
      [["--job-concurrency", "0"], 'Invalid --job-concurrency: expected a whole number from 1 to 16, received "0"'],
      [
        ["--job-retention", "8d"],
        'Invalid --job-retention: expected a duration from 1s to 7 days such as 30m, 1h or 24h, received "8d"',
      ],
      [
        ["--job-timeout", "2h"],
        'Invalid --job-timeout: expected a duration from 1s to 60m such as 90s or 10m, received "2h"',
      ],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await runWarden(["tools", ...args], { env: { WARDEN_TOOLS_DIR: jobToolsDir } });
      assert.equal(code, 2, stderr);
      assert.equal(stderr, `warden: ${message}\n`);
    }
  });
});
