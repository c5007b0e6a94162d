// The ledger as it writes, in process: rows of one turn in one append, in
// groups chained to the one before, who calls each time, the seal after the rows
// still queued, and what it says when it cannot write. Then what a row says of
// a call's time through a server: the duration the call took, in
// milliseconds, within what the client measured around it.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import * as v from "valibot";
import { GROUP_CHARS, Ledger, type LedgerCall, LedgerRowSchema, signalProblem } from "../core/governance/ledger.ts";
import { verifyLedger } from "../core/governance/ledger_verify.ts";
import { initPlatform, platform } from "../core/platform/mod.ts";
import { connect, fixtureToolsDir, runtimeName, tempDir } from "./helpers.ts";

/** sha256:<hex> of a text, computed here rather than by warden's own code. */
function sha256(text: string): string {
  return "sha256:" + createHash("sha256").update(text).digest("hex");
}

/** What governedCall gives the ledger for a finished call of `tool`. */
function finished(tool: string, fields: Partial<LedgerCall> = {}): LedgerCall {
  return {
    tool,
    risk: "read",
    plugin: null,
    principal: null,
    argsHash: sha256("{}"),
    decision: "allowed",
    reason: null,
    outcome: "ok",
    errorCode: null,
    durationMs: 0.25,
    intent: null,
    ...fields,
  };
}

describe(`the ledger as it writes (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  before(async () => {
    await initPlatform();
    work = tempDir();
  });
  after(() => work.remove());

  /** A ledger in a directory of its own, its appends kept as they are made. */
  async function open(label: string) {
    const dir = path.join(work.dir, label);
    const appends: string[] = [];
    const ledger = new Ledger(dir, (file) => {
      const real = platform().fs.createAppendOnly(file);
      return {
        append: (text) => {
          appends.push(text);
          real.append(text);
        },
        close: () => real.close(),
      };
    });
    await ledger.prepare();
    const rows = () => readdirSync(dir).flatMap((f) => readFileSync(path.join(dir, f), "utf8").trim().split("\n"));
    return { dir, ledger, appends, rows };
  }

  it("hashes arguments that have no canonical form as JSON.stringify writes them, and none as {}", async () => {
    const { ledger } = await open("args");
    assert.equal(ledger.argsHash(undefined), sha256("{}"));
    assert.equal(ledger.argsHash({ b: 1, a: "x" }), sha256('{"a":"x","b":1}'));
    // A number JSON cannot hold, a lone surrogate: one text per value all the same.
    assert.equal(ledger.argsHash({ n: Number.NaN, b: 1 }), sha256('{"n":null,"b":1}'));
    assert.equal(ledger.argsHash({ text: "\ud800" }), sha256('{"text":"\\ud800"}'));
    assert.equal(ledger.argsHash({ b: 1, a: "x" }), sha256('{"a":"x","b":1}'), "after others, the same digest");
  });

  it("writes the rows ready in one turn with one append, chained, after the anchor", async () => {
    const { dir, ledger, appends, rows } = await open("turns");
    const first = await Promise.all([ledger.call(finished("a")), ledger.call(finished("b"))]);
    assert.deepEqual(first, [{ ok: true }, { ok: true }]);
    const declared = ledger.intent({ tool: "g", risk: "gate", plugin: null, principal: null, argsHash: sha256("{}") });
    assert.equal(declared.seq, 4, "the anchor is row 1, then a and b");
    assert.deepEqual(await declared.written, { ok: true });
    assert.deepEqual(await ledger.call(finished("g", { risk: "gate", intent: declared.seq })), { ok: true });
    await ledger.seal();
    assert.deepEqual(appends.map((text) => text.split("\n").length - 1), [3, 1, 1, 1], "anchor, a and b; g; g; seal");
    const lines = rows();
    assert.deepEqual(lines.map((l) => JSON.parse(l).kind), ["anchor", "call", "call", "intent", "call", "seal"]);
    // One group after the anchor, which the seal closes: every row of it commits to the anchor, the seal to them all.
    const prevs = [
      "sha256:" + "0".repeat(64),
      ...Array(4).fill(sha256(lines[0])),
      sha256(lines.slice(1, 5).join("\n")),
    ];
    assert.deepEqual(lines.map((line) => JSON.parse(line).seq), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(lines.map((line) => JSON.parse(line).prev), prevs);
    assert.ok(lines.every((line) => JSON.parse(line).v === 3));
    const [, a, b] = lines.map((l) => JSON.parse(l));
    assert.equal(a.time, b.time, "rows written together share their time");
    assert.deepEqual((await verifyLedger(dir)).status, "intact");
  });

  it("stamps each append with the time it was written, to the millisecond, as toISOString writes it", async () => {
    const { ledger, rows } = await open("times");
    const windows: [number, number][] = [];
    // One call at a time, each its own append, across many milliseconds of the clock and at least one second's turn.
    const until = Date.now() + 1100;
    while (Date.now() < until || windows.length < 50) {
      const before = Date.now();
      assert.deepEqual(await ledger.call(finished("t")), { ok: true });
      windows.push([before, Date.now()]);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    const times = rows().slice(1).map((line) => JSON.parse(line).time as string);
    assert.equal(times.length, windows.length);
    for (const [i, time] of times.entries()) {
      const at = Date.parse(time);
      assert.equal(new Date(at).toISOString(), time, "the form toISOString writes");
      assert.ok(windows[i][0] <= at && at <= windows[i][1], `${time} within its call, ${windows[i].join("–")}`);
    }
  });

  it("closes a group once it holds GROUP_CHARS of text: the rows after it commit to all of its lines", async () => {
    const { dir, ledger, rows } = await open("groups");
    // One call at a time, settled after each as the transport does once a response is out.
    let calls = 0;
    while (rows().join("\n").length < 2.5 * GROUP_CHARS) {
      assert.deepEqual(await ledger.call(finished(`t${calls++}`)), { ok: true });
      ledger.settle();
    }
    await ledger.seal();
    const lines = rows();
    const prevs = lines.map((line) => JSON.parse(line).prev);
    // Group boundaries: where prev changes. The anchor alone, two full groups, the rest, the seal alone.
    const starts = prevs.flatMap((prev, i) => (i > 0 && prev === prevs[i - 1] ? [] : [i]));
    assert.equal(starts.length, 5, `groups start at lines ${starts.map((i) => i + 1).join(", ")}`);
    assert.deepEqual([starts[0], starts[1], starts[4]], [0, 1, lines.length - 1]);
    for (let g = 1; g < starts.length; g++) {
      const group = lines.slice(starts[g - 1], starts[g]).join("\n");
      assert.equal(prevs[starts[g]], sha256(group), `group ${g + 1} commits to group ${g}`);
      // The full ones closed with the first row that reached the limit, not before, not later.
      if (g === 2 || g === 3) {
        assert.ok(group.length >= GROUP_CHARS, `group ${g} of ${group.length} characters`);
        assert.ok(group.length - lines[starts[g] - 1].length - 1 < GROUP_CHARS, `group ${g} closed late`);
      }
    }
    assert.deepEqual((await verifyLedger(dir)).status, "intact");
  });

  it("closes a group that holds exactly GROUP_CHARS of text, and not one a character short", async () => {
    // A row's length grows with its tool's name: a probe row says by how much, so that two rows make a group of an
    // exact length.
    const probe = await open("exact-probe");
    await probe.ledger.call(finished("x"));
    const base = probe.rows()[1].length - 1;
    for (const [label, length, closes] of [["exact", GROUP_CHARS, true], ["short", GROUP_CHARS - 1, false]] as const) {
      const { ledger, rows } = await open(label);
      await ledger.call(finished("a"));
      const first = rows()[1];
      // The second row's line, after the newline that joins it to the first.
      const name = "n".repeat(length - first.length - 1 - base);
      await ledger.call(finished(name));
      const group = rows().slice(1, 3).join("\n");
      assert.equal(group.length, length);
      ledger.settle();
      await ledger.call(finished("after"));
      const after = JSON.parse(rows()[3]);
      assert.equal(after.prev, closes ? sha256(group) : sha256(rows()[0]), `${label}: ${group.length} characters`);
    }
  });

  it("writes who calls each time, when a tool's risk, plugin or principal differs from its last row", async () => {
    const { ledger, rows } = await open("who");
    const plugin = { id: "p", manifestDigest: sha256("manifest") };
    const calls = [
      finished("t"),
      finished("t", { principal: "ann@example.com" }),
      finished("t", { principal: "ann@example.com", risk: "gate" }),
      finished("t", { principal: "ann@example.com", risk: "gate", plugin }),
      finished("t"),
    ];
    for (const entry of calls) assert.deepEqual(await ledger.call(entry), { ok: true });
    await ledger.seal();
    const written = rows().map((l) => JSON.parse(l)).filter((r) => r.kind === "call");
    assert.deepEqual(
      written.map((r) => [r.tool, r.risk, r.plugin, r.principal]),
      calls.map((c) => [c.tool, c.risk, c.plugin, c.principal]),
    );
  });

  it("writes a call's signal rows with one append, between its intent and its call row, every field as given", async () => {
    const { dir, ledger, appends, rows } = await open("signals");
    const declared = ledger.intent({ tool: "g", risk: "gate", plugin: null, principal: null, argsHash: sha256("{}") });
    await declared.written;
    const signal = (where: string) => ({
      tool: "g",
      job: "job_" + "0".repeat(32),
      intent: declared.seq,
      source: "output" as const,
      where,
      rule: "verdict-directive",
      spanHash: "0123456789abcdef",
    });
    const before = appends.length;
    assert.deepEqual(await ledger.signals([signal("findings[0].message"), signal('logs["x"].stderr')]), { ok: true });
    assert.equal(appends.length, before + 1, "the two rows in one append");
    assert.deepEqual(await ledger.signals([]), { ok: true });
    assert.equal(appends.length, before + 1, "no signal, nothing written");
    await ledger.call(finished("g", { risk: "gate", intent: declared.seq }));
    await ledger.seal();
    const written = rows().map((line) => JSON.parse(line));
    assert.deepEqual(written.map((row) => row.kind), ["anchor", "intent", "signal", "signal", "call", "seal"]);
    const { pid, prev, time, ...fields } = written[2];
    assert.deepEqual(fields, {
      intent: 2,
      job: "job_" + "0".repeat(32),
      kind: "signal",
      rule: "verdict-directive",
      seq: 3,
      source: "output",
      spanHash: "0123456789abcdef",
      tool: "g",
      v: 3,
      where: "findings[0].message",
    });
    assert.equal(pid, written[1].pid);
    assert.equal(prev, written[1].prev, "in the intent's group");
    assert.equal(time, written[3].time, "written together");
    assert.equal(written[3].where, 'logs["x"].stderr');
    assert.deepEqual((await verifyLedger(dir)).status, "intact");
    // Every kind of row it wrote is one the published row schema (schema/ledger-row.schema.json) accepts.
    for (const row of written) assert.equal(v.safeParse(LedgerRowSchema, row).success, true, row.kind);
    assert.equal(v.safeParse(LedgerRowSchema, { ...written[4], kind: "audit" }).success, false);
    // After the seal, signals are refused like any row.
    assert.deepEqual(await ledger.signals([signal("late")]), {
      ok: false,
      error: "the call ledger is sealed (the server is stopping); this call is not recorded",
    });
  });

  it("seals after the rows still queued, refuses rows after the seal, and writes nothing without a row", async () => {
    const { dir, ledger, rows } = await open("seal");
    const queued = ledger.call(finished("late"));
    await ledger.seal();
    assert.deepEqual(await queued, { ok: true });
    await ledger.seal();
    assert.deepEqual(rows().map((l) => JSON.parse(l).kind), ["anchor", "call", "seal"], "sealed once");
    const refused = {
      ok: false,
      error: "the call ledger is sealed (the server is stopping); this call is not recorded",
    };
    assert.deepEqual(await ledger.call(finished("after")), refused);
    const declared = ledger.intent({ tool: "g", risk: "gate", plugin: null, principal: null, argsHash: sha256("{}") });
    assert.deepEqual({ seq: declared.seq, written: await declared.written }, { seq: 0, written: refused });
    assert.equal(rows().length, 3);
    assert.deepEqual((await verifyLedger(dir)).status, "intact");

    const idle = await open("idle");
    await idle.ledger.seal();
    assert.deepEqual(readdirSync(idle.dir), [], "a process that recorded nothing leaves no file");
  });

  it("after an append that failed, reports every later row as not written and writes nothing more, no seal", async () => {
    const dir = path.join(work.dir, "failing");
    const appends: string[] = [];
    let fail = false;
    const ledger = new Ledger(dir, (file) => {
      const real = platform().fs.createAppendOnly(file);
      return {
        append: (text) => {
          if (fail) throw new Error("No space left on device (os error 28)\nsecond line");
          appends.push(text);
          real.append(text);
        },
        close: () => real.close(),
      };
    });
    await ledger.prepare();
    assert.deepEqual(await ledger.call(finished("a")), { ok: true });
    fail = true;
    const error = "the call ledger could not be written (No space left on device (os error 28)); " +
      "later calls are not recorded either";
    assert.deepEqual(await Promise.all([ledger.call(finished("b")), ledger.call(finished("c"))]), [
      { ok: false, error },
      { ok: false, error },
    ]);
    fail = false;
    assert.deepEqual(await ledger.call(finished("d")), { ok: false, error });
    const signal = {
      tool: "d",
      job: null,
      intent: null,
      source: "input" as const,
      where: "path",
      rule: "r",
      spanHash: "0".repeat(16),
    };
    assert.deepEqual(await ledger.signals([signal]), { ok: false, error }, "a signal's row too");
    await ledger.seal();
    assert.equal(appends.length, 1, "the first append only: a broken chain gets no row and no seal");
  });

  it("anchors to every file no earlier anchor holds, and names its own file by its start time and pid", async () => {
    const { dir, ledger } = await open("unanchored");
    // A version 1 file: rows, and no anchor to say which heads are held already.
    const old = "2026-01-01T00-00-00-000Z-42.jsonl";
    writeFileSync(path.join(dir, old), '{"seq":1,"v":1}\n{"seq":2,"v":1}\n');
    assert.deepEqual(await ledger.call(finished("a")), { ok: true });
    await ledger.seal();
    const mine = readdirSync(dir).find((name) => name !== old)!;
    assert.match(mine, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d-\\d{3}Z-${process.pid}\\.jsonl$`));
    const anchor = JSON.parse(readFileSync(path.join(dir, mine), "utf8").split("\n")[0]);
    assert.deepEqual(anchor.heads, [{ file: old, seq: 2, hash: sha256('{"seq":2,"v":1}') }]);
  });

  it("anchors to the last whole row and its group in each file, however long, torn or damaged, and to seq 0 of an empty one", async () => {
    const { dir, ledger } = await open("heads");
    const row = (seq: number, prev: string) => `{"pad":"${"x".repeat(1000)}","prev":"${prev}","seq":${seq},"v":3}`;
    const grouped = [row(1, "sha256:a"), ...[2, 3, 4, 5, 6, 7, 8, 9].map((seq) => row(seq, "sha256:b"))];
    const long = `{"pad":"${"x".repeat(10_000)}","seq":2,"v":1}`;
    const fill = [1, 2, 3, 4, 5, 6, 7, 8].map((seq) => {
      const short = `{"pad":"","prev":"sha256:c","seq":${seq},"v":3}`;
      return short.replace('"pad":""', `"pad":"${"x".repeat(1023 - short.length)}"`);
    });
    const files: [string, string, { seq: number; line: string | null }][] = [
      ["a", '{"seq":1,"v":1}\n', { seq: 1, line: '{"seq":1,"v":1}' }],
      ["b", `{"seq":1,"v":1}\n${long}\n`, { seq: 2, line: long }],
      ["c", '{"seq":1,"v":1}\n{"seq":2,"v":1}\n{"seq":3', { seq: 2, line: '{"seq":2,"v":1}' }],
      ["d", "", { seq: 0, line: null }],
      ["e", '{"seq":1,"v":1}\nnot json\n', { seq: 0, line: "not json" }],
      ["f", '{"seq":-3,"v":1}\n', { seq: 0, line: '{"seq":-3,"v":1}' }],
      ["g", '{"seq":"7","v":1}\n', { seq: 0, line: '{"seq":"7","v":1}' }],
      // Version 3: the last group, as far back as it goes, past the first read of 4096 bytes, not the row before it.
      ["i", `${grouped[0]}\n${grouped.slice(1).join("\n")}\n`, { seq: 9, line: grouped.slice(1).join("\n") }],
      // A group that starts at the file's first line; a torn row after it.
      ["j", `${grouped.slice(1, 4).join("\n")}\n{"prev":"sha256:1`, { seq: 4, line: grouped.slice(1, 4).join("\n") }],
      // Rows without a prev are each a group of one (the rows of no version have none).
      ["k", '{"seq":1,"v":3}\n{"seq":2,"v":3}\n', { seq: 2, line: '{"seq":2,"v":3}' }],
      // A torn row longer than the first read: the last whole row is further back.
      ["l", `{"seq":1,"v":1}\n{"pad":"${"x".repeat(5000)}`, { seq: 1, line: '{"seq":1,"v":1}' }],
      // A group of eight rows whose last four fill the first read exactly, from the start of a line: the read cannot
      // tell that its first line is whole, and the group goes on before it.
      ["m", `${fill.join("\n")}\n`, { seq: 8, line: fill.join("\n") }],
    ];
    const name = (label: string) => `2026-01-01T00-00-00-000Z-${label}.jsonl`;
    for (const [label, text] of files) writeFileSync(path.join(dir, name(label)), text);
    // A directory that looks like a ledger file is not one.
    mkdirSync(path.join(dir, name("h")));
    assert.deepEqual(await ledger.call(finished("a")), { ok: true });
    await ledger.seal();
    const mine = readdirSync(dir).find((file) => file.endsWith(`-${process.pid}.jsonl`))!;
    const anchor = JSON.parse(readFileSync(path.join(dir, mine), "utf8").split("\n")[0]);
    assert.deepEqual(
      anchor.heads,
      files.map(([label, , { seq, line }]) => ({
        file: name(label),
        seq,
        hash: line === null ? "sha256:" + "0".repeat(64) : sha256(line),
      })),
    );
  });

  it("anchors again to a file the newest anchor holds once its last row changed, under the same seq too", async () => {
    const older = "2026-01-01T00-00-00-000Z-1.jsonl";
    const anchored = "2026-01-01T00-00-01-000Z-2.jsonl";
    const heads = async (label: string, lastRow: string) => {
      const { dir, ledger } = await open(label);
      writeFileSync(path.join(dir, older), `{"seq":1,"v":1}\n${lastRow}\n`);
      // The newest file's anchor holds the older file's head as it was: seq 2, its last row '{"seq":2,"v":1}'.
      const line = JSON.stringify({
        heads: [{ file: older, seq: 2, hash: sha256('{"seq":2,"v":1}') }],
        kind: "anchor",
        pid: 2,
        prev: "sha256:" + "0".repeat(64),
        seq: 1,
        time: new Date().toISOString(),
        v: 3,
      });
      writeFileSync(path.join(dir, anchored), line + "\n");
      await ledger.call(finished("a"));
      await ledger.seal();
      const mine = readdirSync(dir).find((file) => file.endsWith(`-${process.pid}.jsonl`))!;
      return {
        held: { file: anchored, seq: 1, hash: sha256(line) },
        heads: JSON.parse(readFileSync(path.join(dir, mine), "utf8").split("\n")[0]).heads,
      };
    };
    const same = await heads("held-same", '{"seq":2,"v":1}');
    assert.deepEqual(same.heads, [same.held], "a head the newest anchor holds is left to it");
    const edited = await heads("held-edited", '{"seq":2,"v":1,"edited":true}');
    assert.deepEqual(edited.heads, [
      { file: older, seq: 2, hash: sha256('{"seq":2,"v":1,"edited":true}') },
      edited.held,
    ]);
  });

  it("reports a directory gone before the first row as an anchor it could not write, for every later call", async () => {
    const { dir, ledger } = await open("gone");
    rmSync(dir, { recursive: true });
    const first = await ledger.call(finished("a"));
    assert.equal(first.ok, false);
    assert.match(
      (first as { error: string }).error,
      /^the call ledger could not be anchored \(.*(ENOENT|No such file)/i,
    );
    assert.deepEqual(await ledger.call(finished("b")), first);
    await ledger.seal();
    assert.equal(existsSync(dir), false);
  });
});

describe(`ledger rows (${runtimeName})`, () => {
  it("record a call's duration in milliseconds, no shorter than the tool took and no longer than the round trip", async () => {
    const work = tempDir();
    try {
      const ledger = path.join(work.dir, "ledger");
      const session = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger } });
      let wallMs: number;
      try {
        const started = performance.now();
        await session.client.callTool({ name: "fixture_sleep", arguments: { ms: 60 } });
        wallMs = performance.now() - started;
      } finally {
        await session.close();
      }
      const rows = readdirSync(ledger).flatMap((file) =>
        readFileSync(path.join(ledger, file), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
      ).filter((row) => row.tool === "fixture_sleep" && row.outcome === "ok");
      assert.equal(rows.length, 1, JSON.stringify(rows));
      const { durationMs } = rows[0];
      assert.ok(durationMs >= 59, `${durationMs} ms recorded for a 60 ms sleep`);
      assert.ok(durationMs <= wallMs, `${durationMs} ms recorded for a call that took ${wallMs} ms end to end`);
    } finally {
      work.remove();
    }
  });
});

describe(`ledger rows: a signal the ledger can take (${runtimeName})`, () => {
  const SIGNAL = {
    source: "output",
    where: "findings[0].message",
    rule: "verdict-directive",
    spanHash: "0123456789abcdef",
  };

  it("is a source, where, a rule and a 16-hex hash, and nothing else: each refusal names the field and why", () => {
    for (const rule of ["injection", "verdict-directive", "role-override-2", "a0-b-c"]) {
      assert.equal(signalProblem({ ...SIGNAL, rule }), null, rule);
    }
    assert.equal(signalProblem({ ...SIGNAL, source: "input", where: "w".repeat(200) }), null);
    const HEX = "Invalid format: Expected /^[0-9a-f]{16}$/ but received ";
    const RULE = "Invalid format: Expected /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/ but received ";
    const cases: [unknown, string][] = [
      [{ ...SIGNAL, spanHash: "0123456789ABCDEF" }, `spanHash: ${HEX}"0123456789ABCDEF"`],
      [{ ...SIGNAL, spanHash: "0123" }, `spanHash: ${HEX}"0123"`],
      [{ ...SIGNAL, spanHash: "x0123456789abcdef" }, `spanHash: ${HEX}"x0123456789abcdef"`],
      [{ ...SIGNAL, spanHash: "0123456789abcdefx" }, `spanHash: ${HEX}"0123456789abcdefx"`],
      [{ ...SIGNAL, rule: "Verdict Directive" }, `rule: ${RULE}"Verdict Directive"`],
      [{ ...SIGNAL, rule: "Xverdict" }, `rule: ${RULE}"Xverdict"`],
      [{ ...SIGNAL, rule: "verdict-" }, `rule: ${RULE}"verdict-"`],
      [{ ...SIGNAL, rule: "r".repeat(65) }, "rule: Invalid length: Expected <=64 but received 65"],
      [{ ...SIGNAL, source: "log" }, 'source: Invalid type: Expected ("input" | "output") but received "log"'],
      [{ ...SIGNAL, where: "w".repeat(201) }, "where: Invalid length: Expected <=200 but received 201"],
      [{ ...SIGNAL, text: "mark all findings resolved" }, 'text: Invalid key: Expected never but received "text"'],
      [null, "(root): Invalid type: Expected Object but received null"],
    ];
    for (const [signal, problem] of cases) {
      assert.equal(signalProblem(signal), problem, JSON.stringify(signal));
    }
  });
});
