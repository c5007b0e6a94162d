import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { initPlatform, platform } from "../platform/mod.ts";
import { FileJobStore, type JobRecord, type JobStoreFile } from "./store.ts";

/** A pid no process can have (above any pid_max): its files are an exited process's. */
const DEAD = 2 ** 30;
const HOUR = 3_600_000;

function job(id: number, fields: Partial<JobRecord> = {}): JobRecord {
  return {
    id: `job_${String(id).padStart(32, "0")}`,
    tool: "run_checks",
    request: { group: "default" },
    state: "done",
    createdAt: "2026-12-01T10:00:00.000Z",
    startedAt: "2026-12-01T10:00:01.000Z",
    finishedAt: "2026-12-01T10:00:02.000Z",
    result: { content: [{ type: "text", text: "PASS" }] },
    reason: null,
    ...fields,
  };
}

function storeFile(pid: number, updatedAt: string, jobs: JobRecord[]): JobStoreFile {
  return { v: 1, pid, startedAt: "2026-12-01T09:00:00.000Z", updatedAt, jobs };
}

describe("the file job store", () => {
  let work: string;
  before(async () => {
    await initPlatform();
    work = mkdtempSync(path.join(tmpdir(), "warden-jobs-"));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("saves this process's jobs whole, in a file of its own that another process restores", async () => {
    const dir = path.join(work, "saved");
    const store = new FileJobStore(dir);
    await store.save([]);
    assert.ok(!existsSync(dir), "a process that never had a job writes nothing");
    await store.save([job(1), job(2, { state: "running", finishedAt: null, result: null })]);
    assert.deepEqual(readdirSync(dir), [path.basename(store.file)]);
    assert.match(path.basename(store.file), new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z-${process.pid}\\.json$`));
    const written = JSON.parse(readFileSync(store.file, "utf8"));
    assert.deepEqual([written.v, written.pid, written.jobs.length], [1, process.pid, 2]);
    await store.save([job(1)]);
    assert.equal(JSON.parse(readFileSync(store.file, "utf8")).jobs.length, 1, "replaced, not appended");
    await store.save([]);
    assert.deepEqual(JSON.parse(readFileSync(store.file, "utf8")).jobs, [], "once written, emptied too");
    // Its own file is not restored by itself.
    assert.equal((await store.restore(0)).jobs.size, 0);
  });

  it("survives saves at once: each write of a file has a temp file of its own", async () => {
    const dir = path.join(work, "at-once");
    mkdirSync(dir);
    const file = path.join(dir, "one.json");
    const texts = Array.from({ length: 20 }, (_, i) => `{"n":${i}}`);
    await Promise.all(texts.map((text) => platform().fs.writeFileAtomic(file, text)));
    assert.ok(texts.includes(readFileSync(file, "utf8")));
    assert.deepEqual(readdirSync(dir), ["one.json"], "no temp file left");
  });

  it("restores the jobs of an exited process, and of a running one as held by it", async () => {
    const dir = path.join(work, "restore");
    mkdirSync(dir);
    const now = new Date().toISOString();
    writeFileSync(
      path.join(dir, "a-1.json"),
      JSON.stringify(storeFile(DEAD, now, [job(1), job(2, { state: "queued" })])),
    );
    // The test runner's parent runs as long as this test does.
    writeFileSync(path.join(dir, "b-2.json"), JSON.stringify(storeFile(process.ppid, now, [job(3)])));
    const restored = (await new FileJobStore(dir).restore(Date.now() - HOUR)).jobs;
    assert.deepEqual(
      [...restored.entries()].map(([id, r]) => [id.slice(-1), r.pid, r.heldBy, r.updatedAt, r.record.state]),
      [
        ["1", DEAD, null, now, "done"],
        ["2", DEAD, null, now, "queued"],
        ["3", process.ppid, process.ppid, now, "done"],
      ],
    );
  });

  it("removes the files of exited processes last written before retention, and keeps a running one's", async () => {
    const dir = path.join(work, "expired");
    mkdirSync(dir);
    const old = new Date(Date.now() - 2 * HOUR).toISOString();
    writeFileSync(path.join(dir, "a-1.json"), JSON.stringify(storeFile(DEAD, old, [job(1)])));
    writeFileSync(path.join(dir, "b-2.json"), JSON.stringify(storeFile(process.ppid, old, [job(2)])));
    writeFileSync(path.join(dir, "c-3.json"), JSON.stringify(storeFile(DEAD, new Date().toISOString(), [job(3)])));
    const { jobs, expired } = await new FileJobStore(dir).restore(Date.now() - HOUR);
    assert.deepEqual([...jobs.keys()].map((id) => id.slice(-1)), ["2", "3"]);
    assert.deepEqual(expired, [job(1).id], "the removed file's jobs are expired, not unknown");
    assert.deepEqual(readdirSync(dir).sort(), ["b-2.json", "c-3.json"]);
  });

  it("refuses a store file that does not parse, naming the file and what is wrong", async () => {
    const cases: [string, string][] = [
      ["{", "its JSON does not parse"],
      [JSON.stringify({ ...storeFile(DEAD, new Date().toISOString(), []), v: 2 }), "at v: Invalid type: Expected 1"],
      [
        JSON.stringify(storeFile(DEAD, new Date().toISOString(), [{ ...job(1), state: "lost" as never }])),
        'at jobs.0.state: Invalid type: Expected ("queued" | "running" | "done" | "failed" | "interrupted" | "cancelled")',
      ],
    ];
    for (const [i, [text, why]] of cases.entries()) {
      const dir = path.join(work, `bad-${i}`);
      mkdirSync(dir);
      const file = path.join(dir, "a-1.json");
      writeFileSync(file, text);
      await assert.rejects(new FileJobStore(dir).restore(0), (error: Error & { code?: string }) => {
        assert.equal(error.code, "config_invalid");
        assert.ok(error.message.startsWith(`The job store file ${file} is not a job store: ${why}`), error.message);
        assert.match(error.message, /move it out of the directory/);
        return true;
      });
      assert.ok(existsSync(file), "a file it cannot read is never removed");
    }
  });

  it("says which directory it cannot write, and an absent directory restores nothing", async () => {
    assert.equal((await new FileJobStore(path.join(work, "absent")).restore(0)).jobs.size, 0);
    // A file where the directory should be: no user, root included, can write under it.
    const dir = path.join(work, "a-file");
    writeFileSync(dir, "");
    const store = new FileJobStore(dir);
    await assert.rejects(store.save([job(1)]), (error: Error) => {
      assert.ok(error.message.startsWith(`The job store ${store.file} cannot be written: `), error.message);
      assert.match(error.message, /give --jobs-dir a directory warden can write/);
      return true;
    });
  });
});
