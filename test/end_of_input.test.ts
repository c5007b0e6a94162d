// The end of input, as a pipe gives it: every request read before it is
// answered (a call still running gets a short drain, then is cancelled and
// answered so), stdout is flushed, and the process exits within a bound.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fixtureToolsDir, initializeMessage, type RawSession, runtimeName, startRaw } from "./helpers.ts";

/** core/transport/server.ts END_OF_INPUT_DRAIN_MS; imported it would pull the SDK's server into the test under node. */
const DRAIN_MS = 2000;

const env = { WARDEN_TOOLS_DIR: fixtureToolsDir };

function call(id: number, name: string, args: Record<string, unknown>): Record<string, unknown> {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } };
}

function line(message: Record<string, unknown>): string {
  return JSON.stringify(message) + "\n";
}

/** Starts a server and waits for its initialize answer: from then on, timings measure the end of input alone. */
async function ready(): Promise<RawSession> {
  const raw = startRaw({ env });
  try {
    raw.request(initializeMessage(1));
    await raw.next((m) => m.id === 1, 20_000);
    raw.request({ jsonrpc: "2.0", method: "notifications/initialized" });
    return raw;
  } catch (error) {
    raw.kill();
    throw error;
  }
}

function ids(raw: RawSession): unknown[] {
  return raw.lines().map((l) => JSON.parse(l)).filter((m) => !("method" in m)).map((m) => m.id);
}

function textOfResult(message: Record<string, unknown>): string {
  return (message.result as { content: { text: string }[] }).content[0].text;
}

describe(`end of input (${runtimeName})`, () => {
  it("answers every request written just before the end, even before the server is up", async () => {
    // The same script, four servers at once: the race it guards against lost answers one run in two.
    const script = [
      line(initializeMessage(1)),
      line({ jsonrpc: "2.0", method: "notifications/initialized" }),
      line({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      line(call(3, "fixture_echo", { text: "three" })),
      line(call(4, "fixture_sleep", { ms: 200 })),
      line({ jsonrpc: "2.0", id: 5, method: "ping" }),
      // The last line has no newline: it is a message all the same.
      JSON.stringify({ jsonrpc: "2.0", id: 6, method: "ping" }),
    ].join("");
    const servers = Array.from({ length: 4 }, () => startRaw({ env }));
    try {
      for (const raw of servers) raw.closeStdin(script);
      for (const raw of servers) {
        const { code } = await raw.exited();
        assert.equal(code, 0, raw.stderr());
        assert.deepEqual(ids(raw).sort(), [1, 2, 3, 4, 5, 6], `every request answered once; stderr:\n${raw.stderr()}`);
        const slept = raw.lines().map((l) => JSON.parse(l)).find((m) => m.id === 4);
        assert.equal(textOfResult(slept), "slept 200 ms", "a call that ends within the drain keeps its result");
        for (const l of raw.lines()) assert.equal(JSON.parse(l).jsonrpc, "2.0");
      }
    } finally {
      for (const raw of servers) raw.kill();
    }
  });

  it("exits within a second when nothing is in flight", async () => {
    const raw = await ready();
    try {
      raw.closeStdin(
        line({ jsonrpc: "2.0", id: 2, method: "tools/list" }) + line(call(3, "fixture_echo", { text: "x" })),
      );
      const { code, msAfterStdinClosed } = await raw.exited();
      assert.equal(code, 0);
      assert.deepEqual(ids(raw).sort(), [1, 2, 3]);
      // The bound is a second; the margin is for a loaded machine, and stays under the drain a hung wait would take.
      assert.ok(msAfterStdinClosed < 1500, `exited ${Math.round(msAfterStdinClosed)} ms after stdin closed`);
    } finally {
      raw.kill();
    }
  });

  it("ends the drain as soon as the last call finishes", async () => {
    const raw = await ready();
    try {
      raw.closeStdin(line(call(2, "fixture_sleep", { ms: 300 })));
      const answer = await raw.next((m) => m.id === 2);
      assert.equal(textOfResult(answer), "slept 300 ms");
      const { code, msAfterStdinClosed } = await raw.exited();
      assert.equal(code, 0);
      assert.ok(msAfterStdinClosed < DRAIN_MS, `exited ${Math.round(msAfterStdinClosed)} ms after stdin closed`);
    } finally {
      raw.kill();
    }
  });

  it("cancels a call still running after the drain and answers it with the cancellation", async () => {
    const raw = await ready();
    try {
      raw.request(call(2, "fixture_sleep", { ms: 60_000 }));
      // The call is running once the server has answered a request sent after it.
      raw.request({ jsonrpc: "2.0", id: 3, method: "ping" });
      await raw.next((m) => m.id === 3);
      const closed = performance.now();
      raw.closeStdin();
      const answer = await raw.next((m) => m.id === 2, DRAIN_MS + 10_000);
      const answeredAfter = performance.now() - closed;
      const result = answer.result as { isError?: boolean; _meta?: Record<string, unknown> };
      assert.equal(result.isError, true);
      assert.equal(result._meta?.["warden/error_code"], "cancelled");
      assert.equal(
        textOfResult(answer),
        `Tool "fixture_sleep" was cancelled: the client closed its input and the call did not finish within ${DRAIN_MS} ms`,
      );
      assert.ok(answeredAfter >= DRAIN_MS - 100, `answered ${Math.round(answeredAfter)} ms after stdin closed`);
      const { code, msAfterStdinClosed } = await raw.exited();
      assert.equal(code, 0);
      // The bound is the drain plus a second; the margin is for a loaded machine.
      assert.ok(msAfterStdinClosed < DRAIN_MS + 3000, `exited ${Math.round(msAfterStdinClosed)} ms after stdin closed`);
      assert.match(raw.stderr(), /"event":"input_ended","inFlight":1/);
    } finally {
      raw.kill();
    }
  });

  it("does not wait for a call the client cancelled, nor answer it", async () => {
    const raw = await ready();
    try {
      raw.request(call(2, "fixture_sleep", { ms: 60_000 }));
      raw.request({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "enough" } });
      raw.request({ jsonrpc: "2.0", id: 3, method: "ping" });
      await raw.next((m) => m.id === 3);
      raw.closeStdin();
      const { code, msAfterStdinClosed } = await raw.exited();
      assert.equal(code, 0);
      assert.deepEqual(ids(raw).sort(), [1, 3], "MCP: a cancelled request gets no answer");
      assert.ok(msAfterStdinClosed < DRAIN_MS, `exited ${Math.round(msAfterStdinClosed)} ms after stdin closed`);
    } finally {
      raw.kill();
    }
  });
});
