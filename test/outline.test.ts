// The outline a module summary parses instead of a module's whole text, and
// the uses of a name read from its tokens (tools/lib/graph/outline.ts): on modules
// written to trip a token scanner (regular expressions against division,
// template literals, destructured exports, parenthesized types, element
// access), the outline is used and the summary read from it is the one read
// from the whole tree, with the exports written down by hand; the same holds
// for every TypeScript module of the code fixtures.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, it } from "node:test";
import type { TsApi } from "../tools/lib/typescript/typescript.ts";
import { summarizeModule } from "../tools/lib/graph/module_summary.ts";
import { outlineOf, tokenUsage, usageFrom } from "../tools/lib/graph/outline.ts";
import { readArchive } from "./fixtures/code/harness.ts";
import { repoRoot, runtimeName } from "./helpers.ts";
import { readdirSync } from "node:fs";

const ts = createRequire(path.join(repoRoot, "package.json"))("@ts-morph/common/dist/typescript.js") as TsApi;

/** Modules and the names they export, in order. */
const TRICKY: Record<string, { text: string; exports: string[] }> = {
  "regular expressions and division": {
    text: [
      "export const a = x / y / z;",
      "export const r = /[{(]/.test(s) ? 1 : 2;",
      "const n = total! / count, m = !/}/.test(s);",
      "export function f() { return /}/g; }",
      "export const b = (p) / 2 /* } */;",
    ].join("\n"),
    exports: ["a", "r", "f", "b"],
  },
  "template literals": {
    text: [
      'export const t = `a ${{ x: "}" }.x} b ${`nested ${1 + (2)}`} c`;',
      "export const raw = String.raw`\\S+ ${x} \\d`;",
      "export function g() { return `}${'{'}`; }",
    ].join("\n"),
    exports: ["t", "raw", "g"],
  },
  "destructured and listed declarations": {
    text: [
      "export const { a1, b1: { c1 }, ...rest1 } = obj;",
      "export const [d1, [e1, f1]] = arr, g1 = 1;",
      "export let h1 = <T, U>(x: T, y: U): [T, U] => [x, y], i1 = 2;",
      "export const j1: Map<string, { k: number }> = new Map(), k1 = 3",
      "export const l1 = 4",
    ].join("\n"),
    exports: ["a1", "c1", "rest1", "d1", "e1", "f1", "g1", "h1", "i1", "j1", "k1", "l1"],
  },
  "types, parentheses and element access": {
    text: [
      "export type C<T> = T extends string ? (A | B)[] : (C & D);",
      "export const m = (w >>> (s)) | 0;",
      "export function isNullish<A>(input: A): input is A & (null | undefined) { return input == null; }",
      "export declare function over(a: string): (string | number)[];",
      "if (flag) { console.log(1); }",
      "for (const x of xs) {}",
      "export const e = obj![key] ?? obj?.[key] ?? list[0];",
      "export const q = c ? (a) : (b);",
    ].join("\n"),
    exports: ["C", "m", "isNullish", "over", "e", "q"],
  },
  "classes, namespaces, enums": {
    text: [
      'export class K<T extends { a: 1 }> extends Base implements I { static s = 1; m() { return "}"; } }',
      "export namespace N { export const inner = 1; }",
      'export enum E { A = "}", B }',
      "export abstract class L {}",
      "export interface J { (x: number): string; [k: string]: unknown }",
      "export default class {}",
    ].join("\n"),
    exports: ["K", "N", "E", "L", "J", "default"],
  },
  "a test file": {
    text: [
      'import * as z from "./z";',
      'import { describe, it } from "node:test";',
      'describe("x", () => { it("y", () => { expect(z.string().parse("}")).toBe(/re/); }); });',
      "export const helper = 1;",
    ].join("\n"),
    exports: ["helper"],
  },
};

describe(`outline of a module (${runtimeName})`, () => {
  for (const [title, { text, exports }] of Object.entries(TRICKY)) {
    it(`is used and summarizes as the whole tree does: ${title}`, () => {
      const outline = outlineOf(ts, text);
      assert.ok(outline, "the scan gave up");
      assert.ok(outline.text.length < text.length);
      const fromOutline = summarizeModule(ts, "src/m.ts", text);
      const fromTree = summarizeModule(ts, "src/m.ts", text, { outline: false });
      assert.deepEqual(fromOutline, fromTree);
      assert.deepEqual(fromOutline.exports.map((e) => e.name), exports);
      assert.equal(fromOutline.parseError, undefined);
    });
  }

  it("maps positions in the outline back to the text", () => {
    const text = "/** header */\nexport function f(a: number) {\n  return a;\n}\n\n// note\nexport const b = 1;\n";
    const outline = outlineOf(ts, text)!;
    assert.equal(outline.text, "\nexport function f( ) {\n}\nexport const b = 1;");
    for (const word of ["export function", "{", "}", "export const b"]) {
      assert.equal(outline.at(outline.text.indexOf(word)), text.indexOf(word), word);
    }
    const summary = summarizeModule(ts, "src/m.ts", text);
    assert.deepEqual(summary.exports.map((e) => [e.name, e.line]), [["f", 2], ["b", 7]]);
  });

  it("says so when an outline's tokens are asked for after the next outline was read", () => {
    const first = outlineOf(ts, "export const a = 1;")!;
    assert.equal(first.tokens.kinds.length, 6);
    const early = outlineOf(ts, "export const b = 2;")!;
    assert.equal(early.text, "export const b = 2;"); // made now, kept
    assert.equal(outlineOf(ts, "export function f( {"), undefined); // gave up, but wrote over the tokens all the same
    assert.throws(() => first.tokens, /after the next outline was read/);
    assert.throws(() => first.text, /after the next outline was read/);
    assert.equal(early.text, "export const b = 2;");
  });

  it("gives up where brackets do not balance, and the whole tree is parsed", () => {
    assert.equal(outlineOf(ts, "export function f() { if (x) {\n"), undefined);
    assert.equal(outlineOf(ts, "export const a = (1;\n"), undefined);
    const summary = summarizeModule(ts, "src/m.ts", "export function f() {\nexport const b = 1;\n");
    assert.ok(summary.parseError, "the whole tree reports the error");
  });

  it("gives up on require(), module.exports and import() it does not read, not on the words in comments and strings", () => {
    for (
      const text of [
        'export async function load() { return (await import("./m.js")).default; }',
        'export type T = typeof import("./m.js");',
        'export type U = import("./m.js").U;',
        'export function f() { const { a } = require("./m"); return a; }',
        'export function g() { const { a } = await import("./m"); return a; }',
        'export function h(name) { return import("./locales/" + name); }',
        "export async function i() { x = await import('./m'); }",
        "export const x = 1;\nmodule.exports = { x };",
      ]
    ) {
      assert.equal(outlineOf(ts, text), undefined, text);
      assert.deepEqual(
        summarizeModule(ts, "src/m.ts", text),
        summarizeModule(ts, "src/m.ts", text, { outline: false }),
      );
    }
    const mentions = [
      '// longer than require("cuid2").bigLength',
      'export const s = "import(x) and module.exports";',
      'export function f() { return `require(${1})`; } /* import("y") */',
    ].join("\n");
    assert.ok(outlineOf(ts, mentions), "mentions in comments and strings made the outline give up");
    const summary = summarizeModule(ts, "src/m.ts", mentions);
    assert.deepEqual(summary, summarizeModule(ts, "src/m.ts", mentions, { outline: false }));
    assert.deepEqual(summary.imports, []);
  });

  it("reads the import() calls a test file makes, wherever they are, as the whole tree does", () => {
    const text = [
      'import { test } from "vitest";',
      'test("a", async () => {',
      '  const z = await import("./z.js");',
      "  expect(z.parse(1)).toBe(1);",
      '  let lazy = import("./lazy.js")',
      "  lazy.then(done)",
      '  await import("./side.js");',
      '  import("./other.js").then((mod) => mod.run());',
      "});",
      'export const m = import /* why */ ("./m.js");',
      'var v = await import("./v.js"), w = 2;',
    ].join("\n");
    const outline = outlineOf(ts, text);
    assert.ok(outline, "the outline gave up");
    assert.deepEqual(outline.imports.map((call) => call.specifier), [
      "./z.js",
      "./lazy.js",
      "./side.js",
      "./other.js",
      "./m.js",
      "./v.js",
    ]);
    const summary = summarizeModule(ts, "src/a.test.ts", text);
    assert.deepEqual(summary, summarizeModule(ts, "src/a.test.ts", text, { outline: false }));
    assert.deepEqual(
      summary.imports.filter((i) => i.kind === "dynamic").map((i) => [i.specifier, i.line, i.bindings]),
      [
        ["./z.js", 3, [{ imported: "*", local: "z", typeOnly: false, members: ["parse"] }]],
        ["./lazy.js", 5, [{ imported: "*", local: "lazy", typeOnly: false, members: ["then"] }]],
        ["./side.js", 7, []],
        ["./other.js", 8, [{ imported: "then", local: "", typeOnly: false }]],
        ["./m.js", 10, [{ imported: "*", local: "m", typeOnly: false }]],
        ["./v.js", 11, [{ imported: "*", local: "v", typeOnly: false }]],
      ],
    );
  });

  it("on random modules of import() calls, read or not, summarizes as the whole tree does", () => {
    // The shapes an outline reads, and others near them it must leave to the tree, with line breaks put in at random.
    let seed = 20261130;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const statements = [
      'const z = await import("./z")',
      'let y = import("./y")',
      'var { a, b: c, "d-e": de, } = await import("./ab")',
      'const { ...r } = await import("./r")',
      'const { default: dd } = await import("./dd")',
      'const { default } = await import("./bad")',
      'const { a: { b } } = await import("./nested")',
      'await import("./s")',
      'import("./t").then(f)',
      'x = await import("./x")',
      '(await import("./p")).q',
      'type T = typeof import("./t")',
      'const u: import("./u").U = v',
      'foo(await import("./f"))',
      'const w = await import("./w") + 1',
      'const d = await import("./d")\n.default',
      'export const e = await import("./e")',
      '/* c */ const k = await import("./k")',
      'const h = /* c */ await import("./h")',
      '// x\nawait import("./cm")',
      'a = b\nawait import("./asi")',
      'a = b +\nawait import("./cont")',
      'q = `${\nawait import("./tpl")}`',
      'const m = import("./m"), n = 2',
      "let v2 = import(`./tpl`)",
      'const dyn = await import("./" + name)',
      "z.parse(1)",
      'import { z as zz } from "./zz"',
    ];
    const separators = ["\n", ";", "; ", ";\n", "\n\n", " "];
    let read = 0;
    for (let k = 0; k < 2000; k++) {
      let body = "";
      for (let n = 1 + random(5); n > 0; n--) {
        let statement = statements[random(statements.length)];
        if (random(2) === 0) {
          const space = statement.indexOf(" ", random(statement.length));
          if (space !== -1) statement = statement.slice(0, space) + "\n" + statement.slice(space + 1);
        }
        body += statement + separators[random(separators.length)];
      }
      const text = random(2) === 0 ? `test("t", async () => {\n${body}\n});\n` : body;
      if (outlineOf(ts, text) !== undefined) read++;
      assert.deepEqual(
        summarizeModule(ts, "src/m.ts", text),
        summarizeModule(ts, "src/m.ts", text, { outline: false }),
        JSON.stringify(text),
      );
    }
    assert.ok(read > 200, `only ${read} modules outlined`);
  });

  it("summarizes every TypeScript module of the code fixtures as the whole tree does", () => {
    let outlined = 0;
    const archives = readdirSync(path.join(repoRoot, "test/fixtures/code")).filter((f) => f.endsWith(".txtar"));
    for (const archive of archives) {
      for (const [file, text] of readArchive(archive.replace(/\.txtar$/, "")).files) {
        if (!/\.(?:ts|mts|cts)$/.test(file)) continue;
        if (outlineOf(ts, text) !== undefined) outlined++;
        assert.deepEqual(
          summarizeModule(ts, file, text),
          summarizeModule(ts, file, text, { outline: false }),
          `${archive}: ${file}`,
        );
      }
    }
    assert.ok(outlined > 50, `only ${outlined} fixture modules outlined`);
  });
});

describe(`uses of a name, read from tokens (${runtimeName})`, () => {
  const importLine = 'import * as ns from "./ns";\n';
  const usage = (body: string) =>
    tokenUsage(ts, importLine + body, new Set(["ns"]), (position) => position < importLine.length)?.get("ns");

  it("reads members, and takes comments, strings, keys, members and declarations for no use", () => {
    const found = usage([
      '// ns( in a comment and "ns" in a string are not uses',
      'const s = "ns" + `ns`;',
      'ns.a(); ns?.b; ns["c"]; type T = ns.D; const t = x as ns.E;',
      "const o = { ns: 1, m(ns2: number) { return ns2; } };",
      "class K { static ns = 1; ns(): void {} readonly ns3 = x.ns; private ns4?: string }",
      "interface I { ns?: string; ns(a: number): void }",
      'export { a as ns } from "./other";',
      "function f(...ns: number[]) {}",
    ].join("\n"));
    assert.deepEqual(found, { members: new Set(["a", "b", "c", "D", "E"]), escapes: false });
  });

  for (
    const [title, body] of [
      ["passed on", "foo(ns);"],
      ["exported", "export { ns };"],
      ["in a shorthand property", "const o = { ns };"],
      ["indexed by a value", "ns[key];"],
      ["in a template", "`${ns}`;"],
      ["after a regular expression", "const r = /ns/; bar(ns);"],
    ]
  ) {
    it(`takes a name ${title} for an escape`, () => {
      assert.equal(usage(body)?.escapes, true, body);
    });
  }

  it("reads the same uses on the way when an outline watches the name", () => {
    const text = importLine + 'ns.a(); describe("x", () => { ns?.b; foo(ns); });\nexport const c = ns["c"];\n';
    const outline = outlineOf(ts, text, new Set(["ns"]));
    assert.ok(outline);
    const skip = (position: number) => position < importLine.length;
    const read = usageFrom(outline.uses, new Set(["ns"]), skip);
    assert.deepEqual(read, tokenUsage(ts, text, new Set(["ns"]), skip));
    assert.deepEqual(read.get("ns"), { members: new Set(["a", "b", "c"]), escapes: true });
  });

  it("says nothing of a name not used, and gives up on a text it cannot follow", () => {
    assert.equal(usage("const x = 1;"), undefined);
    assert.equal(tokenUsage(ts, importLine + "ns.a(;\n", new Set(["ns"]), () => false), undefined);
  });
});
