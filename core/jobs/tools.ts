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
import { checkTool, convert, type LoadedTool } from "../loader.ts";
import { type ApprovedRun, defineTool, TOOL_NAME_PATTERN } from "../tool.ts";
import { JOB_ID, type JobLimits, type JobLookup, type JobQueue, type JobView } from "./queue.ts";
import { JOB_STATES } from "./store.ts";
import { errorResult } from "../call/result.ts";
import { listResources, readResource, RESOURCE_TEMPLATES, type ResourceBody, type ResourceEntry } from "./resources.ts";

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

  /**
   * Queues a call of `name`, whose arguments its own schema has checked: a policy refusal is an error now. `approval`:
   * the approved plan it runs as (checks_submit), which its run's context carries.
   */
  async start(name: string, args: Record<string, unknown>, approval?: ApprovedRun): Promise<JobView> {
    const { queue, options, tools } = this.#ready();
    const entry = tools.get(name)!;
    const refusal = decide(options.policy, entry);
    if (refusal) throw new WardenError(refusal.code, refusal.message);
    // The operator's policy engine decided on the `<name>_start` call, for its caller; the run is not asked again
    // (it runs as the server's, whom the engine never judged).
    const policy = options.policy.engine === null ? options.policy : { ...options.policy, engine: null };
    return await queue.start(
      name,
      args,
      // A governed call never rejects: its result, error or not, is the job's. Its programs' output goes to the
      // job's report (ctx.spawn's `log`), the one door to it, which only a job's run is given.
      (signal, job, report) =>
        governedCall(entry, args, { ...options, policy, signal, job, report, approval }) as unknown as Promise<
          Record<string, unknown>
        >,
    );
  }

  /** Cancels job `id` if it is this server's and not finished; false otherwise. */
  cancel(id: string): boolean {
    return this.#ready().queue.cancel(id);
  }

  lookup(id: string): JobLookup {
    return this.#ready().queue.lookup(id);
  }

  /** As lookup, with the result of a restored job read from its report. */
  answer(id: string): Promise<JobLookup> {
    return this.#ready().queue.answer(id);
  }

  /** The report files of every job this server answers for, as MCP resources. */
  async resources(): Promise<ResourceEntry[]> {
    const { queue } = this.#ready();
    return queue.reports ? await listResources(queue.reports, queue.ids()) : [];
  }

  /** The URI templates of report files. */
  resourceTemplates(): readonly Record<string, string>[] {
    return RESOURCE_TEMPLATES;
  }

  /** One report file, fenced; a WardenError for a URI that names none (not_found for a job or file that is not there). */
  async readResource(uri: unknown): Promise<ResourceBody> {
    const { queue } = this.#ready();
    if (!queue.reports) {
      throw new WardenError("not_found", problem("No job reports", "this server keeps no report directories"));
    }
    return await readResource(queue.reports, (id) => queue.lookup(id), uri);
  }

  // The same jobs as MCP tasks (2025-11-25): a task-augmented tools/call of a job tool starts one, and
  // tasks/get, tasks/result, tasks/list and tasks/cancel answer for it by its id.

  /** The task `id`; a WardenError (not_found) for an expired or unknown one. */
  task(id: string): McpTask {
    return taskOf(this.#found(id), this.#ready().limits);
  }

  /** The task's result once it has finished (waiting for that): the tool's result, or an error result saying why not. */
  async taskResult(id: string): Promise<Record<string, unknown>> {
    await this.#ready().queue.finished(this.#found(id).jobId);
    const job = this.#known(id, await this.#ready().queue.answer(id));
    if (job.result) return job.result;
    const code = job.state === "cancelled" || job.state === "interrupted" ? "cancelled" : "tool_failed";
    return errorResult(code, job.reason ?? `the job ended ${job.state}`) as unknown as Record<string, unknown>;
  }

  tasks(): McpTask[] {
    const { queue, limits } = this.#ready();
    return queue.list().map((job) => taskOf(job, limits));
  }

  /** Cancels the task; a WardenError for one that has finished already or is not this server's. */
  cancelTask(id: string): McpTask {
    const job = this.#found(id);
    if (!this.#ready().queue.cancel(job.jobId)) {
      throw new WardenError(
        "invalid_arguments",
        problem(
          `Task ${id} cannot be cancelled`,
          job.heldBy ? `another server (pid ${job.heldBy}) runs it` : `it is ${job.state} already`,
        ),
      );
    }
    return this.task(id);
  }

  #found(id: string): JobView {
    return this.#known(id, this.lookup(id));
  }

  #known(id: string, found: JobLookup): JobView {
    if (found.kind === "job") return found.job;
    throw new WardenError(
      "not_found",
      found.kind === "expired"
        ? problem(`Task ${id} has expired`, "a finished task is kept for the job retention, then removed")
        : problem(`No task ${id}`, "neither this server nor an earlier one whose jobs it keeps issued it"),
    );
  }

  limits(): JobLimits & { timeoutMs: number } {
    const { limits, options } = this.#ready();
    return { ...limits, timeoutMs: options.timeoutMs };
  }
}

const JobState = v.picklist(JOB_STATES);
/** A task as MCP's tasks/get answers it. */
export interface McpTask {
  readonly taskId: string;
  readonly status: "working" | "completed" | "failed" | "cancelled";
  readonly statusMessage?: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ttl: number;
  readonly pollInterval: number;
}

/** How often a client is asked to poll a task, in ms. */
const POLL_INTERVAL_MS = 1000;

function taskOf(job: JobView, limits: JobLimits): McpTask {
  const status = job.state === "queued" || job.state === "running"
    ? "working"
    : job.state === "done"
    ? "completed"
    : job.state === "cancelled"
    ? "cancelled"
    : "failed";
  const message = job.reason ??
    (job.state === "queued" && job.queuePosition !== null
      ? `queued, position ${job.queuePosition}`
      : job.heldBy
      ? `held by the server with pid ${job.heldBy}`
      : undefined);
  return {
    taskId: job.jobId,
    status,
    ...(message !== undefined ? { statusMessage: message } : {}),
    createdAt: job.createdAt,
    lastUpdatedAt: job.finishedAt ?? job.startedAt ?? job.createdAt,
    ttl: limits.retentionMs,
    pollInterval: POLL_INTERVAL_MS,
  };
}

const Limits = v.object({
  concurrency: v.number(),
  queue: v.number(),
  retained: v.number(),
  retentionMs: v.number(),
  timeoutMs: v.number(),
});
/** What `<name>_start` answers; `request` is the tool's arguments as it will run with them, of its input's schema. */
const startOutputOf = (input: LoadedTool["tool"]["input"]) =>
  v.object({
    jobId: v.string(),
    state: JobState,
    request: input,
    limits: Limits,
    queuePosition: v.nullable(v.number()),
  });

/** The `<name>_start` and `<name>_result` tools of a built-in tool that declares `job: true`. */
export function jobTools(loaded: LoadedTool, jobs: JobHost): LoadedTool[] {
  const { tool } = loaded;
  const name = tool.name;
  const startOutput = startOutputOf(tool.input);
  const start = defineTool({
    name: `${name}_start`,
    title: `${tool.title}: start a job`,
    description:
      `Starts ${name} as a job and answers at once with its id, state and queue position. It takes ${name}'s arguments and checks them now, exactly as ${name} does, so a refused request is an error here, never a job that fails later. Ask ${name}_result for its state and, once done, its result. A job survives a restart of the server: one that was unfinished is then reported as interrupted, never run again. Its report (its result and the logs of the programs it ran) is served as MCP resources, warden://jobs/<jobId>/result.json and warden://jobs/<jobId>/logs/<name>.log (resources/list names them).`,
    risk: tool.risk,
    // Its precheck runs with the start's context: what the tool may run (git, to read a ref), it may.
    ...(tool.precheck && tool.capabilities ? { capabilities: tool.capabilities } : {}),
    input: tool.input,
    output: startOutput,
    handler: async (args: Record<string, unknown>, ctx) => {
      // What the tool refuses before it would run (a root, a manifest, a ref), it refuses now, with the start's context
      // (of the tool's own risk class: the start tool has it).
      await tool.precheck?.(args as never, ctx as never);
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
    handler: async ({ jobId }, ctx) => {
      const found = await jobs.answer(jobId);
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
      // The words the job's own result carries beside its data (its notes) reach the model here too, as blocks of
      // their own after this answer's JSON.
      const content = (found.job.result as { content?: unknown } | null)?.content;
      if (Array.isArray(content)) {
        for (const part of content.slice(1)) if (typeof part?.text === "string") ctx.note(part.text);
      }
      return found.job;
    },
  });
  const checked = checkTool(`${result.name}.ts`, result);
  if (Array.isArray(checked)) throw new WardenError("tool_load_failed", checked.join("\n"));
  if (!TOOL_NAME_PATTERN.test(start.name)) {
    throw new WardenError(
      "tool_load_failed",
      problem(loaded.file, `the job tool name "${start.name}" is too long`, "shorten the tool's name"),
    );
  }
  // The start tool takes the tool's own input: its JSON Schema was converted once already, with the tool.
  const started: LoadedTool = {
    file: loaded.file,
    tool: start,
    inputSchema: loaded.inputSchema,
    outputSchema: convert(startOutput),
  };
  return [started, { ...checked, file: loaded.file }];
}
