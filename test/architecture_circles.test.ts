// No import circles in core/ or tools/: each file's imports (static, type-only, re-exports and import() with a
// literal), read with TypeScript's own pre-processor, make a graph whose strongly connected components must all be
// single files that do not import themselves. A circle hides the layering: neither file can be read first.
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
    else if (/\.(ts|mts)$/.test(name)) out.push(rel);
  }
  return out.sort();
}

/** The files of `files` that `file` imports (relative specifiers; `import type` too). */
function importedFiles(file: string, text: string, files: ReadonlySet<string>): string[] {
  return ts.preProcessFile(text, true, true).importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => path.posix.join(path.posix.dirname(file), spec))
    .filter((target) => files.has(target));
}

/**
 * Each circle of `graph`, as one closed path through it (`a -> b -> a`) followed by every file of its strongly
 * connected component: Tarjan's algorithm, then a shortest path from the component's first file back to itself.
 */
function circlesOf(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        strong(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    for (let member = ""; member !== node;) {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    }
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) components.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) strong(node);
  return components.map((component) => {
    const members = new Set(component);
    const start = component[0];
    const cameFrom = new Map<string, string>();
    const queue = [start];
    for (let at = 0; at < queue.length && !cameFrom.has(start); at++) {
      for (const next of graph.get(queue[at]) ?? []) {
        if (members.has(next) && !cameFrom.has(next)) {
          cameFrom.set(next, queue[at]);
          queue.push(next);
        }
      }
    }
    const loop = [start];
    for (let node = cameFrom.get(start)!; node !== start; node = cameFrom.get(node)!) loop.unshift(node);
    loop.unshift(start);
    return `${loop.join(" -> ")} (files in the circle: ${component.join(", ")})`;
  });
}

describe(`import circles (${runtimeName})`, () => {
  it("has none in core/ and tools/, type-only imports included", () => {
    const files = [...sourceFiles("core"), ...sourceFiles("tools")];
    assert.ok(files.includes("core/tool.ts") && files.some((f) => f.startsWith("tools/lib/graph/")));
    const known = new Set(files);
    const graph = new Map(
      files.map((file) => [file, importedFiles(file, readFileSync(path.join(repoRoot, file), "utf8"), known)]),
    );
    assert.deepEqual(circlesOf(graph), []);
  });

  it("finds a circle of type-only imports, a re-export, an import() and a file that imports itself", () => {
    const texts: Record<string, string> = {
      "core/a.ts": 'import type { B } from "./b.ts";\nexport type A = B;\n',
      "core/b.ts": 'export type { A as B } from "./a.ts";\n',
      "core/c.ts": 'export const c = () => import("./sub/d.ts");\n',
      "core/sub/d.ts": 'import { c } from "../c.ts";\nexport const d = c;\n',
      "core/e.ts": 'import { e as self } from "./e.ts";\nexport const e = 1 + self;\n',
      "core/f.ts": 'import { a } from "./a.ts";\nimport { ts } from "ts-morph";\n',
    };
    const known = new Set(Object.keys(texts));
    const graph = new Map(Object.entries(texts).map(([file, text]) => [file, importedFiles(file, text, known)]));
    assert.deepEqual(circlesOf(graph), [
      "core/a.ts -> core/b.ts -> core/a.ts (files in the circle: core/a.ts, core/b.ts)",
      "core/c.ts -> core/sub/d.ts -> core/c.ts (files in the circle: core/c.ts, core/sub/d.ts)",
      "core/e.ts -> core/e.ts (files in the circle: core/e.ts)",
    ]);
  });

  it("names the shortest way round a circle of three", () => {
    const graph = new Map([
      ["x.ts", ["y.ts", "w.ts"]],
      ["y.ts", ["z.ts"]],
      ["z.ts", ["x.ts"]],
      ["w.ts", []],
    ]);
    assert.deepEqual(circlesOf(graph), ["x.ts -> y.ts -> z.ts -> x.ts (files in the circle: x.ts, y.ts, z.ts)"]);
  });
});
