// Approvers' signatures (approvals.ts says what a plan and its digest are): an approver signs `approve <digest>` or
// `reject <digest>` with an SSH key in the approvers' allowed_signers file, in the approvals' own namespace. Such a
// signature is checked when it is given, again when its plan is submitted, and later, offline, by `warden ledger
// verify`, from the decision, the digest and the signature alone (and the file of who may).
import { problem, WardenError } from "../errors.ts";
import { type AllowedSigner, checkSigner } from "../plugins/trust/allowed_signers.ts";
import { parseSignature, type SshPublicKey, verifySignature } from "../plugins/trust/sshsig.ts";
import { APPROVAL_NAMESPACE, DIGEST } from "./approvals.ts";

/** What an approver decides of a plan. */
export type Decision = "approve" | "reject";

/**
 * The bytes an approver signs: the decision and the digest, as text (`approve sha256:…`). The decision is signed too,
 * so that a signature that rejects a plan can never be passed off as its approval.
 */
export function approvalMessage(decision: Decision, digest: string): Uint8Array {
  return new TextEncoder().encode(`${decision} ${digest}`);
}

/** Who approved, by the approvers' allowed_signers file, and with which key. */
export interface Approver {
  readonly principal: string;
  /** The key's `SHA256:…` fingerprint, as `ssh-keygen -l` prints it. */
  readonly fingerprint: string;
}

/**
 * The approver of `digest` by `armored` (an SSHSIG, as `ssh-keygen -Y sign` writes it), when its key is in
 * `signers` for APPROVAL_NAMESPACE at `now` and not in `revoked`. Throws `invalid_signature`, saying why, otherwise:
 * a signature of another digest (plan substitution), of another namespace, or by a key that is not an approver's.
 */
export async function verifyApproval(
  decision: Decision,
  digest: string,
  armored: string,
  signers: readonly AllowedSigner[],
  revoked: readonly SshPublicKey[],
  now: Date,
): Promise<Approver> {
  if (!DIGEST.test(digest)) {
    throw new WardenError("invalid_arguments", problem("Invalid plan_digest", "expected sha256:<64 hex digits>"));
  }
  const signature = await parseSignature(armored);
  const refused = (why: string, fix: string) =>
    new WardenError("invalid_signature", problem("The approval is refused", why, fix));
  /** Whether `armored` signs `decision` on the digest; a line's newline (`echo … | ssh-keygen -Y sign`) is the same text. */
  const signs = async (decided: Decision) => {
    const message = approvalMessage(decided, digest);
    const first = await verifySignature(signature, message, APPROVAL_NAMESPACE);
    if (first.ok || first.reason === "wrong-namespace") return first;
    return await verifySignature(signature, new Uint8Array([...message, 0x0a]), APPROVAL_NAMESPACE);
  };
  const checked = await signs(decision);
  if (!checked.ok) {
    throw checked.reason === "wrong-namespace"
      ? refused(
        `the signature is in namespace "${signature.namespace}", not "${APPROVAL_NAMESPACE}"`,
        `sign with: ssh-keygen -Y sign -n ${APPROVAL_NAMESPACE} -f <key>`,
      )
      : (await signs(decision === "approve" ? "reject" : "approve")).ok
      ? refused(
        `the signature is the approver's "${
          decision === "approve" ? "reject" : "approve"
        }" of this plan, not "${decision}"`,
        "pass the decision the approver signed",
      )
      : refused(
        `the signature is not of "${decision} <this plan_digest>" (another plan's, another text, or altered)`,
        `sign "${decision} " and the plan_digest checks_request answered, exactly: warden approve does`,
      );
  }
  const signer = checkSigner(signers, revoked, signature.publicKey, APPROVAL_NAMESPACE, now);
  if (signer.status !== "trusted") {
    throw refused(
      {
        revoked: "the signing key is revoked",
        "unknown-signer": "the signing key is not an approver's (it is not in the approvers' allowed_signers file)",
        "key-expired": "the approver's key is not valid now (its valid-after or valid-before)",
        "wrong-namespace": `the approver's key may not sign in namespace "${APPROVAL_NAMESPACE}"`,
      }[signer.status],
      "have an approver sign it, with a key the operator lists for approvals",
    );
  }
  return { principal: signer.principal, fingerprint: signature.publicKey.fingerprint };
}
