// A trusted manifest that does not read is refused naming the field and the fix, never half-read: one row per way
// of getting it wrong, and the defaults a well-formed check gets.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WardenError } from "../../../core/errors.ts";
import { readManifest } from "./manifest.ts";

const encode = (value: unknown) => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));
const check = { id: "unit", entry: "node", args: ["--test"], output: "pass-fail", executes_repo_code: true };
const FIX =
  "; fix it, sign it again (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json) and pin it again (warden checks trust app)";

describe("a repository check manifest's format", () => {
  it("reads a well-formed one as given, with pre-commit's and trunk's defaults left to the planner", () => {
    assert.deepEqual(readManifest(encode({ version: 1, checks: [check] }), "app"), [check]);
    // Programs that do not run the repository's code as such take the signer's word.
    const lint = { id: "lint", entry: "deno", args: ["lint", "--json"], output: "deno-lint-json" };
    const grep = { id: "grep", entry: "git", args: ["grep", "-q", "x"], output: "pass-fail" };
    for (const declared of [lint, grep]) {
      const checks = [{ ...declared, executes_repo_code: false }];
      assert.deepEqual(readManifest(encode({ version: 1, checks }), "app"), checks);
    }
  });

  const malformed: { title: string; manifest: unknown; detail: string }[] = [
    {
      title: "a program run_checks does not declare",
      manifest: { version: 1, checks: [{ ...check, entry: "python" }] },
      detail:
        'checks[0].entry: expected one program run_checks declares (git, node, tsc, eslint, deno), its arguments in args, received "python"',
    },
    {
      title: "a shell string for entry",
      manifest: { version: 1, checks: [{ ...check, entry: "node --test" }] },
      detail:
        'checks[0].entry: expected one program run_checks declares (git, node, tsc, eslint, deno), its arguments in args, received "node --test"',
    },
    {
      title: "args as one string",
      manifest: { version: 1, checks: [{ ...check, args: "--test src" }] },
      detail: 'checks[0].args: expected Array, received "--test src"',
    },
    {
      title: "a missing executes_repo_code",
      manifest: { version: 1, checks: [{ id: "x", entry: "node", output: "tsc" }] },
      detail: "checks[0].executes_repo_code: missing, and it is required",
    },
    {
      title: "an output format warden cannot read",
      manifest: { version: 1, checks: [{ ...check, output: "regex" }] },
      detail: 'checks[0].output: expected one of sarif, eslint-json, deno-lint-json, tsc, pass-fail, received "regex"',
    },
    {
      title: "an exit code that is none",
      manifest: { version: 1, checks: [{ ...check, success_codes: [0, 300] }] },
      detail: "checks[0].success_codes[1]: expected <=255, received 300",
    },
    {
      title: "a field of another format (a shell `run`)",
      manifest: { version: 1, checks: [{ ...check, run: "npm test" }] },
      detail: 'checks[0].run: unknown field "run" (the program is `entry`, its arguments `args`)',
    },
    {
      title: "an id that is not one",
      manifest: { version: 1, checks: [{ ...check, id: "Unit Tests" }] },
      detail: 'checks[0].id: expected an id of lowercase letters, digits, `.`, `_` and `-`, received "Unit Tests"',
    },
    {
      title: "two checks with one id",
      manifest: { version: 1, checks: [check, check] },
      detail: 'checks[1].id: "unit" is the id of an earlier check',
    },
    {
      title: "node declared as running no repository code",
      manifest: { version: 1, checks: [{ ...check, executes_repo_code: false }] },
      detail:
        "checks[0].executes_repo_code: false, but node runs JavaScript the repository supplies (a file of it, or code in this manifest); declare it true (it then runs only isolated)",
    },
    {
      title: "deno test declared as running no repository code",
      manifest: {
        version: 1,
        checks: [{ ...check, entry: "deno", args: ["test", "-A"], executes_repo_code: false }],
      },
      detail:
        "checks[0].executes_repo_code: false, but deno test runs code; declare it true (it then runs only isolated)",
    },
    {
      title: "another version",
      manifest: { version: 2, checks: [check] },
      detail: "version: expected 1, received 2",
    },
    {
      title: "no checks",
      manifest: { version: 1, checks: [] },
      detail: "checks: expected at least one check, received []",
    },
    {
      title: "a list at the top",
      manifest: [check],
      detail:
        'expected an object {"version": 1, "checks": [...]}, received [{"id":"unit","entry":"node","args":["--test"],"output":"pass-fail","executes...',
    },
    {
      title: "a duplicate key, which two JSON parsers would read two ways",
      manifest: '{"version": 1, "version": 1, "checks": []}',
      detail: "it is not JSON: ",
    },
  ];
  for (const { title, manifest, detail } of malformed) {
    it(`refuses ${title}, naming the field and the fix`, () => {
      assert.throws(() => readManifest(encode(manifest), "app"), (error: unknown) => {
        assert.ok(error instanceof WardenError, String(error));
        assert.equal(error.code, "invalid_manifest");
        const prefix = `Invalid check manifest ".warden/checks.json" in root "app": ${detail}`;
        if (detail.endsWith(": ")) {
          assert.ok(error.message.startsWith(prefix) && error.message.endsWith(FIX), error.message);
        } else assert.equal(error.message, prefix + FIX);
        return true;
      });
    });
  }
});
