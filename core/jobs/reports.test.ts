import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { initPlatform } from "../platform/mod.ts";
import { JobQueue } from "./queue.ts";
import { FileJobReports, logFileName, MAX_LOG_BYTES } from "./reports.ts";
import { FileJobStore, type JobRecord, type JobStore, type RestoredJob } from "./store.ts";

const ID = "job_" + "ab".repeat(16);
const bytes = (text: string) => new TextEncoder().encode(text);

/** A store that keeps what it was last given, and can be told to fail or to restore expired ids. */
class MemoryStore implements JobStore {
  saved: JobRecord[] = [];
  failing = false;
  expired: string[] = [];
  restored = new Map<string, RestoredJob>();
  restore() {
    return Promise.resolve({ jobs: this.restored, expired: this.expired });
  }
  save(jobs: readonly JobRecord[]) {
    if (this.failing) return Promise.reject(new Error("disk full"));
    this.saved = [...jobs];
    return Promise.resolve();
  }
}

describe("job report directories", () => {
  let work: string;
  before(async () => {
    await initPlatform();
    work = mkdtempSync(path.join(tmpdir(), "warden-reports-"));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("names a log file after the check, plainly, whatever the name holds", () => {
    assert.equal(logFileName("lint/deno"), "lint-deno.log");
    assert.equal(logFileName("typescript/tsc:packages/Web"), "typescript-tsc-packages-web.log");
    assert.equal(logFileName("../../etc/passwd"), "etc-passwd.log");
    assert.equal(logFileName("//"), "log.log");
  });

  it("writes each program's output to its log as it comes, framed, with a character split between chunks whole", async () => {
    const reports = new FileJobReports(path.join(work, "logs"));
    const report = await reports.open(ID);
    const log = report.log("lint/deno");
    const file = path.join(work, "logs/reports", ID, "logs/lint-deno.log");
    log.begin(["deno", "lint", "--json", "./src/a b.ts"], "/r/repo");
    const euro = bytes("€");
    log.write("stdout", bytes("price: ").slice());
    log.write("stdout", euro.subarray(0, 1));
    // Written as it came: the first chunks are in the file before the program has ended.
    assert.equal(readFileSync(file, "utf8"), "$ deno lint --json './src/a b.ts'\nprice: ");
    log.write("stderr", bytes("warning\n"));
    log.write("stdout", euro.subarray(1));
    log.end("exit code 1 after 12 ms");
    // The same name again (a second batch of the check) goes on in the same file.
    assert.equal(report.log("lint/deno"), log);
    assert.equal(
      readFileSync(file, "utf8"),
      "$ deno lint --json './src/a b.ts'\nprice: warning\n€\n[warden: exit code 1 after 12 ms]\n",
    );
    // Two checks whose names make the same file name get two files.
    report.log("lint-deno").begin(["x"], "/r/repo");
    assert.ok(existsSync(path.join(work, "logs/reports", ID, "logs/lint-deno-2.log")));
    await reports.finish(ID, { jobId: ID, state: "done" });
    log.write("stdout", bytes("after the end"));
    assert.ok(!readFileSync(file, "utf8").includes("after the end"), "nothing is written once the job has finished");
    assert.deepEqual(JSON.parse(readFileSync(path.join(work, "logs/reports", ID, "result.json"), "utf8")), {
      jobId: ID,
      state: "done",
    });
    assert.deepEqual(await reports.files(ID), [
      { file: "result.json", size: readFileSync(path.join(work, "logs/reports", ID, "result.json")).length },
      { file: "logs/lint-deno-2.log", size: 4 },
      { file: "logs/lint-deno.log", size: readFileSync(file).length },
    ]);
    assert.equal(new TextDecoder().decode(await reports.read(ID, "logs/lint-deno.log")), readFileSync(file, "utf8"));
  });

  it("shows the root's host path as the result does, relative to the root, even split between chunks", async () => {
    const reports = new FileJobReports(path.join(work, "hidden"));
    const log = (await reports.open(ID)).log("lint/deno");
    log.begin(["deno", "lint"], "/r/repo/");
    for (const chunk of ['{"file":"file:///r/re', 'po/src/a.ts"}\n', "cwd /r/repo, not /r/repository\n", "/r/rep"]) {
      log.write("stdout", bytes(chunk));
    }
    log.write("stderr", bytes("at /r/repo/"));
    log.write("stderr", bytes("b.ts\n"));
    log.end("exit code 0 after 1 ms");
    assert.equal(
      readFileSync(path.join(work, "hidden/reports", ID, "logs/lint-deno.log"), "utf8"),
      '$ deno lint\n{"file":"file://src/a.ts"}\ncwd ., not /r/repository\nat b.ts\n/r/rep\n[warden: exit code 0 after 1 ms]\n',
    );
  });

  it("cuts a log at its cap and says so, with how much was left out", async () => {
    const reports = new FileJobReports(path.join(work, "cap"));
    const log = (await reports.open(ID)).log("flood");
    log.begin(["flood"], "/r/repo");
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    const chunks = Math.ceil(MAX_LOG_BYTES / chunk.length) + 3;
    for (let i = 0; i < chunks; i++) log.write(i % 2 ? "stderr" : "stdout", chunk);
    log.end("exit code 0 after 5 ms");
    const text = readFileSync(path.join(work, "cap/reports", ID, "logs/flood.log"), "utf8");
    const left = chunks * chunk.length - MAX_LOG_BYTES;
    assert.equal(
      text,
      `$ flood\n${"a".repeat(MAX_LOG_BYTES)}\n[warden: log truncated: it is kept to its first ${MAX_LOG_BYTES} bytes ` +
        `of output; ${left} more bytes were not written]\n\n[warden: exit code 0 after 5 ms]\n`,
    );
  });

  it("serves only regular files it wrote: a symlink planted in a report, or in place of one, is refused", async () => {
    const jobs = path.join(work, "planted");
    const reports = new FileJobReports(jobs);
    await reports.open(ID);
    await reports.finish(ID, { state: "done" });
    const secret = path.join(work, "secret.txt");
    writeFileSync(secret, "not for the client\n");
    symlinkSync(secret, path.join(jobs, "reports", ID, "logs/evil.log"));
    assert.deepEqual((await reports.files(ID)).map((f) => f.file), ["result.json"], "a symlink is not listed");
    await assert.rejects(reports.read(ID, "logs/evil.log"), {
      message:
        `Report file logs/evil.log of job ${ID} refused: it is a symlink, not a file warden wrote; warden serves only the regular files it wrote in a report directory`,
    });
    // A report directory, or its logs directory, that is a link to elsewhere.
    const other = "job_" + "cd".repeat(16);
    const elsewhere = path.join(work, "elsewhere");
    mkdirSync(path.join(elsewhere, "logs"), { recursive: true });
    writeFileSync(path.join(elsewhere, "result.json"), "{}");
    writeFileSync(path.join(elsewhere, "logs/a.log"), "x");
    symlinkSync(elsewhere, path.join(jobs, "reports", other));
    assert.deepEqual(await reports.files(other), [], "nothing is listed through a linked report directory");
    await assert.rejects(reports.read(other, "result.json"), {
      message: `Report file result.json of job ${other} refused: ${
        path.join(jobs, "reports", other)
      } is a symlink, not a file warden wrote; warden serves only the regular files it wrote in a report directory`,
    });
    rmSync(path.join(jobs, "reports", ID, "logs"), { recursive: true });
    symlinkSync(path.join(elsewhere, "logs"), path.join(jobs, "reports", ID, "logs"));
    await assert.rejects(reports.read(ID, "logs/a.log"), /logs is a symlink, not a file warden wrote/);
    assert.deepEqual((await reports.files(ID)).map((f) => f.file), ["result.json"]);
    // A file it never names is never read, and one that is not there says so.
    await assert.rejects(reports.read(ID, "../secret.txt"), {
      message: "No report file ../secret.txt: a report holds result.json and logs/<name>.log",
    });
    await assert.rejects(reports.read("job_" + "ef".repeat(16), "result.json"), {
      message: `Job job_${"ef".repeat(16)} has no result.json: it has not finished, or its report was not written; ` +
        "resources/list names the files each report has",
    });
  });

  it("refuses a job's start before its id is given out when its report directory cannot be made", async () => {
    const jobs = path.join(work, "unwritable");
    mkdirSync(jobs);
    // A file where the reports directory should be: no user, root included, can write under it.
    writeFileSync(path.join(jobs, "reports"), "");
    const store = new MemoryStore();
    const queue = new JobQueue(store, undefined, undefined, new FileJobReports(jobs));
    let ran = false;
    await assert.rejects(
      queue.start("fixture", {}, () => {
        ran = true;
        return Promise.resolve({ content: [] });
      }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, "config_invalid");
        assert.match(
          error.message,
          new RegExp(
            `^The job report directory ${jobs}/reports/job_[0-9a-f]{32} cannot be made: .*; give --jobs-dir a directory warden can write$`,
          ),
        );
        return true;
      },
    );
    assert.deepEqual([store.saved, queue.list(), ran], [[], [], false], "no job recorded, none run");
  });

  it("removes a report whose record could not be saved, and follows its job: pruned with it, kept while it runs", async () => {
    const jobs = path.join(work, "retention");
    const reports = new FileJobReports(jobs);
    const store = new MemoryStore();
    let now = Date.parse("2026-12-01T00:00:00Z");
    const queue = new JobQueue(
      store,
      { concurrency: 1, queue: 8, retained: 1, retentionMs: 60_000 },
      () => now,
      reports,
    );
    const dir = (id: string) => path.join(jobs, "reports", id);

    store.failing = true;
    await assert.rejects(queue.start("fixture", {}, () => Promise.resolve({ content: [] })), /disk full/);
    assert.deepEqual(readdirSync(path.join(jobs, "reports")), [], "the report made for it is removed");
    store.failing = false;

    let release!: () => void;
    const running = await queue.start("fixture", {}, (_signal, _id, report) => {
      report!.log("held").begin(["held"], "/r");
      return new Promise((resolve) => release = () => resolve({ content: [{ type: "text", text: "held" }] }));
    });
    const first = await queue.start("fixture", {}, () => Promise.resolve({ content: [] }));
    const second = await queue.start("fixture", {}, () => Promise.resolve({ content: [] }));
    now += 120_000;
    // The running one outlives retention; the queued ones run once it ends.
    await queue.start("fixture", {}, () => new Promise(() => {}));
    assert.ok(existsSync(path.join(dir(running.jobId), "logs/held.log")), "a running job's report is never pruned");
    release();
    await queue.finished(second.jobId);
    await queue.finished(first.jobId);
    // One finished job is kept: the older ones' reports went with them.
    await eventually(() => !existsSync(dir(running.jobId)) && !existsSync(dir(first.jobId)));
    assert.ok(existsSync(path.join(dir(second.jobId), "result.json")));
    assert.equal(JSON.parse(readFileSync(path.join(dir(second.jobId), "result.json"), "utf8")).state, "done");
    assert.deepEqual(queue.lookup(first.jobId).kind, "expired");
  });

  it("writes result.json for a job cancelled or stopped, and prunes an earlier process's report with its job", async () => {
    const jobs = path.join(work, "ended");
    const reports = new FileJobReports(jobs);
    const store = new MemoryStore();
    const old = "2026-12-01T00:00:00.000Z";
    const earlier = "job_" + "0e".repeat(16);
    await reports.open(earlier);
    store.restored = new Map<string, RestoredJob>([[earlier, {
      record: {
        id: earlier,
        tool: "fixture",
        request: {},
        state: "done",
        createdAt: old,
        startedAt: old,
        finishedAt: old,
        result: null,
        reason: null,
      },
      pid: 4_000_000,
      updatedAt: old,
      heldBy: null,
    }]]);
    let now = Date.parse(old) + 1000;
    const queue = new JobQueue(
      store,
      { concurrency: 1, queue: 8, retained: 50, retentionMs: 60_000 },
      () => now,
      reports,
    );
    await queue.restore();
    const result = (id: string) => JSON.parse(readFileSync(path.join(jobs, "reports", id, "result.json"), "utf8"));
    const never = () => new Promise<Record<string, unknown>>(() => {});
    const running = await queue.start("fixture", {}, never);
    const queued = await queue.start("fixture", {}, never);
    assert.ok(queue.cancel(queued.jobId));
    await eventually(() => existsSync(path.join(jobs, "reports", queued.jobId, "result.json")));
    assert.deepEqual([result(queued.jobId).state, result(queued.jobId).reason], [
      "cancelled",
      "cancelled by the client",
    ]);
    assert.ok(existsSync(path.join(jobs, "reports", earlier)), "within retention, the earlier job's report stays");
    // Past retention, the next start prunes the earlier process's job, and its report with it.
    now += 120_000;
    await queue.start("fixture", {}, never);
    await eventually(() => !existsSync(path.join(jobs, "reports", earlier)));
    assert.equal(queue.lookup(earlier).kind, "expired");
    await queue.stop("the server stopped");
    assert.deepEqual([result(running.jobId).state, result(running.jobId).reason], [
      "interrupted",
      "the server stopped",
    ]);
  });

  it("keeps a finished job's result in result.json alone: the store holds the record, a restart reads it when asked", async () => {
    const jobs = path.join(work, "lean");
    const limits = { concurrency: 1, queue: 8, retained: 50, retentionMs: 60_000 };
    const first = new JobQueue(new FileJobStore(jobs), limits, Date.now, new FileJobReports(jobs));
    const answer = { content: [{ type: "text", text: '{"gate":"PASS"}' }], structuredContent: { gate: "PASS" } };
    const { jobId } = await first.start("fixture", {}, () => Promise.resolve(answer));
    await first.finished(jobId);
    await first.stop("the test is done with it"); // its last save written
    const [storeFile] = readdirSync(jobs).filter((name) => name.endsWith(".json"));
    const stored = JSON.parse(readFileSync(path.join(jobs, storeFile), "utf8")).jobs[0];
    assert.deepEqual([stored.state, stored.result, stored.resultInReport], ["done", null, true]);
    const own = await first.answer(jobId);
    assert.deepEqual(own.kind === "job" && own.job.result, answer, "this process's own job answers from memory");

    // A restart: the records are read, the result only when a job is asked for.
    const second = new JobQueue(new FileJobStore(jobs), limits, Date.now, new FileJobReports(jobs));
    await second.restore();
    const listed = second.lookup(jobId);
    assert.deepEqual(listed.kind === "job" && [listed.job.state, listed.job.result], ["done", null]);
    const asked = await second.answer(jobId);
    assert.deepEqual(asked.kind === "job" && [asked.job.restored, asked.job.result, asked.job.reason], [
      true,
      answer,
      null,
    ]);

    rmSync(path.join(jobs, "reports", jobId, "result.json"));
    const lost = await second.answer(jobId);
    assert.ok(lost.kind === "job" && lost.job.result === null);
    assert.match(
      lost.kind === "job" ? lost.job.reason ?? "" : "",
      /^its result was kept in its report, which cannot be read now \(.+\)$/,
    );
  });

  it("writes the result.json an exited process left unwritten, saying its job was interrupted", async () => {
    const jobs = path.join(work, "interrupted");
    const reports = new FileJobReports(jobs);
    const at = "2026-12-01T00:00:00.000Z";
    const record = (id: string, state: JobRecord["state"]): JobRecord => ({
      id,
      tool: "run_checks",
      request: {},
      state,
      createdAt: at,
      startedAt: at,
      finishedAt: state === "done" ? at : null,
      result: null,
      reason: null,
    });
    const ids = ["01", "02", "03", "04"].map((n) => "job_" + n.repeat(16));
    for (const id of ids) await reports.open(id);
    // The done one wrote its own; the held one's process still runs; the last has no directory at all.
    await reports.finish(ids[1], { mine: true });
    const store = new MemoryStore();
    store.restored = new Map<string, RestoredJob>([
      [ids[0], { record: record(ids[0], "running"), pid: 4_000_000, updatedAt: at, heldBy: null }],
      [ids[1], { record: record(ids[1], "done"), pid: 4_000_000, updatedAt: at, heldBy: null }],
      [ids[2], { record: record(ids[2], "running"), pid: 4_000_001, updatedAt: at, heldBy: 4_000_001 }],
      [ids[3], { record: record("job_" + "05".repeat(16), "queued"), pid: 4_000_000, updatedAt: at, heldBy: null }],
    ]);
    await new JobQueue(store, undefined, undefined, reports).restore();
    const written = JSON.parse(readFileSync(path.join(jobs, "reports", ids[0], "result.json"), "utf8"));
    assert.deepEqual([written.state, written.restored, written.reason], [
      "interrupted",
      true,
      `its server (pid 4000000) exited while it was running; last recorded ${at}`,
    ]);
    assert.deepEqual(JSON.parse(readFileSync(path.join(jobs, "reports", ids[1], "result.json"), "utf8")), {
      mine: true,
    });
    assert.ok(!existsSync(path.join(jobs, "reports", ids[2], "result.json")), "a live process's job is its own");
    assert.ok(!existsSync(path.join(jobs, "reports", "job_" + "05".repeat(16))), "no directory is made for one");
  });

  it("removes, after start, an old report no store knows, and keeps a fresh one and the ones a store knows", async () => {
    const jobs = path.join(work, "orphans");
    const reports = new FileJobReports(jobs);
    const [orphan, fresh, known] = ["0a", "0b", "0c"].map((n) => "job_" + n.repeat(16));
    for (const id of [orphan, fresh, known]) await reports.open(id);
    const hoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const id of [orphan, known]) utimesSync(path.join(jobs, "reports", id), hoursAgo, hoursAgo);
    mkdirSync(path.join(jobs, "reports", "not-a-job"));
    utimesSync(path.join(jobs, "reports", "not-a-job"), hoursAgo, hoursAgo);
    const store = new MemoryStore();
    store.restored = new Map<string, RestoredJob>([[known, {
      record: {
        id: known,
        tool: "fixture",
        request: {},
        state: "running",
        createdAt: hoursAgo.toISOString(),
        startedAt: null,
        finishedAt: null,
        result: null,
        reason: null,
      },
      pid: 4_000_002,
      updatedAt: new Date().toISOString(),
      heldBy: 4_000_002,
    }]]);
    const queue = new JobQueue(store, undefined, undefined, reports);
    await queue.restore();
    assert.ok(existsSync(path.join(jobs, "reports", orphan)), "restore answers first; the orphan goes with tidy");
    await queue.tidy();
    assert.deepEqual(readdirSync(path.join(jobs, "reports")).sort(), [fresh, known, "not-a-job"].sort());
  });

  it("removes the reports of jobs whose store expired at start", async () => {
    const jobs = path.join(work, "expired");
    const reports = new FileJobReports(jobs);
    await reports.open(ID);
    const store = new MemoryStore();
    store.expired = [ID];
    const queue = new JobQueue(store, undefined, undefined, reports);
    await queue.restore();
    assert.equal(queue.lookup(ID).kind, "expired", "restore already says so");
    await queue.tidy();
    assert.ok(!existsSync(path.join(jobs, "reports", ID)));
  });
});

/** Polls `check` until it holds, up to 5 s: a pruned report is removed after the job's state changes. */
async function eventually(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail("not within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
