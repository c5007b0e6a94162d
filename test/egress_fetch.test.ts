// core/doors/egress.ts in process, against a loopback server of the test's own: what
// a fetch sends (method, path and query, body, headers less the connection's
// own), what it keeps of the answer (headers, a body cut at maxBytes, a body
// cut short by the server), how it follows redirects (method changes, the
// limit), how it stops when aborted; what a write reports; and which origin
// declarations are accepted. Every address is a loopback one.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { declaredOrigin, fetchFor, writeFile } from "../core/doors/egress.ts";
import { WardenError } from "../core/errors.ts";
import { initPlatform } from "../core/platform/mod.ts";
import { openRoots, type RootFs } from "../core/doors/roots.ts";
import { runtimeName, skipOrFail, tempDir } from "./helpers.ts";

type Seen = { method: string; url: string; headers: IncomingMessage["headers"]; body: string };

/** A loopback HTTP server that records each request and answers by path. */
async function listen(host: string): Promise<{ server: Server; origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const [route, query] = (req.url ?? "").split("?");
      if (route === "/echo") res.end("echo");
      else if (route === "/ten") res.end("0123456789");
      else if (route === "/cookies") res.writeHead(200, { "set-cookie": ["a=1", "b=2"] }).end("ok");
      else if (route === "/short") {
        res.writeHead(200, { "content-length": "100" });
        res.write("only ten b");
        setImmediate(() => res.destroy());
      } else if (route === "/hang") {
        // Never answers: the test aborts.
      } else if (route === "/nolocation") res.writeHead(302).end("no location");
      else if (route === "/oklocation") res.writeHead(200, { location: "/echo" }).end("ok with a location");
      else if (route === "/loop") {
        const n = Number(query?.split("=")[1] ?? 0);
        res.writeHead(302, { location: `/loop?n=${n + 1}` }).end();
      } else if (route === "/chain" || route === "/chain6") {
        // 5 redirects to /echo, or 6.
        const n = Number(query?.split("=")[1] ?? 0);
        res.writeHead(302, { location: n >= (route === "/chain" ? 4 : 5) ? "/echo" : `${route}?n=${n + 1}` }).end();
      } else if (/^\/status\/\d+$/.test(route)) {
        res.writeHead(Number(route.slice(8)), { location: "/echo" }).end();
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  return { server, origin: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, seen };
}

const signal = () => new AbortController().signal;

describe(`ctx.fetch against a loopback server (${runtimeName})`, () => {
  let v4: Awaited<ReturnType<typeof listen>>;
  before(async () => {
    await initPlatform();
    v4 = await listen("127.0.0.1");
  });
  after(() => v4.server.close());

  const fetch = (target: string, request = {}) => fetchFor('tool "t"', [v4.origin], target, request, signal());

  it("sends the method, path, query and body, and none of the connection's own headers", async () => {
    const result = await fetch(`${v4.origin}/echo?x=1&y=two`, {
      method: "PUT",
      body: "payload",
      headers: {
        "X-Probe": "yes",
        Host: "evil.example",
        Connection: "upgrade",
        Upgrade: "websocket",
        "Transfer-Encoding": "chunked",
        "content-length": "999",
        "Keep-Alive": "timeout=99",
      },
    });
    assert.deepEqual([result.status, result.body, result.truncated, result.redirects], [200, "echo", false, 0]);
    assert.equal(result.url, `${v4.origin}/echo?x=1&y=two`);
    const seen = v4.seen.at(-1)!;
    assert.deepEqual([seen.method, seen.url, seen.body], ["PUT", "/echo?x=1&y=two", "payload"]);
    assert.equal(seen.headers["x-probe"], "yes");
    assert.equal(seen.headers.host, new URL(v4.origin).host, "Host is the URL's, not the tool's");
    assert.notEqual(seen.headers.connection, "upgrade");
    assert.equal(seen.headers["transfer-encoding"], undefined);
    assert.equal(seen.headers.upgrade, undefined);
    assert.equal(seen.headers["keep-alive"], undefined);
    assert.equal(seen.headers["content-length"], "7", "the body's own length");
  });

  it("joins a repeated answer header", async () => {
    const result = await fetch(`${v4.origin}/cookies`);
    assert.equal(result.headers["set-cookie"], "a=1, b=2");
  });

  it("keeps maxBytes of the body and says when it cut", async () => {
    const cut = await fetch(`${v4.origin}/ten`, { maxBytes: 4 });
    assert.deepEqual([cut.body, cut.truncated], ["0123", true]);
    const exact = await fetch(`${v4.origin}/ten`, { maxBytes: 10 });
    assert.deepEqual([exact.body, exact.truncated], ["0123456789", false]);
    const least = await fetch(`${v4.origin}/ten`, { maxBytes: 0 });
    assert.deepEqual([least.body, least.truncated], ["0", true], "at least one byte is kept");
  });

  it("fails when the server closes before the body ends", async () => {
    await assert.rejects(fetch(`${v4.origin}/short`), (error: unknown) => {
      assert.ok(error instanceof WardenError);
      assert.equal(error.code, "tool_failed");
      assert.equal(error.message, `Fetch from ${v4.origin} failed: the connection closed before the body ended`);
      return true;
    });
  });

  it("stops with the signal's reason when aborted", async () => {
    const controller = new AbortController();
    const pending = fetchFor('tool "t"', [v4.origin], `${v4.origin}/hang`, {}, controller.signal);
    const reason = new Error("call cancelled");
    // Aborted once the server has the request, so the abort cuts a connection, not a connect.
    const arrived = new Promise<void>((resolve) => v4.server.once("request", () => resolve()));
    await arrived;
    controller.abort(reason);
    await assert.rejects(pending, (error: unknown) => error === reason);
  });

  it("follows redirects within the declared origin, up to five", async () => {
    const result = await fetch(`${v4.origin}/chain?n=0`);
    assert.deepEqual([result.status, result.body, result.redirects, result.url], [200, "echo", 5, `${v4.origin}/echo`]);
    for (const start of ["/chain6?n=0", "/loop?n=0"]) {
      await assert.rejects(fetch(`${v4.origin}${start}`), (error: unknown) => {
        assert.ok(error instanceof WardenError);
        assert.equal(error.code, "capability_denied");
        assert.equal(error.message, `Too many redirects from ${v4.origin}${start}: more than 5`);
        return true;
      });
    }
  });

  it("returns an answer with a location but no redirect status, or the reverse, as it is", async () => {
    const result = await fetch(`${v4.origin}/nolocation`);
    assert.deepEqual([result.status, result.body, result.redirects], [302, "no location", 0]);
    const ok = await fetch(`${v4.origin}/oklocation`);
    assert.deepEqual([ok.status, ok.body, ok.redirects], [200, "ok with a location", 0]);
    const bad = await fetch(`${v4.origin}/status/400`);
    assert.deepEqual([bad.status, bad.redirects], [400, 0]);
  });

  for (
    const [status, method, after] of [
      [300, "PUT", "PUT"],
      [303, "PUT", "GET"],
      [301, "POST", "GET"],
      [302, "POST", "GET"],
      [302, "PUT", "PUT"],
      [307, "POST", "POST"],
      [308, "POST", "POST"],
    ] as const
  ) {
    it(`after a ${status}, a ${method} goes on as ${after}${after === "GET" ? " without its body" : " with its body"}`, async () => {
      await fetch(`${v4.origin}/status/${status}`, { method, body: "data" });
      const seen = v4.seen.at(-1)!;
      assert.deepEqual([seen.url, seen.method, seen.body], ["/echo", after, after === "GET" ? "" : "data"]);
    });
  }

  const refusals: { title: string; target: () => string; hosts?: string[]; message: () => string }[] = [
    { title: "a URL that is not one", target: () => "not a url", message: () => 'Invalid URL: "not a url"' },
    {
      title: "a scheme other than http and https",
      target: () => "ftp://127.0.0.1/file",
      message: () => 'tool "t" may not fetch "ftp://127.0.0.1/file": only http and https URLs',
    },
    {
      title: "an origin it did not declare, naming those it did",
      target: () => "http://127.0.0.1:9/echo",
      hosts: ["http://a.example", "http://b.example"],
      message: () => 'tool "t" may not fetch from http://127.0.0.1:9: it declared http://a.example, http://b.example',
    },
    {
      title: "a user name alone in the URL",
      target: () => v4.origin.replace("//", "//user@") + "/echo",
      message: () =>
        `tool "t" may not fetch ${JSON.stringify(v4.origin)}: credentials in the URL are refused; send a header`,
    },
    {
      title: "a password alone in the URL",
      target: () => v4.origin.replace("//", "//:secret@") + "/echo",
      message: () =>
        `tool "t" may not fetch ${JSON.stringify(v4.origin)}: credentials in the URL are refused; send a header`,
    },
    {
      title: "any origin, for a tool that declared none",
      target: () => `${v4.origin}/echo`,
      hosts: [],
      message: () => `tool "t" may not fetch from ${v4.origin}: it declared no host`,
    },
  ];
  for (const { title, target, hosts, message } of refusals) {
    it(`refuses ${title}, and the server hears nothing`, async () => {
      const seen = v4.seen.length;
      await assert.rejects(fetchFor('tool "t"', hosts ?? [v4.origin], target(), {}, signal()), (error: unknown) => {
        assert.ok(error instanceof WardenError);
        assert.equal(error.code, "capability_denied");
        assert.equal(error.message, message());
        return true;
      });
      assert.equal(v4.seen.length, seen);
    });
  }
});

describe(`ctx.fetch to declared address literals (${runtimeName})`, () => {
  it("connects to an IPv4 literal with parts of several digits, without resolving it", async () => {
    await initPlatform();
    // Linux routes all of 127/8 to loopback.
    const v4 = await listen("127.10.100.254");
    try {
      const result = await fetchFor('tool "t"', [v4.origin], `${v4.origin}/echo`, {}, signal());
      assert.deepEqual([result.status, result.body], [200, "echo"]);
    } finally {
      v4.server.close();
    }
  });

  it("connects to an IPv6 literal, without resolving it", async (t) => {
    await initPlatform();
    let v6: Awaited<ReturnType<typeof listen>>;
    try {
      v6 = await listen("::1");
    } catch {
      t.skip("this machine has no IPv6 loopback");
      return;
    }
    try {
      const result = await fetchFor('tool "t"', [v6.origin], `${v6.origin}/echo`, {}, signal());
      assert.deepEqual([result.status, result.body], [200, "echo"]);
    } finally {
      v6.server.close();
    }
  });
});

describe(`ctx.fs.write's answer and refusals (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let fs: RootFs;
  before(async () => {
    await initPlatform();
    work = tempDir();
    mkdirSync(path.join(work.dir, "out"));
    fs = await openRoots([{ id: "out", path: path.join(work.dir, "out") }]);
  });
  after(() => work.remove());

  it("reports the bytes written, text as UTF-8 and bytes as given", async () => {
    assert.deepEqual(await writeFile('tool "t"', ["out"], fs, "out", "text.txt", "héllo ✓"), {
      root: "out",
      path: "text.txt",
      bytes: 10,
    });
    assert.equal(readFileSync(path.join(work.dir, "out", "text.txt"), "utf8"), "héllo ✓");
    const bytes = new Uint8Array([0, 1, 2, 255]);
    assert.deepEqual(await writeFile('tool "t"', ["out"], fs, "out", "bytes.bin", bytes), {
      root: "out",
      path: "bytes.bin",
      bytes: 4,
    });
    assert.deepEqual([...readFileSync(path.join(work.dir, "out", "bytes.bin"))], [0, 1, 2, 255]);
  });

  const refusals: { title: string; roots: string[]; data: unknown; message: string | RegExp }[] = [
    {
      title: "a root it did not declare, naming those it did",
      roots: ["a", "b"],
      data: "x",
      message: 'tool "t" may not write in root "out": it declared a, b',
    },
    {
      title: "a tool that declared no write root",
      roots: [],
      data: "x",
      message: 'tool "t" may not write in root "out": it declared no write root',
    },
    {
      title: "data that is neither text nor bytes",
      roots: ["out"],
      data: { a: 1 },
      message: /^Invalid data: expected a string or bytes, received /,
    },
  ];
  for (const { title, roots, data, message } of refusals) {
    it(`refuses ${title}, and writes nothing`, async () => {
      await assert.rejects(
        writeFile('tool "t"', roots, fs, "out", "refused.txt", data as string),
        (error: unknown) => {
          assert.ok(error instanceof WardenError);
          assert.equal(error.code, "capability_denied");
          if (typeof message === "string") assert.equal(error.message, message);
          else assert.match(error.message, message);
          return true;
        },
      );
      assert.ok(!existsSync(path.join(work.dir, "out", "refused.txt")));
    });
  }
});

describe(`declared origins (${runtimeName})`, () => {
  const table: [string, string | null][] = [
    ["https://api.example.com", "https://api.example.com"],
    ["https://api.example.com/", "https://api.example.com"],
    ["http://127.0.0.1:8080", "http://127.0.0.1:8080"],
    ["http://[::1]:8080", "http://[::1]:8080"],
    ["https://api.example.com:443", null],
    ["HTTPS://API.EXAMPLE.COM", null],
    ["https://api.example.com/v1", null],
    ["https://api.example.com?x=1", null],
    ["https://api.example.com#x", null],
    ["https://user@api.example.com", null],
    ["https://user:pw@api.example.com", null],
    ["ftp://files.example.com", null],
    ["file:///etc", null],
    ["api.example.com", null],
    ["", null],
  ];
  for (const [entry, origin] of table) {
    it(`${JSON.stringify(entry)} is ${origin === null ? "not an origin" : origin}`, () => {
      assert.equal(declaredOrigin(entry), origin);
    });
  }
});

describe(`ctx.fetch over https (${runtimeName})`, () => {
  it("speaks TLS to an https origin and refuses a certificate no authority vouches for", async (t) => {
    await initPlatform();
    const work = tempDir();
    try {
      const key = path.join(work.dir, "key.pem");
      const cert = path.join(work.dir, "cert.pem");
      const made = spawnSync("openssl", [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"],
        ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
      ]);
      if (made.error || made.status !== 0) {
        skipOrFail(t, "needs openssl to make a certificate (apt-get install openssl)");
        return;
      }
      let requests = 0;
      const server = createHttpsServer(
        { key: readFileSync(key), cert: readFileSync(cert) },
        (_req, res) => (requests++, res.end("secret")),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      try {
        await assert.rejects(fetchFor('tool "t"', [origin], `${origin}/`, {}, signal()), (error: unknown) => {
          assert.ok(error instanceof WardenError);
          assert.equal(error.code, "tool_failed");
          // The self-signed certificate is refused in the TLS handshake: the words differ between runtimes.
          assert.match(
            error.message,
            new RegExp(`^Fetch from ${origin} failed: .*(SELF_SIGNED|self-signed|UnknownIssuer)`, "i"),
          );
          return true;
        });
        assert.equal(requests, 0, "no request went over the refused connection");
      } finally {
        server.close();
      }
    } finally {
      work.remove();
    }
  });
});
