// warden's own checks (the `hygiene` group) over small real trees: each check
// runs as run_checks runs it, with a change scope and a gate context whose
// file door is a real root, and reports what the change brings, with file,
// line and severity, and nothing the change leaves alone.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { createContext } from "../core/context.ts";
import { WardenError } from "../core/errors.ts";
import { openRoots } from "../core/doors/roots.ts";
import { initPlatform } from "../core/platform/mod.ts";
import type { GateContext, HostFacts } from "../core/tool.ts";
import type { BuiltinCheck, ChangedFile, ChangeScope, Finding } from "../tools/lib/checks/types.ts";
import { blastRadiusCheck } from "../tools/lib/checks/hygiene/blast_radius.ts";
import { boundariesCheck } from "../tools/lib/checks/hygiene/boundaries.ts";
import { deadExportsCheck } from "../tools/lib/checks/hygiene/dead_exports.ts";
import { debtMarkersCheck } from "../tools/lib/checks/hygiene/debt_markers.ts";
import { lockfileCheck } from "../tools/lib/checks/hygiene/lockfile.ts";
import {
  type BaseReader,
  HYGIENE_CHECKS,
  hygieneChecks,
  parseHygieneOptions,
} from "../tools/lib/checks/hygiene/mod.ts";
import { secretsCheck } from "../tools/lib/checks/hygiene/secrets.ts";
import { runtimeName, tempDir } from "./helpers.ts";

const cleanups: (() => void)[] = [];
let fixtures = 0;

/** A root holding `files`, under a root id of its own (the graph is cached per root id), and a gate context on it. */
async function fixture(files: Record<string, string>): Promise<{ root: string; ctx: GateContext }> {
  const work = tempDir("warden-hygiene-");
  cleanups.push(work.remove);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(work.dir, file)), { recursive: true });
    writeFileSync(path.join(work.dir, file), text);
  }
  const root = `fixture${++fixtures}`;
  const fs = await openRoots([{ id: root, path: work.dir }]);
  const ctx = createContext("gate", {
    signal: () => new AbortController().signal,
    fs,
    host: {} as HostFacts, // The checks read files only.
    tool: { name: "run_checks", risk: "gate", capabilities: { spawn: [], writeRoots: [], netHosts: [] } },
    deadline: Date.now() + 60_000,
  });
  return { root, ctx };
}

/** A changed file: `lines` are the added line numbers of `text` ("all" for a new file). */
function changed(
  file: string,
  text: string,
  lines: number[] | "all",
  status: ChangedFile["status"] = lines === "all" ? "added" : "modified",
  oldPath?: string,
): ChangedFile {
  const all = text.split("\n");
  const numbers = lines === "all" ? all.map((_, i) => i + 1).filter((n) => n < all.length || all[n - 1] !== "") : lines;
  return {
    path: file,
    status,
    ...(oldPath ? { oldPath } : {}),
    addedLines: numbers.map((line) => ({ line, text: all[line - 1] })),
    binary: false,
  };
}

const deleted = (file: string): ChangedFile => ({ path: file, status: "deleted", addedLines: [], binary: false });

function scopeOf(root: string, files: ChangedFile[]): ChangeScope {
  return { root, mode: "staged", range: null, files };
}

/** Findings reduced to what a reader checks first: file, line, severity, rule. */
/** A BaseReader over `base` (path → text as it was before the change), answering all the paths it is asked at once. */
const readerOf = (base: Record<string, string>): BaseReader => (paths) =>
  Promise.resolve(new Map(paths.map((file) => [file, base[file] ?? null])));
const brief = (findings: Finding[]) => findings.map((f) => `${f.file}:${f.line} ${f.severity} ${f.rule}`);

describe(`hygiene checks over real trees (${runtimeName})`, () => {
  before(async () => {
    await initPlatform();
  });
  after(() => {
    for (const cleanup of cleanups) cleanup();
  });

  describe("hygiene/debt-markers", () => {
    const text = [
      "// TODO: older debt, not this change's", // 1
      "export const a = 1;", // 2
      "/*", // 3
      "   FIXME: wrong for negative numbers", // 4  inside a block comment opened on line 3
      "*/", // 5
      'export const label = "TODO: not a comment";', // 6
      "// TODO(ana): cache this", // 7
      // Written in two parts so that this line of the test is not stub code itself.
      'export function later() { throw new Error("not ' + 'implemented"); }', // 8
      "// HACK: timing", // 9
      "",
    ].join("\n");

    it("reports the markers of added lines only, with their severity, comments told from strings", async () => {
      const { root, ctx } = await fixture({ "src/a.ts": text });
      const findings = await debtMarkersCheck().run(scopeOf(root, [changed("src/a.ts", text, [4, 6, 7, 8])]), ctx);
      assert.deepEqual(brief(findings), [
        "src/a.ts:4 medium FIXME",
        "src/a.ts:7 low TODO",
        "src/a.ts:8 medium STUB",
      ]);
      assert.equal(findings[0].message, "Added FIXME marker: FIXME: wrong for negative numbers");
      assert.equal(findings[0].check, "hygiene/debt-markers");
      assert.equal(findings[1].column, 4);
    });

    it("reads the added lines alone when the work tree moved on since they were staged", async () => {
      const { root, ctx } = await fixture({ "src/b.ts": "export const b = 2;\n" });
      const staged: ChangedFile = {
        path: "src/b.ts",
        status: "modified",
        addedLines: [{ line: 2, text: "// XXX: staged, then edited away" }],
        binary: false,
      };
      assert.deepEqual(brief(await debtMarkersCheck().run(scopeOf(root, [staged]), ctx)), ["src/b.ts:2 low XXX"]);
    });

    it("takes its tags and severities from the options; a deleted file has nothing to report", async () => {
      const { root, ctx } = await fixture({ "src/a.ts": text });
      const check = debtMarkersCheck({ tags: ["HACK"], severities: { HACK: "high" } });
      const findings = await check.run(scopeOf(root, [changed("src/a.ts", text, "all"), deleted("src/gone.ts")]), ctx);
      assert.deepEqual(brief(findings), ["src/a.ts:9 high HACK"]);
    });
  });

  describe("hygiene/dead-exports", () => {
    const lib = [
      "export const used = 1;", // 1
      "export const olderDead = 2;", // 2  dead before this change: not its finding
      "export function addedDead() {}", // 3  added by the change, imported nowhere
      "export const addedUsed = 4;", // 4  added and imported
      "export type AddedType = string;", // 5  added, a type, imported nowhere
      "export const selfUsed = 6;", // 6  added, used in its own file only
      "console.log(selfUsed);", // 7
      "",
    ].join("\n");
    const tree = {
      "package.json": '{ "name": "fx", "type": "module" }\n',
      "src/index.ts":
        'import { addedUsed, used } from "./lib.ts";\nimport "./keep.ts";\nconsole.log(used, addedUsed);\n',
      "src/lib.ts": lib,
      "src/util.ts": "export function helper() {}\nexport function other() {}\n",
      "src/keep.ts": 'import { other } from "./util.ts";\nother();\n',
    };
    // Before the change, src/old.ts (deleted by it) was the only user of helper.
    const base: Record<string, string> = {
      "src/old.ts": 'import { helper } from "./util.ts";\nhelper();\n',
      "src/lib.ts": "export const used = 1;\nexport const olderDead = 2;\n",
    };
    const readBase = readerOf(base);
    const change = (root: string) =>
      scopeOf(root, [
        changed("src/lib.ts", lib, [3, 4, 5, 6, 7]),
        deleted("src/old.ts"),
        changed("src/index.ts", "", []),
      ]);

    it("reports the exports the change adds that nothing imports, not older dead ones", async () => {
      const { root, ctx } = await fixture(tree);
      const findings = await deadExportsCheck().run(change(root), ctx);
      assert.deepEqual(brief(findings), [
        "src/lib.ts:3 low added-unused",
        "src/lib.ts:5 low added-unused",
        "src/lib.ts:6 low added-unused",
      ]);
      assert.equal(
        findings[0].message,
        "Added export addedDead (function) is not imported by any module; remove it",
      );
      assert.equal(
        findings[2].message,
        "Added export selfUsed (variable) is not imported by any module; it is used in its own file: drop the export keyword",
      );
    });

    it("with the files before the change, reports the exports whose last user it removed", async () => {
      const { root, ctx } = await fixture(tree);
      const findings = await deadExportsCheck({ readBase, includeTypes: false, severity: "medium" }).run(
        change(root),
        ctx,
      );
      assert.deepEqual(brief(findings), [
        "src/lib.ts:3 medium added-unused",
        "src/lib.ts:6 medium added-unused",
        "src/util.ts:1 medium left-unused",
      ]);
      assert.equal(
        findings[2].message,
        "Export helper (function) was imported before this change and is not after it; remove it",
      );
    });

    it("an export whose last user went through a barrel: the barrel's and the module's", async () => {
      const { root, ctx } = await fixture({
        ...tree,
        "src/barrel.ts": 'export { helper } from "./util.ts";\n',
      });
      const throughBarrel = readerOf({ "src/old.ts": 'import { helper } from "./barrel.ts";\nhelper();\n' });
      const findings = await deadExportsCheck({ readBase: throughBarrel }).run(
        scopeOf(root, [deleted("src/old.ts")]),
        ctx,
      );
      assert.deepEqual(brief(findings), ["src/barrel.ts:1 low left-unused", "src/util.ts:1 low left-unused"]);
    });

    it("a base that cannot be read is an error that names the file", async () => {
      const { root, ctx } = await fixture(tree);
      const failing = () => Promise.reject(new Error("fatal: bad object HEAD"));
      await assert.rejects(
        deadExportsCheck({ readBase: failing }).run(change(root), ctx),
        (error) =>
          error instanceof WardenError && error.code === "tool_failed" &&
          error.message ===
            "Cannot read src/lib.ts, src/old.ts, src/index.ts as they were before the change: fatal: bad object HEAD; " +
              "the check cannot tell",
      );
    });

    it("an export removed users of stays quiet while another module still imports it", async () => {
      const { root, ctx } = await fixture({
        ...tree,
        "src/keep.ts": 'import { helper, other } from "./util.ts";\nother();\nhelper();\n',
      });
      const findings = await deadExportsCheck({ readBase }).run(change(root), ctx);
      assert.ok(!brief(findings).some((f) => f.startsWith("src/util.ts")), JSON.stringify(findings));
    });
  });

  describe("hygiene/blast-radius", () => {
    const tree: Record<string, string> = {
      "core.ts": "export const shared = 1;\nexport type Shape = { a: number };\n",
      "leaf.ts": "export const leaf = 1;\n",
      "b.ts": 'import { a1 } from "./a1.ts";\nexport const b = a1;\n',
      "t.ts": 'import type { Shape } from "./core.ts";\nexport type T = Shape;\n',
    };
    for (let i = 1; i <= 5; i++) {
      tree[`a${i}.ts`] = `import { shared } from "./core.ts";\nexport const a${i} = shared;\n`;
    }

    it("one finding over the budget: the count, the budget, the modules that reach the most", async () => {
      const { root, ctx } = await fixture(tree);
      const scope = scopeOf(root, [changed("core.ts", tree["core.ts"], [1]), changed("leaf.ts", tree["leaf.ts"], [1])]);
      const findings = await blastRadiusCheck({ budget: 3 }).run(scope, ctx);
      assert.deepEqual(findings, [{
        check: "hygiene/blast-radius",
        file: null,
        line: null,
        column: null,
        severity: "medium",
        rule: "over-budget",
        message:
          "The change reaches 7 dependent modules, over the budget of 3; most through core.ts (7); split the change or review those dependents",
      }]);
    });

    it("modules of the change are not its dependents", async () => {
      const { root, ctx } = await fixture(tree);
      const scope = scopeOf(root, [changed("core.ts", tree["core.ts"], [1]), changed("a1.ts", tree["a1.ts"], [2])]);
      const [finding] = await blastRadiusCheck({ budget: 3 }).run(scope, ctx);
      assert.equal(
        finding.message,
        "The change reaches 6 dependent modules, over the budget of 3; most through core.ts (6), a1.ts (1); split the change or review those dependents",
      );
    });

    it("within the budget, or counting run-time dependents only, nothing", async () => {
      const { root, ctx } = await fixture(tree);
      const scope = scopeOf(root, [changed("core.ts", tree["core.ts"], [1])]);
      assert.deepEqual(await blastRadiusCheck({ budget: 7 }).run(scope, ctx), []);
      assert.equal((await blastRadiusCheck({ budget: 6 }).run(scope, ctx)).length, 1);
      // t.ts imports types only: six run-time dependents.
      assert.deepEqual(await blastRadiusCheck({ budget: 6, runtimeOnly: true }).run(scope, ctx), []);
    });
  });

  describe("hygiene/boundaries", () => {
    const rules = [
      {
        name: "core-stays-small",
        from: "core/**",
        disallow: ["tools/**", "node:fs"],
        allow: "tools/public/**",
        comment: "core never depends on tools",
      },
    ];
    const a =
      'import { x } from "../tools/x.ts";\nimport { p } from "../tools/public/p.ts";\nexport const a = x + p;\n';
    const b = 'import { x } from "../tools/x.ts";\nexport const b = x;\n';
    const c = 'import {\n  readFileSync,\n} from "node:fs";\nexport const c = readFileSync;\n';
    const tree = {
      "core/a.ts": a,
      "core/b.ts": b,
      "core/c.ts": c,
      "core/moved.ts": 'import { x } from "../tools/x.ts";\nexport const m = x;\n',
      "tools/x.ts": "export const x = 1;\nexport type X = number;\n",
      "tools/public/p.ts": "export const p = 1;\n",
    };

    it("reports imports the change adds across a boundary, with the rule and its reason", async () => {
      const { root, ctx } = await fixture(tree);
      const scope = scopeOf(root, [
        changed("core/a.ts", a, [1, 2]), // both imports added; the second is allowed
        changed("core/b.ts", b, [2]), // its import of tools/ is older than the change
        changed("core/c.ts", c, [3]), // a multi-line import whose `from` line changed
        changed("core/moved.ts", "", [], "renamed", "scripts/moved.ts"), // moved under the rule with its imports
      ]);
      const findings = await boundariesCheck({ rules }).run(scope, ctx);
      assert.deepEqual(brief(findings), [
        "core/a.ts:1 high core-stays-small",
        "core/c.ts:1 high core-stays-small",
        "core/moved.ts:1 high core-stays-small",
      ]);
      assert.equal(
        findings[0].message,
        'core/a.ts imports tools/x.ts ("../tools/x.ts"), which boundary "core-stays-small" forbids: core never depends on tools',
      );
      assert.equal(findings[1].message.split(",")[0], 'core/c.ts imports "node:fs"');
    });

    it("a rule with typeOnly: false lets imports of types cross", async () => {
      const d = 'import type { X } from "../tools/x.ts";\nimport { x } from "../tools/x.ts";\nexport const d: X = x;\n';
      const { root, ctx } = await fixture({ ...tree, "core/d.ts": d });
      const scope = scopeOf(root, [changed("core/d.ts", d, "all")]);
      assert.deepEqual(brief(await boundariesCheck({ rules }).run(scope, ctx)), [
        "core/d.ts:1 high core-stays-small",
        "core/d.ts:2 high core-stays-small",
      ]);
      const values = [{ ...rules[0], typeOnly: false }];
      assert.deepEqual(brief(await boundariesCheck({ rules: values }).run(scope, ctx)), [
        "core/d.ts:2 high core-stays-small",
      ]);
    });

    it("no rules, no findings; a rule that is not one is refused by name", async () => {
      const { root, ctx } = await fixture(tree);
      assert.deepEqual(await boundariesCheck().run(scopeOf(root, [changed("core/a.ts", a, [1])]), ctx), []);
      assert.throws(
        () => boundariesCheck({ rules: [{ from: "core/**" } as never] }),
        (error) =>
          error instanceof WardenError && error.code === "config_invalid" &&
          error.message ===
            'Invalid boundary rule 0 (disallow): it is missing; write each as { from: "core/**", disallow: ["tools/**"] } with globs relative to the root',
      );
    });
  });

  describe("hygiene/secrets", () => {
    it("reports secrets in added lines with file, line, column and a masked value; deleted and binary files skipped", async () => {
      const token = "ghp_" + "Q7w9".repeat(9);
      const scope = scopeOf("unused", [
        {
          path: "deploy/.env",
          status: "added",
          addedLines: [{ line: 1, text: "# deploy" }, { line: 2, text: `GH_TOKEN=${token}` }],
          binary: false,
        },
        { path: "old.env", status: "deleted", addedLines: [{ line: 1, text: `T=${token}` }], binary: false },
        { path: "img.png", status: "added", addedLines: [{ line: 1, text: `T=${token}` }], binary: true },
      ]);
      const findings = await secretsCheck().run(scope, {} as GateContext);
      assert.deepEqual(findings, [{
        check: "hygiene/secrets",
        file: "deploy/.env",
        line: 2,
        column: 10,
        severity: "critical",
        rule: "github-token",
        message: "Added a GitHub token: ghp_**** (40 characters); remove it from the change and revoke it",
      }]);
      assert.ok(!JSON.stringify(findings).includes(token.slice(4)));
    });
  });

  it("hygiene/secrets: a private key is one finding, at its header, not one per line of it", async () => {
    // Random-looking lines of key material (a linear congruential generator), made here so that no key sits in this file.
    let state = 7;
    const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const body = Array.from(
      { length: 4 },
      () => Array.from({ length: 64 }, () => alphabet[Math.floor(next() * 64)]).join(""),
    );
    const lines = [
      "-----BEGIN OPENSSH PRIVATE KEY-----",
      ...body,
      "-----END OPENSSH PRIVATE KEY-----",
      `after=${body[0]}`,
    ];
    const scope = scopeOf("unused", [{
      path: "deploy/id_ed25519",
      status: "added",
      addedLines: lines.map((text, i) => ({ line: i + 1, text })),
      binary: false,
    }]);
    const findings = await secretsCheck().run(scope, {} as GateContext);
    // The same random line after the block is flagged: the block, not the line, kept the key's lines quiet.
    assert.deepEqual(brief(findings), [
      "deploy/id_ed25519:1 critical private-key",
      "deploy/id_ed25519:7 high high-entropy-base64",
    ]);
  });

  describe("hygiene/lockfile", () => {
    const file = (p: string, status: ChangedFile["status"] = "modified"): ChangedFile => ({
      path: p,
      status,
      addedLines: [{ line: 7, text: '"version": "1.2.4",' }],
      binary: false,
    });
    const run = (files: ChangedFile[]) => lockfileCheck().run(scopeOf("unused", files), {} as GateContext);

    it("a lockfile changed alone is a finding at its first added line", async () => {
      const findings = await run([file("package-lock.json"), file("src/a.ts")]);
      assert.deepEqual(brief(findings), ["package-lock.json:7 medium lockfile-without-manifest"]);
      assert.equal(
        findings[0].message,
        "package-lock.json is changed but no package.json under the root is: dependencies moved with no declared reason; change the manifest with it, or say why (a deliberate refresh) in review",
      );
      assert.deepEqual(brief(await run([file("deno.lock")])), ["deno.lock:7 medium lockfile-without-manifest"]);
      assert.deepEqual(brief(await run([file("web/yarn.lock"), file("package.json")])), [
        "web/yarn.lock:7 medium lockfile-without-manifest",
      ]);
    });

    it("with its manifest, or a workspace's below it, nothing", async () => {
      assert.deepEqual(await run([file("package-lock.json"), file("package.json")]), []);
      assert.deepEqual(await run([file("pnpm-lock.yaml"), file("packages/a/package.json")]), []);
      assert.deepEqual(await run([file("pnpm-lock.yaml"), file("pnpm-workspace.yaml")]), []);
      assert.deepEqual(await run([file("deno.lock"), file("deno.jsonc")]), []);
      assert.deepEqual(await run([file("web/bun.lockb"), file("web/package.json", "renamed")]), []);
    });
  });

  describe("the hygiene group", () => {
    it("lists its six checks by name, each a BuiltinCheck", () => {
      assert.deepEqual(HYGIENE_CHECKS.map((c: BuiltinCheck) => c.name), [
        "hygiene/debt-markers",
        "hygiene/dead-exports",
        "hygiene/blast-radius",
        "hygiene/boundaries",
        "hygiene/secrets",
        "hygiene/lockfile",
      ]);
      for (const check of HYGIENE_CHECKS) assert.ok(check.description.length > 40, check.name);
    });

    it("runs together over one change: each check names what it owns", async () => {
      const added = [
        'import { shared } from "../core/shared.ts";',
        "// TODO: retry on 503",
        `const apiToken = "ghp_${"Zx8k".repeat(9)}";`,
        "export function unused() { return shared + apiToken; }",
        "",
      ].join("\n");
      const tree: Record<string, string> = {
        "package.json": '{ "name": "fx", "type": "module" }\n',
        "package-lock.json": '{ "lockfileVersion": 3 }\n',
        "core/shared.ts": "export const shared = 1;\n",
        "ui/new.ts": added,
      };
      for (let i = 0; i < 3; i++) tree[`ui/page${i}.ts`] = 'import { shared } from "../core/shared.ts";\nshared;\n';
      const { root, ctx } = await fixture(tree);
      const scope = scopeOf(root, [
        changed("ui/new.ts", added, "all"),
        changed("core/shared.ts", tree["core/shared.ts"], [1]),
        changed("package-lock.json", tree["package-lock.json"], [1]),
      ]);
      const checks = hygieneChecks({
        "blast-radius": { budget: 2 },
        boundaries: { rules: [{ from: "ui/**", disallow: "core/**" }] },
      });
      const findings = (await Promise.all(checks.map((check) => check.run(scope, ctx)))).flat();
      assert.deepEqual(findings.map((f) => `${f.check} ${f.file}:${f.line} ${f.severity}`), [
        "hygiene/debt-markers ui/new.ts:2 low",
        "hygiene/dead-exports ui/new.ts:4 low",
        "hygiene/blast-radius null:null medium",
        "hygiene/boundaries ui/new.ts:1 high",
        "hygiene/secrets ui/new.ts:3 critical",
        "hygiene/lockfile package-lock.json:1 medium",
      ]);
    });

    it("takes its options by check name and refuses a wrong one by its path", async () => {
      const { root, ctx } = await fixture({ "a.ts": "export const a = 1;\n", "b.ts": 'import { a } from "./a.ts";\n' });
      const checks = hygieneChecks({ "blast-radius": { budget: 0 } });
      const blast = checks.find((c) => c.name === "hygiene/blast-radius")!;
      assert.equal((await blast.run(scopeOf(root, [changed("a.ts", "export const a = 1;\n", [1])]), ctx)).length, 1);
      assert.throws(
        () => parseHygieneOptions({ "blast-radius": { budget: 2.5 } }),
        (error) =>
          error instanceof WardenError && error.code === "config_invalid" &&
          error.message ===
            "Invalid hygiene options at blast-radius.budget: the budget is a whole number of modules; options are keyed by check: debt-markers, dead-exports, blast-radius, boundaries, secrets, lockfile, each optional",
      );
      assert.throws(
        () => parseHygieneOptions({ secret: {} }),
        (error) =>
          error instanceof WardenError &&
          error.message.startsWith(
            "Invalid hygiene options at secret: unknown key; the keys are debt-markers, dead-exports, blast-radius,",
          ),
      );
      assert.throws(
        () => parseHygieneOptions({ "blast-radius": { limit: 3 } }),
        (error) =>
          error instanceof WardenError &&
          error.message.startsWith(
            "Invalid hygiene options at blast-radius.limit: unknown key; the keys are budget, runtimeOnly, severity;",
          ),
      );
    });
  });
});
