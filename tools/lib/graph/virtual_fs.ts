// A synchronous view of one root for TypeScript's module resolution and
// tsconfig parsing, answered from memory: the file list, the texts fetched
// ahead of time, and workspace packages linked under a virtual node_modules.
// Paths given to TypeScript live under VROOT, never the host path of the
// root, so nothing TypeScript reports can leak one. A question about a path
// not known yet (a tsconfig `extends` into node_modules) is recorded in
// `wanted`, answered "no", and fetched before the next pass.
import path from "node:path";

/** The absolute path TypeScript sees for the root. */
export const VROOT = "/warden-root";

/** Root-relative path (`src/a.ts`, `.` for the root) to the path TypeScript sees. */
export function toVirtual(rel: string): string {
  return rel === "." || rel === "" ? VROOT : `${VROOT}/${rel}`;
}

/** A path TypeScript reported back to root-relative; undefined when it lies outside the root. */
export function fromVirtual(p: string): string | undefined {
  if (p.length > 1 && p.endsWith("/")) p = p.replace(/\/+$/, "");
  if (p === VROOT) return ".";
  return p.startsWith(VROOT + "/") ? p.slice(VROOT.length + 1) : undefined;
}

/** The parent directory of a root-relative path (`.` at the top). */
export function parentDir(rel: string): string {
  const slash = rel.lastIndexOf("/");
  return slash === -1 ? "." : rel.slice(0, slash);
}

/** Joins root-relative paths, `.` being the root. */
export function joinRel(dir: string, name: string): string {
  return path.posix.normalize(dir === "." ? name : `${dir}/${name}`);
}

/** Something a pass asked about and the next pass should know. */
export interface Wanted {
  readonly path: string;
  readonly kind: "file" | "directory";
}

/** A workspace package made visible as `node_modules/<name>`. */
export interface WorkspaceLink {
  readonly name: string;
  /** Root-relative directory of the package. */
  readonly dir: string;
}

/** File-system facts about a root, in memory. */
export class VirtualFs {
  /** Every file of the root outside node_modules. */
  readonly files: ReadonlySet<string>;
  readonly #dirs = new Set<string>();
  readonly #children = new Map<string, { files: string[]; directories: string[] }>();
  /** Texts read ahead (package.json, tsconfig files, anything fetched); null when missing. */
  readonly texts = new Map<string, string | null>();
  /** Facts fetched about paths outside the file list (node_modules): file, directory or missing. */
  readonly extra = new Map<string, "file" | "directory" | null>();
  /** Questions a pass could not answer from memory. */
  readonly wanted = new Map<string, Wanted>();
  /** Record misses in `wanted` (tsconfig parsing) or answer them "no" (module resolution). */
  recordMisses = false;
  #links: WorkspaceLink[] = [];
  readonly #linkDirs = new Set<string>();

  constructor(files: Iterable<string>) {
    this.files = new Set(files);
    this.#dirs.add(".");
    const entry = (dir: string) => {
      let found = this.#children.get(dir);
      if (!found) this.#children.set(dir, found = { files: [], directories: [] });
      return found;
    };
    for (const file of this.files) {
      let dir = parentDir(file);
      entry(dir).files.push(file.slice(file.lastIndexOf("/") + 1));
      while (!this.#dirs.has(dir)) {
        this.#dirs.add(dir);
        const up = parentDir(dir);
        entry(up).directories.push(dir.slice(dir.lastIndexOf("/") + 1));
        dir = up;
      }
    }
  }

  /** Directories that hold at least one file, `.` included. */
  get directories(): ReadonlySet<string> {
    return this.#dirs;
  }

  /** Makes workspace packages resolvable by name, as a package manager's links would. */
  setLinks(links: readonly WorkspaceLink[]): void {
    this.#links = [...links].sort((a, b) => b.name.length - a.name.length);
    this.#linkDirs.clear();
    for (const link of links) {
      const parts = `node_modules/${link.name}`.split("/");
      for (let i = 1; i < parts.length; i++) this.#linkDirs.add(parts.slice(0, i).join("/"));
    }
  }

  /** Maps `node_modules/<workspace>/x` to the package's own path; other paths unchanged. */
  unlink(rel: string): string {
    return this.#unlink(rel);
  }

  #unlink(rel: string): string {
    if (!rel.startsWith("node_modules/")) return rel;
    for (const link of this.#links) {
      const prefix = `node_modules/${link.name}`;
      if (rel === prefix) return link.dir;
      if (rel.startsWith(prefix + "/")) return joinRel(link.dir, rel.slice(prefix.length + 1));
    }
    return rel;
  }

  #isNodeModules(rel: string): boolean {
    return rel === "node_modules" || rel.startsWith("node_modules/") || rel.includes("/node_modules/") ||
      rel.endsWith("/node_modules");
  }

  #miss(rel: string, kind: Wanted["kind"]): false {
    if (this.recordMisses && !this.wanted.has(rel)) this.wanted.set(rel, { path: rel, kind });
    return false;
  }

  fileExists = (p: string): boolean => {
    const rel0 = fromVirtual(p);
    if (rel0 === undefined) return false;
    const rel = this.#unlink(rel0);
    if (this.files.has(rel)) return true;
    if (this.#isNodeModules(rel)) {
      const known = this.extra.get(rel);
      return known === undefined ? this.#miss(rel, "file") : known === "file";
    }
    return false;
  };

  directoryExists = (p: string): boolean => {
    const rel0 = fromVirtual(p);
    if (rel0 === undefined) return false;
    if (this.#linkDirs.has(rel0)) return true;
    const rel = this.#unlink(rel0);
    if (this.#dirs.has(rel)) return true;
    if (this.#isNodeModules(rel)) {
      const known = this.extra.get(rel);
      return known === undefined ? this.#miss(rel, "directory") : known === "directory";
    }
    return false;
  };

  readFile = (p: string): string | undefined => {
    const rel0 = fromVirtual(p);
    if (rel0 === undefined) return undefined;
    const rel = this.#unlink(rel0);
    const text = this.texts.get(rel);
    if (text !== undefined) return text ?? undefined;
    if (this.files.has(rel) || (this.#isNodeModules(rel) && this.extra.get(rel) !== null)) {
      this.#miss(rel, "file");
    }
    return undefined;
  };

  realpath = (p: string): string => {
    const rel = fromVirtual(p);
    return rel === undefined ? p : toVirtual(this.#unlink(rel));
  };

  getDirectories = (p: string): string[] => {
    const rel = fromVirtual(p);
    return rel === undefined ? [] : [...(this.#children.get(this.#unlink(rel))?.directories ?? [])];
  };

  /** Entries of a directory by name, as `ts.matchFiles` wants them. */
  entries = (p: string): { files: string[]; directories: string[] } => {
    const rel = fromVirtual(p);
    const entry = rel === undefined ? undefined : this.#children.get(rel);
    return { files: entry?.files ?? [], directories: entry?.directories ?? [] };
  };

  getCurrentDirectory = (): string => VROOT;
  useCaseSensitiveFileNames = true;
}
