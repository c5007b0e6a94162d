// Both protocol eras from one process. An initialize-era client (2024-11-05 to
// 2025-11-25) reads, byte for byte, what it read before warden spoke the
// 2026-07-28 revision: each session below is replayed request by request and
// every line the server writes is compared with the transcript recorded in
// test/fixtures/legacy_transcripts.json (WARDEN_RECORD_TRANSCRIPTS=1 records
// them again, and fails the run, so that a new recording is always a reviewed diff).
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { type HttpServer, onDeno, repoRoot, runtimeName, startHttp, startRaw, tempDir } from "./helpers.ts";

const TRANSCRIPTS = path.join(repoRoot, "test/fixtures/legacy_transcripts.json");
const FIXTURES = path.join(repoRoot, onDeno ? "test/fixtures/conformance" : "dist/test/fixtures/conformance");
const RECORD = process.env.WARDEN_RECORD_TRANSCRIPTS === "1";

export const LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/** What an initialize-era client sends, one request at a time (`null` id: a notification). */
function legacySession(version: string): Record<string, unknown>[] {
  let id = 0;
  const request = (method: string, params?: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id: ++id,
    method,
    ...(params === undefined ? {} : { params }),
  });
  const call = (name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) =>
    request("tools/call", { name, arguments: args, ...(meta ? { _meta: meta } : {}) });
  return [
    request("initialize", {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: "legacy-client", version: "1.0.0" },
    }),
    { jsonrpc: "2.0", method: "notifications/initialized" },
    request("tools/list"),
    call("test_simple_text"),
    call("test_tool_with_progress", {}, { progressToken: "p1" }),
    call("test_tool_with_logging"),
    call("test_error_handling"),
    call("test_simple_text", { extra: 1 }),
    call("no_such_tool"),
    request("ping"),
    request("logging/setLevel", { level: "warning" }),
    request("logging/setLevel", { level: "loud" }),
    request("tools/list", { cursor: "x" }),
    request("resources/list"),
    request("no/such/method"),
  ];
}

/** Replays `messages`, waiting for each request's answer, and returns every line written, in order. */
async function replay(messages: Record<string, unknown>[], env: Record<string, string>): Promise<string[]> {
  const session = startRaw({ args: ["serve"], env });
  try {
    for (const message of messages) {
      session.request(message);
      if (message.id !== undefined) await session.next((m) => m.id === message.id);
    }
    session.closeStdin();
    await session.exited();
    return session.lines();
  } finally {
    session.kill();
  }
}

/**
 * Posts `messages` one at a time as a stateless Streamable HTTP client does (the version it agreed in the
 * MCP-Protocol-Version header after initialize) and returns each answer: status, content type and body.
 */
async function replayHttp(messages: Record<string, unknown>[], server: HttpServer): Promise<string[]> {
  const answers: string[] = [];
  let version: string | null = null;
  for (const message of messages) {
    const response = await fetch(server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(version ? { "mcp-protocol-version": version } : {}),
      },
      body: JSON.stringify(message),
    });
    const body = await response.text();
    answers.push(`${response.status} ${response.headers.get("content-type")}\n${body}`);
    if (message.method === "initialize") version = (message.params as { protocolVersion: string }).protocolVersion;
  }
  return answers;
}

describe(`an initialize-era client reads what it always read (${runtimeName})`, () => {
  const state = tempDir("warden-eras-");
  let recorded: Record<string, string[]> = {};
  const fresh: Record<string, string[]> = {};
  before(() => {
    if (existsSync(TRANSCRIPTS)) recorded = JSON.parse(readFileSync(TRANSCRIPTS, "utf8"));
  });
  after(() => {
    state.remove();
    if (RECORD) writeFileSync(TRANSCRIPTS, JSON.stringify(fresh, null, 2) + "\n");
  });

  let server: HttpServer;
  before(async () => {
    server = await startHttp([], {
      WARDEN_TOOLS_DIR: FIXTURES,
      WARDEN_LEDGER: path.join(state.dir, "http-ledger"),
      WARDEN_JOBS_DIR: path.join(state.dir, "http-jobs"),
    }, false);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  for (const version of LEGACY_VERSIONS) {
    it(`${version} over HTTP: every answer, byte for byte`, async () => {
      const answers = await replayHttp(legacySession(version), server);
      fresh[`http ${version}`] = answers;
      assert.ok(!RECORD, "recorded the transcripts again (WARDEN_RECORD_TRANSCRIPTS=1): review the diff, then rerun");
      assert.ok(
        recorded[`http ${version}`],
        `no transcript for ${version}: record them with WARDEN_RECORD_TRANSCRIPTS=1`,
      );
      assert.deepEqual(answers, recorded[`http ${version}`]);
    });
  }

  for (const version of LEGACY_VERSIONS) {
    it(`${version}: every line of a session, byte for byte`, async () => {
      const lines = await replay(legacySession(version), {
        WARDEN_TOOLS_DIR: FIXTURES,
        WARDEN_LEDGER: path.join(state.dir, "ledger"),
        WARDEN_JOBS_DIR: path.join(state.dir, "jobs"),
      });
      fresh[version] = lines;
      assert.ok(!RECORD, "recorded the transcripts again (WARDEN_RECORD_TRANSCRIPTS=1): review the diff, then rerun");
      assert.ok(recorded[version], `no transcript for ${version}: record them with WARDEN_RECORD_TRANSCRIPTS=1`);
      assert.deepEqual(lines, recorded[version]);
    });
  }
});

const MODERN = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "modern-client", version: "1.0.0" },
};
const SUPPORTED = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];
const SERVER_INFO = {
  name: "warden",
  version: JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")).version,
};
const DISCOVERED = {
  resultType: "complete",
  supportedVersions: SUPPORTED,
  capabilities: {
    tools: { listChanged: false },
    logging: {},
    tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    resources: {},
  },
  serverInfo: SERVER_INFO,
  _meta: { "io.modelcontextprotocol/serverInfo": SERVER_INFO },
  ttlMs: 300000,
  cacheScope: "public",
};
const UNSUPPORTED = {
  code: -32022,
  message:
    'Unsupported protocol version: received "2030-01-01"; this server speaks 2026-07-28 per request, and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07 after initialize',
  data: { supported: SUPPORTED, requested: "2030-01-01" },
};

describe(`a 2026-07-28 client, with no initialize (${runtimeName})`, () => {
  const state = tempDir("warden-modern-");
  const env = () => ({
    WARDEN_TOOLS_DIR: FIXTURES,
    WARDEN_LEDGER: path.join(state.dir, "ledger"),
    WARDEN_JOBS_DIR: path.join(state.dir, "jobs"),
  });
  after(() => state.remove());

  it("over stdio: discover, list, call, its logs only when asked, and each refusal with its code", async () => {
    const session = startRaw({ args: ["serve", "--log-level", "debug"], env: env() });
    let id = 0;
    const ask = async (method: string, params?: Record<string, unknown>) => {
      const sent = { jsonrpc: "2.0", id: ++id, method, ...(params ? { params } : {}) };
      session.request(sent);
      return await session.next((m) => m.id === sent.id) as { result?: Record<string, unknown>; error?: unknown };
    };
    try {
      // A probe without _meta is answered too: a client that cannot tell the eras apart yet gets the truth.
      assert.deepEqual((await ask("server/discover")).result, DISCOVERED);
      assert.deepEqual((await ask("server/discover", { _meta: META })).result, DISCOVERED);
      const listed = (await ask("tools/list", { _meta: META })).result!;
      assert.equal(listed.resultType, "complete");
      assert.deepEqual([listed.ttlMs, listed.cacheScope], [300000, "public"]);
      assert.ok((listed.tools as { name: string }[]).some((tool) => tool.name === "test_simple_text"));
      assert.deepEqual((await ask("tools/call", { name: "test_simple_text", arguments: {}, _meta: META })).result, {
        resultType: "complete",
        content: [{ type: "text", text: "This is a simple text response for testing." }],
      });
      // No log level in _meta: no notifications/message; with one, those at or above it.
      const before = session.lines().length;
      await ask("tools/call", { name: "test_tool_with_logging", arguments: {}, _meta: META });
      assert.ok(!session.lines().slice(before).some((line) => line.includes("notifications/message")));
      const trace = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
      const logged = session.lines().length;
      await ask("tools/call", {
        name: "test_tool_with_logging",
        arguments: {},
        _meta: { ...META, "io.modelcontextprotocol/logLevel": "info", traceparent: trace },
      });
      assert.equal(session.lines().slice(logged).filter((line) => line.includes("notifications/message")).length, 3);
      assert.match(
        session.stderr(),
        new RegExp(`"event":"call","tool":"test_tool_with_logging","traceparent":"${trace}"`),
      );
      assert.deepEqual(
        (await ask("tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2030-01-01" } }))
          .error,
        UNSUPPORTED,
      );
      assert.deepEqual(
        (await ask("tools/list", { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN } })).error,
        {
          code: -32602,
          message:
            'Invalid params: _meta["io.modelcontextprotocol/clientCapabilities"] must be an object (the client\'s capabilities, {} for none), received undefined',
        },
      );
      assert.deepEqual((await ask("ping", { _meta: META })).error, {
        code: -32601,
        message: "Method not found: ping is not part of 2026-07-28 (there is no session to keep alive)",
      });
      assert.deepEqual((await ask("logging/setLevel", { level: "debug", _meta: META })).error, {
        code: -32601,
        message:
          "Method not found: logging/setLevel is not part of 2026-07-28 (send _meta io.modelcontextprotocol/logLevel with each request)",
      });
      assert.deepEqual(
        (await ask("tools/list", { _meta: { ...META, "io.modelcontextprotocol/logLevel": "loud" } })).error,
        {
          code: -32602,
          message:
            'Invalid params: _meta["io.modelcontextprotocol/logLevel"] must be one of debug, info, notice, warning, error, critical, alert, emergency, received "loud"',
        },
      );
      // No -32002 in this revision: a resource that is not there is an invalid request.
      const missing = await ask("resources/read", {
        uri: "warden://jobs/job_00000000000000000000000000000000/result.json",
        _meta: META,
      });
      assert.equal((missing.error as { code: number }).code, -32602);
    } finally {
      session.closeStdin();
      await session.exited();
    }
  });

  it("over stdio after an initialize: each request is answered in its own era", async () => {
    const session = startRaw({ args: ["serve"], env: { ...env(), WARDEN_TOOLS_DIR: "" } });
    try {
      session.request({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } },
      });
      await session.next((m) => m.id === 1);
      session.request({ jsonrpc: "2.0", method: "notifications/initialized" });
      const versionOf = async (id: number, meta?: Record<string, unknown>) => {
        session.request({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: "host_context", arguments: {}, ...(meta ? { _meta: meta } : {}) },
        });
        const answer = await session.next((m) => m.id === id) as { result: Record<string, unknown> };
        return [
          answer.result.resultType,
          (answer.result.structuredContent as { protocolVersion: string }).protocolVersion,
        ];
      };
      assert.deepEqual(await versionOf(2, META), ["complete", MODERN]);
      assert.deepEqual(await versionOf(3), [undefined, "2025-06-18"]);
      session.request({ jsonrpc: "2.0", id: 4, method: "ping" });
      assert.deepEqual(await session.next((m) => m.id === 4), { result: {}, jsonrpc: "2.0", id: 4 });
    } finally {
      session.closeStdin();
      await session.exited();
    }
  });

  describe("over HTTP", () => {
    let server: HttpServer;
    before(async () => {
      server = await startHttp([], env(), false);
    });
    after(async () => {
      assert.equal(await server.stop(), 0);
    });

    const post = async (message: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(server.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(message),
      });
      const text = await response.text();
      const body = response.headers.get("content-type")?.startsWith("text/event-stream")
        ? JSON.parse(text.split("\n").filter((line) => line.startsWith("data: ")).at(-1)!.slice(6))
        : JSON.parse(text);
      return { status: response.status, body };
    };
    const simpleText = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "test_simple_text", arguments: {}, _meta: META },
    });
    const headersFor = (method: string, name?: string) => ({
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}),
    });

    it("answers discover, tools/list and tools/call with the headers the revision asks for", async () => {
      const probe = await post({ jsonrpc: "2.0", id: 1, method: "server/discover" });
      assert.deepEqual([probe.status, probe.body.result], [200, DISCOVERED]);
      const listed = await post(
        { jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: META } },
        headersFor("tools/list"),
      );
      assert.equal(listed.status, 200);
      assert.deepEqual([listed.body.result.resultType, listed.body.result.ttlMs, listed.body.result.cacheScope], [
        "complete",
        300000,
        "public",
      ]);
      const called = await post(
        simpleText(3),
        headersFor("tools/call", "test_simple_text"),
      );
      assert.deepEqual([called.status, called.body.result.resultType, called.body.result.content[0].text], [
        200,
        "complete",
        "This is a simple text response for testing.",
      ]);
    });

    it("refuses with the status and JSON-RPC error the revision gives each case", async () => {
      const list = (meta: Record<string, unknown>) => ({
        jsonrpc: "2.0",
        id: 9,
        method: "tools/list",
        params: { _meta: meta },
      });
      const unsupported = await post(list({ ...META, "io.modelcontextprotocol/protocolVersion": "2030-01-01" }), {
        ...headersFor("tools/list"),
        "mcp-protocol-version": "2030-01-01",
      });
      assert.deepEqual([unsupported.status, unsupported.body.error], [400, UNSUPPORTED]);
      const mismatch = await post(list(META), headersFor("tools/call"));
      assert.deepEqual([mismatch.status, mismatch.body.error], [400, {
        code: -32020,
        message: 'Header mismatch: Mcp-Method is "tools/call"; it must be "tools/list", as in the body',
      }]);
      const bare = await post(list(META));
      assert.deepEqual([bare.status, bare.body.error.code], [400, -32020]);
      assert.match(
        bare.body.error.message,
        /^Header mismatch: MCP-Protocol-Version is missing; it must be "2026-07-28"/,
      );
      const wrongName = await post(
        simpleText(10),
        headersFor("tools/call", "test_error_handling"),
      );
      assert.deepEqual([wrongName.status, wrongName.body.error.code], [400, -32020]);
      const ping = await post({ jsonrpc: "2.0", id: 11, method: "ping", params: { _meta: META } }, headersFor("ping"));
      assert.deepEqual([ping.status, ping.body.error.code], [404, -32601]);
      const batch = await post([list(META)], headersFor("tools/list"));
      assert.deepEqual([batch.status, batch.body.error.code], [400, -32600]);
      assert.match(batch.body.error.message, /2026-07-28 has no batches/);
    });
  });
});
