// Resolves one import of one module the way TypeScript does, with the
// options of the project the module belongs to, from memory. What TypeScript
// cannot place is looked at once more (a build output whose source exists,
// an asset, a workspace package, an installed package) and otherwise kept as
// unresolved with the reason, and whether it could have named a file of the
// root: only those make an answer a lower bound.
import path from "node:path";
import type { ts as TS } from "ts-morph";
import type { ImportRecord } from "./records.ts";
import { isModuleFile } from "./module_summary.ts";
import { conventionalSourceStem, NODE_BUILTINS, type PackageInfo, packageNameOf } from "./packages.ts";
import type { ConfigSet, ProjectConfig } from "./tsconfig.ts";
import type { TsApi } from "../typescript/typescript.ts";
import { fromVirtual, joinRel, parentDir, toVirtual, type VirtualFs } from "./virtual_fs.ts";

/** Where an import leads. */
export type Resolution =
  /** A JavaScript, TypeScript or JSON module of the root; `also` is the implementation beside a `.d.ts`. */
  | { readonly kind: "module"; readonly path: string; readonly also?: string }
  /** A file of the root that is not code (CSS, images, ...). */
  | { readonly kind: "asset"; readonly path: string }
  | { readonly kind: "external"; readonly package: string; readonly installed: boolean }
  | { readonly kind: "builtin"; readonly name: string }
  /** `internal`: the specifier could have named a file of the root (relative, alias, workspace, `#imports`). */
  | { readonly kind: "unresolved"; readonly reason: string; readonly internal: boolean };

interface OptionSet {
  readonly options: TS.CompilerOptions;
  readonly cache: TS.ModuleResolutionCache;
  readonly fallback?: { options: TS.CompilerOptions; cache: TS.ModuleResolutionCache };
  readonly nodeFormats: boolean;
}

const SOURCE_EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];
const APPENDED = [".d.ts", ".ts", ".tsx", ".js", ".jsx", ".d.mts", ".d.cts", ".mts", ".cts", ".mjs", ".cjs"];

/** Resolves imports for one state of a root; build a new one when files or configs change. */
export class Resolver {
  readonly #ts: TsApi;
  readonly #vfs: VirtualFs;
  readonly #configs: ConfigSet;
  readonly #installed: ReadonlySet<string>;
  readonly #workspaceNames: ReadonlyMap<string, PackageInfo>;
  readonly #packageByDir: ReadonlyMap<string, PackageInfo>;
  readonly #optionSets = new Map<string, OptionSet>();
  readonly #formats = new Map<string, TS.ResolutionMode>();
  /** What the failed lookups of a resolution (and of its fallback) lead to; null for nothing. */
  readonly #fromFailures = new WeakMap<
    TS.ResolvedModuleWithFailedLookupLocations,
    Map<TS.ResolvedModuleWithFailedLookupLocations, Resolution | null>
  >();
  readonly #host: TS.ModuleResolutionHost;

  constructor(
    ts: TsApi,
    vfs: VirtualFs,
    configs: ConfigSet,
    packages: readonly PackageInfo[],
    installed: ReadonlySet<string>,
  ) {
    this.#ts = ts;
    this.#vfs = vfs;
    this.#configs = configs;
    this.#installed = installed;
    this.#workspaceNames = new Map(
      packages.filter((p) => p.workspace && p.name).map((p) => [p.name!, p]),
    );
    this.#packageByDir = new Map(packages.map((p) => [p.dir, p]));
    this.#host = {
      fileExists: vfs.fileExists,
      readFile: vfs.readFile,
      directoryExists: vfs.directoryExists,
      realpath: vfs.realpath,
      getCurrentDirectory: vfs.getCurrentDirectory,
      getDirectories: vfs.getDirectories,
      useCaseSensitiveFileNames: true,
    };
  }

  #optionsFor(config: ProjectConfig | undefined): OptionSet {
    const key = config?.path ?? "";
    let set = this.#optionSets.get(key);
    if (set) return set;
    const ts = this.#ts;
    const options: TS.CompilerOptions = { ...(config?.options ?? {}), allowJs: true, resolveJsonModule: true };
    if (options.moduleResolution === ts.ModuleResolutionKind.Classic) {
      options.moduleResolution = ts.ModuleResolutionKind.Bundler;
      options.module = ts.ModuleKind.ESNext;
    }
    // Internal but stable since TypeScript 4: the mode TypeScript itself would pick for these options.
    const kind = (ts as unknown as { getEmitModuleResolutionKind(o: TS.CompilerOptions): TS.ModuleResolutionKind })
      .getEmitModuleResolutionKind(options);
    const cache = ts.createModuleResolutionCache(toVirtual("."), (s) => s, options);
    // Node10 ignores `exports` and `imports`; runtimes and bundlers do not: try again as a bundler would.
    const fallbackOptions: TS.CompilerOptions | undefined = kind === ts.ModuleResolutionKind.Node10
      ? { ...options, moduleResolution: ts.ModuleResolutionKind.Bundler, module: ts.ModuleKind.ESNext }
      : undefined;
    set = {
      options,
      cache,
      ...(fallbackOptions
        ? {
          fallback: {
            options: fallbackOptions,
            cache: ts.createModuleResolutionCache(toVirtual("."), (s) => s, fallbackOptions),
          },
        }
        : {}),
      nodeFormats: kind === ts.ModuleResolutionKind.Node16 || kind === ts.ModuleResolutionKind.NodeNext,
    };
    this.#optionSets.set(key, set);
    return set;
  }

  #modeFor(importer: string, record: ImportRecord, set: OptionSet): TS.ResolutionMode {
    const ts = this.#ts;
    if (record.kind === "require" || record.kind === "import-equals") return ts.ModuleKind.CommonJS;
    if (record.kind === "dynamic") return ts.ModuleKind.ESNext;
    if (!set.nodeFormats) return undefined;
    let format = this.#formats.get(importer);
    if (!this.#formats.has(importer)) {
      format = ts.getImpliedNodeFormatForFile(
        toVirtual(importer),
        set.cache.getPackageJsonInfoCache(),
        this.#host,
        set.options,
      );
      this.#formats.set(importer, format);
    }
    return format;
  }

  /** Where `record` of `importer` leads. */
  resolve(importer: string, record: ImportRecord): Resolution {
    const spec = record.specifier;
    if (spec.startsWith("node:") || (NODE_BUILTINS.has(spec) && !this.#workspaceNames.has(spec))) {
      return { kind: "builtin", name: spec.startsWith("node:") ? spec.slice(5) : spec };
    }
    if (/^[a-z][a-z0-9+.-]+:/i.test(spec)) return { kind: "external", package: spec, installed: false };
    const config = this.#configs.configFor(importer);
    const set = this.#optionsFor(config);
    const ts = this.#ts;
    const mode = this.#modeFor(importer, record, set);
    const first = ts.resolveModuleName(spec, toVirtual(importer), set.options, this.#host, set.cache, undefined, mode);
    let found = this.#accept(first);
    if (found) return found;
    let fallback: TS.ResolvedModuleWithFailedLookupLocations | undefined;
    if (set.fallback) {
      fallback = ts.resolveModuleName(
        spec,
        toVirtual(importer),
        set.fallback.options,
        this.#host,
        set.fallback.cache,
        undefined,
        mode,
      );
      found = this.#accept(fallback);
      if (found) return found;
    }
    // The same failure (TypeScript's cache hands back the same result for every importer in a directory, and every
    // test that imports a package not installed fails alike) is read once.
    let byFallback = this.#fromFailures.get(first);
    if (!byFallback) this.#fromFailures.set(first, byFallback = new Map());
    const key = fallback ?? first;
    if (!byFallback.has(key)) {
      const failed = [...this.#failedLookups(first), ...(fallback ? this.#failedLookups(fallback) : [])];
      byFallback.set(key, this.#fromFailedLookups(failed) ?? null);
    }
    found = byFallback.get(key) ?? undefined;
    if (found) return { ...found };
    return this.#classify(importer, spec, config);
  }

  #failedLookups(result: TS.ResolvedModuleWithFailedLookupLocations): string[] {
    const locations = (result as { failedLookupLocations?: readonly string[] }).failedLookupLocations ?? [];
    const out: string[] = [];
    for (const location of locations) {
      const rel = fromVirtual(location);
      if (rel !== undefined) out.push(this.#vfs.unlink(rel));
    }
    return out;
  }

  #accept(result: TS.ResolvedModuleWithFailedLookupLocations): Resolution | undefined {
    const resolved = result.resolvedModule;
    if (!resolved) return undefined;
    const rel = fromVirtual(resolved.resolvedFileName);
    if (rel === undefined || !this.#vfs.files.has(rel)) return undefined;
    const source = this.#configs.sourceFor(rel);
    if (source) return { kind: "module", path: source };
    const declaration = /\.d\.([mc]?)ts$/.exec(rel);
    if (declaration) {
      const stem = rel.slice(0, declaration.index);
      // The file the declaration types (`.d.cts` types `.cjs`) before any other beside it.
      const flavour = declaration[1] === "" ? [".js", ".jsx"] : [`.${declaration[1]}js`];
      for (const ext of new Set([...flavour, ".js", ".mjs", ".cjs", ".jsx"])) {
        if (this.#vfs.files.has(stem + ext)) return { kind: "module", path: rel, also: stem + ext };
      }
    }
    return { kind: "module", path: rel };
  }

  /** A build output whose source exists, or an asset TypeScript looked for with a code extension appended. */
  #fromFailedLookups(failed: readonly string[]): Resolution | undefined {
    const files = this.#vfs.files;
    for (const rel of failed) {
      const source = this.#configs.sourceFor(rel);
      if (source) return { kind: "module", path: source };
    }
    for (const rel of failed) {
      const stem = conventionalSourceStem(rel);
      if (stem === undefined) continue;
      for (const ext of SOURCE_EXTENSIONS) {
        if (files.has(stem + ext)) return { kind: "module", path: stem + ext };
      }
    }
    for (const rel of failed) {
      for (const ext of APPENDED) {
        if (!rel.endsWith(ext)) continue;
        const base = rel.slice(0, -ext.length);
        if (files.has(base) && !isModuleFile(base)) return { kind: "asset", path: base };
      }
    }
    return undefined;
  }

  #classify(importer: string, spec: string, config: ProjectConfig | undefined): Resolution {
    const dir = parentDir(importer);
    const files = this.#vfs.files;
    if (spec.startsWith(".") || spec.startsWith("/")) {
      const target = spec.startsWith("/") ? path.posix.normalize(spec.slice(1)) : joinRel(dir, spec);
      if (target === ".." || target.startsWith("../")) {
        return { kind: "unresolved", reason: `${JSON.stringify(spec)} leads outside the root`, internal: true };
      }
      if (files.has(target)) return { kind: "asset", path: target };
      return { kind: "unresolved", reason: `no file matches ${JSON.stringify(target)}`, internal: true };
    }
    if (spec.startsWith("#")) {
      const scope = this.#scopeOf(importer);
      return {
        kind: "unresolved",
        reason: scope
          ? `no "imports" entry of ${scope.manifest} leads to a file`
          : 'no package.json with an "imports" field above the file',
        internal: true,
      };
    }
    const pkgName = packageNameOf(spec);
    const workspace = pkgName ? this.#workspaceNames.get(pkgName) : undefined;
    const own = this.#scopeOf(importer);
    if (workspace || (pkgName && own?.name === pkgName)) {
      const pkg = workspace ?? own!;
      return {
        kind: "unresolved",
        reason: `package ${JSON.stringify(pkgName)} (${pkg.manifest}) has no entry for ${
          JSON.stringify(spec)
        } that leads to a file`,
        internal: true,
      };
    }
    const paths = config?.options.paths ?? {};
    for (const pattern of Object.keys(paths)) {
      const star = pattern.indexOf("*");
      const matches = star === -1
        ? spec === pattern
        : spec.startsWith(pattern.slice(0, star)) && spec.endsWith(pattern.slice(star + 1)) &&
          spec.length >= pattern.length - 1;
      if (matches && pattern !== "*") {
        return {
          kind: "unresolved",
          reason: `the "paths" entry ${JSON.stringify(pattern)} of ${config!.path} matches, but no file exists`,
          internal: true,
        };
      }
    }
    const first = spec.split("/")[0];
    const installed = pkgName !== undefined && this.#installed.has(pkgName);
    if (!installed && spec.includes("/")) {
      const baseUrl = config?.options.baseUrl ? fromVirtual(config.options.baseUrl) : undefined;
      for (const base of new Set([".", config?.dir ?? ".", baseUrl ?? "."])) {
        if (this.#vfs.directories.has(joinRel(base, first))) {
          return {
            kind: "unresolved",
            reason: `${JSON.stringify(first)} is a directory of the root, but no baseUrl or "paths" entry maps it`,
            internal: true,
          };
        }
      }
    }
    if (pkgName) return { kind: "external", package: pkgName, installed };
    return { kind: "unresolved", reason: 'no "paths" entry or package matches', internal: true };
  }

  /** The nearest package.json at or above a file. */
  #scopeOf(file: string): PackageInfo | undefined {
    let dir = parentDir(file);
    for (;;) {
      const pkg = this.#packageByDir.get(dir);
      if (pkg) return pkg;
      if (dir === ".") return undefined;
      dir = parentDir(dir);
    }
  }
}
