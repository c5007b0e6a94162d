// The records a module summary is made of (what module_summary.ts builds and
// top_level.ts records into): imports and the names they bind, exports,
// declared symbols, computed imports, augmentations. Types only, so that the
// readers that fill them and the queries that read them share one source.
/** How a module names another. */
export type ImportKind =
  | "static" //          import { a } from "x" / import x from "x" / import * as x from "x"
  | "side-effect" //     import "x"
  | "re-export" //       export { a } from "x" / export * from "x" / export * as ns from "x"
  | "dynamic" //         import("x")
  | "require" //         require("x")
  | "import-equals" //   import x = require("x")
  | "import-type" //     type T = import("x").T
  | "augmentation"; //   declare module "x" { … } in a module

/** One name an import takes from the module it names. */
export interface Binding {
  /** The export taken: a name, `default`, or `*` for the whole module object. */
  readonly imported: string;
  /** The local name (imports), the exported name (re-exports), `*` for `export *`, "" when unnamed. */
  readonly local: string;
  readonly typeOnly: boolean;
  /** Members read from the binding (`ns.a`, `ns["a"]`, `ns.A` in a type), sorted. */
  readonly members?: readonly string[];
  /** Whether the binding is used other than by reading a member: passed on, spread, indexed. */
  readonly escapes?: boolean;
}

/** One module specifier written in the file. */
export interface ImportRecord {
  readonly specifier: string;
  readonly line: number;
  readonly kind: ImportKind;
  /** True when nothing of the target is needed at run time. */
  readonly typeOnly: boolean;
  readonly bindings: readonly Binding[];
}

/** Kinds of declared symbols and exports. */
export type SymbolKind =
  | "function"
  | "class"
  | "interface"
  | "type"
  | "enum"
  | "variable"
  | "namespace"
  | "value" //     export default <expression>
  | "re-export" // export { a } from "x", export * from "x"
  | "commonjs"; // module.exports / exports.x

/** One name the module exports. */
export interface ExportRecord {
  /** The exported name; `default`; `export=`; `*` for `export * from`. */
  readonly name: string;
  readonly kind: SymbolKind;
  readonly typeOnly: boolean;
  readonly line: number;
  /** For re-exports: the index of the import record they come from. */
  readonly from?: number;
  /** For re-exports: the name taken from the source (`*` for a namespace). */
  readonly sourceName?: string;
  /** For `export { x }` and `export default x`: the local name exported. */
  readonly local?: string;
  /** Whether the declared name is mentioned in the file besides its declaration (and export). */
  readonly usedInFile?: boolean;
}

/** One top-level declaration. */
export interface SymbolRecord {
  readonly name: string;
  readonly kind: SymbolKind;
  readonly line: number;
  readonly exported: boolean;
  readonly typeOnly: boolean;
}

/** An `import()` or `require()` whose specifier is not a literal. */
export interface ComputedImport {
  readonly line: number;
  readonly kind: "dynamic" | "require";
  /** The static parts of a template specifier, e.g. `./locales/*.json`; absent when fully computed. */
  readonly pattern?: string;
}

/** Everything the graph keeps about one module. */
export interface ModuleSummary {
  readonly imports: readonly ImportRecord[];
  readonly exports: readonly ExportRecord[];
  readonly symbols: readonly SymbolRecord[];
  readonly computed: readonly ComputedImport[];
  /** Set when the parser reported errors: the answer may miss imports or exports of this file. */
  readonly parseError?: { readonly line: number; readonly message: string };
  /** Identifiers in the text of a file that did not parse, to tell which names it may use. */
  readonly words?: readonly string[];
  /** Whether the file assigns `module.exports` or `exports.x`. */
  readonly commonjs: boolean;
  /** `declare module "x" { … }` blocks of a module: the index of their import record, and the names they add to x. */
  readonly augmentations?: readonly Augmentation[];
}

/** What a `declare module "x" { … }` in a module adds to x. */
export interface Augmentation {
  /** The index of the block's `augmentation` record in the summary's imports. */
  readonly index: number;
  readonly exports: readonly ExportRecord[];
}
