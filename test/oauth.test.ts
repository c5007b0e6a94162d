// `warden serve --http --authorization-server`: warden as an OAuth protected resource. A small authorization server
// started here (RFC 8414 metadata, a key set, a client_credentials token endpoint) issues real signed JWTs; the SDK's
// client finds it from warden's 401 and RFC 9728 metadata and gets a token as an agent would. Raw requests bring the
// tokens no client should: expired, for another resource, from another issuer, signed with a stranger's key.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
// The SDK's "./*" export maps types to "*.js.d.ts", which do not exist; name them for deno check.
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.d.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.d.ts"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/auth-extensions.d.ts"
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import {
  freePort,
  httpClient,
  type HttpServer,
  type RawAnswer,
  rawHttp as raw,
  runtimeName,
  runWarden,
  startHttp,
  tempDir,
  textOf,
} from "./helpers.ts";

const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });

/** A signing key with the JWK its key set publishes. */
async function signingKey(kid: string): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

/** The authorization server of these tests. */
interface AuthorizationServer {
  readonly issuer: string;
  /** A JWT signed with its key: sub, iss, aud and a one-hour exp unless `claims` says otherwise. */
  mint(
    claims: Record<string, unknown>,
    key?: { privateKey: CryptoKey; jwk: JWK },
    header?: Record<string, unknown>,
  ): Promise<string>;
  /** Its second key, published beside the first in a rotation (`rotation`), neither with a kid. */
  readonly second: { privateKey: CryptoKey; jwk: JWK };
  /** The requests it has answered, by path. */
  readonly hits: string[];
  close(): Promise<void>;
}

const CLIENTS: Record<string, string> = { "build-bot": "s3cret" };

/**
 * An authorization server on loopback: RFC 8414 metadata (naming `claimedIssuer`, itself unless a test lies), a key
 * set of one ES256 key, and a token endpoint for the client_credentials grant with client_secret_basic, whose tokens
 * are for the `resource` the client asks (RFC 8707) with the scopes it asks.
 */
async function startAuthorizationServer(
  claimedIssuer?: string,
  rotation = false,
): Promise<AuthorizationServer> {
  const key = await signingKey("key-1");
  const second = await signingKey("key-2");
  const withoutKid = ({ kid: _, ...jwk }: JWK) => jwk;
  const hits: string[] = [];
  let issuer = "";
  const mint = (claims: Record<string, unknown>, signer = key, header: Record<string, unknown> = {}) =>
    new SignJWT({
      iss: issuer,
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 3600,
      ...claims,
    })
      .setProtectedHeader({ alg: "ES256", kid: signer.jwk.kid, typ: "at+jwt", ...header })
      .sign(signer.privateKey);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    hits.push(url.pathname);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    if (req.method === "GET" && url.pathname === "/.well-known/oauth-authorization-server") {
      return json(200, {
        issuer: claimedIssuer ?? issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        grant_types_supported: ["client_credentials"],
        token_endpoint_auth_methods_supported: ["client_secret_basic"],
        response_types_supported: ["token"],
      });
    }
    if (req.method === "GET" && url.pathname === "/jwks") {
      return json(200, { keys: rotation ? [withoutKid(key.jwk), withoutKid(second.jwk)] : [key.jwk] });
    }
    if (req.method === "POST" && url.pathname === "/token") {
      let body = "";
      req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", async () => {
        const [id, secret] = atob((req.headers.authorization ?? "").replace(/^Basic /, "")).split(":").map(
          decodeURIComponent,
        );
        const form = new URLSearchParams(body);
        if (CLIENTS[id] === undefined || CLIENTS[id] !== secret || form.get("grant_type") !== "client_credentials") {
          return json(401, { error: "invalid_client" });
        }
        const scope = form.get("scope") ?? "";
        const token = await mint({ sub: id, aud: form.get("resource") ?? "", scope, client_id: id });
        json(200, { access_token: token, token_type: "Bearer", expires_in: 3600, scope });
      });
      return;
    }
    json(404, { error: "not_found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    issuer,
    mint,
    second,
    hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The ledger's call rows. */
function callRows(dir: string): Record<string, unknown>[] {
  return readdirSync(dir).filter((f) => f.endsWith(".jsonl")).flatMap((f) =>
    readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((line) => JSON.parse(line))
  ).filter((row) => row.kind === "call");
}

/** The `key="value"` parameters of a Bearer challenge. */
function challengeOf(answer: RawAnswer): Record<string, string> {
  const header = String(answer.headers["www-authenticate"] ?? "");
  assert.match(header, /^Bearer /, `a Bearer challenge, received ${JSON.stringify(header)}`);
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

describe(`serve --http with an authorization server (${runtimeName})`, () => {
  const dir = tempDir("warden-oauth-");
  const tokensFile = path.join(dir.dir, "tokens");
  let as: AuthorizationServer;
  let server: HttpServer;
  let resource: string;
  let fileToken: string;
  before(async () => {
    as = await startAuthorizationServer();
    const made = await runWarden(["token", "add", "carol@example.com", "--tokens", tokensFile]);
    fileToken = made.stdout.trim();
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    server = await startHttp([
      "--port",
      String(port),
      "--authorization-server",
      as.issuer,
      "--resource",
      resource,
      "--required-scope",
      "mcp:tools",
      "--tokens",
      tokensFile,
    ], { WARDEN_LEDGER: path.join(dir.dir, "ledger") });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
    await as.close();
    dir.remove();
  });

  it("serves RFC 9728 metadata naming the authorization server, at the resource's path and the bare one", async () => {
    const expected = {
      resource,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ["header"],
      scopes_supported: ["mcp:tools"],
      resource_name: "warden",
    };
    for (const where of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const answer = await raw(server.port, { method: "GET", path: where });
      assert.equal(answer.status, 200, where);
      assert.match(String(answer.headers["content-type"]), /^application\/json/);
      assert.deepEqual(JSON.parse(answer.body), expected, where);
    }
    const head = await raw(server.port, { method: "HEAD", path: "/.well-known/oauth-protected-resource/mcp" });
    assert.equal(head.status, 200);
    assert.equal(head.body, "");
    const post = await raw(server.port, { path: "/.well-known/oauth-protected-resource", body: "{}" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, "GET, HEAD, OPTIONS");
    // A page of this machine (the Inspector's) reads it across origins; a foreign page is refused as everywhere.
    const page = await raw(server.port, {
      method: "GET",
      path: "/.well-known/oauth-protected-resource/mcp",
      headers: { origin: "http://localhost:6274" },
    });
    assert.equal(page.headers["access-control-allow-origin"], "http://localhost:6274");
    assert.match(String(page.headers["access-control-allow-methods"]), /GET/);
    const foreign = await raw(server.port, {
      method: "GET",
      path: "/.well-known/oauth-protected-resource/mcp",
      headers: { origin: "https://evil.example" },
    });
    assert.equal(foreign.status, 403);
    const elsewhere = await raw(server.port, { method: "GET", path: "/.well-known/oauth-protected-resource/other" });
    assert.equal(elsewhere.status, 404);
  });

  it("answers a request without a token with 401 pointing at the metadata and the scope", async () => {
    const answer = await raw(server.port, { body: LIST });
    assert.equal(answer.status, 401);
    const challenge = challengeOf(answer);
    assert.equal(challenge.resource_metadata, `${new URL(resource).origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(challenge.scope, "mcp:tools");
    assert.equal(challenge.error, undefined, "no error code when no token was sent (RFC 6750 §3.1)");
    assert.match(JSON.parse(answer.body).error.message, new RegExp(`get one from ${as.issuer}`));
    assert.equal(as.hits.length, 0, "nothing asked of the authorization server before a token came");
  });

  it("lets the SDK's client find the authorization server, get a token and call a tool as its subject", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(resource), {
      authProvider: new ClientCredentialsProvider({
        clientId: "build-bot",
        clientSecret: "s3cret",
        expectedIssuer: as.issuer,
        // SDK 1.32 asks a client_credentials token for the scope configured here, not the one the challenge names.
        scope: "mcp:tools",
      }),
    });
    const client = new Client({ name: "warden-oauth-test", version: "1.0.0" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name === "fixture_echo"));
    const echoed = await client.callTool({ name: "fixture_echo", arguments: { text: "with a token" } });
    assert.match(textOf(echoed), /with a token/);
    await client.close();
    assert.ok(as.hits.includes("/token"), "the client got its token from the authorization server");
    assert.ok(as.hits.includes("/jwks"), "warden fetched the keys to check it");
    const rows = callRows(path.join(dir.dir, "ledger"));
    assert.equal(rows.at(-1)?.tool, "fixture_echo");
    assert.equal(rows.at(-1)?.principal, "build-bot", "the ledger records the token's sub");
  });

  it("still takes the tokens file's tokens, as their principal", async () => {
    const client = await httpClient(new URL(resource), fileToken);
    await client.callTool({ name: "fixture_echo", arguments: { text: "file token" } });
    await client.close();
    assert.equal(callRows(path.join(dir.dir, "ledger")).at(-1)?.principal, "carol@example.com");
  });

  it("refuses every token that is not good, saying why, with RFC 6750's error", async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await signingKey("key-1"); // the kid of the real key: only the signature tells them apart
    const unknownKid = await signingKey("key-9");
    const good = { sub: "build-bot", aud: resource, scope: "mcp:tools" };
    const header = (object: unknown) =>
      btoa(JSON.stringify(object)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    const payload = header({ ...good, iss: as.issuer, exp: now + 600 });
    const cases: [string, string, RegExp][] = [
      ["expired", await as.mint({ ...good, exp: now - 3600 }), /has expired/],
      ["not yet valid", await as.mint({ ...good, nbf: now + 3600 }), /nbf claim is not valid/],
      ["for another resource", await as.mint({ ...good, aud: "http://127.0.0.1:1/mcp" }), /not for this server/],
      ["for no resource", await as.mint({ sub: "build-bot", scope: "mcp:tools" }), /aud/],
      ["from another issuer", await as.mint({ ...good, iss: "https://other.example" }), /not from the configured/],
      ["signed with a stranger's key", await as.mint(good, stranger), /signature does not verify/],
      ["signed with a key not in the set", await as.mint(good, unknownKid), /not signed with a key of/],
      [
        "unsigned (alg none)",
        `${header({ alg: "none" })}.${payload}.`,
        /neither in this server's tokens file nor a signed JWT/,
      ],
      ["unsigned, with a signature part", `${header({ alg: "none" })}.${payload}.AAAA`, /algorithm is not one/],
      ["HMAC over the public key", `${header({ alg: "HS256", kid: "key-1" })}.${payload}.AAAA`, /algorithm is not one/],
      ["without exp", await as.mint({ ...good, exp: undefined }), /exp claim is missing/],
      [
        "a logout token",
        await as.mint(good, undefined, { typ: "logout+jwt" }),
        /typed .logout\+jwt., not an access token/,
      ],
      ["an ID token typed so", await as.mint(good, undefined, { typ: "id_token+jwt" }), /not an access token/],
      ["a sub that is not one word", await as.mint({ ...good, sub: "build bot" }), /sub is not a principal/],
      ["not a JWT", "wdn_not-a-known-token", /neither in this server's tokens file nor a signed JWT/],
    ];
    for (const [what, token, why] of cases) {
      const answer = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(answer.status, 401, what);
      const challenge = challengeOf(answer);
      assert.equal(challenge.error, "invalid_token", what);
      assert.match(challenge.error_description, why, what);
      assert.ok(challenge.resource_metadata, what);
      assert.match(JSON.parse(answer.body).error.message, why, what);
    }
  });

  it("lets warden doctor check the authorization server: its metadata and keys, or why it cannot be used", async () => {
    type Check = { name: string; ok: boolean; value: string | null; detail: string; fix: string | null };
    const doctor = async (issuer: string) => {
      const { stdout } = await runWarden([
        "doctor",
        "--json",
        "--authorization-server",
        issuer,
        "--resource",
        resource,
        "--tokens",
        tokensFile,
      ]);
      return Object.fromEntries((JSON.parse(stdout).checks as Check[]).map((check) => [check.name, check]));
    };
    const good = await doctor(as.issuer);
    assert.deepEqual(
      [good["authorization server"].ok, good["authorization server"].value],
      [true, as.issuer],
    );
    assert.equal(
      good["authorization server"].detail,
      `its metadata names it and 1 signing key(s) at ${as.issuer}/jwks; tokens must be for ${resource}`,
    );
    assert.equal(good.http.detail, `every request needs one of 1 token(s) or an access token of ${as.issuer}`);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const down = await doctor(nobody);
    assert.equal(down["authorization server"].ok, false);
    assert.match(
      down["authorization server"].detail,
      /^no metadata for the issuer: http:\/\/127\.0\.0\.1:\d+\/\.well-known/,
    );
    assert.match(down["authorization server"].fix ?? "", /exactly as its tokens' iss says it, and reachable/);
  });

  it("answers a good token without the required scope with 403 insufficient_scope", async () => {
    for (const claims of [{ scope: "mcp:read" }, {}, { scp: ["mcp:read"] }]) {
      const token = await as.mint({ sub: "build-bot", aud: resource, ...claims });
      const answer = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(answer.status, 403, JSON.stringify(claims));
      const challenge = challengeOf(answer);
      assert.equal(challenge.error, "insufficient_scope");
      assert.equal(challenge.scope, "mcp:tools");
      assert.match(challenge.error_description, /lacks the scope mcp:tools/);
    }
    // `scp` as a list, as some servers write it, and `aud` as a list naming this resource among others.
    const listed = await as.mint({ sub: "build-bot", aud: ["https://other.example", resource], scp: ["mcp:tools"] });
    const answer = await raw(server.port, { headers: { authorization: `Bearer ${listed}` }, body: LIST });
    assert.equal(answer.status, 200, answer.body);
  });
});

describe(`serve --http with an authorization server that cannot be used (${runtimeName})`, () => {
  it("starts without it and answers its tokens 503 (not 401) while it is down; the tokens file's still work", async () => {
    const dir = tempDir("warden-oauth-down-");
    const issuerPort = await freePort();
    const issuer = `http://127.0.0.1:${issuerPort}`;
    const tokensFile = path.join(dir.dir, "tokens");
    const fileToken = (await runWarden(["token", "add", "carol", "--tokens", tokensFile])).stdout.trim();
    const resource = "http://127.0.0.1:8790/mcp";
    const server = await startHttp(
      ["--authorization-server", issuer, "--resource", resource, "--tokens", tokensFile],
      { WARDEN_LEDGER: path.join(dir.dir, "ledger") },
    );
    try {
      // A token signed by a key of the right shape: warden cannot tell whether it is good, so it does not say it is bad.
      const stranger = await signingKey("key-1");
      const token = await new SignJWT({ sub: "x", aud: resource, iss: issuer, exp: Math.floor(Date.now() / 1000) + 60 })
        .setProtectedHeader({ alg: "ES256", kid: "key-1" }).sign(stranger.privateKey);
      const down = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(down.status, 503);
      assert.equal(down.headers["retry-after"], "10");
      assert.match(
        JSON.parse(down.body).error.message,
        /authorization server's keys cannot be fetched now.*retry later/,
      );
      assert.match(server.stderr(), /"event":"oauth_keys_unavailable"/);
      const fileTokenAnswer = await raw(server.port, { headers: { authorization: `Bearer ${fileToken}` }, body: LIST });
      assert.equal(fileTokenAnswer.status, 200, "the tokens file's tokens need no authorization server");
      const none = await raw(server.port, { body: LIST });
      assert.equal(none.status, 401);
    } finally {
      await server.stop();
      dir.remove();
    }
  });

  it("answers within the request's deadline when the authorization server hangs", async () => {
    const hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
    const issuer = `http://127.0.0.1:${(hanging.address() as { port: number }).port}`;
    const dir = tempDir("warden-oauth-hang-");
    const resource = "http://127.0.0.1:8790/mcp";
    const server = await startHttp(
      ["--authorization-server", issuer, "--resource", resource, "--request-timeout", "1s"],
      { WARDEN_LEDGER: path.join(dir.dir, "ledger") },
    );
    try {
      const stranger = await signingKey("key-1");
      const token = await new SignJWT({ sub: "x", aud: resource, iss: issuer, exp: Math.floor(Date.now() / 1000) + 60 })
        .setProtectedHeader({ alg: "ES256", kid: "key-1" }).sign(stranger.privateKey);
      const started = performance.now();
      const answer = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(answer.status, 503);
      assert.match(JSON.parse(answer.body).error.message, /did not answer within 1000 ms/);
      assert.ok(performance.now() - started < 4000, `${Math.round(performance.now() - started)} ms`);
    } finally {
      await server.stop();
      hanging.closeAllConnections();
      hanging.close();
      dir.remove();
    }
  });

  it("refuses the tokens of an authorization server whose metadata names another issuer (mix-up)", async () => {
    const liar = await startAuthorizationServer("https://id.example.com");
    const dir = tempDir("warden-oauth-mixup-");
    const resource = "http://127.0.0.1:8790/mcp";
    const server = await startHttp(["--authorization-server", liar.issuer, "--resource", resource], {
      WARDEN_LEDGER: path.join(dir.dir, "ledger"),
    });
    try {
      const token = await liar.mint({ sub: "x", aud: resource });
      const answer = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(answer.status, 503);
      assert.match(JSON.parse(answer.body).error.message, /names the issuer "https:\/\/id\.example\.com", not/);
      assert.ok(!liar.hits.includes("/jwks"), "no key of a server that is not the issuer is fetched");
    } finally {
      await server.stop();
      await liar.close();
      dir.remove();
    }
  });

  it("takes a token without kid while the key set holds two keys of its kind (a rotation)", async () => {
    const rotating = await startAuthorizationServer(undefined, true);
    const dir = tempDir("warden-oauth-rotation-");
    const resource = "http://127.0.0.1:8790/mcp";
    const server = await startHttp(["--authorization-server", rotating.issuer, "--resource", resource], {
      WARDEN_LEDGER: path.join(dir.dir, "ledger"),
    });
    try {
      for (const signer of [undefined, rotating.second]) {
        const token = await rotating.mint({ sub: "rotated", aud: resource }, signer, { kid: undefined, typ: "JWT" });
        const answer = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
        assert.equal(answer.status, 200, answer.body);
      }
      const stranger = await signingKey("key-1");
      const token = await rotating.mint({ sub: "x", aud: resource }, stranger, { kid: undefined });
      const refused = await raw(server.port, { headers: { authorization: `Bearer ${token}` }, body: LIST });
      assert.equal(refused.status, 401);
      assert.match(challengeOf(refused).error_description, /signature does not verify/);
    } finally {
      await server.stop();
      await rotating.close();
      dir.remove();
    }
  });

  it("serves a non-loopback address with an authorization server and no tokens file", async () => {
    const dir = tempDir("warden-oauth-open-");
    const server = await startHttp([
      "--host",
      "0.0.0.0",
      "--authorization-server",
      "https://id.example.com",
      "--resource",
      "https://warden.example.com/mcp",
      "--tokens",
      path.join(dir.dir, "none"),
    ], { WARDEN_LEDGER: path.join(dir.dir, "ledger") });
    try {
      const answer = await raw(server.port, { headers: { host: "0.0.0.0" }, body: LIST });
      assert.equal(answer.status, 401);
      assert.equal(
        challengeOf(answer).resource_metadata,
        "https://warden.example.com/.well-known/oauth-protected-resource/mcp",
      );
    } finally {
      await server.stop();
      dir.remove();
    }
  });

  it("refuses settings it cannot use, naming the setting and the fix", async () => {
    const cases: [string[], RegExp][] = [
      [["--resource", "https://w.example/mcp"], /--resource needs --authorization-server/],
      [["--required-scope", "mcp:tools"], /--required-scope needs --authorization-server/],
      [["--authorization-server", "https://id.example.com"], /--authorization-server needs --resource/],
      [
        ["--authorization-server", "http://id.example.com", "--resource", "https://w.example/mcp"],
        /Invalid --authorization-server: expected an https URL \(http only on a loopback address\)/,
      ],
      [
        ["--authorization-server", "https://id.example.com", "--resource", "https://w.example/mcp#x"],
        /Invalid --resource: .*no query or fragment/,
      ],
      [
        ["--authorization-server", "https://id.example.com", "--resource", "not a url"],
        /Invalid --resource/,
      ],
      [
        [
          "--authorization-server",
          "https://id.example.com",
          "--resource",
          "https://w.example/mcp",
          "--required-scope",
          'a"b',
        ],
        /Invalid --required-scope: expected a scope/,
      ],
    ];
    for (const [args, why] of cases) {
      const { code, stderr } = await runWarden(["serve", "--http", "--port", "0", ...args]);
      assert.notEqual(code, 0, args.join(" "));
      assert.match(stderr, why, args.join(" "));
    }
    const { code, stderr } = await runWarden(["serve", "--http", "--port", "0"], {
      env: { WARDEN_AUTHORIZATION_SERVER: "https://id.example.com" },
    });
    assert.notEqual(code, 0);
    assert.match(stderr, /WARDEN_AUTHORIZATION_SERVER needs --resource/);
  });
});
