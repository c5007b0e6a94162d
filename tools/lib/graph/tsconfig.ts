// The TypeScript projects of a root: every tsconfig*.json and jsconfig.json,
// their `extends` chains (relative, arrays, and packages under node_modules)
// and `references`, parsed with TypeScript's own parser from memory. Which
// project a file belongs to decides the options its imports resolve with;
// a project's outDir/rootDir map build outputs back to their sources.
import path from "node:path";
import type { ts as TS } from "ts-morph";
import { OUTPUT_EXTENSION } from "./packages.ts";
import type { TsApi } from "../typescript/typescript.ts";
import { fromVirtual, parentDir, toVirtual, type VirtualFs, type Wanted } from "./virtual_fs.ts";

/** One parsed tsconfig. */
export interface ProjectConfig {
  /** Root-relative path of the config file. */
  readonly path: string;
  readonly dir: string;
  /** Options as TypeScript parsed them (paths inside are virtual). */
  readonly options: TS.CompilerOptions;
  /** Root-relative files the project includes. */
  readonly fileNames: readonly string[];
  /** Root-relative config files it references. */
  readonly references: readonly string[];
  /** Output directories and the source directory they are built from, root-relative. */
  readonly outputs: readonly { readonly out: string; readonly src: string }[];
}

/** Every project of a root and how files map onto them. */
export interface ConfigSet {
  readonly configs: readonly ProjectConfig[];
  /** Problems worth telling: an `extends` that cannot be read, a reference that does not exist. */
  readonly warnings: readonly string[];
  /** The project whose options apply to `file`, if any. */
  configFor(file: string): ProjectConfig | undefined;
  /** The source a build output path comes from, when a project's outDir/rootDir say so and it exists. */
  sourceFor(output: string): string | undefined;
}

/** Whether `file` is a config file the graph reads. */
export function isConfigFile(file: string): boolean {
  const base = file.slice(file.lastIndexOf("/") + 1);
  return /^tsconfig(?:\.[\w.-]+)?\.json$/.test(base) || base === "jsconfig.json";
}

const SOURCE_EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];

/** How a config sorts when several could claim a file: nearer first, then tsconfig.json, then by name. */
function priority(a: { path: string; dir: string }, b: { path: string; dir: string }): number {
  const depth = (dir: string) => (dir === "." ? 0 : dir.split("/").length);
  if (depth(a.dir) !== depth(b.dir)) return depth(b.dir) - depth(a.dir);
  const rank = (
    p: string,
  ) => (p.endsWith("/tsconfig.json") || p === "tsconfig.json" ? 0 : p.endsWith("jsconfig.json") ? 1 : 2);
  return rank(a.path) - rank(b.path) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

function commonDir(files: readonly string[]): string | undefined {
  let common: string[] | undefined;
  for (const file of files) {
    if (/\.d\.[mc]?ts$/.test(file)) continue;
    const parts = parentDir(file).split("/");
    if (!common) common = parts;
    else {
      let i = 0;
      while (i < common.length && i < parts.length && common[i] === parts[i]) i++;
      common = common.slice(0, i);
    }
  }
  if (!common) return undefined;
  return common.length === 0 || (common.length === 1 && common[0] === ".") ? "." : common.join("/");
}

/** A TypeScript message with its virtual paths shown root-relative, or relative to `dir` when outside the root. */
function showPaths(message: string, dir: string): string {
  return message.replace(/'(\/[^']*)'/g, (_, p: string) => {
    const rel = fromVirtual(p);
    if (rel !== undefined) return `'${rel}'`;
    return `'${path.posix.relative(toVirtual(dir), p)}' (outside the root)`;
  });
}

/**
 * Parses `candidates` and every config they reference, fetching what
 * `extends` chains need through `readWanted` (several passes when a chain leads
 * into files not read yet).
 */
export async function loadConfigs(
  ts: TsApi,
  vfs: VirtualFs,
  candidates: readonly string[],
  readWanted: (wanted: readonly Wanted[]) => Promise<void>,
): Promise<ConfigSet> {
  const matchFiles = (ts as unknown as {
    matchFiles: (
      path: string,
      extensions: readonly string[] | undefined,
      excludes: readonly string[] | undefined,
      includes: readonly string[] | undefined,
      useCaseSensitiveFileNames: boolean,
      currentDirectory: string,
      depth: number | undefined,
      getFileSystemEntries: (path: string) => { files: readonly string[]; directories: readonly string[] },
      realpath: (path: string) => string,
    ) => string[];
  }).matchFiles;
  const host: TS.ParseConfigHost = {
    useCaseSensitiveFileNames: true,
    readDirectory: (rootDir, extensions, excludes, includes, depth) =>
      matchFiles(rootDir, extensions, excludes, includes, true, toVirtual("."), depth, vfs.entries, vfs.realpath),
    fileExists: vfs.fileExists,
    readFile: vfs.readFile,
  };
  let parsed = new Map<string, { config: ProjectConfig; errors: string[] }>();
  for (let pass = 0; pass < 10; pass++) {
    vfs.wanted.clear();
    vfs.recordMisses = true;
    parsed = new Map();
    const queue = [...candidates];
    const extendedCache = new Map<string, TS.ExtendedConfigCacheEntry>();
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (parsed.has(file)) continue;
      const text = vfs.readFile(toVirtual(file));
      if (text === undefined) {
        parsed.set(file, {
          config: { path: file, dir: parentDir(file), options: {}, fileNames: [], references: [], outputs: [] },
          errors: vfs.texts.get(file) === null || !vfs.files.has(file) ? ["the file does not exist"] : [],
        });
        continue;
      }
      const json = ts.parseJsonText(toVirtual(file), text);
      const result = ts.parseJsonSourceFileConfigFileContent(
        json,
        host,
        toVirtual(parentDir(file)),
        undefined,
        toVirtual(file),
        undefined,
        undefined,
        extendedCache,
      );
      const references = (result.projectReferences ?? []).map((ref) => {
        const rel = fromVirtual(ref.path) ?? ref.path;
        return vfs.files.has(rel) || rel.endsWith(".json") ? rel : `${rel === "." ? "" : rel + "/"}tsconfig.json`;
      });
      queue.push(...references);
      const fileNames = result.fileNames.map((f) => fromVirtual(f)).filter((f): f is string => f !== undefined);
      const outputs: { out: string; src: string }[] = [];
      const rootDir = result.options.rootDir ? fromVirtual(result.options.rootDir) : commonDir(fileNames);
      for (const out of [result.options.outDir, result.options.declarationDir]) {
        const rel = out ? fromVirtual(out) : undefined;
        if (rel && rel !== "." && rootDir !== undefined && rel !== rootDir) outputs.push({ out: rel, src: rootDir });
      }
      parsed.set(file, {
        config: {
          path: file,
          dir: parentDir(file),
          options: result.options,
          fileNames,
          references,
          outputs,
        },
        // TS18003 "No inputs were found": normal for solution-style configs.
        errors: result.errors.filter((e) => e.code !== 18003).map((e) =>
          showPaths(ts.flattenDiagnosticMessageText(e.messageText, " "), parentDir(file))
        ),
      });
    }
    vfs.recordMisses = false;
    if (vfs.wanted.size === 0) break;
    await readWanted([...vfs.wanted.values()]);
  }
  const configs = [...parsed.values()].map((p) => p.config).sort(priority);
  const warnings = [...parsed.values()].flatMap((p) => p.errors.map((e) => `${p.config.path}: ${e}`)).sort();
  const owner = new Map<string, ProjectConfig>();
  for (const config of configs) for (const file of config.fileNames) if (!owner.has(file)) owner.set(file, config);
  // A file no project includes takes the options of the nearest config above it that includes files.
  const byDir = new Map<string, ProjectConfig[]>();
  for (const config of configs) {
    const list = byDir.get(config.dir) ?? [];
    list.push(config);
    byDir.set(config.dir, list);
  }
  const nearest = new Map<string, ProjectConfig | undefined>();
  const nearestFor = (dir: string): ProjectConfig | undefined => {
    if (nearest.has(dir)) return nearest.get(dir);
    const here = byDir.get(dir) ?? [];
    const found = here.find((c) => c.fileNames.length > 0) ?? here[0] ??
      (dir === "." ? undefined : nearestFor(parentDir(dir)));
    nearest.set(dir, found);
    return found;
  };
  const outputs = configs.flatMap((c) => c.outputs).sort((a, b) => b.out.length - a.out.length);
  return {
    configs,
    warnings,
    configFor: (file) => owner.get(file) ?? nearestFor(parentDir(file)),
    sourceFor(output) {
      for (const { out, src } of outputs) {
        if (!output.startsWith(out + "/")) continue;
        const stem = output.slice(out.length + 1).replace(OUTPUT_EXTENSION, "");
        for (const ext of SOURCE_EXTENSIONS) {
          const candidate = path.posix.join(src, stem + ext);
          if (vfs.files.has(candidate) && candidate !== output) return candidate;
        }
      }
      return undefined;
    },
  };
}
