// What a plugin's source imports: definePlugin. `warden plugin build` bundles
// the source with esbuild, reads `plugin` from the bundle to write the
// manifest (JSON Schemas from the valibot schemas), and the sandboxed child
// calls `plugin.tools[name].handler(args, ctx)`. A plugin reaches nothing
// itself: reading and writing files, running programs and fetching are
// requests its ctx sends to the host, which answers those its risk class and
// manifest allow.
import type * as v from "valibot";
import type { FetchRequest, FetchResult, WriteResult } from "../../doors/egress.ts";
import type { SpawnRequest, SpawnResult } from "../../doors/spawn.ts";
import type { ClientLogLevel, RiskClass } from "../../tool.ts";

/**
 * The context a plugin tool gets. Every method but `progress` and `log` is a
 * request that crosses the sandbox to the host, which checks it against the
 * plugin's risk class and manifest (as it checks a built-in tool's context):
 * a refusal rejects with an error named "WardenError" whose `code` says why
 * (`capability_denied`, `path_refused`, `not_found`, ...).
 *
 * @example A handler's work through its ctx: reads, a refusal, progress and a log line
 * ```ts
 * async function countTodos(ctx: PluginContext, root: string): Promise<number> {
 *   const files = (await ctx.fs.glob(root, "**")).filter((file) => file.endsWith(".ts"));
 *   let count = 0;
 *   for (const [i, file] of files.entries()) {
 *     if (ctx.signal.aborted) break;
 *     try {
 *       count += (await ctx.fs.readText(root, file, { maxBytes: 1024 * 1024 })).split("TODO").length - 1;
 *     } catch (error) {
 *       // A refusal or a file too large is the host's WardenError, with its code.
 *       if ((error as { code?: string }).code !== "too_large") throw error;
 *     }
 *     await ctx.progress(i + 1, files.length);
 *   }
 *   ctx.log("info", { root, files: files.length, count });
 *   return count;
 * }
 * ```
 */
export interface PluginContext {
  /** Aborted when the client cancels the call or it times out; pending requests then reject. */
  readonly signal: AbortSignal;
  /** Files under the roots `capabilities.readRoots` names, by root id and relative path. */
  readonly fs: {
    readText(root: string, path: string, options?: { maxBytes?: number }): Promise<string>;
    list(root: string, dir?: string): Promise<{ name: string; kind: string }[]>;
    glob(
      root: string,
      patterns: string | string[],
      options?: { cwd?: string; dot?: boolean; gitignore?: boolean; ignore?: string[] },
    ): Promise<string[]>;
    stat(root: string, path: string): Promise<{ path: string; kind: string; size: number; mtimeMs: number }>;
    /** Many stats in one request, in order; null for a path that is missing or refused. */
    stats(
      root: string,
      paths: string[],
    ): Promise<({ path: string; kind: string; size: number; mtimeMs: number } | null)[]>;
    /** `external-side-effect` only: writes `data` atomically under a root of the manifest's `writeRoots`. */
    write(root: string, path: string, data: string): Promise<WriteResult>;
  };
  /** Root ids this plugin may read. */
  readonly roots: readonly string[];
  /** `gate` only: runs a program the manifest's `capabilities.argv` names (argv[0]), confined as a gate tool's. */
  spawn(argv: readonly string[], options?: SpawnRequest): Promise<SpawnResult>;
  /** `external-side-effect` only: fetches from an origin of the manifest's `netHosts`. */
  fetch(url: string, request?: FetchRequest): Promise<FetchResult>;
  /** Reports progress when the client asked for it; values that do not increase are dropped. */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /** Sends a log message to the client, subject to its log level. */
  log(level: ClientLogLevel, data: unknown): void;
}

type Input = v.StrictObjectSchema<v.ObjectEntries, v.ErrorMessage<v.StrictObjectIssue> | undefined>;
type Output = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/** One tool of a plugin. */
export interface PluginTool<I extends Input = Input, O extends Output | undefined = Output | undefined> {
  readonly title: string;
  readonly description: string;
  readonly input: I;
  readonly output?: O;
  readonly handler: (args: v.InferOutput<I>, ctx: PluginContext) => unknown;
}

/** Everything a plugin declares. */
export interface PluginSpec {
  /** Lowercase letters and digits; the plugin directory's name. */
  readonly id: string;
  readonly version: string;
  readonly description: string;
  readonly author: string;
  readonly risk: RiskClass;
  readonly capabilities: { readonly readRoots: readonly string[] };
  /** Memory (MiB) and CPU per call (ms) the plugin needs beyond the defaults; see core/plugins/sandbox/limits.ts. */
  readonly limits?: { readonly memoryMb?: number; readonly cpuMsPerCall?: number };
  // Each tool has its own input type; the host validates arguments before the handler runs.
  // deno-lint-ignore no-explicit-any
  readonly tools: Readonly<Record<string, PluginTool<any, any>>>;
}

/**
 * Declares a plugin: its source (`src/main.ts`) exports the result as
 * `plugin`, and `warden plugin build` turns it into `plugin.js` and a
 * manifest whose JSON Schemas come from the valibot `input`/`output`.
 *
 * @example A read plugin with one tool
 * ```ts
 * import * as v from "valibot";
 *
 * export const plugin = definePlugin({
 *   id: "hello",
 *   version: "0.1.0",
 *   description: "Counts the files of a root.",
 *   author: "Ada <ada@example.com>",
 *   risk: "read",
 *   capabilities: { readRoots: ["*"] },
 *   tools: {
 *     count: {
 *       title: "Count files",
 *       description: "Counts the files under a root that match a glob.",
 *       input: v.strictObject({ root: v.string(), glob: v.optional(v.string()) }),
 *       output: v.object({ files: v.number() }),
 *       handler: async ({ root, glob }, ctx) => ({ files: (await ctx.fs.glob(root, glob ?? "**")).length }),
 *     },
 *   },
 * });
 * ```
 */
export function definePlugin<S extends PluginSpec>(spec: S): S {
  return spec;
}
