// The door a gate tool asks whether a repository's check manifest may run. The
// trust store and the lock are the operator's files, outside every root, so a
// tool never reads them: it hands the manifest's bytes and signature here and
// gets the answer (trusted and pinned, with the signer, or why not and the fix).
// Read at each ask, so that a pin made with `warden checks trust` holds from
// the next call on; the signature code loads on the first ask, not at startup.
import type { CheckManifestTrust } from "./manifest_status.ts";

export type { CheckManifestTrust };
export { CHECK_MANIFEST_NAMESPACE, CHECK_MANIFEST_PATH } from "./manifest_status.ts";

/** Where the operator's trust configuration is (the settings of core/config.ts). */
export interface TrustFiles {
  readonly allowedSignersFile: string;
  readonly revokedKeysFile: string;
  readonly lockFile: string;
}

/** Answers for a root's check manifest. */
export interface ManifestDoor {
  /**
   * Whether `manifest`, with its signature (null when the root has none), may run for root `root`.
   * Throws `invalid_trust_store` when the operator's allowed_signers, revoked keys or lock file cannot be read.
   */
  checkManifest(root: string, manifest: Uint8Array, signature: Uint8Array | null): Promise<CheckManifestTrust>;
}

/** The door over the operator's trust files; `now` is the clock signatures' validity is read against. */
export function manifestDoor(files: TrustFiles, now: () => Date = () => new Date()): ManifestDoor {
  return Object.freeze({
    async checkManifest(root: string, manifest: Uint8Array, signature: Uint8Array | null) {
      const [{ inspectCheckManifest }, { readTrustStore }, { readLock }] = await Promise.all([
        import("../plugins/trust/check_manifest.ts"),
        import("../plugins/trust/discover.ts"),
        import("../plugins/trust/lock.ts"),
      ]);
      const [trust, lock] = await Promise.all([readTrustStore(files), readLock(files.lockFile)]);
      return await inspectCheckManifest(root, manifest, signature, trust, lock.checks ?? {}, now());
    },
  });
}
