// What a plugin's source imports: definePlugin. `warden plugin build` bundles
// the source with esbuild, reads `plugin` from the bundle to write the
// manifest (JSON Schemas from the valibot schemas), and the sandboxed child
// calls `plugin.tools[name].handler(args, ctx)`.
import type * as v from "valibot";
import type { ClientLogLevel, RiskClass } from "../tool.ts";

/** The context a plugin tool gets: every call crosses the sandbox to the host, which checks it. */
export interface PluginContext {
  readonly signal: AbortSignal;
  readonly fs: {
    readText(root: string, path: string): Promise<string>;
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
  };
  /** Root ids this plugin may read. */
  readonly roots: readonly string[];
  progress(progress: number, total?: number, message?: string): Promise<void>;
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
  /** Memory (MiB) and CPU per call (ms) the plugin needs beyond the defaults; see core/plugins/limits.ts. */
  readonly limits?: { readonly memoryMb?: number; readonly cpuMsPerCall?: number };
  // Each tool has its own input type; the host validates arguments before the handler runs.
  // deno-lint-ignore no-explicit-any
  readonly tools: Readonly<Record<string, PluginTool<any, any>>>;
}

/**
 * Declares a plugin. Its source exports the result as `plugin`:
 *
 * @example
 * ```ts
 * export const plugin = definePlugin({
 *   id: "hello", version: "0.1.0", description: "Greets.", author: "Ada <ada@example.com>",
 *   risk: "read", capabilities: { readRoots: [] },
 *   tools: { greet: { title: "Greet", description: "Says hello.", input: v.strictObject({ name: v.string() }),
 *     handler: ({ name }) => `Hello, ${name}!` } },
 * });
 * ```
 */
export function definePlugin<S extends PluginSpec>(spec: S): S {
  return spec;
}
