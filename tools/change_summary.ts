// change_summary (gate): what changed in a root's git working tree, against
// HEAD or a base ref: files modified, added, deleted, renamed and untracked,
// with insertions and deletions.
import * as v from "valibot";
import { problem, WardenError } from "../core/errors.ts";
import { defineTool, type GateContext, projectIdInput } from "../core/tool.ts";
import { diffStatus, EMPTY_TREE, firstLine, git, openWorkTree, REF_PATTERN, resolveCommit } from "./lib/git.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

const FileChange = v.object({
  path: v.string(),
  status: v.picklist(["modified", "added", "deleted", "renamed", "copied", "type-changed", "unmerged", "untracked"]),
  oldPath: v.optional(v.string()),
  insertions: v.nullable(v.number()),
  deletions: v.nullable(v.number()),
  binary: v.boolean(),
  /** For a changed JS/TS module: how many modules import it, directly and in all. */
  dependents: v.optional(v.object({ direct: v.number(), total: v.number(), runtime: v.number() })),
});
type FileChange = v.InferOutput<typeof FileChange>;

/**
 * Dependents of the changed modules, from the code graph (the same as
 * code_blast_radius): per file, and every module the change can reach.
 */
async function blastRadius(ctx: GateContext, root: string, files: FileChange[]) {
  const changed = files.filter((f) => f.status !== "deleted" && /\.[cm]?[jt]sx?$/.test(f.path));
  if (changed.length === 0) return { modules: 0, dependents: [], lowerBound: false };
  // The graph code loads on the first call that needs it, not at startup (scripts/bench/README.md, "Start-up").
  const { moduleGraph } = await import("./lib/graph/module_graph.ts");
  const { dependentsOf, unknownsReaching } = await import("./lib/graph/graph_queries.ts");
  const graph = await moduleGraph(ctx, root);
  const reached = new Set<string>();
  let modules = 0;
  for (const file of changed) {
    if (!graph.modules.has(file.path)) continue;
    modules++;
    const all = dependentsOf(graph, file.path, { valueOnly: false });
    const runtime = dependentsOf(graph, file.path, { valueOnly: true });
    file.dependents = {
      direct: [...all.values()].filter((d) => d.depth === 1).length,
      total: all.size,
      runtime: runtime.size,
    };
    for (const path of all.keys()) reached.add(path);
  }
  const sources = changed.map((f) => f.path).filter((p) => graph.modules.has(p));
  return {
    modules,
    dependents: [...reached].filter((p) => !sources.includes(p)).sort(),
    lowerBound: unknownsReaching(graph, [...sources, ...reached], new Set([...sources, ...reached])).length > 0,
  };
}

/**
 * Risk class `gate`: it runs `git` (its only allowlisted program) in a root,
 * read-only, without network where the host can prevent it, and reads nothing else.
 */
export const tool = defineTool({
  name: "change_summary",
  title: "Change summary",
  description:
    "Summarises the changes in a root's git working tree against HEAD (or a base ref such as main or a commit): modified, added, deleted, renamed and untracked files with insertions and deletions, totals, and for each changed JS/TS module how many modules depend on it (the blast radius, from the same graph as code_blast_radius). Answers: what am I about to ship, and what could it break? The answer leads with totals; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "gate",
  capabilities: { spawn: ["git"] },
  input: v.strictObject({
    project_id: projectIdInput,
    blastRadius: v.optional(v.pipe(
      v.boolean(),
      v.description("Also count the dependents of each changed JS/TS module (default true; uses the code graph)."),
    )),
    base: v.optional(v.pipe(
      v.string(),
      v.regex(REF_PATTERN, "a ref name or commit, not an option"),
      v.maxLength(256),
      v.description("Compare with this ref or commit instead of HEAD, e.g. main or origin/main."),
    )),
    ...pageInput("rows"),
  }),
  output: v.object({
    totals: v.object({
      files: v.number(),
      modified: v.number(),
      added: v.number(),
      deleted: v.number(),
      renamed: v.number(),
      untracked: v.number(),
      insertions: v.number(),
      deletions: v.number(),
    }),
    ...pageOutput,
    truncated: v.pipe(v.boolean(), v.description("git's output was cut at its size limit: files may be missing.")),
    project_id: v.pipe(v.string(), v.description("The project read.")),
    base: v.string(),
    head: v.nullable(v.string()),
    files: v.array(FileChange),
    blastRadius: v.nullable(v.object({
      modules: v.number(),
      dependents: v.array(v.string()),
      lowerBound: v.boolean(),
    })),
  }),
  handler: async (args, ctx) => {
    const root = args.project_id;
    const tree = await openWorkTree(ctx, root);
    const headId = tree.head;
    let base = headId ?? EMPTY_TREE;
    if (args.base !== undefined) {
      const found = await resolveCommit(ctx, root, args.base);
      if (found === null) {
        throw new WardenError(
          "not_found",
          problem(
            `Base ref "${args.base}" does not exist in root "${root}"`,
            "pass a branch, tag or commit that git log knows",
          ),
        );
      }
      base = found;
    }
    // Paths come relative to the root (`--relative`), and only from under it (`-- .`).
    const [numstat, names, status] = await Promise.all([
      git(ctx, root, [
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--relative",
        "--numstat",
        "-z",
        "-M",
        base,
        "--",
        ".",
      ]),
      git(ctx, root, ["diff", "--no-ext-diff", "--relative", "--name-status", "-z", "-M", base, "--", "."]),
      git(ctx, root, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."]),
    ]);
    for (const result of [numstat, names, status]) {
      if (result.exitCode !== 0) throw new WardenError("tool_failed", problem("git failed", firstLine(result.stderr)));
    }

    const files = new Map<string, FileChange>();
    const fields = names.stdout.split("\0");
    for (let i = 0; i < fields.length - 1;) {
      const code = fields[i++];
      const kind = diffStatus(code);
      if (kind === "renamed" || kind === "copied") {
        const oldPath = fields[i++];
        const path = fields[i++];
        files.set(path, { path, status: kind, oldPath, insertions: 0, deletions: 0, binary: false });
      } else {
        const path = fields[i++];
        files.set(path, { path, status: kind, insertions: 0, deletions: 0, binary: false });
      }
    }
    const counts = numstat.stdout.split("\0");
    for (let i = 0; i < counts.length - 1;) {
      const [added, deleted, path] = counts[i++].split("\t");
      // A rename has an empty path here, then the old and the new path.
      const target = path === "" ? (i += 2, counts[i - 1]) : path;
      const file = files.get(target);
      if (!file) continue;
      file.binary = added === "-";
      file.insertions = file.binary ? null : Number(added);
      file.deletions = file.binary ? null : Number(deleted);
    }
    // The status paths are relative to the repository top; `?? ` entries are the untracked files.
    const prefix = tree.prefix;
    for (const entry of status.stdout.split("\0")) {
      if (!entry.startsWith("?? ")) continue;
      const full = entry.slice(3);
      const path = full.startsWith(prefix) ? full.slice(prefix.length) : full;
      files.set(path, { path, status: "untracked", insertions: null, deletions: null, binary: false });
    }

    const list = [...files.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
    const blast = args.blastRadius === false ? null : await blastRadius(ctx, root, list);
    const count = (status: FileChange["status"]) => list.filter((f) => f.status === status).length;
    const answer = {
      totals: {
        files: list.length,
        modified: count("modified"),
        added: count("added"),
        deleted: count("deleted"),
        renamed: count("renamed"),
        untracked: count("untracked"),
        insertions: list.reduce((n, f) => n + (f.insertions ?? 0), 0),
        deletions: list.reduce((n, f) => n + (f.deletions ?? 0), 0),
      },
      truncated: numstat.stdoutTruncated || names.stdoutTruncated || status.stdoutTruncated,
      project_id: root,
      base: args.base ?? (headId ? "HEAD" : "(no commits)"),
      head: headId,
      files: list,
      blastRadius: blast,
    };
    return await paginate(answer, { tool: "change_summary", args, lists: ["files", "blastRadius.dependents"] });
  },
});
