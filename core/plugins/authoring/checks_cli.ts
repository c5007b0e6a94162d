// `warden checks ...`: the operator's commands for a repository's check
// manifest (.warden/checks.json), as `warden plugin` has them for plugins:
// allow a key to sign check manifests (once per key), review one, pin it for
// its root. run_checks runs a manifest's checks only when both hold.
import type { Config } from "../../config.ts";
import { openRoots } from "../../doors/roots.ts";
import { messageOf, problem, received, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { inspectCheckManifest } from "../trust/check_manifest.ts";
import { CHECK_MANIFEST_NAMESPACE, CHECK_MANIFEST_PATH, type CheckManifestTrust } from "../../doors/manifest_status.ts";
import { readTrustStore } from "../trust/discover.ts";
import { readLock, writeLock } from "../trust/lock.ts";
import { allowSignerCommand } from "./cli.ts";

const USAGE = `Usage (with the same --root settings as the server):
  warden checks allow-signer <principal> --key <key.pub>
                              trust a key to sign check manifests (namespace ${CHECK_MANIFEST_NAMESPACE})
  warden checks verify <root> check <root>'s ${CHECK_MANIFEST_PATH}: signature, signer, pin
  warden checks trust <root>  show its signer and digest, then pin it for <root> in the lock file
`;

function usage(detail: string): WardenError {
  return new WardenError("config_invalid", problem("Invalid command line", detail, 'run "warden checks help"'));
}

function out(text: string): void {
  platform().writeStdout(text.endsWith("\n") ? text : text + "\n");
}

/** Largest check manifest read, as run_checks reads it. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

/** The manifest of root `id` and its signature, read through the roots as run_checks reads them. */
async function readManifest(config: Config, id: string | undefined, command: string) {
  const root = config.roots.find((r) => r.id === id);
  if (!id || !root) {
    throw usage(
      `${command} needs a root id, one of ${config.roots.map((r) => r.id).join(", ")}; received ${
        received(id)
      } (give the server's --root settings too)`,
    );
  }
  const fs = await openRoots([root]);
  let manifest: Uint8Array;
  try {
    manifest = await fs.readBytes(root.id, CHECK_MANIFEST_PATH, { maxBytes: MAX_MANIFEST_BYTES });
  } catch (error) {
    throw new WardenError(
      "config_invalid",
      problem(`Cannot read ${CHECK_MANIFEST_PATH} in root "${root.id}"`, messageOf(error)),
    );
  }
  const signature = await fs.readBytes(root.id, `${CHECK_MANIFEST_PATH}.sig`, { maxBytes: 64 * 1024 }).catch(
    (error: { code?: string }) => {
      if (error?.code === "not_found") return null;
      throw new WardenError(
        "config_invalid",
        problem(`Cannot read ${CHECK_MANIFEST_PATH}.sig in root "${root.id}"`, messageOf(error)),
      );
    },
  );
  return { root: root.id, manifest, signature };
}

function describe(root: string, trust: CheckManifestTrust, pinned: boolean): string {
  const lines = [
    `root        ${root}`,
    `manifest    ${CHECK_MANIFEST_PATH}`,
    `status      ${trust.status}${trust.trusted ? "" : `: ${trust.reason}`}`,
    `signer      ${
      trust.signer ? `${trust.signer.principal ?? "(unknown principal)"} ${trust.signer.fingerprint}` : "-"
    }`,
    `digest      ${trust.digest}`,
    `pinned      ${pinned ? "yes" : "no"}`,
  ];
  return lines.join("\n");
}

async function verifyCommand(config: Config, args: string[]): Promise<number> {
  const { root, manifest, signature } = await readManifest(config, args[0], "verify");
  const [trust, lock] = await Promise.all([readTrustStore(config), readLock(config.lockFile)]);
  const pins = lock.checks ?? {};
  const answer = await inspectCheckManifest(root, manifest, signature, trust, pins, new Date(), true);
  out(describe(root, answer, Object.hasOwn(pins, root)));
  if (!answer.trusted) out(`next        ${answer.fix}`);
  return answer.trusted || answer.status === "not-pinned" || answer.status === "pin-mismatch" ? 0 : 1;
}

async function trustCommand(config: Config, args: string[]): Promise<number> {
  const { root, manifest, signature } = await readManifest(config, args[0], "trust");
  const [trust, lock] = await Promise.all([readTrustStore(config), readLock(config.lockFile)]);
  const answer = await inspectCheckManifest(root, manifest, signature, trust, null, new Date(), true);
  out(describe(root, answer, Object.hasOwn(lock.checks ?? {}, root)));
  if (!answer.trusted) {
    platform().writeStderr(`Not pinned: the check manifest of root ${root} is ${answer.status}. ${answer.fix}\n`);
    return 1;
  }
  lock.checks = {
    ...lock.checks,
    [root]: {
      manifestDigest: answer.digest,
      principal: answer.signer.principal,
      fingerprint: answer.signer.fingerprint,
      pinnedAt: new Date().toISOString(),
    },
  };
  await writeLock(config.lockFile, lock);
  out(
    `Pinned the check manifest of root ${root} at ${answer.digest} in ${config.lockFile}; run_checks runs it from the next call on.`,
  );
  return 0;
}

/** `warden checks <subcommand> ...`. */
export async function checksCommand(config: Config, argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const args = [...rest];
  switch (sub) {
    case "allow-signer":
      return await allowSignerCommand(config, args, CHECK_MANIFEST_NAMESPACE, "warden checks help");
    case "verify":
      return await verifyCommand(config, args);
    case "trust":
      return await trustCommand(config, args);
    case undefined:
    case "help":
    case "--help":
      out(USAGE);
      return 0;
    default:
      throw usage(`unknown checks command ${received(sub)}`);
  }
}
