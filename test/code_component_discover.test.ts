// component_discover over a small monorepo (test/fixtures/code/component.txtar),
// driven over MCP; the expected counts are worked out by hand from the fixture.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { runtimeName } from "./helpers.ts";
import { call, callError, type Fixture, openFixture } from "./fixtures/code/harness.ts";

interface Component {
  root: string;
  path: string;
  files: { total: number; production: number; test: number; other: number };
  lines: { total: number; production: number; test: number };
  languages: { language: string; files: number; lines: number; testFiles: number; testLines: number }[];
  packages: {
    manifest: string;
    kind: string;
    name?: string;
    version?: string;
    private?: boolean;
    workspace: boolean;
    entryPoints: string[];
  }[];
  workspaces: string[];
  entryPoints: { file: string; from: string }[];
  debt: { total: number; production: number; test: number; byTag: Record<string, number>; filesWithMarkers: number };
  skipped: { binary: number; tooLarge: number; unreadable: number };
}

describe(`component_discover (${runtimeName})`, () => {
  let fixture: Fixture;
  before(async () => {
    fixture = await openFixture("component");
    writeFileSync(path.join(fixture.dir, "docs", "blob.ts"), new Uint8Array([0x2f, 0x2f, 0, 1, 2]));
  });
  after(async () => {
    await fixture.close();
  });
  const discover = (args: Record<string, unknown> = {}) => call<Component>(fixture.session, "component_discover", args);

  it("counts files and lines by production and test, and by language, honouring .gitignore", async () => {
    const c = await discover();
    // 22 files besides build/ (ignored): 14 production, 4 test (index.test.ts, fixtures/sample.json,
    // main_test.go, test_tool.py), 4 other: no counted language (.gitignore, go.mod, logo.svg) or binary (blob.ts).
    assert.deepEqual(c.files, { total: 22, production: 14, test: 4, other: 4 });
    assert.deepEqual(c.skipped, { binary: 1, tooLarge: 0, unreadable: 0 });
    assert.deepEqual(c.lines, { total: 38, production: 31, test: 7 });
    assert.deepEqual(c.languages.map((l) => [l.language, l.files, l.lines, l.testFiles, l.testLines]), [
      ["TypeScript", 2, 8, 1, 3],
      ["TOML", 2, 7, 0, 0],
      ["JSON", 4, 4, 1, 1],
      ["JavaScript", 2, 4, 0, 0],
      ["Python", 2, 4, 1, 2],
      ["Go", 2, 3, 1, 1],
      ["Rust", 1, 3, 0, 0],
      ["CSS", 1, 2, 0, 0],
      ["Markdown", 1, 2, 0, 0],
      ["TSX", 1, 1, 0, 0],
    ]);
  });

  it("lists packages of every ecosystem with workspace membership and the entry points they name", async () => {
    const c = await discover();
    assert.deepEqual(c.workspaces, ["packages/*"]);
    assert.deepEqual(c.packages.map((p) => [p.manifest, p.kind, p.name, p.version, p.workspace, p.entryPoints]), [
      ["crates/tool/Cargo.toml", "cargo", "tool", "0.3.0", false, ["crates/tool/src/main.rs"]],
      ["package.json", "npm", "mono", undefined, false, ["index.js"]],
      [
        "packages/core/package.json",
        "npm",
        "@mono/core",
        "2.1.0",
        true,
        ["packages/core/bin/core.mjs", "packages/core/src/index.ts"],
      ],
      ["packages/web/package.json", "npm", "@mono/web", "0.1.0", true, []],
      ["py/pyproject.toml", "python", "py-tool", "1.0.0", false, []],
      ["services/api/go.mod", "go", "example.com/api", undefined, false, ["services/api/main.go"]],
    ]);
    assert.deepEqual(c.entryPoints, [
      { file: "crates/tool/src/main.rs", from: "crates/tool/Cargo.toml" },
      { file: "index.js", from: "package.json" },
      { file: "packages/core/bin/core.mjs", from: "packages/core/package.json" },
      { file: "packages/core/src/index.ts", from: "packages/core/package.json" },
      { file: "services/api/main.go", from: "services/api/go.mod" },
    ]);
  });

  it("counts debt markers with tech_debt_check's scanner, split by production and test", async () => {
    const c = await discover();
    assert.deepEqual(c.debt, {
      total: 6,
      production: 5,
      test: 1,
      byTag: { TODO: 3, FIXME: 1, HACK: 1, XXX: 0, STUB: 1 },
      filesWithMarkers: 6,
    });
  });

  it("describes a sub-directory on its own, paths staying relative to the root", async () => {
    const c = await discover({ path: "packages/core" });
    assert.equal(c.path, "packages/core");
    assert.deepEqual(c.files, { total: 5, production: 3, test: 2, other: 0 });
    assert.deepEqual(c.packages.map((p) => [p.manifest, p.workspace, p.entryPoints]), [
      ["packages/core/package.json", false, ["packages/core/bin/core.mjs", "packages/core/src/index.ts"]],
    ]);
    assert.deepEqual(c.debt.byTag, { TODO: 1, FIXME: 1, HACK: 0, XXX: 0, STUB: 0 });
  });

  it("refuses a path that is not a directory of the root, by argument name", async () => {
    assert.equal(
      await callError(fixture.session, "component_discover", { path: "nope" }),
      'Invalid argument "path": "nope" is not a directory in root "default"; pass a directory relative to the root',
    );
    assert.equal(
      await callError(fixture.session, "component_discover", { path: "index.js" }),
      'Invalid argument "path": "index.js" is a file; pass a directory',
    );
    assert.equal(
      await callError(fixture.session, "component_discover", { path: "../x" }),
      'Path refused in root "default": "../x" leads outside the root; remove the `..` segments',
    );
  });
});
