// code_dead_exports over the fixture trees and a generated tree whose dead
// exports are known by construction, driven over MCP.
import assert from "node:assert/strict";
import { cpSync, existsSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { repoRoot, runtimeName, type Session, tempDir } from "./helpers.ts";
import {
  call,
  callError,
  connectRoot,
  type Fixture,
  fixtureSuite,
  layeredTree,
  writeTree,
} from "./fixtures/code/harness.ts";

interface Finding {
  file: string;
  name: string;
  line: number;
  kind: string;
  typeOnly: boolean;
  usedInFile: boolean;
  reason?: string;
}
interface Dead {
  root: string;
  path: string;
  dead: Finding[];
  undetermined: Finding[];
  totals: { modules: number; exports: number; used: number; dead: number; undetermined: number };
  truncated: boolean;
  entryPoints: { file: string; from: string }[];
  warnings: string[];
  graph: { modules: number; cached: boolean; parsed: number; ms: number };
}

/** Findings as `file#name` strings. */
const names = (list: Finding[]) => list.map((f) => `${f.file}#${f.name}`);

const dead = (f: Fixture, args: Record<string, unknown> = {}) => call<Dead>(f.session, "code_dead_exports", args);

fixtureSuite("code_dead_exports, dead_exports", "dead_exports", (get) => {
  it("keeps entry points, follows re-exports and namespace members, and says what it cannot decide", async () => {
    const r = await dead(get());
    assert.deepEqual(r.entryPoints, [
      { file: "src/api.ts", from: 'package.json exports["."]' },
      { file: "src/cli.ts", from: 'package.json bin["demo"]' },
    ]);
    assert.deepEqual(r.dead.map((f) => [f.file, f.name, f.line, f.kind, f.typeOnly, f.usedInFile]), [
      ["scripts/seed.ts", "seed", 1, "variable", false, false],
      ["src/barrel.ts", "toys", 2, "re-export", false, false],
      ["src/internal/helpers.ts", "helperB", 2, "variable", false, false],
      ["src/kit.ts", "beta", 2, "variable", false, true],
      ["src/kit.ts", "delta", 4, "variable", false, false],
      ["src/legacy.cjs", "unused", 1, "commonjs", false, false],
      ["src/lexer.ts", "UnusedToken", 4, "interface", true, false],
      ["src/parser.ts", "unusedParser", 5, "function", false, false],
      ["src/toys.ts", "ball", 1, "variable", false, false],
      ["src/uses_helpers.ts", "x", 2, "variable", false, false],
    ]);
    assert.deepEqual(r.undetermined, [
      {
        file: "src/kit.ts",
        name: "gamma",
        line: 3,
        kind: "variable",
        typeOnly: false,
        usedInFile: false,
        reason: "src/broken.ts does not parse and mentions gamma",
      },
    ]);
    assert.deepEqual(r.totals, { modules: 12, exports: 21, used: 10, dead: 10, undetermined: 1 });
    assert.equal(r.truncated, false);
  });

  it("takes more entry points as globs, and can leave type-only exports out", async () => {
    const r = await dead(get(), { entries: ["scripts/**/*.ts"], includeTypes: false });
    assert.ok(!names(r.dead).includes("scripts/seed.ts#seed"));
    assert.ok(!names(r.dead).includes("src/lexer.ts#UnusedToken"));
    assert.deepEqual(r.entryPoints.map((e) => e.from), [
      'entries "scripts/**/*.ts"',
      'package.json exports["."]',
      'package.json bin["demo"]',
    ]);
  });

  it("narrows the report to a sub-path, the analysis still covering the root", async () => {
    const r = await dead(get(), { path: "src/internal" });
    assert.equal(r.path, "src/internal");
    assert.deepEqual(names(r.dead), ["src/internal/helpers.ts#helperB"]);
    assert.deepEqual(r.totals, { modules: 1, exports: 2, used: 1, dead: 1, undetermined: 0 });
    const limited = await dead(get(), { limit: 2 });
    assert.equal(limited.dead.length, 2);
    assert.equal(limited.totals.dead, 10);
    assert.equal(limited.truncated, true);
  });

  it("refuses a path that is not in the root, by argument name", async () => {
    assert.equal(
      await callError(get().session, "code_dead_exports", { path: "nowhere" }),
      'Invalid argument "path": "nowhere" is not a directory or file in root "default"; pass a path relative to the root',
    );
  });
});

fixtureSuite("code_dead_exports, star_exports", "star_exports", (get) => {
  it("treats src/index.ts as an entry: what it re-exports is public, a shadowed name and default are not", async () => {
    const r = await dead(get());
    assert.deepEqual(r.entryPoints.map((e) => e.file), ["src/index.ts"]);
    assert.deepEqual(names(r.dead), [
      "src/a.ts#a2",
      "src/a.ts#default",
      "src/b.ts#unusedB",
      "src/consumer.ts#used",
    ]);
    assert.deepEqual(r.undetermined, []);
  });

  it("without the default entries, follows the consumer's imports through export * and export * as ns", async () => {
    const r = await dead(get(), { defaultEntries: false });
    assert.deepEqual(names(r.dead), [
      "src/a.ts#a2",
      "src/a.ts#default",
      "src/b.ts#unusedB",
      "src/consumer.ts#used",
      "src/index.ts#a2",
      "src/shapes.ts#square",
    ]);
  });
});

fixtureSuite("code_dead_exports, namespace_imports", "namespace_imports", (get) => {
  it("counts members read from a namespace, and leaves an escaping namespace undetermined", async () => {
    const r = await dead(get());
    assert.deepEqual(names(r.dead), [
      "src/calc.ts#total",
      "src/calc.ts#square",
      "src/escape.ts#keys",
      "src/math.ts#mul",
      "src/math.ts#Unused",
    ]);
    assert.deepEqual(r.undetermined.map((f) => [f.file, f.name, f.reason]), [
      ["src/util.ts", "u1", "the module object escapes in src/escape.ts:1"],
      ["src/util.ts", "u2", "the module object escapes in src/escape.ts:1"],
    ]);
  });
});

fixtureSuite("code_dead_exports, dynamic_imports", "dynamic_imports", (get) => {
  it("reads members of an awaited import() and destructured names, and suspects what a computed import() may load", async () => {
    const r = await dead(get());
    assert.deepEqual(names(r.dead), ["src/lazy.ts#unused", "src/other/solo.ts#solo", "src/picker.ts#other"]);
    assert.deepEqual(r.undetermined.map((f) => [f.file, f.name, f.reason]), [
      ["src/locales/en.ts", "messages", "src/main.ts:9 import() with a computed specifier may load it"],
    ]);
  });
});

fixtureSuite("code_dead_exports, require_js", "require_js", (get) => {
  it("reads CommonJS exports and require() destructuring; package.json main is an entry", async () => {
    const r = await dead(get());
    assert.deepEqual(r.entryPoints, [{ file: "lib/index.js", from: "package.json main" }]);
    assert.deepEqual(r.dead.map((f) => [f.file, f.name, f.kind]), [
      ["lib/helper.js", "other", "commonjs"],
      ["lib/plugins.js", "export=", "commonjs"],
    ]);
  });
});

fixtureSuite("code_dead_exports, commonjs_emit", "commonjs_emit", (get) => {
  it("reads compilers' CommonJS re-exports and interop helpers; a JavaScript entry's declaration file is an entry", async () => {
    const r = await dead(get());
    assert.deepEqual(r.entryPoints, [
      { file: "index.cjs", from: "package.json main" },
      { file: "index.d.cts", from: "package.json types" },
      { file: "index.d.ts", from: "package.json module (its declaration file)" },
      { file: "index.js", from: "package.json module" },
      { file: "types/legacy.d.ts", from: 'package.json typesVersions["*"]["legacy"]' },
    ]);
    // The CommonJS build and the ES module build of the same code agree; what the entries re-export is used,
    // `core._string` is used through `__exportStar`, `util_js_1.toZod` through the getter that reads it.
    assert.deepEqual(r.dead.map((f) => [f.file, f.name, f.line, f.kind]), [
      ["lib/bundle.js", "ns", 9, "value"],
      ["lib/core/index.cjs", "toZod", 33, "commonjs"],
      ["lib/core/index.cjs", "util", 31, "re-export"],
      ["lib/core/index.js", "util", 2, "re-export"],
      ["lib/core/index.js", "toZod", 3, "re-export"],
      ["lib/core/strings.cjs", "_number", 7, "commonjs"],
      ["lib/core/strings.d.cts", "_number", 2, "variable"],
      ["lib/core/strings.js", "_number", 2, "variable"],
      ["lib/core/util.cjs", "clone", 4, "commonjs"],
      ["lib/core/util.js", "toZod", 1, "function"],
      ["lib/core/util.js", "clone", 4, "function"],
      ["lib/esb.cjs", "beta", 8, "commonjs"],
    ]);
    // What the graph cannot follow: a module object copied by a loop, one read as the default it does not have.
    assert.deepEqual(r.undetermined.map((f) => [f.file, f.name, f.reason]), [
      ["lib/extra.cjs", "extra", "the module object escapes in lib/copy.cjs:2"],
      ["lib/legacy.cjs", "run", "the module object is read as its default in lib/api.cjs:35"],
      ["lib/legacy.cjs", "stop", "the module object is read as its default in lib/api.cjs:35"],
    ]);
    assert.deepEqual(r.totals, { modules: 22, exports: 38, used: 23, dead: 12, undetermined: 3 });
  });
});

fixtureSuite("code_dead_exports, merged_exports", "merged_exports", (get) => {
  it("reports a name declared as a type and as a value once, as the value", async () => {
    const r = await dead(get(), { defaultEntries: false });
    assert.deepEqual(r.dead.map((f) => [f.file, f.name, f.line, f.kind, f.typeOnly]), [
      ["src/m.ts", "Z", 2, "variable", false],
      ["src/m.ts", "Y", 4, "function", false],
      ["src/m.ts", "OnlyType", 5, "interface", true],
    ]);
  });
});

fixtureSuite("code_dead_exports, type_imports", "type_imports", (get) => {
  it("counts import type and inline type specifiers as uses", async () => {
    const r = await dead(get());
    assert.deepEqual(names(r.dead), ["src/app.ts#app", "src/view.ts#view"]);
  });
});

fixtureSuite("code_dead_exports, jsx_tsx", "jsx_tsx", (get) => {
  it("counts JSX namespace members as uses", async () => {
    const r = await dead(get());
    assert.deepEqual(names(r.dead), [
      "src/App.tsx#App",
      "src/components/Button.tsx#unusedThing",
      "src/icons.tsx#Moon",
      "src/legacy.jsx#default",
    ]);
  });
});

fixtureSuite("code_dead_exports, package_exports", "package_exports", (get) => {
  it("takes exports subpaths as entries and suspects what an unresolved self-import may name", async () => {
    const r = await dead(get());
    assert.deepEqual(r.entryPoints.map((e) => [e.file, e.from]), [
      ["src/feature.ts", 'package.json exports["./feature"]["types"]'],
      ["src/index.ts", 'package.json exports["."]'],
      ["src/utils/format.ts", 'package.json exports["./utils/*"]'],
      ["test/index.test.ts", "default pattern **/*.{test,spec}.{js,mjs,cjs,jsx,ts,tsx,mts,cts}"],
    ]);
    assert.deepEqual(names(r.dead), ["src/config.ts#config"]);
    assert.deepEqual(r.undetermined.map((f) => [f.file, f.name, f.reason]), [
      ["src/hidden.ts", "hidden", 'src/index.ts:4 imports "@demo/pkg/hidden", which does not resolve'],
    ]);
  });
});

describe(`code_dead_exports on zod's published package (${runtimeName})`, () => {
  // zod comes with the SDK (package-lock.json pins it): its package ships the same code as CommonJS (.cjs, as
  // TypeScript emits it), as ES modules (.js), their declaration files and the TypeScript sources.
  let session: Session;
  let work: { dir: string; remove: () => void };
  before(async () => {
    const zod = path.join(repoRoot, "node_modules/zod");
    assert.ok(existsSync(path.join(zod, "package.json")), `${zod} is missing: npm install puts it there, with the SDK`);
    work = tempDir("warden-code-zod-");
    cpSync(zod, work.dir, { recursive: true });
    session = await connectRoot(work.dir);
  });
  after(async () => {
    await session?.close();
    work?.remove();
  });

  it("finds the CommonJS build as dead as the ES module build, and keeps index.d.ts as an entry", async () => {
    const r = await call<Dead>(session, "code_dead_exports", { limit: 100000 });
    assert.ok(
      r.entryPoints.some((e) => e.file === "index.d.ts" && e.from === "package.json module (its declaration file)"),
    );
    const findings = [...r.dead, ...r.undetermined];
    assert.deepEqual(findings.filter((f) => /^index\./.test(f.file)), []);
    // `v4/core/index.cjs` re-exports api.cjs with `__exportStar(require("./api.cjs"), exports)`; schemas.cjs reads
    // `core._string` from `const core = __importStar(require("../core/index.cjs"))`.
    assert.ok(!names(findings).includes("v4/core/api.cjs#_string"));
    // The same code in two module formats: each build's dead and undetermined exports are the other's.
    const twins = (from: RegExp, to: string) =>
      findings.filter((f) => from.test(f.file)).map((f) => `${f.file.replace(from, to)}#${f.name}`).sort();
    assert.deepEqual(twins(/\.cjs$/, ".js"), twins(/(?<!\.d)\.js$/, ".js"));
    assert.deepEqual(twins(/\.d\.cts$/, ".d.ts"), twins(/\.d\.ts$/, ".d.ts"));
    assert.ok(r.totals.used > r.totals.exports * 0.9, JSON.stringify(r.totals));
  });
});

describe(`code_dead_exports on a generated tree (${runtimeName})`, () => {
  const tree = layeredTree(5, 50, 11);
  let session: Session;
  let work: { dir: string; remove: () => void };
  before(async () => {
    work = tempDir("warden-code-dead-");
    writeTree(work.dir, tree.files);
    session = await connectRoot(work.dir);
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  it("finds exactly the exports no module imports, known by construction", async () => {
    const r = await call<Dead>(session, "code_dead_exports", { limit: 100000 });
    assert.deepEqual(names(r.dead).sort(), tree.deadExports());
    assert.deepEqual(r.undetermined, []);
    assert.equal(r.totals.exports, 250 * 4);
    const again = await call<Dead>(session, "code_dead_exports", { limit: 100000 });
    assert.equal(again.graph.cached, true);
  });
});
