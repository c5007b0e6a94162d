// `warden init`: a project's client configuration with the package pinned (npx -y mcp-warden@<version>), merged into
// what the file holds, never half-written; and `warden command` from a clone, which keeps the clone's own form.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { repoRoot, runtimeName, runWarden, tempDir } from "./helpers.ts";

const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { name: string; version: string };
const PINNED = { command: "npx", args: ["-y", `${pkg.name}@${pkg.version}`] };

/** `warden init <args>` in a fresh project directory laid out by `files` (path to content). */
async function init(args: string[], files: Record<string, string> = {}) {
  const project = tempDir("warden-init-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(project.dir, file)), { recursive: true });
    writeFileSync(path.join(project.dir, file), text);
  }
  const result = await runWarden(["init", ...args], { cwd: project.dir });
  const read = (file: string) => readFileSync(path.join(project.dir, file), "utf8");
  return { ...result, dir: project.dir, read, remove: project.remove };
}

describe(`warden init (${runtimeName})`, () => {
  it("writes .mcp.json with the pinned npx form, and a second run leaves it as it is", async () => {
    const run = await init([]);
    try {
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.read(".mcp.json")), { mcpServers: { warden: PINNED } });
      assert.match(run.stdout, new RegExp(`^wrote \\.mcp\\.json: warden starts as npx -y ${pkg.name}@`));
      const written = run.read(".mcp.json");
      const again = await runWarden(["init"], { cwd: run.dir });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /^\.mcp\.json already registers warden as npx -y /);
      assert.equal(run.read(".mcp.json"), written);
      assert.deepEqual(readdirSync(run.dir), [".mcp.json"], "no temporary file is left");
    } finally {
      run.remove();
    }
  });

  it("merges into Cursor's file, keeping its other servers and keys", async () => {
    const other = { command: "other-server", args: ["--x"] };
    const run = await init(["--client", "cursor"], {
      ".cursor/mcp.json": JSON.stringify({ mcpServers: { other }, note: "kept" }),
    });
    try {
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.read(".cursor/mcp.json")), {
        mcpServers: { other, warden: PINNED },
        note: "kept",
      });
      assert.match(run.stdout, /^updated \.cursor\/mcp\.json/);
    } finally {
      run.remove();
    }
  });

  it("writes VS Code's servers with their stdio type, creating .vscode/", async () => {
    const run = await init(["--client=vscode"]);
    try {
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.read(".vscode/mcp.json")), { servers: { warden: { type: "stdio", ...PINNED } } });
    } finally {
      run.remove();
    }
  });

  it("refuses to replace a different warden entry unless --force, naming the file and the fix", async () => {
    const mine = JSON.stringify({ mcpServers: { warden: { command: "node", args: ["/x/main.js"] }, other: {} } });
    const run = await init([], { ".mcp.json": mine });
    try {
      assert.equal(run.code, 2);
      assert.match(run.stderr, /^warden: \.mcp\.json already registers warden: as \{"command":"node"/);
      assert.match(run.stderr, /run warden init again with --force to replace that entry/);
      assert.equal(run.read(".mcp.json"), mine, "left as it was");
      const forced = await runWarden(["init", "--force"], { cwd: run.dir });
      assert.equal(forced.code, 0, forced.stderr);
      assert.deepEqual(JSON.parse(run.read(".mcp.json")), { mcpServers: { warden: PINNED, other: {} } });
    } finally {
      run.remove();
    }
  });

  it("refuses a file that is not a JSON object of servers, naming the file, and leaves it as it was", async () => {
    const cases: [string, string, string, RegExp][] = [
      [
        "vscode",
        ".vscode/mcp.json",
        '{ // a comment\n "servers": {} }',
        /^warden: Cannot read \.vscode\/mcp\.json: it is not JSON \(/,
      ],
      ["claude", ".mcp.json", "[]", /^warden: Cannot read \.mcp\.json: expected a JSON object, received \[\]/],
      [
        "cursor",
        ".cursor/mcp.json",
        '{"mcpServers": []}',
        /^warden: Cannot read \.cursor\/mcp\.json: "mcpServers" is not an object of servers/,
      ],
    ];
    for (const [client, file, text, message] of cases) {
      const run = await init(["--client", client], { [file]: text });
      try {
        assert.equal(run.code, 2, file);
        assert.match(run.stderr, message);
        assert.equal(run.read(file), text, `${file} left as it was`);
      } finally {
        run.remove();
      }
    }
  });

  it("--print and Codex print the entry and write nothing", async () => {
    const printed = await init(["--print", "--client", "vscode"]);
    try {
      assert.equal(printed.code, 0, printed.stderr);
      assert.deepEqual(JSON.parse(printed.stdout), { servers: { warden: { type: "stdio", ...PINNED } } });
      assert.ok(!existsSync(path.join(printed.dir, ".vscode")), "nothing written");
    } finally {
      printed.remove();
    }
    const codex = await init(["--client", "codex"]);
    try {
      assert.equal(codex.code, 0, codex.stderr);
      assert.ok(codex.stdout.startsWith(`codex mcp add warden -- npx -y ${pkg.name}@${pkg.version}\n`), codex.stdout);
      assert.ok(
        codex.stdout.includes(`[mcp_servers.warden]\ncommand = "npx"\nargs = ["-y", "${pkg.name}@${pkg.version}"]\n`),
        codex.stdout,
      );
      assert.deepEqual(readdirSync(codex.dir), []);
    } finally {
      codex.remove();
    }
  });

  it("refuses an unknown client or argument with the usage", async () => {
    const client = await init(["--client", "emacs"]);
    const extra = await init(["--yes"]);
    try {
      assert.equal(client.code, 2);
      assert.match(
        client.stderr,
        /^warden: Invalid --client: expected claude, cursor, vscode, codex, received "emacs"/,
      );
      assert.equal(extra.code, 2);
      assert.match(extra.stderr, /unexpected "--yes" for "warden init"; use: warden init \[--client /);
      assert.deepEqual([...readdirSync(client.dir), ...readdirSync(extra.dir)], []);
    } finally {
      client.remove();
      extra.remove();
    }
  });

  it("--runtime writes the command warden command prints, with absolute paths, into --project's file", async () => {
    const elsewhere = tempDir("warden-init-cwd-");
    const project = tempDir("warden-init-project-");
    try {
      const printed = JSON.parse((await runWarden(["command", "--runtime", "node", "--json"])).stdout);
      const node = await runWarden(["init", "--runtime", "node", "--project", project.dir], { cwd: elsewhere.dir });
      assert.equal(node.code, 0, node.stderr);
      const written = JSON.parse(readFileSync(path.join(project.dir, ".mcp.json"), "utf8"));
      const { warden } = written.mcpServers;
      assert.deepEqual(Object.keys(warden), ["command", "args"]);
      assert.deepEqual(warden.args, printed.args);
      // The same program, by its path (under deno, warden command names node as it is called in PATH).
      assert.ok(path.isAbsolute(warden.command), warden.command);
      assert.equal(path.basename(warden.command), path.basename(printed.command));
      assert.equal(written.mcpServers.warden.args[0], path.join(repoRoot, "dist", "core", "main.js"));
      assert.deepEqual(readdirSync(elsewhere.dir), [], "nothing written where it ran");
      assert.match(node.stdout, /^wrote \.mcp\.json: warden starts as \/\S+ \/\S+main\.js/);
      assert.match(node.stdout, /\n\+ \{\n\+ {3}"command": /, "the diff shows the entry added");

      const deno = await runWarden(
        ["init", "--runtime=deno", "--client", "vscode", `--project=${project.dir}`],
        { cwd: elsewhere.dir },
      );
      assert.equal(deno.code, 0, deno.stderr);
      const entry = JSON.parse(readFileSync(path.join(project.dir, ".vscode", "mcp.json"), "utf8")).servers.warden;
      assert.equal(entry.type, "stdio");
      assert.match(entry.command, /\/deno$/);
      assert.ok(path.isAbsolute(entry.command));
      assert.equal(entry.args[0], "run");
      assert.ok(entry.args.some((arg: string) => arg.startsWith("--allow-read=")), "deno gets only what it needs");
      assert.ok(entry.args.includes(path.join(repoRoot, "dist", "core", "main.js")), "deno runs the build");
      assert.deepEqual(entry.env, { DENO_NO_UPDATE_CHECK: "1" });

      // A different entry is refused, then replaced with --force: the diff shows what went and what came.
      const refused = await runWarden(["init", "--project", project.dir]);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /\.mcp\.json already registers warden/);
      const replaced = await runWarden(["init", "--project", project.dir, "--force"]);
      assert.equal(replaced.code, 0, replaced.stderr);
      assert.match(
        replaced.stdout,
        new RegExp(`\\n-   "command": ${JSON.stringify(warden.command).replace(/[/.]/g, "\\$&")},`),
      );
      assert.match(replaced.stdout, /\n\+ {3}"command": "npx",/);
      assert.deepEqual(JSON.parse(readFileSync(path.join(project.dir, ".mcp.json"), "utf8")).mcpServers.warden, PINNED);
    } finally {
      elsewhere.remove();
      project.remove();
    }
  });

  it("refuses a --runtime or a --project it cannot use, writing nothing", async () => {
    const runtime = await init(["--runtime", "bun"]);
    const project = await init(["--project", "no/such/dir"]);
    try {
      assert.equal(runtime.code, 2);
      assert.match(runtime.stderr, /Invalid --runtime: expected node or deno, received "bun"/);
      assert.equal(project.code, 2);
      assert.match(project.stderr, /Invalid --project: expected the project's directory, received "no\/such\/dir"/);
      assert.deepEqual([...readdirSync(runtime.dir), ...readdirSync(project.dir)], []);
    } finally {
      runtime.remove();
      project.remove();
    }
  });

  it("README pins the package to package.json's version wherever it registers it", () => {
    const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
    const pins = [...readme.matchAll(new RegExp(`${pkg.name}@([^\\s"'\\]\`]+)`, "g"))].map((m) => m[1]);
    assert.ok(pins.length >= 8, `README shows the pinned form for each agent: ${pins.length}`);
    assert.deepEqual([...new Set(pins)], [pkg.version]);
    assert.ok(readme.includes(`claude mcp add warden -- npx -y ${pkg.name}@${pkg.version}\n`));
    assert.ok(readme.includes(`codex mcp add warden -- npx -y ${pkg.name}@${pkg.version}\``));
  });

  it("from a clone, warden command keeps the clone's own form (node <warden>/dist/core/main.js)", async () => {
    const printed = await runWarden(["command", "--runtime", "node", "--json"]);
    assert.equal(printed.code, 0, printed.stderr);
    const { command, args } = JSON.parse(printed.stdout);
    assert.notEqual(command, "npx");
    // Then the settings the tests give (their ledger and plugins directory), as flags.
    assert.equal(args[0], path.join(repoRoot, "dist", "core", "main.js"));
  });
});
