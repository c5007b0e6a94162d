// Whether a repository's check manifest (.warden/checks.json) may run: signed
// (SSHSIG over the manifest's bytes, namespace warden-checks) by a key the
// trust store allows for that namespace, and pinned for its root in the lock
// file by digest and signer. The same machinery plugins go through
// (sshsig.ts, allowed_signers.ts, lock.ts); what differs is the namespace and
// that the bytes come from a root, read by the tool, not from plugins/.
import { sha256Digest } from "../../sha256.ts";
import { messageOf } from "../../errors.ts";
import { checkSigner } from "./allowed_signers.ts";
import type { TrustStore } from "./discover.ts";
import type { CheckManifestPin } from "./lock.ts";
import { parseSignature, verifySignature } from "./sshsig.ts";
import {
  CHECK_MANIFEST_NAMESPACE,
  CHECK_MANIFEST_PATH,
  type CheckManifestStatus,
  type CheckManifestTrust,
} from "../../doors/manifest_status.ts";

const SIGN = `ssh-keygen -Y sign -f <key> -n ${CHECK_MANIFEST_NAMESPACE} ${CHECK_MANIFEST_PATH}`;

/** The commands that fix each refusal, for the manifest of root `root`. */
function fixFor(status: Exclude<CheckManifestStatus, "trusted">, root: string, reviewing: boolean): string {
  const trust = `warden checks trust ${root}`;
  const review = (then: string) =>
    reviewing ? `if you trust it, ${then}` : `review it with "warden checks verify ${root}", then ${then}`;
  switch (status) {
    case "unsigned":
      return `sign it (${SIGN}, which writes ${CHECK_MANIFEST_PATH}.sig beside it), then pin it: ${trust}`;
    case "bad-signature":
      return `the manifest or its signature changed after signing; sign it again (${SIGN}), then pin it: ${trust}`;
    case "wrong-namespace":
      return `sign it in the namespace ${CHECK_MANIFEST_NAMESPACE} (${SIGN}), then pin it: ${trust}`;
    case "unknown-signer":
      return `if you trust its signer: warden checks allow-signer <principal> --key <their key.pub>, then ${trust}`;
    case "signer-not-allowed":
      return `if you trust this key for check manifests: warden checks allow-signer <principal> --key <their key.pub> (it allows the key for ${CHECK_MANIFEST_NAMESPACE}), then ${trust}`;
    case "revoked":
      return "the signing key is revoked; get the manifest signed with another key";
    case "key-expired":
      return "the signing key is outside its valid-after/valid-before window in allowed_signers; get it signed with a valid key, or renew the key's line";
    case "not-pinned":
      return review(`pin it: ${trust}`);
    case "pin-mismatch":
      return `this is not the manifest you pinned; ${review(`pin it again: ${trust}`)}`;
  }
}

const utf8 = new TextDecoder();

/**
 * Decides whether `manifest` (the bytes of a root's check manifest) with `signature` (its `.sig`, or null when there
 * is none) may run for root `root`: signed in CHECK_MANIFEST_NAMESPACE by a key `trust` allows for it, and pinned for
 * the root in `pins` by digest and signer. Pins are not checked when `pins` is null (`warden checks trust` pins what
 * passes the rest). `reviewing`: the fix is said to someone running `warden checks verify`.
 */
export async function inspectCheckManifest(
  root: string,
  manifest: Uint8Array,
  signature: Uint8Array | null,
  trust: TrustStore,
  pins: Readonly<Record<string, CheckManifestPin>> | null,
  now: Date,
  reviewing = false,
): Promise<CheckManifestTrust> {
  const digest = await sha256Digest(manifest);
  const refuse = (
    status: Exclude<CheckManifestStatus, "trusted">,
    reason: string,
    signer: { principal: string | null; fingerprint: string } | null = null,
  ): CheckManifestTrust => ({ trusted: false, status, reason, fix: fixFor(status, root, reviewing), digest, signer });

  if (signature === null) return refuse("unsigned", `there is no ${CHECK_MANIFEST_PATH}.sig`);
  let parsed;
  try {
    parsed = await parseSignature(utf8.decode(signature));
  } catch (error) {
    // parseSignature's own fix speaks of plugins; the refusal's fix says what to do here.
    return refuse(
      "bad-signature",
      `${CHECK_MANIFEST_PATH}.sig is not an SSH signature: ${messageOf(error).split(";")[0]}`,
    );
  }
  const key = parsed.publicKey;
  const unknown = { principal: null, fingerprint: key.fingerprint };
  const verified = await verifySignature(parsed, manifest, CHECK_MANIFEST_NAMESPACE);
  if (!verified.ok) {
    return verified.reason === "wrong-namespace"
      ? refuse(
        "wrong-namespace",
        `it is signed for namespace "${parsed.namespace}", not "${CHECK_MANIFEST_NAMESPACE}"`,
        unknown,
      )
      : refuse("bad-signature", `the signature does not match ${CHECK_MANIFEST_PATH}`, unknown);
  }
  const decision = checkSigner(trust.signers, trust.revoked, key, CHECK_MANIFEST_NAMESPACE, now);
  if (decision.status !== "trusted") {
    const reasons = {
      "unknown-signer": [`key ${key.fingerprint} is not in allowed_signers`, "unknown-signer"],
      "revoked": [`key ${key.fingerprint} is revoked`, "revoked"],
      "key-expired": [`key ${key.fingerprint} is not valid now according to allowed_signers`, "key-expired"],
      "wrong-namespace": [
        `key ${key.fingerprint} is in allowed_signers but not allowed to sign namespace ${CHECK_MANIFEST_NAMESPACE}`,
        "signer-not-allowed",
      ],
    } as const;
    const [reason, status] = reasons[decision.status];
    return refuse(status, reason, unknown);
  }
  const signer = { principal: decision.principal, fingerprint: key.fingerprint };
  if (pins !== null) {
    const pin = Object.hasOwn(pins, root) ? pins[root] : undefined;
    if (!pin) {
      return refuse(
        "not-pinned",
        `signed by ${signer.principal} (${signer.fingerprint}) and trusted, but not pinned for root "${root}"`,
        signer,
      );
    }
    if (pin.manifestDigest !== digest) {
      return refuse("pin-mismatch", `the pinned digest differs: pinned ${pin.manifestDigest}, found ${digest}`, signer);
    }
    if (pin.fingerprint !== key.fingerprint) {
      return refuse("pin-mismatch", `pinned as signed by ${pin.fingerprint}, signed by ${key.fingerprint}`, signer);
    }
  }
  return { trusted: true, status: "trusted", digest, signer };
}
