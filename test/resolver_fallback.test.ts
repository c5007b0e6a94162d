// A tsconfig with moduleResolution node10 ignores package.json `exports`, but
// the program runs under a runtime or a bundler that does not: warden resolves
// what node10 cannot as a bundler would, so a package that has only `exports`
// is a module of the graph, not an unresolved import.
import assert from "node:assert/strict";
import { it } from "node:test";
import { call, fixtureSuite } from "./fixtures/code/harness.ts";

type Target = { kind: string; path?: string; internal?: boolean; reason?: string };
type About = { project: string | null; imports: { line: number; specifier: string; target: Target }[] };
type Radius = { direct: { path: string }[] };

const rows = (about: About) => about.imports.map((i) => [i.line, i.specifier, i.target.kind, i.target.path ?? null]);

fixtureSuite("code intelligence, node10 resolution of exports-only packages", "node10_exports", (get) => {
  it("resolves an exports-only package and its exported subpath from a node10 project", async () => {
    const about = await call<About>(get().session, "code_about", { module: "packages/app/src/main.ts" });
    assert.equal(about.project, "packages/app/tsconfig.json");
    assert.deepEqual(rows(about), [
      [1, "@demo/lib", "module", "packages/lib/src/index.ts"],
      [2, "@demo/lib/extra", "module", "packages/lib/src/extra.ts"],
      [3, "@demo/lib/missing", "unresolved", null],
    ]);
    assert.equal(about.imports[2].target.internal, true);
  });

  it("resolves the package's own #imports and self-imports", async () => {
    const about = await call<About>(get().session, "code_about", { module: "packages/lib/src/index.ts" });
    assert.deepEqual(rows(about), [
      [1, "#util", "module", "packages/lib/src/util.ts"],
      [2, "@demo/lib/extra", "module", "packages/lib/src/extra.ts"],
    ]);
  });

  it("counts the node10 project among the package's dependents", async () => {
    const radius = await call<Radius>(get().session, "code_blast_radius", { module: "packages/lib/src/extra.ts" });
    assert.deepEqual(radius.direct.map((d) => d.path), ["packages/app/src/main.ts", "packages/lib/src/index.ts"]);
  });
});
