// tech_debt_check over a tree with every kind of marker, and the places a
// marker must not be counted, driven over MCP as an agent would.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, runtimeName, type Session, tempDir } from "./helpers.ts";
import { materialize } from "./fixtures/code/harness.ts";

const APP_TS = [
  "// TODO: wire the cache", // 1
  "const x = 1; // FIXME(bob): off by one", // 2
  "/**", // 3
  " * HACK: works around a bug", // 4
  " * XXX this is fragile", // 5
  " */", // 6
  'const TODO_LIST = ["TODO", "FIXME in a string"]; // TODOS is not a tag', // 7
  'function f() { throw new Error("not implemented yet"); }', // 8
  "/* todo: lowercase */ const y = 2;", // 9
  "const url = 'http://example.com'; // STUB: fake endpoint", // 10
].join("\n");

type Finding = { file: string; line: number; column: number; tag: string; text: string };
type Report = {
  project_id: string;
  path: string;
  findings: Finding[];
  totals: Record<string, number>;
  totalFindings: number;
  truncated: boolean;
  filesScanned: number;
  filesWithFindings: number;
  skipped: { binary: number; tooLarge: number; unreadable: number; unknownType: number };
};

describe(`tech_debt_check (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  before(async () => {
    work = tempDir();
    const root = work.dir;
    mkdirSync(path.join(root, "src"), { recursive: true });
    mkdirSync(path.join(root, "scripts"));
    mkdirSync(path.join(root, "node_modules", "dep"), { recursive: true });
    writeFileSync(path.join(root, "src", "app.ts"), APP_TS + "\n");
    writeFileSync(path.join(root, "README.md"), "# Project\n\n- TODO: write the docs\n");
    writeFileSync(
      path.join(root, "scripts", "run.py"),
      "# TODO python comment\nx = '# TODO not a comment'\nraise NotImplementedError\n",
    );
    writeFileSync(path.join(root, ".gitignore"), "generated.ts\n");
    writeFileSync(path.join(root, "src", "generated.ts"), "// TODO: ignored by git\n");
    writeFileSync(path.join(root, "node_modules", "dep", "index.js"), "// TODO: not ours\n");
    writeFileSync(path.join(root, "src", "blob.ts"), new Uint8Array([84, 79, 68, 79, 0, 1, 2, 3]));
    writeFileSync(path.join(root, "src", "big.ts"), "// TODO: too big\n" + "x".repeat(5000));
    writeFileSync(path.join(root, "data.bin"), "TODO");
    session = await connect({ args: ["--root", `default=${root}`] });
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  async function check(args: Record<string, unknown>): Promise<Report> {
    const result = await session.client.callTool({ name: "tech_debt_check", arguments: args });
    assert.equal(result.isError, undefined, JSON.stringify(result.content));
    return result.structuredContent as Report;
  }

  it("finds markers in comments, JSDoc, trailing comments, prose and stub code, and nowhere else", async () => {
    const report = await check({ maxFileBytes: 1000 });
    assert.deepEqual(report.findings, [
      { file: "README.md", line: 3, column: 3, tag: "TODO", text: "TODO: write the docs" },
      { file: "scripts/run.py", line: 1, column: 3, tag: "TODO", text: "TODO python comment" },
      { file: "scripts/run.py", line: 3, column: 1, tag: "STUB", text: "raise NotImplementedError" },
      { file: "src/app.ts", line: 1, column: 4, tag: "TODO", text: "TODO: wire the cache" },
      { file: "src/app.ts", line: 2, column: 17, tag: "FIXME", text: "FIXME(bob): off by one" },
      { file: "src/app.ts", line: 4, column: 4, tag: "HACK", text: "HACK: works around a bug" },
      { file: "src/app.ts", line: 5, column: 4, tag: "XXX", text: "XXX this is fragile" },
      { file: "src/app.ts", line: 8, column: 16, tag: "STUB", text: 'throw new Error("not implemented yet"); }' },
      { file: "src/app.ts", line: 10, column: 38, tag: "STUB", text: "STUB: fake endpoint" },
    ]);
    assert.deepEqual(report.totals, { TODO: 3, FIXME: 1, HACK: 1, XXX: 1, STUB: 3 });
    assert.equal(report.totalFindings, 9);
    assert.equal(report.truncated, false);
    assert.equal(report.filesWithFindings, 3);
    assert.deepEqual(report.skipped, { binary: 1, tooLarge: 1, unreadable: 0, unknownType: 1 });
    assert.equal(report.filesScanned, 3);
    assert.equal(report.project_id, "default");
    assert.equal(report.path, ".");
  });

  it("matches case-insensitively when asked", async () => {
    const report = await check({ caseSensitive: false, tags: ["TODO"], glob: "src/app.ts" });
    assert.deepEqual(report.findings.map((f) => [f.line, f.tag, f.text]), [
      [1, "TODO", "TODO: wire the cache"],
      [9, "TODO", "todo: lowercase"],
    ]);
  });

  it("limits the findings and says so honestly", async () => {
    const report = await check({ limit: 2, maxFileBytes: 1000 });
    assert.equal(report.findings.length, 2);
    assert.equal(report.totalFindings, 9);
    assert.equal(report.truncated, true);
  });

  it("narrows to a sub-path and a glob, paths staying relative to the root", async () => {
    const report = await check({ path: "src", glob: "**/*.ts", tags: ["FIXME"], maxFileBytes: 1000 });
    assert.equal(report.path, "src");
    assert.deepEqual(report.findings.map((f) => f.file), ["src/app.ts"]);
    assert.equal(report.filesScanned, 1);
  });

  it("refuses a path that is not a directory, and a bad limit, by name", async () => {
    const notDir = await session.client.callTool({ name: "tech_debt_check", arguments: { path: "README.md" } });
    assert.equal(notDir.isError, true);
    assert.match((notDir.content as { text: string }[])[0].text, /^Not a directory in root "default": "README.md"/);
    const badLimit = await session.client.callTool({ name: "tech_debt_check", arguments: { limit: 0 } });
    assert.equal(badLimit.isError, true);
    assert.equal(
      (badLimit.content as { text: string }[])[0].text,
      'Invalid argument "limit": expected >=1 but received 0',
    );
  });
});

describe(`tech_debt_check in an ignored directory of an enclosing repository (${runtimeName})`, () => {
  it("reads only the .gitignore files inside the root", async () => {
    const work = tempDir();
    try {
      mkdirSync(path.join(work.dir, ".git"));
      writeFileSync(path.join(work.dir, ".gitignore"), "vendor/\n");
      mkdirSync(path.join(work.dir, "vendor", "lib"), { recursive: true });
      writeFileSync(path.join(work.dir, "vendor", "lib", "a.ts"), "// TODO: vendored debt\n");
      const session = await connect({ args: ["--root", `default=${path.join(work.dir, "vendor")}`] });
      try {
        const result = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
        const report = result.structuredContent as Report;
        assert.equal(report.filesScanned, 1);
        assert.deepEqual(report.findings.map((f) => f.file), ["lib/a.ts"]);
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});

describe(`tech_debt_check: where a tag is a marker (${runtimeName})`, () => {
  it("counts tags that open a comment's text or are written as TODO: or FIXME(who), not tags in quotes or sentences", async () => {
    const work = materialize("debt_markers");
    try {
      const session = await connect({ args: ["--root", `default=${work.dir}`] });
      try {
        const result = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
        assert.equal(result.isError, undefined, JSON.stringify(result.content));
        const report = result.structuredContent as Report;
        assert.deepEqual(report.findings.map((f) => [f.file, f.line, f.column, f.tag, f.text]), [
          ["docs/NOTES.md", 3, 3, "TODO", "TODO: write the docs"],
          ["docs/NOTES.md", 4, 7, "FIXME", "FIXME the flaky test"],
          ["docs/NOTES.md", 5, 4, "HACK", "HACK: numbered"],
          ["docs/NOTES.md", 6, 3, "XXX", "XXX in a block quote"],
          ["src/legacy.py", 1, 3, "TODO", "TODO python tag"],
          ["src/tags.ts", 1, 4, "TODO", "TODO: a tag opens a line comment"],
          ["src/tags.ts", 2, 17, "FIXME", "FIXME(bob): a trailing comment"],
          ["src/tags.ts", 4, 4, "HACK", "HACK: a tag opens a JSDoc line"],
          ["src/tags.ts", 5, 4, "XXX", "XXX this is fragile"],
          ["src/tags.ts", 7, 4, "TODO", "TODO"],
          ["src/tags.ts", 8, 15, "TODO", "TODO: a tag in tag syntax mid-comment"],
          ["src/tags.ts", 9, 21, "FIXME", "FIXME(ada) remove once typed"],
          ["src/tags.ts", 10, 3, "XXX", "XXX"],
        ]);
        assert.deepEqual(report.totals, { TODO: 5, FIXME: 3, HACK: 2, XXX: 3, STUB: 0 });
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});
