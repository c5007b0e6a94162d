// A built-in tool that declares `job: true` is also served as a job:
// `<name>_start` takes the tool's own input schema, so it checks the
// arguments exactly as the tool does (and then the policy), records and
// queues the call, and answers at once; `<name>_result` answers for a job
// id, this process's or an earlier one's. The job runs as a governed call of
// the tool itself (its intent and call rows in the ledger), with the job time
// limit instead of the call's. Both tools are made here, for every such tool
// alike, so that they cannot drift from it.
import * as v from "valibot";
import type { CatalogEntry } from "../catalog.ts";
import type { CallOptions } from "../call/run.ts";
import { problem, WardenError } from "../errors.ts";
import { governedCall } from "../governance/governed_call.ts";
import type { Ledger } from "../governance/ledger.ts";
import { decide, type Policy } from "../governance/policy.ts";
import { checkTool, type LoadedTool } from "../loader.ts";
import { defineTool } from "../tool.ts";
import { JOB_ID, type JobLimits, type JobLookup, type JobQueue, type JobView } from "./queue.ts";

/** What a job's run needs of the host: the server's call options, with the job's own time limit. */
export interface JobRunOptions extends Omit<CallOptions, "signal" | "sendProgress" | "sendLog"> {
  readonly policy: Policy;
  readonly ledger: Ledger;
}

/**
 * The host's side of jobs. The catalog, job tools included, is built before
 * the queue and the call options exist, so they are attached once they do.
 */
export class JobHost {
  #attached:
    | { queue: JobQueue; limits: JobLimits; options: JobRunOptions; tools: ReadonlyMap<string, CatalogEntry> }
    | undefined;

  attach(queue: JobQueue, limits: JobLimits, options: JobRunOptions, tools: ReadonlyMap<string, CatalogEntry>): void {
    this.#attached = { queue, limits, options, tools };
  }

  #ready() {
    if (!this.#attached) {
      throw new WardenError("tool_failed", problem("Jobs are not available", "this command runs no job queue"));
    }
    return this.#attached;
  }

  /** Queues a call of `name`, whose arguments its own schema has checked: a policy refusal is an error now. */
  async start(name: string, args: Record<string, unknown>): Promise<JobView> {
    const { queue, options, tools } = this.#ready();
    const entry = tools.get(name)!;
    const refusal = decide(options.policy, entry);
    if (refusal) throw new WardenError(refusal.code, refusal.message);
    return await queue.start(
      name,
      args,
      // A governed call never rejects: its result, error or not, is the job's.
      (signal) => governedCall(entry, args, { ...options, signal }) as unknown as Promise<Record<string, unknown>>,
    );
  }

  lookup(id: string): JobLookup {
    return this.#ready().queue.lookup(id);
  }

  limits(): JobLimits & { timeoutMs: number } {
    const { limits, options } = this.#ready();
    return { ...limits, timeoutMs: options.timeoutMs };
  }
}

const JobState = v.picklist(["queued", "running", "done", "failed", "interrupted"]);
const Limits = v.object({
  concurrency: v.number(),
  queue: v.number(),
  retained: v.number(),
  retentionMs: v.number(),
  timeoutMs: v.number(),
});

/** The `<name>_start` and `<name>_result` tools of a built-in tool that declares `job: true`. */
export function jobTools(loaded: LoadedTool, jobs: JobHost): LoadedTool[] {
  const { tool } = loaded;
  const name = tool.name;
  const start = defineTool({
    name: `${name}_start`,
    title: `${tool.title}: start a job`,
    description:
      `Starts ${name} as a job and answers at once with its id, state and queue position. It takes ${name}'s arguments and checks them now, exactly as ${name} does, so a refused request is an error here, never a job that fails later. Ask ${name}_result for its state and, once done, its result. A job survives a restart of the server: one that was unfinished is then reported as interrupted, never run again.`,
    risk: tool.risk,
    input: tool.input,
    output: v.object({
      jobId: v.string(),
      state: JobState,
      request: v.record(v.string(), v.unknown()),
      limits: Limits,
      queuePosition: v.nullable(v.number()),
    }),
    handler: async (args: Record<string, unknown>) => {
      const job = await jobs.start(name, args);
      return {
        jobId: job.jobId,
        state: job.state,
        request: job.request,
        limits: jobs.limits(),
        queuePosition: job.queuePosition,
      };
    },
  });
  const result = defineTool({
    name: `${name}_result`,
    title: `${tool.title}: a job's result`,
    description:
      `Answers for a job ${name}_start began: queued (with its queue position), running, done (with ${name}'s result), failed (with why) or interrupted (its server exited first), and says whether an id has expired (finished jobs are kept for the job retention) or was never issued. Jobs of an earlier server process are marked restored; one another running server holds is marked heldBy.`,
    risk: "read",
    input: v.strictObject({
      jobId: v.pipe(
        v.string(),
        v.regex(JOB_ID, `a job id: job_ and 32 hex digits, as ${name}_start returns`),
        v.description(`The id ${name}_start returned.`),
      ),
    }),
    handler: ({ jobId }) => {
      const found = jobs.lookup(jobId);
      if (found.kind === "expired") {
        throw new WardenError(
          "not_found",
          problem(
            `Job ${jobId} has expired`,
            "a finished job is kept for the job retention, then removed",
            `start it again with ${name}_start`,
          ),
        );
      }
      if (found.kind === "unknown") {
        throw new WardenError(
          "not_found",
          problem(`No job ${jobId}`, "neither this server nor an earlier one whose jobs it keeps issued it"),
        );
      }
      return found.job;
    },
  });
  return [start, result].map((made) => {
    const checked = checkTool(`${made.name}.ts`, made);
    if (Array.isArray(checked)) throw new WardenError("tool_load_failed", checked.join("\n"));
    return { ...checked, file: loaded.file };
  });
}
