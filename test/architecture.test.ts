// Promises the layout makes, checked on the source with TypeScript's parser
// (ts-morph's bundled `ts`): the SDK stays in one module, tools reach the
// outside only through ctx, core never depends on tools or plugins, and
// runtime specifics stay in core/platform/.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { ts } from "ts-morph";
import { repoRoot, runtimeName } from "./helpers.ts";

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(repoRoot, dir))) {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(repoRoot, rel)).isDirectory()) out.push(...sourceFiles(rel));
    // Unit tests beside a module (x.test.ts) are not shipped code: they may use node:test and what a test needs.
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !/\.test\.ts$/.test(name)) out.push(rel);
  }
  return out.sort();
}

/** Every module specifier a file imports, statically or with import(). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(path.join(repoRoot, file), "utf8"), true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** Free identifiers a file uses (not property names, not declarations' own names). */
function globalsUsed(file: string, names: readonly string[]): string[] {
  return freeIdentifiers(
    ts.createSourceFile(file, readFileSync(path.join(repoRoot, file), "utf8"), ts.ScriptTarget.Latest, true),
    names,
  );
}

/**
 * Identifiers of `names` that are not declared in the file: a local `const global = ...` is not the global object.
 * TypeScript's checker (no lib, nothing resolved) binds each name to its declaration, scope by scope.
 */
function freeIdentifiers(source: ts.SourceFile, names: readonly string[]): string[] {
  const host = ts.createCompilerHost({});
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (name, ...rest) => name === source.fileName ? source : getSourceFile(name, ...rest);
  const checker = ts.createProgram([source.fileName], { noLib: true, noResolve: true, allowJs: true, types: [] }, host)
    .getTypeChecker();
  const found = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && names.includes(node.text)) {
      const parent = node.parent;
      const isMemberName = (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        (ts.isPropertyAssignment(parent) && parent.name === node) || ts.isPropertySignature(parent) ||
        ts.isMethodDeclaration(parent) || ts.isImportSpecifier(parent);
      const declared = checker.getSymbolAtLocation(node)?.declarations?.some((d) => d.getSourceFile() === source);
      if (!isMemberName && !declared) found.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort();
}

const FORBIDDEN_MODULE =
  /^(node:)?(fs|fs\/promises|child_process|net|dgram|dns|http|https|http2|tls|worker_threads|cluster|vm|process|os|module|inspector)$/;
// The global object under each of its names, Function (a string compiled to code sees every global) and what
// reaches the runtime directly.
const FORBIDDEN_GLOBALS = [
  "Deno",
  "process",
  "require",
  "fetch",
  "WebSocket",
  "XMLHttpRequest",
  "eval",
  "Bun",
  "globalThis",
  "global",
  "window",
  "self",
  "Function",
];

/**
 * Support code under tools/ that is not a tool and may import named runtime modules, each with why and the only
 * files that may import it. Everything else in the file is held to the tools' rules (no globals, no computed
 * import()), and the entry must stay exact: a module it no longer imports, or an importer not named, fails.
 */
const RUNTIME_SUPPORT: Readonly<
  Record<string, { modules: readonly string[]; importers: readonly string[]; why: string }>
> = {
  "tools/lib/typescript/code_cache.ts": {
    modules: [
      "node:buffer",
      "node:crypto",
      "node:fs",
      "node:module",
      "node:path",
      "node:process",
      "node:timers",
      "node:vm",
    ],
    importers: ["tools/lib/typescript/typescript.ts"],
    why: "the code tools load TypeScript's compiler as CommonJS (require from node:module), under node with V8's " +
      "code cache (node:vm) read from and written to node_modules/.cache/warden/ (node:fs), as node 20 has no " +
      "module.enableCompileCache; typescript.ts names the one file it loads, so no tool chooses what runs",
  },
};

/** What a tool file may not do: import the runtime's doors, use them as globals, or import() what is not a literal. */
function offencesIn(file: string, text: string): string[] {
  const offences: string[] = [];
  const allowed = RUNTIME_SUPPORT[file]?.modules ?? [];
  for (const f of ts.preProcessFile(text, true, true).importedFiles) {
    const spec = f.fileName;
    if (allowed.includes(spec)) continue;
    if (FORBIDDEN_MODULE.test(spec) || spec === "globby" || spec.includes("core/platform")) {
      offences.push(`${file} imports ${spec}`);
    }
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments;
      if (!specifier || !(ts.isStringLiteral(specifier) || ts.isNoSubstitutionTemplateLiteral(specifier))) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        offences.push(`${file} calls import() with a computed specifier at line ${line}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const name of freeIdentifiers(source, FORBIDDEN_GLOBALS)) offences.push(`${file} uses ${name}`);
  return offences;
}

function toolOffences(file: string): string[] {
  return offencesIn(file, readFileSync(path.join(repoRoot, file), "utf8"));
}

const coreFiles = sourceFiles("core");
const toolFiles = sourceFiles("tools");

describe(`architecture (${runtimeName})`, () => {
  it("has source files to check", () => {
    assert.ok(coreFiles.includes("core/transport/server.ts") && toolFiles.includes("tools/tech_debt_check.ts"));
  });

  it("imports @modelcontextprotocol/sdk from core/transport/server.ts only", () => {
    const importers = [...coreFiles, ...toolFiles].filter((file) =>
      importsOf(file).some((spec) => spec.startsWith("@modelcontextprotocol/"))
    );
    assert.deepEqual(importers, ["core/transport/server.ts"]);
  });

  it("keeps tools away from the file system, processes, the network and the runtime", () => {
    assert.deepEqual(toolFiles.flatMap(toolOffences), []);
  });

  it("lets only the listed support code import runtime modules, exactly those listed, from its named importers", () => {
    const problems: string[] = [];
    for (const [file, { modules, importers }] of Object.entries(RUNTIME_SUPPORT)) {
      if (!toolFiles.includes(file)) {
        problems.push(`${file} is listed but missing`);
        continue;
      }
      const runtimeImports = importsOf(file).filter((spec) => spec.startsWith("node:")).sort();
      if (runtimeImports.join() !== [...modules].sort().join()) {
        problems.push(`${file} imports ${runtimeImports.join(", ")}, listed: ${modules.join(", ")}`);
      }
      const importedBy = toolFiles.filter((other) =>
        importsOf(other).some((spec) =>
          spec.startsWith(".") && path.posix.join(path.posix.dirname(other), spec) === file
        )
      );
      if (importedBy.join() !== [...importers].sort().join()) {
        problems.push(`${file} is imported by ${importedBy.join(", ") || "nothing"}, listed: ${importers.join(", ")}`);
      }
    }
    assert.deepEqual(problems, []);
    // The allowance is per file: the same imports anywhere else are offences.
    const [supportFile] = Object.keys(RUNTIME_SUPPORT);
    const text = readFileSync(path.join(repoRoot, supportFile), "utf8");
    assert.deepEqual(offencesIn(supportFile, text), []);
    assert.ok(offencesIn("tools/lib/other.ts", text).includes("tools/lib/other.ts imports node:vm"));
    assert.ok(offencesIn("tools/lib/other.ts", text).includes("tools/lib/other.ts imports node:fs"));
  });

  it("refuses what static analysis cannot follow: a computed import(), the global object", () => {
    // The hostile fixture of test/confinement.test.ts hides each reach from a plain import scan.
    const offences = toolOffences("test/fixtures/hostile/read.ts");
    assert.ok(
      offences.some((o) => /calls import\(\) with a computed specifier at line \d+/.test(o)),
      offences.join("\n"),
    );
    assert.ok(offences.includes("test/fixtures/hostile/read.ts uses globalThis"), offences.join("\n"));
    // Every shape of reach, one line each, in a file that only the checker reads.
    const shapes = [
      'const fs = await import(["node", "fs"].join(":"));',
      "const fs = await import(`node:${name}`);",
      'const m = "node:fs"; await import(m);',
      "const p = globalThis.process;",
      'const d = globalThis["Deno"];',
      "const w = window.fetch;",
      "const s = self.Deno;",
      "const g = global.process;",
      'const f = new Function("return process")();',
      'const e = Function("return Deno")();',
      'const r = require("node:fs");',
      'import("node:child_process");',
    ];
    for (const shape of shapes) {
      assert.notDeepEqual(offencesIn("shape.ts", `export const x = async (name: string) => { ${shape} };`), [], shape);
    }
    assert.deepEqual(offencesIn("ok.ts", 'export const x = async () => (await import("valibot")).string();'), []);
  });

  it("never imports tools/ or plugins/ from core/", () => {
    const offenders = coreFiles.flatMap((file) =>
      importsOf(file)
        .filter((spec) =>
          spec.startsWith(".") && /^(tools|plugins)\//.test(path.posix.join(path.posix.dirname(file), spec))
        )
        .map((spec) => `${file} imports ${spec}`)
    );
    assert.deepEqual(offenders, []);
  });

  it("keeps node and deno specifics in core/platform/", () => {
    const runtimeModule = /^node:(fs|fs\/promises|process|child_process|url|os|module)$/;
    const offenders: string[] = [];
    for (const file of coreFiles.filter((f) => !f.startsWith("core/platform/"))) {
      for (const spec of importsOf(file)) if (runtimeModule.test(spec)) offenders.push(`${file} imports ${spec}`);
      for (const name of globalsUsed(file, ["Deno", "process"])) offenders.push(`${file} uses ${name}`);
    }
    assert.deepEqual(offenders, []);
  });

  it("catches what it looks for (the checks are not vacuous)", () => {
    assert.ok(/^(tools|plugins)\//.test(path.posix.join("core/plugins", "../../plugins/x/plugin.js")));
    assert.ok(!/^(tools|plugins)\//.test(path.posix.join("core", "./plugins/discover.ts")));
    assert.ok(importsOf("core/platform/node.ts").includes("node:fs/promises"));
    // deno.ts reaches Deno through the global object and names it locally: the local is not a free use.
    assert.deepEqual(globalsUsed("core/platform/deno.ts", ["Deno", "globalThis"]), ["globalThis"]);
  });
});
