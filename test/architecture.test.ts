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
    else if (/\.(ts|mts|js|mjs)$/.test(name)) out.push(rel);
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
  const source = ts.createSourceFile(
    file,
    readFileSync(path.join(repoRoot, file), "utf8"),
    ts.ScriptTarget.Latest,
    true,
  );
  const found = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && names.includes(node.text)) {
      const parent = node.parent;
      const isMemberName = (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        (ts.isPropertyAssignment(parent) && parent.name === node) || ts.isPropertySignature(parent) ||
        ts.isMethodDeclaration(parent) || ts.isImportSpecifier(parent);
      if (!isMemberName) found.add(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found].sort();
}

const coreFiles = sourceFiles("core");
const toolFiles = sourceFiles("tools");

describe(`architecture (${runtimeName})`, () => {
  it("has source files to check", () => {
    assert.ok(coreFiles.includes("core/server.ts") && toolFiles.includes("tools/tech_debt_check.ts"));
  });

  it("imports @modelcontextprotocol/sdk from core/server.ts only", () => {
    const importers = [...coreFiles, ...toolFiles].filter((file) =>
      importsOf(file).some((spec) => spec.startsWith("@modelcontextprotocol/"))
    );
    assert.deepEqual(importers, ["core/server.ts"]);
  });

  it("keeps tools away from the file system, processes, the network and the runtime", () => {
    const forbiddenModule =
      /^(node:)?(fs|fs\/promises|child_process|net|dgram|dns|http|https|http2|tls|worker_threads|cluster|vm|process|os|module|inspector)$/;
    const offenders: string[] = [];
    for (const file of toolFiles) {
      for (const spec of importsOf(file)) {
        if (forbiddenModule.test(spec) || spec === "globby" || spec.includes("core/platform")) {
          offenders.push(`${file} imports ${spec}`);
        }
      }
      for (
        const name of globalsUsed(file, [
          "Deno",
          "process",
          "require",
          "fetch",
          "WebSocket",
          "XMLHttpRequest",
          "eval",
          "Bun",
        ])
      ) {
        offenders.push(`${file} uses ${name}`);
      }
    }
    assert.deepEqual(offenders, []);
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
    assert.deepEqual(globalsUsed("core/platform/deno.ts", ["Deno"]), ["Deno"]);
  });
});
