// The module graph behind the code tools: cached per root, refreshed by size
// and mtime (an edit re-parses one file, a new or removed file or a changed
// tsconfig re-resolves without re-parsing), progress on long builds, and a
// generated tree whose dependents are known by construction.
import assert from "node:assert/strict";
import { existsSync, readdirSync, rmSync, statSync, utimesSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { onDeno, repoRoot, runtimeName, type Session, tempDir } from "./helpers.ts";
import { call, connectRoot, layeredTree, writeTree } from "./fixtures/code/harness.ts";

interface Radius {
  module: string;
  direct: { path: string; typeOnly: boolean }[];
  transitive: { path: string; depth: number; typeOnly: boolean; via: string }[];
  totals: { direct: number; transitive: number; dependents: number; maxDepth: number };
  truncated: boolean;
  lowerBound: boolean;
  unknownFrom: { path: string; kind: string }[];
  graph: { modules: number; cached: boolean; parsed: number; ms: number };
}

describe(`code answers with any characters (${runtimeName})`, () => {
  it("sends quotes, backslashes, line separators and emoji intact, as structured content and as text", async () => {
    const work = tempDir("warden-code-chars-");
    const odd = 'src/naïve "quoted" back\u2028sep 🚀.ts';
    const specifier = './missing\\"🚀"';
    writeTree(work.dir, [
      ["src/a.ts", "export const a = 1;\n"],
      [odd, `import { a } from "./a";\nimport ${JSON.stringify(specifier)};\nexport const b = a;\n`],
    ]);
    const session = await connectRoot(work.dir);
    try {
      // `call` checks that the text parses to the structured content.
      const r = await call<Radius>(session, "code_blast_radius", { module: "src/a.ts" });
      assert.deepEqual(r.direct.map((d) => d.path), [odd]);
      const about = await call<{ imports: { specifier: string }[] }>(session, "code_about", { module: odd });
      assert.deepEqual(about.imports.map((i) => i.specifier), ["./a", specifier]);
    } finally {
      await session.close();
      work.remove();
    }
  });
});

describe(`code graph cache (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  // Edits are dated a few seconds back, as they are by the time an agent asks: a file changed in the
  // very instant it is read is read again at the next query ("racy clean"), which would blur the counts.
  let clock = Date.now() / 1000 - 600;
  const write = (file: string, text: string) => {
    writeTree(work.dir, [[file, text]]);
    clock += 5;
    utimesSync(path.join(work.dir, file), clock, clock);
  };
  const radius = (module: string) => call<Radius>(session, "code_blast_radius", { module });

  before(async () => {
    work = tempDir("warden-code-cache-");
    write("tsconfig.json", JSON.stringify({ compilerOptions: { module: "esnext", moduleResolution: "bundler" } }));
    write("src/a.ts", "export const a = 1;\n");
    write("src/b.ts", 'import { a } from "./a";\nexport const b = a;\n');
    write("src/c.ts", 'import { b } from "./b";\nexport const c = b;\n');
    write("src/e.ts", 'import { a } from "@/a";\nexport const e = a;\n');
    session = await connectRoot(work.dir);
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  it("builds once, then answers from cache", async () => {
    const first = await radius("src/a.ts");
    assert.equal(first.graph.cached, false);
    assert.equal(first.graph.parsed, 4);
    assert.deepEqual(first.direct.map((d) => d.path), ["src/b.ts"]);
    assert.deepEqual(first.transitive.map((t) => t.path), ["src/c.ts"]);
    // "@/a" does not resolve and its last segment names src/a.ts.
    assert.equal(first.lowerBound, true);
    assert.deepEqual(first.unknownFrom.map((u) => [u.path, u.kind]), [["src/e.ts", "unresolved"]]);
    const second = await radius("src/a.ts");
    assert.equal(second.graph.cached, true);
    assert.equal(second.graph.parsed, 0);
    const about = await call<{ graph?: unknown; importedBy: { path: string }[] }>(session, "code_about", {
      module: "src/b.ts",
    });
    assert.deepEqual(about.importedBy.map((i) => i.path), ["src/c.ts"]);
  });

  it("re-parses only an edited file", async () => {
    write("src/c.ts", "export const c = 2; // no longer imports b\n");
    const r = await radius("src/a.ts");
    assert.equal(r.graph.cached, false);
    assert.equal(r.graph.parsed, 1);
    assert.deepEqual(r.direct.map((d) => d.path), ["src/b.ts"]);
    assert.deepEqual(r.transitive, []);
  });

  it("sees a new file and a removed one without re-parsing the others", async () => {
    write("src/d.ts", 'import { a } from "./a";\nexport const d = a;\n');
    const added = await radius("src/a.ts");
    assert.equal(added.graph.parsed, 1);
    assert.deepEqual(added.direct.map((d) => d.path), ["src/b.ts", "src/d.ts"]);
    rmSync(path.join(work.dir, "src/b.ts"));
    const removed = await radius("src/a.ts");
    assert.equal(removed.graph.parsed, 0);
    assert.deepEqual(removed.direct.map((d) => d.path), ["src/d.ts"]);
    assert.equal(removed.graph.modules, 4);
  });

  it("re-resolves without re-parsing when a tsconfig changes", async () => {
    write(
      "tsconfig.json",
      JSON.stringify({
        compilerOptions: { module: "esnext", moduleResolution: "bundler", paths: { "@/*": ["./src/*"] } },
      }),
    );
    const r = await radius("src/a.ts");
    assert.equal(r.graph.parsed, 0);
    assert.deepEqual(r.direct.map((d) => d.path), ["src/d.ts", "src/e.ts"]);
    assert.equal(r.lowerBound, false);
  });
});

describe(`code graph on a generated tree (${runtimeName})`, () => {
  const tree = layeredTree(6, 60, 7);
  let session: Session;
  let work: { dir: string; remove: () => void };
  const progress: { progress: number; total?: number; message?: string }[] = [];
  let cold: Radius;

  const codeCache = path.join(repoRoot, "node_modules/.cache/warden");
  const warmCaches = () => existsSync(codeCache) ? readdirSync(codeCache).filter((f) => f.endsWith(".warm.v8")) : [];

  before(async () => {
    // So that the build below has to write it again (node only: deno keeps no such cache); a process loading it
    // meanwhile has read it already.
    if (!onDeno) { for (const file of warmCaches()) rmSync(path.join(codeCache, file), { force: true }); }
    work = tempDir("warden-code-tree-");
    writeTree(work.dir, tree.files);
    writeTree(work.dir, [
      ["package.json", JSON.stringify({ name: "tree", type: "module" })],
      ["tsconfig.json", JSON.stringify({ compilerOptions: { module: "nodenext" } })],
    ]);
    session = await connectRoot(work.dir);
    const result = await session.client.callTool(
      { name: "code_blast_radius", arguments: { module: "src/l0/m0.ts" } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    cold = result.structuredContent as unknown as Radius;
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  it("reports progress while a cold build parses many files", () => {
    assert.equal(cold.graph.cached, false);
    assert.equal(cold.graph.parsed, 360);
    assert.ok(progress.length >= 3, `progress notifications: ${JSON.stringify(progress)}`);
    assert.deepEqual(progress.map((p) => p.total), progress.map(() => 360));
    assert.match(progress[0].message ?? "", /^parsed \d+ of 360 modules$/);
  });

  if (!onDeno) {
    it("keeps TypeScript's compiled code again once a build has run it (node)", async () => {
      // Written once the event loop is free after the cold answer: a call answered from cache may come first.
      for (let waited = 0; warmCaches().length === 0 && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.deepEqual(warmCaches().map((f) => f.replace(/-[0-9a-f]{16}\./, "-<key>.")), [
        "typescript.js-<key>.warm.v8",
      ]);
    });
  }

  it("finds exactly the dependents known by construction, with their depth", async () => {
    const targets = ["src/l0/m0.ts", "src/l0/m17.ts", "src/l1/m5.ts", "src/l2/m33.ts", "src/l3/m8.ts", "src/l5/m1.ts"];
    for (const target of targets) {
      const r = await call<Radius>(session, "code_blast_radius", { module: target });
      const expected = tree.dependents(target);
      const found = new Map<string, number>([
        ...r.direct.map((d) => [d.path, 1] as [string, number]),
        ...r.transitive.map((t) => [t.path, t.depth] as [string, number]),
      ]);
      assert.deepEqual(
        [...found].sort(),
        [...expected].sort(),
        `dependents of ${target}`,
      );
      assert.equal(r.lowerBound, false);
      assert.equal(r.graph.cached, true);
    }
  });

  it("lists direct dependents by path and transitive ones by depth, then path; limit and maxDepth cut that list", async () => {
    // The module with dependents at the most depths (the most dependents among those).
    const rank = (file: string) => {
      const dependents = tree.dependents(file);
      return new Set(dependents.values()).size * 100_000 + dependents.size;
    };
    const target = [...tree.files.keys()].reduce((best, file) => rank(file) > rank(best) ? file : best);
    const expected = [...tree.dependents(target)];
    const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const inOrder = expected.filter(([, depth]) => depth > 1)
      .sort(([a, da], [b, db]) => da - db || byPath(a, b));
    const all = await call<Radius>(session, "code_blast_radius", { module: target, limit: 100000 });
    assert.deepEqual(all.direct.map((d) => d.path), expected.filter(([, d]) => d === 1).map(([p]) => p).sort(byPath));
    assert.deepEqual(all.transitive.map((t) => [t.path, t.depth]), inOrder);
    assert.ok(inOrder.length > 20 && new Set(inOrder.map(([, d]) => d)).size > 2, `${target}: several depths`);
    assert.equal(all.totals.maxDepth, inOrder.at(-1)![1]);
    assert.equal(all.truncated, false);

    const cut = await call<Radius>(session, "code_blast_radius", { module: target, limit: 7 });
    assert.deepEqual(cut.transitive, all.transitive.slice(0, 7));
    assert.deepEqual(cut.totals, all.totals);
    assert.equal(cut.truncated, true);

    const shallow = await call<Radius>(session, "code_blast_radius", { module: target, maxDepth: 2, limit: 100000 });
    assert.deepEqual(shallow.transitive.map((t) => [t.path, t.depth]), inOrder.filter(([, d]) => d === 2));
    assert.equal(shallow.totals.maxDepth, 2);
  });
});

if (onDeno) {
  describe(`TypeScript's code cache (${runtimeName})`, () => {
    it("is node's only: a build big enough to keep compiled code writes no cache file under deno", async () => {
      const codeCache = path.join(repoRoot, "node_modules/.cache/warden");
      const listing = () =>
        existsSync(codeCache)
          ? readdirSync(codeCache).sort().map((f) => {
            const info = statSync(path.join(codeCache, f));
            return `${f} ${info.size} ${info.mtimeMs}`;
          })
          : [];
      const before = listing();
      const work = tempDir("warden-code-deno-cache-");
      // More modules than a build needs to tell the loader that TypeScript's code is worth keeping (module_graph.ts).
      writeTree(work.dir, layeredTree(3, 50, 11).files);
      const session = await connectRoot(work.dir);
      try {
        const r = await call<Radius>(session, "code_blast_radius", { module: "src/l0/m0.ts" });
        assert.equal(r.graph.parsed, 150);
      } finally {
        // The server has exited once this resolves: whatever it would write is written by then.
        await session.close();
        work.remove();
      }
      assert.deepEqual(listing(), before);
    });
  });
}
