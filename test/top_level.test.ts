// The top-level statements of an outline read from its tokens
// (tools/lib/graph/top_level.ts), held to what TypeScript's parser reads from the
// same outline: on every module of this repository and of the code fixtures,
// on statements written to trip the reader (line breaks that do or do not end
// a statement, `<` that is or is not a type argument list, every form of
// import and export), and on random modules made of such statements with
// line breaks put in at random. Where the reader reads a module, TypeScript
// parses its outline without error and records the same; where it is not
// sure, it gives up and the module is parsed.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, it } from "node:test";
import type { TsApi } from "../tools/lib/typescript/typescript.ts";
import { summarizeModule } from "../tools/lib/graph/module_summary.ts";
import { outlineOf } from "../tools/lib/graph/outline.ts";
import { type TopLevel, topLevelOfOutline, topLevelOfTree } from "../tools/lib/graph/top_level.ts";
import { readArchive } from "./fixtures/code/harness.ts";
import { repoRoot, runtimeName } from "./helpers.ts";

const ts = createRequire(path.join(repoRoot, "package.json"))("@ts-morph/common/dist/typescript.js") as TsApi;

function lineAtOf(text: string): (position: number) => number {
  const starts = [0];
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
  return (position) => {
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1] <= position) line++;
    return line + 1;
  };
}

const records = (top: TopLevel) => ({
  imports: top.imports,
  exports: top.exports,
  symbols: top.symbols,
  importRanges: top.importRanges,
  commonjs: top.commonjs,
});

/**
 * What the reader and TypeScript make of a module's outline: "read" when both read it alike, "gave up" when the
 * reader did (and "no outline" when there is none); throws when the reader read what TypeScript reads otherwise or
 * rejects.
 */
function compare(text: string, where = JSON.stringify(text)): "read" | "gave up" | "no outline" {
  const outline = outlineOf(ts, text);
  if (outline === undefined) return "no outline";
  const lineAt = lineAtOf(text);
  const fromTokens = topLevelOfOutline(ts, text, outline.tokens, lineAt);
  if (fromTokens === undefined) return "gave up";
  const sf = ts.createSourceFile(
    "m.ts",
    outline.text,
    { languageVersion: ts.ScriptTarget.Latest, jsDocParsingMode: ts.JSDocParsingMode.ParseNone },
    false,
    ts.ScriptKind.TS,
  );
  const diagnostics = (sf as unknown as { parseDiagnostics: { messageText: unknown }[] }).parseDiagnostics;
  assert.deepEqual(diagnostics.map((d) => d.messageText), [], `read an outline TypeScript rejects: ${where}`);
  assert.deepEqual(records(fromTokens), records(topLevelOfTree(ts, text, sf, outline.at, lineAt)), where);
  return "read";
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "fixtures" ? [] : sources(full);
    return /\.(?:ts|mts|cts)$/.test(entry.name) ? [full] : [];
  });
}

/** Modules the reader reads, each as TypeScript does. */
const READ: Record<string, string> = {
  "every form of import": [
    'import a from "./a"',
    'import type { B } from "./b"',
    'import { type C, d as e, "f-g" as h, default as dflt } from "./c";',
    'import * as ns from "./ns"; import type * as tns from "./tns"',
    'import type from "./t"',
    'import x, { y, } from "./xy"',
    'import z, * as zs from "./z"',
    'import "./side" with { type: "json" }',
    "import {} from './empty'",
    "import type {} from './empty-type'",
    "import q = N.M.O",
    "export import r = N.M",
    "import type T1 = N.T",
  ].join("\n"),
  "every form of export": [
    "export { a, e as default, b as 'quoted' }",
    "export type { B }; export {}",
    'export * from "./all"',
    'export * as star from "./star"; export * as "str" from "./s2"',
    'export type * from "./types"; export type * as tt from "./types2"',
    'export { default as dd, "s-t" as st, type X } from "./d"',
    'export type {} from "./nothing"; export { type Y } from "./y"',
    "export default a",
    "export as namespace UMD",
  ].join("\n"),
  "export = with a name": "export = thing",
  "export default with an expression": "export default (a, b) => a + b\nexport const after = 1",
  "default declarations": [
    "export default function () {}",
  ].join("\n"),
  "a default class without a name": "export default class extends Base<T> implements I {}",
  "a default abstract class": "export default abstract class K {}\nexport default interface DI {}",
  "a default async function": "export default async function af() {}",
  "declarations": [
    "export function* gen<T>(a: T): Iterator<T> { }",
    "function over(a: string): void\nfunction over(a: number): void\nfunction over(a: any) {}",
    "export async function af(): Promise<{ a: 1 }> { }",
    "export declare function df(a: number): string",
    "export enum En { A, B }\nexport const enum CE { A }\ndeclare enum DE {}",
    "export namespace NS.Inner { const x = 1 }\nnamespace Other {}\nmodule Old {}",
    'declare module "m" { export const x: number }\ndeclare module "m2"',
    "declare global { interface Window {} }",
    "export abstract class AC<T extends { a: 1 }> extends Base<T> implements I1, I2 {}",
    "export interface I<T = string> extends J<T>, K {}",
    "export type U<T = string> = T extends string\n  ? A\n  : B",
    "type V = { a: 1 }\n  | { b: 2 }",
    "export declare const dc: number, dd: string;",
  ].join("\n"),
  "variables and patterns": [
    "export const v1 = 1, v2: Map<string, number> = new Map<string, number>(), [v3, , ...v4] = arr",
    "export let { p1, p2: { p3 = f<A, B>(1) }, ...p4 } = o, [[q1], q2 = 2] = o2",
    'const { "quoted": qq, [computed]: cc, 1: nn } = o3',
    "let l = 1; var vv; let [ll] = x",
    "export const k = [1, 2] as const\nfunction afterAsConst() {}",
    "export const g = <T,>(x: T): Promise<T> => x",
    "export const h = (): Foo<A, B> => ({})",
    "export const m = x as Foo<A,\n  B>\nexport const n2 = 2",
    "export const cond = (): A extends B ? C<D, E>\n  : F => x",
    "export const gen2 = <const T extends string, U = never>(t: T) => t",
    "const definite!: number",
  ].join("\n"),
  "expression statements": [
    '"use strict"',
    "foo()",
    "foo\n(bar)",
    "a = b\n+c",
    "new Thing()",
    "(async () => {})()",
    "x.y.z = 1",
    "void 0",
    "z.enum([])",
    "describe( )\n.each( )",
  ].join("\n"),
  "statements that declare nothing": [
    "if (a) {}\nexport const b = 1",
    "if (a) foo()\nelse if (b) { } else bar()",
    "for (const x of y) {}",
    "for await (const x of y) z()",
    "while (a) b++",
    "do { } while (x) export const d = 1",
    "switch (s) { }",
    "try { } catch (e) { } finally { }",
    "try { } catch { }",
    "label: for (;;) {}",
    "{ }",
    "throw new Error( )",
  ].join("\n"),
  "line breaks that end a statement": [
    "export const a = b\nexport const c = d",
    "export const e = f\ntype T = 1",
    "export const g = h()\ndeclare const i: number",
    "export type J = K\ninterface L {}",
    "export const m = n++\nexport const o = p",
    "export const s = t<U>\n(v)",
  ].join("\n"),
  "line breaks that do not": [
    "export const a =\n  b",
    "export const c = d\n  .e()\n  .f",
    "export const g = h\n  ? i\n  : j",
    "export const k = l ||\n  m",
    "export const n = o\n  in p",
    "export type Q = R\n  | S\n  & T",
    "export const u = async\n(x)",
  ].join("\n"),
};

/** Modules the reader gives up on: statements it does not know, or text that may not parse. */
const GIVES_UP: Record<string, string> = {
  "a decorator": "@dec class Dec {}",
  "CommonJS exports": "exports.e = 1",
  "a colon of nothing": "foo( )\n: j",
  "a modifier before a line break": "declare\nconst dl = 1",
  "abstract before a line break": "abstract\nclass Ab {}",
  "type before a line break": "type\nT2 = 1",
  "an operator before the end": "const e2 = 1 +",
  "two names side by side": "const e3 = b c",
  "a missing initializer": "export const e4 = ;",
  "a rename without a name": "export { a as }",
  "a reserved word as an import": 'import { default } from "./d"',
  "a template after a line break": "const after = x\n`tpl`",
  "a comparison before a line break": "export const cmp = a >\nb",
  "type as …": 'import { type as } from "./m"',
  "a keyword after an operator": "export const a = b +\nexport const c = d",
  "a string with an escape as a specifier": 'import a from "./\\u0061"',
  "a comma after a comparison": "export const a = b < c, d = 1",
  "using": "using res = open()",
  "a declaration under an if": "if (a) function f() {}",
  "an else without a statement": "if (a) {} else",
  "a try alone": "try { }",
  "throw before a line break": "throw\nerror",
};

describe(`top-level statements read from an outline's tokens (${runtimeName})`, () => {
  for (const [title, text] of Object.entries(READ)) {
    it(`reads them as TypeScript does: ${title}`, () => {
      assert.equal(compare(text), "read");
      assert.deepEqual(
        summarizeModule(ts, "src/m.ts", text),
        summarizeModule(ts, "src/m.ts", text, { outline: false }),
      );
    });
  }

  it("records what the statements say, as written by hand", () => {
    const text = [
      'import type { B } from "./b"',
      'export { x as "y-z", default } from "./c"',
      "export const [a1, { b1: c1 }] = o, d1 = 1",
      "export default function named() {}",
      "declare module 'aug' {}",
    ].join("\n");
    const outline = outlineOf(ts, text)!;
    const top = topLevelOfOutline(ts, text, outline.tokens, lineAtOf(text))!;
    assert.deepEqual(top.imports.map((i) => [i.specifier, i.kind, i.typeOnly, i.line]), [
      ["./b", "static", true, 1],
      ["./c", "re-export", false, 2],
    ]);
    assert.deepEqual(top.exports.map((e) => [e.name, e.kind, e.line, e.sourceName ?? e.local]), [
      ["y-z", "re-export", 2, "x"],
      ["default", "re-export", 2, "default"],
      ["a1", "variable", 3, undefined],
      ["c1", "variable", 3, undefined],
      ["d1", "variable", 3, undefined],
      ["default", "function", 4, "named"],
    ]);
    assert.deepEqual(top.importRanges, [[0, text.indexOf('"./b"') + 5]]);
    // The block's body is not in the outline: the module is read again from the whole tree.
    assert.equal(top.bodies, true);
  });

  it("reads namespace and `declare module` bodies from the whole tree", () => {
    const text = [
      'import { a } from "./a";',
      "export declare namespace N { type T = 1 }",
      "export namespace V { export const v = 1 }",
      'declare module "./y" {',
      '  import type { Q } from "./q";',
      "  interface O { q: Q }",
      "  const c: number;",
      "}",
      "export const use = a;",
    ].join("\n");
    const summary = summarizeModule(ts, "src/m.ts", text);
    assert.deepEqual(summary, summarizeModule(ts, "src/m.ts", text, { outline: false }));
    assert.deepEqual(summary.exports.map((e) => [e.name, e.kind, e.typeOnly]), [
      ["N", "namespace", true],
      ["V", "namespace", false],
      ["use", "variable", false],
    ]);
    assert.deepEqual(summary.imports.map((i) => [i.specifier, i.kind, i.typeOnly, i.line]), [
      ["./a", "static", false, 1],
      ["./q", "static", true, 5],
      ["./y", "augmentation", true, 4],
    ]);
    assert.deepEqual(summary.augmentations, [{
      index: 2,
      exports: [{ name: "O", kind: "interface", typeOnly: true, line: 6 }, {
        name: "c",
        kind: "variable",
        typeOnly: false,
        line: 7,
      }],
    }]);
    // In a declaration file nothing runs: every import is type-only.
    const declaration = summarizeModule(
      ts,
      "src/m.d.ts",
      'import { a } from "./a";\nexport declare const b: typeof a;',
    );
    assert.deepEqual(declaration.imports.map((i) => i.typeOnly), [true]);
  });

  for (const [title, text] of Object.entries(GIVES_UP)) {
    it(`gives up, and the module is parsed: ${title}`, () => {
      assert.equal(compare(text), "gave up");
      const summary = summarizeModule(ts, "src/m.ts", text);
      assert.deepEqual(summary, summarizeModule(ts, "src/m.ts", text, { outline: false }));
    });
  }

  it("summarizes CommonJS exports alike with and without an outline, those inside a call's arguments too", () => {
    const text = [
      'Object.defineProperty(exports, "__esModule", { value: true });',
      "exports.b = exports.a = void 0;",
      'Object.defineProperty(exports, "a", { enumerable: true, get: function () { return 1; } });',
      "exports.b = 2;",
    ].join("\n");
    const summary = summarizeModule(ts, "src/m.ts", text);
    assert.deepEqual(summary, summarizeModule(ts, "src/m.ts", text, { outline: false }));
    assert.deepEqual(summary.exports.map((e) => [e.name, e.kind, e.line]), [["b", "commonjs", 4], [
      "a",
      "commonjs",
      3,
    ]]);
    assert.equal(summary.commonjs, true);
  });

  it("reports the syntax errors it gives up on, as the whole tree does", () => {
    for (const text of ["const e2 = 1 +", "const e3 = b c", "export const e4 = ;", "export { a as }"]) {
      assert.ok(summarizeModule(ts, "src/m.ts", text).parseError, text);
    }
  });

  it("reads every TypeScript module of this repository and of the code fixtures as TypeScript does", () => {
    const modules: [string, string][] = ["core", "tools", "test", "scripts"]
      .flatMap((dir) => sources(path.join(repoRoot, dir)))
      .map((file) => [file, readFileSync(file, "utf8")]);
    const archives = readdirSync(path.join(repoRoot, "test/fixtures/code")).filter((f) => f.endsWith(".txtar"));
    for (const archive of archives) {
      for (const [file, text] of readArchive(archive.replace(/\.txtar$/, "")).files) {
        if (/\.(?:ts|mts|cts)$/.test(file)) modules.push([`${archive}: ${file}`, text]);
      }
    }
    const outcomes = { read: 0, "gave up": 0, "no outline": 0 };
    for (const [where, text] of modules) outcomes[compare(text, where)]++;
    assert.ok(outcomes.read > 130, JSON.stringify(outcomes));
    assert.ok(outcomes["gave up"] * 20 < outcomes.read, `gave up too often: ${JSON.stringify(outcomes)}`);
  });

  it("on random modules, reads each as TypeScript does or gives up", () => {
    // Statements of READ and GIVES_UP in random order, apart by random separators, some of their spaces turned into
    // line breaks: where a line break ends a statement is where a reader of tokens goes wrong.
    let seed = 20261201;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const statements = [...Object.values(READ), ...Object.values(GIVES_UP)].flatMap((text) => text.split("\n"));
    const separators = ["\n", ";", "; ", ";\n", "\n\n", " "];
    const outcomes = { read: 0, "gave up": 0, "no outline": 0 };
    for (let k = 0; k < 4000; k++) {
      let text = "";
      for (let n = 1 + random(5); n > 0; n--) {
        let statement = statements[random(statements.length)];
        for (let breaks = random(3); breaks > 0; breaks--) {
          const space = statement.indexOf(" ", random(statement.length));
          if (space !== -1) statement = statement.slice(0, space) + "\n" + statement.slice(space + 1);
        }
        text += statement + separators[random(separators.length)];
      }
      outcomes[compare(text)]++;
    }
    assert.ok(outcomes.read > 800, JSON.stringify(outcomes));
  });
});
