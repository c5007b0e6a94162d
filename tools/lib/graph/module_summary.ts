// What one module says about itself, read from its syntax alone: the modules
// it imports (with the names it binds and how it uses namespace-like
// bindings), what it exports, the symbols it declares, and whether it parsed.
// The syntax tree is dropped after this: the module graph keeps summaries only.
import type { ts as TS } from "ts-morph";
import type { TsApi } from "../typescript/typescript.ts";
import { NameFilter } from "./name_filter.ts";
import {
  type DynamicImport,
  isKeywordName,
  lastAtOrBelow,
  outlineOf,
  tokenUsage,
  type Usage,
  usageFrom,
  type Use,
} from "./outline.ts";
import { helperName, NAMESPACE_HELPERS, type TopLevel, topLevelOfOutline, topLevelOfTree } from "./top_level.ts";
import type { Binding, ComputedImport, ExportRecord, ImportRecord, ModuleSummary } from "./records.ts";

/** A declaration file: nothing in it runs, so none of its imports is a run-time edge. */
const DECLARATION_FILE = /\.d\.[mc]?ts$/i;

/** File extensions the graph parses as modules. */
export const MODULE_EXTENSIONS: readonly string[] = Object.freeze([
  ".ts",
  ".tsx",
  ".mts",
  ".cts",
  ".js",
  ".jsx",
  ".mjs",
  ".cjs",
]);

/** Whether the graph parses `file` as a JavaScript or TypeScript module. */
export function isModuleFile(file: string): boolean {
  const dot = file.lastIndexOf(".");
  return dot > file.lastIndexOf("/") && MODULE_EXTENSIONS.includes(file.slice(dot).toLowerCase());
}

function scriptKindOf(ts: TsApi, file: string): TS.ScriptKind {
  const ext = file.slice(file.lastIndexOf(".")).toLowerCase();
  if (ext === ".tsx") return ts.ScriptKind.TSX;
  if (ext === ".jsx") return ts.ScriptKind.JSX;
  if (ext === ".js" || ext === ".mjs" || ext === ".cjs") return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

/**
 * Reads one module's summary from its text; never throws on bad syntax. `outline: false` parses the whole text
 * whatever it is: the summary is the same (tests hold them equal), only slower.
 */
export function summarizeModule(
  ts: TsApi,
  file: string,
  text: string,
  { outline: useOutline = true }: { readonly outline?: boolean } = {},
): ModuleSummary {
  const kind = scriptKindOf(ts, file);
  // Most modules need only their outline, read from its tokens (top_level.ts) or parsed when that reader is not sure;
  // a module that calls require(), assigns module.exports or calls import() in a shape the outline does not read needs
  // the whole tree (outlineOf says so), and so does one whose outline the parser rejects. The namespace imports' uses
  // and the import() calls are read on the way (see summarize).
  let watch: Set<string> | undefined;
  for (const match of text.matchAll(NAMESPACE_IMPORT)) (watch ??= new Set()).add(match[1]);
  const outline = useOutline && kind === ts.ScriptKind.TS && !DEFINES_EXPORTS.test(text)
    ? outlineOf(ts, text, watch)
    : undefined;
  const lineAt = lineCounter(text);
  if (outline !== undefined) {
    const read = { uses: outline.uses, of: watch ?? new Set<string>(), imports: outline.imports };
    const wholeTree = () => parse(ts, file, text, kind);
    // The top-level statements, read from the outline's tokens; parsed when the reader is not sure of them.
    // A `declare module "x"` body, which the outline drops, is read from the whole tree.
    const fromTokens = topLevelOfOutline(ts, text, outline.tokens, lineAt);
    if (fromTokens !== undefined && !fromTokens.bodies) {
      return declarationFile(file, fromTokens, summarize(ts, text, kind, fromTokens, lineAt, wholeTree, read));
    }
    const sf = fromTokens === undefined ? parse(ts, file, outline.text, kind) : undefined;
    if (sf !== undefined && diagnosticsOf(sf).length === 0) {
      const top = topLevelOfTree(ts, text, sf, outline.at, lineAt);
      if (!top.bodies) return declarationFile(file, top, summarize(ts, text, kind, top, lineAt, wholeTree, read));
    }
  }
  const sf = parse(ts, file, text, kind);
  const top = topLevelOfTree(ts, text, sf, (position) => position, lineAt, true);
  return declarationFile(file, top, summarize(ts, text, kind, top, lineAt, () => sf, undefined, diagnosticsOf(sf)));
}

/**
 * A declaration file's summary: its imports are all type-only (see DECLARATION_FILE), and a module with no
 * `export { … }`, `export … from`, `export =` or `export default <expression>` exports every declaration it makes, as
 * TypeScript reads it (the export context of an ambient module).
 */
function declarationFile(file: string, top: TopLevel, summary: ModuleSummary): ModuleSummary {
  if (!DECLARATION_FILE.test(file)) return summary;
  const everything = top.moduleSyntax && !top.exportStatements;
  const added: ExportRecord[] = [];
  if (everything) {
    const exported = new Set(summary.exports.map((record) => `${record.kind} ${record.name}`));
    for (const symbol of summary.symbols) {
      // `import x = N.M` declares an alias, which the export context leaves alone.
      if (symbol.exported || exported.has(`${symbol.kind} ${symbol.name}`) || top.aliases.has(symbol.name)) continue;
      added.push({ name: symbol.name, kind: symbol.kind, typeOnly: symbol.typeOnly, line: symbol.line });
    }
  }
  if (added.length === 0 && summary.imports.every((record) => record.typeOnly)) return summary;
  return {
    ...summary,
    imports: summary.imports.map((record) => (record.typeOnly ? record : { ...record, typeOnly: true })),
    exports: added.length === 0 ? summary.exports : [...summary.exports, ...added].sort((a, b) => a.line - b.line),
  };
}

/** Text that may call import() or require(), comments between the word and `(` included. */
const CALLS_IMPORT_OR_REQUIRE = /\b(?:import|require)\s*(?:\/\*(?:[^*]|\*(?!\/))*\*\/\s*|\/\/[^\n]*\n\s*)*\(/;

/** `Object.defineProperty(exports, "a", …)` exports a name from inside a call's arguments, which an outline drops. */
const DEFINES_EXPORTS = /\bObject\s*\.\s*defineProperty\s*\(\s*(?:module\s*\.\s*)?exports\b/;

/** `import * as ns`, `import type * as ns`: the local names whose uses an outline reads on the way. */
const NAMESPACE_IMPORT = /\bimport\s+(?:type\s+)?\*\s*as\s+([A-Za-z_$][\w$]*)/g;

function parse(ts: TsApi, file: string, text: string, kind: TS.ScriptKind): TS.SourceFile {
  // JSDoc is not parsed: it holds no imports the graph follows, and skipping it halves the parse.
  return ts.createSourceFile(
    file,
    text,
    { languageVersion: ts.ScriptTarget.Latest, jsDocParsingMode: ts.JSDocParsingMode.ParseNone },
    false,
    kind,
  );
}

function diagnosticsOf(sf: TS.SourceFile): readonly TS.DiagnosticWithLocation[] {
  return (sf as unknown as { parseDiagnostics?: TS.DiagnosticWithLocation[] }).parseDiagnostics ?? [];
}

/**
 * The summary of a module from its top-level statements' records; `wholeTree` parses the whole text when the records
 * are not enough, `read` is what an outline read on the way (the uses of the names it watched, its `import()` calls;
 * none for a whole tree), `diagnostics` are a whole tree's.
 */
function summarize(
  ts: TsApi,
  text: string,
  kind: TS.ScriptKind,
  top: TopLevel,
  lineAt: (position: number) => number,
  wholeTree: () => TS.SourceFile,
  read?: {
    readonly uses: readonly Use[];
    readonly of: ReadonlySet<string>;
    readonly imports: readonly DynamicImport[];
  },
  diagnostics: readonly TS.DiagnosticWithLocation[] = [],
): ModuleSummary {
  const SK = ts.SyntaxKind;
  const { imports, exports, symbols } = top;
  const computed: ComputedImport[] = [];
  const literalText = (node: TS.Node | undefined): string | undefined =>
    node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;

  // A walk over the whole tree for dynamic imports, require calls and import
  // types, when the text has any.
  const stack: TS.Node[] = [];
  let tree: TS.SourceFile | undefined;
  const lineOf = (node: TS.Node) => lineAt(node.getStart(tree));
  /** Where import-like declarations name their locals: these are not uses. */
  const declared: number[] = [];
  const specifierRanges: [number, number][] = [];
  const namespaceBinding = (call: TS.Node, depth: number): Omit<Binding, "members" | "escapes">[] => {
    // `const { a, b } = await import("x")`, `const m = require("x")`, `require("x").a`, and through an interop helper
    // (`const m = __importStar(require("x"))`), which gives the module object or one like it.
    let up = depth - 1;
    let parent = stack[up];
    let child: TS.Node = call;
    if (
      parent && ts.isCallExpression(parent) && parent.arguments[0] === child &&
      NAMESPACE_HELPERS.has(helperName(ts, parent) ?? "")
    ) {
      child = parent;
      parent = stack[--up];
    }
    if (parent && ts.isAwaitExpression(parent)) {
      child = parent;
      parent = stack[--up];
    }
    if (parent && ts.isVariableDeclaration(parent) && parent.initializer === child) {
      if (ts.isIdentifier(parent.name)) {
        declared.push(parent.name.getStart(tree));
        return [{ imported: "*", local: parent.name.text, typeOnly: false }];
      }
      if (ts.isObjectBindingPattern(parent.name)) {
        const out: Omit<Binding, "members" | "escapes">[] = [];
        for (const element of parent.name.elements) {
          const key = element.propertyName ?? element.name;
          if (element.dotDotDotToken || !(ts.isIdentifier(key) || ts.isStringLiteral(key))) {
            return [{ imported: "*", local: "", typeOnly: false }];
          }
          out.push({
            imported: key.text,
            local: ts.isIdentifier(element.name) ? element.name.text : "",
            typeOnly: false,
          });
        }
        return out;
      }
    }
    if (
      parent && ts.isPropertyAccessExpression(parent) && parent.expression === child && ts.isIdentifier(parent.name)
    ) {
      return [{ imported: parent.name.text, local: "", typeOnly: false }];
    }
    if (parent && ts.isExpressionStatement(parent)) return [];
    return [{ imported: "*", local: "", typeOnly: false }];
  };
  const templatePattern = (node: TS.Expression): string | undefined => {
    // "./plugins/" + name
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === SK.PlusToken) {
      const head = literalText(node.left) ?? templatePattern(node.left);
      if (head !== undefined) return (head + "*" + (literalText(node.right) ?? "")).replace(/\*+/g, "*");
      return undefined;
    }
    if (!ts.isTemplateExpression(node)) return undefined;
    let pattern = node.head.text;
    for (const span of node.templateSpans) pattern += "*" + span.literal.text;
    return pattern.replace(/\*+/g, "*");
  };
  const visit = (node: TS.Node): void => {
    const depth = stack.length;
    switch (node.kind) {
      case SK.ImportDeclaration:
        return; // handled above; its names are declarations, not uses
      case SK.CallExpression: {
        const call = node as TS.CallExpression;
        const isImport = call.expression.kind === SK.ImportKeyword;
        const isRequire = ts.isIdentifier(call.expression) && call.expression.text === "require" &&
          call.arguments.length === 1;
        if (isImport || isRequire) {
          const specifier = literalText(call.arguments[0]);
          const kind = isImport ? "dynamic" : "require";
          if (specifier !== undefined) {
            // The specifier's text is not a use of a name it happens to contain.
            specifierRanges.push([call.arguments[0].pos, call.arguments[0].end]);
            // A CommonJS re-export's require(), which the top-level statements recorded.
            if (isRequire && top.consumedRequires.has(node.getStart(tree))) break;
            imports.push({
              specifier,
              line: lineOf(node),
              kind,
              typeOnly: false,
              bindings: namespaceBinding(node, depth),
            });
          } else if (call.arguments.length > 0) {
            const pattern = templatePattern(call.arguments[0]);
            computed.push({ line: lineOf(node), kind, ...(pattern ? { pattern } : {}) });
          }
        }
        break;
      }
      case SK.ImportType: {
        const type = node as TS.ImportTypeNode;
        const argument = type.argument;
        const specifier = ts.isLiteralTypeNode(argument) ? literalText(argument.literal) : undefined;
        if (specifier !== undefined) {
          let first: TS.EntityName | undefined = type.qualifier;
          while (first && ts.isQualifiedName(first)) first = first.left;
          const imported = type.isTypeOf || !first ? "*" : first.text;
          imports.push({
            specifier,
            line: lineOf(node),
            kind: "import-type",
            typeOnly: true,
            bindings: [{ imported, local: "", typeOnly: true }],
          });
        }
        break;
      }
    }
    stack.push(node);
    ts.forEachChild(node, visit);
    stack.pop();
  };
  // An outline is only made of modules whose `import()` calls it read itself, without `require()` or import types.
  if (read === undefined) {
    if (CALLS_IMPORT_OR_REQUIRE.test(text)) visit(tree = wholeTree());
  } else {
    for (const call of read.imports) {
      imports.push({
        specifier: call.specifier,
        line: lineAt(call.at),
        kind: "dynamic",
        typeOnly: false,
        bindings: [...call.bindings],
      });
      specifierRanges.push([call.argument[0], call.argument[1]]);
      if (call.declared !== undefined) declared.push(call.declared);
    }
  }
  const importRanges = top.importRanges.concat(specifierRanges);
  // One pass over the text finds every name this module imports or exports, wherever it occurs.
  const names = new Set<string>();
  for (const record of imports) {
    if (record.kind !== "re-export") {
      for (const binding of record.bindings) if (binding.local) names.add(binding.local);
    }
  }
  for (const record of exports) if (record.from === undefined) names.add(record.local ?? record.name);
  const words = wordPositions(text, names);
  const usage = new Map<string, Usage | undefined>();
  const usageOf = (local: string): Usage | undefined => {
    if (usage.has(local)) return usage.get(local);
    const found = scanUsage(text, local, words.get(local) ?? [], importRanges, declared);
    usage.set(local, found);
    return found;
  };
  // A namespace object that seems to escape makes every export of its module undetermined: before
  // saying so, look again on the tree, where comments, strings and property names are not uses.
  const suspects = new Set<string>();
  for (const record of imports) {
    if (record.kind === "re-export") continue;
    for (const binding of record.bindings) {
      if (binding.imported === "*" && binding.local && usageOf(binding.local)?.escapes) suspects.add(binding.local);
    }
  }
  if (suspects.size > 0) {
    // From the tokens where the scanner can follow the text (TypeScript without JSX, names that are not keywords), else
    // from the whole tree; the same either way for an outline and a whole tree, so that both summarize a module alike.
    const skip = (position: number) =>
      declared.includes(position) || importRanges.some(([start, end]) => position >= start && position < end);
    const fromTokens = kind === ts.ScriptKind.TS && [...suspects].every((name) => !isKeywordName(ts, name));
    const found = !fromTokens
      ? undefined
      : read && [...suspects].every((name) => read.of.has(name))
      ? usageFrom(read.uses, suspects, skip)
      : tokenUsage(ts, text, suspects, skip);
    for (const [name, use] of found ?? treeUsage(ts, wholeTree(), suspects)) usage.set(name, use);
  }

  const finished: ImportRecord[] = imports.map((record) => ({
    ...record,
    bindings: record.bindings.map((binding) => {
      const used = binding.local && record.kind !== "re-export" ? usageOf(binding.local) : undefined;
      // A namespace-like binding with no name (`import("x").then(...)`) escapes.
      const unnamedWhole = binding.imported === "*" && binding.local === "" && record.kind !== "re-export";
      if (!used) return unnamedWhole ? { ...binding, escapes: true } : binding;
      return {
        ...binding,
        ...(used.members.size ? { members: [...used.members].sort() } : {}),
        ...(used.escapes ? { escapes: true } : {}),
      };
    }),
  }));
  // Whether each declared export is mentioned again in its file (a use, or a comment: a hint, not a proof).
  const withUse = exports.map((record): ExportRecord => {
    if (record.from !== undefined || record.name === "*") return record;
    const declared = record.local ?? record.name;
    if (declared === "default" || declared === "export=") return record;
    // `export const a` names it once; `const a …; export { a }` twice.
    const threshold = record.local !== undefined && record.kind === "value" ? 2 : 1;
    return (words.get(declared)?.length ?? 0) > threshold ? { ...record, usedInFile: true } : record;
  });
  const summary: ModuleSummary = {
    imports: finished,
    exports: withUse,
    symbols,
    computed,
    commonjs: top.commonjs,
    ...(top.augmentations.length > 0 ? { augmentations: top.augmentations } : {}),
  };
  if (diagnostics.length > 0) {
    const first = diagnostics[0];
    return {
      ...summary,
      parseError: {
        line: lineAt(first.start),
        message: ts.flattenDiagnosticMessageText(first.messageText, " "),
      },
      words: [...new Set(text.match(/[A-Za-z_$][\w$]*/g) ?? [])].sort(),
    };
  }
  return summary;
}

/** The line (from 1) of each position in `text`; lines are counted on the first call. */
function lineCounter(text: string): (position: number) => number {
  let starts: number[] | undefined;
  return (position) => lastAtOrBelow(starts ??= lineStarts(text), position) + 1;
}

/** Where each line of `text` starts, with TypeScript's line breaks: LF, CR, CRLF, U+2028 and U+2029. */
function lineStarts(text: string): number[] {
  const starts = [0];
  if (!/[\r\u2028\u2029]/.test(text)) {
    for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
    return starts;
  }
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 13 && text.charCodeAt(at + 1) === 10) at++;
    if (code === 10 || code === 13 || code === 0x2028 || code === 0x2029) starts.push(at + 1);
  }
  return starts;
}

/**
 * How a local name is used in the text, given where it occurs as a word: the members read from it (`ns.a`, `ns?.a`,
 * `ns["a"]`, `ns.A` in a type), and whether it is used any other way (passed, spread, indexed by a value, exported).
 * A text search rather than a tree walk: a mention in a comment or a string counts as a use, which can only make an
 * export look used, never dead. Occurrences after a `.` (another object's member), inside `ranges` (import
 * declarations) and at `declared` offsets are not uses; the member read is part of an occurrence (`ns["ns"]` is one).
 */
function scanUsage(
  text: string,
  local: string,
  positions: readonly number[],
  ranges: readonly [number, number][],
  declared: readonly number[],
): Usage | undefined {
  let found: Usage | undefined;
  let consumed = 0;
  for (const at of positions) {
    if (at < consumed || text.charCodeAt(at - 1) === 46 /* . */) continue;
    MEMBER_READ.lastIndex = at + local.length;
    const member = MEMBER_READ.exec(text);
    consumed = member ? MEMBER_READ.lastIndex : at + local.length;
    if (declared.includes(at) || ranges.some(([start, end]) => at >= start && at < end)) continue;
    found ??= { members: new Set(), escapes: false };
    const name = member?.[1] ?? member?.[3];
    if (name !== undefined) found.members.add(name);
    else found.escapes = true;
  }
  return found;
}

/** A member read right after a name: `.a`, `?.a`, `["a"]`. */
const MEMBER_READ = /\s*\??\.\s*([\w$]+)|\s*\[\s*(["'`])([^"'`]*)\2\s*\]/y;

/**
 * Where each of `names` occurs in `text` as a whole word: a run of ASCII letters, digits, `_`, `$` and non-ASCII
 * characters (which may be letters of an identifier) equal to the name. One pass, whatever the number of names.
 */
function wordPositions(text: string, names: ReadonlySet<string>): Map<string, number[]> {
  const found = new Map<string, number[]>();
  if (names.size === 0) return found;
  if (names.size <= FEW_NAMES) {
    // A native search per name beats a character loop over the text while the names are few (a test file's).
    for (const name of names) {
      const list: number[] = [];
      for (let at = text.indexOf(name); at !== -1; at = text.indexOf(name, at + name.length)) {
        if (!isWordCode(text.charCodeAt(at - 1)) && !isWordCode(text.charCodeAt(at + name.length))) list.push(at);
      }
      if (list.length > 0) found.set(name, list);
    }
    return found;
  }
  // A word is sliced out and looked up only when the filter lets it through: most are not.
  const filter = new NameFilter(names);
  const length = text.length;
  for (let at = 0; at < length;) {
    if (!isWordCode(text.charCodeAt(at))) {
      at++;
      continue;
    }
    const start = at++;
    while (at < length && isWordCode(text.charCodeAt(at))) at++;
    if (!filter.mayBe(text, start, at)) continue;
    const word = text.slice(start, at);
    if (!names.has(word)) continue;
    const list = found.get(word);
    if (list) list.push(start);
    else found.set(word, [start]);
  }
  filter.release();
  return found;
}

/** Up to this many names, wordPositions searches for each; beyond, it reads the text's words once. */
const FEW_NAMES = 8;

function isWordCode(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 ||
    code === 36 || code > 127;
}

/** How `names` are used, read from the tree: members read, or an escape; undefined when not used at all. */
function treeUsage(ts: TsApi, sf: TS.SourceFile, names: ReadonlySet<string>): Map<string, Usage | undefined> {
  const found = new Map<string, Usage | undefined>([...names].map((name) => [name, undefined]));
  const stack: TS.Node[] = [];
  const visit = (node: TS.Node): void => {
    if (ts.isImportDeclaration(node)) return;
    if (ts.isIdentifier(node)) {
      const depth = stack.length;
      const parent = stack[depth - 1];
      if (!names.has(node.text) || !parent || !isReference(ts, node, parent, stack[depth - 3])) return;
      let entry = found.get(node.text);
      if (!entry) found.set(node.text, entry = { members: new Set(), escapes: false });
      const index = ts.isElementAccessExpression(parent) && parent.expression === node
        ? parent.argumentExpression
        : undefined;
      if (ts.isPropertyAccessExpression(parent) && parent.expression === node && ts.isIdentifier(parent.name)) {
        entry.members.add(parent.name.text);
      } else if (ts.isQualifiedName(parent) && parent.left === node) {
        entry.members.add(parent.right.text);
      } else if (index && (ts.isStringLiteral(index) || ts.isNoSubstitutionTemplateLiteral(index))) {
        entry.members.add(index.text);
      } else entry.escapes = true;
      return;
    }
    stack.push(node);
    ts.forEachChild(node, visit);
    stack.pop();
  };
  visit(sf);
  return found;
}

/** Whether an identifier is a use of a name rather than a declaration, a member name or a label. */
function isReference(
  ts: TsApi,
  node: TS.Identifier,
  parent: TS.Node,
  greatGrandparent: TS.Node | undefined,
): boolean {
  if (ts.isShorthandPropertyAssignment(parent)) return parent.name === node;
  if (ts.isExportSpecifier(parent)) {
    // `export { a as b }` and `export { a }` use a; with a module specifier they name another module's a.
    if (!greatGrandparent || !ts.isExportDeclaration(greatGrandparent) || greatGrandparent.moduleSpecifier) {
      return false;
    }
    return parent.propertyName ? parent.propertyName === node : parent.name === node;
  }
  if (ts.isPropertyAccessExpression(parent)) return parent.expression === node;
  if (ts.isQualifiedName(parent)) return parent.left === node;
  if (ts.isBindingElement(parent)) return parent.initializer === node;
  if (ts.isMetaProperty(parent) || ts.isLabeledStatement(parent) || ts.isBreakOrContinueStatement(parent)) {
    return false;
  }
  if (ts.isImportSpecifier(parent) || ts.isImportClause(parent) || ts.isNamespaceImport(parent)) return false;
  if (ts.isTypeParameterDeclaration(parent) || ts.isJsxAttribute(parent)) return false;
  return (parent as TS.Node & { name?: TS.Node }).name !== node;
}
