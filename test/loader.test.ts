// A tools directory with every kind of broken tool: startup stops with one
// error that names each file and its fix, as a shell command and as a server.
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { repoRoot, runtimeName, runWarden, startRaw } from "./helpers.ts";

// Plain JavaScript tools, so both runtimes load them as they are. They live
// inside the repository so that "valibot" resolves from node_modules.
const BRAND = 'const BRAND = Symbol.for("warden.tool");';
const tool = (name: string, input = "v.strictObject({})") =>
  `import * as v from "valibot";\n${BRAND}\nexport const tool = { [BRAND]: true, name: ${
    JSON.stringify(name)
  }, title: "T", description: "D.", risk: "read", input: ${input}, handler: () => "ok" };\n`;

const FILES: Record<string, string> = {
  "good.js": tool("good"),
  "dup.js": tool("dup"),
  "dup.mjs": tool("dup"),
  "no_export.js": "export const notATool = 1;\n",
  "bad_name.js": tool("Bad-Name"),
  "renamed.js": tool("other_name"),
  "loose.js": tool("loose", "v.object({})"),
  "transformed.js": tool("transformed", "v.strictObject({ n: v.pipe(v.string(), v.transform(Number)) })"),
  "broken_syntax.js": "export const tool = {;\n",
  "_helper.js": "throw new Error('files starting with _ are helpers and never loaded');\n",
  "good.test.js": "throw new Error('unit tests beside a tool (x.test.js) are never loaded');\n",
};

describe(`loader (${runtimeName})`, () => {
  const dir = path.join(repoRoot, ".test-tmp", `loader-${runtimeName}-${Date.now()}`);
  before(() => {
    mkdirSync(path.join(dir, "lib"), { recursive: true });
    for (const [name, text] of Object.entries(FILES)) writeFileSync(path.join(dir, name), text);
    writeFileSync(path.join(dir, "lib", "ignored.js"), "throw new Error('subfolders are never loaded');\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("stops `warden tools` with every problem, each naming its file and fix", async () => {
    const { code, stdout, stderr } = await runWarden(["tools"], { env: { WARDEN_TOOLS_DIR: dir } });
    assert.equal(code, 2);
    assert.equal(stdout, "");
    const lines = stderr.trimEnd().split("\n");
    assert.equal(lines[0], "warden: Cannot load the built-in tools:");
    const problems = lines.slice(1).map((line) => line.trim());
    const expected: RegExp[] = [
      /^bad_name\.js: tool name "Bad-Name" does not match \^\[a-z\]\[a-z0-9_\]\{0,63\}\$; use lowercase letters, digits and _$/,
      /^broken_syntax\.js: failed to import \(.+\); fix the module so it loads$/,
      /^dup\.mjs: tool name "dup" is also used by dup\.js; give each tool its own name$/,
      /^loose\.js: input is not a valibot strictObject; declare input as v\.strictObject\(\{ \.\.\. \}\)$/,
      /^no_export\.js: no `tool` export made by defineTool; add `export const tool = defineTool\(\{ \.\.\. \}\)`$/,
      /^renamed\.js: tool name "other_name" differs from the file name; rename the file to other_name\.ts or the tool to "renamed"$/,
      /^transformed\.js: input does not convert to JSON Schema \(.*transform.*\); keep input schemas declarative: no transform, check or custom$/,
    ];
    assert.equal(problems.length, expected.length, stderr);
    expected.forEach((pattern, i) => assert.match(problems[i], pattern));
  });

  it("stops the server with a structured startup_failed line and exit 2", async () => {
    const raw = startRaw({ env: { WARDEN_TOOLS_DIR: dir } });
    const { code } = await raw.exited();
    assert.equal(code, 2);
    assert.deepEqual(raw.lines(), [], "nothing on stdout");
    const line = JSON.parse(raw.stderr().trim().split("\n")[0]);
    assert.equal(line.level, "error");
    assert.equal(line.event, "startup_failed");
    assert.equal(line.code, "tool_load_failed");
    assert.match(line.error, /^Cannot load the built-in tools:\n {2}bad_name\.js: /);
  });
});

describe(`loader, the build's one module of tools (${runtimeName})`, () => {
  const dir = path.join(repoRoot, ".test-tmp", `loader-bundle-${runtimeName}-${Date.now()}`);
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("loads the tools a _builtin.js names, checks each by its file's name as a file of its own, and lists no other file", async () => {
    const bundled = path.join(dir, "bundled");
    mkdirSync(bundled, { recursive: true });
    writeFileSync(
      path.join(bundled, "_builtin.js"),
      `import * as v from "valibot";\n${BRAND}\n` +
        `const tool = (name) => ({ tool: { [BRAND]: true, name, title: "T", description: "D.", risk: "read", ` +
        `input: v.strictObject({}), handler: () => "ok" } });\n` +
        `export const BUILTIN_TOOLS = [["alpha.js", tool("alpha")], ["beta.js", tool("gamma")]];\n`,
    );
    // A file beside the bundle is not a tool of it: the bundle is the whole list.
    writeFileSync(path.join(bundled, "stray.js"), tool("stray"));
    const { code, stderr } = await runWarden(["tools"], { env: { WARDEN_TOOLS_DIR: bundled } });
    assert.equal(code, 2);
    assert.deepEqual(stderr.trimEnd().split("\n").map((line) => line.trim()), [
      "warden: Cannot load the built-in tools:",
      'beta.js: tool name "gamma" differs from the file name; rename the file to gamma.ts or the tool to "beta"',
    ]);
  });

  it("stops with the bundle's name and the fix when _builtin.js does not load", async () => {
    const broken = path.join(dir, "broken");
    mkdirSync(broken, { recursive: true });
    writeFileSync(path.join(broken, "_builtin.js"), "throw new Error('half a build');\n");
    const { code, stderr } = await runWarden(["tools"], { env: { WARDEN_TOOLS_DIR: broken } });
    assert.equal(code, 2);
    assert.match(stderr, /^warden: Cannot load _builtin\.js: half a build; rebuild with npm run build\n$/);
  });
});
