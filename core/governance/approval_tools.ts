// The narrow path of runs that must not happen on an agent's say-so (issue 19): checks_request fixes a plan and its
// digest, checks_approve takes an approver's decision on exactly that digest, checks_submit hands the approved plan
// to the job queue once, checks_status and checks_cancel complete it. They are made here, from run_checks (the tool
// whose runs they govern: its input, its precheck, its planState), like the job tools, because they need what no
// tool's context holds: the desk, the caller's principal, the approvers, the queue and the ledger.
import * as v from "valibot";
import { messageOf, problem, WardenError } from "../errors.ts";
import { principalOf } from "../context.ts";
import { log } from "../log.ts";
import { checkTool, type LoadedTool } from "../loader.ts";
import type { JobHost } from "../jobs/tools.ts";
import { defineTool, type GateContext, type ReadContext } from "../tool.ts";
import type { TrustStore } from "../plugins/trust/discover.ts";
import type { ApprovalDesk, ApprovalRequest, Decider } from "./approval_desk.ts";
import { APPROVAL_NAMESPACE, APPROVED_TOOL, newRequestId, type Plan, type PlanState } from "./approvals.ts";
import type { Decision } from "./approval_signatures.ts";
import { APPROVAL_STATES, type Ledger } from "./ledger.ts";

/** The names of the approval tools: a plugin may not take them. */
export const APPROVAL_TOOL_NAMES = [
  "checks_request",
  "checks_approve",
  "checks_submit",
  "checks_status",
  "checks_cancel",
] as const;

/** Who may approve, as the operator configured it. */
export interface ApprovalSettings {
  /** HTTP principals (`--approvers`). */
  readonly approvers: readonly string[];
  /**
   * The approvers' allowed_signers file (`--approvers-signers`; null when its default cannot be placed: no HOME) and
   * the revoked keys (`--revoked-keys`).
   */
  readonly signersFile: string | null;
  readonly revokedKeysFile: string;
}

/** The host's side of approvals; attached once the job queue is open (after the initialize answer). */
export class ApprovalHost {
  #attached:
    | { desk: ApprovalDesk; jobs: JobHost; ledger: Ledger; settings: ApprovalSettings }
    | undefined;

  attach(desk: ApprovalDesk, jobs: JobHost, ledger: Ledger, settings: ApprovalSettings): void {
    this.#attached = { desk, jobs, ledger, settings };
  }

  ready() {
    if (!this.#attached) {
      throw new WardenError("tool_failed", problem("Approvals are not available", "this command runs no job queue"));
    }
    return this.#attached;
  }
}

const RequestId = v.pipe(
  v.string(),
  v.regex(/^req_[0-9a-f]{32}$/, "a request id: req_ and 32 hex digits, as checks_request returns"),
  v.description("The request_id checks_request returned."),
);
const PlanDigest = v.pipe(
  v.string(),
  v.maxLength(100),
  v.description("The plan_digest checks_request returned, exactly: any other is refused as a plan substitution."),
);

const RequestView = v.object({
  request_id: v.string(),
  plan_digest: v.pipe(v.string(), v.description("sha256 of the plan's canonical JSON: what an approver signs.")),
  state: v.picklist(APPROVAL_STATES),
  plan: v.object({
    project_id: v.string(),
    group: v.string(),
    filters: v.pipe(
      v.record(v.string(), v.union([v.string(), v.array(v.string())])),
      v.description("run_checks's arguments besides project_id and group."),
    ),
    head: v.string(),
    tree: v.string(),
    worktree: v.string(),
    manifest_sha256: v.nullable(v.string()),
    requested_by: v.nullable(v.string()),
  }),
  created_at: v.string(),
  updated_at: v.string(),
  decider: v.nullable(v.object({
    principal: v.string(),
    via: v.picklist(["principal", "signature"]),
    fingerprint: v.nullable(v.string()),
  })),
  job_id: v.nullable(v.string()),
  next: v.pipe(v.string(), v.description("What to do next, in a sentence.")),
});
type RequestViewValue = v.InferOutput<typeof RequestView>;

/** What to do next with a request in `state`. */
function nextStep(request: ApprovalRequest): string {
  const id = request.plan.request_id;
  switch (request.state) {
    case "pending_approval":
      return `An approver approves plan_digest ${request.plan_digest}: over HTTP one of --approvers calls checks_approve; anywhere, one runs "warden approve ${id} --key <their key>" where the server keeps its jobs (or signs "approve ${request.plan_digest}" with ssh-keygen -Y sign -n ${APPROVAL_NAMESPACE}) and checks_approve is called with that signature. Nothing runs before.`;
    case "approved":
      return `Approved: checks_submit with request_id and plan_digest starts its run, once.`;
    case "submitted":
      return `Submitted as job ${request.job_id}: run_checks_result answers for it (a run that finds the repository moved since the plan fails without running: request again).`;
    case "rejected":
      return "Rejected by an approver: nothing will run. Request again to ask anew.";
    case "stale":
      return "Stale: the repository moved since the plan was made. Request again for the repository as it is now.";
    case "cancelled":
      return "Cancelled: nothing more will run.";
  }
}

function viewOf(request: ApprovalRequest): RequestViewValue {
  const { request_id: _id, ...plan } = request.plan;
  return {
    request_id: request.plan.request_id,
    plan_digest: request.plan_digest,
    state: request.state,
    // run_checks's arguments, as its schema checked them: strings and lists of strings.
    plan: { ...plan, filters: { ...plan.filters } as Record<string, string | string[]> },
    created_at: request.created_at,
    updated_at: request.updated_at,
    decider: request.decider &&
      { principal: request.decider.principal, via: request.decider.via, fingerprint: request.decider.fingerprint },
    job_id: request.job_id,
    next: nextStep(request),
  };
}

/** The run's arguments a plan stands for. */
function argumentsOf(plan: Plan): Record<string, unknown> {
  return { ...plan.filters, project_id: plan.project_id, group: plan.group };
}

/** The approval tools for `run` (run_checks: a job tool with a planState). */
export function approvalTools(run: LoadedTool, jobs: JobHost, host: ApprovalHost): LoadedTool[] {
  const { tool } = run;
  const planState = tool.planState as ((args: unknown, ctx: GateContext) => Promise<PlanState>) | undefined;
  const precheck = tool.precheck as ((args: unknown, ctx: GateContext) => Promise<void>) | undefined;
  if (!planState || tool.job !== true) {
    throw new WardenError("tool_load_failed", problem(run.file, "approvals need a job tool with a planState"));
  }
  const capabilities = tool.capabilities ? { capabilities: tool.capabilities } : {};
  // run_checks's arguments, less its paging: a plan is of a run, not of a page of its answer.
  const { limit: _limit, cursor: _cursor, ...runEntries } = tool.input.entries;
  const requestInput = v.strictObject(runEntries);

  /** Writes the row of a request's new state; a row that cannot be written is said in the result. */
  const settledBy = (ctx: GateContext | ReadContext) => async (request: ApprovalRequest) => {
    const decided = request.state === "approved" || request.state === "rejected";
    const written = await host.ready().ledger.approval({
      request: request.plan.request_id,
      planDigest: request.plan_digest,
      state: request.state,
      principal: principalOf(ctx),
      projectId: request.plan.project_id,
      approver: decided && request.decider
        ? {
          principal: request.decider.principal,
          via: request.decider.via,
          fingerprint: request.decider.fingerprint,
        }
        : null,
      signature: decided ? request.decider?.signature ?? null : null,
      job: request.state === "submitted" ? request.job_id : null,
    });
    if (!written.ok) ctx.note(`warning: the ledger row of this step was not written: ${written.error}`);
  };

  const request = defineTool({
    name: "checks_request",
    title: "Checks: request an approved run",
    description:
      `Asks for a run_checks run that must not happen on an agent's say-so (a group the operator or the repository's manifest marks approval: required). It takes run_checks's arguments, refuses now what run_checks would refuse, and fixes an immutable plan: the project, group and filters, the repository's HEAD commit and tree, its uncommitted changes and the check manifest's bytes, hashed into plan_digest. State pending_approval: nothing runs until an approver approves that exact digest (checks_approve) and it is submitted (checks_submit). Any change to the repository before then makes the plan stale.`,
    risk: "gate",
    ...capabilities,
    input: requestInput,
    output: v.object({
      ...RequestView.entries,
      approval_required: v.pipe(
        v.nullable(v.string()),
        v.description("Why run_checks refuses this run without an approved plan; null when it would run it anyway."),
      ),
    }),
    handler: async (args: Record<string, unknown>, ctx: GateContext) => {
      const { desk } = host.ready();
      let required: string | null = null;
      try {
        await precheck?.(args, ctx);
      } catch (error) {
        // The one refusal this path exists for: every other (a manifest, a root, a range) stands.
        if (!(error instanceof WardenError) || error.code !== "approval_required") throw error;
        required = error.message;
      }
      const state = await planState(args, ctx);
      const { project_id, group, ...filters } = args as { project_id: string; group?: string };
      const plan: Plan = {
        request_id: newRequestId(),
        project_id,
        group: group ?? "default",
        filters,
        ...state,
        requested_by: principalOf(ctx),
      };
      const opened = await desk.open(plan, settledBy(ctx));
      return { ...viewOf(opened), approval_required: required };
    },
  });

  const approve = defineTool({
    name: "checks_approve",
    title: "Checks: approve or reject a plan",
    description:
      `An approver's decision on a pending plan. It must echo the request's exact plan_digest (any other is refused as a plan substitution) and carry an approver's identity: a \`signature\` of "approve <plan_digest>" (or "reject <plan_digest>") by a key in the approvers' allowed_signers file (namespace ${APPROVAL_NAMESPACE}: \`warden approve <request_id> --key <key>\` prints one), on any transport; or, over HTTP, a caller who is one of the operator's --approvers. The requester cannot approve its own request without an approver's key. A plan whose repository moved is stale and cannot be approved.`,
    risk: "gate",
    ...capabilities,
    input: v.strictObject({
      request_id: RequestId,
      plan_digest: PlanDigest,
      decision: v.pipe(v.picklist(["approve", "reject"]), v.description("approve or reject.")),
      signature: v.optional(v.pipe(
        v.string(),
        v.maxLength(16384),
        v.description(
          `An SSH signature (-----BEGIN SSH SIGNATURE-----) of the text "<decision> <plan_digest>" (approve sha256:…) in namespace ${APPROVAL_NAMESPACE}, as warden approve or ssh-keygen -Y sign makes it: a signature of one decision never stands for the other.`,
        ),
      )),
    }),
    output: RequestView,
    handler: async ({ request_id, plan_digest, decision, signature }, ctx: GateContext) => {
      const { desk, settings } = host.ready();
      const pending = await desk.get(request_id);
      const decider = await deciderOf(ctx, settings, decision, plan_digest, signature);
      const now = await planState(argumentsOf(pending.plan), ctx);
      return viewOf(await desk.decide(request_id, plan_digest, decision, decider, now, settledBy(ctx)));
    },
  });

  const submit = defineTool({
    name: "checks_submit",
    title: "Checks: submit an approved plan",
    description:
      "Hands an approved plan to the job queue as a run_checks job and answers with its job id (run_checks_result answers for it). Idempotent: submitting again, even after a restart, answers the same job and runs nothing twice. The repository must still be what the plan says (else the plan is stale), and the run checks it again before it starts.",
    risk: "gate",
    ...capabilities,
    input: v.strictObject({ request_id: RequestId, plan_digest: PlanDigest }),
    output: v.object({
      ...RequestView.entries,
      resubmitted: v.pipe(
        v.boolean(),
        v.description("True when it was submitted before: the same job, not a new one."),
      ),
    }),
    handler: async ({ request_id, plan_digest }, ctx: GateContext) => {
      const { desk, settings } = host.ready();
      const approved = await desk.get(request_id);
      const now = await planState(argumentsOf(approved.plan), ctx);
      const submitted = await desk.submit(
        request_id,
        plan_digest,
        now,
        async (request) => {
          // The approval holds now, not only when it was given: an approver since removed or a key since revoked
          // approves nothing, and neither does a request file written by hand.
          await recheckDecider(request, settings);
          const job = await jobs.start(APPROVED_TOOL, argumentsOf(request.plan), {
            requestId: request.plan.request_id,
            planDigest: request.plan_digest,
            plan: request.plan,
          });
          return job.jobId;
        },
        settledBy(ctx),
        (job) => void jobs.cancel(job),
      );
      return { ...viewOf(submitted.request), resubmitted: submitted.resubmitted };
    },
  });

  const status = defineTool({
    name: "checks_status",
    title: "Checks: a request's state",
    description:
      "Answers for a request checks_request made, this server's or an earlier one's: its state (pending_approval, approved, rejected, stale, submitted, cancelled), its plan and digest, who decided, its job once submitted, and what to do next.",
    risk: "read",
    input: v.strictObject({ request_id: RequestId }),
    output: RequestView,
    handler: async ({ request_id }) => viewOf(await host.ready().desk.get(request_id)),
  });

  const cancel = defineTool({
    name: "checks_cancel",
    title: "Checks: cancel a request",
    description:
      "Cancels a request that has not ended (pending, approved, or submitted: then its job is cancelled too, if it has not finished). It must echo the request's plan_digest.",
    risk: "gate",
    input: v.strictObject({ request_id: RequestId, plan_digest: PlanDigest }),
    output: RequestView,
    handler: async ({ request_id, plan_digest }, ctx: GateContext) => {
      const { desk } = host.ready();
      let stopped: { job: string; stopped: boolean } | undefined;
      const cancelled = await desk.cancel(
        request_id,
        plan_digest,
        (job) => void (stopped = { job, stopped: jobs.cancel(job) }),
        settledBy(ctx),
      );
      if (stopped && !stopped.stopped) {
        ctx.note(
          `Job ${stopped.job} was not stopped: it has finished, or another server runs it (run_checks_result says which).`,
        );
      }
      return viewOf(cancelled);
    },
  });

  return [request, approve, submit, status, cancel].map((made) => {
    const checked = checkTool(`${made.name}.ts`, made);
    if (Array.isArray(checked)) throw new WardenError("tool_load_failed", checked.join("\n"));
    return { ...checked, file: run.file };
  });
}

/** The approvers' file reader and the signature check: loaded with the first signature, never at startup. */
async function signatureCode() {
  const [{ readTrustStore }, { verifyApproval }] = await Promise.all([
    import("../plugins/trust/discover.ts"),
    import("./approval_signatures.ts"),
  ]);
  return { readTrustStore, verifyApproval };
}

/** Refuses an approved request whose decider is not an approver now (`approval_refused`, saying why). */
async function recheckDecider(request: ApprovalRequest, settings: ApprovalSettings): Promise<void> {
  const decider = request.decider;
  const refusedNow = (why: string) =>
    new WardenError(
      "approval_refused",
      problem(`Refused for request ${request.plan.request_id}`, why, "have an approver approve a new request"),
    );
  if (decider === null) throw refusedNow("it records no approver");
  if (decider.via === "principal") {
    if (!settings.approvers.includes(decider.principal)) {
      throw refusedNow(`${decider.principal}, who approved it, is no longer one of the operator's approvers`);
    }
    if (decider.principal === request.plan.requested_by) {
      throw refusedNow(`${decider.principal} approved its own request`);
    }
    return;
  }
  if (decider.signature === null || settings.signersFile === null) {
    throw refusedNow("its approver's signature cannot be checked");
  }
  const { readTrustStore, verifyApproval } = await signatureCode();
  const store = await readTrustStore({
    allowedSignersFile: settings.signersFile,
    revokedKeysFile: settings.revokedKeysFile,
  })
    .catch(() => {
      throw refusedNow("the approvers' allowed_signers file cannot be read");
    });
  await verifyApproval("approve", request.plan_digest, decider.signature, store.signers, store.revoked, new Date())
    .catch(
      (error) => {
        throw refusedNow(`its approval no longer holds: ${messageOf(error).replace(/^The approval is refused: /, "")}`);
      },
    );
}

/** Who decides: an approver's signature (any transport), or an HTTP caller on the approvers' list. */
async function deciderOf(
  ctx: GateContext,
  settings: ApprovalSettings,
  decision: Decision,
  digest: string,
  signature: string | undefined,
): Promise<Decider> {
  if (signature !== undefined) {
    if (settings.signersFile === null) {
      throw new WardenError(
        "approval_refused",
        problem(
          "The approval is refused",
          "this server has no approvers' allowed_signers file (no user config directory to find it in)",
          "the operator names one with --approvers-signers",
        ),
      );
    }
    const { readTrustStore, verifyApproval } = await signatureCode();
    let store: TrustStore;
    try {
      store = await readTrustStore({
        allowedSignersFile: settings.signersFile,
        revokedKeysFile: settings.revokedKeysFile,
      });
    } catch (error) {
      log("error", "approvers_unreadable", { error: messageOf(error) });
      throw new WardenError(
        "approval_refused",
        problem(
          "The approval is refused",
          "the approvers' allowed_signers file (--approvers-signers) or the revoked keys cannot be read",
          "ask the operator: warden doctor says why",
        ),
      );
    }
    if (store.signers.length === 0) {
      throw new WardenError(
        "approval_refused",
        problem(
          "The approval is refused",
          "no approver's key is configured (the approvers' allowed_signers file, --approvers-signers, lists none)",
          `the operator adds approvers' keys there, with namespaces="${APPROVAL_NAMESPACE}"`,
        ),
      );
    }
    const approver = await verifyApproval(decision, digest, signature, store.signers, store.revoked, new Date()).catch(
      (error) => {
        // The signature's refusal, as approval_refused: what the caller did wrong is in its words.
        throw error instanceof WardenError ? new WardenError("approval_refused", error.message) : error;
      },
    );
    return { principal: approver.principal, via: "signature", fingerprint: approver.fingerprint, signature };
  }
  const principal = principalOf(ctx);
  if (ctx.host.transport !== "http" || principal === null || !settings.approvers.includes(principal)) {
    throw new WardenError(
      "approval_refused",
      problem(
        "The approval is refused",
        ctx.host.transport !== "http"
          ? "it carries no approver's signature, and only an HTTP caller can be an approver by principal"
          : `the caller (${principal ?? "no principal"}) is not one of the operator's approvers (--approvers)`,
        `an approver signs the plan_digest (warden approve <request_id> --key <key>) and the signature is passed as \`signature\``,
      ),
    );
  }
  return { principal, via: "principal", fingerprint: null, signature: null };
}
