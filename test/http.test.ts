// `warden serve --http`: the SDK's Streamable HTTP client drives it as an
// agent would, and raw requests send what a client never would (a foreign
// Host or Origin, no token, a body too large, a second call over the share).
// Every refusal is checked by status and words; the ledger names who called.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect as connectSocket } from "node:net";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
// The SDK's "./*" export maps types to "*.js.d.ts", which do not exist; name them for deno check.
import { sha256Hex } from "../core/sha256.ts";
import { parseTokens, principalOfToken } from "../core/transport/tokens.ts";
import { isLoopback } from "../core/config.ts";
import { hostName } from "../core/transport/http.ts";
import {
  childEnv,
  httpClient,
  type HttpServer,
  onDeno,
  type RawAnswer,
  rawHttp as raw,
  repoRoot,
  runtimeName,
  runWarden,
  startHttp,
  tempDir,
  textOf,
} from "./helpers.ts";

/** The error a server that could not start logged (its stderr is a log of JSON lines). */
function startupError(stderr: string): string {
  const line = stderr.split("\n").find((l) => l.includes('"event":"startup_failed"'));
  assert.ok(line, `no startup_failed line in:\n${stderr}`);
  return JSON.parse(line).error;
}

/** The JSON-RPC messages of an SSE body, in order. */
// any: JSON-RPC messages of every shape, read field by field in assertions.
// deno-lint-ignore no-explicit-any
function events(body: string): any[] {
  return body.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6)));
}

/** The answer of a request: the JSON body, or an SSE stream's last message. */
// any: as above.
// deno-lint-ignore no-explicit-any
function answerOf(answer: RawAnswer): any {
  return String(answer.headers["content-type"]).startsWith("text/event-stream")
    ? events(answer.body).at(-1)
    : JSON.parse(answer.body);
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

/** The ledger rows of every file in `dir`. */
function ledgerRows(dir: string): Record<string, unknown>[] {
  return readdirSync(dir).filter((f) => f.endsWith(".jsonl")).flatMap((f) =>
    readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((line) => JSON.parse(line))
  );
}

describe(`serve --http (${runtimeName})`, () => {
  describe("an agent's session", () => {
    const ledger = tempDir("warden-http-ledger-");
    let server: HttpServer;
    before(async () => {
      server = await startHttp([], { WARDEN_LEDGER: ledger.dir, WARDEN_PRINCIPAL: "operator@example.com" });
    });
    after(async () => {
      assert.equal(await server.stop(), 0);
      // Every request above ended, refused, answered or abandoned by its client: none holds the stop.
      assert.match(server.stderr(), /"event":"stopping","signal":"SIGTERM","inFlight":0\}/);
      ledger.remove();
    });

    it("lists the catalog and calls a tool through the SDK's HTTP client, with nothing on stdout", async () => {
      const client = await httpClient(server.url);
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === "fixture_echo"), "the fixture tools are served");
      const echoed = await client.callTool({ name: "fixture_echo", arguments: { text: "over http" } });
      assert.equal(echoed.isError, undefined);
      assert.match(textOf(echoed), /over http/);
      await client.close();
      assert.equal(server.stdout(), "", "an HTTP server writes nothing to stdout");
      const ready = JSON.parse(server.stderr().split("\n").find((line) => line.includes('"event":"ready"'))!);
      assert.equal(ready.register.claudeCode, `claude mcp add --transport http warden ${server.url}`);
      assert.deepEqual(ready.register.mcpJson, { mcpServers: { warden: { type: "http", url: String(server.url) } } });
    });

    it("tells host_context the transport and the version agreed, with the built-in tools", async () => {
      const builtins = await startHttp(
        [],
        { WARDEN_LEDGER: ledger.dir, WARDEN_PRINCIPAL: "operator@example.com" },
        false,
      );
      try {
        const client = await httpClient(builtins.url);
        const { tools } = await client.listTools();
        const expected = JSON.parse(readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8")).tools.map((
          tool: { name: string },
        ) => tool.name);
        assert.deepEqual(tools.map((tool) => tool.name), expected, "the same frozen catalog as over stdio");
        const context = await client.callTool({ name: "host_context", arguments: {} });
        const facts = context.structuredContent as { transport: string; protocolVersion: string };
        assert.equal(facts.transport, "http");
        assert.equal(facts.protocolVersion, "2025-11-25");
        await client.close();
      } finally {
        await builtins.stop();
      }
    });

    it("answers a request with JSON and a tools/call with an SSE stream, its progress and logs included", async () => {
      const list = await raw(server.port, { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
      assert.equal(list.status, 200);
      assert.match(String(list.headers["content-type"]), /^application\/json/);
      assert.equal(JSON.parse(list.body).id, 1);
      const logged = await raw(server.port, { body: call(3, "fixture_log", { levels: ["debug", "info", "error"] }) });
      assert.match(String(logged.headers["content-type"]), /^text\/event-stream/);
      const logs = events(logged.body).filter((e) => e.method === "notifications/message").map((e) => e.params.level);
      assert.deepEqual(logs, ["info", "error"], "at the default level, info and above");
      assert.equal(answerOf(logged).id, 3);
      const streamed = await raw(server.port, {
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "fixture_progress", arguments: { steps: 3 }, _meta: { progressToken: "p" } },
        }),
      });
      assert.equal(streamed.status, 200);
      assert.match(String(streamed.headers["content-type"]), /^text\/event-stream/);
      const streamedEvents = events(streamed.body);
      const progress = streamedEvents.filter((e) => e.method === "notifications/progress").map((e) =>
        e.params.progress
      );
      assert.deepEqual(progress, [1, 2, 3], "each step once, the stale values dropped");
      assert.equal(streamedEvents.at(-1).id, 2);
      assert.match(JSON.stringify(streamedEvents.at(-1).result), /done/);
    });

    it("cancels the call of a client that goes away before its answer", async () => {
      const before = answerOf(await raw(server.port, { body: call(20, "fixture_sleep_status") })).result
        .structuredContent.aborted.length;
      // A socket of its own, not node:http's client: deno's sends a request again on a new connection when its
      // first is destroyed.
      const body = call(21, "fixture_sleep", { ms: 10_000 });
      const socket = connectSocket(server.port, "127.0.0.1");
      socket.on("error", () => {});
      socket.write(
        `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\ncontent-type: application/json\r\n` +
          `accept: application/json, text/event-stream\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.destroy();
      let aborted: string[] = [];
      for (let i = 0; i < 50 && aborted.length === before; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        aborted = answerOf(await raw(server.port, { body: call(22, "fixture_sleep_status") })).result
          .structuredContent.aborted;
      }
      assert.equal(aborted.length, before + 1, "the sleeping call was aborted");
    });

    it("records each call in the ledger under the operator's principal when no token is configured", () => {
      const rows = ledgerRows(ledger.dir).filter((row) => row.kind === "call");
      assert.ok(rows.length >= 4, `${rows.length} call rows`);
      for (const row of rows) assert.equal(row.principal, "operator@example.com");
    });

    it("refuses a foreign Host or Origin with 403 on every path and method, and answers an allowed one", async () => {
      for (
        const host of ["evil.example", "evil.example:80", `attacker.test:${server.port}`, "[::2]:1", "127.0.0.1.nip.io"]
      ) {
        const answer = await raw(server.port, { headers: { host }, body: call(3, "fixture_echo", { text: "x" }) });
        assert.equal(answer.status, 403, `Host ${JSON.stringify(host)}`);
        assert.match(JSON.parse(answer.body).error.message, /not one this server answers.*--allowed-host/);
      }
      for (const method of ["GET", "DELETE", "OPTIONS"]) {
        const answer = await raw(server.port, { method, headers: { host: "rebound.example" } });
        assert.equal(answer.status, 403, method);
      }
      const origin = await raw(server.port, {
        headers: { origin: "http://evil.example" },
        body: call(4, "fixture_echo", { text: "x" }),
      });
      assert.equal(origin.status, 403);
      assert.match(
        JSON.parse(origin.body).error.message,
        /Origin "http:\/\/evil\.example" is not allowed.*--allowed-origin/,
      );
      for (
        const host of [`localhost:${server.port}`, `127.0.0.1:${server.port}`, `[::1]:${server.port}`, "LOCALHOST"]
      ) {
        const answer = await raw(server.port, { headers: { host }, body: call(5, "fixture_echo", { text: "x" }) });
        assert.equal(answer.status, 200, `Host ${host}`);
      }
    });

    it("takes POST only, JSON only, at /mcp only, and names what was wrong", async () => {
      const get = await raw(server.port, { method: "GET" });
      assert.equal(get.status, 405);
      assert.equal(get.headers.allow, "POST, OPTIONS");
      assert.match(JSON.parse(get.body).error.message, /stateless and takes POST only/);
      const elsewhere = await raw(server.port, { path: "/", body: call(6, "fixture_echo", { text: "x" }) });
      assert.equal(elsewhere.status, 404);
      assert.match(JSON.parse(elsewhere.body).error.message, /served at \/mcp/);
      const form = await raw(server.port, { headers: { "content-type": "text/plain" }, body: "{}" });
      assert.equal(form.status, 415);
      const broken = await raw(server.port, { body: '{"jsonrpc":' });
      assert.equal(broken.status, 400);
      assert.equal(JSON.parse(broken.body).error.code, -32700);
      const big = await raw(server.port, { body: call(7, "fixture_echo", { text: "y".repeat(5 << 20) }) });
      assert.equal(big.status, 413);
      assert.match(JSON.parse(big.body).error.message, /over 4194304 bytes.*--max-body/);
      // The server is whole after each refusal.
      assert.equal((await raw(server.port, { body: call(8, "fixture_echo", { text: "x" }) })).status, 200);
    });
  });

  describe("tokens, origins and limits", () => {
    const dir = tempDir("warden-http-tokens-");
    const tokensFile = path.join(dir.dir, "tokens");
    const ledger = path.join(dir.dir, "ledger");
    let alice = "";
    let bob = "";
    let server: HttpServer;
    before(async () => {
      for (const who of ["alice@example.com", "bob"]) {
        const made = await runWarden(["token", "add", who, "--tokens", tokensFile]);
        assert.equal(made.code, 0, made.stderr);
        if (who === "bob") bob = made.stdout.trim();
        else alice = made.stdout.trim();
      }
      server = await startHttp([
        "--tokens",
        tokensFile,
        "--allowed-origin",
        "https://app.example.com",
        "--max-calls",
        "1",
        "--max-body",
        "2KiB",
        "--request-timeout",
        "2s",
        "--require-principal",
        "fixture_echo",
      ], { WARDEN_LEDGER: ledger });
    });
    after(async () => {
      await server.stop();
      dir.remove();
    });

    it("makes tokens the file keeps only the hashes of", () => {
      assert.match(alice, /^wdn_[A-Za-z0-9_-]{43}$/);
      assert.notEqual(alice, bob);
      const text = readFileSync(tokensFile, "utf8");
      assert.ok(!text.includes(alice) && !text.includes(bob), "no token in the file");
      assert.deepEqual(parseTokens(text, tokensFile).map((e) => e.principal), ["alice@example.com", "bob"]);
      assert.ok(text.includes(`sha256:${sha256Hex(alice)} alice@example.com`));
    });

    it("answers 401 with a Bearer challenge without a token or with a wrong one", async () => {
      const none = await raw(server.port, { body: call(1, "fixture_echo", { text: "x" }) });
      assert.equal(none.status, 401);
      assert.equal(none.headers["www-authenticate"], 'Bearer realm="warden"');
      assert.match(JSON.parse(none.body).error.message, /Authorization: Bearer <token>.*warden token add/);
      for (const header of [`Bearer ${alice}x`, `Bearer ${alice.slice(0, -1)}`, "Bearer ", `Basic ${alice}`, alice]) {
        const wrong = await raw(server.port, { headers: { authorization: header }, body: call(2, "fixture_echo") });
        assert.equal(wrong.status, 401, header);
      }
      const wrong = await raw(server.port, { headers: { authorization: "Bearer wdn_nope" }, body: call(3, "x") });
      assert.match(String(wrong.headers["www-authenticate"]), /error="invalid_token"/);
    });

    it("records each call under its token's principal", async () => {
      for (const [token, text] of [[alice, "from alice"], [bob, "from bob"]]) {
        const client = await httpClient(server.url, token);
        const result = await client.callTool({ name: "fixture_echo", arguments: { text } });
        assert.equal(result.isError, undefined, "--require-principal: the token's principal is the call's");
        assert.match(textOf(result), new RegExp(text));
        await client.close();
      }
      const rows = ledgerRows(ledger).filter((row) => row.tool === "fixture_echo" && row.outcome === "ok");
      assert.deepEqual(rows.map((row) => row.principal), ["alice@example.com", "bob"]);
    });

    it("answers an allowed browser Origin with CORS headers, and its preflight", async () => {
      const preflight = await raw(server.port, { method: "OPTIONS", headers: { origin: "https://app.example.com" } });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers["access-control-allow-origin"], "https://app.example.com");
      assert.match(String(preflight.headers["access-control-allow-headers"]), /authorization/);
      const answer = await raw(server.port, {
        headers: { origin: "https://app.example.com", authorization: `Bearer ${alice}` },
        body: call(4, "fixture_echo", { text: "x" }),
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers["access-control-allow-origin"], "https://app.example.com");
      const other = await raw(server.port, {
        headers: { origin: "https://app.example.com.evil.test", authorization: `Bearer ${alice}` },
        body: call(5, "fixture_echo", { text: "x" }),
      });
      assert.equal(other.status, 403);
    });

    it("gives each principal its share: one more call in flight gets 429, another principal is served", async () => {
      const slow = raw(server.port, {
        headers: { authorization: `Bearer ${alice}` },
        body: call(6, "fixture_sleep", { ms: 800 }),
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const second = await raw(server.port, {
        headers: { authorization: `Bearer ${alice}` },
        body: call(7, "fixture_echo", { text: "x" }),
      });
      assert.equal(second.status, 429);
      assert.equal(second.headers["retry-after"], "1");
      assert.match(JSON.parse(second.body).error.message, /--max-calls/);
      const other = await raw(server.port, {
        headers: { authorization: `Bearer ${bob}` },
        body: call(8, "fixture_echo", { text: "x" }),
      });
      assert.equal(other.status, 200, "bob's share is his own");
      assert.equal((await slow).status, 200);
      const after = await raw(server.port, {
        headers: { authorization: `Bearer ${alice}` },
        body: call(9, "fixture_echo", { text: "x" }),
      });
      assert.equal(after.status, 200, "the share is back once the call ended");
    });

    it("bounds the body by --max-body and the request by --request-timeout, cancelling its call", async () => {
      const big = await raw(server.port, {
        headers: { authorization: `Bearer ${alice}` },
        body: call(10, "fixture_echo", { text: "z".repeat(3000) }),
      });
      assert.equal(big.status, 413);
      assert.match(JSON.parse(big.body).error.message, /over 2048 bytes/);
      const late = await raw(server.port, {
        headers: { authorization: `Bearer ${alice}` },
        body: call(11, "fixture_sleep", { ms: 8000 }),
      });
      // Its status went out with the stream's start: the stream ends with the timeout as the call's answer.
      assert.equal(late.status, 200);
      assert.deepEqual(answerOf(late), {
        jsonrpc: "2.0",
        id: 11,
        error: {
          code: -32001,
          message: "the request took longer than 2000 ms (--request-timeout); its calls were cancelled",
        },
      });
      const status = await raw(server.port, {
        headers: { authorization: `Bearer ${bob}` },
        body: call(12, "fixture_sleep_status"),
      });
      assert.match(status.body, /aborted/, "the timed-out call was cancelled, not left running");
    });
  });

  describe("start and stop", () => {
    it("judges a call by its principal: a tool that needs one is refused where no token names one", async () => {
      const ledger = tempDir("warden-http-policy-");
      const server = await startHttp(["--require-principal", "fixture_echo"], { WARDEN_LEDGER: ledger.dir });
      try {
        const refused = answerOf(await raw(server.port, { body: call(1, "fixture_echo", { text: "x" }) }));
        assert.equal(refused.result.isError, true);
        assert.equal(refused.result._meta["warden/error_code"], "policy_denied");
        assert.match(refused.result.content[0].text, /needs a principal and this server has none/);
      } finally {
        await server.stop();
        ledger.remove();
      }
    });

    it("refuses to serve a non-loopback address without tokens, and says how to fix it", async () => {
      const { code, stderr } = await runWarden(["serve", "--http", "--host", "0.0.0.0", "--port", "0"]);
      assert.equal(code, 2);
      assert.match(startupError(stderr), /Refusing to serve HTTP on 0\.0\.0\.0 without tokens.*warden token add/);
    });

    it("under deno, names the permission it lacks to listen, rather than failing on deno's own error", async () => {
      const deno = onDeno ? process.execPath : path.join(repoRoot, "node_modules/.bin/deno");
      const child = spawn(deno, [
        "run",
        "--no-prompt",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        "--allow-sys",
        "--allow-run",
        path.join(repoRoot, "dist/core/main.js"),
        "serve",
        "--http",
        "--port",
        "8799",
      ], { env: childEnv({ DENO_NO_UPDATE_CHECK: "1" }) });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const code = await new Promise((resolve) => child.on("close", resolve));
      assert.equal(code, 2, stderr);
      assert.match(
        startupError(stderr),
        /^Missing permissions: deno does not grant what this server's catalog and settings need: net 127\.0\.0\.1:8799; grant them/,
      );
    });

    it("refuses malformed settings by name", async () => {
      const cases: [string[], RegExp][] = [
        [["--port", "70000"], /Invalid --port: expected a whole number from 0 to 65535, received "70000"/],
        [["--max-body", "10"], /Invalid --max-body: expected a size from 1KiB to 64MiB/],
        [["--allowed-origin", "https://app.example.com/path"], /Invalid --allowed-origin: expected an origin/],
        [["--allowed-host", "a b"], /Invalid --allowed-host: expected a host name/],
        [["--max-calls", "0"], /Invalid --max-calls: expected a whole number from 1 to 1024/],
        [["--request-timeout", "5ms"], /Invalid --request-timeout: expected a duration from 1s to 60m/],
      ];
      for (const [args, message] of cases) {
        const { code, stderr } = await runWarden(["serve", "--http", ...args]);
        assert.equal(code, 2, args.join(" "));
        assert.match(startupError(stderr), message);
      }
    });

    it("refuses a malformed tokens file, naming the line", async () => {
      const dir = tempDir();
      try {
        const file = path.join(dir.dir, "tokens");
        writeFileSync(file, `# team tokens\nsha256:${"a".repeat(64)} alice\nwdn_plaintexttoken bob\n`);
        const { code, stderr } = await runWarden(["serve", "--http", "--port", "0", "--tokens", file]);
        assert.equal(code, 2);
        assert.match(
          startupError(stderr),
          /Invalid tokens file .*tokens, line 3: expected "sha256:<64 lowercase hex digits> <principal>"/,
        );
      } finally {
        dir.remove();
      }
    });

    it("on SIGTERM answers what is in flight, refuses what comes after, seals the ledger and exits 0", async () => {
      const ledger = tempDir("warden-http-stop-");
      try {
        const server = await startHttp([], { WARDEN_LEDGER: ledger.dir });
        const inFlight = raw(server.port, { body: call(1, "fixture_sleep", { ms: 700 }) });
        await new Promise((resolve) => setTimeout(resolve, 250));
        const exited = server.stop("SIGTERM");
        await new Promise((resolve) => setTimeout(resolve, 100));
        const late = await raw(server.port, { body: call(2, "fixture_echo", { text: "x" }) }).catch((error) => error);
        // Refused either way: 503 on a connection still open, or no listener at all.
        if (!(late instanceof Error)) assert.equal(late.status, 503);
        const answered = await inFlight;
        assert.equal(answered.status, 200);
        assert.match(answered.body, /slept 700 ms/);
        assert.equal(await exited, 0, server.stderr());
        const rows = ledgerRows(ledger.dir);
        assert.equal(rows.at(-1)?.kind, "seal");
        assert.ok(rows.some((row) => row.tool === "fixture_sleep" && row.outcome === "ok"));
        assert.match(server.stderr(), /"event":"stopping","signal":"SIGTERM","inFlight":1/);
      } finally {
        ledger.remove();
      }
    });
  });

  describe("token command", () => {
    it("adds, lists and removes tokens, and refuses a principal that is not one word", async () => {
      const dir = tempDir();
      try {
        const file = path.join(dir.dir, "nested", "tokens");
        const made = await runWarden(["token", "add", "carol", "--tokens", file]);
        assert.equal(made.code, 0);
        assert.match(made.stderr, /shown once/);
        const listed = await runWarden(["token", "list", "--tokens", file]);
        assert.match(listed.stdout, new RegExp(`^carol sha256:${sha256Hex(made.stdout.trim()).slice(0, 12)}`));
        assert.ok(!listed.stdout.includes(made.stdout.trim()));
        const removed = await runWarden(["token", "remove", "carol", "--tokens", file]);
        assert.equal(removed.code, 0);
        assert.equal(readFileSync(file, "utf8"), "");
        const again = await runWarden(["token", "remove", "carol", "--tokens", file]);
        assert.equal(again.code, 2);
        assert.match(again.stderr, /No token of "carol"/);
        const bad = await runWarden(["token", "add", "two words", "--tokens", file]);
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /expected one word/);
      } finally {
        dir.remove();
      }
    });
  });

  describe("in process", () => {
    it("finds a token's principal by comparing every hash whole", () => {
      const entries = parseTokens(`sha256:${sha256Hex("t1")} one\nsha256:${sha256Hex("t2")} two\n`, "f");
      assert.equal(principalOfToken(entries, "t1"), "one");
      assert.equal(principalOfToken(entries, "t2"), "two");
      assert.equal(principalOfToken(entries, "t3"), null);
      assert.equal(principalOfToken([], "t1"), null);
      assert.throws(
        () => parseTokens(`sha256:${sha256Hex("t1")} one\nsha256:${sha256Hex("t1")} again\n`, "f"),
        /line 2: this token hash is on an earlier line too/,
      );
    });

    it("reads Host headers as browsers and proxies send them", () => {
      assert.equal(hostName("Example.COM:8790"), "example.com");
      assert.equal(hostName("[::1]:8790"), "::1");
      assert.equal(hostName("127.0.0.1"), "127.0.0.1");
      assert.equal(hostName("a b"), null);
      assert.equal(hostName("evil.example@127.0.0.1"), null);
      assert.equal(hostName(null), null);
      assert.ok(isLoopback("127.0.0.2") && isLoopback("::1") && isLoopback("localhost"));
      assert.ok(!isLoopback("0.0.0.0") && !isLoopback("10.0.0.1") && !isLoopback("127.0.0.1.evil"));
    });
  });
});
