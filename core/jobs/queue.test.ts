import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { initPlatform } from "../platform/mod.ts";
import { JOB_ID, JobQueue, type JobRun, type JobView } from "./queue.ts";
import { FileJobStore, type JobRecord, type JobStore, type RestoredJob } from "./store.ts";

/** A store that keeps what it was last given, and can be told to fail. */
class MemoryStore implements JobStore {
  saved: JobRecord[] = [];
  saves = 0;
  failing = false;
  restore() {
    return Promise.resolve({ jobs: new Map<string, RestoredJob>(), expired: [] });
  }
  save(jobs: readonly JobRecord[]) {
    if (this.failing) return Promise.reject(new Error("disk full"));
    this.saved = [...jobs];
    this.saves++;
    return Promise.resolve();
  }
}

/** A job that runs until the test ends it, and reports whether its signal aborted. */
function held() {
  let end!: (result: Record<string, unknown>) => void;
  let fail!: (error: Error) => void;
  let signal: AbortSignal | undefined;
  const run: JobRun = (s) => {
    signal = s;
    return new Promise((resolve, reject) => {
      end = resolve;
      fail = reject;
    });
  };
  return {
    run,
    end: (text = "ok") => end({ content: [{ type: "text", text }] }),
    fail: (message: string) => fail(new Error(message)),
    aborted: () => signal?.aborted ?? null,
  };
}

/** Waits until the queue's saves settle (a reaction or two). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

function state(queue: JobQueue, job: JobView) {
  const found = queue.lookup(job.jobId);
  assert.equal(found.kind, "job");
  return (found as { job: JobView }).job;
}

describe("the job queue", () => {
  let work: string;
  before(async () => {
    await initPlatform();
    work = mkdtempSync(path.join(tmpdir(), "warden-queue-"));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("runs `concurrency` jobs at once and the rest in order, with their queue positions", async () => {
    const queue = new JobQueue(new MemoryStore(), { concurrency: 1, queue: 8, retained: 50, retentionMs: 3_600_000 });
    const [a, b, c] = [held(), held(), held()];
    const first = await queue.start("run_checks", { n: 1 }, a.run);
    const second = await queue.start("run_checks", { n: 2 }, b.run);
    const third = await queue.start("run_checks", { n: 3 }, c.run);
    assert.match(first.jobId, JOB_ID);
    assert.deepEqual([first.state, first.queuePosition], ["running", null]);
    assert.deepEqual([second.state, second.queuePosition], ["queued", 1]);
    assert.deepEqual([third.state, third.queuePosition], ["queued", 2]);
    assert.deepEqual(queue.counts(), { queued: 2, running: 1, finished: 0, restored: 0 });
    a.end("first");
    await settled();
    assert.deepEqual(state(queue, first).result, { content: [{ type: "text", text: "first" }] });
    assert.equal(state(queue, first).state, "done");
    assert.equal(state(queue, second).state, "running");
    assert.deepEqual([state(queue, third).state, state(queue, third).queuePosition], ["queued", 1]);
    b.fail("tsc crashed");
    await settled();
    assert.deepEqual([state(queue, second).state, state(queue, second).reason], ["failed", "tsc crashed"]);
    c.end();
    await settled();
    assert.equal(state(queue, third).state, "done");
    assert.deepEqual(state(queue, third).request, { n: 3 });
  });

  it("takes a result with isError as a failed job, and a run that throws at once as one that rejects", async () => {
    const queue = new JobQueue(new MemoryStore());
    const failed = await queue.start("t", {}, () => Promise.resolve({ isError: true, content: [] }));
    const thrown = await queue.start("t", {}, () => {
      throw new Error("no such group");
    });
    await settled();
    await settled();
    assert.equal(state(queue, failed).state, "failed");
    assert.deepEqual([state(queue, thrown).state, state(queue, thrown).reason], ["failed", "no such group"]);
  });

  it("refuses a start beyond the queue with the counts, and drops nothing", async () => {
    const queue = new JobQueue(new MemoryStore(), { concurrency: 1, queue: 2, retained: 50, retentionMs: 3_600_000 });
    const jobs = [held(), held(), held()];
    const started = [];
    for (const job of jobs) started.push(await queue.start("run_checks", {}, job.run));
    await assert.rejects(queue.start("run_checks", {}, held().run), (error: Error & { code?: string }) => {
      assert.equal(error.code, "too_large");
      assert.equal(
        error.message,
        "The job queue is full: 2 jobs are waiting and 1 running (at most 2 wait); ask again once one has finished " +
          "(run_checks_result), or raise --job-queue",
      );
      return true;
    });
    assert.deepEqual(started.map((job) => state(queue, job).state), ["running", "queued", "queued"]);
    jobs[0].end();
    await settled();
    assert.equal((await queue.start("run_checks", {}, held().run)).state, "queued", "room again");
  });

  it("gives out no id when the store cannot record the start", async () => {
    const store = new MemoryStore();
    const queue = new JobQueue(store);
    store.failing = true;
    await assert.rejects(queue.start("run_checks", {}, held().run), /disk full/);
    assert.deepEqual(queue.counts(), { queued: 0, running: 0, finished: 0, restored: 0 });
    store.failing = false;
    const job = await queue.start("run_checks", {}, held().run);
    assert.deepEqual(store.saved.map((r) => r.id), [job.jobId], "recorded before its id was given out");
  });

  it("keeps `retained` finished jobs for `retentionMs`, never a running one, and calls the others expired", async () => {
    let now = Date.parse("2026-12-01T10:00:00.000Z");
    const queue = new JobQueue(
      new MemoryStore(),
      { concurrency: 2, queue: 8, retained: 2, retentionMs: 60_000 },
      () => now,
    );
    const long = held();
    const running = await queue.start("t", {}, long.run);
    const done = [];
    for (let i = 0; i < 3; i++) {
      const job = held();
      done.push(await queue.start("t", {}, job.run));
      job.end();
      await settled();
    }
    // Three finished, two kept: the oldest is expired.
    assert.deepEqual(queue.lookup(done[0].jobId), { kind: "expired", id: done[0].jobId });
    assert.equal(state(queue, done[1]).state, "done");
    now += 61_000;
    // Pruning runs at the next start or finish.
    const next = held();
    await queue.start("t", {}, next.run);
    assert.equal(queue.lookup(done[1].jobId).kind, "expired");
    assert.equal(queue.lookup(done[2].jobId).kind, "expired");
    assert.equal(state(queue, running).state, "running", "a running job is never pruned, however old");
    assert.deepEqual(queue.lookup("job_" + "0".repeat(32)), { kind: "unknown", id: "job_" + "0".repeat(32) });
    long.end();
    next.end();
  });

  it("stops: the running job's signal aborts, and running and queued jobs are saved as interrupted", async () => {
    const store = new MemoryStore();
    const queue = new JobQueue(store, { concurrency: 1, queue: 8, retained: 50, retentionMs: 3_600_000 });
    const [a, b] = [held(), held()];
    const first = await queue.start("t", {}, a.run);
    const second = await queue.start("t", {}, b.run);
    await queue.stop("the client closed its input");
    assert.equal(a.aborted(), true);
    assert.equal(b.aborted(), null, "a queued job never started");
    for (const job of [first, second]) {
      assert.deepEqual([state(queue, job).state, state(queue, job).reason], [
        "interrupted",
        "the client closed its input",
      ]);
    }
    assert.deepEqual(store.saved.map((r) => r.state), ["interrupted", "interrupted"]);
    a.end();
    await settled();
    assert.equal(state(queue, first).state, "interrupted", "a result after the stop changes nothing");
    await assert.rejects(queue.start("t", {}, held().run), /No job can start: the server is stopping/);
  });

  it("answers after a restart: finished jobs with their result, unfinished ones interrupted, never run again", async () => {
    const dir = path.join(work, "restart");
    const before = new JobQueue(new FileJobStore(dir));
    const [done, running] = [held(), held()];
    const finished = await before.start("run_checks", { group: "typescript" }, done.run);
    done.end("PASS");
    await settled();
    const interrupted = await before.start("run_checks", {}, running.run);
    const queued = await before.start("run_checks", {}, held().run);
    await settled();
    // Another store of this process stands for the next process: its file has another start time.
    const startedAt = Date.now();
    while (Date.now() === startedAt) await settled();
    const afterRestart = new JobQueue(new FileJobStore(dir));
    await afterRestart.restore();
    const restored = state(afterRestart, finished);
    assert.deepEqual(
      [restored.state, restored.result, restored.restored, restored.pid, restored.request],
      ["done", { content: [{ type: "text", text: "PASS" }] }, true, process.pid, { group: "typescript" }],
    );
    for (const [job, was] of [[interrupted, "running"], [queued, "queued"]] as const) {
      const view = state(afterRestart, job);
      assert.equal(view.state, "interrupted");
      assert.match(
        view.reason!,
        new RegExp(`^its server \\(pid ${process.pid}\\) exited while it was ${was}; last recorded \\d{4}-`),
      );
      assert.equal(view.heldBy, undefined);
    }
    assert.deepEqual(afterRestart.counts(), { queued: 0, running: 0, finished: 0, restored: 3 }, "nothing runs again");
    running.end();
  });

  it("answers for a job another live process holds with its last state and that process", async () => {
    const dir = path.join(work, "held");
    const record: JobRecord = {
      id: "job_" + "a".repeat(32),
      tool: "run_checks",
      request: {},
      state: "running",
      createdAt: "2026-12-01T10:00:00.000Z",
      startedAt: "2026-12-01T10:00:01.000Z",
      finishedAt: null,
      result: null,
      reason: null,
    };
    const store = new FileJobStore(dir);
    mkdirSync(dir, { recursive: true });
    // The test runner's parent stands for a live server.
    writeFileSync(
      path.join(dir, "2026-12-01T09-00-00-000Z-other.json"),
      JSON.stringify({
        v: 1,
        pid: process.ppid,
        startedAt: "2026-12-01T09:00:00.000Z",
        updatedAt: new Date().toISOString(),
        jobs: [record],
      }),
    );
    const queue = new JobQueue(store);
    await queue.restore();
    const found = queue.lookup(record.id);
    assert.equal(found.kind, "job");
    const job = (found as { job: JobView }).job;
    assert.deepEqual([job.state, job.heldBy, job.pid, job.restored], ["running", process.ppid, process.ppid, true]);
  });
});
