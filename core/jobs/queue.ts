// Jobs: calls that outlive their request. A start is checked and recorded
// before its id is given out, then queued; at most `concurrency` run at once,
// at most `queue` wait (a start beyond that is refused with the counts, never
// dropped), and finished jobs are kept `retained` at most and `retentionMs`
// at longest, oldest first. A running job is never pruned. Every change is
// saved to the store, so a restarted server answers for these ids.
import { messageOf, problem, WardenError } from "../errors.ts";
import type { JobRecord, JobState, JobStore, RestoredJob } from "./store.ts";
import { type JobReport, type JobReports, RESULT_FILE } from "./reports.ts";

export interface JobLimits {
  /** Jobs running at once. */
  readonly concurrency: number;
  /** Jobs waiting to run. */
  readonly queue: number;
  /** Finished jobs kept (done, failed, interrupted), oldest removed first. */
  readonly retained: number;
  /** How long a finished job is kept. */
  readonly retentionMs: number;
}

export const DEFAULT_JOB_LIMITS: JobLimits = Object.freeze({
  concurrency: 1,
  queue: 8,
  retained: 50,
  retentionMs: 3_600_000,
});

/**
 * Runs job `id`: its result (an MCP CallToolResult) or a throw; it stops when `signal` aborts. `report` is the job's
 * report, when the queue keeps reports: its logs take the output of the programs the job runs.
 */
export type JobRun = (signal: AbortSignal, id: string, report?: JobReport) => Promise<Record<string, unknown>>;

/** What a job's id answers. */
export type JobLookup =
  | { readonly kind: "job"; readonly job: JobView }
  | { readonly kind: "expired"; readonly id: string }
  | { readonly kind: "unknown"; readonly id: string };

/** A job as the tools return it. */
export interface JobView {
  readonly jobId: string;
  readonly tool: string;
  readonly state: JobState;
  readonly request: Record<string, unknown>;
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly result: Record<string, unknown> | null;
  readonly reason: string | null;
  /** 1 for the next to run; null unless queued. */
  readonly queuePosition: number | null;
  /** Set for a job of an earlier (or another) process. */
  readonly restored?: true;
  /** The process that ran it, for a restored job. */
  readonly pid?: number;
  /** The process that still holds it, when that process runs. */
  readonly heldBy?: number;
}

/** Ids given out look like this; anything else was never issued. */
export const JOB_ID = /^job_[0-9a-f]{32}$/;
/** Expired ids remembered, to tell "expired" from "never issued" (then the oldest are forgotten). */
const EXPIRED_REMEMBERED = 10_000;
const FINISHED: ReadonlySet<JobState> = new Set(["done", "failed", "interrupted", "cancelled"]);

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "job_" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** This process's jobs, and the earlier processes' it answers for. */
export class JobQueue {
  readonly #store: JobStore;
  readonly #limits: JobLimits;
  readonly #now: () => number;
  readonly #reports: JobReports | undefined;
  /** This process's jobs, oldest first. */
  readonly #jobs = new Map<string, JobRecord>();
  readonly #runs = new Map<string, JobRun>();
  readonly #running = new Map<string, AbortController>();
  #restored = new Map<string, RestoredJob>();
  /** What restore found for tidy() to remove. */
  #untidy: { expired: string[]; before: number } | undefined;
  readonly #expired = new Set<string>();
  /** Saves in order: each waits for the one before, so the file ends as the last change left it. */
  #saving: Promise<void> = Promise.resolve();
  /** This process's finished jobs whose result.json holds their result: the store keeps them without it. */
  readonly #resultInReport = new Set<string>();
  /** Who waits for a job of this process to finish, by id. */
  readonly #waiters = new Map<string, (() => void)[]>();
  #stopped = false;

  constructor(
    store: JobStore,
    limits: JobLimits = DEFAULT_JOB_LIMITS,
    now: () => number = Date.now,
    reports?: JobReports,
  ) {
    this.#store = store;
    this.#limits = limits;
    this.#now = now;
    this.#reports = reports;
  }

  /** Where each job's report is kept, when the queue keeps them. */
  get reports(): JobReports | undefined {
    return this.#reports;
  }

  /**
   * Reads the jobs of earlier processes: call once, at start, before answering for any. A job its process left
   * unfinished when it exited gets the result.json it never wrote, saying it was interrupted. The reports' housekeeping
   * waits for tidy().
   */
  async restore(): Promise<void> {
    const before = this.#now() - this.#limits.retentionMs;
    const { jobs, expired } = await this.#store.restore(before);
    this.#restored = jobs;
    for (const id of expired) this.#forget(id);
    this.#untidy = { expired, before };
    const reports = this.#reports;
    if (!reports) return;
    const interrupted = [...jobs.values()].filter(({ record, heldBy }) =>
      heldBy === null && (record.state === "queued" || record.state === "running")
    );
    for (const job of interrupted) {
      const files = await reports.files(job.record.id);
      if (!files.some((f) => f.file === RESULT_FILE)) {
        await reports.finish(job.record.id, { ...this.#restoredView(job) });
      }
    }
  }

  /**
   * Removes what restore found to go: the reports of expired jobs, and those no store knows older than retention (a
   * process killed between making a job's directory and recording the job leaves one). Nothing a job is asked for
   * waits on it: the server starts it after restore, unawaited (reading a thousand report directories costs ~20 ms).
   */
  async tidy(): Promise<void> {
    const reports = this.#reports;
    const untidy = this.#untidy;
    this.#untidy = undefined;
    if (!reports || !untidy) return;
    await Promise.all(untidy.expired.map((id) => reports.remove(id)));
    await reports.sweep(new Set([...this.#restored.keys(), ...this.#jobs.keys()]), untidy.before);
  }

  /**
   * Records and queues a job, or refuses it: a full queue, or a store that
   * cannot be written (then no id is given out). The job starts when a slot is free.
   */
  async start(tool: string, request: Record<string, unknown>, run: JobRun): Promise<JobView> {
    if (this.#stopped) {
      throw new WardenError("tool_failed", problem("No job can start", "the server is stopping"));
    }
    const queued = [...this.#jobs.values()].filter((j) => j.state === "queued").length;
    if (queued >= this.#limits.queue) {
      throw new WardenError(
        "too_large",
        problem(
          "The job queue is full",
          `${queued} jobs are waiting and ${this.#running.size} running (at most ${this.#limits.queue} wait); ` +
            `ask again once one has finished (${tool}_result), or raise --job-queue`,
        ),
      );
    }
    const record: JobRecord = {
      id: newId(),
      tool,
      request,
      state: "queued",
      createdAt: new Date(this.#now()).toISOString(),
      startedAt: null,
      finishedAt: null,
      result: null,
      reason: null,
    };
    this.#prune();
    // Its report directory and its record are made before the id is given out: a start the store cannot hold is
    // refused, not lost at a restart.
    const report = await this.#reports?.open(record.id);
    try {
      await this.#save([...this.#jobs.values(), record]);
    } catch (error) {
      await this.#reports?.remove(record.id);
      throw error;
    }
    this.#jobs.set(record.id, record);
    this.#runs.set(record.id, (signal, id) => run(signal, id, report));
    this.#next();
    return this.#view(this.#jobs.get(record.id)!);
  }

  /** What `id` answers: this process's job, a restored one, an expired id, or one never issued. */
  lookup(id: string): JobLookup {
    const own = this.#jobs.get(id);
    if (own) return { kind: "job", job: this.#view(own) };
    const restored = this.#restored.get(id);
    if (restored) return { kind: "job", job: this.#restoredView(restored) };
    return { kind: this.#expired.has(id) ? "expired" : "unknown", id };
  }

  /**
   * What `id` answers, with its result: as lookup, but a restored job whose result is kept in its report has it read
   * from there (a restart reads the records alone: a thousand results would cost it hundreds of ms).
   */
  async answer(id: string): Promise<JobLookup> {
    const found = this.lookup(id);
    const restored = this.#restored.get(id);
    if (found.kind !== "job" || !restored?.record.resultInReport) return found;
    try {
      if (!this.#reports) throw new Error("this server keeps no report directories");
      const kept = JSON.parse(new TextDecoder().decode(await this.#reports.read(id, RESULT_FILE)));
      if (kept?.jobId !== id || typeof kept.result !== "object" || kept.result === null) {
        throw new Error(`${RESULT_FILE} does not hold this job's result`);
      }
      return { kind: "job", job: { ...found.job, result: kept.result } };
    } catch (error) {
      return {
        kind: "job",
        job: {
          ...found.job,
          reason: `its result was kept in its report, which cannot be read now (${messageOf(error).split("\n")[0]})`,
        },
      };
    }
  }

  /** This process's jobs, oldest first. */
  list(): JobView[] {
    return [...this.#jobs.values()].map((record) => this.#view(record));
  }

  /** The ids this queue answers for: the earlier processes' jobs, then this process's, oldest first. */
  ids(): string[] {
    return [...this.#restored.keys(), ...this.#jobs.keys()];
  }

  /** Resolves once this process's job `id` has finished (at once when it has, or is not this process's). */
  finished(id: string): Promise<void> {
    const record = this.#jobs.get(id);
    if (!record || FINISHED.has(record.state)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.set(id, [...(this.#waiters.get(id) ?? []), resolve]));
  }

  /**
   * Cancels this process's job `id` at the client's request: a queued one never runs, a running one's signal aborts.
   * Returns false for a job that has finished, or is not this process's.
   */
  cancel(id: string): boolean {
    const record = this.#jobs.get(id);
    if (!record || FINISHED.has(record.state)) return false;
    const controller = this.#running.get(id);
    this.#running.delete(id);
    this.#runs.delete(id);
    this.#update(id, {
      state: "cancelled",
      reason: "cancelled by the client",
      finishedAt: new Date(this.#now()).toISOString(),
    });
    void this.#report(id);
    controller?.abort(new Error("cancelled by the client"));
    this.#next();
    return true;
  }

  /**
   * Stops every job: the running ones' signals abort (their process groups
   * are killed by their doors), and running or queued ones are interrupted.
   */
  async stop(reason: string): Promise<void> {
    this.#stopped = true;
    const at = new Date(this.#now()).toISOString();
    const interrupted: string[] = [];
    for (const record of this.#jobs.values()) {
      if (record.state === "queued" || record.state === "running") {
        this.#jobs.set(record.id, { ...record, state: "interrupted", finishedAt: at, reason });
        this.#running.get(record.id)?.abort(new Error(reason));
        interrupted.push(record.id);
      }
    }
    this.#runs.clear();
    this.#running.clear();
    for (const id of [...this.#waiters.keys()]) this.#wake(id);
    await Promise.all(interrupted.map((id) => this.#report(id)));
    await this.#save();
  }

  /** Jobs queued and running: for the start-up line and host_context. */
  counts(): { queued: number; running: number; finished: number; restored: number } {
    let queued = 0, finished = 0;
    for (const job of this.#jobs.values()) {
      if (job.state === "queued") queued++;
      else if (FINISHED.has(job.state)) finished++;
    }
    return { queued, running: this.#running.size, finished, restored: this.#restored.size };
  }

  #next(): void {
    for (const record of this.#jobs.values()) {
      if (this.#running.size >= this.#limits.concurrency) return;
      if (record.state !== "queued") continue;
      const run = this.#runs.get(record.id);
      this.#runs.delete(record.id);
      if (!run) continue;
      const controller = new AbortController();
      this.#running.set(record.id, controller);
      this.#update(record.id, { state: "running", startedAt: new Date(this.#now()).toISOString() });
      // A run that throws at once fails its job like one that rejects.
      void Promise.resolve().then(() => run(controller.signal, record.id)).then(
        (result) => this.#finish(record.id, controller, result.isError === true ? "failed" : "done", result, null),
        (error: unknown) =>
          this.#finish(record.id, controller, "failed", null, (error as Error)?.message ?? String(error)),
      );
    }
  }

  async #finish(
    id: string,
    controller: AbortController,
    state: JobState,
    result: Record<string, unknown> | null,
    reason: string | null,
  ): Promise<void> {
    // Stopped or cancelled meanwhile: it is interrupted or cancelled already.
    if (this.#running.get(id) !== controller) return;
    const fields = { state, result, reason, finishedAt: new Date(this.#now()).toISOString() };
    // Its report is written before its state changes: a client told "done" finds result.json whole.
    await this.#report(id, fields);
    if (this.#running.get(id) !== controller) return;
    this.#running.delete(id);
    this.#update(id, fields);
    this.#prune();
    this.#next();
  }

  /** Writes job `id`'s result.json: the job as it is, or as it will be with `fields`. */
  async #report(id: string, fields: Partial<JobRecord> = {}): Promise<void> {
    const record = this.#jobs.get(id);
    if (!record || !this.#reports) return;
    try {
      const view = this.#view({ ...record, ...fields });
      await this.#reports.finish(id, { ...view });
      if (view.result !== null) this.#resultInReport.add(id);
    } catch {
      // The job's answer is in the store: a report that could not be written loses its resource, not the job.
    }
  }

  #wake(id: string): void {
    for (const wake of this.#waiters.get(id) ?? []) wake();
    this.#waiters.delete(id);
  }

  #update(id: string, fields: Partial<JobRecord>): void {
    const record = this.#jobs.get(id);
    if (!record) return;
    this.#jobs.set(id, { ...record, ...fields });
    if (fields.state !== undefined && FINISHED.has(fields.state)) this.#wake(id);
    void this.#save().catch(() => {
      // A job already given out cannot be refused now; the store's next write may succeed.
    });
  }

  /** Removes finished jobs beyond retention: older than its time, then the oldest beyond its count. */
  #prune(): void {
    const before = this.#now() - this.#limits.retentionMs;
    const finished = [...this.#jobs.values()].filter((j) => FINISHED.has(j.state));
    let excess = finished.length - this.#limits.retained;
    for (const job of finished) {
      if (excess > 0 || Date.parse(job.finishedAt ?? job.createdAt) < before) {
        this.#jobs.delete(job.id);
        this.#forget(job.id);
        void this.#reports?.remove(job.id);
        excess--;
      }
    }
    for (const [id, restored] of this.#restored) {
      if (restored.heldBy === null && Date.parse(restored.updatedAt) < before) {
        this.#restored.delete(id);
        this.#forget(id);
        void this.#reports?.remove(id);
      }
    }
  }

  #forget(id: string): void {
    this.#resultInReport.delete(id);
    if (this.#expired.size >= EXPIRED_REMEMBERED) this.#expired.delete(this.#expired.values().next().value!);
    this.#expired.add(id);
  }

  #save(jobs: JobRecord[] = [...this.#jobs.values()]): Promise<void> {
    const records = jobs.map((job) =>
      job.result !== null && this.#resultInReport.has(job.id)
        ? { ...job, result: null, resultInReport: true as const }
        : job
    );
    this.#saving = this.#saving.catch(() => {}).then(() => this.#store.save(records));
    return this.#saving;
  }

  #view(record: JobRecord): JobView {
    let position: number | null = null;
    if (record.state === "queued") {
      position = 0;
      for (const job of this.#jobs.values()) {
        if (job.state === "queued") position++;
        if (job.id === record.id) break;
      }
    }
    return {
      jobId: record.id,
      tool: record.tool,
      state: record.state,
      request: record.request,
      createdAt: record.createdAt,
      startedAt: record.startedAt,
      finishedAt: record.finishedAt,
      result: record.result,
      reason: record.reason,
      queuePosition: position,
    };
  }

  /** An earlier process's job: as it left it if that process still runs, else interrupted where it was unfinished. */
  #restoredView({ record, pid, updatedAt, heldBy }: RestoredJob): JobView {
    const unfinished = record.state === "queued" || record.state === "running";
    const interrupted = unfinished && heldBy === null;
    return {
      ...this.#view(record),
      queuePosition: null,
      ...(interrupted
        ? {
          state: "interrupted" as const,
          reason: `its server (pid ${pid}) exited while it was ${record.state}; last recorded ${updatedAt}`,
        }
        : {}),
      restored: true,
      pid,
      ...(heldBy !== null ? { heldBy } : {}),
    };
  }
}
