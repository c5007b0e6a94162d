// Boundary rules as declared and as matched: globs for files, package names and `node:` built-ins for imports,
// exceptions on both sides, type-only imports, and which imports count as added by a change.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WardenError } from "../../../../core/errors.ts";
import { compileRules, importAdded, importTargets } from "./boundaries.ts";

describe("boundary rules", () => {
  it("from and fromNot choose the files a rule applies to", () => {
    const [rule] = compileRules([{ from: ["core/**", "lib/*.ts"], fromNot: "core/testing/**", disallow: "tools/**" }]);
    assert.equal(rule.appliesTo("core/a.ts"), true);
    assert.equal(rule.appliesTo("core/deep/b.ts"), true);
    assert.equal(rule.appliesTo("lib/c.ts"), true);
    assert.equal(rule.appliesTo("lib/sub/c.ts"), false);
    assert.equal(rule.appliesTo("core/testing/fake.ts"), false);
    assert.equal(rule.appliesTo("tools/x.ts"), false);
  });

  it("disallow and allow decide what an import may name", () => {
    const [rule] = compileRules([{ from: "**", disallow: ["tools/**", "node:*", "lodash"], allow: "tools/public/**" }]);
    assert.equal(rule.forbids(["tools/x.ts"]), true);
    assert.equal(rule.forbids(["tools/public/p.ts"]), false);
    assert.equal(rule.forbids(["core/x.ts"]), false);
    assert.equal(rule.forbids(importTargets("fs", { kind: "builtin", name: "fs" })), true);
    assert.equal(rule.forbids(importTargets("node:path", { kind: "builtin", name: "path" })), true);
    assert.equal(
      rule.forbids(importTargets("lodash/fp", { kind: "external", package: "lodash", installed: true })),
      true,
    );
    assert.equal(
      rule.forbids(importTargets("lodash-es", { kind: "external", package: "lodash-es", installed: true })),
      false,
    );
  });

  it("names, severities and type-only imports take their defaults", () => {
    const [plain, named] = compileRules([
      { from: "a/**", disallow: ["b/**", "c/**"] },
      { name: "ui-no-db", from: "ui/**", disallow: "db/**", severity: "critical", typeOnly: false, comment: "why" },
    ]);
    assert.equal(plain.name, "a/** -> b/**,c/**");
    assert.equal(plain.severity, "high");
    assert.equal(plain.typeOnly, true);
    assert.deepEqual([named.name, named.severity, named.typeOnly, named.comment], [
      "ui-no-db",
      "critical",
      false,
      "why",
    ]);
  });

  it("a rule that is not one is refused with its index, its field and the shape to write", () => {
    const refused = (rules: unknown, message: string) =>
      assert.throws(
        () => compileRules(rules),
        (error) => error instanceof WardenError && error.code === "config_invalid" && error.message === message,
      );
    const fix = 'write each as { from: "core/**", disallow: ["tools/**"] } with globs relative to the root';
    refused(
      [{ from: "a/**", disallow: [] }],
      `Invalid boundary rule 0 (disallow): an empty list matches nothing; ${fix}`,
    );
    refused(
      [{ from: 3, disallow: "b" }],
      `Invalid boundary rule 0 (from): expected a glob or a list of globs, received 3; ${fix}`,
    );
    refused([{ from: "a" }], `Invalid boundary rule 0 (disallow): it is missing; ${fix}`);
    refused(
      [{ from: "a", disallow: "b" }, { from: "a", disallow: "b", to: "c" }],
      `Invalid boundary rule 1 (to): unknown key; the keys are name, from, fromNot, disallow, allow, typeOnly, severity, comment; ${fix}`,
    );
    refused({ from: "a" }, `Invalid boundary rules: Invalid type: Expected Array but received Object; ${fix}`);
  });
});

describe("imports a change adds", () => {
  it("the first line of the statement added, or an added line below it that carries the specifier", () => {
    assert.equal(importAdded("./x.ts", 3, new Map([[3, 'import { a } from "./x.ts";']])), true);
    assert.equal(importAdded("./x.ts", 3, new Map([[5, '} from "./x.ts";']])), true);
    assert.equal(importAdded("./x.ts", 3, new Map([[5, '} from "./y.ts";']])), false);
    // A name added to an import that was already there is no new edge.
    assert.equal(importAdded("./x.ts", 3, new Map([[4, "  b,"]])), false);
    assert.equal(importAdded("./x.ts", 3, new Map([[2, 'import "./x.ts";']])), false);
  });

  it("what an import names: the resolved file, or a package's and a built-in's names", () => {
    assert.deepEqual(importTargets("./a.js", { kind: "module", path: "a.d.ts", also: "a.js" }), ["a.d.ts", "a.js"]);
    assert.deepEqual(importTargets("./s.css", { kind: "asset", path: "s.css" }), ["s.css"]);
    assert.deepEqual(importTargets("fs", { kind: "builtin", name: "fs" }), ["fs", "node:fs"]);
    assert.deepEqual(
      importTargets("@s/p/deep", { kind: "external", package: "@s/p", installed: false }),
      ["@s/p/deep", "@s/p"],
    );
    assert.deepEqual(importTargets("./gone.ts", { kind: "unresolved", reason: "", internal: true }), []);
    assert.deepEqual(importTargets("~/alias", { kind: "unresolved", reason: "", internal: true }), ["~/alias"]);
  });
});
