// What a module's top-level statements say, as a summary records it: the
// modules it imports and the names it binds, what it exports, the symbols it
// declares, and where its import declarations lie. Read from a syntax tree,
// or from an outline's tokens without TypeScript's parser, which in a fresh
// process runs cold and took a large share of a cold build (see
// scripts/bench/README.md). Both readers record through TopLevel, so that
// they record alike; the token reader knows the statements modules are made
// of and gives up on the rest.
import type { ts as TS } from "ts-morph";
import type { TsApi } from "../typescript/typescript.ts";
import type { Binding, ExportRecord, ImportKind, SymbolKind, SymbolRecord } from "./records.ts";
import type { OutlineTokens } from "./outline.ts";

/** A binding before its uses are known. */
export type PendingBinding = Omit<Binding, "members" | "escapes">;

/** An import record before its bindings' uses are known. */
export interface PendingImport {
  readonly specifier: string;
  readonly line: number;
  readonly kind: ImportKind;
  readonly typeOnly: boolean;
  readonly bindings: PendingBinding[];
}

/** One name of `export { … }`: `source` is the name taken (the local one, or the source module's). */
interface ExportElement {
  readonly source: string;
  readonly name: string;
  readonly typeOnly: boolean;
  readonly line: number;
}

/** The records of a module's top-level statements, in the order of the statements. */
export class TopLevel {
  readonly imports: PendingImport[] = [];
  readonly exports: ExportRecord[] = [];
  readonly symbols: SymbolRecord[] = [];
  /** Where import declarations (`import …`, `import x = …`) lie in the text, leading trivia included. */
  readonly importRanges: [number, number][] = [];
  commonjs = false;
  /** Where the `require(…)` calls lie that a CommonJS re-export consumed (`__exportStar(require("x"), exports)`). */
  readonly consumedRequires = new Set<number>();
  /** Whether a top-level statement imports or exports: the file is a module (TypeScript's `isExternalModule`). */
  moduleSyntax = false;
  /** Whether `export { … }`, `export … from`, `export =` or `export default <expression>` occur at the top level. */
  exportStatements = false;
  /** Whether a `declare module "x" { … }` has a body, which an outline drops: what it adds is read from the whole tree. */
  bodies = false;
  /** Names `import x = …` declares. */
  readonly aliases = new Set<string>();
  /** `declare module "x" { … }` in a module: the import record of "x", and the names the block adds to it. */
  readonly augmentations: { index: number; exports: ExportRecord[] }[] = [];
  // Overloads and merged declarations: one symbol per name and kind, and one export.
  readonly #symbolKeys = new Set<string>();
  readonly #exportedDeclarations = new Set<string>();
  /** CommonJS export names declared by `exports.a = void 0` only, so far: a later assignment says where they are. */
  readonly #commonjsPlaceholders = new Set<string>();

  /** `import … from "x"`; `bindings` undefined for `import "x"`; `typeOnly` for `import type`. */
  importFrom(specifier: string, line: number, bindings: PendingBinding[] | undefined, typeOnly = false): void {
    this.moduleSyntax = true;
    this.imports.push({
      specifier,
      line,
      kind: typeOnly ? "static" : bindings === undefined || bindings.length === 0 ? "side-effect" : "static",
      // The run-time edge rule (README, "The code graph, checked against the compiler"): what isolated-module emit
      // drops whatever the uses are is type-only: `import type`, even of nothing, and an import whose every name is
      // marked `type`. `import {} from "x"` is kept, as verbatimModuleSyntax keeps it.
      typeOnly: typeOnly || (bindings !== undefined && bindings.length > 0 && bindings.every((b) => b.typeOnly)),
      bindings: bindings ?? [],
    });
  }

  /** `import name = require("x")` (with its specifier) or `import name = A.B`. */
  importEquals(name: string, specifier: string | undefined, typeOnly: boolean, exported: boolean, line: number) {
    if (specifier !== undefined || exported) this.moduleSyntax = true;
    this.aliases.add(name);
    if (specifier !== undefined) {
      this.imports.push({
        specifier,
        line,
        kind: "import-equals",
        typeOnly,
        bindings: [{ imported: "*", local: name, typeOnly }],
      });
    }
    this.#declare(name, "namespace", line, exported, typeOnly);
    if (exported) {
      this.#exportedDeclarations.add(`namespace ${name}`);
      this.exports.push({ name, kind: "namespace", typeOnly, line, local: name });
    }
  }

  /** `export * from "x"` (`what` "*"), `export * as ns from "x"` (`what` the name), `export { a } from "x"`. */
  reExport(specifier: string, line: number, typeOnly: boolean, what: string | readonly ExportElement[]): void {
    this.moduleSyntax = this.exportStatements = true;
    this.#reExportRecord(specifier, line, typeOnly, what);
  }

  /** The import and exports a re-export records, whether ES syntax or a CommonJS helper made it. */
  #reExportRecord(specifier: string, line: number, typeOnly: boolean, what: string | readonly ExportElement[]): void {
    const from = this.imports.length;
    const bindings: PendingBinding[] = [];
    if (typeof what === "string") {
      bindings.push({ imported: "*", local: what, typeOnly });
      this.exports.push({ name: what, kind: "re-export", typeOnly, line, from, sourceName: "*" });
    } else {
      for (const element of what) {
        const elementTypeOnly = typeOnly || element.typeOnly;
        bindings.push({ imported: element.source, local: element.name, typeOnly: elementTypeOnly });
        this.exports.push({
          name: element.name,
          kind: "re-export",
          typeOnly: elementTypeOnly,
          line: element.line,
          from,
          sourceName: element.source,
        });
      }
    }
    this.imports.push({
      specifier,
      line,
      kind: "re-export",
      typeOnly: typeOnly || (bindings.length > 0 && bindings.every((b) => b.typeOnly)),
      bindings,
    });
  }

  /** `export { a, b as c }`. */
  exportLocals(typeOnly: boolean, elements: readonly ExportElement[]): void {
    this.moduleSyntax = this.exportStatements = true;
    for (const element of elements) {
      this.exports.push({
        name: element.name,
        kind: "value",
        typeOnly: typeOnly || element.typeOnly,
        line: element.line,
        local: element.source,
      });
    }
  }

  /** `exports.a = …`, `Object.defineProperty(exports, "a", …)`; `placeholder` for TypeScript's `exports.a = void 0`. */
  commonjsExport(name: string, line: number, placeholder: boolean): void {
    this.commonjs = true;
    const index = this.exports.findIndex((e) => e.name === name);
    if (index === -1) {
      this.exports.push({ name, kind: "commonjs", typeOnly: false, line });
      if (placeholder) this.#commonjsPlaceholders.add(name);
    } else if (!placeholder && this.#commonjsPlaceholders.delete(name)) {
      this.exports[index] = { ...this.exports[index], line };
    }
  }

  /** Forgets the `exports.a = …` and `module.exports = …` names recorded: in an ES module they export nothing. */
  dropCommonjsExports(): void {
    for (let i = this.exports.length - 1; i >= 0; i--) {
      if (this.exports[i].kind === "commonjs") this.exports.splice(i, 1);
    }
    this.#commonjsPlaceholders.clear();
  }

  /**
   * A CommonJS re-export of the module `require(specifier)` (at `call` in the text) loads: all its names (`what` "*",
   * `__exportStar(require("x"), exports)`) or its module object as one name (`exports.ns = __importStar(require("x"))`).
   */
  commonjsReExport(specifier: string, line: number, call: number, what: string): void {
    this.commonjs = true;
    this.consumedRequires.add(call);
    if (what !== "*") {
      // It replaces the name's `exports.ns = void 0`.
      const index = this.exports.findIndex((e) => e.name === what && e.kind === "commonjs");
      if (index !== -1) this.exports.splice(index, 1);
      this.#commonjsPlaceholders.delete(what);
    }
    // A re-export, but no ES module syntax: the file's other CommonJS exports stay exports.
    this.#reExportRecord(specifier, line, false, what);
  }

  /** `export default <expression>` and `export = <expression>`; `local` when the expression is a name. */
  exportAssignment(exportEquals: boolean, local: string | undefined, line: number): void {
    this.moduleSyntax = this.exportStatements = true;
    const name = exportEquals ? "export=" : "default";
    this.exports.push({ name, kind: "value", typeOnly: false, line, ...(local ? { local } : {}) });
  }

  /** A declaration; `given` is "" when the parser recovered one without a name (`export function (`). */
  declaration(
    given: string | undefined,
    kind: SymbolKind,
    line: number,
    exported: boolean,
    isDefault: boolean,
    typeOnly: boolean,
  ): void {
    const name = given || undefined;
    if (exported) this.moduleSyntax = true;
    if (given === "" && !isDefault) return;
    if (name !== undefined) this.#declare(name, kind, line, exported, typeOnly);
    if (exported) {
      const exportName = isDefault ? "default" : name;
      if (exportName !== undefined && !this.#exportedDeclarations.has(`${kind} ${exportName}`)) {
        this.#exportedDeclarations.add(`${kind} ${exportName}`);
        this.exports.push({ name: exportName, kind, typeOnly, line, ...(isDefault && name ? { local: name } : {}) });
      }
    }
  }

  #declare(name: string, kind: SymbolKind, line: number, exported: boolean, typeOnly: boolean): void {
    const key = `${kind} ${name}`;
    if (!this.#symbolKeys.has(key)) {
      this.#symbolKeys.add(key);
      this.symbols.push({ name, kind, line, exported, typeOnly });
    }
  }
}

/**
 * The top-level statements of `sf`, a tree of `text` (`whole`) or of its outline; `at` takes positions in the tree to
 * positions in `text`, `lineAt` positions in `text` to lines.
 */
export function topLevelOfTree(
  ts: TsApi,
  text: string,
  sf: TS.SourceFile,
  at: (position: number) => number,
  lineAt: (position: number) => number,
  whole = false,
): TopLevel {
  const SK = ts.SyntaxKind;
  const top = new TopLevel();
  const esbuild: EsbuildExports = { objects: new Map(), toCommonJs: new Set() };
  const lineOf = (node: TS.Node) => lineAt(at(node.getStart(sf)));
  const hasModifier = (node: TS.Node, kind: TS.SyntaxKind) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);
  const literalText = (node: TS.Node | undefined): string | undefined =>
    node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
  const nameText = (node: TS.Node): string =>
    ts.isIdentifier(node) || ts.isStringLiteral(node) || ts.isPrivateIdentifier(node)
      ? node.text
      : text.slice(at(node.getStart(sf)), at(node.end));
  const bindingNames = (name: TS.BindingName, out: string[] = []): string[] => {
    if (ts.isIdentifier(name)) out.push(name.text);
    else {for (const element of name.elements) {
        if (!ts.isOmittedExpression(element)) bindingNames(element.name, out);
      }}
    return out;
  };

  /** `declare module "x" { … }` blocks, read once the file is known to be a module or a script. */
  const ambient: [TS.ModuleDeclaration, number][] = [];
  for (const statement of sf.statements) {
    const line = lineOf(statement);
    if (ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement)) {
      top.importRanges.push([at(statement.pos), at(statement.end)]);
    }
    if (ts.isImportDeclaration(statement)) {
      const specifier = literalText(statement.moduleSpecifier);
      if (specifier === undefined) continue;
      const clause = statement.importClause;
      if (!clause) {
        top.importFrom(specifier, line, undefined);
        continue;
      }
      const declTypeOnly = clause.isTypeOnly;
      const bindings: PendingBinding[] = [];
      if (clause.name) bindings.push({ imported: "default", local: clause.name.text, typeOnly: declTypeOnly });
      const named = clause.namedBindings;
      if (named && ts.isNamespaceImport(named)) {
        bindings.push({ imported: "*", local: named.name.text, typeOnly: declTypeOnly });
      } else if (named) {
        for (const element of named.elements) {
          bindings.push({
            imported: nameText(element.propertyName ?? element.name),
            local: element.name.text,
            typeOnly: declTypeOnly || element.isTypeOnly,
          });
        }
      }
      top.importFrom(specifier, line, bindings, declTypeOnly);
      continue;
    }
    if (ts.isImportEqualsDeclaration(statement)) {
      const ref = statement.moduleReference;
      const specifier = ts.isExternalModuleReference(ref) ? literalText(ref.expression) : undefined;
      const exported = hasModifier(statement, SK.ExportKeyword);
      top.importEquals(statement.name.text, specifier, statement.isTypeOnly, exported, line);
      continue;
    }
    if (ts.isExportDeclaration(statement)) {
      const specifier = literalText(statement.moduleSpecifier);
      const clause = statement.exportClause;
      const elements = (named: TS.NamedExports): ExportElement[] =>
        named.elements.map((element) => ({
          source: nameText(element.propertyName ?? element.name),
          name: nameText(element.name),
          typeOnly: element.isTypeOnly,
          line: lineOf(element),
        }));
      if (specifier !== undefined) {
        const what = !clause ? "*" : ts.isNamespaceExport(clause) ? nameText(clause.name) : elements(clause);
        top.reExport(specifier, line, statement.isTypeOnly, what);
      } else if (clause && ts.isNamedExports(clause)) top.exportLocals(statement.isTypeOnly, elements(clause));
      continue;
    }
    if (ts.isExportAssignment(statement)) {
      const local = ts.isIdentifier(statement.expression) ? statement.expression.text : undefined;
      top.exportAssignment(statement.isExportEquals === true, local, line);
      continue;
    }
    const exported = hasModifier(statement, SK.ExportKeyword);
    const isDefault = exported && hasModifier(statement, SK.DefaultKeyword);
    const record = (given: string | undefined, kind: SymbolKind, typeOnly: boolean) =>
      top.declaration(given, kind, line, exported, isDefault, typeOnly);
    if (ts.isFunctionDeclaration(statement)) record(statement.name?.text, "function", false);
    else if (ts.isClassDeclaration(statement)) record(statement.name?.text, "class", false);
    else if (ts.isInterfaceDeclaration(statement)) record(statement.name.text, "interface", true);
    else if (ts.isTypeAliasDeclaration(statement)) record(statement.name.text, "type", true);
    else if (ts.isEnumDeclaration(statement)) record(statement.name.text, "enum", false);
    else if (ts.isModuleDeclaration(statement)) {
      // `declare global {}` declares nothing here; `declare module "x" {}` adds to another module (read below, from the
      // whole tree: on an outline, which has dropped the block, `bodies` sends the module there).
      const global = (statement.flags & ts.NodeFlags.GlobalAugmentation) !== 0;
      if (ts.isIdentifier(statement.name) && !global) {
        // A namespace of types only has no value, as TypeScript binds it (getModuleInstanceState). An outline has
        // dropped its body: that is read from the statement's text, as the token reader does.
        const value = whole
          ? instantiated(ts, statement)
          : namespaceInstantiated(ts, text.slice(at(statement.getStart(sf)), at(statement.end)));
        record(statement.name.text, "namespace", !value);
      } else if (ts.isStringLiteral(statement.name) && statement.body) {
        if (whole) ambient.push([statement, line]);
        else top.bodies = true;
      }
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        for (const name of bindingNames(declaration.name)) record(name, "variable", false);
      }
    } else if (ts.isExpressionStatement(statement)) {
      commonJsStatement(ts, statement.expression, line, top, (node) => at(node.getStart(sf)), esbuild);
    }
  }
  for (const [object, names] of esbuild.objects) {
    if (esbuild.toCommonJs.has(object)) { for (const [name, line] of names) top.commonjsExport(name, line, false); }
  }
  // In an ES module, `module.exports = …` and `exports.a = …` are expressions to TypeScript, not exports: its exports
  // are its export statements (ajv's `module.exports = exports = Ajv` beside `export default Ajv`).
  if (top.moduleSyntax) top.dropCommonjsExports();
  for (const [block, line] of ambient) ambientModule(ts, top, block, line, lineOf, literalText);
  return top;
}

/**
 * `declare module "x" { … }`: the imports inside (type-only: nothing ambient is emitted) and, in a module, where it
 * augments "x", a type-only import of "x" with the names the block adds to it: those it exports, or all it declares when
 * it has no `export { … }` or `export =` (TypeScript's export context).
 */
function ambientModule(
  ts: TsApi,
  top: TopLevel,
  block: TS.ModuleDeclaration,
  line: number,
  lineOf: (node: TS.Node) => number,
  literalText: (node: TS.Node | undefined) => string | undefined,
): void {
  const statements = block.body && ts.isModuleBlock(block.body) ? block.body.statements : [];
  for (const statement of statements) {
    const specifier = ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)
      ? literalText(statement.moduleSpecifier)
      : ts.isImportEqualsDeclaration(statement) && ts.isExternalModuleReference(statement.moduleReference)
      ? literalText(statement.moduleReference.expression)
      : undefined;
    if (specifier === undefined) continue;
    const bindings: PendingBinding[] = [];
    if (ts.isImportEqualsDeclaration(statement)) {
      bindings.push({ imported: "*", local: statement.name.text, typeOnly: true });
    } else if (ts.isImportDeclaration(statement) && statement.importClause) {
      const clause = statement.importClause;
      if (clause.name) bindings.push({ imported: "default", local: clause.name.text, typeOnly: true });
      const named = clause.namedBindings;
      if (named && ts.isNamespaceImport(named)) {
        bindings.push({ imported: "*", local: named.name.text, typeOnly: true });
      } else if (named) {
        for (const element of named.elements) {
          const imported = element.propertyName ?? element.name;
          bindings.push({
            imported: ts.isIdentifier(imported) || ts.isStringLiteral(imported) ? imported.text : element.name.text,
            local: element.name.text,
            typeOnly: true,
          });
        }
      }
    }
    const kind = ts.isExportDeclaration(statement)
      ? "re-export"
      : ts.isImportEqualsDeclaration(statement)
      ? "import-equals"
      : bindings.length === 0
      ? "side-effect"
      : "static";
    top.imports.push({ specifier, line: lineOf(statement), kind, typeOnly: true, bindings });
  }
  if (!top.moduleSyntax) return;
  const everything = !statements.some((s) => ts.isExportDeclaration(s) || ts.isExportAssignment(s));
  const exports: ExportRecord[] = [];
  const seen = new Set<string>();
  for (const statement of statements) {
    const exported = everything ||
      (ts.canHaveModifiers(statement) &&
        (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword));
    if (!exported) continue;
    for (const [name, kind, typeOnly] of declared(ts, statement)) {
      if (seen.has(`${kind} ${name}`)) continue;
      seen.add(`${kind} ${name}`);
      exports.push({ name, kind, typeOnly, line: lineOf(statement) });
    }
  }
  top.augmentations.push({ index: top.imports.length, exports });
  top.imports.push({ specifier: block.name.text, line, kind: "augmentation", typeOnly: true, bindings: [] });
}

/** The names a declaration statement declares, with their kind and whether they are types only. */
function declared(ts: TsApi, statement: TS.Statement): [string, SymbolKind, boolean][] {
  if (ts.isFunctionDeclaration(statement) && statement.name) return [[statement.name.text, "function", false]];
  if (ts.isClassDeclaration(statement) && statement.name) return [[statement.name.text, "class", false]];
  if (ts.isInterfaceDeclaration(statement)) return [[statement.name.text, "interface", true]];
  if (ts.isTypeAliasDeclaration(statement)) return [[statement.name.text, "type", true]];
  if (ts.isEnumDeclaration(statement)) return [[statement.name.text, "enum", false]];
  if (ts.isModuleDeclaration(statement) && ts.isIdentifier(statement.name)) {
    return [[statement.name.text, "namespace", !instantiated(ts, statement)]];
  }
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.filter((d) => ts.isIdentifier(d.name)).map((
      d,
    ) => [(d.name as TS.Identifier).text, "variable", false]);
  }
  return [];
}

/** Whether the namespace `statement` (the text of one statement) declares has a value at run time (see instantiated). */
function namespaceInstantiated(ts: TsApi, statement: string): boolean {
  const sf = ts.createSourceFile(
    "namespace.ts",
    statement,
    { languageVersion: ts.ScriptTarget.Latest, jsDocParsingMode: ts.JSDocParsingMode.ParseNone },
    false,
    ts.ScriptKind.TS,
  );
  const declaration = sf.statements[0];
  return declaration === undefined || !ts.isModuleDeclaration(declaration) || instantiated(ts, declaration);
}

/**
 * Whether a namespace has a value at run time, as TypeScript's binder decides (getModuleInstanceState): not when its
 * body holds only interfaces, type aliases, imports that are not exported, `export { … }` of such names, and namespaces
 * of the same kind; a const enum counts as a value, as it does for the binder.
 */
function instantiated(ts: TsApi, declaration: TS.ModuleDeclaration): boolean {
  const body = declaration.body;
  if (!body) return true;
  if (ts.isModuleDeclaration(body)) return instantiated(ts, body);
  if (!ts.isModuleBlock(body)) return true;
  const typesOnly = new Set<string>();
  for (const statement of body.statements) {
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
      typesOnly.add(statement.name.text);
    } else if (ts.isModuleDeclaration(statement) && ts.isIdentifier(statement.name) && !instantiated(ts, statement)) {
      typesOnly.add(statement.name.text);
    }
  }
  return body.statements.some((statement) => {
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) return false;
    if (ts.isModuleDeclaration(statement)) return instantiated(ts, statement);
    if (ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement)) {
      return (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    }
    if (ts.isExportDeclaration(statement) && !statement.moduleSpecifier && statement.exportClause) {
      const clause = statement.exportClause;
      return !ts.isNamedExports(clause) ||
        clause.elements.some((e) => {
          const name = e.propertyName ?? e.name;
          return !ts.isIdentifier(name) || !typesOnly.has(name.text);
        });
    }
    return true;
  });
}

/** esbuild's CommonJS output: `__export(x_exports, { a: () => a })` fills an object; `module.exports = __toCommonJS(x_exports)`. */
interface EsbuildExports {
  readonly objects: Map<string, [string, number][]>;
  readonly toCommonJs: Set<string>;
}

/** Helpers that copy every export of a required module but `default` onto `exports`: TypeScript's, swc's, esbuild's. */
const STAR_HELPERS = new Set(["__exportStar", "__export", "_export_star", "__reExport"]);
/** Helpers that wrap a required module into a namespace object: TypeScript's, babel's, swc's, esbuild's. */
export const NAMESPACE_HELPERS: ReadonlySet<string> = new Set([
  "__importStar",
  "_interopRequireWildcard",
  "_interop_require_wildcard",
  "__toESM",
  "__importDefault",
  "_interopRequireDefault",
  "_interop_require_default",
]);

/** The name of a helper called as `h(…)` or `tslib.h(…)`, `(0, tslib.h)(…)`. */
export function helperName(ts: TsApi, call: TS.CallExpression): string | undefined {
  let callee: TS.Expression = call.expression;
  while (ts.isParenthesizedExpression(callee)) callee = callee.expression;
  if (ts.isBinaryExpression(callee) && callee.operatorToken.kind === ts.SyntaxKind.CommaToken) callee = callee.right;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.name)) return callee.name.text;
  return undefined;
}

/**
 * A CommonJS export statement, recorded: `exports.a = …` (chains too), `module.exports = …`,
 * `Object.defineProperty(exports, "a", …)`, `exports.ns = __importStar(require("x"))` and the helpers that re-export
 * all of a required module (`__exportStar(require("x"), exports)`), as TypeScript, babel, swc and esbuild emit them.
 * Other uses of `exports` record nothing: a module they could take names from is passed along, which the uses of the
 * module's binding show (it escapes).
 */
function commonJsStatement(
  ts: TsApi,
  expression: TS.Expression,
  line: number,
  top: TopLevel,
  positionOf: (node: TS.Node) => number,
  esbuild: EsbuildExports,
): void {
  const isModuleExports = (node: TS.Node) =>
    ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "module" &&
    node.name.text === "exports";
  const isExports = (node: TS.Node) => (ts.isIdentifier(node) && node.text === "exports") || isModuleExports(node);
  /** `exports.a`, `exports["a"]`, `module.exports.a`: the name. */
  const exportedName = (node: TS.Node): string | undefined => {
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.name) && isExports(node.expression)) {
      return node.name.text;
    }
    if (ts.isElementAccessExpression(node) && isExports(node.expression)) {
      const key = node.argumentExpression;
      if (ts.isStringLiteral(key) || ts.isNoSubstitutionTemplateLiteral(key)) return key.text;
    }
    return undefined;
  };
  /** `require("x")`: the call and its specifier. */
  const requireOf = (node: TS.Node | undefined): { call: TS.CallExpression; specifier: string } | undefined => {
    if (
      node && ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "require" &&
      node.arguments.length === 1 &&
      (ts.isStringLiteral(node.arguments[0]) || ts.isNoSubstitutionTemplateLiteral(node.arguments[0]))
    ) return { call: node, specifier: (node.arguments[0] as TS.StringLiteral).text };
    return undefined;
  };
  const isAssignment = (node: TS.Node): node is TS.BinaryExpression =>
    ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.EqualsToken;
  const propertyNames = (object: TS.ObjectLiteralExpression): string[] =>
    object.properties.flatMap((property) =>
      property.name && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)) ? [property.name.text] : []
    );

  if (isAssignment(expression)) {
    if (isModuleExports(expression.left)) {
      top.commonjs = true;
      const right = expression.right;
      if (ts.isObjectLiteralExpression(right)) {
        for (const name of propertyNames(right)) top.commonjsExport(name, line, false);
      } else if (ts.isCallExpression(right) && helperName(ts, right) === "__toCommonJS") {
        const object = right.arguments[0];
        if (object && ts.isIdentifier(object)) esbuild.toCommonJs.add(object.text);
      } else top.commonjsExport("export=", line, false); // what TypeScript calls `export =`
      return;
    }
    // `exports.a = exports.b = value`
    const names: string[] = [];
    let value: TS.Expression = expression;
    while (isAssignment(value)) {
      const name = exportedName(value.left);
      if (name === undefined) break;
      names.push(name);
      value = value.right;
    }
    if (names.length === 0) return;
    let inner: TS.Expression = value;
    if (ts.isCallExpression(inner) && NAMESPACE_HELPERS.has(helperName(ts, inner) ?? "")) {
      const name = helperName(ts, inner)!;
      // A default-import helper wraps a module that is not an ES module as `{ default: module }`: not a namespace.
      if (!/default/i.test(name)) inner = inner.arguments[0] ?? inner;
    }
    const required = names.length === 1 ? requireOf(inner) : undefined;
    if (required) {
      top.commonjsReExport(required.specifier, line, positionOf(required.call), names[0]);
      return;
    }
    const placeholder = ts.isVoidExpression(value) && ts.isNumericLiteral(value.expression);
    for (const name of names) top.commonjsExport(name, line, placeholder);
    return;
  }
  if (!ts.isCallExpression(expression)) return;
  const helper = helperName(ts, expression);
  const args = expression.arguments;
  if (
    helper === "defineProperty" && ts.isPropertyAccessExpression(expression.expression) &&
    ts.isIdentifier(expression.expression.expression) && expression.expression.expression.text === "Object" &&
    args.length >= 2 && isExports(args[0])
  ) {
    const key = args[1];
    if (ts.isStringLiteral(key) || ts.isNoSubstitutionTemplateLiteral(key)) {
      if (key.text === "__esModule") top.commonjs = true;
      else top.commonjsExport(key.text, line, false);
    }
    return;
  }
  if (helper === undefined || !STAR_HELPERS.has(helper)) return;
  if (helper === "__export" && args.length === 2 && ts.isIdentifier(args[0]) && ts.isObjectLiteralExpression(args[1])) {
    const names = propertyNames(args[1]).map((name): [string, number] => [name, line]);
    esbuild.objects.set(args[0].text, [...(esbuild.objects.get(args[0].text) ?? []), ...names]);
    return;
  }
  // `__exportStar(require("x"), exports)`, `__export(require("x"))`, `__reExport(x_exports, require("x"), module.exports)`
  const [source, target] = helper === "__reExport" ? [args[1], args[2]] : [args[0], args[1]];
  const required = requireOf(source);
  if (required && (helper === "__export" ? args.length === 1 : target !== undefined && isExports(target))) {
    top.commonjsReExport(required.specifier, line, positionOf(required.call), "*");
  }
}

/**
 * The top-level statements of an outline, read from its tokens (see outlineOf) as TypeScript's parser reads them:
 * imports, exports, declarations, expression statements and the statements that declare nothing (`if`, `for`, a
 * block…). undefined when a statement is not one the reader knows, or may not parse: the caller then parses the
 * outline. Initializers and types are passed over, not parsed; where they could hide the end of a statement (a line
 * break), the reader ends it as TypeScript would or gives up, and it gives up wherever the outline might not parse
 * (two operands side by side, a statement keyword inside an expression, an operator where an operand is due, a
 * conditional without its `:`…): a module it reads is one TypeScript parses without error and records the same (the
 * tests hold both). What is inside `for (…)` is passed over unchecked, and a syntax error inside what the outline
 * dropped goes unseen, as before.
 */
export function topLevelOfOutline(
  ts: TsApi,
  text: string,
  tokens: OutlineTokens,
  lineAt: (position: number) => number,
): TopLevel | undefined {
  const top = new TopLevel();
  return readStatements(ts, readerTables(ts), text, tokens, lineAt, top) ? top : undefined;
}

interface ReaderTables {
  /** Tokens that may be a binding name: identifiers and contextual keywords. */
  readonly identifier: Uint8Array;
  /** Tokens that may be a property or export name: identifiers and every keyword. */
  readonly name: Uint8Array;
  /** What an expression (bit 1) or a type (bit 2) may end with, so that a line break after it may end the statement. */
  readonly ends: Uint8Array;
  /** What continues an expression (bit 1) or type (bit 2) on the next line; bit 4: cannot tell, give up. */
  readonly continues: Uint8Array;
  /** Tokens that start declarations: inside an expression, after an operator, a sign that something is wrong. */
  readonly declares: Uint8Array;
  /** Operators that want an operand after them: before a `;` or the end, a syntax error. */
  readonly wantsOperand: Uint8Array;
  /** Operators after which an expression or a type goes on, on the next line too. */
  readonly operandFollows: Uint8Array;
  /** Binary operators, `as` and `satisfies` included. */
  readonly binaryOperator: Uint8Array;
  /** Operators that may also come before an operand: `+x`, `-x`, `<T>(x) => x`, `/re/`. */
  readonly unary: Uint8Array;
  /**
   * What starts an operand and nothing else (names, literals, `function`, `new`…): after an operand on the same line,
   * a syntax error (`a b`, `p let`, `local function`); not `as`, `is`, `of`, which are also operators.
   */
  readonly operand: Uint8Array;
  /** Tokens that may start an expression. */
  readonly startsExpression: Uint8Array;
  /** Reserved words that start statements, never expressions or types (`import`, but for `import(`, `import.meta`). */
  readonly statementOnly: Uint8Array;
  /** Tokens no type has outside brackets: where one is, a `<` before it was a comparison. */
  readonly notInTypes: Uint8Array;
}

const EXPRESSION = 1;
const TYPE = 2;
const UNSURE = 4;

let readerTablesFor: { ts: TsApi; tables: ReaderTables } | undefined;

function readerTables(ts: TsApi): ReaderTables {
  if (readerTablesFor?.ts === ts) return readerTablesFor.tables;
  const SK = ts.SyntaxKind;
  const table = () => new Uint8Array(SK.Count);
  const mark = (marked: Uint8Array, kinds: readonly TS.SyntaxKind[], bits: number) => {
    for (const kind of kinds) marked[kind] |= bits;
  };
  const identifier = table();
  const name = table();
  const ends = table();
  const continues = table();
  const declares = table();
  const wantsOperand = table();
  identifier[SK.Identifier] = name[SK.Identifier] = 1;
  for (let kind = SK.FirstKeyword; kind <= SK.LastKeyword; kind++) {
    name[kind] = 1;
    if (kind > SK.LastReservedWord) identifier[kind] = 1;
  }
  // Names end expressions and types, but for the contextual keywords that take an operand after them there: in an
  // expression `readonly` is a name (`export default readonly` then a line), in a type an operator.
  const expressionOperators = [SK.AsKeyword, SK.SatisfiesKeyword, SK.AwaitKeyword, SK.YieldKeyword];
  const typeOperators = [
    SK.AsKeyword,
    SK.SatisfiesKeyword,
    SK.KeyOfKeyword,
    SK.InferKeyword,
    SK.IsKeyword,
    SK.AssertsKeyword,
    SK.ReadonlyKeyword,
    SK.UniqueKeyword,
    SK.AbstractKeyword,
    SK.OutKeyword,
    SK.AccessorKeyword,
  ];
  const takesOperand = [...expressionOperators, ...typeOperators];
  for (let kind = 0; kind < SK.Count; kind++) if (identifier[kind]) ends[kind] = EXPRESSION | TYPE;
  for (const kind of expressionOperators) ends[kind] &= ~EXPRESSION;
  for (const kind of typeOperators) ends[kind] &= ~TYPE;
  mark(ends, [
    SK.StringLiteral,
    SK.NumericLiteral,
    SK.BigIntLiteral,
    SK.NoSubstitutionTemplateLiteral,
    SK.TemplateTail,
    SK.RegularExpressionLiteral,
    SK.CloseParenToken,
    SK.CloseBracketToken,
    SK.CloseBraceToken,
    SK.ThisKeyword,
    SK.SuperKeyword,
    SK.TrueKeyword,
    SK.FalseKeyword,
    SK.NullKeyword,
  ], EXPRESSION | TYPE);
  ends[SK.PlusPlusToken] = ends[SK.MinusMinusToken] = EXPRESSION; // postfix
  ends[SK.ConstKeyword] = EXPRESSION; // `as const`
  ends[SK.VoidKeyword] = TYPE; // `(): void`; in an expression, `void x`
  ends[SK.GreaterThanToken] = TYPE; // `Map<K, V>`; in an expression, a comparison or type arguments: cannot tell
  // On the next line, an operator continues an expression; TypeScript ends a type at most tokens (`[`, `<`, `extends`
  // and `is` only count on the same line).
  mark(continues, [
    SK.OpenParenToken,
    SK.OpenBracketToken,
    SK.DotToken,
    SK.QuestionDotToken,
    SK.QuestionToken,
    SK.ColonToken,
    SK.CommaToken,
    SK.EqualsGreaterThanToken,
    SK.InKeyword,
    SK.InstanceOfKeyword,
  ], EXPRESSION);
  // The scanner gives `>` alone (the parser rescans `>=`, `>>`…).
  const binary = [
    SK.LessThanToken,
    SK.GreaterThanToken,
    SK.LessThanEqualsToken,
    SK.EqualsEqualsToken,
    SK.ExclamationEqualsToken,
    SK.EqualsEqualsEqualsToken,
    SK.ExclamationEqualsEqualsToken,
    SK.PlusToken,
    SK.MinusToken,
    SK.AsteriskToken,
    SK.AsteriskAsteriskToken,
    SK.SlashToken,
    SK.PercentToken,
    SK.LessThanLessThanToken,
    SK.AmpersandToken,
    SK.BarToken,
    SK.CaretToken,
    SK.AmpersandAmpersandToken,
    SK.BarBarToken,
    SK.QuestionQuestionToken,
  ];
  for (let kind = SK.FirstAssignment; kind <= SK.LastAssignment; kind++) binary.push(kind);
  mark(continues, binary, EXPRESSION);
  mark(continues, [
    SK.BarToken,
    SK.AmpersandToken,
    SK.DotToken,
    SK.QuestionToken,
    SK.ColonToken,
    SK.CommaToken,
    SK.EqualsToken,
    SK.EqualsGreaterThanToken,
  ], TYPE);
  // Where a type's line break is followed by these, or an expression's by a template (tagged, or not?), give up.
  mark(continues, [
    SK.NoSubstitutionTemplateLiteral,
    SK.TemplateHead,
    SK.OpenBracketToken,
    SK.LessThanToken,
    SK.ExtendsKeyword,
    SK.IsKeyword,
  ], UNSURE);
  mark(declares, [
    SK.ExportKeyword,
    SK.ImportKeyword,
    SK.ConstKeyword,
    SK.LetKeyword,
    SK.VarKeyword,
    SK.EnumKeyword,
    SK.InterfaceKeyword,
    SK.DeclareKeyword,
    SK.TypeKeyword,
    SK.NamespaceKeyword,
    SK.ModuleKeyword,
    SK.AbstractKeyword,
    SK.GlobalKeyword,
    SK.AtToken,
  ], 1);
  for (const kind of binary) if (kind !== SK.GreaterThanToken) wantsOperand[kind] = 1; // `Map<K, V>;`
  mark(wantsOperand, [
    SK.DotToken,
    SK.QuestionDotToken,
    SK.QuestionToken,
    SK.ColonToken,
    SK.EqualsGreaterThanToken,
    SK.CommaToken,
  ], 1);
  const operandFollows = wantsOperand.slice();
  mark(operandFollows, [
    ...takesOperand,
    SK.ClassKeyword, // `class\nextends Base {}`
    SK.FunctionKeyword,
    SK.ExclamationToken,
    SK.TildeToken,
    SK.CommaToken,
    SK.DotDotDotToken,
    SK.BarToken,
    SK.AmpersandToken,
    SK.TypeOfKeyword,
    SK.VoidKeyword,
    SK.NewKeyword,
    SK.DeleteKeyword,
    SK.InKeyword,
    SK.InstanceOfKeyword,
    SK.ExtendsKeyword,
    SK.LessThanToken,
  ], 1);
  const notInTypes = table();
  mark(notInTypes, binary, 1);
  notInTypes[SK.LessThanToken] = notInTypes[SK.GreaterThanToken] = notInTypes[SK.BarToken] = 0;
  notInTypes[SK.AmpersandToken] = 0;
  notInTypes[SK.SemicolonToken] = 1;
  const binaryOperator = table();
  mark(binaryOperator, [...binary, SK.AsKeyword, SK.SatisfiesKeyword, SK.InKeyword, SK.InstanceOfKeyword], 1);
  const operand = identifier.slice();
  for (const kind of [SK.AsKeyword, SK.SatisfiesKeyword, SK.IsKeyword, SK.OfKeyword, SK.AssertsKeyword]) {
    operand[kind] = 0;
  }
  mark(operand, [
    SK.StringLiteral,
    SK.NumericLiteral,
    SK.BigIntLiteral,
    SK.FunctionKeyword,
    SK.ClassKeyword,
    SK.NewKeyword,
    SK.ThisKeyword,
    SK.SuperKeyword,
    SK.TypeOfKeyword,
    SK.VoidKeyword,
    SK.DeleteKeyword,
    SK.TrueKeyword,
    SK.FalseKeyword,
    SK.NullKeyword,
  ], 1);
  const unary = table();
  mark(unary, [SK.PlusToken, SK.MinusToken, SK.LessThanToken, SK.SlashToken, SK.SlashEqualsToken], 1);
  const startsExpression = identifier.slice();
  mark(startsExpression, [
    SK.StringLiteral,
    SK.NumericLiteral,
    SK.BigIntLiteral,
    SK.NoSubstitutionTemplateLiteral,
    SK.TemplateHead,
    SK.RegularExpressionLiteral,
    SK.OpenParenToken,
    SK.OpenBracketToken,
    SK.OpenBraceToken,
    SK.ExclamationToken,
    SK.TildeToken,
    SK.PlusPlusToken,
    SK.MinusMinusToken,
    SK.PlusToken,
    SK.MinusToken,
    SK.SlashToken,
    SK.SlashEqualsToken,
    SK.LessThanToken,
    SK.AtToken,
    SK.HashToken,
    SK.PrivateIdentifier,
    SK.NewKeyword,
    SK.ThisKeyword,
    SK.SuperKeyword,
    SK.TrueKeyword,
    SK.FalseKeyword,
    SK.NullKeyword,
    SK.FunctionKeyword,
    SK.ClassKeyword,
    SK.TypeOfKeyword,
    SK.VoidKeyword,
    SK.DeleteKeyword,
    SK.ImportKeyword,
  ], 1);
  const statementOnly = table();
  mark(statementOnly, [
    SK.ExportKeyword,
    SK.ImportKeyword,
    SK.VarKeyword,
    SK.EnumKeyword,
    SK.IfKeyword,
    SK.ElseKeyword,
    SK.ForKeyword,
    SK.WhileKeyword,
    SK.DoKeyword,
    SK.SwitchKeyword,
    SK.CaseKeyword,
    SK.DefaultKeyword,
    SK.TryKeyword,
    SK.CatchKeyword,
    SK.FinallyKeyword,
    SK.ReturnKeyword,
    SK.ThrowKeyword,
    SK.BreakKeyword,
    SK.ContinueKeyword,
    SK.DebuggerKeyword,
    SK.WithKeyword,
  ], 1);
  const tables = {
    statementOnly,
    identifier,
    name,
    ends,
    continues,
    declares,
    wantsOperand,
    operandFollows,
    binaryOperator,
    unary,
    operand,
    startsExpression,
    notInTypes,
  };
  readerTablesFor = { ts, tables };
  return tables;
}

function readStatements(
  ts: TsApi,
  tables: ReaderTables,
  text: string,
  { kinds, starts, ends, lineBreaks }: OutlineTokens,
  lineAt: (position: number) => number,
  top: TopLevel,
): boolean {
  const SK = ts.SyntaxKind;
  const count = kinds.length;
  let i = 0;
  const kind = (at = i): TS.SyntaxKind => at < count ? kinds[at] : SK.EndOfFileToken;
  const isIdentifier = (at = i) => at < count && tables.identifier[kinds[at]] === 1;
  const isName = (at = i) => at < count && tables.name[kinds[at]] === 1;
  const word = (at: number) => text.slice(starts[at], ends[at]);
  const lineOf = (at: number) => lineAt(starts[at]);
  /** A string literal's value; undefined when it has escapes (rare in names and specifiers: not worth decoding). */
  const stringAt = (at: number): string | undefined => {
    if (kind(at) !== SK.StringLiteral) return undefined;
    const raw = text.slice(starts[at] + 1, ends[at] - 1);
    return raw.includes("\\") ? undefined : raw;
  };
  const isOpen = (k: TS.SyntaxKind) =>
    k === SK.OpenParenToken || k === SK.OpenBracketToken || k === SK.OpenBraceToken || k === SK.TemplateHead;
  const isClose = (k: TS.SyntaxKind) =>
    k === SK.CloseParenToken || k === SK.CloseBracketToken || k === SK.CloseBraceToken || k === SK.TemplateTail;

  /** TypeScript's parseSemicolon: a `;`, or none before a line break or the end. */
  const endStatement = (): boolean => {
    if (kind() === SK.SemicolonToken) {
      i++;
      return true;
    }
    return i >= count || lineBreaks[i] === 1;
  };
  /** Past a bracketed group that starts at the current token, nested groups and all. */
  const skipGroup = (): boolean => {
    let depth = 0;
    do {
      const k = kind();
      if (k === SK.EndOfFileToken) return false;
      if (isOpen(k)) depth++;
      else if (isClose(k)) depth--;
      i++;
    } while (depth > 0);
    return true;
  };
  /** Past `<…>` type parameters, when the current token opens them. */
  const skipTypeParameters = (): boolean => {
    if (kind() !== SK.LessThanToken) return true;
    const close = typeArgumentsEnd(i, false);
    if (close === -1) return false;
    i = close + 1;
    return true;
  };
  /**
   * Past an expression or a type, to the end of the statement (not taken: a `;`, a line break TypeScript ends it at,
   * the end), to a closing bracket it is inside of, or to one of `stops` at its own level; `{` stops only after what
   * ends a type (a function's body after its return type). false when it may not parse.
   */
  const skip = (
    context: typeof EXPRESSION | typeof TYPE,
    stops: readonly TS.SyntaxKind[],
    heritage = false,
  ): boolean => {
    const from = i;
    let depth = 0;
    let angles = 0;
    let lessThan = false;
    /** In the type after `as` or `satisfies`, until an operator ends it. */
    let typeAfterAs = false;
    /** Where the last `<…>` read as type arguments closed. */
    let typeArguments = -1;
    /** `?` of conditionals (`a ? b : c`, `A extends B ? C : D`) still waiting for their `:`. */
    let conditionals = 0;
    /** Arrow functions' return types (`(x): T`) still waiting for their `=>`. */
    let returnTypes = 0;
    /** Whether a class expression was seen, whose `extends` and `implements` may follow. */
    let classes = false;
    /** Whether what was read since the start or the last assignment is a reference, which may be assigned to. */
    let assignable = true;
    /** `extends` of conditional types still waiting for their `?`. */
    let extendsClauses = 0;
    /** Whether the last group closed was a call's arguments (`f( )`, after which `=>` cannot come). */
    let lastCall = false;
    /** Whether the last group closed was a function expression's parameters, which its body follows. */
    let lastParameters = false;
    const parameters: boolean[] = [];
    /** The brackets open inside what is skipped, and for each `(`, whether it opened a call's arguments. */
    const opened: TS.SyntaxKind[] = [];
    const calls: boolean[] = [];
    for (;; i++) {
      const k = kind();
      if (k === SK.EndOfFileToken && (depth > 0 || angles > 0)) return false;
      const inType = context === TYPE || typeAfterAs || returnTypes > 0;
      if (depth > 0 && (opened[depth - 1] === SK.OpenParenToken || opened[depth - 1] === SK.OpenBracketToken)) {
        // Inside a group or an array: no statement ends here, but what cannot parse can be seen all the same.
        const before = kinds[i - 1];
        const afterDotNow = before === SK.DotToken || before === SK.QuestionDotToken;
        const ended = afterDotNow ? false : (tables.ends[before] & EXPRESSION) !== 0;
        if (sideBySide()) return false;
        if (isClose(k) && tables.wantsOperand[before] && !(before === SK.CommaToken && k === SK.CloseBracketToken)) {
          return false;
        }
        if (!afterDotNow && statementOnly()) return false;
        if (emptyGroup(ended)) return false;
        if (k === SK.EqualsGreaterThanToken && before === SK.CloseParenToken && lastCall) return false;
      }
      if (
        depth === 0 && angles > 0 &&
        (k === SK.SemicolonToken || statementOnly() && kinds[i - 1] !== SK.DotToken)
      ) return false; // no type argument list has these
      if (depth === 0 && angles === 0) {
        const before = i > from ? kinds[i - 1] : SK.Unknown;
        const afterDot = i - 2 >= from && (kinds[i - 2] === SK.DotToken || kinds[i - 2] === SK.QuestionDotToken);
        // A non-null assertion (`f()!.a`) ends what it follows.
        const asserted = before === SK.ExclamationToken && i - 2 >= from && !lineBreaks[i - 1] &&
          (tables.ends[kinds[i - 2]] & EXPRESSION) !== 0;
        const ended = asserted || i > from &&
            (afterDot ||
              (tables.ends[before] & (context === TYPE ? TYPE : inType ? EXPRESSION | TYPE : EXPRESSION)) !== 0 ||
              i - 1 === typeArguments);
        // Whether the statement may end here: something was read, and it did not end with an operator.
        const complete = i > from && !tables.wantsOperand[before] && (before !== SK.GreaterThanToken || ended) &&
          conditionals === 0 && extendsClauses === 0 && returnTypes === 0;
        // The current token is a member name (`z.enum`), whatever keyword it is.
        const afterDotNow = before === SK.DotToken || before === SK.QuestionDotToken;
        if (i === from && lineBreaks[i] && tables.declares[k]) return false; // `const a =` then a declaration
        if (i > from && lineBreaks[i]) {
          if (!ended && before === SK.GreaterThanToken && !(tables.continues[k] & EXPRESSION)) {
            return false; // `a >` then a line: type arguments ended, or a comparison goes on
          }
          if (ended) {
            if (tables.continues[k] & UNSURE && !(tables.continues[k] & context)) return false;
            if (!heritage && !(tables.continues[k] & context)) return complete;
          } else if (!tables.operandFollows[before] || tables.declares[k] && !afterDotNow) return false;
        } else if (i > from && sideBySide()) return false;
        if (k === SK.SemicolonToken || k === SK.EndOfFileToken || isClose(k)) return complete;
        if (emptyGroup(ended)) return false;
        if (stops.includes(k) && (k !== SK.OpenBraceToken || ended)) {
          // `new Map<K, V>(), b`: the comma may be the type arguments' (TypeScript tries both); give up.
          return complete && !(k === SK.CommaToken && lessThan && context === EXPRESSION);
        }
        if (
          !afterDotNow &&
          (statementOnly() || k === SK.ConstKeyword && before !== SK.AsKeyword && before !== SK.LessThanToken)
        ) return false;
        // `>=`, `>>`, `>>>`, `>>=`: the scanner gives `>` alone, the parser joins what touches it.
        const joined = before === SK.GreaterThanToken && (k === SK.GreaterThanToken || k === SK.EqualsToken) &&
          starts[i] === ends[i - 1] && !ended;
        if (
          !joined && tables.binaryOperator[k] && !ended && !(k === SK.AsteriskToken && before === SK.FunctionKeyword) &&
          !tables.name[k] && !tables.unary[k] &&
          !(inType &&
            (k === SK.BarToken || k === SK.AmpersandToken))
        ) return false; // an operator where an operand is due
        // `extends` in an expression is a class expression's (`class extends A {}`, `class B extends A {}`).
        if (
          k === SK.ExtendsKeyword && context === EXPRESSION && !typeAfterAs && returnTypes === 0 && !classes
        ) return false;
        if (k === SK.ClassKeyword) classes = true;
        if (
          !ended && (k === SK.DotToken || k === SK.QuestionDotToken || k === SK.QuestionToken ||
            k === SK.ColonToken || k === SK.EqualsGreaterThanToken)
        ) return false;
        if (k >= SK.FirstAssignment && k <= SK.LastAssignment && !joined) {
          if (!assignable) return false; // `a || b = c`: what is before is no reference
          assignable = true;
        } else if (
          !(tables.identifier[k] || afterDotNow && tables.name[k] || k === SK.DotToken || k === SK.ThisKeyword ||
            k === SK.OpenBracketToken || k === SK.OpenParenToken || k === SK.ExclamationToken && ended)
        ) assignable = false;
        // In a type, `.` only qualifies a name (`A.B`), and nothing is called: `x as const\n.f()` is no member access.
        if (
          !heritage && inType &&
          (k === SK.DotToken && !(tables.identifier[before] || afterDot) ||
            k === SK.OpenParenToken && ended && before !== SK.GreaterThanToken)
        ) return false;
        // `A extends B ? C : D`: a conditional type, but in a class's or an interface's heritage.
        if (
          k === SK.ExtendsKeyword && !heritage && inType &&
          !afterDotNow &&
          kinds[i - 2] !== SK.InferKeyword
        ) extendsClauses++;
        else if (k === SK.QuestionToken) {
          if (extendsClauses > 0) extendsClauses--;
          conditionals++;
        } else if (k === SK.ColonToken && conditionals > 0) conditionals--;
        else if (k === SK.ColonToken) {
          // Not a conditional's: an arrow function's return type, then its `=>`.
          if (!(context === EXPRESSION && before === SK.CloseParenToken && !lastCall)) return false;
          // A function type as the return type (`(): (x: T) => U => …`) takes the first `=>`, the arrow the second.
          // A parenthesized type (`(): (A | B) => …`) is not one, but the outline has dropped what would tell.
          const next = kind(i + 1);
          if (next === SK.OpenParenToken && kind(i + 2) !== SK.CloseParenToken) return false;
          const functionType = next === SK.OpenParenToken || next === SK.LessThanToken || next === SK.NewKeyword ||
            next === SK.AbstractKeyword;
          returnTypes += functionType ? 2 : 1;
        } else if (k === SK.EqualsGreaterThanToken && returnTypes > 0) returnTypes--;
        else if (k === SK.OpenBraceToken && returnTypes > 0 && ended) returnTypes--; // `function (): T {`
        else if (
          k === SK.OpenBraceToken && ended && !classes && !(before === SK.CloseParenToken && lastParameters)
        ) return false; // `a {`: a block needs the statement ended first, an object literal an operator
        // A type after `as` or `satisfies`: its `<…>` are brackets.
        if ((k === SK.AsKeyword || k === SK.SatisfiesKeyword) && !afterDotNow) typeAfterAs = true;
        else if (
          typeAfterAs && (tables.binaryOperator[k] && !tables.name[k] && k !== SK.BarToken &&
              k !== SK.AmpersandToken && k !== SK.LessThanToken && k !== SK.GreaterThanToken ||
            k === SK.QuestionToken || k === SK.ColonToken || k === SK.CommaToken || k === SK.EqualsGreaterThanToken)
        ) typeAfterAs = false; // `x as T || y`: the type has ended
        if (k === SK.LessThanToken && !typeAfterAs && returnTypes === 0 && context === EXPRESSION && !ended) {
          // Where an operand is due: type parameters (`<T>(x: T) => x`) or an assertion (`<T>x`).
          const close = typeArgumentsEnd(i, false);
          if (close === -1) return false;
          i = close;
          continue;
        }
        if (k === SK.LessThanToken && !typeAfterAs && returnTypes === 0 && context === EXPRESSION) {
          // `new Map<K, V>()`, `f<T>(x)`, `(): Map<K, V> =>`: type arguments, or a comparison.
          const close = typeArgumentsEnd(i);
          if (close !== -1 && followsTypeArguments(close + 1)) {
            i = typeArguments = close;
            continue;
          }
          lessThan = true;
        }
      }
      if (isOpen(k)) {
        parameters[depth] = k === SK.OpenParenToken && parametersAt(i);
        calls[depth] = k === SK.OpenParenToken && i > from && !(kinds[i - 1] === SK.DotToken) &&
          (tables.ends[kinds[i - 1]] & EXPRESSION) !== 0 && !parametersAt(i);
        opened[depth++] = k;
      } else if (isClose(k)) {
        lastParameters = parameters[depth - 1] === true;
        lastCall = calls[--depth] === true;
      } else if (depth === 0 && inType) {
        if (k === SK.LessThanToken) angles++;
        else if (k === SK.GreaterThanToken && angles > 0) angles--;
      }
    }
  };
  /** Whether the token at `i` starts statements only: `if`, `export`…, and `import` but for `import(` and `import.meta`. */
  const statementOnly = (): boolean => {
    const k = kind();
    if (k !== SK.ImportKeyword) return tables.statementOnly[k] === 1;
    const next = kind(i + 1);
    return next !== SK.OpenParenToken && next !== SK.DotToken;
  };
  /** Whether the token at `i` is an operand right after a name or a literal, no operator between: `a b`. */
  const sideBySide = (): boolean => {
    const before = kinds[i - 1];
    return (before === SK.Identifier || before === SK.StringLiteral || before === SK.NumericLiteral ||
      before === SK.CloseParenToken || before === SK.CloseBracketToken) &&
      kinds[i - 2] !== SK.DotToken && kinds[i - 2] !== SK.QuestionDotToken && tables.operand[kind()] === 1;
  };
  /**
   * Whether the token at `i` is `( )` where it opens neither arguments nor parameters: what the outline dropped from
   * it was an expression, which TypeScript would miss (an empty group does not parse).
   */
  const emptyGroup = (ended: boolean): boolean => {
    if (kind() !== SK.OpenParenToken || kind(i + 1) !== SK.CloseParenToken || ended) return false;
    const before = kinds[i - 1];
    const after = kind(i + 2);
    return before !== SK.GreaterThanToken && before !== SK.QuestionDotToken && after !== SK.EqualsGreaterThanToken &&
      after !== SK.ColonToken && !(after === SK.OpenBraceToken && parametersAt(i));
  };
  /** Whether the `(` at `at` opens parameters: `function (`, `function f(`, `function* f(`, `async (` on one line. */
  const parametersAt = (at: number): boolean => {
    const before = kinds[at - 1];
    if (before === SK.FunctionKeyword || before === SK.AsyncKeyword && !lineBreaks[at]) return true;
    const named = tables.identifier[before] ? at - 2 : at - 1;
    return kinds[named] === SK.FunctionKeyword ||
      kinds[named] === SK.AsteriskToken && kinds[named - 1] === SK.FunctionKeyword;
  };
  /**
   * The index of the `>` that closes the `<` at `at`, or -1 when there is none before the statement ends or, `strict`,
   * when something between them cannot be in a type argument list.
   */
  const typeArgumentsEnd = (at: number, strict = true): number => {
    let angles = 0;
    let depth = 0;
    for (let j = at; j < count; j++) {
      const k = kinds[j];
      if (isOpen(k)) depth++;
      else if (isClose(k)) {
        if (--depth < 0) return -1;
      } else if (depth === 0) {
        if (k === SK.LessThanToken) angles++;
        else if (k === SK.GreaterThanToken && --angles === 0) return j;
        else if ((k === SK.ConstKeyword || k === SK.InKeyword || k === SK.OutKeyword) && lineBreaks[j + 1]) return -1;
        else if (k === SK.SemicolonToken || strict && tables.notInTypes[k]) return -1; // `a < b && c > (d)`
      }
    }
    return -1;
  };
  /** Whether what is at `at`, after `<…>` in an expression, makes them type arguments (TypeScript's rule). */
  const followsTypeArguments = (at: number): boolean => {
    const k = kind(at);
    if (k === SK.OpenParenToken || k === SK.NoSubstitutionTemplateLiteral || k === SK.TemplateHead) return true;
    if (k === SK.LessThanToken || k === SK.GreaterThanToken || k === SK.PlusToken || k === SK.MinusToken) return false;
    if (at >= count || lineBreaks[at] || tables.binaryOperator[k]) return true;
    return !tables.startsExpression[k];
  };
  /** A module specifier and its attributes (`with { … }`): the specifier, or undefined. */
  const specifier = (): string | undefined => {
    const value = stringAt(i);
    if (value === undefined) return undefined;
    i++;
    if ((kind() === SK.WithKeyword || kind() === SK.AssertKeyword) && !lineBreaks[i]) {
      i++;
      if (kind() !== SK.OpenBraceToken || !skipGroup()) return undefined;
    }
    return value;
  };
  /** `{ a, b as c, type d, "e" as f }` of an import or export: its elements, or undefined. */
  const elements = (imports: boolean): ExportElement[] | undefined => {
    const out: ExportElement[] = [];
    i++; // {
    while (kind() !== SK.CloseBraceToken) {
      const first = i;
      let typeOnly = false;
      if (kind() === SK.TypeKeyword) {
        const next = kind(i + 1);
        if (next === SK.AsKeyword) return undefined; // `type as …`: four readings
        if (isName(i + 1) || next === SK.StringLiteral) {
          typeOnly = true;
          i++;
        }
      }
      const source = isName() ? word(i) : stringAt(i);
      if (source === undefined) return undefined;
      i++;
      let name = source;
      let nameAt = i - 1;
      if (kind() === SK.AsKeyword) {
        i++;
        nameAt = i;
        const renamed = isName() ? word(i) : stringAt(i);
        if (renamed === undefined) return undefined;
        name = renamed;
        i++;
      }
      // An import's local name is a binding: an identifier, not a string or a reserved word.
      if (imports && !isIdentifier(nameAt)) return undefined;
      out.push({ source, name, typeOnly, line: lineOf(first) });
      if (kind() === SK.CommaToken) i++;
      else if (kind() !== SK.CloseBraceToken) return undefined;
    }
    i++; // }
    return out;
  };

  /**
   * At `import`: the statement that starts at `first` (its `import`, or the `export` before), and where it lies, from
   * the end of the statement before: the names in it are no uses.
   */
  const importStatement = (first: number, exported: boolean): boolean => {
    const pos = first === 0 ? 0 : ends[first - 1];
    i++;
    if (!importDeclaration(lineOf(first), exported)) return false;
    top.importRanges.push([pos, ends[i - 1]]);
    return true;
  };
  /** After `import`: an import declaration, or `import x = A.B`. */
  const importDeclaration = (line: number, exported: boolean): boolean => {
    let typeOnly = false;
    let local: string | undefined;
    if (isIdentifier()) {
      local = word(i);
      i++;
      if (local === "type" && kinds[i - 1] === SK.TypeKeyword) {
        const k = kind();
        if (k === SK.FromKeyword) {
          // `import type from "x"` imports a default named `type`; `import type from from "x"`: give up.
          if (kind(i + 1) !== SK.StringLiteral) return false;
        } else if (k === SK.AsteriskToken || k === SK.OpenBraceToken) {
          typeOnly = true;
          local = undefined;
        } else if (isIdentifier()) {
          typeOnly = true;
          local = word(i);
          i++;
        }
      }
    }
    if (local !== undefined && kind() !== SK.CommaToken && kind() !== SK.FromKeyword) {
      // `import x = A.B.C`; `import x = require("y")` never reaches here: an outline is not made of such modules.
      if (kind() !== SK.EqualsToken || !isIdentifier(i + 1) || kind(i + 1) === SK.RequireKeyword) return false;
      i += 2;
      while (kind() === SK.DotToken && isName(i + 1)) i += 2;
      if (!endStatement()) return false;
      top.importEquals(local, undefined, typeOnly, exported, line);
      return true;
    }
    if (exported) return false; // `export import` is only `export import x = …`
    if (local === undefined && !typeOnly && kind() === SK.StringLiteral) {
      const from = specifier();
      if (from === undefined || !endStatement()) return false;
      top.importFrom(from, line, undefined);
      return true;
    }
    const bindings: PendingBinding[] = [];
    if (local !== undefined) {
      bindings.push({ imported: "default", local, typeOnly });
      if (kind() === SK.CommaToken) {
        i++;
        if (kind() !== SK.AsteriskToken && kind() !== SK.OpenBraceToken) return false;
      }
    }
    if (kind() === SK.AsteriskToken) {
      if (kind(i + 1) !== SK.AsKeyword || !isIdentifier(i + 2)) return false;
      bindings.push({ imported: "*", local: word(i + 2), typeOnly });
      i += 3;
    } else if (kind() === SK.OpenBraceToken) {
      const named = elements(true);
      if (named === undefined) return false;
      for (const element of named) {
        bindings.push({ imported: element.source, local: element.name, typeOnly: typeOnly || element.typeOnly });
      }
    }
    if (kind() !== SK.FromKeyword) return false;
    i++;
    const from = specifier();
    if (from === undefined || !endStatement()) return false;
    top.importFrom(from, line, bindings, typeOnly);
    return true;
  };

  /** After `export` (at `first`). */
  const exportStatement = (line: number, first: number): boolean => {
    i++;
    let k = kind();
    let typeOnly = false;
    if (k === SK.TypeKeyword && (kind(i + 1) === SK.OpenBraceToken || kind(i + 1) === SK.AsteriskToken)) {
      typeOnly = true;
      k = kind(++i);
    }
    if (k === SK.OpenBraceToken) {
      const named = elements(false);
      if (named === undefined) return false;
      if (kind() === SK.FromKeyword) {
        i++;
        const from = specifier();
        if (from === undefined || !endStatement()) return false;
        top.reExport(from, line, typeOnly, named);
      } else {
        if (!endStatement()) return false;
        top.exportLocals(typeOnly, named);
      }
      return true;
    }
    if (k === SK.AsteriskToken) {
      i++;
      let what = "*";
      if (kind() === SK.AsKeyword) {
        i++;
        const name = isName() ? word(i) : stringAt(i);
        if (name === undefined) return false;
        what = name;
        i++;
      }
      if (kind() !== SK.FromKeyword) return false;
      i++;
      const from = specifier();
      if (from === undefined || !endStatement()) return false;
      top.reExport(from, line, typeOnly, what);
      return true;
    }
    if (k === SK.EqualsToken || k === SK.DefaultKeyword && !startsDefaultDeclaration()) {
      i++;
      const from = i;
      if (!skip(EXPRESSION, [])) return false;
      if (i === from || !endStatement()) return false;
      const local = i - from === 1 + (kinds[i - 1] === SK.SemicolonToken ? 1 : 0) && isIdentifier(from)
        ? word(from)
        : undefined;
      top.exportAssignment(k === SK.EqualsToken, local, line);
      return true;
    }
    if (k === SK.DefaultKeyword) {
      i++;
      return declaration(line, true, true);
    }
    if (k === SK.AsKeyword) {
      // `export as namespace X`: a UMD global, nothing this module exports to others.
      if (kind(i + 1) !== SK.NamespaceKeyword || !isIdentifier(i + 2)) return false;
      i += 3;
      return endStatement();
    }
    if (k === SK.ImportKeyword) return importStatement(first, true);
    return declaration(line, true, false);
  };
  /** At `default` after `export`: whether a declaration follows (`function`, `class`, `interface`…) or an expression. */
  const startsDefaultDeclaration = (): boolean => {
    const next = kind(i + 1);
    if (next === SK.FunctionKeyword || next === SK.ClassKeyword || next === SK.InterfaceKeyword) return true;
    if (next === SK.AsyncKeyword) return kind(i + 2) === SK.FunctionKeyword && !lineBreaks[i + 2];
    if (next === SK.AbstractKeyword) return kind(i + 2) === SK.ClassKeyword && !lineBreaks[i + 2];
    return false;
  };

  /** A declaration, after `export` or `export default` when `exported`. */
  const declaration = (line: number, exported: boolean, isDefault: boolean): boolean => {
    // Contextual modifiers are modifiers only before what they modify, on the same line.
    for (;;) {
      const k = kind();
      if (k !== SK.DeclareKeyword && k !== SK.AbstractKeyword && k !== SK.AsyncKeyword) break;
      if (i + 1 >= count || lineBreaks[i + 1]) return false;
      if (k === SK.AbstractKeyword && kind(i + 1) !== SK.ClassKeyword) return false;
      if (k === SK.AsyncKeyword && kind(i + 1) !== SK.FunctionKeyword) return false;
      i++;
    }
    const record = (name: string | undefined, symbolKind: SymbolKind, typeOnly: boolean) =>
      top.declaration(name, symbolKind, line, exported, isDefault, typeOnly);
    switch (kind()) {
      case SK.FunctionKeyword: {
        i++;
        if (kind() === SK.AsteriskToken) i++;
        let name: string | undefined;
        if (isIdentifier()) name = word(i++);
        else if (!isDefault) return false;
        if (!skipTypeParameters() || kind() !== SK.OpenParenToken || !skipGroup()) return false;
        if (kind() === SK.ColonToken) {
          i++;
          if (!skip(TYPE, [SK.OpenBraceToken])) return false;
        }
        if (kind() === SK.OpenBraceToken) {
          if (!skipGroup()) return false;
        } else if (!endStatement()) return false;
        record(name, "function", false);
        return true;
      }
      case SK.ClassKeyword:
      case SK.InterfaceKeyword: {
        const isClass = kind() === SK.ClassKeyword;
        if (!isClass && (i + 1 >= count || lineBreaks[i + 1])) return false;
        i++;
        let name: string | undefined;
        if (isIdentifier() && !(kind() === SK.ImplementsKeyword && isName(i + 1))) name = word(i++);
        else if (!isClass) return false;
        if (!skipTypeParameters()) return false;
        if (kind() !== SK.OpenBraceToken && !skip(TYPE, [SK.OpenBraceToken], true)) return false;
        if (kind() !== SK.OpenBraceToken || !skipGroup()) return false;
        record(name, isClass ? "class" : "interface", !isClass);
        return true;
      }
      case SK.TypeKeyword: {
        if (!isIdentifier(i + 1) || lineBreaks[i + 1]) return false;
        const name = word(i + 1);
        i += 2;
        if (!skipTypeParameters() || kind() !== SK.EqualsToken) return false;
        i++;
        if (!skip(TYPE, []) || !endStatement()) return false;
        record(name, "type", true);
        return true;
      }
      case SK.ConstKeyword:
        if (kind(i + 1) !== SK.EnumKeyword) return variables(record);
        i++;
        // falls through
      case SK.EnumKeyword: {
        if (!isIdentifier(i + 1) || kind(i + 2) !== SK.OpenBraceToken) return false;
        const name = word(i + 1);
        i += 2;
        if (!skipGroup()) return false;
        record(name, "enum", false);
        return true;
      }
      case SK.NamespaceKeyword:
      case SK.ModuleKeyword:
      case SK.GlobalKeyword: {
        const global = kind() === SK.GlobalKeyword;
        if (i + 1 >= count || lineBreaks[i + 1]) return false;
        i++;
        let name: string | undefined;
        if (global) {
          if (kind() !== SK.OpenBraceToken) return false;
        } else if (isIdentifier()) {
          name = word(i++);
          while (kind() === SK.DotToken && isIdentifier(i + 1)) i += 2;
        } else if (kind() === SK.StringLiteral && kinds[i - 1] === SK.ModuleKeyword) i++;
        else return false;
        if (kind() === SK.OpenBraceToken) {
          // What an augmentation adds is read from the whole tree.
          if (!global && name === undefined) top.bodies = true;
          if (!skipGroup()) return false;
        } else if (name !== undefined || global || !endStatement()) return false; // `declare module "x";`
        // `declare module "x" {}` and `declare global {}` augment other modules; they declare nothing here.
        if (name !== undefined) {
          record(name, "namespace", !namespaceInstantiated(ts, text.slice(starts[statementFirst], ends[i - 1])));
        }
        return true;
      }
      case SK.LetKeyword: {
        const next = kind(i + 1);
        if (!isIdentifier(i + 1) && next !== SK.OpenBraceToken && next !== SK.OpenBracketToken) return false;
        return variables(record);
      }
      case SK.VarKeyword:
        return variables(record);
      default:
        return false;
    }
  };

  /** `const`, `let`, `var` and their declarations: `a: T = …, { b, c: [d] } = …`. */
  const variables = (record: (name: string, kind: SymbolKind, typeOnly: boolean) => void): boolean => {
    i++;
    const names: string[] = [];
    for (;;) {
      if (!bindingName(names)) return false;
      if (kind() === SK.ExclamationToken) i++;
      if (kind() === SK.ColonToken) {
        i++;
        if (!skip(TYPE, [SK.EqualsToken, SK.CommaToken])) return false;
      }
      if (kind() === SK.EqualsToken) {
        i++;
        if (!skip(EXPRESSION, [SK.CommaToken])) return false;
      }
      if (kind() !== SK.CommaToken) break;
      i++;
    }
    if (!endStatement()) return false;
    for (const name of names) record(name, "variable", false);
    return true;
  };
  /** A name being declared, or a destructuring pattern: adds the names it declares. */
  const bindingName = (names: string[]): boolean => {
    const k = kind();
    if (isIdentifier()) {
      names.push(word(i++));
      return true;
    }
    if (k !== SK.OpenBraceToken && k !== SK.OpenBracketToken) return false;
    const object = k === SK.OpenBraceToken;
    const close = object ? SK.CloseBraceToken : SK.CloseBracketToken;
    i++;
    while (kind() !== close) {
      if (!object && kind() === SK.CommaToken) {
        i++; // a hole
        continue;
      }
      if (kind() === SK.DotDotDotToken) {
        i++;
        if (!bindingName(names)) return false;
      } else if (object) {
        const key = i;
        if (kind() === SK.OpenBracketToken) {
          if (!skipGroup()) return false;
        } else if (isName() || kind() === SK.StringLiteral || kind() === SK.NumericLiteral) i++;
        else return false;
        if (kind() === SK.ColonToken) {
          i++;
          if (!bindingName(names)) return false;
        } else if (isIdentifier(key) && i === key + 1) names.push(word(key));
        else return false;
      } else if (!bindingName(names)) return false;
      if (kind() === SK.EqualsToken) {
        i++;
        if (!skip(EXPRESSION, [SK.CommaToken])) return false;
      }
      if (kind() === SK.CommaToken) i++;
      else if (kind() !== close) return false;
    }
    i++;
    return true;
  };

  /** `( expression )` of `if`, `while`, `switch`. */
  const condition = (): boolean => {
    if (kind() !== SK.OpenParenToken) return false;
    i++;
    if (!skip(EXPRESSION, []) || kind() !== SK.CloseParenToken) return false;
    i++;
    return true;
  };
  /**
   * A statement that declares nothing a summary records: a block (its inside dropped), `;`, `if`, `for`, `while`,
   * `do`, `switch`, `try`, `throw`, a label, an expression statement. undefined when the current token starts none.
   */
  const statement = (): boolean | undefined => {
    const first = i;
    const k = kind();
    switch (k) {
      case SK.SemicolonToken:
        i++;
        return true;
      case SK.OpenBraceToken:
        return skipGroup();
      case SK.IfKeyword:
        i++;
        if (!condition() || statement() !== true) return false;
        if (kind() !== SK.ElseKeyword) return true;
        i++;
        return statement() === true;
      case SK.WhileKeyword:
        i++;
        return condition() && statement() === true;
      case SK.SwitchKeyword:
        i++;
        return condition() && kind() === SK.OpenBraceToken && skipGroup();
      case SK.ForKeyword:
        // What is inside `for (…)` is passed over: a syntax error there goes unseen.
        i++;
        if (kind() === SK.AwaitKeyword) i++;
        return kind() === SK.OpenParenToken && skipGroup() && statement() === true;
      case SK.DoKeyword:
        i++;
        if (statement() !== true || kind() !== SK.WhileKeyword) return false;
        i++;
        if (!condition()) return false;
        if (kind() === SK.SemicolonToken) i++; // optional after `do … while (…)`, even on the same line
        return true;
      case SK.TryKeyword: {
        i++;
        if (kind() !== SK.OpenBraceToken || !skipGroup()) return false;
        let handled = false;
        if (kind() === SK.CatchKeyword) {
          i++;
          if (kind() === SK.OpenParenToken && !skipGroup()) return false;
          if (kind() !== SK.OpenBraceToken || !skipGroup()) return false;
          handled = true;
        }
        if (kind() === SK.FinallyKeyword) {
          i++;
          if (kind() !== SK.OpenBraceToken || !skipGroup()) return false;
          handled = true;
        }
        return handled;
      }
      case SK.ThrowKeyword:
        i++;
        return !lineBreaks[i] && skip(EXPRESSION, []) && endStatement();
    }
    if (k === SK.Identifier && kind(i + 1) === SK.ColonToken) {
      i += 2; // a label
      return statement() === true;
    }
    if (
      k === SK.Identifier || k === SK.StringLiteral || k === SK.OpenParenToken || k === SK.NewKeyword ||
      k === SK.ThisKeyword || k === SK.VoidKeyword || k === SK.AwaitKeyword && kind(i + 1) !== SK.UsingKeyword ||
      k === SK.ImportKeyword && !statementOnly()
    ) {
      // Nothing to record, but CommonJS exports, which the tree finds.
      if (k === SK.Identifier && (word(i) === "exports" || word(i) === "module" || word(i) === "require")) {
        return false;
      }
      return skip(EXPRESSION, []) && i !== first && endStatement();
    }
    return undefined;
  };

  /** The first token of the top-level statement being read. */
  let statementFirst = 0;
  while (i < count) {
    const first = i;
    statementFirst = first;
    const line = lineOf(i);
    const k = kind();
    if (k === SK.ImportKeyword && statementOnly()) {
      if (!importStatement(first, false)) return false;
      continue;
    }
    if (k === SK.ExportKeyword) {
      if (!exportStatement(line, first)) return false;
      continue;
    }
    const read = statement();
    if (read === false) return false;
    if (read === undefined && !declaration(line, false, false)) return false;
  }
  return true;
}
