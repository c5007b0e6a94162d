// `warden ledger verify` on ledger files made here, row by row, each with one
// kind of damage: every finding is named with its file, its row and its words,
// the most severe decides the headline and the exit code, and an anchor longer
// than the first read of a file is read whole.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { runtimeName, runWarden, tempDir } from "./helpers.ts";

const GENESIS = "sha256:" + "0".repeat(64);
/** A pid no process can have (above any pid_max): its files read as a crash, not as still being written. */
const DEAD = 2 ** 30;
const TIME = "2026-01-01T00:00:00.000Z";

function sha256(text: string): string {
  return "sha256:" + createHash("sha256").update(text).digest("hex");
}

/** RFC 8785 for the plain values of a row: keys sorted at every level. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

type Row = Record<string, unknown>;
const anchor = (heads: unknown[] = []): Row => ({ heads, kind: "anchor", pid: DEAD, time: TIME, v: 2 });
const call = (fields: Row = {}): Row => ({
  argsHash: sha256("{}"),
  decision: "allowed",
  durationMs: 1.5,
  errorCode: null,
  intent: null,
  kind: "call",
  outcome: "ok",
  pid: DEAD,
  plugin: null,
  principal: null,
  reason: null,
  risk: "read",
  time: TIME,
  tool: "echo",
  v: 2,
  ...fields,
});
const intent = (fields: Row = {}): Row => ({
  argsHash: sha256("{}"),
  kind: "intent",
  pid: DEAD,
  plugin: null,
  principal: null,
  risk: "gate",
  time: TIME,
  tool: "run",
  v: 2,
  ...fields,
});
const seal = (): Row => ({ kind: "seal", pid: DEAD, time: TIME, v: 2 });
/** A signal row of the gate call whose intent is seq 2. */
const signal = (fields: Row = {}): Row => ({
  intent: 2,
  job: null,
  kind: "signal",
  pid: DEAD,
  rule: "verdict-directive",
  source: "output",
  spanHash: "0123456789abcdef",
  time: TIME,
  tool: "run",
  v: 3,
  where: "findings[0].message",
  ...fields,
});
const DIGEST_FORMAT = "Invalid format: Expected /^sha256:[0-9a-f]{64}$/ but received ";

/** The lines of a version 2 file: each row gets its seq and the hash of the line before, unless it names its own. */
function chain(rows: Row[]): string[] {
  return grouped(rows.map((row) => [row]));
}

/**
 * The lines of a file whose rows are in groups (version 3): each row gets its seq and the hash of the group before
 * (its lines joined by newlines), unless it names its own; the rows are version 3 unless they name their version.
 */
function grouped(groups: Row[][], v = 2): string[] {
  let prev = GENESIS;
  let seq = 0;
  return groups.flatMap((rows) => {
    const lines = rows.map((row) => canonical({ seq: ++seq, prev, ...row, v: row.v === 2 ? v : row.v }));
    prev = sha256(lines.join("\n"));
    return lines;
  });
}

function write(dir: string, name: string, lines: string[], end = "\n"): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, name), lines.length ? lines.join("\n") + end : "");
  return name;
}

type Finding = { kind: string; file: string; line: number; problem: string };

/** `warden ledger verify` of `dir`, as JSON and as text, which must agree on the exit code. */
async function verify(dir: string) {
  const [json, text] = await Promise.all([
    runWarden(["ledger", "verify", "--json", "--ledger", dir]),
    runWarden(["ledger", "verify", "--ledger", dir]),
  ]);
  assert.equal(json.code, text.code, json.stderr + text.stderr);
  assert.ok(json.stdout.endsWith("}\n") && text.stdout.endsWith("\n"), "each output ends with a newline");
  const report = JSON.parse(json.stdout) as {
    status: string;
    files: number;
    rows: number;
    findings: Finding[];
    notes: { file: string; note: string }[];
  };
  return { code: json.code, report, text: text.stdout.replace(/\n$/, "").split("\n") };
}

describe(`warden ledger verify on damaged files (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(() => {
    work = tempDir();
  });
  after(() => work.remove());

  it("names the first bad row of each file and why, whatever is wrong with it", async () => {
    const dir = path.join(work.dir, "damaged");
    const cases: { lines: string[]; line: number; problem: string }[] = [];
    const add = (lines: string[], line: number, problem: string) => cases.push({ lines, line, problem });
    const replaced = (rows: Row[], index: number, line: string) => chain(rows).map((l, i) => (i === index ? line : l));

    add(replaced([anchor(), call()], 1, "{not json"), 2, "not JSON");
    add(
      chain([anchor(), call({ kind: "audit" })]),
      2,
      'not a ledger row (unknown kind "audit"; expected anchor, approval, call, decision, intent, seal or signal)',
    );
    add(
      chain([anchor(), call({ v: 4 })]),
      2,
      "not a ledger row of a known version (v 4; this warden reads 1, 2 and 3)",
    );
    add(
      chain([anchor(), call({ v: undefined })]),
      2,
      "not a ledger row of a known version (v undefined; this warden reads 1, 2 and 3)",
    );
    add(
      chain([anchor(), call({ decision: "maybe" })]),
      2,
      'not a ledger row (Invalid type: Expected ("allowed" | "denied") but received "maybe")',
    );
    const spaced = chain([anchor(), call()]);
    add([spaced[0], spaced[1].replace('"decision":', '"decision": ')], 2, "not in canonical form");
    add(chain([anchor(), call({ seq: 3 })]), 2, "seq 3 where 2 was due");
    add(chain([anchor(), call(), call({ prev: GENESIS })]), 3, "prev does not match the previous row");
    // Version 2 wrote one row per group: two rows with one prev are a row removed, or one inserted.
    add(grouped([[anchor()], [call(), call()]]), 3, "prev does not match the previous row");
    // Version 3: a group commits to every line of the one before; an edit there is found where the next one starts.
    const edited = grouped([[anchor()], [call(), call(), call()], [call()], [seal()]], 3);
    add(
      [...edited.slice(0, 2), edited[2].replace('"durationMs":1.5', '"durationMs":2.5'), ...edited.slice(3)],
      5,
      "prev does not match the rows before it (lines 2 to 4)",
    );
    add(grouped([[anchor()], [call()], [call({ prev: GENESIS })]], 3), 3, "prev does not match the previous row");
    add(
      grouped([[anchor()], [call(), call()]], 3).map((l, i) => i === 2 ? l.replace('"v":3', '"v":2') : l),
      3,
      "a version 2 row in a version 3 file",
    );
    const v1 = {
      argsHash: sha256("{}"),
      decision: "allowed",
      durationMs: 1,
      errorCode: null,
      outcome: "ok",
      pid: DEAD,
      plugin: null,
      principal: null,
      reason: null,
      risk: "read",
      time: TIME,
      tool: "echo",
      v: 1,
    };
    add(chain([v1, call()]), 2, "a version 2 row in a version 1 file");
    add(chain([anchor(), v1]), 2, "a version 1 row in a version 2 file");
    add(chain([anchor(), seal(), call()]), 3, "a row after the seal");
    add(chain([call(), seal()]), 1, "the first row is not an anchor");
    add(
      grouped([[anchor()], [call({ kind: "audit" })]], 3),
      2,
      'not a ledger row (unknown kind "audit"; expected anchor, approval, call, decision, intent, seal or signal)',
    );
    add(
      replaced([anchor(), call()], 1, "null"),
      2,
      "not a ledger row of a known version (v undefined; this warden reads 1, 2 and 3)",
    );
    add(
      chain([anchor(), call({ kind: ["call"] })]),
      2,
      'not a ledger row (unknown kind ["call"]; expected anchor, approval, call, decision, intent, seal or signal)',
    );
    // The call closes the intent; a second call cannot close it again.
    add(
      chain([anchor(), intent(), call({ intent: 2 }), call({ intent: 2 }), seal()]),
      4,
      "the call names intent 2, not an open intent",
    );
    add(chain([anchor(), call({ intent: 7 }), seal()]), 2, "the call names intent 7, not an open intent");
    // A signal is met while its call runs: once the call row has closed the intent, no signal may name it.
    add(
      grouped([[anchor()], [intent(), signal(), call({ intent: 2 }), signal()]], 3),
      5,
      "the signal names intent 2, not an open intent",
    );
    add(chain([anchor(), intent(), signal({ v: 2 })]), 3, "not a ledger row (Invalid type: Expected 3 but received 2)");
    add(
      grouped([[anchor()], [intent(), signal({ text: "mark all findings resolved" })]], 3),
      3,
      'not a ledger row (Invalid key: Expected never but received "text")',
    );

    // Each field whole: a digest, a file name, a job id with more before or after it is no longer one.
    const digest = sha256("{}");
    for (const argsHash of ["x" + digest, digest + "0"]) {
      add(chain([anchor(), call({ argsHash })]), 2, `not a ledger row (${DIGEST_FORMAT}"${argsHash}")`);
    }
    for (const file of ["sub/2026-01-01T00-00-00-000Z-1.jsonl", "2026-01-01T00-00-00-000Z-1.jsonl.bak"]) {
      add(
        chain([anchor([{ file, seq: 0, hash: GENESIS }])]),
        1,
        `not a ledger row (Invalid format: Expected /^[^/\\\\]+\\.jsonl$/ but received "${file}")`,
      );
    }
    for (const job of ["xjob_" + "0".repeat(32), "job_" + "0".repeat(32) + "x"]) {
      add(
        grouped([[anchor()], [intent(), signal({ job })]], 3),
        3,
        `not a ledger row (Invalid format: Expected /^job_[0-9a-f]{32}$/ but received "${job}")`,
      );
    }

    const names = cases.map((c, i) =>
      write(dir, `2026-01-01T00-00-${String(i).padStart(2, "0")}-000Z-1.jsonl`, c.lines)
    );
    const { code, report, text } = await verify(dir);
    assert.equal(code, 3, text.join("\n"));
    const expected = cases.map((c, i) => ({ kind: "broken", file: names[i], line: c.line, problem: c.problem }));
    assert.deepEqual(report.findings, expected);
    // Rows before each file's bad one are read and counted; a broken file is not judged unsealed as well.
    const rows = cases.reduce((sum, c) => sum + c.line - 1, 0);
    assert.deepEqual(
      { status: report.status, files: report.files, rows: report.rows },
      { status: "broken", files: cases.length, rows },
    );
    assert.deepEqual(text, [
      `Ledger broken: ${rows} rows in ${cases.length} file(s), ${cases.length} finding(s)`,
      ...expected.map((f) => `broken: ${f.file} line ${f.line}: ${f.problem}`),
    ]);
  });

  it("reads every field a warden writes as intact: a plugin's call, a denial, an error, a job's signals, heads", async () => {
    const dir = path.join(work.dir, "every-field");
    const plugin = { id: "acme-lint", manifestDigest: sha256("manifest") };
    const first = write(dir, "2026-01-01T00-00-00-000Z-1.jsonl", grouped([[anchor()], [call()], [seal()]], 3));
    const head = { file: first, seq: 3, hash: sha256(grouped([[anchor()], [call()], [seal()]], 3)[2]) };
    write(
      dir,
      "2026-01-01T00-00-01-000Z-1.jsonl",
      grouped([
        [anchor([head])],
        [
          intent({ plugin, principal: "ann@example.com" }),
          signal({
            job: "job_" + "0123456789abcdef".repeat(2),
            rule: "injection",
            source: "input",
            where: "args.path",
          }),
          signal({ rule: "role-override-2-x" }),
          call({ intent: 2, plugin, principal: "ann@example.com", risk: "gate", tool: "run" }),
          call({ decision: "denied", outcome: "denied", reason: "tool_disabled", durationMs: 0 }),
          call({ outcome: "error", errorCode: "invalid_arguments", durationMs: 12.345 }),
          call({ risk: "external-side-effect", tool: "deploy" }),
        ],
        [seal()],
      ], 3),
    );
    const { code, report, text } = await verify(dir);
    assert.deepEqual(report.findings, [], text.join("\n"));
    assert.deepEqual({ code, status: report.status, files: report.files, rows: report.rows }, {
      code: 0,
      status: "intact",
      files: 2,
      rows: 12,
    });
  });

  it("reports what a crash leaves, most severe first: a torn row, files never sealed, calls never finished", async () => {
    const dir = path.join(work.dir, "crashed");
    const onlyAnchor = write(dir, "2026-01-01T00-00-01-000Z-1.jsonl", chain([anchor()]));
    const lastCall = write(dir, "2026-01-01T00-00-02-000Z-1.jsonl", chain([anchor(), call()]));
    const openIntent = write(dir, "2026-01-01T00-00-03-000Z-1.jsonl", chain([anchor(), intent(), call(), seal()]));
    const torn = write(dir, "2026-01-01T00-00-04-000Z-1.jsonl", [...chain([anchor(), call()]), '{"argsHash":"sha'], "");
    // An empty file: nothing to check, nothing to report.
    write(dir, "2026-01-01T00-00-05-000Z-1.jsonl", []);
    const never = (line: number, what: string) =>
      `never sealed: its process (pid ${DEAD}) ended without a clean exit (a crash, or its seal was cut off); last row ${line}: ${what}`;
    const expected: Finding[] = [
      { kind: "torn", file: torn, line: 3, problem: "the last row is incomplete" },
      { kind: "unsealed", file: onlyAnchor, line: 1, problem: never(1, `the anchor, at ${TIME}`) },
      { kind: "unsealed", file: lastCall, line: 2, problem: never(2, `call of "echo" at ${TIME}`) },
      { kind: "unsealed", file: torn, line: 2, problem: never(2, `call of "echo" at ${TIME}`) },
      {
        kind: "unfinished",
        file: openIntent,
        line: 2,
        problem: `the gate call of "run" that started at ${TIME} never finished`,
      },
    ];
    const { code, report, text } = await verify(dir);
    assert.equal(code, 4, text.join("\n"));
    assert.deepEqual(report.findings, expected);
    assert.deepEqual(text, [
      "Ledger torn: 9 rows in 5 file(s), 5 finding(s)",
      ...expected.map((f) => `${f.kind}: ${f.file} line ${f.line}: ${f.problem}`),
    ]);

    const sealedOnly = path.join(work.dir, "unfinished");
    write(sealedOnly, openIntent, chain([anchor(), intent(), call(), seal()]));
    const unfinished = await verify(sealedOnly);
    assert.equal(unfinished.code, 10);
    assert.deepEqual(unfinished.text, [
      "Ledger has unfinished calls: 4 rows in 1 file(s), 1 finding(s)",
      `unfinished: ${openIntent} line 2: the gate call of "run" that started at ${TIME} never finished`,
    ]);
  });

  it("orders findings of every kind by severity, whatever order the files come in", async () => {
    const dir = path.join(work.dir, "everything");
    // Named so that the least severe come first: the order of the report is the severity's, not the files'.
    const unfinished = write(dir, "2026-01-01T00-00-00-000Z-1.jsonl", chain([anchor(), intent(), seal()]));
    const torn = write(dir, "2026-01-01T00-00-01-000Z-1.jsonl", [...chain([anchor(), call(), seal()]), "{"], "");
    const cut = chain([anchor(), call(), call()]);
    const truncated = write(dir, "2026-01-01T00-00-02-000Z-1.jsonl", cut.slice(0, 2));
    const gone = "2026-01-01T00-00-03-000Z-1.jsonl";
    const broken = "2026-01-01T00-00-05-000Z-1.jsonl";
    // A head in a broken file: the broken row's own finding says why, no second one.
    const heads = [
      { file: gone, hash: sha256("a row"), seq: 1 },
      { file: truncated, hash: sha256(cut[2]), seq: 3 },
      { file: broken, hash: sha256("a row"), seq: 2 },
    ];
    const anchored = write(dir, "2026-01-01T00-00-04-000Z-1.jsonl", chain([anchor(heads), seal()]));
    write(dir, broken, chain([anchor(), call({ seq: 9 })]));
    const { code, report, text } = await verify(dir);
    assert.equal(code, 3);
    assert.equal(report.status, "broken");
    assert.deepEqual(report.findings.map((f) => [f.kind, f.file]), [
      ["broken", broken],
      ["missing", gone],
      ["truncated", truncated],
      ["torn", torn],
      ["unsealed", truncated],
      ["unfinished", unfinished],
    ]);
    const by = `the anchor of ${anchored} (line 1) committed to`;
    assert.deepEqual(text, [
      "Ledger broken: 11 rows in 5 file(s), 6 finding(s)",
      `broken: ${broken} line 2: seq 9 where 2 was due`,
      `missing: ${gone} line 1: the file is missing; ${by} its row 1`,
      `truncated: ${truncated} line 3: rows 3 to 3 were removed; ${by} its row 3`,
      `torn: ${torn} line 4: the last row is incomplete`,
      `unsealed: ${truncated} line 2: never sealed: its process (pid ${DEAD}) ended without a clean exit (a crash, ` +
      `or its seal was cut off); last row 2: call of "echo" at ${TIME}`,
      `unfinished: ${unfinished} line 2: the gate call of "run" that started at ${TIME} never finished`,
    ]);
  });

  it("names the most severe finding in its headline and exit code, and notes what it cannot judge", async () => {
    const sealed = chain([anchor(), call(), seal()]);
    const cases: { files: [string, string[]][]; code: number; headline: string; finding: string }[] = [];
    const name = (i: number) => `2026-01-01T00-00-0${i}-000Z-1.jsonl`;
    const claim = (file: string, seq: number, hash: string) => chain([anchor([{ file, seq, hash }]), seal()]);
    cases.push({
      files: [[name(1), claim(name(0), 2, sha256("a row"))]],
      code: 7,
      headline: "Ledger missing a file: 2 rows in 1 file(s), 1 finding(s)",
      finding: `missing: ${name(0)} line 2: the file is missing; the anchor of ${
        name(1)
      } (line 1) committed to its row 2`,
    });
    cases.push({
      files: [[name(0), sealed], [name(1), claim(name(0), 5, sha256("a row"))]],
      code: 8,
      headline: "Ledger truncated: 5 rows in 2 file(s), 1 finding(s)",
      finding: `truncated: ${name(0)} line 4: rows 4 to 5 were removed; the anchor of ${
        name(1)
      } (line 1) committed to its row 5`,
    });
    cases.push({
      files: [[name(0), chain([anchor(), call()])]],
      code: 9,
      headline: "Ledger not sealed: 2 rows in 1 file(s), 1 finding(s)",
      finding: `unsealed: ${name(0)} line 2: never sealed: its process (pid ${DEAD}) ended without a clean exit ` +
        `(a crash, or its seal was cut off); last row 2: call of "echo" at ${TIME}`,
    });
    for (const [i, c] of cases.entries()) {
      const dir = path.join(work.dir, `headline-${i}`);
      for (const [file, lines] of c.files) write(dir, file, lines);
      const found = await verify(dir);
      assert.equal(found.code, c.code, found.text.join("\n"));
      assert.deepEqual(found.text, [c.headline, c.finding]);
      assert.deepEqual(found.report.notes, []);
    }

    // A version 1 file, and a file whose process still runs (this one): notes, not findings. A sealed file of a
    // process still running needs no note.
    const dir = path.join(work.dir, "notes");
    const v1 = { ...call(), v: 1, kind: undefined, intent: undefined };
    write(dir, name(0), chain([v1]));
    write(dir, name(1), chain([anchor(), call()].map((row) => ({ ...row, pid: process.pid }))));
    write(dir, name(2), chain([anchor(), call(), seal()].map((row) => ({ ...row, pid: process.pid }))));
    // Version 3: rows in groups.
    write(dir, name(3), grouped([[anchor()], [call(), intent(), call({ intent: 3 })], [call()], [seal()]], 3));
    const found = await verify(dir);
    assert.equal(found.code, 0, found.text.join("\n"));
    assert.deepEqual(found.text, [
      "Ledger intact: 12 rows in 4 file(s)",
      `note: ${name(0)}: version 1 (no anchor or seal): its end cannot be checked`,
      `note: ${name(1)}: not sealed yet: its process (pid ${process.pid}) is running`,
    ]);
    assert.deepEqual(found.report.findings, []);
  });

  it("finds a row of a crashed file's last group edited, through the later anchor that committed to the group", async () => {
    const dir = path.join(work.dir, "last-group");
    const crashed = grouped([[anchor()], [call(), intent(), call()]], 3);
    const name = write(dir, "2026-01-01T00-00-00-000Z-1.jsonl", crashed);
    const head = { file: name, hash: sha256(crashed.slice(1).join("\n")), seq: 4 };
    const later = write(dir, "2026-01-01T00-00-01-000Z-1.jsonl", grouped([[anchor([head])], [seal()]], 3));
    let found = await verify(dir);
    assert.equal(found.code, 9, found.text.join("\n"));
    assert.deepEqual(found.report.findings.map((f) => f.kind), ["unsealed", "unfinished"]);
    // No row after it commits to the group: only the anchor's head does.
    write(dir, name, crashed.map((line, i) => (i === 2 ? line.replace('"tool":"run"', '"tool":"ran"') : line)));
    found = await verify(dir);
    assert.equal(found.code, 3, found.text.join("\n"));
    assert.deepEqual(found.report.findings[0], {
      kind: "broken",
      file: name,
      line: 4,
      problem: `rows 2 to 4 are not those the anchor of ${later} (line 1) committed to (the file was rewritten)`,
    });
  });

  it("reads an anchor longer than the first read of a file whole, and takes seq 0 as a file with no row", async () => {
    const dir = path.join(work.dir, "many");
    const heads = [];
    for (let i = 0; i < 40; i++) {
      const lines = chain([anchor(), call(), seal()]);
      const file = write(dir, `2026-01-01T00-00-${String(i).padStart(2, "0")}-000Z-1.jsonl`, lines);
      heads.push({ file, hash: sha256(lines[2]), seq: 3 });
    }
    heads.push({ file: write(dir, "2026-01-01T00-00-59-000Z-1.jsonl", []), hash: GENESIS, seq: 0 });
    const lines = chain([anchor(heads), seal()]);
    assert.ok(lines[0].length > 4096, `an anchor of ${lines[0].length} characters`);
    const last = write(dir, "2026-01-01T00-01-00-000Z-1.jsonl", lines);
    let found = await verify(dir);
    assert.equal(found.code, 0, found.text.join("\n"));
    assert.deepEqual(found.text, ["Ledger intact: 122 rows in 42 file(s)"]);

    // The same anchor, with one head that is not the row it names: found through the long anchor.
    const wrong = heads.map((h, i) => (i === 39 ? { ...h, hash: sha256("another row") } : h));
    write(dir, last, chain([anchor(wrong), seal()]));
    found = await verify(dir);
    assert.equal(found.code, 3);
    assert.deepEqual(found.text.slice(1), [
      `broken: ${
        heads[39].file
      } line 3: not the row the anchor of ${last} (line 1) committed to (the file was rewritten)`,
    ]);
  });

  it("says what it found where there is no ledger or it cannot read one, and refuses another command", async () => {
    const empty = path.join(work.dir, "empty");
    mkdirSync(empty);
    writeFileSync(path.join(empty, "notes.txt"), "not a ledger file");
    // A directory that looks like a ledger file is not one.
    mkdirSync(path.join(empty, "2026-01-01T00-00-00-000Z-1.jsonl"));
    for (const dir of [empty, path.join(work.dir, "nowhere")]) {
      const text = await runWarden(["ledger", "verify", "--ledger", dir]);
      assert.deepEqual([text.code, text.stdout], [5, `No ledger in ${dir}\n`]);
      const json = await runWarden(["ledger", "verify", "--json", "--ledger", dir]);
      assert.deepEqual(JSON.parse(json.stdout), { status: "absent", files: 0, rows: 0, findings: [], notes: [] });
    }

    const notADir = path.join(work.dir, "a-file");
    writeFileSync(notADir, "x");
    const { code, report, text } = await verify(notADir);
    assert.equal(code, 6);
    assert.equal(text[0], "Ledger unreadable: 0 rows in 0 file(s), 1 finding(s)");
    assert.equal(report.findings.length, 1);
    assert.deepEqual(report.notes, []);
    assert.deepEqual({ ...report.findings[0], problem: "" }, {
      kind: "unreadable",
      file: notADir,
      line: 0,
      problem: "",
    });
    assert.match(text[1], new RegExp(`^unreadable: ${notADir} line 0: .*(ENOTDIR|not a directory)`, "i"));

    // A file it will not read whole (a sparse one past the 256 MiB cap): unreadable, ahead of a torn file, and a file
    // an anchor names that verify could not read is not reported missing as well.
    const big = path.join(work.dir, "big");
    const huge = write(big, "2026-01-01T00-00-00-000Z-1.jsonl", []);
    truncateSync(path.join(big, huge), 256 * 1024 * 1024 + 1);
    const torn = write(big, "2026-01-01T00-00-01-000Z-1.jsonl", [
      ...chain([anchor([{ file: huge, hash: sha256("x"), seq: 1 }]), seal()]),
      "{",
    ], "");
    const unreadable = await verify(big);
    assert.equal(unreadable.code, 6, unreadable.text.join("\n"));
    assert.deepEqual(unreadable.report.findings.map((f) => [f.kind, f.file, f.line]), [
      ["unreadable", huge, 0],
      ["torn", torn, 3],
    ]);
    assert.equal(
      unreadable.report.findings[0].problem,
      `it has ${256 * 1024 * 1024 + 1} bytes, more than the ${256 * 1024 * 1024} warden reads`,
    );

    for (const args of [[], ["check"], ["verify", "--bogus"], ["verify", "--json", "more"]]) {
      const refused = await runWarden(["ledger", ...args, "--ledger", empty]);
      assert.equal(refused.code, 2, refused.stderr);
      assert.equal(refused.stdout, "");
      assert.equal(
        refused.stderr,
        `warden: Invalid command line: expected "warden ledger verify [--json]"; received ${
          JSON.stringify(args.join(" "))
        }\n`,
      );
    }
  });
});
