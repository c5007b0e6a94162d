// A repository must not trust itself. A project's `.warden/allowed_signers`
// and `.warden/plugins.lock.json` come with a clone or a pull, so a hostile
// repository could ship its own key and a pin of its own plugin. They count
// only once the user accepted them (as direnv does with an .envrc): `warden
// project accept` records their sha256 in the user's state directory, and a
// file changed since (a pull) makes the project's plugins wait for the user
// again. The bytes hashed here are the bytes the plugin checks then parse.
import path from "node:path";
import * as v from "valibot";
import { messageOf, problem, WardenError } from "../../errors.ts";
import { platform } from "../../platform/mod.ts";
import { sha256Digest } from "../../sha256.ts";
import { parseAllowedSigners } from "./allowed_signers.ts";
import { parseLock } from "./lock.ts";
import { parseStrictJson } from "./strict_json.ts";

/** The project's files acceptance covers, by name under its `.warden` directory. */
export const PROJECT_TRUST_FILES = Object.freeze(["allowed_signers", "plugins.lock.json"] as const);
type TrustFileName = typeof PROJECT_TRUST_FILES[number];

/** One project's `.warden` as read now: the trust files' text (null when absent) and their digests. */
export interface ProjectTrust {
  /** The `.warden` directory, as configured. */
  readonly dir: string;
  /** Its real path: what an acceptance is recorded under. */
  readonly realDir: string;
  readonly texts: Readonly<Record<TrustFileName, string | null>>;
  readonly digests: Readonly<Record<TrustFileName, string | null>>;
}

/** Whether the user accepted the project's trust files as they are now, and if not, which changed. */
export interface Acceptance {
  readonly state: "accepted" | "not-accepted" | "changed";
  /** The files whose digest differs from the accepted one (empty unless `changed`). */
  readonly changed: readonly string[];
  readonly acceptedAt: string | null;
  /** The digests accepted (null: accepted as absent), when the project was ever accepted. */
  readonly recorded: Readonly<Record<TrustFileName, string | null>> | null;
}

const MAX_PROJECT_FILE_BYTES = 4 * 1024 * 1024;

/** Reads the project's trust files once; missing files are null. */
export async function readProjectTrust(dir: string): Promise<ProjectTrust> {
  const fs = platform().fs;
  const realDir = await fs.realPath(dir).catch(() => path.resolve(dir));
  const texts = {} as Record<TrustFileName, string | null>;
  const digests = {} as Record<TrustFileName, string | null>;
  await Promise.all(PROJECT_TRUST_FILES.map(async (name) => {
    const file = path.join(dir, name);
    try {
      texts[name] = await fs.readTextFile(file, MAX_PROJECT_FILE_BYTES);
      digests[name] = await sha256Digest(new TextEncoder().encode(texts[name]!));
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT") {
        throw new WardenError("invalid_trust_store", problem(`Cannot read the project's ${file}`, messageOf(error)));
      }
      texts[name] = digests[name] = null;
    }
  }));
  return { dir, realDir, texts, digests };
}

const Digest = v.nullable(v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/)));
const Accepted = v.strictObject({
  version: v.literal(1),
  projects: v.record(
    v.string(),
    v.strictObject({
      "allowed_signers": Digest,
      "plugins.lock.json": Digest,
      acceptedAt: v.pipe(v.string(), v.isoTimestamp()),
    }),
  ),
});
type AcceptedProjects = v.InferOutput<typeof Accepted>;

async function readAccepted(file: string): Promise<AcceptedProjects> {
  let text: string;
  try {
    text = await platform().fs.readTextFile(file, 16 * 1024 * 1024);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return { version: 1, projects: {} };
    throw new WardenError("invalid_trust_store", problem(`Cannot read ${file}`, messageOf(error)));
  }
  let parsed;
  try {
    parsed = v.safeParse(Accepted, parseStrictJson(text));
  } catch (error) {
    parsed = { success: false as const, issues: [{ message: messageOf(error) }] };
  }
  if (!parsed.success) {
    throw new WardenError(
      "invalid_trust_store",
      problem(
        `Invalid record of accepted projects ${file}`,
        parsed.issues[0].message,
        'delete it and accept each project again with "warden project accept"',
      ),
    );
  }
  return parsed.output;
}

/** Whether `project`'s trust files are the ones the user accepted (recorded in `acceptedFile`). */
export async function acceptanceOf(project: ProjectTrust, acceptedFile: string): Promise<Acceptance> {
  const recorded = (await readAccepted(acceptedFile)).projects[project.realDir];
  if (!recorded) return { state: "not-accepted", changed: [], acceptedAt: null, recorded: null };
  const changed = PROJECT_TRUST_FILES.filter((name) => recorded[name] !== project.digests[name]);
  return {
    state: changed.length === 0 ? "accepted" : "changed",
    changed,
    acceptedAt: recorded.acceptedAt,
    recorded: { "allowed_signers": recorded["allowed_signers"], "plugins.lock.json": recorded["plugins.lock.json"] },
  };
}

/**
 * Records the project's trust files `names` (both by default) as they are now, after checking that warden can read
 * them (a file accepted must never fail a start); a file not named keeps what was recorded for it (absent, if
 * nothing was), so a command that writes one file accepts that one and nothing the user has not seen. Written
 * atomically: the record is replaced, never half-written.
 */
export async function acceptProject(
  dir: string,
  acceptedFile: string,
  names: readonly TrustFileName[] = PROJECT_TRUST_FILES,
): Promise<ProjectTrust> {
  const project = await readProjectTrust(dir);
  const signers = project.texts["allowed_signers"];
  const lock = project.texts["plugins.lock.json"];
  if (signers !== null) await parseAllowedSigners(signers, path.join(dir, "allowed_signers"));
  if (lock !== null) parseLock(lock, path.join(dir, "plugins.lock.json"));
  const record = await readAccepted(acceptedFile);
  const before = record.projects[project.realDir];
  const kept = (name: TrustFileName) => names.includes(name) ? project.digests[name] : before?.[name] ?? null;
  record.projects[project.realDir] = {
    "allowed_signers": kept("allowed_signers"),
    "plugins.lock.json": kept("plugins.lock.json"),
    acceptedAt: new Date().toISOString(),
  };
  await platform().fs.mkdir(path.dirname(acceptedFile));
  await platform().fs.writeFileAtomic(acceptedFile, JSON.stringify(record, null, 2) + "\n");
  return project;
}

/** What a project plugin's refusal says: why, and the commands that show and accept the change. */
export function notAcceptedReason(acceptance: Acceptance): string {
  return acceptance.state === "changed"
    ? `the project's ${acceptance.changed.map((name) => `.warden/${name}`).join(" and ")} changed since you accepted it`
    : "the project's .warden/allowed_signers and .warden/plugins.lock.json were never accepted";
}

export const NOT_ACCEPTED_FIX =
  'review them ("warden project status" or "warden doctor" shows what changed), then run "warden project accept"';
