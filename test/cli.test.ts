// The shell commands: tools, call, catalog, command, help, and the errors of each.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { childEnv, fixtureToolsDir, onDeno, repoRoot, runtimeName, runWarden, skipOrFail, tempDir } from "./helpers.ts";

describe(`cli (${runtimeName})`, () => {
  it("warden tools prints name, risk class and the summary sentence", async () => {
    const { code, stdout, stderr } = await runWarden(["tools"]);
    assert.equal(code, 0, stderr);
    const lines = stdout.trimEnd().split("\n");
    assert.match(lines[0], /^NAME\s+RISK\s+DESCRIPTION$/);
    assert.match(lines[1], /^change_summary\s+gate\s+Summarises the changes in a root's git working tree .*\.$/);
    assert.match(lines[2], /^checks_approve\s+gate\s+An approver's decision on a pending plan\.$/);
    assert.match(
      lines[4],
      /^checks_request\s+gate\s+Asks for a run_checks run that must not happen on an agent's say-so .*\.$/,
    );
    assert.match(lines[5], /^checks_status\s+read\s+Answers for a request checks_request made, .*\.$/);
    assert.match(lines[7], /^code_about\s+read\s+Describes one JavaScript or TypeScript module of a root: .*\.$/);
    assert.match(
      lines[11],
      /^extension_list\s+read\s+Lists every plugin directory, the user's and the project's \(\.warden\/plugins\/\), with its id, .*\.$/,
    );
    assert.match(lines[12], /^host_context\s+read\s+Describes this warden server: .*\.$/);
    assert.match(
      lines[13],
      /^run_checks\s+gate\s+Runs a check group over a root's change before you ship it and answers PASS, FAIL or ERROR: .*\.$/,
    );
    assert.match(lines[14], /^run_checks_result\s+read\s+Answers for a job run_checks_start began: .*\.$/);
    assert.match(lines[15], /^run_checks_start\s+gate\s+Starts run_checks as a job and answers at once .*\.$/);
    assert.match(lines[16], /^tech_debt_check\s+read\s+Finds TODO, FIXME, HACK, XXX and STUB markers .*\.$/);
    assert.equal(stderr, "", "nothing on stderr for a clean run");
  });

  it("warden tools --json prints the tools/list result", async () => {
    const { code, stdout } = await runWarden(["tools", "--json"]);
    assert.equal(code, 0);
    const golden = JSON.parse(readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8"));
    assert.deepEqual(JSON.parse(stdout).tools, golden.tools);
  });

  it("warden call runs a tool with --arg values typed by its schema", async () => {
    const { code, stdout, stderr } = await runWarden(
      [
        "call",
        "fixture_echo",
        "--arg",
        "text=123",
        "--arg",
        "count=2",
        "--arg",
        "tags=a",
        "--arg=tags=b",
        "--arg",
        'nested={"flag":true}',
      ],
      { env: { WARDEN_TOOLS_DIR: fixtureToolsDir } },
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { text: "123", count: 2, tags: ["a", "b"], nested: { flag: true } });
  });

  it("warden call --args takes JSON and --json prints the whole result", async () => {
    const { code, stdout } = await runWarden(["call", "host_context", "--args", "{}", "--json"]);
    assert.equal(code, 0);
    const result = JSON.parse(stdout);
    assert.equal(result.structuredContent.transport, "cli");
    assert.equal(result.structuredContent.protocolVersion, null);
    assert.equal(result.structuredContent.runtime.name, runtimeName);
  });

  it("warden --version prints the version of package.json", async () => {
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8"));
    for (const flag of ["--version", "version"]) {
      const { code, stdout, stderr } = await runWarden([flag]);
      assert.equal(code, 0, stderr);
      assert.equal(stdout, `warden ${version}\n`);
    }
  });

  it("warden call <tool> --help describes the tool and each argument from its input schema, and runs nothing", async () => {
    const env = { WARDEN_TOOLS_DIR: fixtureToolsDir };
    const { code, stdout, stderr } = await runWarden(["call", "fixture_checks", "--arg", "limit=0", "--help"], { env });
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "");
    const lines = stdout.split("\n");
    assert.equal(lines[0], "Usage: warden call fixture_checks [--arg key=value]... [--args <json>] [--json]");
    assert.equal(
      lines[2],
      "Checks (risk class read): Returns its arguments as JSON; each argument has one kind of check. Test fixture.",
    );
    const argumentLines = lines.filter((l) => /^ {2}\w+: /.test(l));
    assert.deepEqual(argumentLines, [
      "  text: string, optional",
      "  flag: true | false, optional",
      "  whole: integer, optional",
      "  least: number >=1, optional",
      "  most: number <=10, optional",
      "  above: number >0, optional",
      "  below: number <1, optional",
      "  even: number, multiple of 2, optional",
      "  limit: integer 1..100, optional",
      "  short: string, length <=3, optional",
      "  filled: string, length >=1, optional",
      "  pair: string, length 2, optional",
      "  word: string matching /^\\w+$/, optional",
      "  ref: string matching /^[^-]/, optional",
      "  items: array (length 1..2) of string, optional",
      "  tags: array of string, length >=1, optional",
      '  choice: "fast" | "thorough", optional',
      '  mode: "strict", optional',
      "  either: string | array of string, optional",
      "  maybe: string | null, optional",
      "  counts: object (JSON), optional",
      "  nested: object (JSON), optional",
    ]);
    const echo = await runWarden(["call", "fixture_echo", "--help"], { env });
    assert.match(echo.stdout, /^ {2}text: string, required$/m);
    const debt = await runWarden(["call", "tech_debt_check", "-h"]);
    assert.match(debt.stdout, /^ {2}limit: integer 1\.\.100000, optional\n {6}Most findings of each list on one page/m);
    const none = await runWarden(["call", "fixture_throws", "--help"], { env });
    assert.match(none.stdout, /\n\nIt takes no arguments\.\n$/);
    const usage = await runWarden(["call", "--help"]);
    assert.equal(usage.code, 0);
    assert.match(usage.stdout, /^Usage: warden call <tool> \[--arg key=value\]\.\.\. \[--args <json>\] \[--json\]\n/);
  });

  it("warden call exits 1 with the tool's error on stderr", async () => {
    const { code, stdout, stderr } = await runWarden(["call", "tech_debt_check", "--arg", "limit=0"]);
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(stderr, 'Invalid argument "limit": expected >=1 but received 0\n');
    const fraction = await runWarden(["call", "tech_debt_check", "--arg", "limit=1.5"]);
    assert.equal(fraction.code, 1);
    assert.equal(fraction.stderr, 'Invalid argument "limit": expected integer but received 1.5\n');
  });

  const usageErrors: { args: string[]; message: string }[] = [
    { args: ["call", "nope"], message: 'warden: Unknown tool: "nope"; run "warden tools" to list the tools\n' },
    {
      args: ["call"],
      message:
        'warden: Invalid command line: missing the tool name; run "warden call <tool> --arg key=value", see "warden tools"\n',
    },
    {
      args: ["call", "fixture_echo", "--arg", "novalue"],
      message:
        'warden: Invalid command line: --arg expects key=value, received "novalue"; for example --arg root=default\n',
    },
    {
      args: ["call", "fixture_echo", "--args", "[1]"],
      message:
        'warden: Invalid command line: --args expects a JSON object, received "[1]"; for example --args \'{"project_id":"default"}\'\n',
    },
    { args: ["frobnicate"], message: 'warden: Unknown command "frobnicate": run "warden help" for the commands\n' },
    {
      args: ["tools", "--call-timeout", "soon"],
      message:
        'warden: Invalid --call-timeout: expected a duration from 1ms to 60m such as 500ms, 30s or 2m, received "soon"\n',
    },
    {
      args: ["tools", "--call-timeout", "0"],
      message:
        'warden: Invalid --call-timeout: expected a duration from 1ms to 60m such as 500ms, 30s or 2m, received "0"\n',
    },
    {
      args: ["tools", "--log-level", "loud"],
      message: 'warden: Invalid --log-level: expected one of debug, info, warn, error, received "loud"\n',
    },
    {
      args: ["tools", "--root", "Bad Id=/tmp"],
      message:
        'warden: Invalid --root: expected <id>=<dir> with an id of lowercase letters, digits, - and _, received "Bad Id=/tmp"; for example --root app=./src\n',
    },
    {
      args: ["tools", "--root"],
      message: "warden: Missing value for --root: the flag is the last argument; pass --root <value>\n",
    },
    {
      args: ["command", "--runtime", "bun"],
      message: 'warden: Invalid --runtime: expected node or deno, received "bun"\n',
    },
    {
      args: ["command", "--frob"],
      message:
        'warden: Invalid command line: unexpected "--frob" for "warden command"; use --runtime node or --runtime deno, --node-permission and --json\n',
    },
    {
      args: ["catalog", "--frob"],
      message:
        'warden: Invalid command line: unexpected "--frob" for "warden catalog"; use one of --check or --update, and optionally --golden <file>\n',
    },
  ];
  for (const { args, message } of usageErrors) {
    it(`refuses \`${args.join(" ")}\` with exit 2 and a message that says what to do`, async () => {
      const { code, stdout, stderr } = await runWarden(args, { env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
      assert.equal(code, 2);
      assert.equal(stdout, "");
      assert.equal(stderr, message);
    });
  }

  it("warden command prints the registration command, with the settings it was given as flags", async () => {
    const work = tempDir();
    try {
      const ledger = path.join(work.dir, "ledger");
      // The scratch of gate calls in a temp directory of the test's own: /tmp may hold this clone (CI's may).
      const jobs = path.join(work.dir, "jobs");
      const env = {
        WARDEN_ROOTS: `app=${path.join(repoRoot, "test")}`,
        WARDEN_LEDGER: ledger,
        WARDEN_JOBS_DIR: jobs,
        TMPDIR: work.dir,
      };
      const node = await runWarden(["command", "--runtime", "node", "--json"], { env });
      assert.equal(node.code, 0, node.stderr);
      const plugins = path.join(repoRoot, ".test-tmp", "no-plugins");
      assert.deepEqual(JSON.parse(node.stdout).args, [
        path.join(repoRoot, "dist/core/main.js"),
        "--root",
        `app=${path.join(repoRoot, "test")}`,
        "--plugins-dir",
        plugins,
        "--ledger",
        ledger,
        "--jobs-dir",
        jobs,
      ]);
      const deno = JSON.parse((await runWarden(["command", "--runtime", "deno", "--json"], { env })).stdout);
      assert.match(deno.command, /deno(\.exe)?$/);
      const flag = (name: string) => (deno.args as string[]).find((a) => a.startsWith(`${name}=`))?.split("=")[1];
      const grants = (name: string, file: string) =>
        flag(name)!.split(",").some((granted) => file === granted || file.startsWith(granted + "/"));
      assert.ok(grants("--allow-read", path.join(repoRoot, "test")), flag("--allow-read"));
      assert.ok(!flag("--allow-read")!.split(",").includes("."), "explicit roots: no working directory");
      assert.ok(grants("--allow-write", ledger), flag("--allow-write"));
      assert.ok(grants("--allow-write", jobs) && grants("--allow-read", jobs), "run_checks keeps its jobs there");
      assert.ok(!grants("--allow-write", repoRoot), flag("--allow-write"));
      assert.deepEqual(deno.args.slice(-9), [
        path.join(repoRoot, "dist/core/main.js"),
        "--root",
        `app=${path.join(repoRoot, "test")}`,
        "--plugins-dir",
        plugins,
        "--ledger",
        ledger,
        "--jobs-dir",
        jobs,
      ]);
    } finally {
      work.remove();
    }
  });

  it("warden command grants deno bubblewrap alone where it is, and every program where it is not", async (t) => {
    // A PATH with git and without bwrap: the gate program is started by warden, and killing its process group
    // needs the unrestricted --allow-run.
    const work = tempDir();
    try {
      const git = ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"].find((p) => existsSync(p));
      const bwrap = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"].find((p) => existsSync(p));
      if (!git || !bwrap) return skipOrFail(t, "this test needs git and bubblewrap: apt-get install git bubblewrap");
      const noBwrap = path.join(work.dir, "bin");
      mkdirSync(noBwrap);
      symlinkSync(git, path.join(noBwrap, "git"));
      const flags = async (PATH: string) =>
        JSON.parse((await runWarden(["command", "--runtime", "deno", "--json"], { env: { PATH } })).stdout).args
          .filter((a: string) => a.startsWith("--allow-run"));
      assert.deepEqual(await flags(noBwrap), ["--allow-run"]);
      assert.deepEqual(await flags(`${path.dirname(bwrap)}:${path.dirname(git)}`), [`--allow-run=${bwrap}`]);
    } finally {
      work.remove();
    }
  });

  it("refuses a malformed WARDEN_CALL_TIMEOUT by name", async () => {
    const { code, stderr } = await runWarden(["tools"], { env: { WARDEN_CALL_TIMEOUT: "1h30" } });
    assert.equal(code, 2);
    assert.match(stderr, /^warden: Invalid WARDEN_CALL_TIMEOUT: expected a duration .* received "1h30"\n$/);
  });

  it("warden catalog --check passes on the golden file", async () => {
    const { code, stderr } = await runWarden(["catalog", "--check"]);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /^Catalog matches schema\/catalog\.json \(sha256:[0-9a-f]{64}\)\n$/);
  });

  it("warden catalog --check fails with a readable diff, and --update rewrites the golden file", async () => {
    const work = tempDir();
    try {
      const golden = path.join(work.dir, "catalog.json");
      writeFileSync(golden, readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8"));
      const env = { WARDEN_TOOLS_DIR: fixtureToolsDir };
      const check = await runWarden(["catalog", "--check", "--golden", golden], { env });
      assert.equal(check.code, 1);
      assert.match(
        check.stderr,
        new RegExp(`^--- ${golden.replaceAll("/", "\\/")} \\(golden\\)\n\\+\\+\\+ catalog \\(this build\\)\n@@ `),
      );
      assert.match(check.stderr, /^\+\s+"name": "fixture_echo",$/m, "an added tool shows as + lines");
      assert.match(check.stderr, /^-\s+"name": "host_context",$/m, "a removed tool shows as - lines");
      assert.match(check.stderr, /If the change is intended, run "warden catalog --update" and commit the file\.\n$/);

      const update = await runWarden(["catalog", "--update", "--golden", golden], { env });
      assert.equal(update.code, 0, update.stderr);
      const recheck = await runWarden(["catalog", "--check", "--golden", golden], { env });
      assert.equal(recheck.code, 0, recheck.stderr);
      const printed = await runWarden(["catalog"], { env });
      assert.equal(printed.stdout, readFileSync(golden, "utf8") + "\n".repeat(0));
    } finally {
      work.remove();
    }
  });

  it("warden help lists the commands and every setting", async () => {
    const { code, stdout } = await runWarden(["help"]);
    assert.equal(code, 0);
    for (
      const word of [
        "warden tools",
        "warden call",
        "warden catalog",
        "--root",
        "WARDEN_ROOTS",
        "--call-timeout",
        "WARDEN_TOOLS_DIR",
      ]
    ) {
      assert.ok(stdout.includes(word), `help mentions ${word}`);
    }
  });
});

// npm runs the build; the script is the same under either runtime's suite, so it is tested once.
if (!onDeno) {
  describe("npm run warden, piped", () => {
    it("gives clean JSON on stdout with -s, as README says, where npm's banner comes first without it", () => {
      const npm = (args: string[]) =>
        spawnSync(process.platform === "win32" ? "npm.cmd" : "npm", args, {
          cwd: repoRoot,
          env: childEnv(),
          encoding: "utf8",
        });
      const quiet = npm(["run", "-s", "warden", "--", "call", "host_context"]);
      assert.equal(quiet.status, 0, quiet.stderr);
      assert.equal(JSON.parse(quiet.stdout).transport, "cli");
      const loud = npm(["run", "warden", "--", "--version"]);
      assert.match(loud.stdout, /^\n> mcp-warden@[^\n]+ warden\n/, "npm's banner, why README says -s");
    });
  });
}
