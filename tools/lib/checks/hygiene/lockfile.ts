// hygiene/lockfile: a lockfile the change touches while no manifest that
// governs it does. Installed versions then moved without a declared reason: a
// stray `npm install` of another version, a merge that kept the wrong side,
// or a dependency swapped by hand.
import type { BuiltinCheck, ChangedFile, Finding, Severity } from "../types.ts";

const CHECK = "hygiene/lockfile";

/** Lockfiles by name, with the manifests that govern them (in the same directory or, for workspaces, below it). */
const LOCKFILES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  "package-lock.json": ["package.json"],
  "npm-shrinkwrap.json": ["package.json"],
  "pnpm-lock.yaml": ["package.json", "pnpm-workspace.yaml"],
  "yarn.lock": ["package.json"],
  "bun.lockb": ["package.json"],
  "bun.lock": ["package.json"],
  "deno.lock": ["deno.json", "deno.jsonc", "package.json"],
});

/** Options of hygiene/lockfile. */
export interface LockfileOptions {
  /** Default medium: often a deliberate refresh, worth saying so in review. */
  readonly severity?: Severity;
}

function split(path: string): { dir: string; base: string } {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? { dir: "", base: path } : { dir: path.slice(0, slash), base: path.slice(slash + 1) };
}

/** Whether `path` is under `dir` ("" is the root). */
function within(path: string, dir: string): boolean {
  return dir === "" || path.startsWith(`${dir}/`);
}

/**
 * The lockfiles of `files` that changed with no governing manifest: one named in LOCKFILES for it, in its directory
 * or a directory below (a workspace package's package.json moves the root's lockfile).
 */
export function unexplainedLockfiles(files: readonly ChangedFile[]): ChangedFile[] {
  return files.filter((file) => {
    const { dir, base } = split(file.path);
    const manifests = LOCKFILES[base];
    if (!manifests) return false;
    return !files.some((other) => {
      const at = split(other.path);
      const old = other.oldPath === undefined ? undefined : split(other.oldPath);
      return (manifests.includes(at.base) && within(other.path, dir)) ||
        (old !== undefined && manifests.includes(old.base) && within(other.oldPath!, dir));
    });
  });
}

/** The check, with its options. */
export function lockfileCheck(options: LockfileOptions = {}): BuiltinCheck {
  return {
    name: CHECK,
    description:
      "Lockfiles (package-lock.json, npm-shrinkwrap.json, pnpm-lock.yaml, yarn.lock, bun.lock(b), deno.lock) the change touches while no manifest governing them (package.json, deno.json(c), pnpm-workspace.yaml, in the same directory or a workspace below) changes. Medium by default.",
    run(scope) {
      const findings: Finding[] = unexplainedLockfiles(scope.files).map((file) => {
        const { dir } = split(file.path);
        const manifests = LOCKFILES[split(file.path).base].join(" or ");
        return {
          check: CHECK,
          file: file.path,
          line: file.addedLines[0]?.line ?? null,
          column: null,
          severity: options.severity ?? "medium",
          rule: "lockfile-without-manifest",
          message: `${file.path} is ${file.status === "deleted" ? "deleted" : "changed"} but no ${manifests} under ${
            dir === "" ? "the root" : `${dir}/`
          } is: dependencies moved with no declared reason; change the manifest with it, or say why (a deliberate refresh) in review`,
        };
      });
      return Promise.resolve(findings);
    },
  };
}
