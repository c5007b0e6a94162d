// The deployment policy refuses calls by name and code, and every call, run
// or refused, leaves a hash-chained ledger row that `warden ledger verify`
// checks. Files are anchored to the ones before them and sealed on a clean
// exit, and gate calls write an intent first, so an edited or removed tail, a
// deleted file, a crash and a call killed mid-flight are each found and named.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { durationText } from "../core/governance/ledger.ts";
import { VERIFY_EXIT } from "../core/governance/ledger_verify.ts";
import { after, before, describe, it } from "node:test";
import {
  bwrapOrSkip,
  connect,
  eventually,
  fixtureToolsDir,
  initializeMessage,
  repoRoot,
  runtimeName,
  runWarden,
  shellQuote,
  startRaw,
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
    ) => JSON.parse(l)).filter((r) => r.kind === "call");
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

  it("writes one intact, sealed chain per server, never the arguments", async () => {
    assert.equal(files().length, 2, "one file per process");
    const { code, stdout } = await runWarden(["ledger", "verify", "--ledger", ledger, "--json"]);
    assert.equal(code, 0, stdout);
    // 41 calls, and an anchor and a seal per file.
    assert.deepEqual(JSON.parse(stdout), { status: "intact", files: 2, rows: 45, findings: [], notes: [] });
    const text = files().map((f) => readFileSync(f, "utf8")).join("");
    assert.ok(!text.includes("secret-"), "arguments never reach the ledger");
    for (const file of files()) {
      const kinds = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l).kind);
      assert.equal(kinds[0], "anchor");
      assert.equal(kinds.at(-1), "seal", "a clean exit seals the file");
    }
    const rows = text.trim().split("\n").map((l) => JSON.parse(l)).filter((r) => r.kind === "call");
    assert.equal(rows.length, 41);
    assert.ok(rows.some((r) => r.tool === "fixture_throws" && r.outcome === "error" && r.errorCode === "tool_failed"));
    assert.ok(
      rows.every((r) => r.decision === "allowed" && r.intent === null && r.v === 3),
      "read tools write no intent",
    );
  });

  it("names the rows of an edited ledger's group and the row that commits to them (exit 3)", async () => {
    const copy = path.join(work.dir, "edited");
    mkdirSync(copy);
    const [first] = files();
    const lines = readFileSync(first, "utf8").split("\n");
    // Line 5's group: the rows around it with its prev; the next row's prev is their hash.
    const prevOf = (i: number) => JSON.parse(lines[i]).prev;
    let start = 4;
    while (prevOf(start - 1) === prevOf(4)) start--;
    let next = 5;
    while (prevOf(next) === prevOf(4)) next++;
    lines[4] = lines[4].replace('"tool":"fixture_echo"', '"tool":"fixture_elsewhere"');
    writeFileSync(path.join(copy, path.basename(first)), lines.join("\n"));
    const { code, stdout } = await runWarden(["ledger", "verify", "--ledger", copy]);
    assert.equal(code, 3);
    const out = stdout.split("\n");
    assert.match(out[0], /^Ledger broken: \d+ rows in 1 file\(s\), 1 finding\(s\)$/);
    assert.equal(
      out[1],
      `broken: ${path.basename(first)} line ${next + 1}: prev does not match the rows before it (lines ${
        start + 1
      } to ${next})`,
    );
  });

  it("tells a torn tail (exit 4), an absent ledger (exit 5) and an unreadable one (exit 6) apart", async () => {
    const torn = path.join(work.dir, "torn");
    mkdirSync(torn);
    // A file that names no other: the first process's, with what the second wrote taken out of its anchor's reach.
    const text = readFileSync(files()[0], "utf8");
    const lines = text.trim().split("\n");
    const anchor = JSON.parse(lines[0]);
    if (anchor.heads.length > 0) {
      // Both servers started at once: this one saw the other's file. Keep that file too.
      for (const head of anchor.heads) {
        writeFileSync(path.join(torn, head.file), readFileSync(path.join(ledger, head.file)));
      }
    }
    writeFileSync(path.join(torn, path.basename(files()[0])), text.slice(0, text.length - 20));
    const tornResult = await runWarden(["ledger", "verify", "--ledger", torn]);
    assert.equal(tornResult.code, 4, tornResult.stdout);
    const name = path.basename(files()[0]);
    assert.ok(
      tornResult.stdout.split("\n").includes(`torn: ${name} line ${lines.length}: the last row is incomplete`),
      tornResult.stdout,
    );
    // Its seal is what was cut: the file reads as a crash too, with its last whole row.
    assert.match(tornResult.stdout, new RegExp(`^unsealed: ${name} line ${lines.length - 1}: never sealed: `, "m"));

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
      // The runtime's reason, on one line: node's EEXIST, deno's "File exists (os error 17)".
      assert.match(content[1].text, /^warning: the call ledger directory cannot be created \([^\n]*exists[^\n]*\)$/i);
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

  it("a full disk: the rows before it stay intact, each later call says its row was not written", async (t) => {
    const sandbox = bwrapOrSkip(t);
    if (!sandbox) return;
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
        command: sandbox,
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
    assert.equal(verdict.rows, written + 1, "the anchor and every row written before the disk filled are intact");
    const kinds = verdict.findings.map((f: { kind: string }) => f.kind);
    // No room for the seal either: the file reads as a crash, after its last whole row.
    assert.deepEqual(kinds.filter((k: string) => k !== "torn"), ["unsealed"]);
    assert.equal(verdict.findings.find((f: { kind: string }) => f.kind === "unsealed").line, written + 1);
    if (kinds.includes("torn")) {
      assert.equal(verdict.findings[0].line, written + 2, "only the row the disk cut short is torn");
    }
  });

  it("a read-only disk: every call answers and says its row was not written", async (t) => {
    const sandbox = bwrapOrSkip(t);
    if (!sandbox) return;
    const ledger = path.join(work.dir, "read-only");
    mkdirSync(ledger);
    const session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      wrap: (command, args) => ({
        command: sandbox,
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

/** sha256:<hex> of a text, computed here rather than by warden's own code. */
function sha256(text: string): string {
  return "sha256:" + createHash("sha256").update(text).digest("hex");
}

/** The lines of a ledger file, without the final newline. */
function linesOf(file: string): string[] {
  return readFileSync(file, "utf8").replace(/\n$/, "").split("\n");
}

/** `warden ledger verify --json` and the text report, for one directory. */
async function verify(dir: string): Promise<{ code: number | null; json: VerifyJson; text: string[] }> {
  const [json, text] = await Promise.all([
    runWarden(["ledger", "verify", "--json", "--ledger", dir]),
    runWarden(["ledger", "verify", "--ledger", dir]),
  ]);
  assert.equal(json.code, text.code);
  return { code: json.code, json: JSON.parse(json.stdout), text: text.stdout.replace(/\n$/, "").split("\n") };
}

type VerifyJson = {
  status: string;
  files: number;
  rows: number;
  findings: { kind: string; file: string; line: number; problem: string }[];
  notes: { file: string; note: string }[];
};

describe(`anchored ledger chains (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let ledger: string;
  /** The three files, oldest first. */
  let names: string[];
  before(async () => {
    work = tempDir();
    ledger = path.join(work.dir, "ledger");
    const env = { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger };
    // Three processes, one after another: a server, a shell call, a server.
    mkdirSync(path.join(work.dir, "out"));
    const first = await connect({
      env,
      args: ["--root", `default=${work.dir}`, "--root", `out=${path.join(work.dir, "out")}`],
    });
    try {
      for (const text of ["a", "b"]) await first.client.callTool({ name: "fixture_echo", arguments: { text } });
      const gate = await first.client.callTool({ name: "fixture_gate", arguments: { argv: ["sh", "-c", "exit 0"] } });
      assert.equal(gate.isError, undefined, textOf(gate));
      const external = await first.client.callTool({ name: "fixture_egress", arguments: {} });
      assert.equal(textOf(external), "nothing to do");
    } finally {
      await first.close();
    }
    const second = await runWarden(["call", "fixture_echo", "--arg", "text=c"], { env });
    assert.equal(second.code, 0, second.stderr);
    const third = await connect({ env });
    try {
      await third.client.callTool({ name: "fixture_echo", arguments: { text: "d" } });
      await third.client.callTool({ name: "fixture_echo", arguments: { text: "e" } });
    } finally {
      await third.close();
    }
    names = readdirSync(ledger).sort();
  });
  after(() => work.remove());

  /** A copy of the ledger to tamper with. */
  function copy(label: string): string {
    const dir = path.join(work.dir, label);
    cpSync(ledger, dir, { recursive: true });
    return dir;
  }

  it("is intact across processes started one after another, each anchored to the heads it found", async () => {
    assert.equal(names.length, 3);
    const [a, b, c] = names.map((name) => linesOf(path.join(ledger, name)));
    const head = (lines: string[], file: string) => ({ file, hash: sha256(lines.at(-1)!), seq: lines.length });
    assert.deepEqual(JSON.parse(a[0]).heads, [], "the first process found nothing");
    assert.deepEqual(JSON.parse(b[0]).heads, [head(a, names[0])], "the second commits to the first's seal");
    // The first file has not changed since the second's anchor: the third commits to it through the second.
    assert.deepEqual(JSON.parse(c[0]).heads, [head(b, names[1])]);
    for (const tool of ["fixture_gate", "fixture_egress"]) {
      const rows = a.map((l) => JSON.parse(l)).filter((r) => r.tool === tool);
      assert.deepEqual(rows.map((r) => r.kind), ["intent", "call"], `${tool} writes its intent before it runs`);
      assert.equal(rows[1].intent, rows[0].seq);
      assert.equal(rows[1].argsHash, rows[0].argsHash);
    }
    const { code, json, text } = await verify(ledger);
    assert.equal(code, 0, text.join("\n"));
    assert.deepEqual(json, {
      status: "intact",
      files: 3,
      rows: a.length + b.length + c.length,
      findings: [],
      notes: [],
    });
    assert.deepEqual(text, [`Ledger intact: ${a.length + b.length + c.length} rows in 3 file(s)`]);
  });

  it("commits again to a file that grew after the last anchor", async () => {
    const dir = path.join(work.dir, "grown");
    const env = { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: dir };
    const first = await runWarden(["call", "fixture_echo", "--arg", "text=0"], { env });
    assert.equal(first.code, 0, first.stderr);
    const running = await connect({ env });
    try {
      await running.client.callTool({ name: "fixture_echo", arguments: { text: "1" } });
      const second = await runWarden(["call", "fixture_echo", "--arg", "text=2"], { env });
      assert.equal(second.code, 0, second.stderr);
      // The server's file grows after the second process anchored it.
      await running.client.callTool({ name: "fixture_echo", arguments: { text: "3" } });
      // The first file, last written an hour ago as far as its time says: the next anchor need not read it.
      const hourAgo = new Date(Date.now() - 3_600_000);
      utimesSync(path.join(dir, readdirSync(dir).sort()[0]), hourAgo, hourAgo);
      const third = await runWarden(["call", "fixture_echo", "--arg", "text=4"], { env });
      assert.equal(third.code, 0, third.stderr);
      const [, server, twice, thrice] = readdirSync(dir).sort();
      const anchorOf = (name: string) => JSON.parse(linesOf(path.join(dir, name))[0]).heads;
      // A head commits to the file's last group: its rows with the last row's prev (the seal alone, once sealed).
      const head = (name: string) => {
        const lines = linesOf(path.join(dir, name));
        const prevOf = (line: string) => JSON.parse(line).prev;
        let first = lines.length - 1;
        while (first > 0 && prevOf(lines[first - 1]) === prevOf(lines[first])) first--;
        return { file: name, hash: sha256(lines.slice(first).join("\n")), seq: lines.length };
      };
      const serverLines = linesOf(path.join(dir, server));
      // The server's anchor named the first file, so the second process leaves it out and names the server's file.
      assert.deepEqual(anchorOf(twice), [{ file: server, hash: sha256(serverLines[1]), seq: 2 }]);
      // The server's file has grown since: named again at its new head, with the newest file. The first file is not:
      // it is in the server's anchor, and its time says it has not changed since.
      assert.deepEqual(anchorOf(thrice), [head(server), head(twice)]);
    } finally {
      await running.close();
    }
    const found = await verify(dir);
    assert.equal(found.code, 0, found.text.join("\n"));
  });

  it("finds an edited last row: of an older file through the next anchor, of the newest through its seal", async () => {
    const older = copy("edit-older");
    const file = path.join(older, names[1]);
    const lines = linesOf(file);
    lines[lines.length - 1] = lines.at(-1)!.replace(/"time":"[^"]*"/, '"time":"2020-01-01T00:00:00.000Z"');
    writeFileSync(file, lines.join("\n") + "\n");
    let found = await verify(older);
    assert.equal(found.code, 3);
    assert.deepEqual(found.text, [
      `Ledger broken: ${found.json.rows} rows in 3 file(s), 1 finding(s)`,
      `broken: ${names[1]} line ${lines.length}: not the row the anchor of ${
        names[2]
      } (line 1) committed to (the file was rewritten)`,
    ]);

    const newest = copy("edit-newest");
    const last = path.join(newest, names[2]);
    const rows = linesOf(last);
    // The last call, just before the seal: the seal commits to its group, the rows with its prev.
    const prevOf = (line: string) => JSON.parse(line).prev;
    let first = rows.length - 2;
    while (prevOf(rows[first - 1]) === prevOf(rows[first])) first--;
    rows[rows.length - 2] = rows.at(-2)!.replace('"durationMs":', '"durationMs":1');
    writeFileSync(last, rows.join("\n") + "\n");
    found = await verify(newest);
    assert.equal(found.code, 3);
    assert.equal(
      found.text[1],
      `broken: ${names[2]} line ${rows.length}: prev does not match the rows before it (lines ${first + 1} to ${
        rows.length - 1
      })`,
    );
  });

  it("finds trailing rows removed: truncated where a later anchor saw more, unsealed where none did", async () => {
    const older = copy("trim-older");
    const file = path.join(older, names[0]);
    const lines = linesOf(file);
    writeFileSync(file, lines.slice(0, -2).join("\n") + "\n");
    let found = await verify(older);
    assert.equal(found.code, 8, found.text.join("\n"));
    assert.equal(found.json.status, "truncated");
    assert.deepEqual(found.json.findings[0], {
      kind: "truncated",
      file: names[0],
      line: lines.length - 1,
      problem: `rows ${lines.length - 1} to ${lines.length} were removed; the anchor of ${
        names[1]
      } (line 1) committed to its row ${lines.length}`,
    });
    assert.equal(found.text[0], `Ledger truncated: ${found.json.rows} rows in 3 file(s), 3 finding(s)`);
    // With its seal gone the file also reads as a crash, and the gate call whose row was cut off as unfinished:
    // the truncation is the finding that counts.
    assert.deepEqual(found.json.findings.map((f) => f.kind), ["truncated", "unsealed", "unfinished"]);

    const newest = copy("trim-newest");
    const last = path.join(newest, names[2]);
    const rows = linesOf(last);
    writeFileSync(last, rows.slice(0, -1).join("\n") + "\n");
    found = await verify(newest);
    assert.equal(found.code, 9, "no later anchor saw the seal: it reads as a crash, and is reported");
    assert.equal(found.json.findings.length, 1);
    assert.equal(found.json.findings[0].line, rows.length - 1);
    assert.match(found.json.findings[0].problem, /^never sealed: its process \(pid \d+\) ended without a clean exit/);
  });

  it("finds a whole file deleted, by the anchor that named it", async () => {
    for (const [index, by] of [[0, 1], [1, 2]]) {
      const dir = copy(`delete-${index}`);
      rmSync(path.join(dir, names[index]));
      const found = await verify(dir);
      assert.equal(found.code, 7, found.text.join("\n"));
      const seq = linesOf(path.join(ledger, names[index])).length;
      assert.deepEqual(found.json.findings, [{
        kind: "missing",
        file: names[index],
        line: seq,
        problem: `the file is missing; the anchor of ${names[by]} (line 1) committed to its row ${seq}`,
      }]);
      assert.equal(found.text[0], `Ledger missing a file: ${found.json.rows} rows in 2 file(s), 1 finding(s)`);
    }
  });

  it("still verifies a version 1 ledger, and says its end cannot be checked", async () => {
    const dir = path.join(work.dir, "v1");
    mkdirSync(dir);
    const row = (seq: number, prev: string) =>
      `{"argsHash":"${sha256("{}")}","decision":"allowed","durationMs":0.5,"errorCode":null,"outcome":"ok","pid":42,` +
      `"plugin":null,"prev":"${prev}","principal":null,"reason":null,"risk":"read","seq":${seq},` +
      `"time":"2026-01-01T00:00:00.000Z","tool":"host_context","v":1}`;
    const one = row(1, "sha256:" + "0".repeat(64));
    const two = row(2, sha256(one));
    writeFileSync(path.join(dir, "2026-01-01T00-00-00-000Z-42.jsonl"), `${one}\n${two}\n`);
    let found = await verify(dir);
    assert.equal(found.code, 0, found.text.join("\n"));
    assert.deepEqual(found.json.notes, [{
      file: "2026-01-01T00-00-00-000Z-42.jsonl",
      note: "version 1 (no anchor or seal): its end cannot be checked",
    }]);
    writeFileSync(path.join(dir, "2026-01-01T00-00-00-000Z-42.jsonl"), `${one}\n${two.replace('"v":1', '"v":4')}\n`);
    found = await verify(dir);
    assert.equal(found.code, 3);
    assert.equal(
      found.text[1],
      "broken: 2026-01-01T00-00-00-000Z-42.jsonl line 2: not a ledger row of a known version (v 4; this warden reads 1, 2 and 3)",
    );
  });

  it("hashes the canonical JSON of the arguments, and different arguments differently", async () => {
    const dir = path.join(work.dir, "args");
    const session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: dir } });
    // Keys out of order, non-ASCII, a nested object: the canonical text sorts keys and keeps the characters.
    const calls = [
      {
        arguments: { text: "héllo ✓", nested: { flag: true }, count: 2 },
        canonical: '{"count":2,"nested":{"flag":true},"text":"héllo ✓"}',
      },
      {
        arguments: { text: "héllo ✓", nested: { flag: false }, count: 2 },
        canonical: '{"count":2,"nested":{"flag":false},"text":"héllo ✓"}',
      },
      { arguments: {}, canonical: "{}" },
      // Repeated (the ledger keeps the last digest) and same-length texts, each hashed as itself.
      { arguments: { text: "a" }, canonical: '{"text":"a"}' },
      { arguments: { text: "a" }, canonical: '{"text":"a"}' },
      { arguments: { text: "b" }, canonical: '{"text":"b"}' },
      {
        arguments: { count: 2, text: "héllo ✓", nested: { flag: false } },
        canonical: '{"count":2,"nested":{"flag":false},"text":"héllo ✓"}',
      },
      { arguments: {}, canonical: "{}" },
      { arguments: {}, canonical: "{}" },
    ];
    try {
      for (const call of calls) await session.client.callTool({ name: "fixture_echo", arguments: call.arguments });
    } finally {
      await session.close();
    }
    const rows = readdirSync(dir).flatMap((f) => linesOf(path.join(dir, f))).map((l) => JSON.parse(l)).filter((r) =>
      r.kind === "call"
    );
    assert.deepEqual(rows.map((r) => r.argsHash), calls.map((c) => sha256(c.canonical)));
    assert.notEqual(rows[0].argsHash, rows[1].argsHash);
  });

  it("writes each duration as String writes the number, from 0 to 2,000 s by the µs and beyond", () => {
    // The row's text is built by hand, not by JSON.stringify: a wrong digit here is a row verify calls not canonical.
    for (let us = 0; us <= 2_000_000; us++) {
      const ms = us / 1000;
      if (durationText(ms) !== String(ms)) assert.equal(durationText(ms), String(ms), `${us} µs`);
    }
    for (
      const ms of [86_400_000.001, 123_456_789.12, 2 ** 40 + 0.5, -1, -0.5, -1.25, 0.0005, 1e-7, 0.1 + 0.2, 1e21, NaN]
    ) {
      assert.equal(durationText(ms), String(ms));
    }
  });
});

describe(`a server killed mid-call (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(() => {
    work = tempDir();
  });
  after(() => work.remove());

  it("leaves an unsealed file and an unfinished gate call, both reported with their rows", async () => {
    if (!existsSync("/proc/self/cmdline")) return; // the test finds the spawned program through /proc (Linux)
    const ledger = path.join(work.dir, "ledger");
    // A duration no other process uses: how the test knows the program is running.
    const seconds = `${100_000 + (process.pid % 100_000)}.${runtimeName.length}`;
    const sleeping = () =>
      readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
        try {
          const [program, arg] = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
          return program.endsWith("sleep") && arg === seconds;
        } catch {
          return false;
        }
      });
    const raw = startRaw({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      args: ["--root", `default=${work.dir}`],
    });
    try {
      raw.request(initializeMessage(1));
      await raw.next((m) => m.id === 1);
      raw.request({ jsonrpc: "2.0", method: "notifications/initialized" });
      raw.request({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "fixture_echo", arguments: { text: "before" } },
      });
      await raw.next((m) => m.id === 2);
      raw.request({
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "fixture_gate", arguments: { argv: ["sleep", seconds] } },
      });
      assert.ok(await eventually(() => sleeping().length > 0, 10_000), "the gate call's program started");
      // While the server runs, its open file and the call in flight are no finding.
      const running = await verify(ledger);
      assert.equal(running.code, 0, running.text.join("\n"));
      assert.deepEqual(running.json.notes, [{
        file: readdirSync(ledger)[0],
        note: `not sealed yet: its process (pid ${raw.pid}) is running`,
      }]);
      raw.kill();
      await raw.exited();
    } finally {
      raw.kill();
      for (const pid of sleeping()) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // Gone between the listing and the kill: bubblewrap's sandbox ends with the killed server.
        }
      }
    }
    const [name] = readdirSync(ledger);
    const rows = linesOf(path.join(ledger, name)).map((l) => JSON.parse(l));
    assert.deepEqual(rows.map((r) => r.kind), ["anchor", "call", "intent"]);
    const found = await verify(ledger);
    assert.equal(found.code, 9, found.text.join("\n"));
    assert.deepEqual(found.json.findings, [
      {
        kind: "unsealed",
        file: name,
        line: 3,
        problem:
          `never sealed: its process (pid ${raw.pid}) ended without a clean exit (a crash, or its seal was cut off); last row 3: intent of "fixture_gate" at ${
            rows[2].time
          }`,
      },
      {
        kind: "unfinished",
        file: name,
        line: 3,
        problem: `the gate call of "fixture_gate" that started at ${rows[2].time} never finished`,
      },
    ]);
    assert.equal(found.text[0], `Ledger not sealed: 3 rows in 1 file(s), 2 finding(s)`);
    assert.equal(found.text[2], `unfinished: ${name} line 3: ${found.json.findings[1].problem}`);
  });
});

describe(`README's ledger section (${runtimeName})`, () => {
  it("lists every exit code of warden ledger verify, and no other", () => {
    const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
    const from = readme.indexOf("\n### The ledger\n");
    assert.ok(from > 0, "README has a ledger section");
    const section = readme.slice(from + 1).split(/\n#{2,3} /)[0];
    const table = section.split("\n").filter((line) => line.startsWith("| ")).slice(2);
    const documented = table.map((line) => line.split("|").map((cell) => cell.trim())).map((
      [, code, finding],
    ) => [finding === "(absent)" ? "absent" : finding.replace(/`/g, ""), Number(code)]);
    assert.deepEqual(
      Object.fromEntries(documented),
      VERIFY_EXIT,
    );
  });
});
