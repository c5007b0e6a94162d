// tech_debt_check (read): TODO / FIXME / HACK / XXX / STUB markers under a
// root, with file, line, column, tag and text, and totals by tag.
import * as v from "valibot";
import { defineTool, projectIdInput } from "../core/tool.ts";
import { WardenError } from "../core/errors.ts";
import { createDebtScanner, DEFAULT_TAGS, isScannable, looksBinary } from "./lib/debt_scanner.ts";
import { pageInput, pageOutput, paginate } from "./lib/paging.ts";

/** Files above this size are skipped (and counted) unless the caller raises it. */
const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
/** Files read at once: enough to hide latency, few enough to stay lean. */
const CONCURRENCY = 32;

const Finding = v.object({
  file: v.string(),
  line: v.number(),
  column: v.number(),
  tag: v.string(),
  text: v.string(),
});

/**
 * Risk class `read`: it globs and reads files under one configured root
 * through `ctx.fs`, honouring `.gitignore`, and touches nothing else.
 */
export const tool = defineTool({
  name: "tech_debt_check",
  title: "Technical debt markers",
  description:
    "Finds TODO, FIXME, HACK, XXX and STUB markers in a root's source files (comments, JSDoc, trailing comments, and code such as `throw new Error(\"not implemented\")`), honouring .gitignore and skipping node_modules. Returns each marker's file, line, column, tag and text, totals by tag, and how many files were skipped as binary or too large. A marker counts where people write tags: at the start of a comment's text (in prose files, Markdown and text, at the start of a line, list item or quote), or anywhere as `TODO:` / `FIXME(who)`; markers in strings, identifiers, commented-out code's strings and mid-sentence mentions are not counted. The answer leads with totals; findings beyond a page (about 16 KB) continue through `nextCursor`.",
  risk: "read",
  input: v.strictObject({
    project_id: projectIdInput,
    path: v.optional(v.pipe(v.string(), v.description("Directory inside the root to scan (default: the whole root)."))),
    glob: v.optional(v.pipe(
      v.union([v.string(), v.array(v.string())]),
      v.description('Glob pattern(s) relative to `path`, e.g. "src/**/*.ts" (default: every file).'),
    )),
    tags: v.optional(v.pipe(
      v.array(v.pipe(v.string(), v.regex(/^\w+$/), v.minLength(1))),
      v.minLength(1),
      v.description(`Markers to look for (default: ${DEFAULT_TAGS.join(", ")}).`),
    )),
    caseSensitive: v.optional(v.pipe(v.boolean(), v.description("Match tags case-sensitively (default true)."))),
    ...pageInput("findings"),
    maxFileBytes: v.optional(v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(64 * 1024 * 1024),
      v.description(`Files larger than this are skipped (default ${DEFAULT_MAX_FILE_BYTES}).`),
    )),
  }),
  output: v.object({
    totals: v.record(v.string(), v.number()),
    totalFindings: v.number(),
    ...pageOutput,
    truncated: v.boolean(),
    filesScanned: v.number(),
    filesWithFindings: v.number(),
    skipped: v.object({ binary: v.number(), tooLarge: v.number(), unreadable: v.number(), unknownType: v.number() }),
    project_id: v.pipe(v.string(), v.description("The project read.")),
    path: v.string(),
    findings: v.array(Finding),
  }),
  handler: async (args, ctx) => {
    const root = args.project_id;
    const base = args.path ?? ".";
    const maxFileBytes = args.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    const scanner = createDebtScanner({ tags: args.tags, caseSensitive: args.caseSensitive });
    const tags = args.tags ?? DEFAULT_TAGS;

    const info = await ctx.fs.stat(root, base);
    if (info.kind !== "directory") {
      throw new WardenError("not_found", `Not a directory in root "${root}": "${info.path}"; pass a directory as path`);
    }
    // Installed dependencies are never the project's debt, even without a .gitignore.
    const files = await ctx.fs.glob(root, args.glob ?? "**/*", { cwd: base, ignore: ["**/node_modules/**"] });
    const skipped = { binary: 0, tooLarge: 0, unreadable: 0, unknownType: 0 };
    const scannable = files.filter((file) => isScannable(file) || (skipped.unknownType++, false));
    const perFile: { file: string; findings: ReturnType<typeof scanner.scan> }[] = new Array(scannable.length);

    let next = 0;
    let done = 0;
    const progressEvery = Math.max(50, Math.floor(scannable.length / 20));
    const worker = async () => {
      while (next < scannable.length && !ctx.signal.aborted) {
        const index = next++;
        const file = scannable[index];
        try {
          const bytes = await ctx.fs.readBytes(root, file, { maxBytes: maxFileBytes });
          if (looksBinary(bytes)) skipped.binary++;
          else perFile[index] = { file, findings: scanner.scan(file, new TextDecoder().decode(bytes)) };
        } catch (error) {
          if (error instanceof WardenError && error.code === "too_large") skipped.tooLarge++;
          else skipped.unreadable++;
        }
        if (++done % progressEvery === 0) {
          void ctx.progress(done, scannable.length, `${done} of ${scannable.length} files`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, scannable.length) }, worker));
    if (ctx.signal.aborted) throw ctx.signal.reason;

    const totals: Record<string, number> = Object.fromEntries(tags.map((tag) => [tag, 0]));
    const findings: v.InferOutput<typeof Finding>[] = [];
    let totalFindings = 0;
    let filesWithFindings = 0;
    let filesScanned = 0;
    for (const entry of perFile) {
      if (!entry) continue;
      filesScanned++;
      if (entry.findings.length > 0) filesWithFindings++;
      for (const finding of entry.findings) {
        totalFindings++;
        totals[finding.tag] = (totals[finding.tag] ?? 0) + 1;
        findings.push({ file: entry.file, ...finding });
      }
    }
    const answer = {
      totals,
      totalFindings,
      truncated: false,
      filesScanned,
      filesWithFindings,
      skipped,
      project_id: root,
      path: info.path,
      findings,
    };
    const paged = await paginate(answer, { tool: "tech_debt_check", args, lists: ["findings"] });
    return { ...paged, truncated: paged.nextCursor !== undefined };
  },
});
