// The deployment policy refuses calls by name and code, and every call, run
// or refused, leaves one hash-chained ledger row that `warden ledger verify`
// checks; tampering, a torn tail, an absent or unreadable ledger each get
// their own exit code.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import {
  bwrap,
  connect,
  eventually,
  fixtureToolsDir,
  runtimeName,
  runWarden,
  shellQuote,
  tempDir,
  textOf,
  wardenCommand,
} from "./helpers.ts";

describe(`deployment policy (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(() => {
    work = tempDir();
  });
  after(() => work.remove());

  it("--max-risk read refuses gate tools with risk_class_disabled, keeping them listed", async () => {
    const plain = await runWarden(["tools", "--json"]);
    const session = await connect({
      args: ["--max-risk", "read", "--root", `default=${work.dir}`],
      env: { WARDEN_LEDGER: path.join(work.dir, "l1") },
    });
    try {
      const { tools } = await session.client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        JSON.parse(plain.stdout).tools.map((t: { name: string }) => t.name),
        "the catalog does not depend on policy",
      );
      const result = await session.client.callTool({ name: "change_summary", arguments: {} });
      assert.equal(result.isError, true);
      assert.equal(
        textOf(result),
        'Tool "change_summary" is refused: its risk class "gate" is above this deployment\'s --max-risk "read"; nothing was run',
      );
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "risk_class_disabled");
      const allowed = await session.client.callTool({ name: "host_context", arguments: {} });
      assert.equal(allowed.isError, undefined);
    } finally {
      await session.close();
    }
  });

  it("--disable-tool refuses with policy_denied, in structuredContent too when the tool has no output schema", async () => {
    const session = await connect({
      args: ["--disable-tool", "fixture_echo"],
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: path.join(work.dir, "l2") },
    });
    try {
      const result = await session.client.callTool({ name: "fixture_echo", arguments: { text: "hi" } });
      assert.equal(result.isError, true);
      const message = 'Tool "fixture_echo" is refused: this deployment disables it (--disable-tool); nothing was run';
      assert.equal(textOf(result), message);
      assert.deepEqual(result.structuredContent, { error_code: "policy_denied", message });
    } finally {
      await session.close();
    }
  });

  it("--require-principal refuses until the server has a principal, which the ledger records", async () => {
    // Quotes, a backslash and non-ASCII: the row is written field by field and must still be canonical JSON.
    const principal = '"ada"\\lovelace@exämple.com✓';
    const ledger = path.join(work.dir, "l3");
    const without = await runWarden(["call", "host_context", "--require-principal", "host_context"], {
      env: { WARDEN_LEDGER: ledger },
    });
    assert.equal(without.code, 1);
    assert.equal(
      without.stderr.split("\n").find((l) => l.startsWith("Tool")),
      'Tool "host_context" is refused: it needs a principal and this server has none; start warden with --principal <who>',
    );
    const withPrincipal = await runWarden([
      "call",
      "host_context",
      "--require-principal",
      "host_context",
      "--principal",
      principal,
    ], {
      env: { WARDEN_LEDGER: ledger },
    });
    assert.equal(withPrincipal.code, 0, withPrincipal.stderr);
    const rows = readdirSync(ledger).flatMap((f) => readFileSync(path.join(ledger, f), "utf8").trim().split("\n")).map((
      l,
    ) => JSON.parse(l));
    assert.deepEqual(rows.map((r) => [r.decision, r.reason, r.principal]).sort(), [
      ["allowed", null, principal],
      ["denied", "policy_denied", null],
    ]);
    const verified = await runWarden(["ledger", "verify", "--ledger", ledger]);
    assert.equal(verified.code, 0, verified.stdout);
  });

  it("refuses a policy that names a tool that does not exist", async () => {
    const { code, stderr } = await runWarden(["tools", "--disable-tool", "no_such_tool"]);
    assert.equal(code, 2);
    assert.equal(
      stderr,
      'warden: Invalid --disable-tool: no tool is named "no_such_tool"; run "warden tools" for the names\n',
    );
  });

  it("refuses a malformed --max-risk by name", async () => {
    const { code, stderr } = await runWarden(["tools", "--max-risk", "write"]);
    assert.equal(code, 2);
    assert.equal(
      stderr,
      'warden: Invalid --max-risk: expected one of read, gate, external-side-effect, received "write"\n',
    );
  });
});

describe(`call ledger (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let ledger: string;
  before(async () => {
    work = tempDir();
    ledger = path.join(work.dir, "ledger");
    // Two servers at once on one ledger directory, as two agents would run them.
    const env = { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger };
    const [a, b] = await Promise.all([connect({ env }), connect({ env })]);
    try {
      await Promise.all([
        ...Array.from(
          { length: 20 },
          (_, i) => a.client.callTool({ name: "fixture_echo", arguments: { text: `secret-${i}` } }),
        ),
        ...Array.from(
          { length: 20 },
          (_, i) => b.client.callTool({ name: "fixture_echo", arguments: { text: `secret-${i}` } }),
        ),
        a.client.callTool({ name: "fixture_throws", arguments: {} }),
      ]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
  after(() => work.remove());

  const files = () => readdirSync(ledger).sort().map((f) => path.join(ledger, f));

  it("writes one intact chain per server, never the arguments", async () => {
    assert.equal(files().length, 2, "one file per process");
    const { code, stdout } = await runWarden(["ledger", "verify", "--ledger", ledger, "--json"]);
    assert.equal(code, 0, stdout);
    assert.deepEqual(JSON.parse(stdout), { status: "intact", files: 2, rows: 41, firstBad: null });
    const text = files().map((f) => readFileSync(f, "utf8")).join("");
    assert.ok(!text.includes("secret-"), "arguments never reach the ledger");
    const rows = text.trim().split("\n").map((l) => JSON.parse(l));
    assert.ok(rows.some((r) => r.tool === "fixture_throws" && r.outcome === "error" && r.errorCode === "tool_failed"));
    assert.ok(rows.every((r) => /^sha256:[0-9a-f]{64}$/.test(r.argsHash) && r.decision === "allowed"));
  });

  it("names the first bad row of an edited ledger (exit 3)", async () => {
    const copy = path.join(work.dir, "edited");
    mkdirSync(copy);
    const [first] = files();
    const lines = readFileSync(first, "utf8").split("\n");
    lines[4] = lines[4].replace('"tool":"fixture_echo"', '"tool":"fixture_elsewhere"');
    writeFileSync(path.join(copy, path.basename(first)), lines.join("\n"));
    const { code, stdout } = await runWarden(["ledger", "verify", "--ledger", copy]);
    assert.equal(code, 3);
    assert.equal(
      stdout,
      `Ledger broken: first bad row ${path.basename(first)} line 6 (prev does not match the previous row)\n`,
    );
  });

  it("tells a torn tail (exit 4), an absent ledger (exit 5) and an unreadable one (exit 6) apart", async () => {
    const torn = path.join(work.dir, "torn");
    mkdirSync(torn);
    const [first] = files();
    const text = readFileSync(first, "utf8");
    writeFileSync(path.join(torn, "a.jsonl"), text.slice(0, text.length - 20));
    const tornResult = await runWarden(["ledger", "verify", "--ledger", torn]);
    assert.equal(tornResult.code, 4);
    assert.match(tornResult.stdout, /^Ledger torn: first bad row a\.jsonl line \d+ \(the last row is incomplete\)\n$/);

    const absent = await runWarden(["ledger", "verify", "--ledger", path.join(work.dir, "nothing")]);
    assert.equal(absent.code, 5);

    const notADir = path.join(work.dir, "file");
    writeFileSync(notADir, "x");
    const unreadable = await runWarden(["ledger", "verify", "--ledger", notADir]);
    assert.equal(unreadable.code, 6);
  });

  it("reports a ledger it cannot write in the call's result, and still answers", async () => {
    const blocked = path.join(work.dir, "blocked");
    writeFileSync(blocked, "a file where the ledger directory should be");
    const session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: blocked } });
    try {
      const result = await session.client.callTool({ name: "fixture_echo", arguments: { text: "hi" } });
      assert.equal(result.isError, undefined);
      const content = result.content as { text: string }[];
      assert.equal(content[0].text, '{"text":"hi"}');
      assert.match(content[1].text, /^warning: the call ledger directory cannot be created \(/);
      assert.equal((result._meta as Record<string, { written: boolean }>)["warden/ledger"].written, false);
    } finally {
      await session.close();
    }
  });
});

describe(`call ledger on a failing disk (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(() => {
    work = tempDir();
  });
  after(() => work.remove());

  /** The text of every call's result: echoes, each with a ledger warning when its row was not written. */
  async function callMany(session: Awaited<ReturnType<typeof connect>>, n: number): Promise<string[][]> {
    const texts: string[][] = [];
    for (let i = 0; i < n; i++) {
      const result = await session.client.callTool({ name: "fixture_echo", arguments: { text: `call ${i}` } });
      assert.equal(result.isError, undefined, "a ledger fault never fails the call itself");
      texts.push((result.content as { text: string }[]).map((c) => c.text));
    }
    return texts;
  }

  it("a full disk: the rows before it stay intact, each later call says its row was not written", async () => {
    // An 8 KiB tmpfs as the ledger directory: room for about twenty rows.
    const ledger = path.join(work.dir, "full");
    mkdirSync(ledger);
    const report = path.join(work.dir, "full-report.json");
    // Inside the same sandbox, once the server has exited, verify what the tmpfs holds.
    const verify = wardenCommand(["ledger", "verify", "--json", "--ledger", ledger]);
    const script = `"$@"; ${[verify.command, ...verify.args].map(shellQuote).join(" ")} > ${shellQuote(report)}`;
    const session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      wrap: (command, args) => ({
        command: bwrap(),
        args: [
          ...["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", "8192", "--tmpfs", ledger],
          ...["--", "sh", "-c", script, "sh", command, ...args],
        ],
      }),
    });
    let texts: string[][];
    try {
      texts = await callMany(session, 60);
    } finally {
      await session.close();
    }
    texts.forEach((t, i) => assert.equal(t[0], JSON.stringify({ text: `call ${i}` })));
    const written = texts.findIndex((t) => t.length > 1);
    assert.ok(written > 5 && written < 40, `the tmpfs filled after ${written} rows`);
    assert.match(texts[written][1], /^warning: the call ledger could not be written \(.*(ENOSPC|No space left)/i);
    for (const t of texts.slice(written + 1)) {
      assert.match(t[1], /later calls are not recorded either$/, "no row after a failed one: the chain would break");
    }
    assert.ok(await eventually(() => existsSync(report) && readFileSync(report, "utf8").endsWith("}\n"), 15_000));
    const verdict = JSON.parse(readFileSync(report, "utf8"));
    assert.equal(verdict.rows, written, "every row written before the disk filled is intact");
    if (verdict.status === "torn") {
      assert.equal(verdict.firstBad.line, written + 1, "only the row the disk cut short is torn");
    } else {
      assert.equal(verdict.status, "intact");
    }
  });

  it("a read-only disk: every call answers and says its row was not written", async () => {
    const ledger = path.join(work.dir, "read-only");
    mkdirSync(ledger);
    const session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      wrap: (command, args) => ({
        command: bwrap(),
        args: ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", command, ...args],
      }),
    });
    let texts: string[][];
    try {
      texts = await callMany(session, 3);
    } finally {
      await session.close();
    }
    assert.match(texts[0][1], /^warning: the call ledger could not be written \(.*read-only file system/i);
    assert.match(texts[2][1], /later calls are not recorded either$/);
    assert.deepEqual(readdirSync(ledger), [], "nothing was written");
  });
});
