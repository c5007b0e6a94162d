// The scanner outlines read modules with (tools/lib/graph/token_scanner.ts) against
// TypeScript's own, as the outline drives them (tokenStream): the same tokens
// (kind, position, line break before, value) on every TypeScript and
// JavaScript file of this repository and of the code fixtures, on texts
// written to trip it and on random fragments (where it never reads a text
// TypeScript's scanner rejects); where it gives up instead (a word outside
// ASCII, a merge conflict marker), the summary is read from the whole tree.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, it } from "node:test";
import type { TsApi } from "../tools/lib/typescript/typescript.ts";
import { summarizeModule } from "../tools/lib/graph/module_summary.ts";
import { outlineOf, tokenStream } from "../tools/lib/graph/outline.ts";
import { readArchive } from "./fixtures/code/harness.ts";
import { repoRoot, runtimeName } from "./helpers.ts";

const ts = createRequire(path.join(repoRoot, "package.json"))("@ts-morph/common/dist/typescript.js") as TsApi;

/** Holds TokenScanner's tokens equal to TypeScript's; false when TypeScript's scanner reports an error in `text`. */
function assertSameTokens(text: string, label: string): boolean {
  const typescript = tokenStream(ts, text, { typescript: true });
  if (!typescript.complete) return false;
  const fast = tokenStream(ts, text);
  assert.ok(fast.complete, `${label}: the scanner gave up`);
  assert.deepEqual(fast.tokens, typescript.tokens, label);
  return true;
}

const TRICKY: Record<string, string> = {
  "punctuation, longest first": [
    "a ??= b ?? c?.d ?.5 : e; f **= g ** h; i >>>= 1; j >= k; l !== m != n; o &&= p || q;",
    "r ||= s | t & u ^ v ~ w; x <<= y << z <= 1; ...rest; a => b === c == d; e++ + ++f - --g; h %= 2;",
    "@decorator class K { #private = 1; static #other() {} }",
  ].join("\n"),
  numbers: "0, 1_000, 0x1F, 0XfF_ff, 0b1010, 0o17, 1.5, .5, 1e10, 2E-3, 3.e+4, 10n, 0n, 0x1fn, 1..toString(), a[0]",
  "strings and their values": [
    String.raw`const a = "a\"b", b = 'it\'s', c = "\x41\u0042\u{43}", d = "line\
continued", e = 'tab\there';`,
    "const f = ns[\"member\"], g = ns['other'], h = ns[`tpl`];",
  ].join("\n"),
  "templates and regular expressions": [
    "const t = `a ${b + `c ${d} e`} f ${g}`, u = tag`\\S ${h}`, v = `line\r\nbreak`;",
    "const r = /[/\\]]+/gi.test(s) ? x / y / z : /a\\/b/u;",
    "if (/x/.test(s)) {} const q = a! / 2; const w = (1) / 2; return /^}$/;",
  ].join("\n"),
  "comments, white space and line breaks": [
    "#!/usr/bin/env node",
    "\uFEFFconst a = 1; /* one\n two */ const b = 2; // tail",
    "const\u00A0c\u2003= 3;\u2028const d = 4;\r\nconst e /* same line */ = 5;",
    "/** doc */ export function f(): void {}",
  ].join("\n"),
};

/** Every .ts, .mts and .mjs file under `dir`. */
function sources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== "node_modules" && entry.name !== "fixtures") sources(file, out);
    else if (entry.isFile() && /\.(?:ts|mts|mjs)$/.test(entry.name)) out.push(file);
  }
  return out;
}

describe(`the outline's token scanner (${runtimeName})`, () => {
  for (const [title, text] of Object.entries(TRICKY)) {
    it(`reads what TypeScript's scanner reads: ${title}`, () => assert.ok(assertSameTokens(text, title)));
  }

  it("reads what TypeScript's scanner reads on every source file of this repository", () => {
    const files = ["core", "tools", "test", "scripts", "plugins"].flatMap((dir) => sources(path.join(repoRoot, dir)));
    const read = files.filter((file) => assertSameTokens(readFileSync(file, "utf8"), path.relative(repoRoot, file)));
    assert.ok(read.length > 80, `only ${read.length} of ${files.length} files read`);
  });

  it("reads what TypeScript's scanner reads on every module of the code fixtures", () => {
    let read = 0;
    const archives = readdirSync(path.join(repoRoot, "test/fixtures/code")).filter((f) => f.endsWith(".txtar"));
    for (const archive of archives) {
      for (const [file, text] of readArchive(archive.replace(/\.txtar$/, "")).files) {
        if (!/\.(?:ts|mts|cts|js|mjs|cjs)$/.test(file)) continue;
        if (assertSameTokens(text, `${archive}: ${file}`)) read++;
      }
    }
    assert.ok(read > 50, `only ${read} fixture modules`);
  });

  it("on random fragments, reads what TypeScript's scanner reads or gives up, and never reads what it rejects", () => {
    // Fragments cut from this repository's sources (some with characters deleted), and strings of tricky characters:
    // where both scanners read to the end, the same tokens; where TypeScript's reports an error, this one gives up.
    let seed = 20261130;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const texts = ["core", "tools", "test"].flatMap((dir) => sources(path.join(repoRoot, dir)))
      .map((file) => readFileSync(file, "utf8"));
    const pieces = [
      "/",
      "*",
      "'",
      '"',
      "`",
      "{",
      "}",
      "(",
      ")",
      "[",
      "]",
      "$",
      "\\",
      "\n",
      "\r",
      ".",
      "?",
      "=",
      ">",
      "<",
    ]
      .concat([
        "!",
        "&",
        "|",
        "0",
        "1",
        "x",
        "n",
        "e",
        "_",
        "a",
        " ",
        "+",
        "-",
        "#",
        "@",
        ";",
        ":",
        "return",
        "typeof",
      ]);
    let both = 0;
    for (let k = 0; k < 10000; k++) {
      let text: string;
      if (k % 2 === 0) {
        const source = texts[random(texts.length)];
        const from = random(source.length);
        text = source.slice(from, from + 1 + random(300));
        if (random(3) === 0) {
          const cut = random(text.length);
          text = text.slice(0, cut) + text.slice(cut + 1 + random(4));
        }
      } else {
        text = Array.from({ length: 1 + random(10) }, () => pieces[random(pieces.length)]).join("");
      }
      const fast = tokenStream(ts, text);
      const typescript = tokenStream(ts, text, { typescript: true });
      if (fast.complete) assert.ok(typescript.complete, `read what TypeScript rejects: ${JSON.stringify(text)}`);
      if (fast.complete && typescript.complete) {
        both++;
        assert.deepEqual(fast.tokens, typescript.tokens, JSON.stringify(text));
      }
    }
    assert.ok(both > 2000, `only ${both} fragments read by both`);
  });

  it("gives up where it does not read as TypeScript does, and the whole tree is parsed", () => {
    for (
      const text of [
        "export const café = 1;",
        "export const a = 1;\n<<<<<<< HEAD\nexport const b = 2;\n=======\nexport const b = 3;\n>>>>>>> branch\n",
        "export const \\u0061b = 1;",
        "export const n = 017;",
        "export const s = 'unterminated\n';",
      ]
    ) {
      assert.equal(tokenStream(ts, text).complete, false, text);
      assert.equal(outlineOf(ts, text), undefined, text);
      assert.deepEqual(
        summarizeModule(ts, "src/m.ts", text),
        summarizeModule(ts, "src/m.ts", text, { outline: false }),
      );
    }
    assert.deepEqual(summarizeModule(ts, "src/m.ts", "export const café = 1;").exports.map((e) => e.name), ["café"]);
  });

  it("reports an error where TypeScript's scanner does: numeric separators out of place, malformed escapes", () => {
    const numbers = ["1__0", "1_", "1._5", "1e_5", "0x_1", "0b1_", "0_1", "1_.5"];
    const strings = [
      String.raw`"\x4"`,
      String.raw`"\u12"`,
      String.raw`"\u{110000}"`,
      String.raw`"\u{}"`,
      String.raw`'\08'`,
    ];
    for (const literal of [...numbers, ...strings, String.raw`"\1"`, String.raw`"\9"`]) {
      const text = `export const n = ${literal};`;
      assert.equal(tokenStream(ts, text, { typescript: true }).complete, false, `TypeScript reads ${literal}`);
      assert.equal(tokenStream(ts, text).complete, false, literal);
    }
    // Escapes that are fine stay fine.
    const fine = String.raw`const s = "\x41\u0042\u{10FFFF}\0\a\'\\", t = '\
';`;
    assert.ok(assertSameTokens(fine, "escapes"), "TypeScript's scanner rejects the escapes that are fine");
  });
});
