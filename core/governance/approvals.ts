// Approvals of check runs that must not run on an agent's say-so (issue 19): what a plan is, its digest, and who may
// approve it. A plan fixes everything a run depends on (the project, the group and its filters, the repository's HEAD
// commit and tree, the bytes of its check manifest) and a random request id, so that no two requests share a digest
// and an approval of one never covers another. An approver signs `approve <digest>` (or `reject <digest>`: the decision
// is signed too) with an SSH key in the approvers' allowed_signers file, in a namespace of its own: `warden approve`
// or `ssh-keygen -Y sign -n warden-approval-v1`. Such a signature is checked later, offline, from the decision, the
// digest and the signature alone (and the file of who may).
import { canonicalJson } from "../canonical_json.ts";
import { problem, WardenError } from "../errors.ts";
import { sha256Hex } from "../sha256.ts";

/** The SSH signature namespace of approvals: a plugin or manifest signature is never one. */
export const APPROVAL_NAMESPACE = "warden-approval-v1";

const REQUEST_ID = /^req_[0-9a-f]{32}$/;
/** A `sha256:<hex>` digest, as plans and manifests are named. */
export const DIGEST = /^sha256:[0-9a-f]{64}$/;
const GIT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** The tool whose runs are approved: a plan's group and filters are its arguments. */
export const APPROVED_TOOL = "run_checks";

/**
 * What a run depends on in the repository, read when it is requested and again before each step: the HEAD commit and
 * its tree, the working tree's changes against HEAD, and the check manifest's bytes. A plan whose state differs now is
 * stale.
 */
export interface PlanState {
  /** The repository's HEAD commit and its tree, as git names them (SHA-1 or SHA-256). */
  readonly head: string;
  readonly tree: string;
  /** `sha256:<hex>` of the working tree's changes against HEAD (tracked files' diff, untracked files' contents). */
  readonly worktree: string;
  /** `sha256:<hex>` of the check manifest's bytes, or null for a root that has none. */
  readonly manifest_sha256: string | null;
}

/** The fields of a PlanState, in the order a difference is reported. */
export const PLAN_STATE_FIELDS = ["head", "tree", "worktree", "manifest_sha256"] as const;

/** What moved between `planned` and `now`, in words, or null when nothing did. */
export function stateMoved(planned: PlanState, now: PlanState): string | null {
  const short = (value: string | null) => value === null ? "none" : value.replace(/^sha256:/, "").slice(0, 12);
  const moved = PLAN_STATE_FIELDS.filter((field) => planned[field] !== now[field]).map((field) =>
    `${
      {
        head: "the repository's HEAD",
        tree: "HEAD's tree",
        worktree: "the working tree's changes",
        manifest_sha256: "the check manifest",
      }[field]
    } (${short(planned[field])} → ${short(now[field])})`
  );
  return moved.length === 0 ? null : moved.join(", ");
}

/** What a run of checks depends on, fixed when it is requested. */
export interface Plan extends PlanState {
  /** Random, `req_` and 32 hex digits: no two plans share a digest. */
  readonly request_id: string;
  readonly project_id: string;
  /** The check group (`repo`, `default`…). */
  readonly group: string;
  /** The run's scope as run_checks takes it (base, paths, checks), canonical JSON values only. */
  readonly filters: Readonly<Record<string, unknown>>;
  /** Who asked: the caller's principal, or null. */
  readonly requested_by: string | null;
}

/** A new request id. */
export function newRequestId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "req_" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Why `plan` is not one (a field and what it should be), or null. */
function planProblem(plan: Plan): string | null {
  if (!REQUEST_ID.test(plan.request_id)) return "request_id: expected req_ and 32 lowercase hex digits";
  if (typeof plan.project_id !== "string" || plan.project_id === "") return "project_id: expected a project id";
  if (typeof plan.group !== "string" || plan.group === "") return "group: expected a check group";
  if (!GIT_ID.test(plan.head)) return "head: expected a git commit id";
  if (!GIT_ID.test(plan.tree)) return "tree: expected a git tree id";
  if (!DIGEST.test(plan.worktree)) return "worktree: expected sha256:<64 hex digits>";
  if (plan.manifest_sha256 !== null && !DIGEST.test(plan.manifest_sha256)) {
    return "manifest_sha256: expected sha256:<64 hex digits> or null";
  }
  return null;
}

/** `sha256:<hex>` of the plan's canonical JSON (RFC 8785): what an approver signs, and what every step echoes. */
export function planDigest(plan: Plan): string {
  const why = planProblem(plan);
  if (why !== null) throw new WardenError("invalid_arguments", problem("Invalid plan", why));
  return "sha256:" + sha256Hex(canonicalJson(plan));
}
