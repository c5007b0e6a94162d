// The approval desk: the requests of plans that wait for, or have had, an approver's decision (approvals.ts), one file
// each under the jobs directory, so that a restarted server answers for them. A request moves one way only:
// pending_approval → approved or rejected (or stale, when the repository's HEAD moved before anyone decided);
// approved → submitted, once, with the job it became; pending or approved → cancelled. Each step names the plan's
// digest as the requester was given it: any other is refused as a plan substitution.
import path from "node:path";
import { messageOf, problem, received, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { type Plan, planDigest } from "./approvals.ts";

export type RequestState = "pending_approval" | "approved" | "rejected" | "stale" | "submitted" | "cancelled";

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

const REQUEST_FILE = /^req_[0-9a-f]{32}\.json$/;
const MAX_REQUEST_BYTES = 1 << 20;

/** The refusal of a step, saying why and what to do. */
function refused(what: string, why: string, fix: string): WardenError {
  return new WardenError("approval_refused", problem(what, why, fix));
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

  /** Runs `step` on request `id` after the steps before it. */
  #serially<T>(id: string, step: () => Promise<T>): Promise<T> {
    const before = this.#steps.get(id) ?? Promise.resolve();
    const done = before.then(step, step);
    const settled = done.catch(() => {});
    this.#steps.set(id, settled);
    void settled.then(() => {
      if (this.#steps.get(id) === settled) this.#steps.delete(id);
    });
    return done;
  }

  async #write(request: ApprovalRequest): Promise<ApprovalRequest> {
    await platform().fs.mkdir(this.#dir);
    await platform().fs.writeFileAtomic(this.#file(request.plan.request_id), JSON.stringify(request, null, 2) + "\n");
    return request;
  }

  /** Files a new request for `plan`: pending, nothing runs. */
  open(plan: Plan): Promise<ApprovalRequest> {
    const now = this.#now().toISOString();
    return this.#serially(plan.request_id, () =>
      this.#write({
        plan,
        plan_digest: planDigest(plan),
        state: "pending_approval",
        created_at: now,
        updated_at: now,
        decider: null,
        job_id: null,
      }));
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
    const request = JSON.parse(text) as ApprovalRequest;
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
   * Approves or rejects a pending request. `head` is the repository's HEAD now: a plan whose HEAD moved is stale
   * (and stays so). The requester may not decide its own request by principal; a signature by an approver's key may.
   */
  decide(
    id: string,
    digest: string,
    decision: "approve" | "reject",
    decider: Decider,
    head: string,
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
      if (head !== request.plan.head) {
        await this.#write({ ...request, state: "stale", updated_at });
        throw refused(
          `Refused for request ${id}`,
          `the repository's HEAD moved (${request.plan.head.slice(0, 12)} → ${head.slice(0, 12)}): the plan is stale`,
          "request again for the new HEAD",
        );
      }
      return await this.#write({
        ...request,
        state: decision === "approve" ? "approved" : "rejected",
        updated_at,
        decider,
      });
    });
  }

  /**
   * Submits an approved request: `start` makes its job, once. Submitting again answers the same job without running
   * anything twice. `head` must still be the plan's.
   */
  submit(id: string, digest: string, head: string, start: (plan: Plan) => Promise<string>): Promise<ApprovalRequest> {
    return this.#serially(id, async () => {
      const request = await this.#named(id, digest);
      if (request.state === "submitted") return request;
      if (request.state !== "approved") {
        throw refused(`Refused for request ${id}`, `it is ${request.state}, not approved`, "have it approved first");
      }
      if (head !== request.plan.head) {
        await this.#write({ ...request, state: "stale", updated_at: this.#now().toISOString() });
        throw refused(
          `Refused for request ${id}`,
          "the repository's HEAD moved since it was approved: the plan is stale",
          "request again for the new HEAD",
        );
      }
      const job_id = await start(request.plan);
      return await this.#write({ ...request, state: "submitted", updated_at: this.#now().toISOString(), job_id });
    });
  }

  /** Cancels a request not yet submitted (a submitted one is cancelled as its job). */
  cancel(id: string, digest: string): Promise<ApprovalRequest> {
    return this.#serially(id, async () => {
      const request = await this.#named(id, digest);
      if (request.state !== "pending_approval" && request.state !== "approved") {
        throw refused(
          `Refused for request ${id}`,
          `it is ${request.state}`,
          request.state === "submitted" ? `cancel its job, ${request.job_id}` : "nothing to cancel",
        );
      }
      return await this.#write({ ...request, state: "cancelled", updated_at: this.#now().toISOString() });
    });
  }
}
