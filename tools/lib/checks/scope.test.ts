// Reading a change from git's output: the added lines of a -U0 patch with their new line numbers, and the file, dir
// and exclude filters.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addedLines, pathFilter, splitBatch } from "./scope.ts";

describe("addedLines", () => {
  it("numbers added lines by each hunk's new start, across files, and skips removed ones", () => {
    // `git diff -U0` output (git 2.39) for two files, a rename with a quoted name, a deletion and a binary file.
    const patch = [
      "diff --git a/src/a.ts b/src/a.ts",
      "index 1111111..2222222 100644",
      "--- a/src/a.ts",
      "+++ b/src/a.ts",
      "@@ -2 +2 @@ export const a = 1;",
      "-old line",
      "+new line",
      "@@ -10,0 +11,2 @@ function f() {",
      "+added one",
      "+added two",
      "\\ No newline at end of file",
      'diff --git "a/t\\tab.ts" "b/t\\tab\\303\\251.ts"',
      "similarity index 90%",
      'rename from "t\\tab.ts"',
      'rename to "t\\tab\\303\\251.ts"',
      '--- "a/t\\tab.ts"',
      '+++ "b/t\\tab\\303\\251.ts"',
      "@@ -1 +1 @@",
      "-x",
      "+++y",
      "diff --git a/gone.ts b/gone.ts",
      "deleted file mode 100644",
      "--- a/gone.ts",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-bye",
      "diff --git a/img.png b/img.png",
      "Binary files a/img.png and b/img.png differ",
      "",
    ].join("\n");
    assert.deepEqual(Object.fromEntries(addedLines(patch)), {
      "src/a.ts": [{ line: 2, text: "new line" }, { line: 11, text: "added one" }, { line: 12, text: "added two" }],
      "t\tabé.ts": [{ line: 1, text: "++y" }],
    });
  });
});

describe("pathFilter", () => {
  const files = ["README.md", "src/a.ts", "src/b.test.ts", "src/gen/c.ts", "lib/d.ts", "docs/src/e.ts"];
  const keep = (request: Parameters<typeof pathFilter>[0]) => files.filter(pathFilter(request));

  it("keeps everything without filters", () => {
    assert.deepEqual(keep({}), files);
  });

  it("file: a glob with a slash matches the path, one without matches the name anywhere", () => {
    assert.deepEqual(keep({ file: ["src/*.ts"] }), ["src/a.ts", "src/b.test.ts"]);
    assert.deepEqual(keep({ file: ["*.test.ts"] }), ["src/b.test.ts"]);
    assert.deepEqual(keep({ file: ["**/*.md"] }), ["README.md"]);
  });

  it("dir: files under the directory, at any depth; `.` is the whole root", () => {
    assert.deepEqual(keep({ dir: ["src"] }), ["src/a.ts", "src/b.test.ts", "src/gen/c.ts"]);
    assert.deepEqual(keep({ dir: ["src/gen/"] }), ["src/gen/c.ts"]);
    assert.deepEqual(keep({ dir: ["."] }), files);
  });

  it("exclude: a glob or a directory, by name anywhere without a slash", () => {
    assert.deepEqual(keep({ exclude: ["gen"] }), [
      "README.md",
      "src/a.ts",
      "src/b.test.ts",
      "lib/d.ts",
      "docs/src/e.ts",
    ]);
    assert.deepEqual(keep({ dir: ["src"], exclude: ["*.test.ts", "src/gen"] }), ["src/a.ts"]);
  });
});

describe("splitBatch", () => {
  const blob = (text: string) => `${"a".repeat(40)} blob ${new TextEncoder().encode(text).length}\n${text}\n`;

  it("splits git cat-file --batch's answer by byte sizes, multi-byte text and empty files included", () => {
    const texts = new Map<string, string | null>();
    const answer = blob("é and 𝄞\nsecond line\n") + "HEAD:./gone.ts missing\n" + blob("") +
      `${"b".repeat(40)} tree 60\n${"x".repeat(60)}\n` + blob("last");
    splitBatch(answer, ["a.ts", "gone.ts", "empty.ts", "dir", "z.ts"], texts);
    assert.deepEqual([...texts], [
      ["a.ts", "é and 𝄞\nsecond line\n"],
      ["gone.ts", null],
      ["empty.ts", ""],
      ["dir", null],
      ["z.ts", "last"],
    ]);
  });

  it("leaves out what it cannot split surely: bytes that were not UTF-8, a size that does not fit, a cut answer", () => {
    const notUtf8 = new Map<string, string | null>();
    splitBatch(blob("ok") + `${"a".repeat(40)} blob 3\n\uFFFD\n`, ["a.ts", "latin1.ts"], notUtf8);
    assert.deepEqual([...notUtf8], [["a.ts", "ok"]], "from a replacement character on, each name is read alone");

    const misfit = new Map<string, string | null>();
    splitBatch(blob("ok") + `${"a".repeat(40)} blob 2\nabc\n` + blob("later"), ["a.ts", "b.ts", "c.ts"], misfit);
    assert.deepEqual([...misfit], [["a.ts", "ok"]]);

    const cut = new Map<string, string | null>();
    splitBatch(blob("ok") + `${"a".repeat(40)} blob 100\nonly part`, ["a.ts", "b.ts"], cut);
    assert.deepEqual([...cut], [["a.ts", "ok"]]);

    const garbled = new Map<string, string | null>();
    splitBatch("fatal: not a git repository\n", ["a.ts"], garbled);
    assert.deepEqual([...garbled], []);
  });
});
