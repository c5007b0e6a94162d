// Where jobs outlive their process. Each server process writes all of its
// jobs to a file of its own (<dir>/<started>-<pid>.json, replaced whole after
// every change), so processes never share a file and no lock is needed. At
// start a process reads the others' files: a job finished there answers with
// its result; one that was queued or running when its process exited is
// interrupted, never run again; one whose process still runs is that
// process's (`heldBy`). Behind the JobStore interface, so that another
// backend (a database, a task service) can replace the files.
import * as v from "valibot";
import path from "node:path";
import { messageOf, problem, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";

export const JOB_STORE_VERSION = 1;
/** A store file larger than this is refused rather than read (about 1,000 jobs of large results). */
const MAX_STORE_BYTES = 64 * 1024 * 1024;

export const JOB_STATES = ["queued", "running", "done", "failed", "interrupted", "cancelled"] as const;
export type JobState = (typeof JOB_STATES)[number];

const Time = v.pipe(v.string(), v.isoTimestamp());

/** One job as stored: what was asked, where it stands, and its answer once it has one. */
export const JobRecordSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(/^job_[0-9a-f]{32}$/)),
  tool: v.string(),
  /** The arguments, as validated when the job was started. */
  request: v.record(v.string(), v.unknown()),
  state: v.picklist(JOB_STATES),
  createdAt: Time,
  startedAt: v.nullable(Time),
  finishedAt: v.nullable(Time),
  /** The tool's result (an MCP CallToolResult) once done or failed; null here when `resultInReport`. */
  result: v.nullable(v.record(v.string(), v.unknown())),
  /**
   * Set when the result is kept in the job's report (reports/<id>/result.json) instead of here: a restart then reads
   * only the records, and a result when it is asked for.
   */
  resultInReport: v.optional(v.literal(true)),
  /** Why it failed or was interrupted, in words. */
  reason: v.nullable(v.string()),
});
export type JobRecord = v.InferOutput<typeof JobRecordSchema>;

/** A process's store file; schema/job-store.schema.json is its JSON Schema. */
export const JobStoreFileSchema = v.pipe(
  v.strictObject({
    v: v.literal(JOB_STORE_VERSION),
    pid: v.pipe(v.number(), v.integer(), v.minValue(1)),
    startedAt: Time,
    /** When the file was last written: an interrupted job's last recorded time. */
    updatedAt: Time,
    jobs: v.array(JobRecordSchema),
  }),
  v.description(
    "One server process's jobs: <jobs dir>/<start time>-<pid>.json, replaced whole after every change. Each job also " +
      "has a report directory, <jobs dir>/reports/<job id>/ (core/jobs/reports.ts): result.json, the job as " +
      "<tool>_result answers it once it has finished, and logs/<name>.log, the stdout and stderr of each program " +
      "check as they came (cut at 1 MiB with a line that says so); it is removed with its job.",
  ),
);
export type JobStoreFile = v.InferOutput<typeof JobStoreFileSchema>;

/** A job of another process, as this one answers for it. */
export interface RestoredJob {
  readonly record: JobRecord;
  /** The process that ran it. */
  readonly pid: number;
  /** When its process last wrote its file. */
  readonly updatedAt: string;
  /** Set when that process still runs: the job is its, and this is its last recorded state. */
  readonly heldBy: number | null;
}

/** What jobs are kept in: this process's own, written whole; the others', read once at start. */
export interface JobStore {
  /**
   * Reads every other process's jobs; removes the files of exited processes last written before `expiredBefore`,
   * and names their jobs' ids as expired.
   */
  restore(expiredBefore: number): Promise<{ jobs: Map<string, RestoredJob>; expired: string[] }>;
  /** Replaces this process's record of its jobs; throws a WardenError when it cannot. */
  save(jobs: readonly JobRecord[]): Promise<void>;
}

/** The job store in a directory of files, one per process. */
export class FileJobStore implements JobStore {
  readonly #dir: string;
  readonly #pid = platform().pid();
  readonly #startedAt = new Date().toISOString();
  readonly #file: string;
  /** Whether this process's file exists: a process that never had a job writes none. */
  #written = false;

  constructor(dir: string) {
    this.#dir = dir;
    this.#file = path.join(dir, `${this.#startedAt.replace(/[:.]/g, "-")}-${this.#pid}.json`);
  }

  /** This process's file. */
  get file(): string {
    return this.#file;
  }

  async restore(expiredBefore: number): Promise<{ jobs: Map<string, RestoredJob>; expired: string[] }> {
    let entries;
    try {
      entries = await platform().fs.readDir(this.#dir);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return { jobs: new Map(), expired: [] };
      throw new WardenError(
        "config_invalid",
        problem(`The job store ${this.#dir} cannot be read`, messageOf(error).split("\n")[0]),
      );
    }
    const restored = new Map<string, RestoredJob>();
    const expired: string[] = [];
    // Oldest first: the names start with the time their process started.
    const names = entries.filter((e) => e.kind === "file" && e.name.endsWith(".json")).map((e) => e.name).sort();
    for (const name of names) {
      const file = path.join(this.#dir, name);
      if (file === this.#file) continue;
      const stored = await readStoreFile(file);
      const running = stored.pid !== this.#pid && await platform().processRunning(stored.pid);
      if (!running && Date.parse(stored.updatedAt) < expiredBefore) {
        await platform().fs.remove(file);
        expired.push(...stored.jobs.map((job) => job.id));
        continue;
      }
      for (const record of stored.jobs) {
        restored.set(record.id, {
          record,
          pid: stored.pid,
          updatedAt: stored.updatedAt,
          heldBy: running ? stored.pid : null,
        });
      }
    }
    return { jobs: restored, expired };
  }

  async save(jobs: readonly JobRecord[]): Promise<void> {
    // Every server stops its queue on exit: one that never had a job leaves no file for the next to read.
    if (jobs.length === 0 && !this.#written) return;
    const file: JobStoreFile = {
      v: JOB_STORE_VERSION,
      pid: this.#pid,
      startedAt: this.#startedAt,
      updatedAt: new Date().toISOString(),
      jobs: [...jobs],
    };
    try {
      await platform().fs.mkdir(this.#dir);
      await platform().fs.writeFileAtomic(this.#file, JSON.stringify(file) + "\n");
      this.#written = true;
    } catch (error) {
      throw new WardenError(
        "config_invalid",
        problem(
          `The job store ${this.#file} cannot be written`,
          `${messageOf(error).split("\n")[0]}; give --jobs-dir a directory warden can write`,
        ),
      );
    }
  }
}

/** Reads and checks one store file; a file that does not parse is an error naming it. */
async function readStoreFile(file: string): Promise<JobStoreFile> {
  const refuse = (why: string): never => {
    throw new WardenError(
      "config_invalid",
      problem(
        `The job store file ${file} is not a job store`,
        `${why}; move it out of the directory (warden writes only files it can read back)`,
      ),
    );
  };
  let text = "";
  try {
    text = await platform().fs.readTextFile(file, MAX_STORE_BYTES);
  } catch (error) {
    refuse(messageOf(error).split("\n")[0]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    refuse(`its JSON does not parse (${messageOf(error)})`);
  }
  const parsed = v.safeParse(JobStoreFileSchema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = issue.path?.map((p) => String(p.key)).join(".") ?? "";
    refuse(`${where ? `at ${where}: ` : ""}${issue.message}`);
  }
  return parsed.output as JobStoreFile;
}
