// Decides, for every plugins/<id>/ directory, one status, without running a
// byte of plugin code: manifest (strict, canonical, valid), signature
// (SSHSIG over the manifest bytes), signer (allowed_signers, revocations,
// validity), entry (sha256 of the bytes read here, which are the bytes that
// will run), pin (plugins.lock.json) and name clashes. Only `verified`
// plugins reach the catalog. Two scopes: the user's plugins (their trust
// store and lock), then the project's `.warden/plugins/` (the user's trust
// store plus the project's allowed_signers, the project's lock), honoured only
// once the user accepted the project's trust files (project.ts).
import { sha256Digest } from "../../sha256.ts";
import path from "node:path";
import { messageOf, problem, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { DENO_MISSING_FIX } from "../../platform/types.ts";
import type { PluginRecord, PluginStatus } from "../../tool.ts";
import { type AllowedSigner, checkSigner, parseAllowedSigners, parseRevokedKeys } from "./allowed_signers.ts";
import { parseLock, type PluginLock, readLock } from "./lock.ts";
import { acceptanceOf, NOT_ACCEPTED_FIX, notAcceptedReason, readProjectTrust } from "./project.ts";
import { limitsOf, pluginIsolation } from "../sandbox/limits.ts";
import { isManifestProblem, type Manifest, readManifest } from "./manifest.ts";
import { parseSignature, PLUGIN_SIGNATURE_NAMESPACE, type SshPublicKey, verifySignature } from "./sshsig.ts";

// Declared in core/tool.ts beside the host facts that show them to tools, so that the tool API imports nothing of
// the plugins; named here too for the code that builds them.
export type { PluginRecord, PluginStatus };

/** A plugin that passed every check, with the exact entry bytes that were hashed. */
export interface VerifiedPlugin {
  readonly record: PluginRecord;
  readonly manifest: Manifest;
  readonly entryBytes: Uint8Array;
}

/** Where the plugins and the trust configuration are: the user's, and the project's `.warden` directory. */
export interface PluginSources {
  readonly pluginsDir: string;
  readonly allowedSignersFile: string;
  readonly revokedKeysFile: string;
  readonly lockFile: string;
  readonly projectDir: string;
  /** Where the user's acceptances are (`<user state>/accepted_projects.json`); read only when the project has plugins. */
  readonly acceptedProjectsFile: string;
  /** Catalog names already taken (built-in tools). */
  /** Known when the clashes are checked, after every directory was inspected. */
  readonly reservedNames: ReadonlySet<string> | Promise<ReadonlySet<string>>;
  readonly now?: Date;
}

/**
 * The sources the settings name. Each read when used: a default under a user directory that cannot be known (no
 * HOME) fails only a command that needs it.
 */
export function pluginSources(
  config: Pick<PluginSources, Exclude<keyof PluginSources, "reservedNames" | "now">>,
  reservedNames: PluginSources["reservedNames"],
): PluginSources {
  return {
    get pluginsDir() {
      return config.pluginsDir;
    },
    get allowedSignersFile() {
      return config.allowedSignersFile;
    },
    get revokedKeysFile() {
      return config.revokedKeysFile;
    },
    get lockFile() {
      return config.lockFile;
    },
    get projectDir() {
      return config.projectDir;
    },
    get acceptedProjectsFile() {
      return config.acceptedProjectsFile;
    },
    reservedNames,
  };
}

/** The trust store as files say it. */
export interface TrustStore {
  readonly signers: readonly AllowedSigner[];
  readonly revoked: readonly SshPublicKey[];
}

/** Largest allowed_signers or revoked_keys file read: thousands of keys. */
export const MAX_TRUST_FILE_BYTES = 4 * 1024 * 1024;

async function readOptional(file: string): Promise<string | null> {
  try {
    return await platform().fs.readTextFile(file, MAX_TRUST_FILE_BYTES);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return null;
    throw new WardenError("invalid_trust_store", problem(`Cannot read ${file}`, messageOf(error)));
  }
}

/** Reads allowed_signers and the revoked keys; missing files are empty, malformed ones an error. */
export async function readTrustStore(
  sources: Pick<PluginSources, "allowedSignersFile" | "revokedKeysFile">,
): Promise<TrustStore> {
  const signersText = await readOptional(sources.allowedSignersFile);
  const revokedText = await readOptional(sources.revokedKeysFile);
  return {
    signers: signersText === null ? [] : await parseAllowedSigners(signersText, sources.allowedSignersFile),
    revoked: revokedText === null ? [] : await parseRevokedKeys(revokedText, sources.revokedKeysFile),
  };
}

/** How a fix names the plugin: its directory as the operator types it, and whether they are reviewing it already. */
interface FixContext {
  readonly dir: string;
  /** True in `warden plugin verify`: the fix does not tell them to run what they just ran. */
  readonly reviewing: boolean;
}

const review = (c: FixContext, then: string) =>
  c.reviewing ? `if you trust it, ${then}` : `review it with "warden plugin verify ${c.dir}", then ${then}`;

const FIXES: Partial<Record<PluginStatus, (c: FixContext) => string>> = {
  "unsigned": (c) => `sign it: warden plugin sign ${c.dir} --key <ed25519 key>`,
  "bad-signature": (c) =>
    `the manifest or its signature was changed; rebuild and sign it: warden plugin build ${c.dir}`,
  "unknown-signer": (c) =>
    c.reviewing
      ? `if you trust its signer, run "warden plugin allow-signer <principal> --key <their key.pub>", then pin it with "warden plugin trust ${c.dir}"`
      : `review it with "warden plugin verify ${c.dir}"; if you trust its signer, run "warden plugin allow-signer <principal> --key <their key.pub>", then pin it with "warden plugin trust ${c.dir}"`,
  "revoked": () => "the signing key is revoked; get a build signed with another key",
  "key-expired": () => "the signing key is outside its valid-after/valid-before window in allowed_signers",
  "wrong-namespace": () => `sign with the namespace ${PLUGIN_SIGNATURE_NAMESPACE}`,
  "entry-digest-mismatch": (c) => `the entry is not the file that was signed; rebuild: warden plugin build ${c.dir}`,
  "not-canonical": (c) => `rewrite the manifest: warden plugin build ${c.dir}`,
  "invalid-manifest": (c) => `fix the plugin source and rebuild: warden plugin build ${c.dir}`,
  "not-pinned": (c) => review(c, `pin it with "warden plugin trust ${c.dir}"`),
  "pin-mismatch": (c) =>
    `this is not the version you pinned; ${
      c.reviewing
        ? `if you trust it, pin it again with "warden plugin trust ${c.dir}"`
        : `review it with "warden plugin verify ${c.dir}" and pin it again with "warden plugin trust ${c.dir}"`
    }`,
  "name-conflict": () => "rename the plugin or the tool; two tools cannot share a name",
  "duplicate-id": () => "remove one of the two, or rename one (its id and its directory)",
  "project-not-accepted": () => NOT_ACCEPTED_FIX,
  "deno-missing": () => DENO_MISSING_FIX,
};

/**
 * What to do about a plugin in `status`, naming its directory as `dir` (default `plugins/<id>`); null when
 * verified. `reviewing`: said to someone running `warden plugin verify` on it.
 */
export function fixFor(
  status: PluginStatus,
  id: string,
  options: { dir?: string; reviewing?: boolean } = {},
): string | null {
  return FIXES[status]?.({ dir: options.dir ?? `plugins/${id}`, reviewing: options.reviewing ?? false }) ?? null;
}

const utf8 = new TextDecoder();

/**
 * Checks one plugin directory against the trust store and the lock; pins
 * are not checked when `pins` is null (as `warden plugin trust` wants).
 * `realDir` is the real path of `dir` when the caller knows it (the real
 * plugins directory and the name of a directory entry that is no symlink);
 * otherwise it is resolved here.
 */
export async function inspectPlugin(
  dir: string,
  trust: TrustStore,
  pins: Readonly<Record<string, { manifestDigest: string; fingerprint: string }>> | null,
  now: Date,
  realDir?: string,
  scope: PluginRecord["scope"] = "user",
): Promise<{ record: PluginRecord; manifest?: Manifest; entryBytes?: Uint8Array }> {
  const id = path.basename(dir);
  const fs = platform().fs;
  // How a fix names it: a project's plugin by its place in the repository.
  const shown = scope === "project" ? { dir: `.warden/plugins/${id}` } : {};
  const base = {
    id,
    scope,
    version: null,
    manifestDigest: null,
    entryDigest: null,
    signer: null,
    // Whether the lock holds a pin for this id, whatever the files now say.
    pinned: pins !== null && Object.hasOwn(pins, id),
    risk: null,
    capabilities: null,
    tools: [] as string[],
    isolation: "none: not loaded",
  };
  const refuse = (status: PluginStatus, reason: string, extra: Partial<PluginRecord> = {}) => ({
    record: { ...base, ...extra, status, reason, fix: fixFor(status, id, shown) },
  });

  const manifestPath = path.join(dir, "manifest.json");
  const manifestRead = await fs.readRegularFile(manifestPath, 1024 * 1024).catch(() => null);
  if (!manifestRead || manifestRead.kind !== "ok") {
    const why = manifestRead?.kind === "too_large"
      ? "manifest.json is larger than 1 MiB"
      : manifestRead?.kind === "symlink"
      ? "manifest.json is a symlink"
      : manifestRead?.kind === "not_a_file"
      ? `manifest.json is ${manifestRead.what}, not a regular file`
      : "manifest.json is missing or not a regular file";
    return refuse("invalid-manifest", why);
  }
  const bytes = manifestRead.bytes;
  const manifestDigest = await sha256Digest(bytes);
  const manifest = readManifest(bytes, id);
  if (isManifestProblem(manifest)) return refuse(manifest.status, manifest.reason, { manifestDigest });
  const known: Partial<PluginRecord> = {
    manifestDigest,
    version: manifest.version,
    risk: manifest.risk,
    capabilities: manifest.capabilities,
    tools: manifest.tools.map((t) => `${id}_${t.name}`),
  };

  const sigRead = await fs.readRegularFile(`${manifestPath}.sig`, 64 * 1024).catch(() => null);
  if (!sigRead || sigRead.kind !== "ok") {
    const why = sigRead?.kind === "not_a_file"
      ? `manifest.json.sig is ${sigRead.what}, not a regular file`
      : sigRead?.kind === "symlink"
      ? "manifest.json.sig is a symlink"
      : sigRead?.kind === "too_large"
      ? "manifest.json.sig is larger than 64 KiB"
      : "manifest.json.sig is missing";
    return refuse("unsigned", why, known);
  }
  let signature;
  try {
    signature = await parseSignature(utf8.decode(sigRead.bytes));
  } catch (error) {
    return refuse("bad-signature", `manifest.json.sig is not an SSH signature: ${messageOf(error)}`, known);
  }
  const key = signature.publicKey;
  const verified = await verifySignature(signature, bytes, PLUGIN_SIGNATURE_NAMESPACE);
  const signerFacts = { principal: null, fingerprint: key.fingerprint };
  if (!verified.ok) {
    const reason = verified.reason === "wrong-namespace"
      ? `signed for namespace "${signature.namespace}", not "${PLUGIN_SIGNATURE_NAMESPACE}"`
      : "the signature does not match manifest.json";
    return refuse(verified.reason, reason, { ...known, signer: signerFacts });
  }
  const trusted = checkSigner(trust.signers, trust.revoked, key, PLUGIN_SIGNATURE_NAMESPACE, now);
  if (trusted.status !== "trusted") {
    const reasons: Record<string, string> = {
      "unknown-signer": `key ${key.fingerprint} is not in allowed_signers`,
      "revoked": `key ${key.fingerprint} is revoked`,
      "key-expired": `key ${key.fingerprint} is not valid now according to allowed_signers`,
      "wrong-namespace": `key ${key.fingerprint} is not allowed to sign namespace ${PLUGIN_SIGNATURE_NAMESPACE}`,
    };
    return refuse(trusted.status, reasons[trusted.status], { ...known, signer: signerFacts });
  }
  const signer = { principal: trusted.principal, fingerprint: key.fingerprint };

  const entryPath = path.join(dir, manifest.entry.path);
  const entryRead = await fs.readRegularFile(entryPath, 64 * 1024 * 1024).catch(() => null);
  const withSigner = { ...known, signer };
  if (!entryRead || entryRead.kind !== "ok") {
    const why = entryRead?.kind === "symlink"
      ? `entry ${manifest.entry.path} is a symlink; it must be the file itself`
      : entryRead?.kind === "too_large"
      ? `entry ${manifest.entry.path} is larger than 64 MiB`
      : entryRead?.kind === "not_a_file"
      ? `entry ${manifest.entry.path} is ${entryRead.what}, not a regular file`
      : `entry ${manifest.entry.path} is missing or not a regular file`;
    return refuse("entry-digest-mismatch", why, withSigner);
  }
  // A parent directory swapped for a symlink would pass the file check; the real path must stay inside.
  const realEntry = await fs.realPath(entryPath).catch(() => "");
  const realBase = realDir ?? await fs.realPath(dir).catch(() => dir);
  if (!realEntry.startsWith(realBase + path.sep)) {
    return refuse(
      "entry-digest-mismatch",
      `entry ${manifest.entry.path} resolves outside the plugin directory`,
      withSigner,
    );
  }
  const entryDigest = (await sha256Digest(entryRead.bytes)).slice("sha256:".length);
  if (entryDigest !== manifest.entry.sha256) {
    return refuse(
      "entry-digest-mismatch",
      `entry ${manifest.entry.path} has sha256 ${entryDigest}, the manifest says ${manifest.entry.sha256}`,
      {
        ...withSigner,
        entryDigest: `sha256:${entryDigest}`,
      },
    );
  }
  const full = { ...withSigner, entryDigest: `sha256:${entryDigest}` };
  if (pins !== null) {
    const pin = pins[id];
    if (!pin) return refuse("not-pinned", "signed and trusted, but not pinned in plugins.lock.json", full);
    if (pin.manifestDigest !== manifestDigest || pin.fingerprint !== key.fingerprint) {
      const what = pin.manifestDigest !== manifestDigest
        ? `pinned at ${pin.manifestDigest}, found ${manifestDigest}`
        : `pinned for key ${pin.fingerprint}, signed by ${key.fingerprint}`;
      return refuse("pin-mismatch", what, full);
    }
  }
  return {
    record: {
      ...base,
      ...full,
      pinned: pins !== null,
      status: "verified",
      reason: null,
      fix: null,
      isolation: pluginIsolation(limitsOf(manifest.limits)),
    },
    manifest,
    entryBytes: entryRead.bytes,
  };
}

/** The plugin directories of `dir` (sorted, hidden ones left out); none when it is missing. */
async function pluginDirs(dir: string): Promise<string[]> {
  try {
    const entries = await platform().fs.readDir(dir);
    return entries.filter((e) => e.kind === "directory" && !e.name.startsWith(".")).map((e) => e.name).sort();
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return [];
    throw new WardenError(
      "invalid_trust_store",
      problem(`Cannot list the plugins directory ${dir}`, messageOf(error)),
    );
  }
}

/** Inspects the plugin directories `dirs` of `pluginsDir` against one trust store and one set of pins. */
async function inspectScope(
  pluginsDir: string,
  dirs: readonly string[],
  trust: TrustStore,
  pins: PluginLock["plugins"],
  now: Date,
  scope: PluginRecord["scope"],
) {
  if (dirs.length === 0) return [];
  // One real path for all: each entry of `dirs` is a directory, not a symlink, so its real path is this plus its name.
  const realPluginsDir = await platform().fs.realPath(pluginsDir).catch(() => null);
  // Joining a directory and a plain name gives the same prefix for every name: join once. (path.join normalizes
  // character by character, which cost milliseconds over 100 plugins at startup.)
  const first = path.join(pluginsDir, dirs[0]);
  const prefix = first.slice(0, first.length - dirs[0].length);
  const realPrefix = realPluginsDir === null ? null : path.join(realPluginsDir, path.sep);
  return await Promise.all(
    dirs.map((dir) =>
      inspectPlugin(prefix + dir, trust, pins, now, realPrefix === null ? undefined : realPrefix + dir, scope)
    ),
  );
}

/**
 * The project's plugins' trust: the user's store plus the project's allowed_signers, and the project's pins; or, when
 * the user has not accepted the project's trust files as they are, why not (nothing of them is parsed then).
 */
async function projectTrust(
  sources: PluginSources,
  user: TrustStore,
): Promise<{ trust: TrustStore; pins: PluginLock["plugins"] } | { refused: string }> {
  let acceptedFile: string;
  try {
    acceptedFile = sources.acceptedProjectsFile;
  } catch (error) {
    // No user state directory (no HOME): no acceptance can be read, so the project's plugins wait, saying why.
    return { refused: `whether you accepted the project cannot be known: ${messageOf(error)}` };
  }
  const project = await readProjectTrust(sources.projectDir);
  const acceptance = await acceptanceOf(project, acceptedFile);
  if (acceptance.state !== "accepted") return { refused: notAcceptedReason(acceptance) };
  const signers = project.texts["allowed_signers"];
  const lock = project.texts["plugins.lock.json"];
  return {
    trust: {
      signers: [
        ...user.signers,
        ...(signers === null
          ? []
          : await parseAllowedSigners(signers, path.join(sources.projectDir, "allowed_signers"))),
      ],
      // The user's revocations hold for every scope; a project cannot revoke (nor un-revoke) for them.
      revoked: user.revoked,
    },
    pins: lock === null ? {} : parseLock(lock, path.join(sources.projectDir, "plugins.lock.json")).plugins,
  };
}

/** Inspects every plugin directory, the user's then the project's, each sorted by id; verified ones come with their bytes. */
export async function discoverPlugins(
  sources: PluginSources,
): Promise<{ records: PluginRecord[]; verified: VerifiedPlugin[] }> {
  const projectPlugins = path.join(sources.projectDir, "plugins");
  const [userDirs, projectDirs] = await Promise.all([pluginDirs(sources.pluginsDir), pluginDirs(projectPlugins)]);
  if (userDirs.length === 0 && projectDirs.length === 0) return { records: [], verified: [] };
  const [trust, lock] = await Promise.all([readTrustStore(sources), readLock(sources.lockFile)]);
  const now = sources.now ?? new Date();
  const project = projectDirs.length > 0 ? await projectTrust(sources, trust) : null;
  const inspected = [
    ...await inspectScope(sources.pluginsDir, userDirs, trust, lock.plugins, now, "user"),
    ...(project === null
      ? []
      : "refused" in project
      ? (await inspectScope(projectPlugins, projectDirs, trust, {}, now, "project")).map(({ record }) => ({
        record: {
          ...record,
          status: "project-not-accepted" as const,
          reason: project.refused,
          fix: fixFor("project-not-accepted", record.id),
          isolation: "none: not loaded",
        },
      }))
      : await inspectScope(projectPlugins, projectDirs, project.trust, project.pins, now, "project")),
  ] as { record: PluginRecord; manifest?: Manifest; entryBytes?: Uint8Array }[];
  const taken = new Map<string, string>([...(await sources.reservedNames)].map((name) => [name, "a built-in tool"]));
  const ids = new Set<string>();
  const records: PluginRecord[] = [];
  const verified: VerifiedPlugin[] = [];
  for (const result of inspected) {
    let record = result.record;
    if (ids.has(record.id)) {
      // The user's loads: the project's (inspected second) with the same id is refused, whatever its checks said.
      record = {
        ...record,
        status: "duplicate-id",
        reason:
          `plugin ${record.id} is both in the user's plugins directory and in the project's .warden/plugins; the user's is the one loaded`,
        fix: fixFor("duplicate-id", record.id),
        isolation: "none: not loaded",
      };
    }
    ids.add(record.id);
    if (record.status === "verified") {
      const clash = record.tools.find((name) => taken.has(name));
      if (clash) {
        record = {
          ...record,
          status: "name-conflict",
          reason: `tool ${clash} is already served by ${taken.get(clash)}`,
          fix: fixFor("name-conflict", record.id),
          isolation: "none: not loaded",
        };
      } else {
        for (const name of record.tools) taken.set(name, `plugin ${record.id}`);
        verified.push({ record, manifest: result.manifest!, entryBytes: result.entryBytes! });
      }
    }
    records.push(record);
  }
  return { records, verified };
}
