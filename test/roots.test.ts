// ctx.fs confinement: reads, lists and globs stay inside the configured roots,
// whatever path a tool is handed. Driven through a fixture tool over MCP.
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, fixtureToolsDir, mkfifo, runtimeName, type Session, tempDir, textOf } from "./helpers.ts";

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
    symlinkSync("self-loop", path.join(rootDir, "self-loop"));
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
      message:
        /^Path refused in root "app": "src\/escape\.ts" leads outside the root through a symlink; only files inside the root can be read$/,
      code: "path_refused",
    },
    {
      title: "a symlinked directory pointing outside",
      args: { op: "read", path: "up/secret.txt" },
      message: /^Path refused in root "app": "up\/secret\.txt" leads outside the root through a symlink;/,
      code: "path_refused",
    },
    {
      title: "a listing through a symlinked directory",
      args: { op: "list", path: "up" },
      message: /^Path refused in root "app": "up" leads outside the root through a symlink;/,
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
    {
      title: "a symlink loop, by its name, not the host's path the runtime's error holds",
      args: { op: "read", path: "self-loop" },
      message: /^Path refused in root "app": "self-loop" leads into a loop of symbolic links$/,
      code: "path_refused",
    },
    {
      title: "a name too long to resolve, by what failed",
      args: { op: "read", path: "n".repeat(300) },
      message: /^Path refused in root "app": "n+\.\.\. cannot be resolved \(ENAMETOOLONG\)$/,
      code: "path_refused",
    },
    // Paths at the edges of the plain-path shortcut, which must take the full checks.
    {
      title: "/ itself",
      args: { op: "list", path: "/" },
      message: /^Path refused in root "app": an absolute path outside the root; pass a path relative to the root$/,
      code: "path_refused",
    },
    {
      title: "a bare ..",
      args: { op: "list", path: ".." },
      message: /^Path refused in root "app": "\.\." leads outside the root; remove the `\.\.` segments$/,
      code: "path_refused",
    },
    {
      title: "a NUL alone",
      args: { op: "read", path: "\u0000" },
      message: /contains a NUL byte/,
      code: "path_refused",
    },
    {
      title: "a NUL as a later segment",
      args: { op: "read", path: "src/\u0000" },
      message: /contains a NUL byte/,
      code: "path_refused",
    },
    {
      title: "a path under a file",
      args: { op: "read", path: "src/a.ts/more" },
      message: /^Not found in root "app": "src\/a\.ts\/more"$/,
      code: "not_found",
    },
    {
      title: "a read of a directory",
      args: { op: "read", path: "src/nested" },
      message: /^Not a file in root "app": "src\/nested"$/,
      code: "not_found",
    },
    {
      title: "a list of a file",
      args: { op: "list", path: "src/a.ts" },
      message: /^Not a directory in root "app": "src\/a\.ts"$/,
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

  it("stats each list afresh: the same list on another root, a longer list, a list sharing only its start", async () => {
    const stats = async (root: string, paths: string[]) =>
      (JSON.parse(textOf(await call({ op: "stats", root, path: ".", paths }))) as ({ path: string } | null)[])
        .map((info) => info?.path ?? null);
    const both = ["src/a.ts", "guide.md"];
    assert.deepEqual(await stats("app", both), ["src/a.ts", null]);
    assert.deepEqual(await stats("docs", both), [null, "guide.md"], "the other root's files, not the last plan's");
    assert.deepEqual(await stats("app", ["src/a.ts"]), ["src/a.ts"]);
    assert.deepEqual(await stats("app", ["src/a.ts", "src/nested/b.ts"]), ["src/a.ts", "src/nested/b.ts"]);
    assert.deepEqual(await stats("app", ["src/a.ts", "src/nested/none.ts"]), ["src/a.ts", null]);
    // A directory the last plan relied on, removed: the same list again is stat'ed afresh, not refused.
    mkdirSync(path.join(rootDir, "gone"));
    writeFileSync(path.join(rootDir, "gone", "x.ts"), "");
    assert.deepEqual(await stats("app", ["gone/x.ts", "src/a.ts"]), ["gone/x.ts", "src/a.ts"]);
    rmSync(path.join(rootDir, "gone"), { recursive: true });
    assert.deepEqual(await stats("app", ["gone/x.ts", "src/a.ts"]), [null, "src/a.ts"]);
  });

  it("names a path in its normal form, whatever form it was given in", async () => {
    for (const given of ["./src/a.ts", "src/./a.ts", "src/nested/../a.ts", "src//a.ts"]) {
      assert.equal(JSON.parse(textOf(await call({ op: "stat", path: given }))).path, "src/a.ts", given);
    }
    for (const given of [".", "./", "src/.."]) {
      assert.equal(JSON.parse(textOf(await call({ op: "stat", path: given }))).path, ".", given);
    }
  });

  it("stats null for a path under a directory that does not exist, or whose name is too long to exist", async () => {
    const paths = ["src/a.ts", "nodir/x.ts", `${"n".repeat(300)}/x.ts`];
    const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths })));
    assert.deepEqual([batch[0]?.path, batch[1], batch[2]], ["src/a.ts", null, null]);
  });

  it("globs relative to the root, honours .gitignore, drops symlinks that lead out or nowhere", async () => {
    const dangling = path.join(rootDir, "src", "gone.ts");
    symlinkSync(path.join(rootDir, "src", "never-there.ts"), dangling);
    try {
      const files = JSON.parse(textOf(await call({ op: "glob", path: "**/*.ts" })));
      assert.deepEqual(files, ["src/a.ts", "src/alias.ts", "src/nested/b.ts"]);
    } finally {
      rmSync(dangling);
    }
  });

  it("globs with its options: dot files, .gitignore off, ignore patterns from a cwd, several patterns with a negation", async () => {
    mkdirSync(path.join(rootDir, "dots", ".hidden"), { recursive: true });
    mkdirSync(path.join(rootDir, "dots", ".git"), { recursive: true });
    writeFileSync(path.join(rootDir, "dots", ".env.ts"), "");
    writeFileSync(path.join(rootDir, "dots", ".hidden", "h.ts"), "");
    writeFileSync(path.join(rootDir, "dots", ".git", "config.ts"), "");
    writeFileSync(path.join(rootDir, "dots", "seen.ts"), "");
    const glob = async (args: Record<string, unknown>) => JSON.parse(textOf(await call({ op: "glob", ...args })));
    assert.deepEqual(await glob({ path: "dots/**" }), ["dots/seen.ts"]);
    // .git is never globbed, dot or not.
    assert.deepEqual(await glob({ path: "dots/**", dot: true }), ["dots/.env.ts", "dots/.hidden/h.ts", "dots/seen.ts"]);
    assert.deepEqual(await glob({ path: "src/**/*.ts", gitignore: false }), [
      "src/a.ts",
      "src/alias.ts",
      "src/ignored.ts",
      "src/nested/b.ts",
    ]);
    // ignore patterns, like the patterns, are relative to cwd.
    assert.deepEqual(await glob({ path: "**/*.ts", cwd: "src", ignore: ["nested/**"] }), ["src/a.ts", "src/alias.ts"]);
    assert.deepEqual(await glob({ path: "", patterns: ["**/*.ts", "!**/alias.ts"], cwd: "src" }), [
      "src/a.ts",
      "src/nested/b.ts",
    ]);
  });

  it("refuses a glob pattern or an ignore pattern that could leave the root, naming it", async () => {
    for (
      const args of [
        { path: "../*" },
        { path: "src/../../*" },
        { path: "/etc/*" },
        { path: "", patterns: ["src/*.ts", "!../x"] },
        { path: "*.ts", ignore: ["../secret.txt"] },
        { path: "*.ts", ignore: ["/tmp"] },
      ]
    ) {
      const result = await call({ op: "glob", ...args });
      assert.equal(result.isError, true, JSON.stringify(args));
      const bad = args.ignore?.[0] ?? args.patterns?.[1] ?? args.path;
      assert.equal(
        textOf(result),
        `Glob pattern refused: ${
          JSON.stringify(bad)
        } could leave the root; use a pattern relative to the root, without \`..\``,
      );
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "path_refused");
    }
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
    // A FIFO under a plain directory: the fast way's one lstat must say "other", as stat does.
    mkfifo(path.join(rootDir, "src", "nested", "pipe"));
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
      "src/nested/pipe",
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
      "other",
    ]);
    assert.ok(batch.every((b: { mtimeMs: number } | null) => b === null || b.mtimeMs > 0));
    rmSync(path.join(rootDir, "src", "nested", "pipe"));
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

  it("stats a list again after the one directory it went through became a symlink leading out", async () => {
    // The plan of the first call relies on solo/ alone (the root itself needs no check): the second call must see that
    // solo/ is now a symlink, not reuse the plan and lstat through the link to the files outside.
    mkdirSync(path.join(rootDir, "solo"));
    mkdirSync(path.join(work.dir, "solo-out"));
    for (const name of ["a.txt", "b.txt"]) {
      writeFileSync(path.join(rootDir, "solo", name), "in");
      writeFileSync(path.join(work.dir, "solo-out", name), "outside!");
    }
    const paths = ["solo/a.txt", "solo/b.txt"];
    const stats = async () => JSON.parse(textOf(await call({ op: "stats", path: "", paths })));
    assert.deepEqual((await stats()).map((b: { size: number }) => b.size), [2, 2]);
    renameSync(path.join(rootDir, "solo"), path.join(rootDir, "solo-moved"));
    symlinkSync(path.join(work.dir, "solo-out"), path.join(rootDir, "solo"));
    assert.deepEqual(await stats(), [null, null]);
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

  it("stops the server with config_invalid for a root that is missing or a file", async () => {
    const { startRaw } = await import("./helpers.ts");
    for (const given of [path.join(work.dir, "gone"), path.join(work.dir, "secret.txt")]) {
      const raw = startRaw({ args: ["--root", `bad=${given}`] });
      const { code } = await raw.exited();
      const line = JSON.parse(raw.stderr().trim().split("\n")[0]);
      assert.deepEqual([code, line.event, line.code], [2, "startup_failed", "config_invalid"], given);
    }
  });

  it("refuses to start with a root that is a file, naming it", async () => {
    const { runWarden } = await import("./helpers.ts");
    const file = path.join(work.dir, "secret.txt");
    const result = await runWarden(["tools", "--root", `file=${file}`]);
    assert.equal(result.code, 2);
    assert.equal(
      result.stderr,
      `warden: Invalid root "file": ${JSON.stringify(file)} is not a directory; pass --root file=<a directory>\n`,
    );
  });
});

// Names outside a root never come back: not through a symlinked directory that leads out (at the top or deeper), a
// loop, a sibling whose name starts with the root's (`/x/root-evil` beside `/x/root`: a check by string prefix would
// let it in), a `cwd` through a link, a pattern that braces its way up, or an absolute one.
// Decision: glob descends into no symlinked directory, inside the root or out (a link inside could make a loop, and
// would name one file twice); `cwd`, like `list`'s directory, follows a link that stays inside, and the results are
// named by where the files are.
describe(`nothing outside a root is named (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let rootDir: string;
  let evilDir: string;
  /** Every name that exists only outside the root. */
  const outsideNames = ["secret.txt", "deeper.txt", "evil.ts", "evil-deep.ts", "only-beside.ts"];
  before(async () => {
    work = tempDir();
    rootDir = path.join(work.dir, "root");
    evilDir = path.join(work.dir, "root-evil");
    const outside = path.join(work.dir, "outside");
    mkdirSync(path.join(rootDir, "src"), { recursive: true });
    mkdirSync(path.join(rootDir, "deep", "er"), { recursive: true });
    mkdirSync(path.join(outside, "sub"), { recursive: true });
    mkdirSync(path.join(evilDir, "x"), { recursive: true });
    writeFileSync(path.join(rootDir, "src", "a.ts"), "export const a = 1;\n");
    writeFileSync(path.join(rootDir, "deep", "er", "in.ts"), "export const inside = 1;\n");
    writeFileSync(path.join(outside, "secret.txt"), "top secret\n");
    writeFileSync(path.join(outside, "sub", "deeper.txt"), "top secret\n");
    writeFileSync(path.join(evilDir, "evil.ts"), "top secret\n");
    writeFileSync(path.join(evilDir, "x", "evil-deep.ts"), "top secret\n");
    // A sibling named as the root's path and a directory of it joined without a separator: `root` + `src`.
    mkdirSync(path.join(work.dir, "rootsrc"));
    writeFileSync(path.join(work.dir, "rootsrc", "only-beside.ts"), "top secret\n");
    symlinkSync(outside, path.join(rootDir, "dirlink-out"));
    symlinkSync(outside, path.join(rootDir, "deep", "er", "link-out"));
    symlinkSync(rootDir, path.join(rootDir, "loop"));
    symlinkSync(path.join(rootDir, "deep"), path.join(rootDir, "deep", "er", "loop-up"));
    symlinkSync(evilDir, path.join(rootDir, "evil-dir"));
    symlinkSync(path.join(evilDir, "evil.ts"), path.join(rootDir, "evil-file.ts"));
    symlinkSync(path.join(rootDir, "src"), path.join(rootDir, "inlink"));
    session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir }, args: ["--root", `app=${rootDir}`] });
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  const call = (args: Record<string, unknown>) => session.client.callTool({ name: "fixture_fs", arguments: args });
  const noOutsideName = (text: string, what: string) => {
    for (const name of [...outsideNames, work.dir]) assert.ok(!text.includes(name), `${what} named ${name}: ${text}`);
  };

  // null: fast-glob's reading of a brace that expands to `..` is its own; any files inside will do, none outside.
  const globs: { pattern: string; expected: string[] | null }[] = [
    { pattern: "**/*", expected: ["deep/er/in.ts", "src/a.ts"] },
    { pattern: "**", expected: ["deep/er/in.ts", "src/a.ts"] },
    { pattern: "dirlink-out/**", expected: [] },
    { pattern: "dirlink-out/*", expected: [] },
    { pattern: "dirlink-out/secret.txt", expected: [] },
    { pattern: "dirlink-out/sub/deeper.txt", expected: [] },
    { pattern: "*/secret.txt", expected: [] },
    { pattern: "**/secret.txt", expected: [] },
    { pattern: "deep/**", expected: ["deep/er/in.ts"] },
    { pattern: "deep/er/link-out/**", expected: [] },
    { pattern: "deep/er/link-out/sub/*", expected: [] },
    { pattern: "loop/**", expected: [] },
    { pattern: "loop/loop/loop/src/*", expected: [] },
    { pattern: "deep/er/loop-up/er/*", expected: [] },
    { pattern: "evil-dir/**", expected: [] },
    { pattern: "evil-dir/evil.ts", expected: [] },
    { pattern: "evil-dir/x/*", expected: [] },
    { pattern: "*.ts", expected: [] },
    { pattern: "evil-file.ts", expected: [] },
    { pattern: "inlink/**", expected: [] },
    { pattern: "{..,src}/*", expected: null },
    { pattern: "{../root-evil,src}/*", expected: null },
    { pattern: "{../root-evil/x,src}/*.ts", expected: null },
    { pattern: ".{.,}/*/*.ts", expected: null },
    { pattern: "src/{..,.}/dirlink-out/*", expected: [] },
  ];
  for (const { pattern, expected } of globs) {
    it(`glob ${JSON.stringify(pattern)} names only files inside`, async () => {
      const result = await call({ op: "glob", path: pattern });
      const text = textOf(result);
      noOutsideName(text, pattern);
      assert.equal(result.isError, undefined, text);
      const found = JSON.parse(text) as string[];
      if (expected) assert.deepEqual(found, expected);
      else assert.ok(found.every((f) => f === "src/a.ts" || f === "deep/er/in.ts"), text);
    });
  }

  it("stats a path under the root's own directory, never under a sibling named as the root and that directory", async () => {
    const paths = ["src/only-beside.ts", "src/a.ts"];
    for (const round of ["first", "again, from the plan"]) {
      const result = await call({ op: "stats", path: "", paths });
      noOutsideName(textOf(result), round);
      const batch = JSON.parse(textOf(result)) as ({ path: string; kind: string } | null)[];
      assert.deepEqual(batch.map((b) => b && [b.path, b.kind]), [null, ["src/a.ts", "file"]], round);
    }
  });

  it("refuses a glob cwd that leads outside, to the sibling too, and follows one that stays inside", async () => {
    for (const cwd of ["dirlink-out", "deep/er/link-out", "evil-dir", "../root-evil", evilDir, "loop/dirlink-out"]) {
      const result = await call({ op: "glob", path: "**", cwd });
      assert.equal(result.isError, true, cwd);
      assert.match(textOf(result), /^Path refused in root "app": /, cwd);
      noOutsideName(textOf(result), `glob cwd ${cwd}`);
    }
    assert.deepEqual(JSON.parse(textOf(await call({ op: "glob", path: "**", cwd: "inlink" }))), ["src/a.ts"]);
    assert.deepEqual(JSON.parse(textOf(await call({ op: "glob", path: "**", cwd: "loop/deep" }))), ["deep/er/in.ts"]);
  });

  it("refuses absolute patterns and `..`, in the sibling's name too", async () => {
    for (const pattern of [path.join(evilDir, "*"), `${rootDir}/../root-evil/*`, "../root-evil/*", "src/../../*"]) {
      const result = await call({ op: "glob", path: pattern });
      assert.equal(result.isError, true, pattern);
      assert.match(textOf(result), /^Glob pattern refused: .* could leave the root/, pattern);
    }
  });

  const refusedPaths = [
    "../root-evil/evil.ts",
    "evil-file.ts",
    "evil-dir/evil.ts",
    "evil-dir/x",
    "evil-dir",
    "dirlink-out/secret.txt",
    "deep/er/link-out/sub",
    "loop/dirlink-out",
  ];
  for (const op of ["read", "stat", "list"]) {
    it(`${op} refuses the sibling root-evil and links out, by relative, absolute and linked path`, async () => {
      for (const p of [...refusedPaths, path.join(work.dir, "root-evil", "evil.ts"), `${rootDir}-evil/x`]) {
        const result = await call({ op, path: p });
        assert.equal(result.isError, true, `${op} ${p}: ${textOf(result)}`);
        assert.match(textOf(result), /^Path refused in root "app": /, `${op} ${p}`);
        assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "path_refused");
        noOutsideName(textOf(result).replace(JSON.stringify(p), ""), `${op} ${p}`);
      }
    });
  }

  it("stats answers null for every path read and stat refuse", async () => {
    const batch = JSON.parse(textOf(await call({ op: "stats", path: "", paths: refusedPaths })));
    assert.deepEqual(batch, refusedPaths.map(() => null));
  });

  it("lists a link that leads out as a symlink, by its own name only", async () => {
    const names = JSON.parse(textOf(await call({ op: "list", path: "." })));
    assert.deepEqual(names.filter((e: { kind: string }) => e.kind === "symlink").map((e: { name: string }) => e.name), [
      "dirlink-out",
      "evil-dir",
      "evil-file.ts",
      "inlink",
      "loop",
    ]);
    noOutsideName(JSON.stringify(names), "list .");
  });

  it("reads a file whose name starts with two dots, which is inside", async () => {
    writeFileSync(path.join(rootDir, "..a.ts"), "inside\n");
    assert.equal(textOf(await call({ op: "read", path: "..a.ts" })), "inside\n");
    assert.deepEqual(JSON.parse(textOf(await call({ op: "glob", path: "..a.ts" }))), ["..a.ts"]);
  });
});

describe(`built-in tools refuse a path out of the root with the door's one message (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  before(async () => {
    work = tempDir();
    const root = path.join(work.dir, "project");
    const outside = path.join(work.dir, "outside");
    mkdirSync(path.join(root, "src"), { recursive: true });
    mkdirSync(outside);
    writeFileSync(path.join(root, "src", "a.ts"), "export const a = 1;\n");
    writeFileSync(path.join(outside, "out.ts"), "// TODO: outside the root\nexport const o = 1;\n");
    symlinkSync(path.join(outside, "out.ts"), path.join(root, "src", "link.ts"));
    symlinkSync(outside, path.join(root, "up"));
    session = await connect({ args: ["--root", `app=${root}`] });
  });
  after(async () => {
    await session.close();
    work.remove();
  });

  const through = (p: string) =>
    `Path refused in root "app": ${
      JSON.stringify(p)
    } leads outside the root through a symlink; only files inside the root can be read`;
  const dotDot = (p: string) =>
    `Path refused in root "app": ${JSON.stringify(p)} leads outside the root; remove the \`..\` segments`;
  const absolute = 'Path refused in root "app": an absolute path outside the root; pass a path relative to the root';
  // Each tool names a path in its own argument; all of them refuse a way out alike.
  const tools: [string, string][] = [
    ["code_about", "module"],
    ["code_blast_radius", "module"],
    ["code_dead_exports", "path"],
    ["tech_debt_check", "path"],
    ["component_discover", "path"],
  ];
  const cases: [string, string][] = [
    ["src/link.ts", through("src/link.ts")],
    ["up/out.ts", through("up/out.ts")],
    ["up", through("up")],
    ["../outside/out.ts", dotDot("../outside/out.ts")],
    ["src/../..", dotDot("src/../..")],
    ["/etc/passwd", absolute],
  ];
  for (const [tool, argument] of tools) {
    it(`${tool} refuses a symlink, a .. and an absolute path out of the root, word for word`, async () => {
      for (const [input, message] of cases) {
        const result = await session.client.callTool({ name: tool, arguments: { [argument]: input } });
        assert.equal(result.isError, true, `${tool} ${input}`);
        assert.equal(textOf(result), message, `${tool} ${input}`);
        assert.equal(
          (result._meta as Record<string, unknown>)["warden/error_code"],
          "path_refused",
          `${tool} ${input}`,
        );
      }
    });
  }
});

describe(`a plugin's roots, narrowed (${runtimeName})`, () => {
  const work = tempDir();
  let fs: import("../core/doors/roots.ts").RootFs;
  before(async () => {
    const { initPlatform } = await import("../core/platform/mod.ts");
    await initPlatform();
    for (const id of ["app", "docs"]) {
      mkdirSync(path.join(work.dir, id, "sub"), { recursive: true });
      writeFileSync(path.join(work.dir, id, "sub", "f.txt"), id);
    }
    const { openRoots } = await import("../core/doors/roots.ts");
    fs = await openRoots([{ id: "app", path: path.join(work.dir, "app") }, {
      id: "docs",
      path: path.join(work.dir, "docs"),
    }]);
  });
  after(() => work.remove());

  it("serves its declared roots and refuses every other through each method, as a rejection naming what it may read", async () => {
    const { realDirectory, restrictRoots, writableTarget } = await import("../core/doors/roots.ts");
    const narrowed = restrictRoots(fs, ["app", "gone"], 'plugin "p"');
    assert.deepEqual(narrowed.rootIds, ["app"], "only configured roots it declared");
    assert.ok(Object.isFrozen(narrowed));
    const real = (id: string) => path.join(work.dir, id);
    const uses: [string, (root: string) => Promise<unknown>, unknown][] = [
      ["readText", (root) => narrowed.readText(root, "sub/f.txt"), "app"],
      ["readBytes", (root) => narrowed.readBytes(root, "sub/f.txt"), new TextEncoder().encode("app")],
      ["stat", (root) => narrowed.stat(root, "sub/f.txt").then((s) => [s.path, s.kind, s.size]), [
        "sub/f.txt",
        "file",
        3,
      ]],
      ["stats", (root) => narrowed.stats(root, ["sub/f.txt"]).then((s) => s.map((i) => i?.size)), [3]],
      ["list", (root) => narrowed.list(root, "sub"), [{ name: "f.txt", kind: "file" }]],
      ["glob", (root) => narrowed.glob(root, "**/*.txt"), ["sub/f.txt"]],
      ["realDirectory", (root) => realDirectory(narrowed, root, "sub"), path.join(real("app"), "sub")],
      [
        "writableTarget",
        (root) => writableTarget(narrowed, root, "sub/f.txt").then((t) => t.display),
        "sub/f.txt",
      ],
    ];
    for (const [name, use, expected] of uses) {
      assert.deepEqual(await use("app"), expected, name);
      for (const refused of ["docs", "gone", "nope"]) {
        // Called without awaiting first: a refusal is a rejection, never a throw from the call itself.
        const pending = use(refused);
        await assert.rejects(pending, (error: Error & { code?: string }) => {
          assert.equal(error.code, "unknown_root", name);
          assert.equal(error.message, `Unknown root: received "${refused}"; plugin "p" may read: app`, name);
          return true;
        });
      }
    }
    const none = restrictRoots(fs, [], 'plugin "q"');
    assert.deepEqual(none.rootIds, []);
    await assert.rejects(none.readText("app", "sub/f.txt"), {
      message: 'Unknown root: received "app"; plugin "q" declared no configured root',
    });
    assert.equal(restrictRoots(fs, ["*"], 'plugin "r"'), fs, "* is every root: the door itself");
  });
});

describe("isInside", () => {
  it("compares by path segments, never by string prefix", async () => {
    const { isInside } = await import("../core/doors/roots.ts");
    const cases: [string, string, boolean][] = [
      ["/x/root", "/x/root", true],
      ["/x/root", "/x/root/a/b", true],
      ["/x/root", "/x/root/..a", true],
      ["/x/root", "/x/root/...", true],
      ["/x/root", "/x/root-evil", false],
      ["/x/root", "/x/root-evil/a", false],
      ["/x/root", "/x/roo", false],
      ["/x/root", "/x", false],
      ["/x/root", "/x/root/../other", false],
      ["/x/root", "/y/root", false],
      ["/", "/anything/at/all", true],
      ["/x/root/", "/x/root/a", true],
    ];
    for (const [parent, child, inside] of cases) assert.equal(isInside(parent, child), inside, `${child} in ${parent}`);
  });
});

describe(`the file system globby sees: confinedGlobFs alone (${runtimeName})`, () => {
  // The glob's second lock (each result checked inside the root) is behind it, so what this one refuses is tested
  // here, on its own.
  let work: { dir: string; remove: () => void };
  let root: string;
  let fs: Record<string, (...args: unknown[]) => unknown> & {
    promises: Record<string, (p: string) => Promise<unknown>>;
  };
  before(async () => {
    const { initPlatform } = await import("../core/platform/mod.ts");
    await initPlatform();
    work = tempDir();
    root = path.join(work.dir, "root");
    mkdirSync(path.join(root, "dir", "sub"), { recursive: true });
    writeFileSync(path.join(root, "dir", "a.ts"), "a");
    writeFileSync(path.join(root, ".gitignore"), "ignored\n");
    writeFileSync(path.join(work.dir, "outside.txt"), "secret");
    mkdirSync(path.join(work.dir, "outdir"));
    writeFileSync(path.join(work.dir, "outdir", "x.ts"), "x");
    symlinkSync(path.join(work.dir, "outdir"), path.join(root, "linkdir"));
    symlinkSync(path.join(root, "dir"), path.join(root, "insidelink"));
    symlinkSync(path.join(work.dir, "outside.txt"), path.join(root, "dir", ".gitignore"));
    mkfifo(path.join(root, "sub.gitignore"));
    const { confinedGlobFs } = await import("../core/doors/roots.ts");
    fs = confinedGlobFs(realpathSync(root)) as unknown as typeof fs;
  });
  after(() => work.remove());

  const viaCallback = (method: string, ...args: unknown[]) =>
    new Promise<unknown>((resolve, reject) => {
      fs[method](...args, (error: Error | null, value: unknown) => (error ? reject(error) : resolve(value)));
    });
  const notFollowed = (p: string) => (error: unknown) => {
    assert.equal((error as { code?: string }).code, "ENOENT");
    assert.equal((error as Error).message, `ENOENT: not followed: ${p}`);
    return true;
  };
  const kinds = (entry: unknown) => {
    const e = entry as Record<string, () => boolean> & { name: string };
    return [e.name, e.isFile(), e.isDirectory(), e.isSymbolicLink()];
  };

  it("reads a directory reached with no symlink on the way, as names or as entries", async () => {
    const names = (await viaCallback("readdir", "dir")) as string[];
    assert.deepEqual([...names].sort(), [".gitignore", "a.ts", "sub"]);
    const typed = (await viaCallback("readdir", "dir", { withFileTypes: true })) as unknown[];
    assert.deepEqual(typed.map(kinds).sort(), [
      [".gitignore", false, false, true],
      ["a.ts", true, false, false],
      ["sub", false, true, false],
    ]);
    assert.deepEqual(((await viaCallback("readdir", ".", null)) as string[]).sort(), [
      ".gitignore",
      "dir",
      "insidelink",
      "linkdir",
      "sub.gitignore",
    ]);
  });

  it("refuses a directory through a symlink, inside or out, and the root's parent, as ENOENT", async () => {
    for (const dir of ["linkdir", "insidelink", "..", "dir/../..", path.join(work.dir, "outdir")]) {
      await assert.rejects(viaCallback("readdir", dir), notFollowed(dir), dir);
      await assert.rejects(fs.promises.lstat(`${dir}/x.ts`), notFollowed(`${dir}/x.ts`), dir);
    }
  });

  it("looks at an entry without following it: a symlink is a symlink, by lstat and by stat", async () => {
    for (const method of ["lstat", "stat"]) {
      assert.deepEqual(kinds(await viaCallback(method, "linkdir")), ["linkdir", false, false, true], method);
      assert.deepEqual(kinds(await viaCallback(method, "dir/a.ts")), ["a.ts", true, false, false], method);
      assert.deepEqual(kinds(await viaCallback(method, "dir")), ["dir", false, true, false], method);
      assert.deepEqual(kinds(await viaCallback(method, "sub.gitignore")), ["sub.gitignore", false, false, false]);
      await assert.rejects(viaCallback(method, "linkdir/x.ts"), notFollowed("linkdir/x.ts"), method);
    }
    assert.deepEqual(kinds(await fs.promises.stat("linkdir")), ["linkdir", false, false, true]);
  });

  it("reads an ignore file only when it is a regular file inside the root", async () => {
    assert.equal(await fs.promises.readFile(".gitignore"), "ignored\n");
    for (const file of ["dir/.gitignore", "sub.gitignore", "linkdir/.gitignore", "../outside.txt"]) {
      await assert.rejects(fs.promises.readFile(file), notFollowed(file), file);
    }
  });

  it("refuses every synchronous call, which it could not confine", () => {
    for (const method of ["lstatSync", "statSync", "readdirSync"]) {
      assert.throws(() => fs[method]("dir"), { message: "ctx.fs.glob reads the file system asynchronously only" });
    }
  });
});

describe(`a root's doors in process: paths, stats, writableTarget, realDirectory (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let root: string;
  let roots: typeof import("../core/doors/roots.ts");
  let fs: import("../core/doors/roots.ts").RootFs;
  before(async () => {
    const { initPlatform } = await import("../core/platform/mod.ts");
    await initPlatform();
    roots = await import("../core/doors/roots.ts");
    work = tempDir();
    root = path.join(work.dir, "work");
    mkdirSync(path.join(root, "dir"), { recursive: true });
    writeFileSync(path.join(root, "a.txt"), "a");
    writeFileSync(path.join(work.dir, "outside.txt"), "secret");
    symlinkSync(path.join(root, "a.txt"), path.join(root, "link.txt"));
    symlinkSync(path.join(work.dir, "outside.txt"), path.join(root, "out.txt"));
    symlinkSync(work.dir, path.join(root, "up"));
    mkfifo(path.join(root, "pipe"));
    fs = await roots.openRoots([{ id: "work", path: root }, { id: "other", path: work.dir }]);
  });
  after(() => work.remove());

  const refusal = async (promise: Promise<unknown>, code: string, message: string) =>
    await assert.rejects(promise, (error: unknown) => {
      assert.deepEqual({ code: (error as { code?: string }).code, message: (error as Error).message }, {
        code,
        message,
      });
      return true;
    });

  it("names where a write would land: a new or regular file, under a directory inside the root", async () => {
    assert.deepEqual(await roots.writableTarget(fs, "work", "new.txt"), {
      real: path.join(root, "new.txt"),
      display: "new.txt",
    });
    assert.deepEqual(await roots.writableTarget(fs, "work", "dir/new.txt"), {
      real: path.join(root, "dir", "new.txt"),
      display: "dir/new.txt",
    });
    assert.deepEqual(await roots.writableTarget(fs, "work", "./dir/../a.txt"), {
      real: path.join(root, "a.txt"),
      display: "a.txt",
    });
    assert.deepEqual(await roots.writableTarget(fs, "work", path.join(root, "dir", "b.txt")), {
      real: path.join(root, "dir", "b.txt"),
      display: "dir/b.txt",
    });
  });

  it("refuses a write through a symlink, onto what is not a regular file, or to no file at all, naming why", async () => {
    const refused = (what: string) => `Path refused in root "work": ${what}`;
    const cases: [unknown, string, string][] = [
      ["link.txt", "path_refused", refused('"link.txt" is a symlink; warden never writes through one')],
      ["out.txt", "path_refused", refused('"out.txt" is a symlink; warden never writes through one')],
      ["dir", "path_refused", refused('"dir" is not a regular file')],
      ["pipe", "path_refused", refused('"pipe" is not a regular file')],
      ...["", ".", "..", "dir/", "dir/.", "dir/.."].map((file): [string, string, string] => [
        file,
        "path_refused",
        `Invalid path: ${JSON.stringify(file)} does not name a file`,
      ]),
      ["a\0b", "path_refused", 'Invalid path: "a\\u0000b" is not a path without NUL bytes'],
      [7, "path_refused", "Invalid path: 7 is not a path without NUL bytes"],
      [
        "up/outside.txt",
        "path_refused",
        refused('"up" leads outside the root through a symlink; only files inside the root can be read'),
      ],
      ["../outside.txt", "path_refused", refused('".." leads outside the root; remove the `..` segments')],
      ["missing/new.txt", "not_found", 'Not found in root "work": "missing"'],
    ];
    for (const [file, code, message] of cases) {
      await refusal(roots.writableTarget(fs, "work", file as string), code, message);
    }
  });

  it("lists a directory of many names sorted by UTF-16 code units, whatever order the file system gives", async () => {
    const many = path.join(root, "many");
    mkdirSync(many);
    const names = [
      ...Array.from({ length: 40 }, (_, i) => `f${String((i * 17) % 40).padStart(2, "0")}`),
      "B",
      "a",
      "_x",
      "Z9",
      "\u00e9t\u00e9",
      "10",
      "9",
    ];
    for (const name of names) writeFileSync(path.join(many, name), "");
    const listed = (await fs.list("work", "many")).map((entry) => entry.name);
    assert.deepEqual(listed, [...names].sort());
    rmSync(many, { recursive: true });
  });

  it("stats in process as through a tool: null, not undefined, for what is missing or refused", async () => {
    const batch = await fs.stats("work", ["a.txt", "missing.txt", "../outside.txt", "link.txt", "out.txt", "dir/none"]);
    assert.deepEqual(batch.map((info) => info && [info.path, info.kind]), [
      ["a.txt", "file"],
      null,
      null,
      ["link.txt", "file"],
      null,
      null,
    ]);
    assert.equal(batch.filter((info) => info === null).length, 4, "each missing one is null itself");
  });

  it("takes an absolute path by the root as configured and by its real path, and refuses what is no path", async () => {
    // The root configured through a symlink: an absolute path may name it either way, and is shown relative to it.
    const alias = path.join(work.dir, "alias");
    symlinkSync(root, alias);
    const aliased = await roots.openRoots([{ id: "work", path: alias }]);
    for (const given of [path.join(alias, "dir", "..", "a.txt"), path.join(root, "a.txt"), "a.txt", "./a.txt"]) {
      assert.deepEqual((await aliased.stat("work", given)).path, "a.txt", given);
    }
    assert.equal((await aliased.stat("work", alias)).path, ".");
    for (const outside of [work.dir, path.join(work.dir, "outside.txt"), `${alias}-evil/a.txt`, `${root}-evil`]) {
      await refusal(
        aliased.stat("work", outside),
        "path_refused",
        'Path refused in root "work": an absolute path outside the root; pass a path relative to the root',
      );
    }
    for (const bad of [42, null, undefined, { path: "a.txt" }]) {
      await refusal(
        fs.readText("work", bad as unknown as string),
        "path_refused",
        `Invalid path: expected a string, received ${bad === undefined ? "undefined" : JSON.stringify(bad)}`,
      );
    }
    await refusal(fs.stat("work", "dir/\0"), "path_refused", 'Invalid path: "dir/\\u0000" contains a NUL byte');
    await refusal(
      fs.stat("nowhere", "a.txt"),
      "unknown_root",
      'Unknown root: received "nowhere"; use one of: work, other',
    );
    await refusal(
      fs.stat(7 as unknown as string, "a.txt"),
      "unknown_root",
      "Unknown root: received 7; use one of: work, other",
    );
  });

  it("gives the real path of a directory, and refuses a file, a way out, and a RootFs it did not make", async () => {
    assert.equal(await roots.realDirectory(fs, "work", "."), root);
    assert.equal(await roots.realDirectory(fs, "work", "dir"), path.join(root, "dir"));
    await refusal(roots.realDirectory(fs, "work", "a.txt"), "not_found", 'Not a directory in root "work": "a.txt"');
    await refusal(
      roots.realDirectory(fs, "work", "up"),
      "path_refused",
      'Path refused in root "work": "up" leads outside the root through a symlink; only files inside the root can be read',
    );
    const narrowed = roots.restrictRoots(fs, ["work"], 'plugin "p"');
    assert.equal(await roots.realDirectory(narrowed, "work", "dir"), path.join(root, "dir"));
    assert.deepEqual((await roots.writableTarget(narrowed, "work", "dir/c.txt")).display, "dir/c.txt");
    await refusal(
      roots.realDirectory(narrowed, "other", "."),
      "unknown_root",
      'Unknown root: received "other"; plugin "p" may read: work',
    );
    const foreign = { rootIds: ["work"] } as unknown as import("../core/doors/roots.ts").RootFs;
    await assert.rejects(roots.realDirectory(foreign, "work", "."), {
      message: "realDirectory needs a RootFs made by openRoots or restrictRoots",
    });
    await assert.rejects(roots.writableTarget(foreign, "work", "x"), {
      message: "writableTarget needs a RootFs made by openRoots or restrictRoots",
    });
  });
});
