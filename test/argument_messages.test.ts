// Every argument message has one shape, whichever check failed and whichever way the call came: over MCP, from
// `warden call`, and for a plugin (validated against its manifest's JSON Schema) as for a built-in tool (valibot).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { builtinEntry } from "../core/catalog.ts";
import { describeIssue } from "../core/call/messages.ts";
import { validateJsonSchema } from "../core/json_schema.ts";
import { checkTool } from "../core/loader.ts";
import { tool as fixtureChecks } from "./fixtures/tools/fixture_checks.ts";
import { connect, fixtureToolsDir, runtimeName, runWarden, type Session, textOf } from "./helpers.ts";

/** One bad argument of fixture_checks per check valibot offers that warden's schemas use, and its message. */
const CASES: [Record<string, unknown>, string][] = [
  [{ text: 42 }, 'Invalid argument "text": expected string but received 42'],
  [{ flag: "yes" }, 'Invalid argument "flag": expected boolean but received "yes"'],
  [{ whole: 1.5 }, 'Invalid argument "whole": expected integer but received 1.5'],
  [{ least: 0 }, 'Invalid argument "least": expected >=1 but received 0'],
  [{ most: 11 }, 'Invalid argument "most": expected <=10 but received 11'],
  [{ above: 0 }, 'Invalid argument "above": expected >0 but received 0'],
  [{ below: 1 }, 'Invalid argument "below": expected <1 but received 1'],
  [{ even: 3 }, 'Invalid argument "even": expected multiple of 2 but received 3'],
  [{ limit: 1.5 }, 'Invalid argument "limit": expected integer but received 1.5'],
  [{ limit: 0 }, 'Invalid argument "limit": expected >=1 but received 0'],
  [{ limit: 101 }, 'Invalid argument "limit": expected <=100 but received 101'],
  [{ limit: "5" }, 'Invalid argument "limit": expected integer but received "5"'],
  [{ short: "abcd" }, 'Invalid argument "short": expected length <=3 but received length 4'],
  [{ filled: "" }, 'Invalid argument "filled": expected length >=1 but received length 0'],
  [{ pair: "abc" }, 'Invalid argument "pair": expected length 2 but received length 3'],
  [{ word: "a b" }, 'Invalid argument "word": expected text matching /^\\w+$/ but received "a b"'],
  [{ ref: "-x" }, 'Invalid argument "ref": expected a name, not an option but received "-x"'],
  [{ items: [] }, 'Invalid argument "items": expected length >=1 but received length 0'],
  [{ items: ["a", "b", "c"] }, 'Invalid argument "items": expected length <=2 but received length 3'],
  [{ items: "a" }, 'Invalid argument "items": expected array but received "a"'],
  [{ tags: ["a", ""] }, 'Invalid argument "tags[1]": expected length >=1 but received length 0'],
  [{ choice: "slow" }, 'Invalid argument "choice": expected "fast" | "thorough" but received "slow"'],
  [{ mode: "loose" }, 'Invalid argument "mode": expected "strict" but received "loose"'],
  [{ either: 3 }, 'Invalid argument "either": expected string | array but received 3'],
  [{ maybe: 3 }, 'Invalid argument "maybe": expected string | null but received 3'],
  [{ counts: { a: "x" } }, 'Invalid argument "counts.a": expected number but received "x"'],
  [{ counts: "x" }, 'Invalid argument "counts": expected object but received "x"'],
  [{ nested: { depth: 1.5 } }, 'Invalid argument "nested.depth": expected integer but received 1.5'],
  [{ nested: {} }, 'Missing argument "nested.depth": expected integer'],
];

/** Where a JSON Schema says the same as valibot in other words: `v.length(2)` is published as a range. */
const JSON_SCHEMA_WORDS: Record<string, string> = {
  'Invalid argument "pair": expected length 2 but received length 3':
    'Invalid argument "pair": expected length <=2 but received length 3',
  // A custom message is valibot's alone: the manifest carries only the pattern.
  'Invalid argument "ref": expected a name, not an option but received "-x"':
    'Invalid argument "ref": expected text matching /^[^-]/ but received "-x"',
};

const sameKey = (a: Record<string, unknown>, b: Record<string, unknown>) => Object.keys(a)[0] === Object.keys(b)[0];

describe(`argument messages (${runtimeName})`, () => {
  let session: Session;
  before(async () => {
    session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
  });
  after(async () => {
    await session.close();
  });

  it("says what each check expected and what it received, over MCP", async () => {
    for (const [args, message] of CASES) {
      const result = await session.client.callTool({ name: "fixture_checks", arguments: args });
      assert.equal(result.isError, true, JSON.stringify(args));
      assert.equal(textOf(result), message, JSON.stringify(args));
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "invalid_arguments");
    }
  });

  it("says the same from warden call, one line per argument, on stderr", async () => {
    // One bad value per argument, in one call: each argument's message on a line of its own.
    const once = CASES.filter(([args], i) => CASES.findIndex(([other]) => sameKey(other, args)) === i);
    const all = Object.assign({}, ...once.map(([args]) => args));
    const expected = once.map(([, message]) => message).join("\n");
    const { code, stdout, stderr } = await runWarden(["call", "fixture_checks", "--args", JSON.stringify(all)], {
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
    });
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(stderr, expected + "\n");
    const typed = await runWarden(["call", "fixture_checks", "--arg", "limit=1.5", "--arg", "items=[]"], {
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
    });
    assert.equal(
      typed.stderr,
      'Invalid argument "limit": expected integer but received 1.5\n' +
        'Invalid argument "items": expected length >=1 but received length 0\n',
    );
  });

  it("words a JSON Schema issue, as a plugin's arguments get, as it words the valibot issue", () => {
    const loaded = checkTool("fixture_checks.ts", fixtureChecks);
    assert.ok(!Array.isArray(loaded), String(loaded));
    const entry = builtinEntry(loaded);
    for (const [args, message] of CASES) {
      const validated = entry.validateInput(args);
      assert.ok(!validated.ok);
      assert.deepEqual(validated.issues.map((issue) => describeIssue(entry, issue)), [message]);
      const fromJson = validateJsonSchema(entry.descriptor.inputSchema, args);
      assert.deepEqual(
        fromJson.map((issue) => describeIssue(entry, issue)),
        [JSON_SCHEMA_WORDS[message] ?? message],
        JSON.stringify(args),
      );
    }
  });
});
