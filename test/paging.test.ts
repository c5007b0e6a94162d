// Answers an agent can take: on a generated tree big enough for every list of
// every tool to run over a page, each tool's default answer is at most 16 KB of
// text and leads with its totals, and following nextCursor reaches every row
// of every list exactly once, in the order of one answer with a large limit. A
// cursor made by another tool, for other arguments, from an answer that has
// changed since, or by no one is refused with a message that says what to do.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, runtimeName, type Session, skipOrFail, tempDir } from "./helpers.ts";
import { writeTree } from "./fixtures/code/harness.ts";

/** What "small" means: 16 KB of text, the answer's JSON as its text content carries it. */
const PAGE_BYTES = 16 * 1024;

const LEAVES = 250;
const USERS = 300;
const PACKAGES = 120;
const PLUGINS = 120;

/**
 * A hub module with LEAVES exports and LEAVES side-effect imports, USERS modules that import it (each with a dead
 * export and a FIXME) and as many that import those, PACKAGES workspace packages: every list of every tool runs over
 * a page.
 */
function generatedTree(): [string, string][] {
  const files: [string, string][] = [];
  const hub: string[] = [];
  for (let i = 0; i < LEAVES; i++) {
    hub.push(`import "./leaf/l${i}.ts";`);
    files.push([`src/leaf/l${i}.ts`, `// TODO: leaf ${i} needs a real value\nexport const leaf${i} = ${i};\n`]);
  }
  for (let i = 0; i < LEAVES; i++) hub.push(`export function hubExport${i}(value: number): number { return value; }`);
  files.push(["src/hub.ts", hub.join("\n") + "\n"]);
  for (let i = 0; i < USERS; i++) {
    files.push([
      `src/users/u${i}.ts`,
      `import { hubExport${i % LEAVES} } from "../hub.ts";\n` +
      `export const value${i} = hubExport${i % LEAVES}(${i});\n` +
      `export function unused${i}(): void {}\n// FIXME: user ${i} is temporary\n`,
    ]);
    files.push([
      `src/top/t${i}.ts`,
      `import { value${i} } from "../users/u${i}.ts";\nexport const top${i} = value${i};\n`,
    ]);
  }
  for (let i = 0; i < PACKAGES; i++) {
    const manifest = { name: `@generated/package-${i}`, version: "1.0.0", main: "src/index.ts" };
    files.push([`packages/p${i}/package.json`, JSON.stringify(manifest) + "\n"]);
    files.push([`packages/p${i}/src/index.ts`, `export const packageNumber${i} = ${i};\n`]);
  }
  files.push(["package.json", JSON.stringify({ name: "generated", private: true, workspaces: ["packages/*"] })]);
  files.push([
    "tsconfig.json",
    JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }),
  ]);
  return files;
}

interface PageCount {
  offset: number;
  returned: number;
  total: number;
}
interface Paged {
  page: Record<string, PageCount>;
  nextCursor?: string;
  [key: string]: unknown;
}

/** Each tool, its arguments, the key its answer starts with, and the lists it pages. */
const CASES: { tool: string; args: Record<string, unknown>; leads: string; lists: string[] }[] = [
  {
    tool: "code_about",
    args: { module: "src/hub.ts" },
    leads: "totals",
    lists: ["exports", "imports", "importedBy", "unknownFrom", "starExportsNotExpanded", "symbols", "warnings"],
  },
  { tool: "code_blast_radius", args: { module: "src/hub.ts" }, leads: "totals", lists: ["direct", "transitive"] },
  {
    tool: "code_dead_exports",
    args: {},
    leads: "totals",
    lists: ["dead", "undetermined", "entryPoints", "warnings"],
  },
  { tool: "tech_debt_check", args: {}, leads: "totals", lists: ["findings"] },
  {
    tool: "component_discover",
    args: {},
    leads: "files",
    lists: ["languages", "packages", "entryPoints", "workspaces"],
  },
  { tool: "change_summary", args: {}, leads: "totals", lists: ["files", "blastRadius.dependents"] },
  { tool: "extension_list", args: {}, leads: "totals", lists: ["extensions"] },
];

function listAt(answer: Paged, list: string): unknown[] {
  let node: unknown = answer;
  for (const key of list.split(".")) node = (node as Record<string, unknown>)[key];
  assert.ok(Array.isArray(node), `${list} is a list`);
  return node;
}

describe(`paging (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let root: string;
  let hasGit = true;
  const git = (...args: string[]) => {
    const result = spawnSync("git", ["-C", root, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      encoding: "utf8",
    });
    if (result.error) {
      hasGit = false;
      return;
    }
    assert.equal(result.status, 0, result.stderr);
  };

  before(async () => {
    work = tempDir("warden-paging-");
    root = path.join(work.dir, "tree");
    writeTree(root, generatedTree());
    // change_summary's lists: every user module changed (each with its dependents), and files git does not know.
    git("init", "-q", "-b", "main");
    git("add", "-A");
    git("commit", "-q", "-m", "first");
    for (let i = 0; i < USERS; i++) {
      appendFileSync(path.join(root, `src/users/u${i}.ts`), `export const more${i} = 1;\n`);
    }
    for (let i = 0; i < 40; i++) writeFileSync(path.join(root, `notes-${i}.md`), `note ${i}\n`);
    // extension_list's list: plugin directories without a manifest, each refused with its reason.
    const plugins = path.join(work.dir, "plugins");
    for (let i = 0; i < PLUGINS; i++) {
      mkdirSync(path.join(plugins, `plugin-${String(i).padStart(3, "0")}`), { recursive: true });
    }
    // Markers in a script whose characters take three bytes each in UTF-8: a page is counted in bytes, not characters.
    const wide = path.join(work.dir, "wide");
    writeTree(wide, Array.from({ length: 200 }, (_, i) => [`n${i}.ts`, `// TODO: ${"待办事项".repeat(20)} ${i}\n`]));
    session = await connect({
      args: ["--root", `default=${root}`, "--root", `wide=${wide}`, "--plugins-dir", plugins],
    });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  /** One call: its structured answer, its text and the text's size in bytes. */
  async function page(tool: string, args: Record<string, unknown>) {
    const result = await session.client.callTool({ name: tool, arguments: args });
    const text = (result.content as { text: string }[])[0].text;
    assert.equal(result.isError, undefined, text);
    assert.deepEqual(JSON.parse(text), result.structuredContent);
    return { value: result.structuredContent as Paged, text, bytes: new TextEncoder().encode(text).length };
  }

  /** The message and code of a call that must be refused. */
  async function refusal(tool: string, args: Record<string, unknown>) {
    const result = await session.client.callTool({ name: tool, arguments: args });
    const text = (result.content as { text: string }[])[0].text;
    assert.equal(result.isError, true, text.slice(0, 300));
    return { text, code: (result._meta as Record<string, unknown>)["warden/error_code"] };
  }

  /** The first page's cursor of `tool`, with its usual arguments. */
  async function firstCursor(tool: string, args: Record<string, unknown> = CASES.find((c) => c.tool === tool)!.args) {
    const cursor = (await page(tool, args)).value.nextCursor;
    assert.ok(cursor, `${tool} leaves rows for a second page`);
    return cursor;
  }

  for (const { tool, args, leads, lists } of CASES) {
    it(`${tool}: the default answer is at most 16 KB and leads with ${leads}; its pages reach every row once`, async (t) => {
      if (tool === "change_summary" && !hasGit) return skipOrFail(t, "change_summary needs git: apt-get install git");
      const whole = await page(tool, { ...args, limit: 100000 });
      assert.equal(whole.value.nextCursor, undefined, "a large limit gives every row at once");
      assert.ok(whole.bytes > PAGE_BYTES, `the whole answer (${whole.bytes} bytes) needs more than one page`);

      const seen = new Map(lists.map((list) => [list, [] as unknown[]]));
      let next = { ...args };
      let pages = 0;
      for (;;) {
        const { value, text, bytes } = await page(tool, next);
        pages++;
        assert.ok(bytes <= PAGE_BYTES, `page ${pages} of ${tool} is ${bytes} bytes`);
        assert.ok(text.startsWith(`{"${leads}":`), `page ${pages} of ${tool} starts with ${text.slice(0, 40)}`);
        assert.deepEqual(value[leads], whole.value[leads], "every page has the same totals");
        for (const list of lists) {
          const rows = listAt(value, list);
          const count = value.page[list];
          assert.deepEqual(count, { offset: seen.get(list)!.length, returned: rows.length, total: count.total });
          assert.equal(count.total, listAt(whole.value, list).length, `${list}: total`);
          seen.get(list)!.push(...rows);
        }
        if (value.nextCursor === undefined) break;
        assert.ok(pages < 100, "paging ends");
        next = { ...args, cursor: value.nextCursor };
      }
      assert.ok(pages >= 2, `${tool} answered in ${pages} pages`);
      for (const list of lists) assert.deepEqual(seen.get(list), listAt(whole.value, list), `${list}: every row, once`);
    });
  }

  it("counts a page in bytes of UTF-8, not in characters", async () => {
    const { value, bytes } = await page("tech_debt_check", { project_id: "wide" });
    assert.ok(bytes <= PAGE_BYTES, `${bytes} bytes`);
    // Each row is ~290 bytes for ~130 characters: counted as characters, the page would hold twice as many.
    assert.ok(value.page.findings.returned > 40 && value.page.findings.returned < 60, JSON.stringify(value.page));
  });

  it("refuses a cursor made by another tool, naming both", async () => {
    for (let i = 0; i < CASES.length; i++) {
      const maker = CASES[i];
      const other = CASES[(i + 1) % CASES.length];
      if ([maker.tool, other.tool].includes("change_summary") && !hasGit) continue;
      const cursor = await firstCursor(maker.tool);
      const { text, code } = await refusal(other.tool, { ...other.args, cursor });
      assert.equal(code, "invalid_cursor");
      assert.equal(
        text,
        `Invalid argument "cursor": it was made by ${maker.tool}, not ${other.tool}; pass it to ${maker.tool}, or re-run without cursor`,
      );
    }
  });

  it("refuses a cursor with other arguments, the limit included", async () => {
    const changed: Record<string, Record<string, unknown>> = {
      code_about: { module: "src/users/u1.ts" },
      code_blast_radius: { includeTypeOnly: false },
      code_dead_exports: { path: "src" },
      tech_debt_check: { tags: ["TODO"] },
      component_discover: { path: "packages" },
      change_summary: { blastRadius: false },
      extension_list: { status: "invalid-manifest" },
    };
    for (const { tool, args } of CASES) {
      if (tool === "change_summary" && !hasGit) continue;
      const cursor = await firstCursor(tool);
      for (const more of [changed[tool], { limit: 5 }]) {
        const { text, code } = await refusal(tool, { ...args, ...more, cursor });
        assert.equal(code, "invalid_cursor", tool);
        assert.equal(
          text,
          'Invalid argument "cursor": it was made for other arguments; pass it with the arguments of the first page (only cursor changes), or re-run without cursor',
        );
      }
    }
  });

  it("refuses what is not a cursor: garbage, a cut one, a forged offset, another version", async () => {
    const cursor = await firstCursor("code_dead_exports");
    const payload = JSON.parse(atob(cursor.slice(3).replace(/-/g, "+").replace(/_/g, "/")));
    const forged = "w1." + btoa(JSON.stringify({ ...payload, o: payload.o.map(() => 1e9) })).replace(/=+$/, "");
    const cases: [string, RegExp][] = [
      ["garbage", /^Invalid argument "cursor": "garbage" is not a cursor warden made; /],
      [cursor.slice(0, 40), /^Invalid argument "cursor": "w1\.[^"]+" is not a cursor warden made; /],
      [forged, /^Invalid argument "cursor": "w1\.[^"]+\.\.\. is not a cursor warden made; /],
      ["w1.e30", /^Invalid argument "cursor": "w1\.e30" is not a cursor warden made; /],
      ["w9." + cursor.slice(3), /^Invalid argument "cursor": it was made by another version of warden; /],
    ];
    for (const [bad, message] of cases) {
      const { text, code } = await refusal("code_dead_exports", { cursor: bad });
      assert.equal(code, "invalid_cursor", bad);
      assert.match(text, message);
      assert.match(text, /re-run without cursor to start from the first page$/);
    }
    // Every tool reads cursors the same way.
    for (const { tool, args } of CASES) {
      if (tool === "change_summary" && !hasGit) continue;
      const { text } = await refusal(tool, { ...args, cursor: "garbage" });
      assert.match(text, /^Invalid argument "cursor": "garbage" is not a cursor warden made; /, tool);
    }
  });

  it("honours a cursor while the answer stays the same, a file touched included", async () => {
    const first = await page("code_dead_exports", {});
    const earlier = new Date(Date.now() - 3600_000);
    utimesSync(path.join(root, "src/users/u0.ts"), earlier, earlier);
    const second = await page("code_dead_exports", { cursor: first.value.nextCursor });
    assert.equal(second.value.page.dead.offset, first.value.page.dead.returned);
    const whole = await page("code_dead_exports", { limit: 100000 });
    assert.deepEqual(
      [...listAt(first.value, "dead"), ...listAt(second.value, "dead")],
      listAt(whole.value, "dead").slice(0, first.value.page.dead.returned + second.value.page.dead.returned),
    );
  });

  it("refuses a cursor once the answer has changed, and starts again without it", async () => {
    const tools = ["code_about", "code_blast_radius", "code_dead_exports", "tech_debt_check", "component_discover"];
    const cursors = new Map<string, string>();
    for (const tool of tools) cursors.set(tool, await firstCursor(tool));
    // A new importer of the hub that exports something no one uses, with a marker: every answer above changes.
    writeFileSync(
      path.join(root, "src/users/late.ts"),
      'import { hubExport0 } from "../hub.ts";\nexport const late = hubExport0(1); // TODO: late\n',
    );
    for (const tool of tools) {
      const { args } = CASES.find((c) => c.tool === tool)!;
      const { text, code } = await refusal(tool, { ...args, cursor: cursors.get(tool) });
      assert.equal(code, "invalid_cursor", tool);
      assert.equal(
        text,
        'Invalid argument "cursor": the answer changed since it was made (files it reads changed); re-run without cursor to start from the first page',
      );
      assert.ok((await page(tool, args)).value.nextCursor, `${tool} answers again from the first page`);
    }
  });
});
