// external-side-effect tools: writes only under declared roots, atomically,
// never through a symlink; fetches only to declared origins, after every
// redirect and DNS answer. Each refusal is proved by what did not happen.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import {
  bwrapOrSkip,
  connect,
  fixtureToolsDir,
  onDeno,
  repoRoot,
  runtimeName,
  type Session,
  shellQuote,
  tempDir,
  textOf,
} from "./helpers.ts";

const PORT = 47613;

describe(`external-side-effect capabilities (${runtimeName})`, () => {
  let session: Session;
  let work: { dir: string; remove: () => void };
  let out: string;
  let src: string;
  const hits: string[] = [];
  let declared: Server;
  let elsewhere: Server;

  before(async () => {
    work = tempDir();
    out = path.join(work.dir, "out");
    src = path.join(work.dir, "src");
    mkdirSync(path.join(out, "nested"), { recursive: true });
    mkdirSync(src);
    writeFileSync(path.join(work.dir, "outside.txt"), "outside\n");
    symlinkSync(path.join(work.dir, "outside.txt"), path.join(out, "link.txt"));
    symlinkSync(work.dir, path.join(out, "up"));
    const handler = (name: string) =>
      createServer((req, res) => {
        hits.push(`${name} ${req.url}`);
        if (req.url === "/ok") res.end("hello");
        else if (req.url === "/big") res.end("x".repeat(3 * 1024 * 1024));
        else if (req.url === "/redirect-in") res.writeHead(302, { location: "/ok" }).end();
        else if (req.url === "/redirect-out") res.writeHead(302, { location: `http://127.0.0.2:${PORT}/ok` }).end();
        else res.writeHead(404).end();
      });
    declared = handler("declared");
    elsewhere = handler("elsewhere");
    await new Promise<void>((resolve) => declared.listen(PORT, "127.0.0.1", resolve));
    await new Promise<void>((resolve) => elsewhere.listen(PORT, "127.0.0.2", resolve));
    session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
      args: ["--root", `src=${src}`, "--root", `out=${out}`],
    });
  });
  after(async () => {
    await session.close();
    declared.close();
    elsewhere.close();
    work.remove();
  });

  const call = (args: Record<string, unknown>) => session.client.callTool({ name: "fixture_egress", arguments: args });
  const write = (root: string, p: string, text = "data") => call({ write: { root, path: p, text } });

  it("writes a file under a declared root, atomically, and says where", async () => {
    const result = await write("out", "nested/report.txt", "report\n");
    assert.deepEqual(JSON.parse(textOf(result)), { root: "out", path: "nested/report.txt", bytes: 7 });
    assert.equal(readFileSync(path.join(out, "nested", "report.txt"), "utf8"), "report\n");
    const again = await write("out", "nested/report.txt", "second\n");
    assert.equal(again.isError, undefined);
    assert.equal(readFileSync(path.join(out, "nested", "report.txt"), "utf8"), "second\n");
  });

  const writeRefusals: { title: string; root: string; path: string; message: RegExp; untouched: string }[] = [
    {
      title: "a root it did not declare",
      root: "src",
      path: "x.txt",
      message: /^tool "fixture_egress" may not write in root "src": it declared out$/,
      untouched: "src/x.txt",
    },
    {
      title: "a symlink to a file outside",
      root: "out",
      path: "link.txt",
      message: /"link\.txt" is a symlink; warden never writes through one$/,
      untouched: "outside.txt",
    },
    {
      title: "a symlinked directory outside",
      root: "out",
      path: "up/escaped.txt",
      message:
        /^Path refused in root "out": "up" leads outside the root through a symlink; only files inside the root can be read$/,
      untouched: "escaped.txt",
    },
    {
      title: "a .. escape",
      root: "out",
      path: "../escaped.txt",
      message: /leads outside the root/,
      untouched: "escaped.txt",
    },
    {
      title: "an absolute path outside",
      root: "out",
      path: "/tmp/escaped.txt",
      message: /an absolute path outside the root/,
      untouched: "/tmp/escaped.txt",
    },
    { title: "a NUL byte", root: "out", path: "a\u0000.txt", message: /NUL/, untouched: "out/a" },
    {
      title: "a path that names a directory, not a file (a trailing /)",
      root: "out",
      path: "nested/new/",
      message: /^Invalid path: "nested\/new\/" does not name a file$/,
      untouched: "out/nested/new",
    },
    {
      title: "a path whose last segment is ..",
      root: "out",
      path: "nested/..",
      message: /^Invalid path: "nested\/\.\." does not name a file$/,
      untouched: "outside.txt",
    },
    {
      title: "a directory that is there",
      root: "out",
      path: "nested",
      message: /^Path refused in root "out": "nested" is not a regular file$/,
      untouched: "outside.txt",
    },
  ];
  for (const refusal of writeRefusals) {
    it(`refuses to write through ${refusal.title}, and nothing is written`, async () => {
      const before = existsSync(path.resolve(work.dir, refusal.untouched))
        ? readFileSync(path.resolve(work.dir, refusal.untouched), "utf8")
        : null;
      const result = await write(refusal.root, refusal.path, "EVIL");
      assert.equal(result.isError, true);
      assert.match(textOf(result), refusal.message);
      const after = existsSync(path.resolve(work.dir, refusal.untouched))
        ? readFileSync(path.resolve(work.dir, refusal.untouched), "utf8")
        : null;
      assert.equal(after, before);
    });
  }

  it("fetches from a declared origin, following a redirect that stays declared", async () => {
    const result = await call({ fetch: `http://127.0.0.1:${PORT}/redirect-in` });
    const fetched = JSON.parse(textOf(result));
    assert.deepEqual([fetched.status, fetched.body, fetched.redirects, fetched.url], [
      200,
      "hello",
      1,
      `http://127.0.0.1:${PORT}/ok`,
    ]);
  });

  it("caps a large body and says it was truncated", async () => {
    const fetched = JSON.parse(textOf(await call({ fetch: `http://127.0.0.1:${PORT}/big` })));
    assert.equal(fetched.body.length, 1024 * 1024);
    assert.equal(fetched.truncated, true);
  });

  const fetchRefusals: { title: string; url: string; message: RegExp }[] = [
    {
      title: "an undeclared host",
      url: "http://127.0.0.2:47613/ok",
      message: /^tool "fixture_egress" may not fetch from http:\/\/127\.0\.0\.2:47613: it declared /,
    },
    {
      title: "a declared host on another port",
      url: "http://127.0.0.1:47614/ok",
      message: /may not fetch from http:\/\/127\.0\.0\.1:47614/,
    },
    {
      title: "a declared host redirecting elsewhere",
      url: `http://127.0.0.1:${PORT}/redirect-out`,
      message: /may not fetch from http:\/\/127\.0\.0\.2:47613/,
    },
    {
      title: "a declared name that resolves to loopback",
      url: `http://localhost:${PORT}/ok`,
      message:
        /localhost resolves to the non-public address (127\.0\.0\.1|::1); declare http:\/\/(127\.0\.0\.1|\[::1\]):47613 to allow it$/,
    },
    { title: "another scheme", url: "file:///etc/passwd", message: /only http and https URLs$/ },
    {
      title: "credentials in the URL",
      url: `http://user:pw@127.0.0.1:${PORT}/ok`,
      message: /credentials in the URL are refused/,
    },
  ];
  for (const { title, url, message } of fetchRefusals) {
    it(`refuses to fetch ${title}, and the other side hears nothing`, async () => {
      const seen = hits.filter((h) => h.startsWith("elsewhere")).length;
      const result = await call({ fetch: url });
      assert.equal(result.isError, true, textOf(result));
      assert.match(textOf(result), message);
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "capability_denied");
      assert.equal(hits.filter((h) => h.startsWith("elsewhere")).length, seen, "the undeclared server saw no request");
    });
  }

  it("refuses write and fetch to a read tool, naming the capability and the class", async () => {
    const requests = hits.length;
    for (const [what, capability] of [["write", "ctx.fs.write"], ["fetch", "ctx.fetch"]]) {
      const result = await session.client.callTool({ name: "fixture_read_write", arguments: { what } });
      assert.equal(result.isError, true);
      assert.equal(
        textOf(result),
        `${capability} needs risk class "external-side-effect": tool "fixture_read_write" is "read"; nothing was run`,
      );
    }
    assert.equal(hits.length, requests, "no request was made");
    assert.ok(!existsSync(path.join(src, "overreach.txt")));
  });
});

describe(`ctx.fetch against DNS rebinding (${runtimeName})`, () => {
  it("connects to the address its check resolved, never to what the name resolves to next", async (t) => {
    const sandbox = bwrapOrSkip(t);
    if (!sandbox) return;
    // warden runs in a bubblewrap sandbox with a network of its own, whose DNS server (test/fixtures/rebind) answers
    // rebind.test with a public address once (it passes the check, and nothing listens there) and with 127.0.0.1
    // after that, where an HTTP server answers "rebound". A fetch that resolved the name again would get "rebound".
    const work = tempDir();
    try {
      const ready = path.join(work.dir, "ready");
      writeFileSync(path.join(work.dir, "resolv.conf"), "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n");
      writeFileSync(path.join(work.dir, "hosts"), "127.0.0.1 localhost\n");
      const servers = [
        process.execPath,
        ...(onDeno ? ["run", "-A"] : []),
        path.join(repoRoot, "test/fixtures/rebind/servers.mjs"),
        ready,
        String(PORT),
      ];
      // The servers keep none of the client's pipes open, and go when warden does.
      const script = `${servers.map(shellQuote).join(" ")} </dev/null >/dev/null 2>&1 & ` +
        `while [ ! -e ${shellQuote(ready)} ]; do sleep 0.05; done; "$@"; kill $!`;
      const session = await connect({
        env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
        wrap: (command, args) => ({
          command: sandbox,
          args: [
            ...["--unshare-user", "--uid", "0", "--gid", "0", "--unshare-net", "--die-with-parent"],
            ...["--dev-bind", "/", "/", "--ro-bind", path.join(work.dir, "resolv.conf"), "/etc/resolv.conf"],
            ...["--ro-bind", path.join(work.dir, "hosts"), "/etc/hosts"],
            ...["--", "sh", "-c", script, "sh", command, ...args],
          ],
        }),
      });
      try {
        const fetch = (url: string) => session.client.callTool({ name: "fixture_egress", arguments: { fetch: url } });
        const first = await fetch(`http://rebind.test:${PORT}/`);
        assert.equal(first.isError, true, textOf(first));
        assert.ok(!textOf(first).includes("rebound"), "the request reached the rebound address");
        assert.match(
          textOf(first),
          new RegExp(`^Fetch from http://rebind\\.test:${PORT} failed: `),
        );
        // The name now resolves to loopback: the check refuses it, which shows a second lookup would have.
        const second = await fetch(`http://rebind.test:${PORT}/`);
        assert.match(textOf(second), /rebind\.test resolves to the non-public address 127\.0\.0\.1/);
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});
