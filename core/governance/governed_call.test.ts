// A gate call's signal rows, through governedCall and a real ledger: written between the call's intent and its call
// row, naming both; a malformed signal refused before anything is written; a signal a tool records after its call
// has ended (it ran on past its timeout) counted as failed, never written after the call row, so the chain verifies.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { CatalogEntry } from "../catalog.ts";
import type { RootFs } from "../doors/roots.ts";
import { WardenError } from "../errors.ts";
import { initPlatform } from "../platform/mod.ts";
import type { GateContext, HostFacts, SignalRecord } from "../tool.ts";
import { governedCall } from "./governed_call.ts";
import { Ledger } from "./ledger.ts";
import { verifyLedger } from "./ledger_verify.ts";
import type { Policy } from "./policy.ts";

const runtime = "Deno" in globalThis ? "deno" : "node";
const SIGNAL: SignalRecord = {
  source: "output",
  where: "findings[0].message",
  rule: "verdict-directive",
  spanHash: "0123456789abcdef",
};
const POLICY: Policy = {
  maxRisk: "gate",
  disabled: new Set(),
  principalRequired: new Set(),
  principal: null,
  engine: null,
};

/** A gate tool whose handler is `handler`, as the catalog would hold it. */
function gateTool(handler: (ctx: GateContext) => unknown): CatalogEntry {
  return {
    descriptor: { name: "probe", inputSchema: { type: "object", properties: {} }, _meta: {} },
    risk: "gate",
    capabilities: { spawn: [], writeRoots: [], netHosts: [] },
    validateInput: (args: unknown) => ({ ok: true, value: args }),
    invoke: (_args: unknown, ctx: GateContext) => handler(ctx),
  } as unknown as CatalogEntry; // the call reads nothing else of it
}

describe(`a gate call's signals in the ledger (${runtime})`, () => {
  let dir = "";
  before(async () => {
    await initPlatform();
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), "warden-signal-rows-")));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const options = (ledger: Ledger, timeoutMs = 10_000) => ({
    policy: POLICY,
    ledger,
    fs: {} as RootFs, // not opened
    host: {} as HostFacts, // not read
    timeoutMs,
  });
  const rows = (ledgerDir: string) =>
    readdirSync(ledgerDir).flatMap((f) =>
      readFileSync(path.join(ledgerDir, f), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    );

  it("writes a row per signal between the intent and the call row; refuses a malformed one, writing nothing", async () => {
    const ledgerDir = path.join(dir, "during");
    const ledger = new Ledger(ledgerDir);
    await ledger.prepare();
    const result = await governedCall(
      gateTool(async (ctx) => JSON.stringify(await ctx.recordSignals([SIGNAL, { ...SIGNAL, source: "input" }]))),
      {},
      options(ledger),
    );
    assert.equal(result.content[0].text, '{"written":2,"failed":0}');
    const malformed = await governedCall(
      gateTool((ctx) =>
        ctx.recordSignals([SIGNAL, { ...SIGNAL, spanHash: "the matched text" }]).catch((error: unknown) => {
          assert.ok(error instanceof WardenError && error.code === "invalid_output");
          return error.message;
        })
      ),
      {},
      options(ledger),
    );
    assert.match(
      malformed.content[0].text,
      /^Tool "probe" recorded a malformed signal: signals\[1\]\.spanHash: Invalid format: .*; nothing was recorded$/,
    );
    await ledger.seal();
    const written = rows(ledgerDir);
    assert.deepEqual(written.map((r) => r.kind), [
      "anchor",
      "intent",
      "signal",
      "signal",
      "call",
      "intent",
      "call",
      "seal",
    ]);
    const [, intent, first, second, call] = written;
    assert.deepEqual(
      [first, second].map((r) => [r.tool, r.job, r.intent, r.source, r.where, r.rule, r.spanHash]),
      [
        ["probe", null, intent.seq, "output", SIGNAL.where, SIGNAL.rule, SIGNAL.spanHash],
        ["probe", null, intent.seq, "input", SIGNAL.where, SIGNAL.rule, SIGNAL.spanHash],
      ],
    );
    assert.equal(call.intent, intent.seq);
    assert.equal((await verifyLedger(ledgerDir)).status, "intact");
  });

  it("counts a signal recorded after the call ended (past its timeout) as failed, and writes no row for it", async () => {
    const ledgerDir = path.join(dir, "late");
    const ledger = new Ledger(ledgerDir);
    await ledger.prepare();
    let late: GateContext | undefined;
    // The deadline timer does not hold the process open on its own (core/call/deadlines.ts): this does, meanwhile.
    const keep = setInterval(() => {}, 60_000);
    const result = await governedCall(
      gateTool((ctx) => {
        late = ctx;
        return new Promise(() => {}); // runs on past its time limit
      }),
      {},
      options(ledger, 20),
    ).finally(() => clearInterval(keep));
    assert.equal(result._meta?.["warden/error_code"], "timeout");
    assert.deepEqual(await late!.recordSignals([SIGNAL]), { written: 0, failed: 1 });
    await ledger.seal();
    assert.deepEqual(rows(ledgerDir).map((r) => r.kind), ["anchor", "intent", "call", "seal"]);
    assert.equal((await verifyLedger(ledgerDir)).status, "intact");
  });
});
