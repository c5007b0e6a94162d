// Two small doors of the context and what the call makes of them: ctx.note, whose texts become blocks after the
// result's own (which stays as it was, its JSON parseable and sent as made), and ctx.recordSignals, open to gate tools
// only, which hands the call's signals to the ledger's writer and never loses count of them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CatalogEntry } from "./catalog.ts";
import { createContext, notesOf } from "./context.ts";
import type { RootFs } from "./doors/roots.ts";
import { WardenError } from "./errors.ts";
import { resultJson, shapeOutput } from "./call/result.ts";
import type { ContextParts } from "./context.ts";
import { type GateContext, type HostFacts, RISK_CLASSES, type RiskClass, type SignalRecord } from "./tool.ts";

const runtime = "Deno" in globalThis ? "deno" : "node";

function contextOf<R extends RiskClass>(risk: R, recordSignals?: ContextParts["recordSignals"]) {
  return createContext(risk, {
    signal: () => new AbortController().signal,
    fs: {} as RootFs, // not opened
    host: {} as HostFacts, // not read
    tool: { name: "probe", risk, capabilities: { spawn: [], writeRoots: [], netHosts: [] } },
    deadline: Date.now() + 10_000,
    recordSignals,
  });
}

const SIGNAL: SignalRecord = {
  source: "output",
  where: "findings[0].message",
  rule: "verdict-directive",
  spanHash: "0123456789abcdef",
};

describe(`ctx.note (${runtime})`, () => {
  it("keeps the notes of each context, in order, and none that is empty", () => {
    const ctx = contextOf("read");
    const other = contextOf("read");
    assert.deepEqual(notesOf(ctx), []);
    ctx.note("first");
    ctx.note("");
    ctx.note("second");
    assert.deepEqual(notesOf(ctx), ["first", "second"]);
    assert.deepEqual(notesOf(other), []);
  });

  /** A tool entry with an output schema that accepts any object. */
  const entry = (ok: boolean): CatalogEntry =>
    ({
      descriptor: { name: "probe" },
      validateOutput: (value: unknown) =>
        ok ? { ok: true, value } : { ok: false, issues: [{ path: ["gate"], expected: "string", received: "number" }] },
    }) as unknown as CatalogEntry;

  it("puts each note after the JSON block, which stays the structured answer; the sent text carries both", () => {
    const result = shapeOutput(entry(true), { gate: "PASS", n: 1 }, ["a note", 'a "quoted" note']);
    assert.deepEqual(result.content, [
      { type: "text", text: '{"gate":"PASS","n":1}' },
      { type: "text", text: "a note" },
      { type: "text", text: 'a "quoted" note' },
    ]);
    const sent = JSON.parse(resultJson(result)!);
    assert.deepEqual(sent, { content: result.content, structuredContent: { gate: "PASS", n: 1 } });
    assert.deepEqual(JSON.parse(sent.content[0].text), sent.structuredContent);
    const plain = shapeOutput(entry(true), { gate: "PASS" });
    assert.equal(
      resultJson(plain),
      '{"content":[{"type":"text","text":"{\\"gate\\":\\"PASS\\"}"}],"structuredContent":{"gate":"PASS"}}',
    );
  });

  it("adds no note to an error result", () => {
    const result = shapeOutput(entry(false), { gate: 1 }, ["a note"]);
    assert.equal(result.isError, true);
    assert.equal(result.content.length, 1);
  });
});

describe(`ctx.recordSignals (${runtime})`, () => {
  for (const risk of RISK_CLASSES.filter((r) => r !== "gate")) {
    it(`${risk}: refused with its words, and nothing is recorded`, async () => {
      let asked = 0;
      const ctx = contextOf(
        risk,
        () => (asked++, Promise.resolve({ written: 1, failed: 0 })),
      ) as unknown as GateContext;
      await assert.rejects(ctx.recordSignals([SIGNAL]), (error: unknown) => {
        assert.ok(error instanceof WardenError);
        assert.equal(error.code, "capability_denied");
        assert.equal(
          error.message,
          `ctx.recordSignals needs risk class "gate": tool "probe" is "${risk}"; nothing was recorded`,
        );
        return true;
      });
      assert.equal(asked, 0);
    });
  }

  it("gate: hands the signals to the host's writer and answers its counts", async () => {
    const given: (readonly SignalRecord[])[] = [];
    const ctx = contextOf("gate", (signals) => {
      given.push(signals);
      return Promise.resolve({ written: 1, failed: 1 });
    });
    assert.deepEqual(await ctx.recordSignals([SIGNAL, SIGNAL]), { written: 1, failed: 1 });
    assert.deepEqual(given, [[SIGNAL, SIGNAL]]);
  });

  it("gate with no ledger behind the context: every signal is counted as failed", async () => {
    assert.deepEqual(await contextOf("gate").recordSignals([SIGNAL, SIGNAL, SIGNAL]), { written: 0, failed: 3 });
  });
});
