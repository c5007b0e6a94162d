// code_about and code_blast_radius over one small fixture tree per case of
// resolution (test/fixtures/code/*.txtar), driven over MCP; every expected
// answer is written by hand from the fixture.
import assert from "node:assert/strict";
import { it } from "node:test";
import { call, callError, type Fixture, fixtureSuite } from "./fixtures/code/harness.ts";

interface Target {
  kind: string;
  path?: string;
  also?: string;
  package?: string;
  installed?: boolean;
  name?: string;
  reason?: string;
  internal?: boolean;
}
interface About {
  root: string;
  module: string;
  language: string;
  project: string | null;
  outside: boolean;
  parseError?: { line: number; message: string };
  exports: {
    name: string;
    kind: string;
    typeOnly: boolean;
    line: number;
    from?: { specifier: string; name: string; target: Target };
    viaStar?: boolean;
    kinds?: string[];
    augmentedBy?: string;
  }[];
  starExportsNotExpanded: { specifier: string; line: number; target: Target }[];
  imports: { specifier: string; line: number; kind: string; typeOnly: boolean; names: string[]; target: Target }[];
  importedBy: {
    path: string;
    typeOnly: boolean;
    imports: { line: number; specifier: string; kind: string; names: string[] }[];
  }[];
  importersLowerBound: boolean;
  unknownFrom: { path: string; kind: string; reason: string; line?: number; specifier?: string }[];
  symbols: { name: string; kind: string; line: number; exported: boolean; typeOnly: boolean }[];
  warnings: string[];
}
interface Radius {
  module: string;
  direct: {
    path: string;
    typeOnly: boolean;
    imports: { line: number; specifier: string; kind: string; typeOnly: boolean }[];
  }[];
  transitive: { path: string; depth: number; typeOnly: boolean; via: string }[];
  totals: {
    direct: number;
    transitive: number;
    dependents: number;
    runtime: number;
    typeOnly: number;
    maxDepth: number;
  };
  truncated: boolean;
  lowerBound: boolean;
  unknownFrom: { path: string; kind: string; reason: string; line?: number; specifier?: string }[];
  graph: { modules: number; cached: boolean; parsed: number; ms: number };
}

/** An import target in one short string: `module src/a.ts`, `external react`, `unresolved`. */
function show(target: Target): string {
  switch (target.kind) {
    case "module":
      return `module ${target.path}${target.also ? ` + ${target.also}` : ""}`;
    case "asset":
      return `asset ${target.path}`;
    case "external":
      return `external ${target.package}${target.installed ? " (installed)" : ""}`;
    case "builtin":
      return `builtin ${target.name}`;
    default:
      return `unresolved${target.internal ? " internal" : ""}`;
  }
}

/** The imports of an about answer as [line, specifier, target] rows. */
function importRows(about: About): [number, string, string][] {
  return about.imports.map((i) => [i.line, i.specifier, show(i.target)]);
}

const about = (f: Fixture, module: string) => call<About>(f.session, "code_about", { module });
const radius = (f: Fixture, module: string, extra: Record<string, unknown> = {}) =>
  call<Radius>(f.session, "code_blast_radius", { module, ...extra });

fixtureSuite("code intelligence, tsconfig paths and baseUrl", "paths_baseurl", (get) => {
  it("resolves wildcard, exact and ~/ paths, baseUrl imports, and says why the rest does not resolve", async () => {
    const a = await about(get(), "src/app/main.ts");
    assert.equal(a.project, "tsconfig.json");
    assert.deepEqual(importRows(a), [
      [1, "@app/helper", "module src/app/helper.ts"],
      [2, "@shared", "module src/shared/index.ts"],
      [3, "~/lib/util", "module src/lib/util.ts"],
      [4, "src/lib/base", "module src/lib/base.ts"],
      [5, "@app/missing", "unresolved internal"],
      [6, "react", "external react"],
    ]);
    assert.equal(
      a.imports[4].target.reason,
      'the "paths" entry "@app/*" of tsconfig.json matches, but no file exists',
    );
    assert.deepEqual(a.imports[5].names, ["default as React"]);
    assert.deepEqual(a.importedBy.map((i) => i.path), ["src/lib/leaf.ts"]);
  });

  it("follows importers through paths aliases, with depth", async () => {
    const r = await radius(get(), "src/lib/util.ts");
    assert.deepEqual(r.direct.map((d) => [d.path, d.typeOnly, d.imports.map((i) => i.specifier)]), [
      ["src/app/main.ts", false, ["~/lib/util"]],
    ]);
    assert.deepEqual(r.transitive, [{ path: "src/lib/leaf.ts", depth: 2, typeOnly: false, via: "src/app/main.ts" }]);
    assert.deepEqual(r.totals, { direct: 1, transitive: 1, dependents: 2, runtime: 2, typeOnly: 0, maxDepth: 2 });
    // main.ts has an unresolved import, but main.ts is already a dependent: nothing is missing.
    assert.equal(r.lowerBound, false);
    assert.deepEqual(r.unknownFrom, []);
  });
});

fixtureSuite("code intelligence, tsconfig extends", "extends", (get) => {
  it("follows a relative extends, an array and a package under node_modules (${configDir} paths, inherited baseUrl)", async () => {
    const a = await about(get(), "app/src/main.ts");
    assert.equal(a.project, "app/tsconfig.json");
    assert.deepEqual(importRows(a), [
      [1, "@app/feature", "module app/src/feature.ts"],
      [2, "shared/util", "module shared/util.ts"],
    ]);
  });

  it("reports an extends that leads outside the root, without a host path", async () => {
    const a = await about(get(), "other/index.ts");
    assert.deepEqual(a.warnings, [
      "other/tsconfig.json: Cannot read file '../../outside/tsconfig.json' (outside the root).",
    ]);
  });
});

fixtureSuite("code intelligence, solution-style references", "references", (get) => {
  it("walks references (a config named by a reference only) and resolves each file with its own project's paths", async () => {
    const web = await about(get(), "packages/web/src/app.ts");
    assert.equal(web.project, "packages/web/build-config.json");
    assert.deepEqual(importRows(web), [
      [1, "@demo/core", "module packages/core/src/index.ts"],
      [2, "@internal/view", "module packages/web/src/parts/view.ts"],
    ]);
    const core = await about(get(), "packages/core/src/index.ts");
    assert.equal(core.project, "packages/core/tsconfig.json");
    assert.deepEqual(importRows(core), [[1, "@internal/lexer", "module packages/core/src/internal/lexer.ts"]]);
    assert.deepEqual(core.exports.map((e) => [e.name, e.kind, e.from?.name, e.from?.target.path]), [
      ["tokenize", "re-export", "tokenize", "packages/core/src/internal/lexer.ts"],
    ]);
  });

  it("crosses packages: the blast radius of core's lexer reaches web through dist/ mapped to src/", async () => {
    const r = await radius(get(), "packages/core/src/internal/lexer.ts");
    assert.deepEqual(r.direct.map((d) => d.path), ["packages/core/src/index.ts"]);
    assert.deepEqual(r.transitive, [
      { path: "packages/web/src/app.ts", depth: 2, typeOnly: false, via: "packages/core/src/index.ts" },
    ]);
    assert.equal(r.lowerBound, false);
  });
});

fixtureSuite("code intelligence, .js specifiers naming .ts files", "js_specifiers", (get) => {
  it("maps .js, .mjs, .cjs and .jsx to .ts, .mts, .cts and .tsx; keeps real .js; pairs a .d.ts with its .js", async () => {
    const a = await about(get(), "src/main.ts");
    assert.deepEqual(importRows(a), [
      [1, "./a.js", "module src/a.ts"],
      [2, "./b.mjs", "module src/b.mts"],
      [3, "./c.cjs", "module src/c.cts"],
      [4, "./d.jsx", "module src/d.tsx"],
      [5, "./plain.js", "module src/plain.js"],
      [6, "./typed.js", "module src/typed.d.ts + src/typed.js"],
    ]);
  });

  it("counts an importer of the .d.ts as an importer of its .js", async () => {
    const r = await radius(get(), "src/typed.js");
    assert.deepEqual(r.direct.map((d) => d.path), ["src/main.ts"]);
  });
});

fixtureSuite("code intelligence, index files", "index_files", (get) => {
  it("lands directory imports on index files, a file winning over a directory", async () => {
    const a = await about(get(), "src/main.ts");
    assert.deepEqual(importRows(a), [
      [1, "./ui", "module src/ui/index.ts"],
      [2, "./ui/button", "module src/ui/button/index.tsx"],
      [3, "./config/", "module src/config/index.js"],
      [4, "./lib", "module src/lib.ts"],
    ]);
  });

  it("takes a module argument as an import would (no extension, a directory)", async () => {
    assert.equal((await about(get(), "src/ui")).module, "src/ui/index.ts");
    assert.equal((await about(get(), "src/lib")).module, "src/lib.ts");
    assert.equal((await radius(get(), "./src/ui/button/")).module, "src/ui/button/index.tsx");
  });
});

fixtureSuite("code intelligence, package.json exports, imports and self-imports", "package_exports", (get) => {
  it("resolves #imports (a .js target naming .ts, conditions) and self-imports through exports", async () => {
    const a = await about(get(), "src/index.ts");
    assert.deepEqual(importRows(a), [
      [1, "#internal/secret", "module src/internal/secret.ts"],
      [2, "#config", "module src/config.node.ts"],
      [3, "@demo/pkg/utils/format", "module src/utils/format.ts"],
      [4, "@demo/pkg/hidden", "unresolved internal"],
      [5, "#missing", "unresolved internal"],
      [6, "@demo/pkg/feature", "module src/feature.ts"],
    ]);
    assert.equal(a.imports[4].target.reason, 'no "imports" entry of package.json leads to a file');
    assert.equal(
      a.imports[3].target.reason,
      'package "@demo/pkg" (package.json) has no entry for "@demo/pkg/hidden" that leads to a file',
    );
    assert.deepEqual(a.exports.map((e) => [e.name, e.kind, e.from?.specifier]), [
      ["feature", "re-export", "@demo/pkg/feature"],
      ["all", "variable", undefined],
    ]);
  });

  it("finds the importer that names the package itself", async () => {
    const r = await radius(get(), "src/feature.ts");
    assert.deepEqual(r.direct.map((d) => d.path), ["src/index.ts"]);
    assert.deepEqual(r.transitive.map((t) => [t.path, t.depth]), [["test/index.test.ts", 2]]);
    assert.equal(r.lowerBound, false);
  });
});

fixtureSuite("code intelligence, export * and export * as ns", "star_exports", (get) => {
  it("expands export * through modules of the root, lists export * as ns and renamed re-exports with their source", async () => {
    const a = await about(get(), "src/index.ts");
    assert.deepEqual(
      a.exports.map((e) => [e.name, e.kind, e.line, e.from?.specifier, e.from?.name, e.from?.target.path, !!e.viaStar]),
      [
        ["a1", "variable", 1, "./a", "a1", "src/a.ts", true],
        ["shapes", "re-export", 2, "./shapes", "*", "src/shapes.ts", false],
        ["renamed", "re-export", 3, "./b", "b", "src/b.ts", false],
        ["a2", "variable", 5, undefined, undefined, undefined, false],
      ],
    );
    assert.deepEqual(a.starExportsNotExpanded.map((s) => [s.specifier, s.line, show(s.target)]), [
      ["lodash", 4, "external lodash"],
    ]);
    assert.deepEqual(importRows(a).map((r) => r[1]), ["./a", "./shapes", "./b", "lodash"]);
    assert.deepEqual(a.imports.map((i) => [i.kind, i.names]), [
      ["re-export", ["*"]],
      ["re-export", ["* as shapes"]],
      ["re-export", ["b as renamed"]],
      ["re-export", ["*"]],
    ]);
  });

  it("counts re-exporting modules as dependents", async () => {
    const r = await radius(get(), "src/shapes.ts");
    assert.deepEqual(r.direct.map((d) => d.path), ["src/index.ts"]);
    assert.deepEqual(r.transitive.map((t) => [t.path, t.depth, t.via]), [["src/consumer.ts", 2, "src/index.ts"]]);
  });
});

fixtureSuite("code intelligence, merged declarations", "merged_exports", (get) => {
  it("lists one export per name, its kinds the union of its declarations: a value when one is", async () => {
    const rows = (a: About) => a.exports.map((e) => [e.name, e.kind, e.kinds, e.typeOnly, e.line, !!e.viaStar]);
    assert.deepEqual(rows(await about(get(), "src/m.ts")), [
      ["Z", "variable", ["interface", "variable"], false, 1, false],
      ["Y", "function", ["type", "function"], false, 3, false],
      ["OnlyType", "interface", undefined, true, 5, false],
    ]);
    // Through `export *` the value is still a value (it was the interface, the first declaration, before).
    assert.deepEqual(rows(await about(get(), "src/index.ts")), [
      ["OnlyType", "interface", undefined, true, 1, true],
      ["Y", "function", ["type", "function"], false, 1, true],
      ["Z", "variable", ["interface", "variable"], false, 1, true],
    ]);
  });
});

fixtureSuite("code intelligence, run-time edges", "runtime_edges", (get) => {
  it("reads an import's run-time edge from its form, as isolated-module emit does", async () => {
    const rows = async (module: string) =>
      (await about(get(), module)).imports.map((i) => [i.line, i.specifier, i.kind, i.typeOnly]);
    assert.deepEqual(await rows("src/empty_type.ts"), [
      [1, "./types", "static", true],
      [2, "./types", "re-export", true],
    ]);
    assert.deepEqual(await rows("src/empty_value.ts"), [[1, "./types", "side-effect", false]]);
    assert.deepEqual(await rows("src/marked.ts"), [[1, "./types", "static", true]]);
    // Used only as a type, but a value import by its form: TypeScript's own emit drops it, verbatimModuleSyntax keeps it.
    assert.deepEqual(await rows("src/used_as_type.ts"), [[1, "./types", "static", false]]);
    const reexport = await about(get(), "src/reexport.ts");
    assert.deepEqual(reexport.imports.map((i) => [i.kind, i.typeOnly]), [["re-export", false]]);
    assert.deepEqual(reexport.exports.map((e) => [e.name, e.typeOnly]), [["I", true]]);
  });

  it("leaves importers through type-only forms out of the run-time dependents", async () => {
    const all = await radius(get(), "src/types.ts");
    assert.deepEqual(all.direct.map((d) => [d.path, d.typeOnly]), [
      ["src/empty_type.ts", true],
      ["src/empty_value.ts", false],
      ["src/marked.ts", true],
      ["src/reexport.ts", false],
      ["src/used_as_type.ts", false],
    ]);
    const runtime = await radius(get(), "src/types.ts", { includeTypeOnly: false });
    assert.deepEqual(runtime.direct.map((d) => d.path), [
      "src/empty_value.ts",
      "src/reexport.ts",
      "src/used_as_type.ts",
    ]);
  });
});

fixtureSuite("code intelligence, type-only exports", "type_only_exports", (get) => {
  it("calls a namespace of types only, and an interface merged with one, type-only; values stay values", async () => {
    const a = await about(get(), "src/ns.ts");
    assert.deepEqual(a.exports.map((e) => [e.name, e.kind, e.kinds, e.typeOnly, e.line]), [
      ["N", "namespace", undefined, true, 1],
      ["I", "interface", ["interface", "namespace"], true, 2],
      ["V", "namespace", undefined, false, 4],
      ["W", "namespace", undefined, true, 5],
      ["P", "namespace", undefined, true, 10],
      ["CE", "enum", undefined, false, 11],
    ]);
    assert.deepEqual(a.symbols.filter((s) => s.kind === "namespace").map((s) => [s.name, s.typeOnly]), [
      ["N", true],
      ["I", true],
      ["V", false],
      ["W", true],
      ["P", true],
    ]);
  });

  it("follows re-exports, exported imports and local names to what they name", async () => {
    const a = await about(get(), "src/reexport.ts");
    assert.deepEqual(a.exports.map((e) => [e.name, e.typeOnly, e.line]), [
      ["I", true, 2],
      ["V", false, 2],
      ["N", true, 3],
      ["Value", false, 3],
      ["L", true, 5],
      ["default", true, 7],
    ]);
  });

  it("reads a declaration file as TypeScript does: no run-time imports, every declaration exported without `export {}`", async () => {
    const open = await about(get(), "src/ambient.d.ts");
    assert.deepEqual(open.imports.map((i) => [i.specifier, i.typeOnly]), [["./ns", true]]);
    assert.deepEqual(open.exports.map((e) => [e.name, e.kind, e.typeOnly]), [
      ["hidden", "variable", false],
      ["Local", "interface", true],
      ["shown", "variable", false],
    ]);
    const closed = await about(get(), "src/closed.d.ts");
    assert.deepEqual(closed.exports.map((e) => e.name), ["renamed"]);
  });
});

fixtureSuite("code intelligence, module augmentation", "augmentation", (get) => {
  it("reads the imports inside `declare module` and the augmentation itself as type-only imports", async () => {
    const a = await about(get(), "src/plugin.ts");
    assert.deepEqual(a.imports.map((i) => [i.line, i.specifier, i.kind, i.typeOnly, i.names, show(i.target)]), [
      [1, "./y", "static", false, ["make"], "module src/y.ts"],
      [2, "./y", "augmentation", true, [], "module src/y.ts"],
      [3, "./z", "static", true, ["type Extra"], "module src/z.ts"],
    ]);
    const z = await radius(get(), "src/z.ts");
    assert.deepEqual(z.direct.map((d) => [d.path, d.typeOnly]), [["src/plugin.ts", true]]);
  });

  it("merges what the block declares into the augmented module's exports, and through export *", async () => {
    const rows = (a: About) => a.exports.map((e) => [e.name, e.kind, e.typeOnly, e.line, e.augmentedBy]);
    assert.deepEqual(rows(await about(get(), "src/y.ts")), [
      ["Options", "interface", true, 1, undefined],
      ["make", "variable", false, 2, undefined],
      ["added", "function", false, 5, "src/plugin.ts"],
    ]);
    assert.deepEqual(rows(await about(get(), "src/index.ts")).map((r) => [r[0], r[2]]), [
      ["Options", true],
      ["added", false],
      ["make", false],
    ]);
  });
});

fixtureSuite("code intelligence, namespace imports", "namespace_imports", (get) => {
  it("lists a namespace import and the symbols a module declares", async () => {
    const a = await about(get(), "src/calc.ts");
    assert.deepEqual(a.imports.map((i) => [i.specifier, i.names, show(i.target)]), [
      ["./math", ["* as math"], "module src/math.ts"],
    ]);
    const m = await about(get(), "src/math.ts");
    assert.deepEqual(m.symbols.map((s) => [s.name, s.kind, s.line, s.exported, s.typeOnly]), [
      ["add", "variable", 1, true, false],
      ["sub", "variable", 2, true, false],
      ["mul", "variable", 3, true, false],
      ["Shape", "interface", 4, true, true],
      ["Unused", "type", 5, true, true],
    ]);
    assert.deepEqual(m.importedBy.map((i) => [i.path, i.imports[0].names]), [["src/calc.ts", ["* as math"]]]);
  });
});

fixtureSuite("code intelligence, import type and inline type specifiers", "type_imports", (get) => {
  it("marks type-only imports and bindings", async () => {
    const a = await about(get(), "src/model.ts");
    assert.deepEqual(a.imports.map((i) => [i.line, i.typeOnly, i.names]), [
      [1, true, ["type User"]],
      [2, false, ["type Id", "VERSION"]],
    ]);
    assert.deepEqual(a.exports.map((e) => [e.name, e.kind, e.typeOnly, e.from?.target.path]), [
      ["User", "re-export", true, "src/types.ts"],
      ["model", "variable", false, undefined],
    ]);
    const o = await about(get(), "src/only_types.ts");
    assert.deepEqual(o.imports.map((i) => [i.typeOnly, i.names]), [[true, ["type Id", "type User"]]]);
  });

  it("marks dependents reached only through type-only imports, and can leave them out", async () => {
    const r = await radius(get(), "src/types.ts");
    assert.deepEqual(r.direct.map((d) => [d.path, d.typeOnly]), [["src/model.ts", false], ["src/only_types.ts", true]]);
    assert.deepEqual(r.transitive, [
      { path: "src/app.ts", depth: 2, typeOnly: false, via: "src/model.ts" },
      { path: "src/view.ts", depth: 2, typeOnly: true, via: "src/only_types.ts" },
    ]);
    assert.deepEqual(r.totals, { direct: 2, transitive: 2, dependents: 4, runtime: 2, typeOnly: 2, maxDepth: 2 });
    const runtime = await radius(get(), "src/types.ts", { includeTypeOnly: false });
    assert.deepEqual(runtime.direct.map((d) => d.path), ["src/model.ts"]);
    assert.deepEqual(runtime.transitive.map((t) => t.path), ["src/app.ts"]);
  });
});

fixtureSuite("code intelligence, dynamic import()", "dynamic_imports", (get) => {
  it("follows literal dynamic imports, bound, destructured or bare", async () => {
    const a = await about(get(), "src/main.ts");
    assert.deepEqual(a.imports.map((i) => [i.line, i.kind, i.specifier, i.names, show(i.target)]), [
      [2, "dynamic", "./lazy", ["* as lazy"], "module src/lazy.ts"],
      [4, "dynamic", "./picker", ["pick"], "module src/picker.ts"],
      [5, "dynamic", "./side", [], "module src/side.ts"],
    ]);
    const r = await radius(get(), "src/lazy.ts");
    assert.deepEqual(r.direct.map((d) => [d.path, d.imports[0].kind]), [["src/main.ts", "dynamic"]]);
    assert.equal(r.lowerBound, false);
  });

  it("answers a lower bound for modules a computed import() could load, and only for those", async () => {
    const r = await radius(get(), "src/locales/en.ts");
    assert.deepEqual(r.direct, []);
    assert.equal(r.lowerBound, true);
    assert.deepEqual(r.unknownFrom, [
      { path: "src/main.ts", kind: "computed-import", reason: "import() with a computed specifier", line: 9 },
    ]);
    const solo = await radius(get(), "src/other/solo.ts");
    assert.equal(solo.lowerBound, false);
  });
});

fixtureSuite("code intelligence, require in JavaScript", "require_js", (get) => {
  it("follows require() to modules, built-ins and JSON, and reads CommonJS exports", async () => {
    const a = await about(get(), "lib/index.js");
    assert.equal(a.language, "javascript");
    assert.deepEqual(a.imports.map((i) => [i.line, i.kind, i.specifier, i.names, show(i.target)]), [
      [1, "require", "./helper", ["helper"], "module lib/helper.js"],
      [2, "require", "path", ["* as path"], "builtin path"],
      [3, "require", "../config.json", ["* as config"], "module config.json"],
    ]);
    assert.deepEqual(a.exports.map((e) => [e.name, e.kind]), [["helper", "commonjs"], ["run", "commonjs"]]);
    const h = await about(get(), "lib/helper.js");
    assert.deepEqual(h.exports.map((e) => [e.name, e.kind, e.line]), [["helper", "commonjs", 1], [
      "other",
      "commonjs",
      4,
    ]]);
  });

  it("keeps a computed require() to the files its pattern can match", async () => {
    const json = await radius(get(), "config.json");
    assert.deepEqual(json.direct.map((d) => d.path), ["lib/index.js"]);
    assert.equal(json.lowerBound, false);
    // require("./plugins/" + name) could load lib/plugins/*, not lib/helper.js.
    const helper = await radius(get(), "lib/helper.js");
    assert.equal(helper.lowerBound, false);
  });
});

fixtureSuite("code intelligence, CommonJS as compilers emit it", "commonjs_emit", (get) => {
  it("reads helpers' re-exports as re-exports, and resolves require() to the declaration file and what it types", async () => {
    const index = await about(get(), "index.cjs");
    assert.deepEqual(index.imports.map((i) => [i.line, i.kind, i.specifier, i.names, show(i.target)]), [
      [30, "require", "./lib/api.cjs", ["* as z"], "module lib/api.d.cts + lib/api.cjs"],
      [33, "re-export", "./lib/api.cjs", ["*"], "module lib/api.d.cts + lib/api.cjs"],
    ]);
    assert.deepEqual(index.exports.map((e) => [e.name, e.kind, e.line, e.from?.name, !!e.viaStar]), [
      ["z", "commonjs", 31, undefined, false],
      ["default", "commonjs", 32, undefined, false],
      ["parse", "function", 33, "parse", true],
      ["version", "variable", 33, "version", true],
    ]);
    const core = await about(get(), "lib/core/index.cjs");
    assert.deepEqual(core.imports.map((i) => [i.line, i.kind, i.specifier, show(i.target)]), [
      [30, "re-export", "./strings.cjs", "module lib/core/strings.d.cts + lib/core/strings.cjs"],
      [31, "re-export", "./util.cjs", "module lib/core/util.cjs"],
      [32, "require", "./util.cjs", "module lib/core/util.cjs"],
    ]);
    assert.deepEqual(core.exports.filter((e) => !e.viaStar).map((e) => [e.name, e.kind, e.line, e.from?.name]), [
      ["util", "re-export", 31, "*"],
      ["toZod", "commonjs", 33, undefined],
    ]);
    const esb = await about(get(), "lib/esb.cjs");
    assert.deepEqual(esb.exports.map((e) => `${e.name} ${e.kind} ${e.line}`), ["alpha commonjs 8", "beta commonjs 8"]);
    // In an ES module bundle, `__export` fills a namespace object: no export of the module.
    const bundle = await about(get(), "lib/bundle.js");
    assert.deepEqual(bundle.exports.map((e) => e.name), ["ns"]);
    const strings = await radius(get(), "lib/core/strings.cjs");
    assert.deepEqual(strings.direct.map((d) => d.path), ["lib/core/index.cjs"]);
  });
});

fixtureSuite("code intelligence, JSX and TSX", "jsx_tsx", (get) => {
  it("parses TSX with JSX text and namespace components, and .jsx files", async () => {
    const a = await about(get(), "src/App.tsx");
    assert.equal(a.language, "tsx");
    assert.equal(a.parseError, undefined);
    assert.deepEqual(importRows(a), [
      [1, "./components/Button", "module src/components/Button.tsx"],
      [2, "./icons", "module src/icons.tsx"],
    ]);
    const r = await radius(get(), "src/components/Button.tsx");
    assert.deepEqual(r.direct.map((d) => d.path), ["src/App.tsx", "src/legacy.jsx"]);
  });
});

fixtureSuite("code intelligence, what the graph cannot see", "broken", (get) => {
  it("reports a parse error, and the unknowns that could add importers", async () => {
    const broken = await about(get(), "src/broken.ts");
    assert.deepEqual(broken.parseError, { line: 2, message: "Variable declaration expected." });
    const r = await radius(get(), "src/target.ts");
    assert.deepEqual(r.direct.map((d) => d.path), ["src/uses.ts"]);
    assert.equal(r.lowerBound, true);
    assert.deepEqual(r.unknownFrom, [
      {
        path: "src/broken.ts",
        kind: "parse-error",
        reason: "does not parse: Variable declaration expected.",
        line: 2,
      },
      {
        path: "src/ghost.ts",
        kind: "unresolved",
        reason: 'no file matches "src/gone/target"',
        line: 1,
        specifier: "./gone/target",
      },
    ]);
  });

  it("is not a lower bound where no unknown could reach the module", async () => {
    const r = await radius(get(), "src/fine.ts");
    assert.equal(r.lowerBound, false);
    assert.deepEqual(r.unknownFrom, []);
  });
});

fixtureSuite("code intelligence, pnpm workspaces", "workspaces", (get) => {
  it("resolves workspace packages through exports into dist/, mapped back to src/", async () => {
    const a = await about(get(), "packages/app/src/main.ts");
    assert.deepEqual(importRows(a), [
      [1, "@mono/ui", "module packages/ui/src/index.ts"],
      [2, "@mono/ui/theme", "module packages/ui/src/theme.ts"],
      [3, "@mono/excluded", "external @mono/excluded"],
    ]);
    const r = await radius(get(), "packages/ui/src/theme.ts");
    assert.deepEqual(r.direct.map((d) => d.path), ["packages/app/src/main.ts", "packages/ui/src/index.ts"]);
  });
});

fixtureSuite("code intelligence, arguments", "workspaces", (get) => {
  it("refuses a module that is not in the root, by argument name", async () => {
    assert.equal(
      await callError(get().session, "code_about", { module: "packages/app/src/nope.ts" }),
      'Invalid argument "module": "packages/app/src/nope.ts" is not a file in root "default"; pass a path relative to the root',
    );
    assert.equal(
      await callError(get().session, "code_blast_radius", { module: "../etc/passwd" }),
      'Path refused in root "default": "../etc/passwd" leads outside the root; remove the `..` segments',
    );
    assert.equal(
      await callError(get().session, "code_blast_radius", { module: "/etc/passwd" }),
      'Path refused in root "default": an absolute path outside the root; pass a path relative to the root',
    );
    assert.match(
      await callError(get().session, "code_about", { module: "x.ts", project_id: "nope" }),
      /^Unknown project "nope": the projects you may use are default; pass one of them as project_id/,
    );
    assert.equal(
      await callError(get().session, "code_blast_radius", { module: "x.ts", maxDepth: 0 }),
      'Invalid argument "maxDepth": expected >=1 but received 0',
    );
  });
});
