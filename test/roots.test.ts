// ctx.fs confinement: reads, lists and globs stay inside the configured roots,
// whatever path a tool is handed. Driven through a fixture tool over MCP.
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, fixtureToolsDir, runtimeName, type Session, tempDir, textOf } from "./helpers.ts";

describe(`root confinement (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let rootDir: string;
  let docsDir: string;
  before(async () => {
    work = tempDir();
    rootDir = path.join(work.dir, "project");
    docsDir = path.join(work.dir, "docs");
    mkdirSync(path.join(rootDir, "src", "nested"), { recursive: true });
    mkdirSync(docsDir);
    writeFileSync(path.join(work.dir, "secret.txt"), "top secret\n");
    writeFileSync(path.join(rootDir, "src", "a.ts"), "export const a = 1;\n");
    writeFileSync(path.join(rootDir, "src", "nested", "b.ts"), "export const b = 2;\n");
    writeFileSync(path.join(rootDir, ".gitignore"), "ignored.ts\n");
    writeFileSync(path.join(rootDir, "src", "ignored.ts"), "// ignored\n");
    writeFileSync(path.join(docsDir, "guide.md"), "# Guide\n");
    symlinkSync(path.join(work.dir, "secret.txt"), path.join(rootDir, "src", "escape.ts"));
    symlinkSync(work.dir, path.join(rootDir, "up"));
    symlinkSync(path.join(rootDir, "src", "a.ts"), path.join(rootDir, "src", "alias.ts"));
    session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
      args: ["--root", `app=${rootDir}`, "--root", `docs=${docsDir}`],
    });
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  const call = (args: Record<string, unknown>) => session.client.callTool({ name: "fixture_fs", arguments: args });

  it("reads inside a root, by relative path and by absolute path inside it", async () => {
    assert.equal(textOf(await call({ op: "read", path: "src/a.ts" })), "export const a = 1;\n");
    assert.equal(textOf(await call({ op: "read", path: path.join(rootDir, "src/a.ts") })), "export const a = 1;\n");
    assert.equal(textOf(await call({ op: "read", root: "docs", path: "guide.md" })), "# Guide\n");
    assert.equal(textOf(await call({ op: "read", path: "src/nested/../a.ts" })), "export const a = 1;\n");
    assert.equal(
      textOf(await call({ op: "read", path: "src/alias.ts" })),
      "export const a = 1;\n",
      "a symlink inside the root is fine",
    );
  });

  const refusals: { title: string; args: Record<string, unknown>; message: RegExp; code: string }[] = [
    {
      title: "a .. escape",
      args: { op: "read", path: "../secret.txt" },
      message: /^Path refused in root "app": "\.\.\/secret\.txt" leads outside the root; remove the `\.\.` segments$/,
      code: "path_refused",
    },
    {
      title: "an absolute path outside",
      args: { op: "read", path: "/etc/passwd" },
      message: /^Path refused in root "app": an absolute path outside the root; pass a path relative to the root$/,
      code: "path_refused",
    },
    {
      title: "a symlinked file pointing outside",
      args: { op: "read", path: "src/escape.ts" },
      message: /^Path refused in root "app": "src\/escape\.ts" is a symlink that resolves outside the root/,
      code: "path_refused",
    },
    {
      title: "a symlinked directory pointing outside",
      args: { op: "read", path: "up/secret.txt" },
      message: /resolves outside the root/,
      code: "path_refused",
    },
    {
      title: "a listing through a symlinked directory",
      args: { op: "list", path: "up" },
      message: /resolves outside the root/,
      code: "path_refused",
    },
    {
      title: "a NUL byte",
      args: { op: "read", path: "src/a.ts\u0000.png" },
      message: /contains a NUL byte/,
      code: "path_refused",
    },
    {
      title: "an unknown root",
      args: { op: "read", root: "home", path: "x" },
      message: /^Unknown root: received "home"; use one of: app, docs$/,
      code: "unknown_root",
    },
    {
      title: "a glob that climbs out",
      args: { op: "glob", path: "../**/*.txt" },
      message: /^Glob pattern refused: "\.\.\/\*\*\/\*\.txt" could leave the root/,
      code: "path_refused",
    },
    {
      title: "an absolute glob",
      args: { op: "glob", path: "/etc/*" },
      message: /^Glob pattern refused/,
      code: "path_refused",
    },
    {
      title: "a missing file",
      args: { op: "read", path: "src/none.ts" },
      message: /^Not found in root "app": "src\/none\.ts"$/,
      code: "not_found",
    },
  ];
  for (const { title, args, message, code } of refusals) {
    it(`refuses ${title}`, async () => {
      const result = await call(args);
      assert.equal(result.isError, true);
      const text = textOf(result);
      assert.match(text, message);
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], code);
      assert.ok(!text.includes(work.dir), `no host path in ${JSON.stringify(text)}`);
      assert.ok(!text.includes("top secret"));
    });
  }

  it("globs relative to the root, honours .gitignore, drops symlinks that lead out", async () => {
    const files = JSON.parse(textOf(await call({ op: "glob", path: "**/*.ts" })));
    assert.deepEqual(files, ["src/a.ts", "src/alias.ts", "src/nested/b.ts"]);
  });

  it("lists a directory with kinds, sorted, and stats with root-relative paths", async () => {
    assert.deepEqual(JSON.parse(textOf(await call({ op: "list", path: "src" }))), [
      { name: "a.ts", kind: "file" },
      { name: "alias.ts", kind: "symlink" },
      { name: "escape.ts", kind: "symlink" },
      { name: "ignored.ts", kind: "file" },
      { name: "nested", kind: "directory" },
    ]);
    assert.deepEqual(JSON.parse(textOf(await call({ op: "stat", path: path.join(rootDir, "src/nested") }))), {
      path: "src/nested",
      kind: "directory",
      size: JSON.parse(textOf(await call({ op: "stat", path: "src/nested" }))).size,
    });
  });

  it("stats many paths at once as stat does one by one, null where stat refuses", async () => {
    // A symlinked directory inside the root, and one leading out (up/): the batch must take the slow way for both.
    symlinkSync(path.join(rootDir, "src", "nested"), path.join(rootDir, "src", "inner-link"));
    const paths = [
      "src/a.ts",
      "src/alias.ts",
      "src/escape.ts",
      "up/secret.txt",
      "../secret.txt",
      "src/none.ts",
      "src/a.ts/x",
      "src/nested",
      "src/inner-link/b.ts",
      "src/nested/../a.ts",
      "src//nested/b.ts",
      path.join(rootDir, "src/a.ts"),
      "/etc/passwd",
      ".",
      "nul\0.ts",
    ];
    const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths })));
    assert.equal(batch.length, paths.length);
    for (const [i, p] of paths.entries()) {
      const one = await call({ op: "stat", path: p });
      const expected = one.isError ? null : JSON.parse(textOf(one));
      const got = batch[i] && { path: batch[i].path, kind: batch[i].kind, size: batch[i].size };
      assert.deepEqual(got, expected, `stats and stat disagree on ${JSON.stringify(p)}`);
    }
    assert.deepEqual(batch.map((b: { kind: string } | null) => b?.kind ?? null), [
      "file",
      "file",
      null,
      null,
      null,
      null,
      null,
      "directory",
      "file",
      "file",
      "file",
      "file",
      null,
      "directory",
      null,
    ]);
    assert.ok(batch.every((b: { mtimeMs: number } | null) => b === null || b.mtimeMs > 0));
  });

  it("stats thousands of paths at once (two threads) as it does a few", async () => {
    // Above lstat_many.ts's PARALLEL_FROM (1,024), a helper thread takes part of the list; the odd paths among the
    // plain ones (a symlink, a missing file, one leading out, one through a symlinked directory) must still go the
    // slow way, wherever they fall in the chunks.
    mkdirSync(path.join(rootDir, "many"), { recursive: true });
    const plain = Array.from({ length: 1500 }, (_, i) => `many/f${i}.txt`);
    for (const [i, file] of plain.entries()) writeFileSync(path.join(rootDir, file), "x".repeat(i % 97));
    const odd = ["src/alias.ts", "src/none.ts", "../secret.txt", "src/inner-link/b.ts", "src/escape.ts", "many"];
    const paths = [...plain];
    for (const [k, p] of odd.entries()) paths.splice(k * 251, 0, p);
    const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths })));
    assert.equal(batch.length, paths.length);
    for (const [i, p] of paths.entries()) {
      if (!plain.includes(p)) continue;
      const n = Number(p.slice("many/f".length, -".txt".length));
      const info = lstatSync(path.join(rootDir, p));
      assert.deepEqual(batch[i], { path: p, kind: "file", size: n % 97, mtimeMs: info.mtimeMs }, p);
    }
    for (const p of odd) {
      const one = await call({ op: "stat", path: p });
      const expected = one.isError ? null : JSON.parse(textOf(one));
      const got = batch[paths.indexOf(p)];
      assert.deepEqual(got && { path: got.path, kind: got.kind, size: got.size }, expected, p);
    }
    assert.deepEqual(
      odd.map((p) => batch[paths.indexOf(p)]?.kind ?? null),
      ["file", null, null, "file", null, "directory"],
    );
  });

  it("answers batch after batch with what is on disk now, for the list the helper holds and for new ones", async () => {
    // The helper keeps a list and its arrays from batch to batch and is woken for the next: each answer must still be
    // the files as they are when it is asked, whether the list is the same, another, or the same again.
    mkdirSync(path.join(rootDir, "batches"), { recursive: true });
    const files = Array.from({ length: 1300 }, (_, i) => `batches/f${i}.txt`);
    const sizes = files.map((_, i) => i % 50);
    for (const [i, file] of files.entries()) writeFileSync(path.join(rootDir, file), "x".repeat(sizes[i]));
    const lists = [files, [...files].reverse(), files.slice(0, 1200)];
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    for (let round = 0; round < 24; round++) {
      for (let k = 0; k < 40; k++) {
        const i = random(files.length);
        sizes[i] = random(200);
        writeFileSync(path.join(rootDir, files[i]), "y".repeat(sizes[i]));
      }
      const list = lists[round % 5 < 3 ? 0 : random(lists.length)];
      const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths: list })));
      assert.deepEqual(
        batch.map((info: { size: number }) => info.size),
        list.map((file) => sizes[files.indexOf(file)]),
        `round ${round}`,
      );
    }
  });

  it("checks again the directories a list stat'ed before relies on", async () => {
    // The same list twice: the second time, a directory it went through is a symlink that leads out of the root, and
    // one that was a symlink is a plain directory again. Each time, stats answers as stat does one by one.
    mkdirSync(path.join(rootDir, "again", "sub"), { recursive: true });
    mkdirSync(path.join(work.dir, "elsewhere"), { recursive: true });
    const names = Array.from({ length: 1100 }, (_, i) => `f${i}.txt`);
    for (const name of names) {
      writeFileSync(path.join(rootDir, "again", "sub", name), "in");
      writeFileSync(path.join(work.dir, "elsewhere", name), "out!");
    }
    symlinkSync(path.join(rootDir, "again", "sub"), path.join(rootDir, "again", "link"));
    const paths = [...names.map((n) => `again/sub/${n}`), "again/link/f1.txt", "again/sub"];
    const asStatSays = async () => {
      const expected = [];
      for (const p of [paths[0], paths[1099], ...paths.slice(1100)]) {
        const one = await call({ op: "stat", path: p });
        expected.push(one.isError ? null : JSON.parse(textOf(one)).kind);
      }
      return expected;
    };
    const kinds = async () => {
      const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths })));
      return [batch[0], batch[1099], ...batch.slice(1100)].map((b: { kind: string } | null) => b?.kind ?? null);
    };
    assert.deepEqual(await kinds(), ["file", "file", "file", "directory"]);
    assert.deepEqual(await kinds(), await asStatSays());

    renameSync(path.join(rootDir, "again", "sub"), path.join(rootDir, "again", "moved"));
    symlinkSync(path.join(work.dir, "elsewhere"), path.join(rootDir, "again", "sub"));
    rmSync(path.join(rootDir, "again", "link"));
    mkdirSync(path.join(rootDir, "again", "link"));
    writeFileSync(path.join(rootDir, "again", "link", "f1.txt"), "plain");
    assert.deepEqual(await kinds(), [null, null, "file", null]);
    assert.deepEqual(await kinds(), await asStatSays());
  });

  it("refuses to start with a root that does not exist, naming it", async () => {
    const { runWarden } = await import("./helpers.ts");
    const result = await runWarden(["tools", "--root", `gone=${path.join(work.dir, "gone")}`]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^warden: Invalid root "gone": ".*gone" does not exist; pass --root gone=<an existing directory>\n$/,
    );
  });
});
