// Which project a call reads. A project is a root, named by its id; a tool that
// reads a tree says so by taking `project_id`, and the host settles it before the
// tool runs: the argument, else the HTTP request's X-MCP-Project header, else the
// default (the first root), unless strict selection asks the caller to choose.
// The errors name project ids only, never a path.
import type { CatalogEntry } from "../catalog.ts";
import { messageOf, problem, received, WardenError } from "../errors.ts";

/** The argument a tool that reads a project's tree takes. */
export const PROJECT_ARGUMENT = "project_id";

/** The HTTP header that names the project of every call of a request without `project_id`. */
export const PROJECT_HEADER = "X-MCP-Project";

/** Most project ids an answer lists (host_context, project_unknown); `truncated` says there are more. */
export const MAX_LISTED_PROJECTS = 64;

/** How a call that names no project is settled, as host_context reports it. */
export type SelectionMode =
  /** No project is registered: such a call fails (project_ambiguous, no-default). */
  | "none"
  /** One project: it is the call's. */
  | "single"
  /** Several, and the first is the default. */
  | "default"
  /** Several, and the caller must name one (--strict-project-selection). */
  | "strict";

/** What settles a call's project besides its own argument. */
export interface ProjectSelection {
  /** --strict-project-selection. */
  readonly strict: boolean;
  /** The X-MCP-Project header of the HTTP request the call came in; null on stdio or without it. */
  readonly header: string | null;
}

export function selectionMode(ids: readonly string[], strict: boolean): SelectionMode {
  if (ids.length === 0) return "none";
  if (ids.length === 1) return "single";
  return strict ? "strict" : "default";
}

/** Whether a tool reads a project's tree: its input takes `project_id`. */
export function readsProject(tool: CatalogEntry): boolean {
  const properties = tool.descriptor.inputSchema.properties;
  return typeof properties === "object" && properties !== null && PROJECT_ARGUMENT in properties;
}

/** The project ids a caller may use, as answers list them: at most MAX_LISTED_PROJECTS, and whether there are more. */
export function listedProjects(ids: readonly string[]): { projects: string[]; truncated: boolean } {
  return { projects: ids.slice(0, MAX_LISTED_PROJECTS), truncated: ids.length > MAX_LISTED_PROJECTS };
}

function choices(ids: readonly string[]): string {
  const { projects, truncated } = listedProjects(ids);
  return projects.length === 0
    ? "no project is registered"
    : `the projects you may use are ${projects.join(", ")}${
      truncated ? ` and ${ids.length - projects.length} more` : ""
    }`;
}

/**
 * The project a call reads: `asked` (its project_id), else the header, else the default. Throws `project_unknown`
 * for an id that is not registered and `project_ambiguous` when none was named and none can be chosen for the caller.
 */
export function resolveProject(ids: readonly string[], asked: unknown, selection: ProjectSelection): string {
  const named = typeof asked === "string" ? asked : selection.header;
  if (named !== null) {
    if (ids.includes(named)) return named;
    const from = typeof asked === "string" ? "" : ` (from the ${PROJECT_HEADER} header)`;
    throw new WardenError(
      "project_unknown",
      problem(
        `Unknown project ${received(named)}${from}`,
        choices(ids),
        "pass one of them as project_id; to reach another, the operator adds it (--root <id>=<dir>) and you reconnect",
      ),
      { project_id: named, ...listedProjects(ids) },
    );
  }
  if (ids.length === 0) {
    throw new WardenError(
      "project_ambiguous",
      problem(
        "No project to read",
        "no project is registered",
        "add a folder to the client's roots (the server takes them, --client-roots) or give one with --root <id>=<dir>",
      ),
      { reason: "no-default", ...listedProjects(ids) },
    );
  }
  if (ids.length > 1 && selection.strict) {
    throw new WardenError(
      "project_ambiguous",
      problem(
        "Which project?",
        `this server has several and chooses none for you (--strict-project-selection): ${choices(ids)}`,
        `pass one as project_id (over HTTP, the ${PROJECT_HEADER} header names one for every call of a request)`,
      ),
      { reason: "multi-project-implicit", ...listedProjects(ids) },
    );
  }
  return ids[0];
}

/** resolveProject for one call: its `project_id`, its request's header, its host's --strict-project-selection. */
export function projectOfCall(
  ids: readonly string[],
  asked: unknown,
  call: { readonly host: { readonly strictProjectSelection: boolean }; readonly projectHeader?: string | null },
): string {
  return resolveProject(ids, asked, { strict: call.host.strictProjectSelection, header: call.projectHeader ?? null });
}

/** A root as an MCP client lists it (`roots/list`). */
export interface ClientRoot {
  readonly uri: string;
  readonly name?: string;
}

/** A project id made of `text`: lowercase letters, digits, - and _, starting with a letter, at most 32 characters. */
function idOf(text: string): string {
  const id = text.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^[^a-z]+/, "").replace(/-+$/, "").slice(0, 32);
  return id === "" ? "project" : id;
}

/**
 * The projects an MCP client's roots name, in its order (the first is the default): each a `file:` URI, named by the
 * root's name, else its directory's; a name taken already gets `-2`, `-3`... Anything else is left out, with why.
 */
export function projectsOfClientRoots(
  roots: readonly ClientRoot[],
  pathOfUrl: (url: URL) => string,
): { specs: { id: string; path: string }[]; refused: { uri: string; problem: string }[] } {
  const specs: { id: string; path: string }[] = [];
  const refused: { uri: string; problem: string }[] = [];
  const taken = new Set<string>();
  for (const root of roots) {
    let url: URL;
    try {
      url = new URL(root.uri);
    } catch {
      refused.push({ uri: String(root.uri), problem: "not a URI" });
      continue;
    }
    if (url.protocol !== "file:") {
      refused.push({ uri: root.uri, problem: "not a file: URI (MCP roots are file: URIs)" });
      continue;
    }
    let dir: string;
    try {
      dir = pathOfUrl(url);
    } catch (error) {
      refused.push({ uri: root.uri, problem: messageOf(error) });
      continue;
    }
    const base = idOf(
      typeof root.name === "string" && root.name.trim() !== ""
        ? root.name
        : dir.split(/[\\/]/).filter(Boolean).at(-1) ?? "",
    );
    let id = base;
    for (let n = 2; taken.has(id); n++) id = `${base.slice(0, 29)}-${n}`;
    taken.add(id);
    specs.push({ id, path: dir });
  }
  return { specs, refused };
}
