// What the TypeScript compiler says about a tree, for the differential test
// (code_differential.test.ts): each module's import specifiers
// (preProcessFile, plus the modules its `declare module "…"` blocks augment),
// which of them its isolated-module emit keeps (transpileModule), its exports
// with whether the checker calls them type-only (getExportsOfModule), and the
// module graph that ts.resolveModuleName builds from those specifiers.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { TsApi } from "../tools/lib/typescript/typescript.ts";
import type { ts as TS } from "ts-morph";
import { repoRoot } from "./helpers.ts";

/** ts-morph's copy of the compiler, as tools/lib/typescript/ loads it. */
export const ts = createRequire(path.join(repoRoot, "package.json"))("@ts-morph/common/dist/typescript.js") as TsApi;

/** One module as the compiler reads it. */
export interface ReferenceModule {
  /** Every specifier the file names, as often as it names it, from its syntax tree (see writtenImports). */
  readonly imports: readonly string[];
  /** Specifiers preProcessFile names that the syntax tree does not (it should find none). */
  readonly unseen: readonly string[];
  /** The specifiers the file's isolated-module emit still names (none for a declaration file). */
  readonly runtime: readonly string[];
  /** The specifiers of the imports whose form is not type-only (README's run-time edge rule, on the compiler's tree). */
  readonly byForm: readonly string[];
  /** Exported names, and whether the checker calls each type-only. */
  readonly exports: ReadonlyMap<string, boolean>;
}

/** A dependent in the compiler's graph. */
export interface ReferenceDependent {
  /** Shortest depth, over every import. */
  depth: number;
  /** Reached through imports the emit keeps. */
  runtime: boolean;
  /** Reached through imports whose form is not type-only. */
  runtimeByForm: boolean;
}

/** The compiler's view of a tree: modules by root-relative path, and who imports whom. */
export interface Reference {
  readonly modules: ReadonlyMap<string, ReferenceModule>;
  /**
   * Every module that imports `file`, directly or not. `paired`: an import the compiler resolves to x.d.ts imports the
   * x.js beside it as well (warden's definition: the JavaScript is what runs).
   */
  dependents(file: string, paired?: boolean): Map<string, ReferenceDependent>;
}

const EMITTED = /\.[mc]?[jt]sx?$/;
const DECLARATION = /\.d\.[mc]?ts$/;

/** The compiler's view of the modules `files` (root-relative) under `dir`, with the tree's tsconfig.json options. */
export function compilerReference(dir: string, files: readonly string[]): Reference {
  const configText = readFileSync(path.join(dir, "tsconfig.json"), "utf8");
  const parsed = ts.parseJsonConfigFileContent(ts.parseConfigFileTextToJson("tsconfig.json", configText).config, {
    useCaseSensitiveFileNames: true,
    readDirectory: () => [],
    fileExists: (f) => ts.sys.fileExists(f),
    readFile: (f) => ts.sys.readFile(f),
  }, dir);
  // No lib and no @types: the export tables and resolution need none, and the checker answers faster.
  const options: TS.CompilerOptions = {
    ...parsed.options,
    allowJs: true,
    resolveJsonModule: true,
    noLib: true,
    types: [],
    noEmit: true,
  };
  const absolute = files.map((f) => path.join(dir, f));
  // JSDoc holds nothing either side compares (warden does not parse it either), and skipping it halves the parse.
  const host = ts.createCompilerHost(options);
  host.jsDocParsingMode = ts.JSDocParsingMode.ParseNone;
  const program = ts.createProgram({ rootNames: absolute, options, host });
  const checker = program.getTypeChecker();
  const cache = ts.createModuleResolutionCache(dir, (name) => name, options);
  const modules = new Map<string, ReferenceModule>();
  type Edge = { from: string; runtime: boolean; byForm: boolean };
  const edges = new Map<string, Edge[]>();
  /** The imports of x.js, when the compiler resolves them to the x.d.ts beside it. */
  const pairedEdges = new Map<string, Edge[]>();
  for (const file of files) {
    const full = path.join(dir, file);
    const sf = program.getSourceFile(full);
    if (!sf) continue;
    const text = sf.text;
    const written = writtenImports(sf);
    const imports = written.map((w) => w.specifier);
    const info = ts.preProcessFile(text, true, true);
    const named = [
      ...info.importedFiles.map((f) => f.fileName),
      ...(ts.isExternalModule(sf) ? info.ambientExternalModules ?? [] : []),
    ];
    const unseen = [...named];
    for (const specifier of imports) {
      const at = unseen.indexOf(specifier);
      if (at !== -1) unseen.splice(at, 1);
    }
    const runtime: string[] = [];
    if (!DECLARATION.test(file) && EMITTED.test(file)) {
      // The import and export declarations the emit keeps, read as it ends (printing the rest would triple the cost);
      // `import()` and `require()` calls it always keeps.
      const collect: TS.TransformerFactory<TS.SourceFile> = () => (emitted) => {
        for (const statement of emitted.statements) {
          const specifier = declarationSpecifier(statement);
          if (specifier !== undefined) runtime.push(specifier);
        }
        return ts.factory.updateSourceFile(emitted, []);
      };
      ts.transpileModule(text, {
        fileName: file,
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ESNext, allowJs: true },
        reportDiagnostics: false,
        jsDocParsingMode: ts.JSDocParsingMode.ParseNone,
        transformers: { after: [collect] },
      });
      runtime.push(...written.filter((w) => w.call).map((w) => w.specifier));
    }
    const byForm = written.filter((w) => w.byForm).map((w) => w.specifier);
    const exports = new Map<string, boolean>();
    const symbol = checker.getSymbolAtLocation(sf);
    if (symbol) {
      for (const exported of checker.getExportsOfModule(symbol)) {
        exports.set(exported.name, typeOnly(checker, exported));
      }
    }
    modules.set(file, { imports, unseen, runtime, byForm, exports });
    for (const specifier of new Set(imports)) {
      const resolved = ts.resolveModuleName(specifier, full, options, host, cache).resolvedModule;
      if (!resolved) continue;
      const target = path.relative(dir, resolved.resolvedFileName).split(path.sep).join("/");
      if (target.startsWith("..") || target === file) continue;
      let list = edges.get(target);
      if (!list) edges.set(target, list = []);
      const edge = { from: file, runtime: runtime.includes(specifier), byForm: byForm.includes(specifier) };
      list.push(edge);
      const beside = target.replace(/\.d\.([mc]?)ts$/, ".$1js");
      if (beside !== target && files.includes(beside)) {
        let pairs = pairedEdges.get(beside);
        if (!pairs) pairedEdges.set(beside, pairs = []);
        if (beside !== file) pairs.push(edge);
      }
    }
  }
  return {
    modules,
    dependents(file, paired = false) {
      const importers = (target: string) => [
        ...edges.get(target) ?? [],
        ...(paired ? pairedEdges.get(target) ?? [] : []),
      ];
      const found = new Map<string, ReferenceDependent>();
      // Breadth first over all edges for the depth; then over each kind of run-time edge.
      for (const only of ["all", "runtime", "byForm"] as const) {
        let frontier = [file];
        const seen = new Set([file]);
        for (let depth = 1; frontier.length > 0; depth++) {
          const next: string[] = [];
          for (const target of frontier) {
            for (const edge of importers(target)) {
              if ((only !== "all" && !edge[only]) || seen.has(edge.from)) continue;
              seen.add(edge.from);
              next.push(edge.from);
              if (only === "all") found.set(edge.from, { depth, runtime: false, runtimeByForm: false });
              else if (only === "runtime") found.get(edge.from)!.runtime = true;
              else found.get(edge.from)!.runtimeByForm = true;
            }
          }
          frontier = next;
        }
      }
      return found;
    },
  };
}

/**
 * Every module specifier the file names, read from the compiler's syntax tree, and whether its form keeps a run-time
 * edge: not `import type`, `export type`, an import or re-export whose names are all marked `type`, an `import()` type,
 * anything in a declaration file or inside `declare module "…" {}`, nor the module such a block augments (which counts
 * as named).
 */
function writtenImports(sf: TS.SourceFile): { specifier: string; byForm: boolean; call: boolean }[] {
  const out: { specifier: string; byForm: boolean; call: boolean }[] = [];
  const allTypes = (elements: readonly { isTypeOnly: boolean }[]) =>
    elements.length > 0 && elements.every((e) => e.isTypeOnly);
  const module = ts.isExternalModule(sf);
  const visit = (node: TS.Node, ambient: boolean): void => {
    let specifier: string | undefined;
    let typeForm = ambient;
    let call = false;
    if (ts.isImportDeclaration(node)) {
      specifier = literal(node.moduleSpecifier);
      const clause = node.importClause;
      const named = clause?.namedBindings;
      typeForm ||= clause !== undefined &&
        (clause.isTypeOnly ||
          (!clause.name && named !== undefined && ts.isNamedImports(named) && allTypes(named.elements)));
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      specifier = literal(node.moduleReference.expression);
      typeForm ||= node.isTypeOnly;
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      specifier = literal(node.moduleSpecifier);
      typeForm ||= node.isTypeOnly ||
        (node.exportClause !== undefined && ts.isNamedExports(node.exportClause) &&
          allTypes(node.exportClause.elements));
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      specifier = literal(node.argument.literal);
      typeForm = true;
    } else if (ts.isCallExpression(node) && node.arguments.length >= 1) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === "require" &&
        node.arguments.length === 1;
      if (isImport || isRequire) specifier = literal(node.arguments[0]);
      call = true;
    } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
      if (module) out.push({ specifier: node.name.text, byForm: false, call: false });
      if (node.body) visit(node.body, true);
      return;
    }
    if (specifier !== undefined) out.push({ specifier, byForm: !typeForm, call: call && !typeForm });
    ts.forEachChild(node, (child) => visit(child, ambient));
  };
  // Nothing in a declaration file is emitted.
  visit(sf, sf.isDeclarationFile);
  return out;
}

function literal(node: TS.Node | undefined): string | undefined {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

/** The module an import, re-export or `import x = require()` declaration names. */
function declarationSpecifier(statement: TS.Statement): string | undefined {
  if (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) return literal(statement.moduleSpecifier);
  if (ts.isImportEqualsDeclaration(statement) && ts.isExternalModuleReference(statement.moduleReference)) {
    return literal(statement.moduleReference.expression);
  }
  return undefined;
}

/**
 * Whether the checker lets the export be used as a type only: what it finally names has no value meaning, or an
 * alias on the way is type-only (`export type { … }`, `import type`).
 */
function typeOnly(checker: TS.TypeChecker, exported: TS.Symbol): boolean {
  let symbol = exported;
  for (let hops = 0; symbol.flags & ts.SymbolFlags.Alias && hops < 100; hops++) {
    if (symbol.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d))) return true;
    const next = checker.getImmediateAliasedSymbol(symbol);
    if (!next) return false; // an alias the checker cannot follow (a package not installed) may be a value
    symbol = next;
  }
  // An alias that leads nowhere resolves to the checker's "unknown" symbol, which has every meaning.
  return (symbol.flags & ts.SymbolFlags.Value) === 0;
}
