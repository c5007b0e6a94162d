// The output parsers of program checks, on real output: tsc 6.0 and deno lint 2.9 as they printed it (the samples
// below were produced by running them), SARIF and eslint JSON from their documented formats.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDenoLintJson, parseEslintJson, parseOutput, parseSarif, parseTsc } from "./formats.ts";
import { pathMapper } from "./program.ts";

const ROOT = "/work/repo/";
const toRoot = pathMapper(ROOT, ".");

describe("tsc diagnostics (--pretty false)", () => {
  it("reads located and project-wide errors, and joins a message chain's indented lines", () => {
    const output = [
      "c.ts(1,14): error TS2322: Type 'string' is not assignable to type 'number'.",
      "e.ts(2,14): error TS2322: Type '(x: { a: string; }) => void' is not assignable to type 'F'.",
      "  Types of parameters 'x' and 'x' are incompatible.",
      "    Type '{ a: number; }' is not assignable to type '{ a: string; }'.",
      "error TS18003: No inputs were found in config file '/work/repo/t2.json'.",
      "src/deep/t2.json(1,21): error TS5023: Unknown compiler option 'bogus'.",
      "",
    ].join("\n");
    assert.deepEqual(parseTsc(output, "typescript/tsc", toRoot), [
      {
        check: "typescript/tsc",
        file: "c.ts",
        line: 1,
        column: 14,
        severity: "high",
        rule: "TS2322",
        message: "Type 'string' is not assignable to type 'number'.",
      },
      {
        check: "typescript/tsc",
        file: "e.ts",
        line: 2,
        column: 14,
        severity: "high",
        rule: "TS2322",
        message: "Type '(x: { a: string; }) => void' is not assignable to type 'F'. " +
          "Types of parameters 'x' and 'x' are incompatible. Type '{ a: number; }' is not assignable to type '{ a: string; }'.",
      },
      {
        check: "typescript/tsc",
        file: null,
        line: null,
        column: null,
        severity: "high",
        rule: "TS18003",
        message: "No inputs were found in config file '/work/repo/t2.json'.",
      },
      {
        check: "typescript/tsc",
        file: "src/deep/t2.json",
        line: 1,
        column: 21,
        severity: "high",
        rule: "TS5023",
        message: "Unknown compiler option 'bogus'.",
      },
    ]);
  });

  it("refuses output that is not tsc's instead of reading it as no findings", () => {
    assert.throws(
      () => parseTsc("Segmentation fault\n", "typescript/tsc", toRoot),
      /^WardenError: Output of typescript\/tsc is not tsc diagnostics: unexpected line "Segmentation fault"$/,
    );
  });

  it("reads paths relative to the check's working directory, and hides those outside the root", () => {
    const fromSub = pathMapper(ROOT, "packages/a");
    const [inside, outside] = parseTsc(
      "src/x.ts(3,1): error TS2304: Cannot find name 'x'.\n../../../elsewhere/y.d.ts(1,1): error TS1005: ';' expected.\n",
      "typescript/tsc:packages/a",
      fromSub,
    );
    assert.equal(inside.file, "packages/a/src/x.ts");
    assert.equal(outside.file, null);
    assert.equal(outside.message, "';' expected. (in a file outside the root)");
  });
});

describe("deno lint --json", () => {
  // deno 2.9.6, `deno lint --json a.ts b.ts` on a file with `debugger;` and an unused const, and one that does not parse.
  const output = JSON.stringify({
    version: 1,
    diagnostics: [
      {
        filename: "file:///work/repo/a.ts",
        range: { start: { line: 2, col: 2, bytePos: 24 }, end: { line: 2, col: 11, bytePos: 33 } },
        message: "`debugger` statement is not allowed",
        code: "no-debugger",
        hint: "Remove the `debugger` statement",
      },
    ],
    errors: [
      {
        file_path: "/work/repo/b.ts",
        message:
          "SyntaxError: Expression expected\n  |\n1 | let x = ;\n  |         ~\n    at file:///work/repo/b.ts:1:9",
      },
    ],
    checked_files: ["/work/repo/a.ts", "/work/repo/b.ts"],
  });

  it("reads diagnostics (0-based columns made 1-based) and files that do not parse", () => {
    assert.deepEqual(parseDenoLintJson(output, "lint/deno", toRoot), [
      {
        check: "lint/deno",
        file: "a.ts",
        line: 2,
        column: 3,
        severity: "high",
        rule: "no-debugger",
        message: "`debugger` statement is not allowed: Remove the `debugger` statement",
      },
      {
        check: "lint/deno",
        file: "b.ts",
        line: 1,
        column: 9,
        severity: "high",
        rule: null,
        message: "SyntaxError: Expression expected",
      },
    ]);
  });

  it("refuses JSON without diagnostics, and text that is not JSON", () => {
    assert.throws(() => parseDenoLintJson("{}", "lint/deno", toRoot), /is not deno lint JSON: it has no diagnostics/);
    assert.throws(
      () => parseDenoLintJson("error: boom", "lint/deno", toRoot),
      /^WardenError: Output of lint\/deno is not deno lint JSON: /,
    );
  });
});

describe("eslint --format json", () => {
  // The shape eslint documents for its json formatter (https://eslint.org/docs/latest/use/formatters/#json).
  const output = JSON.stringify([
    {
      filePath: "/work/repo/src/a.js",
      messages: [
        {
          ruleId: "no-unused-vars",
          severity: 2,
          message: "'x' is assigned a value but never used.",
          line: 1,
          column: 7,
        },
        { ruleId: "eqeqeq", severity: 1, message: "Expected '===' and instead saw '=='.", line: 3, column: 9 },
        { ruleId: null, fatal: true, severity: 2, message: "Parsing error: Unexpected token )", line: 5, column: 2 },
      ],
      errorCount: 2,
      warningCount: 1,
    },
    {
      filePath: "/work/repo/dist/b.js",
      messages: [{
        ruleId: null,
        severity: 1,
        message: 'File ignored because of a matching ignore pattern. Use "--no-ignore" to override.',
      }],
    },
  ]);

  it("reads errors as high, warnings as medium, a parse error as high, and drops the ignored-file notice", () => {
    const found = parseEslintJson(output, "lint/eslint", toRoot);
    assert.deepEqual(found.map((f) => [f.file, f.line, f.column, f.severity, f.rule]), [
      ["src/a.js", 1, 7, "high", "no-unused-vars"],
      ["src/a.js", 3, 9, "medium", "eqeqeq"],
      ["src/a.js", 5, 2, "high", null],
    ]);
  });

  it("refuses an answer that is not a list of files", () => {
    assert.throws(
      () => parseEslintJson('{"messages":[]}', "lint/eslint", toRoot),
      /not a list of files|not an array of files/,
    );
    assert.throws(() => parseEslintJson('[{"messages":[]}]', "lint/eslint", toRoot), /has no filePath and messages/);
  });
});

describe("SARIF 2.1.0", () => {
  // The shape of the OASIS SARIF 2.1.0 standard: a relative uri (against the working directory), a file: URI, a
  // rule's default level, GitHub's security-severity property.
  const output = JSON.stringify({
    version: "2.1.0",
    runs: [{
      tool: {
        driver: {
          name: "scanner",
          rules: [
            { id: "sql-injection", properties: { "security-severity": "9.1" } },
            { id: "style", defaultConfiguration: { level: "note" } },
          ],
        },
      },
      results: [
        {
          ruleId: "sql-injection",
          level: "error",
          message: { text: "Query built from input" },
          locations: [{
            physicalLocation: { artifactLocation: { uri: "src/db.ts" }, region: { startLine: 12, startColumn: 5 } },
          }],
        },
        {
          ruleId: "style",
          message: { text: "Long line" },
          locations: [{ physicalLocation: { artifactLocation: { uri: "file:///work/repo/src/a%20b.ts" } } }],
        },
        { ruleId: "other", message: { text: "No level anywhere" } },
        { ruleId: "other", level: "none", message: { text: "Informational" } },
      ],
    }],
  });

  it("reads results with their location, and severity from security-severity, level, rule default or warning", () => {
    assert.deepEqual(parseSarif(output, "x/sarif", toRoot).map((f) => [f.file, f.line, f.column, f.severity, f.rule]), [
      ["src/db.ts", 12, 5, "critical", "sql-injection"],
      ["src/a b.ts", null, null, "low", "style"],
      [null, null, null, "medium", "other"],
      [null, null, null, "info", "other"],
    ]);
  });

  it("refuses a log without runs", () => {
    assert.throws(() => parseSarif('{"version":"2.1.0"}', "x/sarif", toRoot), /is not SARIF: it has no runs array/);
  });

  it("pass-fail reads nothing from the output: the exit code is the verdict", () => {
    assert.deepEqual(parseOutput("pass-fail", "anything at all", "x/test", toRoot), []);
  });
});
