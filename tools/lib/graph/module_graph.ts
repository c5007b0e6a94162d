// The module graph of a root: every JavaScript and TypeScript module, what it
// imports (resolved as TypeScript would, per project), and who imports it.
// Built through ctx.fs only and kept per root in module state: a later query
// stats what it knows (directories for added or removed files, files for
// edits) and re-reads only what changed. Files are parsed once per content
// (keyed by size and mtime); resolution is redone for changed files, or for
// all when files appear or vanish or a package.json or tsconfig changes.
import type { ReadContext } from "../../../core/tool.ts";
import { messageOf, problem, received, WardenError } from "../../../core/errors.ts";
import { isModuleFile, summarizeModule } from "./module_summary.ts";
import type { ModuleSummary } from "./records.ts";
import { markWorkspaces, type PackageInfo, parsePackage } from "./packages.ts";
import { type Resolution, Resolver } from "./resolver.ts";
import { type ConfigSet, isConfigFile, loadConfigs } from "./tsconfig.ts";
import { loadTypeScript, type TsApi, typeScriptWarm } from "../typescript/typescript.ts";
import { joinRel, parentDir, VirtualFs, type Wanted } from "./virtual_fs.ts";

/** One module of the graph. */
export interface GraphModule {
  readonly path: string;
  /** Absent for JSON modules and files that could not be read. */
  readonly summary?: ModuleSummary;
  /** One per `summary.imports` entry, in order. */
  readonly resolutions: readonly Resolution[];
  /** Not a file of the project (ignored by .gitignore, or a build output), parsed because a module imports it. */
  readonly outside: boolean;
  /** Why the file could not be read, when it could not. */
  readonly unreadable?: string;
}

/** One import of a module by another. */
export interface ImportEdge {
  readonly from: string;
  /** Index into the importer's `summary.imports`. */
  readonly index: number;
  readonly typeOnly: boolean;
}

/** A place the graph cannot see through, so answers that depend on it are lower bounds. */
export interface UnknownSource {
  readonly path: string;
  readonly kind: "parse-error" | "unreadable" | "unresolved" | "computed-import";
  readonly reason: string;
  readonly line?: number;
  readonly specifier?: string;
  /** For a computed import written as a template: the root-relative glob it can match. */
  readonly pattern?: string;
}

/** The graph as one query sees it; immutable. */
export interface ModuleGraph {
  readonly root: string;
  /** Every file listed under the root (node_modules excluded), .gitignore or not. */
  readonly files: ReadonlySet<string>;
  /** Files .gitignore excludes. */
  readonly ignored: ReadonlySet<string>;
  readonly modules: ReadonlyMap<string, GraphModule>;
  /** Who imports `path` (a module or an asset), sorted by importer. */
  importersOf(path: string): readonly ImportEdge[];
  /** Files whose imports are not fully known, sorted. */
  readonly unknowns: readonly UnknownSource[];
  readonly packages: readonly PackageInfo[];
  readonly workspacePatterns: readonly string[];
  readonly configs: ConfigSet;
  /** Configuration problems (a tsconfig `extends` outside the root, an unreadable package.json). */
  readonly warnings: readonly string[];
  /** What this query cost: whether the graph came from cache, files parsed and imports resolved now. */
  readonly build: { readonly cached: boolean; readonly parsed: number; readonly resolved: number; readonly ms: number };
  /** Results derived from this graph, shared by later queries while it stays unchanged. */
  readonly memo: Map<string, unknown>;
}

/** Largest module the graph reads. */
const MAX_MODULE_BYTES = 4 * 1024 * 1024;
/**
 * Files taken at once by the loops below. Reads finish synchronously on both
 * platforms, so when parsing this bounds how many texts wait for the parser.
 */
const CONCURRENCY = 48;
/** Modules parsed in one build after which TypeScript's compiled code is worth keeping (see typeScriptWarm). */
const WARM_PARSES = 100;
/** Items between two yields to the event loop in a long loop. */
const YIELD_EVERY = 64;
/**
 * A stamp is trusted to stand for what was read only when the file (or
 * directory) last changed a while before the read (or listing): a change in
 * the same clock tick as a read would otherwise go unseen. Git calls this
 * "racy clean". It lets a cold build read files without a stat each (the
 * first later query stats them anyway). The while is 50 ms, enough for the
 * coarse clock Linux stamps files with, or 2 s until the root has shown an
 * mtime that is not a whole second (file systems that keep seconds only).
 */
function racyMargin(state: RootState): number {
  return state.fineClock ? 50 : 2000;
}
/** Whether a stamp can be trusted for what was read or listed at `time`: its change was a while (`margin`) before. */
function changedBefore(stamp: Stamp, time: number, margin: number): boolean {
  return stamp.mtimeMs < time - margin;
}

/**
 * Settles the mtime of a module read without a trusted stamp, when `stamp` (taken after the read) shows the same
 * size and a change older than the read; true when it did.
 */
function settleRead(known: Parsed, stamp: Stamp, margin: number): boolean {
  if (!Number.isNaN(known.mtimeMs) || stamp.size !== known.size || !changedBefore(stamp, known.readAt, margin)) {
    return false;
  }
  known.mtimeMs = stamp.mtimeMs;
  return true;
}

/** Directories never listed: installed dependencies and package-manager stores. */
const LIST_IGNORE = ["**/node_modules/**", "**/.yarn/**", "**/.pnpm-store/**"];

interface Stamp {
  readonly size: number;
  readonly mtimeMs: number;
}

interface Parsed {
  /** Bytes read. */
  readonly size: number;
  /** The file's mtime when known to match the text read; NaN until a later stat settles it. */
  mtimeMs: number;
  /** Date.now() when the read started. */
  readonly readAt: number;
  readonly summary?: ModuleSummary;
  readonly unreadable?: string;
}

interface Snapshot {
  readonly files: ReadonlySet<string>;
  readonly ignored: ReadonlySet<string>;
  /** Directories with files, with their mtime; null until a stat later than the listing settles it. */
  readonly dirs: ReadonlyMap<string, number | null>;
  /** Date.now() when the listing started. */
  readonly listedAt: number;
  /** The node_modules directories whose package names were read, with their mtime. */
  readonly nodeModules: ReadonlyMap<string, number>;
  /** package.json, tsconfig, pnpm-workspace.yaml and .gitignore files, by stamp. */
  readonly meta: ReadonlyMap<string, Stamp>;
  readonly vfs: VirtualFs;
  readonly packages: readonly PackageInfo[];
  readonly workspacePatterns: readonly string[];
  readonly configs: ConfigSet;
  readonly resolver: Resolver;
  readonly warnings: readonly string[];
  /** Resolutions by module, valid for the summary object they were made from. */
  readonly resolved: Map<string, { summary: ModuleSummary | undefined; resolutions: readonly Resolution[] }>;
  graph?: ModuleGraph;
}

interface RootState {
  /** Parsed summaries by file; survives an aborted build, so the next one resumes. */
  readonly parsed: Map<string, Parsed>;
  snapshot?: Snapshot;
  /** Builds run one at a time per root. */
  queue: Promise<unknown>;
  /** Whether an mtime of this root had a fraction of a second: its file system keeps fine times. */
  fineClock: boolean;
  /**
   * What every path the snapshot watches looked like when its graph was last confirmed, with every stamp settled:
   * a refresh that finds them all the same returns the graph after one stat each and a comparison, nothing else.
   */
  verified?: Verified;
}

interface Verified {
  readonly snapshot: Snapshot;
  readonly paths: readonly string[];
  readonly sizes: Float64Array;
  readonly mtimes: Float64Array;
}

const states = new Map<string, RootState>();

/** Forgets every cached graph (for tests and benchmarks of cold builds). */
export function clearGraphCache(): void {
  states.clear();
}

async function eachLimit<T>(items: readonly T[], signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      if (signal.aborted) return;
      // File reads may complete synchronously (node's platform reads so): yield to the event loop now and then, so
      // that a cancellation, the call's deadline and other requests still get in during a long build.
      const item = items[next++];
      if (next % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  if (signal.aborted) throw signal.reason;
}

function isMetaFile(file: string): boolean {
  const base = file.slice(file.lastIndexOf("/") + 1);
  return base === "package.json" || base === "pnpm-workspace.yaml" || base === ".gitignore" || isConfigFile(file);
}

/** The paths a refresh stats: directories with files, node_modules, configuration files, parsed modules. */
function watchedBy(snapshot: Snapshot | undefined, state: RootState): string[] {
  return [
    ...(snapshot ? [...snapshot.dirs.keys(), ...snapshot.nodeModules.keys(), ...snapshot.meta.keys()] : []),
    ...state.parsed.keys(),
  ];
}

/**
 * The stamps seen, when each one is what `snapshot` stands for: a settled directory mtime (not one listed too close
 * to a change to trust), the node_modules and configuration stamps it was configured from, the settled stamp of each
 * parsed module. undefined when any differs or is missing: the next refresh then checks the long way.
 */
function verify(snapshot: Snapshot, state: RootState, stamps: ReadonlyMap<string, Stamp | null>): Verified | undefined {
  const paths = watchedBy(snapshot, state);
  const sizes = new Float64Array(paths.length);
  const mtimes = new Float64Array(paths.length);
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i];
    const stamp = stamps.get(path);
    if (!stamp) return undefined;
    const dir = snapshot.dirs.get(path);
    const parsed = state.parsed.get(path);
    const meta = snapshot.meta.get(path);
    const same = dir !== undefined
      ? dir === stamp.mtimeMs
      : snapshot.nodeModules.has(path)
      ? snapshot.nodeModules.get(path) === stamp.mtimeMs
      : meta
      ? meta.size === stamp.size && meta.mtimeMs === stamp.mtimeMs
      : parsed !== undefined && parsed.size === stamp.size && parsed.mtimeMs === stamp.mtimeMs;
    if (!same) return undefined;
    sizes[i] = stamp.size;
    mtimes[i] = stamp.mtimeMs;
  }
  return { snapshot, paths, sizes, mtimes };
}

/**
 * After a build, what the next refresh would do first: stat what the snapshot watches, settle the stamps of
 * directories listed and files read without one (when they had not changed for a while before), and keep them as
 * verified. Costs a build one stat per file, and spares the first query after it the long check.
 */
async function settle(ctx: ReadContext, root: string, state: RootState, snapshot: Snapshot): Promise<Snapshot> {
  const paths = watchedBy(snapshot, state);
  const infos = await ctx.fs.stats(root, paths);
  const stamps = new Map<string, Stamp | null>();
  for (let i = 0; i < paths.length; i++) stamps.set(paths[i], infos[i]);
  const margin = racyMargin(state);
  let settled = snapshot;
  if ([...snapshot.dirs.values()].includes(null)) {
    const dirs = new Map(snapshot.dirs);
    for (const [dir, mtime] of dirs) {
      const stamp = stamps.get(dir);
      if (mtime === null && stamp && changedBefore(stamp, snapshot.listedAt, margin)) dirs.set(dir, stamp.mtimeMs);
    }
    settled = { ...snapshot, dirs };
  }
  for (const [file, parsed] of state.parsed) {
    const stamp = stamps.get(file);
    if (stamp) settleRead(parsed, stamp, margin);
  }
  state.verified = verify(settled, state, stamps);
  return settled;
}

async function statOrNull(ctx: ReadContext, root: string, file: string): Promise<Stamp | null> {
  try {
    const info = await ctx.fs.stat(root, file);
    return { size: info.size, mtimeMs: info.mtimeMs };
  } catch {
    return null;
  }
}

/**
 * The graph of `root`, from cache when nothing changed. Throws a WardenError
 * for an unknown root; honours `ctx.signal` and reports progress on long builds.
 */
export function moduleGraph(ctx: ReadContext, root: string): Promise<ModuleGraph> {
  if (!ctx.fs.rootIds.includes(root)) {
    throw new WardenError(
      "unknown_root",
      problem("Unknown root", `received ${received(root)}`, `use one of: ${ctx.fs.rootIds.join(", ")}`),
    );
  }
  let state = states.get(root);
  if (!state) states.set(root, state = { parsed: new Map(), queue: Promise.resolve(), fineClock: false });
  const current = state;
  const run = current.queue.then(() => refresh(ctx, root, current));
  current.queue = run.catch(() => {});
  return run;
}

async function refresh(ctx: ReadContext, root: string, state: RootState): Promise<ModuleGraph> {
  const started = performance.now();
  // TypeScript compiles while the root is listed and stat'ed (its load is CPU, theirs I/O).
  const loading = loadTypeScript();
  loading.catch(() => {});
  const signal = ctx.signal;
  const old = state.snapshot;

  // 1. What changed since the last snapshot: directories (files added or removed) and stamps (edits).
  let relist = !old;
  let installChanged = false;
  const stamps = new Map<string, Stamp | null>();
  const verified = old?.graph && state.verified?.snapshot === old ? state.verified : undefined;
  const watched = verified?.paths ?? watchedBy(old, state);
  const infos = await ctx.fs.stats(root, watched);
  if (signal.aborted) throw signal.reason;
  if (verified && infos.every((info, i) => info?.size === verified.sizes[i] && info.mtimeMs === verified.mtimes[i])) {
    const build = { cached: true, parsed: 0, resolved: 0, ms: Math.round((performance.now() - started) * 10) / 10 };
    return { ...old!.graph!, build, memo: old!.graph!.memo };
  }
  for (let i = 0; i < watched.length; i++) stamps.set(watched[i], infos[i]);
  for (const stamp of stamps.values()) if (stamp && stamp.mtimeMs % 1000 !== 0) state.fineClock = true;
  const margin = racyMargin(state);
  let dirs = old?.dirs;
  let listedAt = old?.listedAt ?? 0;
  if (old) {
    const settled = new Map<string, number | null>();
    for (const [dir, mtime] of old.dirs) {
      const now = stamps.get(dir);
      if (!now) relist = true;
      else if (mtime === null && changedBefore(now, old.listedAt, margin)) settled.set(dir, now.mtimeMs);
      else if (mtime === null || now.mtimeMs !== mtime) relist = true;
      else settled.set(dir, mtime);
    }
    if (!relist) dirs = settled;
    for (const [dir, mtime] of old.nodeModules) if (stamps.get(dir)?.mtimeMs !== mtime) installChanged = true;
  }

  let files = old?.files;
  let ignored = old?.ignored;
  if (relist || !files || !ignored || !dirs) {
    listedAt = Date.now();
    const listed = await listRoot(ctx, root);
    files = listed.files;
    ignored = listed.ignored;
    // A directory stat taken before this listing settles it, when the directory had not changed for a while.
    const fresh = new Map<string, number | null>();
    for (const dir of new VirtualFs(files).directories) {
      const stamp = stamps.get(dir);
      fresh.set(dir, stamp && changedBefore(stamp, listedAt, margin) ? stamp.mtimeMs : null);
    }
    dirs = fresh;
  }
  const sameFiles = old !== undefined && (files === old.files && ignored === old.ignored ||
    old.files.size === files.size && old.ignored.size === ignored.size &&
      [...files].every((f) => old.files.has(f)) && [...ignored].every((f) => old.ignored.has(f)));

  // 2. package.json, tsconfig and workspace files: re-read all when any changed, appeared or vanished.
  const metaFiles = [...files].filter((f) => isMetaFile(f) && !ignored!.has(f)).sort();
  let metaChanged = !old || installChanged || metaFiles.length !== old.meta.size ||
    metaFiles.some((f) => !old.meta.has(f));
  if (!metaChanged) {
    for (const file of metaFiles) {
      const stamp = stamps.get(file);
      const before = old!.meta.get(file)!;
      if (!stamp || stamp.size !== before.size || stamp.mtimeMs !== before.mtimeMs) metaChanged = true;
    }
  }

  const ts = await loading;
  let snapshot: Snapshot;
  if (!old || metaChanged || !sameFiles) {
    snapshot = await configure(ctx, root, ts, files, ignored, dirs, listedAt, metaFiles, signal);
    for (const stamp of snapshot.meta.values()) if (stamp.mtimeMs % 1000 !== 0) state.fineClock = true;
  } else {
    snapshot = dirs === old.dirs ? old : { ...old, dirs, listedAt };
  }

  /** Whether what was parsed of `file` still stands for it (a stamp that settles an unstamped read counts). */
  const current = (file: string): boolean => {
    const known = state.parsed.get(file);
    const stamp = stamps.get(file);
    if (!known || !stamp || stamp.size !== known.size) return false;
    // Read without a stat (or too soon after a change): the stat settles it if the change is older than the read.
    return stamp.mtimeMs === known.mtimeMs || settleRead(known, stamp, margin);
  };
  // Nothing added, removed, reconfigured or edited: the last graph is this one.
  if (old?.graph && snapshot.resolver === old.resolver && sameFiles && [...state.parsed.keys()].every(current)) {
    snapshot.graph = old.graph;
    state.snapshot = snapshot;
    state.verified = verify(snapshot, state, stamps);
    const build = { cached: true, parsed: 0, resolved: 0, ms: Math.round((performance.now() - started) * 10) / 10 };
    return { ...old.graph, build, memo: old.graph.memo };
  }

  // 3. Parse the project's modules whose content is new to us.
  const outputs = snapshot.configs.configs.flatMap((c) => c.outputs.map((o) => o.out + "/"));
  const project = [...files].filter((f) =>
    isModuleFile(f) && !ignored!.has(f) && !outputs.some((out) => f.startsWith(out))
  ).sort();
  const projectSet = new Set(project);
  for (const file of [...state.parsed.keys()]) if (!files.has(file)) state.parsed.delete(file);
  let parsedNow = 0;
  const parse = async (list: readonly string[], reportProgress: boolean) => {
    const todo = list.filter((file) => !current(file));
    let done = 0;
    const every = Math.max(100, Math.ceil(todo.length / 20));
    await eachLimit(todo, signal, async (file) => {
      state.parsed.set(file, await parseFile(ctx, root, ts, file, margin, stamps.get(file) ?? undefined));
      parsedNow++;
      if (reportProgress && ++done % every === 0) {
        void ctx.progress(done, todo.length, `parsed ${done} of ${todo.length} modules`);
      }
    });
  };
  await parse(project, true);

  // 4. Resolve imports; modules outside the project that the project imports are parsed too.
  let resolvedNow = 0;
  const modules = new Map<string, GraphModule>();
  const visit = (file: string, outside: boolean) => {
    const parsed = state.parsed.get(file);
    const summary = parsed?.summary;
    let entry = snapshot.resolved.get(file);
    if (!entry || entry.summary !== summary) {
      const resolutions = (summary?.imports ?? []).map((record) => snapshot.resolver.resolve(file, record));
      resolvedNow += resolutions.length;
      snapshot.resolved.set(file, entry = { summary, resolutions });
    }
    modules.set(file, {
      path: file,
      ...(summary ? { summary } : {}),
      resolutions: entry.resolutions,
      outside,
      ...(parsed?.unreadable ? { unreadable: parsed.unreadable } : {}),
    });
  };
  for (const file of project) visit(file, false);
  for (let frontier = project; frontier.length > 0;) {
    const reached = new Set<string>();
    for (const file of frontier) {
      for (const resolution of modules.get(file)!.resolutions) {
        if (resolution.kind !== "module") continue;
        for (const target of [resolution.path, resolution.also]) {
          if (!target || modules.has(target) || projectSet.has(target)) continue;
          if (isModuleFile(target)) reached.add(target);
          else modules.set(target, { path: target, resolutions: [], outside: ignored.has(target) });
        }
      }
    }
    frontier = [...reached].sort();
    await parse(frontier, false);
    for (const file of frontier) visit(file, true);
  }
  for (const file of [...snapshot.resolved.keys()]) if (!modules.has(file)) snapshot.resolved.delete(file);

  const reconfigured = !old || snapshot.resolver !== old.resolver;
  const changed = parsedNow > 0 || resolvedNow > 0 || reconfigured || !old?.graph ||
    old.graph.modules.size !== modules.size;
  const build = {
    cached: !changed,
    parsed: parsedNow,
    resolved: resolvedNow,
    ms: Math.round((performance.now() - started) * 10) / 10,
  };
  if (!changed && old?.graph) {
    snapshot.graph = old.graph;
    state.snapshot = snapshot;
    return { ...old.graph, build, memo: old.graph.memo };
  }
  const graph = makeGraph(root, snapshot, modules, build);
  // Enough modules read to have compiled what of TypeScript a graph uses (its resolver, its parser where outlines or
  // modules were parsed): worth keeping for the next process.
  if (parsedNow >= WARM_PARSES) typeScriptWarm();
  snapshot.graph = graph;
  state.snapshot = snapshot;
  if (!signal.aborted) {
    const settled = await settle(ctx, root, state, snapshot);
    settled.graph = graph;
    state.snapshot = settled;
  }
  return graph;
}

/**
 * Reads and summarizes one module. `stamp`, when a stat was taken before
 * this read, becomes its mtime if the file had not changed for a while then;
 * otherwise the next refresh settles it.
 */
async function parseFile(
  ctx: ReadContext,
  root: string,
  ts: TsApi,
  file: string,
  margin: number,
  stamp?: Stamp,
): Promise<Parsed> {
  const readAt = Date.now();
  let bytes: Uint8Array;
  try {
    bytes = await ctx.fs.readBytes(root, file, { maxBytes: MAX_MODULE_BYTES });
  } catch (error) {
    const reason = error instanceof WardenError && error.code === "too_large"
      ? `larger than ${MAX_MODULE_BYTES} bytes`
      : "the file could not be read";
    return { size: stamp?.size ?? -1, mtimeMs: stamp?.mtimeMs ?? NaN, readAt, unreadable: reason };
  }
  const settled = stamp && stamp.size === bytes.length && changedBefore(stamp, readAt, margin);
  const base = { size: bytes.length, mtimeMs: settled ? stamp.mtimeMs : NaN, readAt };
  try {
    return { ...base, summary: summarizeModule(ts, file, new TextDecoder().decode(bytes)) };
  } catch (error) {
    return { ...base, unreadable: `the file could not be analysed (${messageOf(error)})` };
  }
}

/** Every file under the root outside node_modules, and which of them .gitignore excludes. */
async function listRoot(
  ctx: ReadContext,
  root: string,
): Promise<{ files: ReadonlySet<string>; ignored: ReadonlySet<string> }> {
  const all = await ctx.fs.glob(root, "**/*", { gitignore: false, dot: true, ignore: LIST_IGNORE });
  // A second listing that honours .gitignore, only when there is one to honour.
  if (!all.some((f) => f === ".gitignore" || f.endsWith("/.gitignore"))) {
    return { files: new Set(all), ignored: new Set() };
  }
  const kept = new Set(await ctx.fs.glob(root, "**/*", { gitignore: true, dot: true, ignore: LIST_IGNORE }));
  return { files: new Set(all), ignored: new Set(all.filter((f) => !kept.has(f))) };
}

/** Reads package.json and tsconfig files, the workspaces and installed packages, and makes a resolver. */
async function configure(
  ctx: ReadContext,
  root: string,
  ts: TsApi,
  files: ReadonlySet<string>,
  ignored: ReadonlySet<string>,
  dirs: ReadonlyMap<string, number | null>,
  listedAt: number,
  metaFiles: readonly string[],
  signal: AbortSignal,
): Promise<Snapshot> {
  const vfs = new VirtualFs(files);
  const meta = new Map<string, Stamp>();
  await eachLimit(metaFiles, signal, async (file) => {
    const stamp = await statOrNull(ctx, root, file);
    if (stamp) meta.set(file, stamp);
    try {
      vfs.texts.set(file, await ctx.fs.readText(root, file, { maxBytes: 1024 * 1024 }));
    } catch {
      vfs.texts.set(file, null);
    }
  });
  const warnings: string[] = [];
  const packages = metaFiles.filter((f) => f === "package.json" || f.endsWith("/package.json"))
    .map((f) => parsePackage(f, vfs.texts.get(f) ?? undefined));
  for (const pkg of packages) if (pkg.invalid) warnings.push(`${pkg.manifest}: not valid JSON`);
  const workspacePatterns = markWorkspaces(packages, vfs.texts.get("pnpm-workspace.yaml") ?? undefined);
  vfs.setLinks(
    packages.filter((p) => p.workspace && p.name && p.dir !== ".").map((p) => ({ name: p.name!, dir: p.dir })),
  );

  // Installed packages: names under the node_modules of the root and of each workspace package.
  const installed = new Set<string>();
  const nodeModules = new Map<string, number>();
  const list = async (dir: string) => {
    try {
      const [entries, stamp] = await Promise.all([ctx.fs.list(root, dir), statOrNull(ctx, root, dir)]);
      if (stamp) nodeModules.set(dir, stamp.mtimeMs);
      return entries.filter((e) => e.kind === "directory" || e.kind === "symlink").map((e) => e.name);
    } catch {
      return [];
    }
  };
  const packageDirs = packages.filter((p) => p.workspace).map((p) => p.dir);
  await eachLimit(packageDirs, signal, async (dir) => {
    const modulesDir = joinRel(dir, "node_modules");
    for (const name of await list(modulesDir)) {
      if (name.startsWith("@")) {
        for (const inner of await list(joinRel(modulesDir, name))) installed.add(`${name}/${inner}`);
      } else if (!name.startsWith(".")) installed.add(name);
    }
  });

  // Reads what tsconfig `extends` chains ask for (node_modules packages included).
  const readWanted = async (wanted: readonly Wanted[]) => {
    await eachLimit(wanted, signal, async ({ path, kind }) => {
      if (!vfs.files.has(path)) {
        try {
          const info = await ctx.fs.stat(root, path);
          vfs.extra.set(path, info.kind === "file" ? "file" : info.kind === "directory" ? "directory" : null);
          if (info.kind !== "file" || kind === "directory") return;
        } catch {
          vfs.extra.set(path, null);
          vfs.texts.set(path, null);
          return;
        }
      }
      try {
        vfs.texts.set(path, await ctx.fs.readText(root, path, { maxBytes: 1024 * 1024 }));
      } catch {
        vfs.texts.set(path, null);
      }
    });
  };
  const candidates = metaFiles.filter(isConfigFile);
  const configs = await loadConfigs(ts, vfs, candidates, readWanted);
  warnings.push(...configs.warnings);
  // A new resolver resolves everything again; summaries stay.
  return {
    files,
    ignored,
    dirs,
    listedAt,
    nodeModules,
    meta,
    vfs,
    packages: packages.sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0)),
    workspacePatterns,
    configs,
    resolver: new Resolver(ts, vfs, configs, packages, installed),
    warnings: warnings.sort(),
    resolved: new Map(),
  };
}

function makeGraph(
  root: string,
  snapshot: Snapshot,
  modules: ReadonlyMap<string, GraphModule>,
  build: ModuleGraph["build"],
): ModuleGraph {
  const importers = new Map<string, ImportEdge[]>();
  const unknowns: UnknownSource[] = [];
  const sorted = [...modules.keys()].sort();
  for (const from of sorted) {
    const module = modules.get(from)!;
    const summary = module.summary;
    if (module.unreadable) {
      unknowns.push({ path: from, kind: "unreadable", reason: module.unreadable });
      continue;
    }
    if (!summary) continue;
    if (summary.parseError) {
      unknowns.push({
        path: from,
        kind: "parse-error",
        reason: `does not parse: ${summary.parseError.message}`,
        line: summary.parseError.line,
      });
    }
    summary.imports.forEach((record, index) => {
      const resolution = module.resolutions[index];
      if (resolution.kind === "module" || resolution.kind === "asset") {
        const targets = resolution.kind === "module" && resolution.also
          ? [resolution.path, resolution.also]
          : [resolution.path];
        for (const target of targets) {
          if (target === from) continue;
          let list = importers.get(target);
          if (!list) importers.set(target, list = []);
          list.push({ from, index, typeOnly: record.typeOnly });
        }
      } else if (resolution.kind === "unresolved" && resolution.internal) {
        unknowns.push({
          path: from,
          kind: "unresolved",
          reason: resolution.reason,
          line: record.line,
          specifier: record.specifier,
        });
      }
    });
    for (const computed of summary.computed) {
      const pattern = computed.pattern && computed.pattern.startsWith(".")
        ? joinRel(parentDir(from), computed.pattern)
        : undefined;
      unknowns.push({
        path: from,
        kind: "computed-import",
        reason: `${computed.kind === "dynamic" ? "import()" : "require()"} with a computed specifier`,
        line: computed.line,
        ...(pattern ? { pattern } : {}),
      });
    }
  }
  return {
    root,
    files: snapshot.files,
    ignored: snapshot.ignored,
    modules,
    importersOf: (path) => importers.get(path) ?? [],
    unknowns,
    packages: snapshot.packages,
    workspacePatterns: snapshot.workspacePatterns,
    configs: snapshot.configs,
    warnings: snapshot.warnings,
    build,
    memo: new Map(),
  };
}
