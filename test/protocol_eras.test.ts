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
