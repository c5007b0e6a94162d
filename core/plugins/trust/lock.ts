// plugins.lock.json: the operator's pins. A plugin runs only when its
// manifest digest is pinned here, and a repository's check manifest only when
// its digest is pinned for the root (`checks`); a valid signature alone does
// not make a new version run.
import * as v from "valibot";
import { prettyCanonicalJson } from "../../canonical_json.ts";
import { messageOf, problem, received, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { parseStrictJson } from "./strict_json.ts";

export const LOCK_VERSION = 1;
/** Largest lock file read: a pin is ~300 bytes. */
const MAX_LOCK_BYTES = 16 * 1024 * 1024;

const Pin = v.strictObject({
  manifestDigest: v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/)),
  version: v.string(),
  principal: v.pipe(v.string(), v.minLength(1)),
  fingerprint: v.pipe(v.string(), v.regex(/^SHA256:[A-Za-z0-9+/]{43}$/)),
  pinnedAt: v.pipe(v.string(), v.isoTimestamp()),
});

/** A repository check manifest pinned for a root: the same digest and signer a plugin pin holds, without a version. */
const CheckPin = v.strictObject({
  manifestDigest: Pin.entries.manifestDigest,
  principal: Pin.entries.principal,
  fingerprint: Pin.entries.fingerprint,
  pinnedAt: Pin.entries.pinnedAt,
});

/** The valibot schema of the lock file; schema/plugins-lock.schema.json is its JSON Schema. */
export const LockSchema = v.strictObject({
  lockVersion: v.literal(LOCK_VERSION),
  plugins: v.record(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9]{0,29}$/)), Pin),
  /** By root id (`warden checks trust <root>`): the check manifest (.warden/checks.json) that root may run. */
  checks: v.optional(v.record(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,31}$/)), CheckPin)),
});

export type PluginLock = v.InferOutput<typeof LockSchema>;
export type PluginPin = v.InferOutput<typeof Pin>;
export type CheckManifestPin = v.InferOutput<typeof CheckPin>;

/** Reads the lock file; a missing file is an empty lock, a malformed one an error naming the file. */
export async function readLock(file: string): Promise<PluginLock> {
  let text: string;
  try {
    text = await platform().fs.readTextFile(file, MAX_LOCK_BYTES);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return { lockVersion: LOCK_VERSION, plugins: {} };
    throw new WardenError("invalid_trust_store", problem(`Cannot read the plugin lock file ${file}`, messageOf(error)));
  }
  return parseLock(text, file);
}

/** Reads the text of a lock file, `file` naming it in errors. */
export function parseLock(text: string, file: string): PluginLock {
  let value: unknown;
  try {
    value = parseStrictJson(text);
  } catch (error) {
    throw new WardenError(
      "invalid_trust_store",
      problem(
        `Invalid plugin lock file ${file}`,
        messageOf(error),
        'fix it, or delete it and pin again with "warden plugin trust"',
      ),
    );
  }
  const parsed = v.safeParse(LockSchema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = (issue.path ?? []).map((p) => (p as { key: unknown }).key).join(".") || "(root)";
    // valibot reads an array's indexes as keys ("lockVersion: Invalid key"): say what the file is instead.
    const what = typeof value !== "object" || value === null || Array.isArray(value)
      ? `(root): expected a JSON object, received ${received(value)}`
      : `${where}: ${issue.message}`;
    throw new WardenError(
      "invalid_trust_store",
      problem(
        `Invalid plugin lock file ${file}`,
        what,
        'fix it, or delete it and pin again with "warden plugin trust"',
      ),
    );
  }
  return parsed.output;
}

/** Writes the lock atomically in canonical, indented form (stable diffs). */
export async function writeLock(file: string, lock: PluginLock): Promise<void> {
  await platform().fs.writeFileAtomic(file, prettyCanonicalJson(lock));
}
