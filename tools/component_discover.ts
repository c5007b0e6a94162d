// component_discover (read): what a root or one of its directories is made
// of: files and lines, production versus test, languages, packages and
// workspaces, entry points, and technical-debt markers.
import * as v from "valibot";
import { defineTool, projectIdInput } from "../core/tool.ts";
import { problem, received, WardenError } from "../core/errors.ts";
import { createDebtScanner, DEFAULT_TAGS, isScannable, looksBinary } from "./lib/debt_scanner.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
const CONCURRENCY = 32;
/** Conventional entry modules, as knip and bundlers look for them. */
const CONVENTIONAL_ENTRY = /^(?:src\/)?(?:index|main|cli)\.(?:[mc]?[jt]s|[jt]sx)$/;

/**
 * Risk class `read`: globs and reads the files of one configured root
 * through `ctx.fs`, honouring `.gitignore`, and touches nothing else.
 */
export const tool = defineTool({
  name: "component_discover",
  title: "Discover a component",
  description:
    "Describes what a root, or a directory of it, is made of: files and non-blank lines split into production and test code (tests, specs, fixtures, mocks), the languages by files and lines, the packages and workspaces it holds (package.json, deno.json, Cargo.toml, go.mod, pyproject.toml, with name, version, workspace membership and the entry points each names), the entry points, and counts of TODO/FIXME/HACK/XXX/STUB markers as tech_debt_check finds them. Honours .gitignore and skips node_modules. The answer leads with totals; lists longer than a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    project_id: projectIdInput,
    path: v.optional(
      v.pipe(v.string(), v.description("Directory inside the root to describe (default: the whole root).")),
    ),
    maxFileBytes: v.optional(v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(64 * 1024 * 1024),
      v.description(`Files larger than this are counted but not read (default ${DEFAULT_MAX_FILE_BYTES}).`),
    )),
    ...pageInput("rows"),
  }),
  output: v.object({
    files: v.object({ total: v.number(), production: v.number(), test: v.number(), other: v.number() }),
    lines: v.object({ total: v.number(), production: v.number(), test: v.number() }),
    debt: v.object({
      total: v.number(),
      production: v.number(),
      test: v.number(),
      byTag: v.record(v.string(), v.number()),
      filesWithMarkers: v.number(),
    }),
    skipped: v.object({ binary: v.number(), tooLarge: v.number(), unreadable: v.number() }),
    ...pageOutput,
    project_id: v.pipe(v.string(), v.description("The project read.")),
    path: v.string(),
    languages: v.array(v.object({
      language: v.string(),
      files: v.number(),
      lines: v.number(),
      testFiles: v.number(),
      testLines: v.number(),
    })),
    packages: v.array(v.object({
      manifest: v.string(),
      kind: v.string(),
      name: v.optional(v.string()),
      version: v.optional(v.string()),
      private: v.optional(v.boolean()),
      workspace: v.boolean(),
      entryPoints: v.array(v.string()),
    })),
    workspaces: v.array(v.string()),
    entryPoints: v.array(v.object({ file: v.string(), from: v.string() })),
  }),
  handler: async (args, ctx) => {
    // The package and language code loads on the first call, not at startup (scripts/bench/README.md, "Start-up").
    const { isManifest, isTestFile, languageOfFile, readManifests } = await import("./lib/components.ts");
    const root = args.project_id;
    const base = args.path ?? ".";
    const maxFileBytes = args.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    let info;
    try {
      info = await ctx.fs.stat(root, base);
    } catch (error) {
      // A path that leads out of the root keeps the door's refusal, the message every tool gives.
      if (error instanceof WardenError && error.code === "not_found") {
        throw new WardenError(
          "invalid_arguments",
          problem(
            'Invalid argument "path"',
            `${received(base)} is not a directory in root "${root}"`,
            "pass a directory relative to the root",
          ),
        );
      }
      throw error;
    }
    if (info.kind !== "directory") {
      throw new WardenError(
        "invalid_arguments",
        problem('Invalid argument "path"', `${received(info.path)} is a file`, "pass a directory"),
      );
    }
    const scope = info.path;
    const files = await ctx.fs.glob(root, "**/*", { cwd: scope, dot: true, ignore: ["**/node_modules/**"] });
    const fileSet = new Set(files);
    const scanner = createDebtScanner();

    const languages = new Map<string, { files: number; lines: number; testFiles: number; testLines: number }>();
    const totals = {
      files: { total: files.length, production: 0, test: 0, other: 0 },
      lines: { total: 0, production: 0, test: 0 },
    };
    const debt = {
      total: 0,
      production: 0,
      test: 0,
      byTag: Object.fromEntries(DEFAULT_TAGS.map((t) => [t, 0])),
      filesWithMarkers: 0,
    };
    const skipped = { binary: 0, tooLarge: 0, unreadable: 0 };
    const manifestTexts = new Map<string, string>();
    // Manifests are named relative to the component, so that its own package.json is its root package.
    const local = (file: string) => (scope === "." ? file : file.slice(scope.length + 1));

    const wanted = files.filter((file) => {
      if (languageOfFile(file) || isScannable(file) || isManifest(file) || file.endsWith("pnpm-workspace.yaml")) {
        return true;
      }
      totals.files.other++;
      return false;
    });
    let next = 0;
    let done = 0;
    const every = Math.max(200, Math.ceil(wanted.length / 20));
    const worker = async () => {
      while (next < wanted.length && !ctx.signal.aborted) {
        const file = wanted[next++];
        let bytes: Uint8Array;
        try {
          bytes = await ctx.fs.readBytes(root, file, { maxBytes: maxFileBytes });
        } catch (error) {
          if (error instanceof WardenError && error.code === "too_large") skipped.tooLarge++;
          else skipped.unreadable++;
          totals.files.other++;
          continue;
        }
        if (looksBinary(bytes)) {
          skipped.binary++;
          totals.files.other++;
          continue;
        }
        const text = new TextDecoder().decode(bytes);
        if (isManifest(file) || file.endsWith("pnpm-workspace.yaml")) manifestTexts.set(local(file), text);
        const test = isTestFile(local(file));
        const language = languageOfFile(file);
        if (language) {
          let lines = 0;
          for (const line of text.split("\n")) if (line.trim() !== "") lines++;
          const entry = languages.get(language) ?? { files: 0, lines: 0, testFiles: 0, testLines: 0 };
          entry.files++;
          entry.lines += lines;
          if (test) {
            entry.testFiles++;
            entry.testLines += lines;
          }
          languages.set(language, entry);
          totals.lines.total += lines;
          totals.lines[test ? "test" : "production"] += lines;
          totals.files[test ? "test" : "production"]++;
        } else totals.files.other++;
        const findings = scanner.scan(file, text);
        if (findings.length > 0) debt.filesWithMarkers++;
        for (const finding of findings) {
          debt.total++;
          debt[test ? "test" : "production"]++;
          debt.byTag[finding.tag] = (debt.byTag[finding.tag] ?? 0) + 1;
        }
        if (++done % every === 0) void ctx.progress(done, wanted.length, `read ${done} of ${wanted.length} files`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, wanted.length) }, worker));
    if (ctx.signal.aborted) throw ctx.signal.reason;

    const localFiles = new Set([...fileSet].map(local));
    const { manifests, workspacePatterns } = readManifests(manifestTexts, localFiles);
    const full = (file: string) => (scope === "." ? file : `${scope}/${file}`);
    const entries = new Map<string, string>();
    for (const manifest of manifests) {
      for (const file of manifest.entryPoints) if (!entries.has(file)) entries.set(file, full(manifest.manifest));
    }
    for (const file of localFiles) {
      if (CONVENTIONAL_ENTRY.test(file) && !entries.has(file)) entries.set(file, "convention");
    }
    const answer = {
      files: totals.files,
      lines: totals.lines,
      debt,
      skipped,
      project_id: root,
      path: scope,
      languages: [...languages].map(([language, entry]) => ({ language, ...entry }))
        .sort((a, b) => b.lines - a.lines || (a.language < b.language ? -1 : 1)),
      packages: manifests.map((m) => ({
        manifest: full(m.manifest),
        kind: m.kind,
        ...(m.name !== undefined ? { name: m.name } : {}),
        ...(m.version !== undefined ? { version: m.version } : {}),
        ...(m.private !== undefined ? { private: m.private } : {}),
        workspace: m.workspace,
        entryPoints: m.entryPoints.map(full),
      })),
      workspaces: workspacePatterns,
      entryPoints: [...entries].map(([file, from]) => ({ file: full(file), from }))
        .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0)),
    };
    return await paginate(answer, {
      tool: "component_discover",
      args,
      lists: ["languages", "packages", "entryPoints", "workspaces"],
    });
  },
});
