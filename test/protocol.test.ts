// The MCP session as an agent runtime sees it: initialize, the frozen
// catalog, logging, and every protocol-level error path, under node and deno.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { connect, fixtureToolsDir, initializeMessage, runtimeName, type Session, startRaw } from "./helpers.ts";

describe(`protocol (${runtimeName})`, () => {
  let session: Session;
  before(async () => {
    session = await connect();
  });
  // Runs even when before() or a test failed: no server outlives the suite.
  after(async () => {
    await session?.close();
  });

  it("declares tools without listChanged, and logging", () => {
    const capabilities = session.client.getServerCapabilities();
    assert.deepEqual(capabilities?.tools, { listChanged: false });
    assert.deepEqual(capabilities?.logging, {});
    assert.equal(session.client.getServerVersion()?.name, "warden");
  });

  it("lists the built-in tools with schemas, annotations and risk class", async () => {
    const { tools } = await session.client.listTools();
    const names = tools.map((t) => t.name);
    assert.deepEqual(names, [...names].sort(), "tools are sorted by name");
    for (const name of ["extension_list", "host_context", "tech_debt_check"]) {
      assert.ok(names.includes(name), `${name} is listed`);
    }
    const debt = tools.find((t) => t.name === "tech_debt_check")!;
    assert.equal(debt.inputSchema.type, "object");
    assert.equal((debt.inputSchema as Record<string, unknown>).additionalProperties, false);
    assert.equal((debt.inputSchema as Record<string, unknown>).$schema, "https://json-schema.org/draft/2020-12/schema");
    assert.deepEqual(debt.annotations, {
      title: "Technical debt markers",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    assert.equal(debt._meta?.["warden/risk"], "read");
    assert.ok(debt.outputSchema, "structured output is declared");
  });

  it("host_context reports the session without host paths", async () => {
    const result = await session.client.callTool({ name: "host_context", arguments: {} });
    assert.equal(result.isError, undefined);
    const facts = result.structuredContent as Record<string, unknown>;
    assert.equal((facts.runtime as { name: string }).name, runtimeName);
    assert.equal(facts.transport, "stdio");
    assert.equal(facts.protocolVersion, "2025-11-25");
    assert.match(String(facts.catalogDigest), /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(facts.projects, {
      ids: ["default"],
      truncated: false,
      selection: "single",
      implicit: { project_id: "default", from: "default" },
    });
    assert.match(
      String((facts.server as { instanceId: string }).instanceId),
      /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/,
    );
    assert.deepEqual(facts.toolsByRisk, { read: 9, gate: 7, "external-side-effect": 0 });
    const text = (result.content as { text: string }[])[0].text;
    assert.deepEqual(JSON.parse(text), facts, "the text is the same JSON as structuredContent");
    assert.ok(!text.includes(process.cwd()), "no host path in the result");
  });

  it("answers an unknown tool with -32602", async () => {
    await assert.rejects(
      session.client.callTool({ name: "no_such_tool", arguments: {} }),
      (error: { code?: number; message: string }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /Unknown tool "no_such_tool": call tools\/list/);
        return true;
      },
    );
  });

  it("accepts every logging level and refuses an invalid one with -32602", async () => {
    await session.client.setLoggingLevel("warning");
    await assert.rejects(
      session.client.request({ method: "logging/setLevel", params: { level: "loud" } } as never, {
        parse: (x: unknown) => x,
      } as never),
      (error: { code?: number; message: string }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /Invalid log level "loud": expected one of debug, info/);
        return true;
      },
    );
  });
});

describe(`raw stdio (${runtimeName})`, () => {
  it("negotiates each protocol version the SDK supports", async () => {
    const raw = startRaw();
    try {
      for (const [i, version] of SUPPORTED_PROTOCOL_VERSIONS.entries()) {
        raw.request(initializeMessage(i + 1, version));
        const reply = await raw.next((m) => m.id === i + 1);
        assert.equal((reply.result as { protocolVersion: string }).protocolVersion, version);
      }
      raw.request(initializeMessage(99, "1999-01-01"));
      const fallback = await raw.next((m) => m.id === 99);
      assert.equal((fallback.result as { protocolVersion: string }).protocolVersion, SUPPORTED_PROTOCOL_VERSIONS[0]);
    } finally {
      raw.kill();
    }
  });

  it("serves a byte-identical tools/list, answers garbage and keeps serving, writes only JSON-RPC to stdout", async () => {
    const raw = startRaw({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
    try {
      raw.request(initializeMessage(1));
      await raw.next((m) => m.id === 1);
      raw.request({ jsonrpc: "2.0", method: "notifications/initialized" });
      raw.request({ jsonrpc: "2.0", id: 2, method: "tools/list" });
      await raw.next((m) => m.id === 2);
      raw.send("this is not json");
      const parseError = await raw.next((m) => (m.error as { code?: number })?.code === -32700);
      assert.equal(parseError.id, null);
      raw.send('{"jsonrpc":"2.0","id":7,"method":');
      await raw.next((m) => (m.error as { code?: number })?.code === -32700);
      raw.send("[]");
      const batch = await raw.next((m) => (m.error as { code?: number })?.code === -32600);
      assert.match((batch.error as { message: string }).message, /batches are not supported/);
      raw.send('{"jsonrpc":"1.0","id":8,"method":"ping"}');
      const wrongVersion = await raw.next((m) => m.id === 8);
      assert.equal((wrongVersion.error as { code: number }).code, -32600);
      raw.request({ jsonrpc: "2.0", id: 3, method: "tools/list" });
      await raw.next((m) => m.id === 3);
      raw.request({ jsonrpc: "2.0", id: 4, method: "tools/list", params: { cursor: "page-2" } });
      const badCursor = await raw.next((m) => m.id === 4);
      assert.equal((badCursor.error as { code: number }).code, -32602);
      raw.request({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "fixture_echo", arguments: [1] } });
      const badArgs = await raw.next((m) => m.id === 5);
      assert.equal((badArgs.error as { code: number }).code, -32602);
      raw.request({ jsonrpc: "2.0", id: 6, method: "resources/list" });
      const noMethod = await raw.next((m) => m.id === 6);
      assert.equal((noMethod.error as { code: number }).code, -32601);
      raw.request({ jsonrpc: "2.0", id: 9, method: "ping" });
      await raw.next((m) => m.id === 9);
      raw.closeStdin();
      const { code, msAfterStdinClosed } = await raw.exited();
      assert.equal(code, 0);
      assert.ok(msAfterStdinClosed < 1000, `exited ${Math.round(msAfterStdinClosed)} ms after stdin closed`);

      const lines = raw.lines();
      const listLines = lines.filter((line) => line.includes('"id":2,') || line.includes('"id":3,'));
      assert.equal(listLines.length, 2);
      assert.equal(
        listLines[0].replace('"id":2,', ""),
        listLines[1].replace('"id":3,', ""),
        "tools/list is byte-identical",
      );
      for (const line of lines) {
        const message = JSON.parse(line);
        assert.equal(message.jsonrpc, "2.0", `stdout line is JSON-RPC: ${line.slice(0, 80)}`);
      }
      assert.match(raw.stderr(), /"event":"ready"/);
    } finally {
      raw.kill();
    }
  });

  it("answers each request the SDK would drop or mislabel, naming what is wrong", async () => {
    const raw = startRaw({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
    try {
      raw.request(initializeMessage(1));
      await raw.next((m) => m.id === 1);
      const echo = { name: "fixture_echo", arguments: { text: "hi" } };
      const cases: { message: Record<string, unknown>; code: number; text: string }[] = [
        {
          message: {
            jsonrpc: "2.0",
            id: 2,
            method: "tools/call",
            params: { ...echo, _meta: { progressToken: { a: 1 } } },
          },
          code: -32602,
          text: 'Invalid params: params._meta.progressToken must be a string or a number, received {"a":1}',
        },
        {
          message: { jsonrpc: "2.0", id: 3, method: "ping", params: { _meta: [] } },
          code: -32602,
          text: "Invalid params: params._meta must be an object, received []",
        },
        {
          message: {
            jsonrpc: "2.0",
            id: 4,
            method: "tools/list",
            params: { _meta: { "io.modelcontextprotocol/related-task": "t" } },
          },
          code: -32602,
          text: 'Invalid params: params._meta["io.modelcontextprotocol/related-task"] must be an object, received "t"',
        },
        {
          message: { jsonrpc: "2.0", id: 1.5, method: "ping" },
          code: -32600,
          text:
            "Invalid Request: id must be a string or an integer, received 1.5; a request has jsonrpc, id (a string or an integer), method and params",
        },
        {
          message: { jsonrpc: "2.0", id: 2 ** 53, method: "ping" },
          code: -32600,
          text: "Invalid Request: id must be at most 9007199254740991, received 9007199254740992;",
        },
        {
          message: { jsonrpc: "2.0", id: 5, method: "ping", extra: true },
          code: -32600,
          text: 'Invalid Request: the request has unexpected member "extra";',
        },
        {
          message: { jsonrpc: "2.0", id: 6, method: "initialize", params: { protocolVersion: 5 } },
          code: -32602,
          text: "Invalid params: params.protocolVersion must be a string, received 5 (and 2 more)",
        },
        {
          message: {
            jsonrpc: "2.0",
            id: 7,
            method: "initialize",
            params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x" } },
          },
          code: -32602,
          text: "Invalid params: params.clientInfo.version is missing: expected a string",
        },
        {
          message: {
            jsonrpc: "2.0",
            id: 8,
            method: "ping",
            params: { deep: JSON.parse("[".repeat(200) + "]".repeat(200)) },
          },
          code: -32600,
          text: "Invalid Request: the message nests objects and arrays deeper than 128 levels",
        },
        {
          message: { jsonrpc: "2.0", id: { n: 1 }, method: "ping" },
          code: -32600,
          text: "Invalid Request: id must be a string or an integer",
        },
        {
          message: { jsonrpc: "2.0", id: 9, method: "notifications/initialized" },
          code: -32601,
          text: "Method not found: notifications/initialized",
        },
      ];
      for (const { message, code, text } of cases) {
        raw.request(message);
        // An id that is not one cannot be echoed: the answer's id is null.
        const id = typeof message.id === "object" ? null : message.id;
        const answer = await raw.next((m) => m.id === id && "error" in m);
        const error = answer.error as { code: number; message: string };
        assert.equal(error?.code, code, JSON.stringify(answer));
        assert.ok(error.message.includes(text), `${error.message}\n  should include\n${text}`);
      }

      // MCP: with no tasks capability declared, a task-augmented call is run as a plain one.
      raw.request({ jsonrpc: "2.0", id: 10, method: "tools/call", params: { ...echo, task: { ttl: 1000 } } });
      const plain = await raw.next((m) => m.id === 10);
      assert.deepEqual(JSON.parse((plain.result as { content: { text: string }[] }).content[0].text), { text: "hi" });

      // A second request with the id of one in flight: refused, and the first still gets its own answer.
      raw.request({
        jsonrpc: "2.0",
        id: "same",
        method: "tools/call",
        params: { name: "fixture_sleep", arguments: { ms: 300 } },
      });
      raw.request({ jsonrpc: "2.0", id: "same", method: "ping" });
      const refused = await raw.next((m) => m.id === "same");
      assert.equal((refused.error as { code: number }).code, -32600);
      assert.match(
        (refused.error as { message: string }).message,
        /^Invalid Request: id "same" is already used by a request in flight; give each request its own id$/,
      );
      const first = await raw.next((m) => m.id === "same");
      assert.equal((first.result as { content: { text: string }[] }).content[0].text, "slept 300 ms");

      // Ids of every legal type are echoed as sent, each answered once.
      for (const id of [0, -7, "", "0", 2 ** 40]) {
        raw.request({ jsonrpc: "2.0", id, method: "ping" });
        assert.deepEqual((await raw.next((m) => m.id === id && "result" in m)).result, {});
      }
      raw.request({ jsonrpc: "2.0", id: "end", method: "ping" });
      await raw.next((m) => m.id === "end");
      const answered = raw.lines().map((l) => JSON.parse(l)).filter((m) => !("method" in m)).map((m) => m.id);
      assert.equal(answered.length, new Set(answered).size + 1, `one answer each, "same" twice: ${answered}`);
    } finally {
      raw.kill();
    }
  });

  it("answers a call whose tool returns what JSON cannot hold", async () => {
    const raw = startRaw({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
    try {
      raw.request(initializeMessage(1));
      await raw.next((m) => m.id === 1);
      let id = 2;
      for (const later of [false, true]) {
        for (
          const [kind, text] of [
            ["bigint", /^Tool "fixture_unserializable" returned output that cannot be sent as JSON: .*BigInt/],
            ["cycle", /^Tool "fixture_unserializable" returned output that cannot be sent as JSON: .*circular/i],
            ["then_throws", /^Tool "fixture_unserializable" failed: then\(\) broke$/],
          ] as const
        ) {
          raw.request({
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params: { name: "fixture_unserializable", arguments: { kind, later } },
          });
          const answer = await raw.next((m) => m.id === id);
          const result = answer.result as { isError?: boolean; content: { text: string }[] };
          assert.equal(result?.isError, true, JSON.stringify(answer));
          assert.match(result.content[0].text, text);
          id++;
        }
      }
    } finally {
      raw.kill();
    }
  });
});
