// How a request's era is told, without a server (test/protocol_eras.test.ts drives both eras through one).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { eraOf, headerMismatch } from "./eras.ts";

const LEGACY = ["2025-11-25"];
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

describe("eraOf", () => {
  it("reads a request without the modern _meta as legacy, but a discover probe as modern", () => {
    assert.equal(eraOf({ method: "tools/list" }, LEGACY), null);
    assert.equal(eraOf({ method: "tools/list", params: { _meta: { progressToken: 1 } } }, LEGACY), null);
    assert.deepEqual(eraOf({ method: "server/discover" }, LEGACY), {
      version: "2026-07-28",
      logLevel: null,
      traceparent: null,
    });
  });

  it("keeps a well-formed traceparent and drops a malformed or all-zero one", () => {
    const trace = (traceparent: string) =>
      (eraOf({ method: "tools/list", params: { _meta: { ...META, traceparent } } }, LEGACY) as { traceparent: unknown })
        .traceparent;
    const good = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    assert.equal(trace(good), good);
    assert.equal(trace("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), null);
    assert.equal(trace("00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01"), null);
    assert.equal(trace("not a trace"), null);
  });

  it("refuses a version that is not a string, and a method that is not one", () => {
    const refusal = eraOf(
      { method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": 2026 } } },
      LEGACY,
    );
    assert.deepEqual(refusal, {
      code: -32602,
      message:
        'Invalid params: _meta["io.modelcontextprotocol/protocolVersion"] must be a protocol version string, received 2026',
      status: 400,
    });
    assert.deepEqual(eraOf({ method: "prompts/list", params: { _meta: META } }, LEGACY), {
      code: -32601,
      message: "Method not found: prompts/list",
      status: 404,
    });
  });
});

describe("headerMismatch", () => {
  it("wants the version, the method and, for tools/call, the tool in the headers as in the body", () => {
    const call = { method: "tools/call", params: { name: "echo", _meta: META } };
    const headers = new Headers({
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "echo",
    });
    assert.equal(headerMismatch(call, "2026-07-28", headers), null);
    headers.delete("mcp-name");
    assert.equal(
      headerMismatch(call, "2026-07-28", headers)?.message,
      'Header mismatch: Mcp-Name is missing; it must be "echo", as in the body',
    );
  });
});
