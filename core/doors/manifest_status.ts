// What the operator's trust says about a repository's check manifest, as the
// tool's door (core/doors/manifests.ts) answers it: a module of names and types
// only, so the tool API and the door load none of the signature code.

/** The SSHSIG namespace a repository's check manifest is signed in (`ssh-keygen -Y sign -n warden-checks`). */
export const CHECK_MANIFEST_NAMESPACE = "warden-checks";

/** Where a repository keeps its check manifest, root-relative; its signature is this plus `.sig`. */
export const CHECK_MANIFEST_PATH = ".warden/checks.json";

/** Why a check manifest is refused; `trusted` when signed by an allowed signer and pinned for its root. */
export type CheckManifestStatus =
  | "trusted"
  | "unsigned"
  | "bad-signature"
  | "wrong-namespace"
  | "unknown-signer"
  | "signer-not-allowed"
  | "revoked"
  | "key-expired"
  | "not-pinned"
  | "pin-mismatch";

/** What the operator's trust store and lock say about one check manifest. No host paths. */
export type CheckManifestTrust =
  | {
    readonly trusted: true;
    readonly status: "trusted";
    readonly digest: string;
    readonly signer: { readonly principal: string; readonly fingerprint: string };
  }
  | {
    readonly trusted: false;
    readonly status: Exclude<CheckManifestStatus, "trusted">;
    /** What is wrong, in words. */
    readonly reason: string;
    /** What the operator or the repository's maintainer can do, with the exact command. */
    readonly fix: string;
    readonly digest: string;
    /** The key the signature names, and its principal when the trust store allows it; null when unsigned or unreadable. */
    readonly signer: { readonly principal: string | null; readonly fingerprint: string } | null;
  };
