// The approval desk: the requests of plans that wait for, or have had, an approver's decision (approvals.ts), one file
// each under the jobs directory, so that a restarted server answers for them. A request moves one way only:
// pending_approval → approved or rejected (or stale, when the repository moved before anyone decided);
// approved → submitted, once, with the job it became (or stale, when it moved since); pending, approved or submitted
// → cancelled (a submitted one's job with it). Each step names the plan's digest as the requester was given it: any
// other is refused as a plan substitution.
import path from "node:path";
import { messageOf, problem, received, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { type Plan, planDigest, type PlanState, stateMoved } from "./approvals.ts";
import type { APPROVAL_STATES } from "./ledger.ts";

/** A request's state, as its ledger rows name it too. */
export type RequestState = (typeof APPROVAL_STATES)[number];

/** Who decided, and how: an HTTP principal on the approvers' list, or an approver's SSH signature (kept). */
export interface Decider {
  readonly principal: string;
  readonly via: "principal" | "signature";
  /** The signing key's fingerprint, for a signature. */
  readonly fingerprint: string | null;
  /** The armored signature, so that the approval can be checked again later from it and the digest alone. */
  readonly signature: string | null;
}

/** A request, as its file holds it. */
export interface ApprovalRequest {
  readonly plan: Plan;
  readonly plan_digest: string;
  readonly state: RequestState;
  readonly created_at: string;
  readonly updated_at: string;
  readonly decider: Decider | null;
  /** The job the approved plan became, once submitted. */
  readonly job_id: string | null;
}

/** Told of a request's new state once its file says it (a ledger row for each). */
export type Settled = (request: ApprovalRequest) => Promise<void>;

const REQUEST_FILE = /^req_[0-9a-f]{32}\.json$/;
const MAX_REQUEST_BYTES = 1 << 20;
/** Longest a step waits for another process's step on the same request. */
const CLAIM_WAIT_MS = 10_000;
/** Age past which a claim is taken over whoever holds it: a step reads and writes a few small files. */
const CLAIM_LEASE_MS = 30_000;

/** The refusal of a step, saying why and what to do. */
function refused(what: string, why: string, fix: string): WardenError {
  return new WardenError("approval_refused", problem(what, why, fix));
}

/** The desk of a server whose jobs are kept in `jobsDir`. */
export function approvalDeskIn(jobsDir: string): ApprovalDesk {
  return new ApprovalDesk(path.join(jobsDir, "approvals"));
}

export class ApprovalDesk {
  readonly #dir: string;
  /** Steps of one request run one after another in this process (a second submit waits for the first). */
  readonly #steps = new Map<string, Promise<unknown>>();
  readonly #now: () => Date;

  constructor(dir: string, now: () => Date = () => new Date()) {
    this.#dir = dir;
    this.#now = now;
  }

  #file(id: string): string {
    if (!REQUEST_FILE.test(`${id}.json`)) {
      throw new WardenError(
        "invalid_arguments",
        problem("Invalid request_id", `expected req_ and 32 lowercase hex digits, received ${received(id)}`),
      );
    }
    return path.join(this.#dir, `${id}.json`);
  }

  /**
   * Runs `step` on request `id` after the steps before it, in this process and in every process that shares the
   * directory (replicas of one server): each step reads the request under a claim of its own, so two replicas never
   * both approve, or both submit, one request.
   */
  #serially<T>(id: string, step: () => Promise<T>): Promise<T> {
    const claimed = () => this.#claimed(id, step);
    const before = this.#steps.get(id) ?? Promise.resolve();
    const done = before.then(claimed, claimed);
    const settled = done.catch(() => {});
    this.#steps.set(id, settled);
    void settled.then(() => {
      if (this.#steps.get(id) === settled) this.#steps.delete(id);
    });
    return done;
  }

  /**
   * Runs `step` holding `<id>.lock`, a file created exclusively with this step's token. A claim whose process has
   * died, that is older than CLAIM_LEASE_MS (a step takes milliseconds: its holder is gone, or is another machine's or
   * container's process with the same pid), or that does not read, is taken over; a live one is waited for, up to
   * CLAIM_WAIT_MS, then the step is refused. The claim is removed only while it is still this step's.
   */
  async #claimed<T>(id: string, step: () => Promise<T>): Promise<T> {
    const file = this.#file(id).replace(/\.json$/, ".lock");
    const pid = platform().pid();
    const token = crypto.randomUUID();
    /** The claim there now: null when there is none, `{}` when it does not read (then it is abandoned). */
    const read = async (): Promise<{ pid?: unknown; token?: unknown; at?: unknown } | null> => {
      try {
        return JSON.parse(await platform().fs.readTextFile(file, 4096)) ?? {};
      } catch (error) {
        return (error as { code?: unknown }).code === "ENOENT" ? null : {};
      }
    };
    await platform().fs.mkdir(this.#dir);
    for (const until = Date.now() + CLAIM_WAIT_MS;;) {
      try {
        await platform().fs.writeFileExclusive(file, JSON.stringify({ pid, token, at: Date.now() }));
        break;
      } catch (error) {
        if ((error as { code?: unknown }).code !== "EEXIST") throw error;
      }
      const holder = await read();
      if (holder === null) continue;
      const abandoned = typeof holder.pid !== "number" || typeof holder.at !== "number" ||
        Date.now() - holder.at > CLAIM_LEASE_MS ||
        (holder.pid !== pid && !(await platform().processRunning(holder.pid)));
      if (abandoned) {
        // Only the claim judged abandoned: another waiter may have taken it over and made its own meanwhile.
        if ((await read())?.token === holder.token) await platform().fs.remove(file);
        continue;
      }
      if (Date.now() > until) {
        throw refused(
          `Request ${id} is busy`,
          `another server (pid ${holder.pid}) is taking a step on it`,
          "ask checks_status in a moment, then try again",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    try {
      return await step();
    } finally {
      if ((await read())?.token === token) await platform().fs.remove(file);
    }
  }

  async #write(request: ApprovalRequest): Promise<ApprovalRequest> {
    await platform().fs.writeFileAtomic(this.#file(request.plan.request_id), JSON.stringify(request, null, 2) + "\n");
    return request;
  }

  /** Files a new request for `plan`: pending, nothing runs. */
  open(plan: Plan, settled: Settled = () => Promise.resolve()): Promise<ApprovalRequest> {
    const now = this.#now().toISOString();
    return this.#serially(plan.request_id, async () => {
      const opened = await this.#write({
        plan,
        plan_digest: planDigest(plan),
        state: "pending_approval",
        created_at: now,
        updated_at: now,
        decider: null,
        job_id: null,
      });
      await settled(opened);
      return opened;
    });
  }

  /** The request `id`; `not_found` when this desk never filed it (or it was removed). */
  async get(id: string): Promise<ApprovalRequest> {
    let text: string;
    try {
      text = await platform().fs.readTextFile(this.#file(id), MAX_REQUEST_BYTES);
    } catch (error) {
      if (error instanceof WardenError) throw error;
      if ((error as { code?: unknown }).code === "ENOENT") {
        throw new WardenError("not_found", `No approval request ${received(id)}: checks_request gives one`);
      }
      throw new WardenError("tool_failed", `The approval request ${id} cannot be read: ${messageOf(error)}`);
    }
    let request: ApprovalRequest;
    try {
      request = JSON.parse(text) as ApprovalRequest;
      planDigest(request.plan);
    } catch {
      throw new WardenError("tool_failed", `The approval request ${id} cannot be read: its file is not a request`);
    }
    // A file edited by hand, its plan changed: its digest no longer says what it is.
    if (planDigest(request.plan) !== request.plan_digest) {
      throw new WardenError("tool_failed", `The approval request ${id} was altered: its plan no longer has its digest`);
    }
    return request;
  }

  /** The request, checked to be the one `digest` names. */
  async #named(id: string, digest: string): Promise<ApprovalRequest> {
    const request = await this.get(id);
    if (digest !== request.plan_digest) {
      throw refused(
        `Refused for request ${id}`,
        `plan_digest ${received(digest)} is not this request's plan (plan substitution)`,
        "echo the plan_digest checks_request answered, exactly",
      );
    }
    return request;
  }

  /**
   * Approves or rejects a pending request. `now` is what the repository is now: a plan whose state moved is stale
   * (and stays so). The requester may not decide its own request by principal; a signature by an approver's key may.
   * `settled` is told of every change of state, a stale one too, before the request is answered or refused.
   */
  decide(
    id: string,
    digest: string,
    decision: "approve" | "reject",
    decider: Decider,
    now: PlanState,
    settled: Settled = () => Promise.resolve(),
  ): Promise<ApprovalRequest> {
    return this.#serially(id, async () => {
      const request = await this.#named(id, digest);
      if (request.state !== "pending_approval") {
        throw refused(`Refused for request ${id}`, `it is ${request.state}, not pending_approval`, "request again");
      }
      if (decider.via === "principal" && decider.principal === request.plan.requested_by) {
        throw refused(
          `Refused for request ${id}`,
          `${decider.principal} requested it, and may not approve its own request`,
          "have another approver decide, or sign the plan_digest with an approver's key (warden approve)",
        );
      }
      const updated_at = this.#now().toISOString();
      await this.#staleIf(request, now, settled, "request again for the repository as it is now");
      const decided = await this.#write({
        ...request,
        state: decision === "approve" ? "approved" : "rejected",
        updated_at,
        decider,
      });
      await settled(decided);
      return decided;
    });
  }

  /** Marks `request` stale and refuses, when the repository is not what its plan says. */
  async #staleIf(request: ApprovalRequest, now: PlanState, settled: Settled, fix: string): Promise<void> {
    const moved = stateMoved(request.plan, now);
    if (moved === null) return;
    const stale = await this.#write({ ...request, state: "stale", updated_at: this.#now().toISOString() });
    await settled(stale);
    throw refused(
      `Refused for request ${request.plan.request_id}`,
      `the plan is stale: ${moved} since it was requested`,
      fix,
    );
  }

  /**
   * Submits an approved request: `start` makes its job, once. Submitting again answers the same job without running
   * anything twice (`resubmitted` true). `now` must still be what the plan says.
   */
  submit(
    id: string,
    digest: string,
    now: PlanState,
    start: (request: ApprovalRequest) => Promise<string>,
    settled: Settled = () => Promise.resolve(),
    abandon: (jobId: string) => void = () => {},
  ): Promise<{ request: ApprovalRequest; resubmitted: boolean }> {
    return this.#serially(id, async () => {
      const request = await this.#named(id, digest);
      if (request.state === "submitted") return { request, resubmitted: true };
      if (request.state !== "approved") {
        throw refused(
          `Refused for request ${id}`,
          `it is ${request.state}, not approved`,
          request.state === "pending_approval" ? "have an approver approve it first (checks_approve)" : "request again",
        );
      }
      await this.#staleIf(request, now, settled, "request again, and have the new plan approved");
      const job_id = await start(request);
      let submitted: ApprovalRequest;
      try {
        submitted = await this.#write({
          ...request,
          state: "submitted",
          updated_at: this.#now().toISOString(),
          job_id,
        });
      } catch (error) {
        // Still approved on disk: its job must not run beside the one a later submit would start.
        abandon(job_id);
        throw error;
      }
      await settled(submitted);
      return { request: submitted, resubmitted: false };
    });
  }

  /**
   * Cancels a request that has not ended: pending, approved, or submitted (then `stopJob` cancels its job, and says
   * whether it still ran).
   */
  cancel(
    id: string,
    digest: string,
    stopJob: (jobId: string) => void,
    settled: Settled = () => Promise.resolve(),
  ): Promise<ApprovalRequest> {
    return this.#serially(id, async () => {
      const request = await this.#named(id, digest);
      if (!["pending_approval", "approved", "submitted"].includes(request.state)) {
        throw refused(`Refused for request ${id}`, `it is ${request.state} already`, "nothing to cancel");
      }
      if (request.state === "submitted" && request.job_id !== null) stopJob(request.job_id);
      const cancelled = await this.#write({ ...request, state: "cancelled", updated_at: this.#now().toISOString() });
      await settled(cancelled);
      return cancelled;
    });
  }
}
