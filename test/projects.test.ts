// Projects, as an agent meets them: several roots served at once, each tool
// that reads a tree taking `project_id`, settled from the argument, then the
// X-MCP-Project header over HTTP, then the default; project_unknown and
// project_ambiguous as structured errors that never show a path; strict
// selection; host_context as the connection check, with its probe; and the
// projects an MCP client's roots name (--client-roots), as they change.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  connect,
  eventually,
  httpClient,
  type HttpServer,
  runtimeName,
  runWarden,
  type Session,
  sshKeygen,
  startHttp,
  tempDir,
  textOf,
  writeSignedEchoPlugin,
} from "./helpers.ts";

type Structured = Record<string, unknown>;

/** A temp dir with projects `app` and `lib` (and any `more`), each with a marker of its own. */
function projectsDir(more: string[] = []): { dir: string; args: string[]; remove: () => void } {
  const work = tempDir("warden-projects-");
  const args: string[] = [];
  for (const id of ["app", "lib", ...more]) {
    mkdirSync(path.join(work.dir, id));
    writeFileSync(path.join(work.dir, id, "main.ts"), `// TODO marker of ${id}\nexport const x = 1;\n`);
    args.push("--root", `${id}=${path.join(work.dir, id)}`);
  }
  return { ...work, args };
}

const structured = (result: unknown) => (result as { structuredContent: Structured }).structuredContent;
const codeOf = (result: unknown) => ((result as { _meta?: Structured })._meta ?? {})["warden/error_code"];
const markerOf = (result: unknown) =>
  (structured(result).findings as { text: string }[]).map((finding) => finding.text).join();

describe(`projects over stdio (${runtimeName})`, () => {
  let work: ReturnType<typeof projectsDir>;
  let session: Session;
  before(async () => {
    work = projectsDir(["gone"]);
    session = await connect({ args: ["serve", ...work.args] });
  });
  after(async () => {
    await session?.close();
    work?.remove();
  });

  it("reads the first project when a call names none, and the one project_id names", async () => {
    const implicit = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
    assert.equal(implicit.isError, undefined, textOf(implicit));
    assert.equal(structured(implicit).project_id, "app");
    assert.match(markerOf(implicit), /marker of app/);
    const named = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: "lib" } });
    assert.equal(structured(named).project_id, "lib");
    assert.match(markerOf(named), /marker of lib/);
    const about = await session.client.callTool({
      name: "code_about",
      arguments: { module: "main.ts", project_id: "lib" },
    });
    assert.equal(structured(about).project_id, "lib", textOf(about));
  });

  it("answers an unknown project with project_unknown, the caller's project ids and no path", async () => {
    const result = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: "nope" } });
    assert.equal(result.isError, true);
    assert.equal(codeOf(result), "project_unknown");
    const message =
      'Unknown project "nope": the projects you may use are app, lib, gone; pass one of them as project_id; to reach another, the operator adds it (--root <id>=<dir>) and you reconnect';
    assert.equal(textOf(result), message);
    // The SDK's client checked it against the tool's published output schema (an answer, or an error's data).
    assert.deepEqual(structured(result), {
      error_code: "project_unknown",
      message,
      project_id: "nope",
      projects: ["app", "lib", "gone"],
      truncated: false,
    });
    assert.ok(!JSON.stringify(result).includes(work.dir), "no host path in the answer");
  });

  it("says that root is project_id now", async () => {
    const result = await session.client.callTool({ name: "code_dead_exports", arguments: { root: "app" } });
    assert.equal(codeOf(result), "invalid_arguments");
    assert.equal(
      textOf(result),
      'Unknown argument "root": code_dead_exports names its project project_id now; pass project_id instead (host_context lists the ids)',
    );
  });

  it("host_context: the instance, the projects, how a call that names none is settled, and a probe", async () => {
    const first = structured(await session.client.callTool({ name: "host_context", arguments: {} }));
    const again = structured(await session.client.callTool({ name: "host_context", arguments: {} }));
    assert.match(String((first.server as Structured).instanceId), /^[0-9a-f-]{36}$/);
    assert.equal((again.server as Structured).instanceId, (first.server as Structured).instanceId, "one per process");
    assert.deepEqual(first.projects, {
      ids: ["app", "lib", "gone"],
      truncated: false,
      selection: "default",
      implicit: { project_id: "app", from: "default" },
    });
    assert.equal(first.probe, undefined, "no probe unless asked");
    const probe = async (id: string) =>
      structured(await session.client.callTool({ name: "host_context", arguments: { probe: id } })).probe;
    assert.deepEqual(await probe("lib"), { project_id: "lib", known: true, readable: true, problem: null });
    assert.deepEqual(await probe("zzz"), {
      project_id: "zzz",
      known: false,
      readable: false,
      problem: "not a project of this server: pass one of projects.ids",
    });
    // A project whose directory went away since the start is known and not readable, and says so without its path.
    rmSync(path.join(work.dir, "gone"), { recursive: true });
    const gone = await probe("gone") as Structured;
    assert.equal(gone.known, true);
    assert.equal(gone.readable, false);
    assert.match(String(gone.problem), /gone/);
    const text = textOf(await session.client.callTool({ name: "host_context", arguments: { probe: "gone" } }));
    assert.ok(!text.includes(work.dir), `no host path in: ${text}`);
  });
});

describe(`strict project selection (${runtimeName})`, () => {
  let work: ReturnType<typeof projectsDir>;
  before(() => {
    work = projectsDir();
  });
  after(() => work?.remove());

  it("fails a call that names no project closed, as a plain call and as a job's start", async () => {
    const session = await connect({ args: ["serve", "--strict-project-selection", ...work.args] });
    try {
      const message =
        "Which project?: this server has several and chooses none for you (--strict-project-selection): the projects you may use are app, lib; pass one as project_id (over HTTP, the X-MCP-Project header names one for every call of a request)";
      for (const name of ["tech_debt_check", "run_checks_start"]) {
        const result = await session.client.callTool({ name, arguments: {} });
        assert.equal(codeOf(result), "project_ambiguous", `${name}: ${textOf(result)}`);
        assert.deepEqual(structured(result), {
          error_code: "project_ambiguous",
          message,
          reason: "multi-project-implicit",
          projects: ["app", "lib"],
          truncated: false,
        });
      }
      const named = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: "lib" } });
      assert.equal(structured(named).project_id, "lib");
      const facts = structured(await session.client.callTool({ name: "host_context", arguments: {} }));
      assert.deepEqual(facts.projects, {
        ids: ["app", "lib"],
        truncated: false,
        selection: "strict",
        implicit: { error_code: "project_ambiguous", reason: "multi-project-implicit" },
      });
    } finally {
      await session.close();
    }
  });

  it("changes nothing for a server of one project", async () => {
    const session = await connect({
      args: ["serve", "--strict-project-selection", "--root", `only=${path.join(work.dir, "lib")}`],
    });
    try {
      const result = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
      assert.equal(structured(result).project_id, "only", textOf(result));
      const facts = structured(await session.client.callTool({ name: "host_context", arguments: {} }));
      assert.equal((facts.projects as Structured).selection, "single");
    } finally {
      await session.close();
    }
  });

  it("lists at most 64 project ids, and says how many more", async () => {
    const many = Array.from({ length: 63 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    const big = projectsDir(many);
    try {
      const session = await connect({ args: ["serve", "--strict-project-selection", ...big.args] });
      try {
        const facts = structured(await session.client.callTool({ name: "host_context", arguments: {} }));
        const projects = facts.projects as { ids: string[]; truncated: boolean };
        assert.equal(projects.ids.length, 64);
        assert.equal(projects.truncated, true);
        assert.deepEqual(projects.ids.slice(0, 3), ["app", "lib", "p00"]);
        const unknown = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: "x" } });
        assert.equal((structured(unknown).projects as string[]).length, 64);
        assert.equal(structured(unknown).truncated, true);
        assert.match(textOf(unknown), /, p61 and 1 more; pass one of them as project_id/);
      } finally {
        await session.close();
      }
    } finally {
      big.remove();
    }
  });
});

describe(`projects over HTTP: the X-MCP-Project header (${runtimeName})`, () => {
  let work: ReturnType<typeof projectsDir>;
  let server: HttpServer;
  before(async () => {
    work = projectsDir();
    server = await startHttp(["--strict-project-selection", ...work.args], {}, false);
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
    work?.remove();
  });

  it("settles a call that names no project from the header; an argument still wins", async () => {
    const client = await httpClient(server.url, undefined, { "X-MCP-Project": "lib" });
    try {
      const implicit = await client.callTool({ name: "tech_debt_check", arguments: {} });
      assert.equal(structured(implicit).project_id, "lib", textOf(implicit));
      assert.match(markerOf(implicit), /marker of lib/);
      const named = await client.callTool({ name: "tech_debt_check", arguments: { project_id: "app" } });
      assert.equal(structured(named).project_id, "app");
      const facts = structured(await client.callTool({ name: "host_context", arguments: {} }));
      assert.deepEqual((facts.projects as Structured).implicit, { project_id: "lib", from: "header" });
      assert.equal((facts.projects as Structured).selection, "strict");
    } finally {
      await client.close();
    }
  });

  it("answers a header that names no project with project_unknown, saying it came from the header", async () => {
    const client = await httpClient(server.url, undefined, { "X-MCP-Project": "nope" });
    try {
      const result = await client.callTool({ name: "tech_debt_check", arguments: {} });
      assert.equal(codeOf(result), "project_unknown");
      assert.match(
        textOf(result),
        /^Unknown project "nope" \(from the X-MCP-Project header\): the projects you may use/,
      );
      assert.equal(structured(result).project_id, "nope");
    } finally {
      await client.close();
    }
  });

  it("without the header, strict selection refuses a call that names no project", async () => {
    const client = await httpClient(server.url);
    try {
      const result = await client.callTool({ name: "tech_debt_check", arguments: {} });
      assert.equal(codeOf(result), "project_ambiguous", textOf(result));
      assert.equal(structured(result).reason, "multi-project-implicit");
    } finally {
      await client.close();
    }
  });
});

describe(`projects from the client's roots, --client-roots (${runtimeName})`, () => {
  let work: ReturnType<typeof projectsDir>;
  let roots: { uri: string; name?: string }[];
  let session: Session;
  let listed = 0;
  before(async () => {
    work = projectsDir();
    // A way out of a client's root is refused as it is out of a configured one.
    symlinkSync(path.join(work.dir, "lib", "main.ts"), path.join(work.dir, "app", "elsewhere.ts"));
    roots = [
      { uri: pathToFileURL(path.join(work.dir, "app")).href, name: "Web App" },
      { uri: pathToFileURL(path.join(work.dir, "lib")).href },
      { uri: pathToFileURL(path.join(work.dir, "missing")).href, name: "missing" },
    ];
    session = await connect({
      args: ["serve", "--client-roots", ...work.args.slice(0, 2)],
      capabilities: { roots: { listChanged: true } },
      setup: (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => {
          listed++;
          return { roots };
        }),
    });
  });
  after(async () => {
    await session?.close();
    work?.remove();
  });

  const projects = async () =>
    structured(await session.client.callTool({ name: "host_context", arguments: {} })).projects as Structured;

  it("takes the client's file: roots as the projects, named by their names or directories, in its order", async () => {
    assert.deepEqual(await projects(), {
      ids: ["web-app", "lib"],
      truncated: false,
      selection: "default",
      implicit: { project_id: "web-app", from: "default" },
    });
    const implicit = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
    assert.equal(structured(implicit).project_id, "web-app", textOf(implicit));
    assert.match(markerOf(implicit), /marker of app/);
    const out = await session.client.callTool({ name: "code_about", arguments: { module: "elsewhere.ts" } });
    assert.equal(codeOf(out), "path_refused", textOf(out));
    // A root that is not a directory is left out, and the operator's log says why.
    assert.match(
      session.stderr(),
      /"event":"projects_from_client_roots".*Invalid root \\"missing\\": .* does not exist/,
    );
  });

  it("reads them again when the client says they changed; a project gone is unknown", async () => {
    const before = listed;
    roots = [{ uri: pathToFileURL(path.join(work.dir, "lib")).href, name: "lib" }];
    await session.client.sendRootsListChanged();
    assert.ok(await eventually(() => listed > before), "roots/list asked again");
    assert.deepEqual((await projects()).ids, ["lib"]);
    const gone = await session.client.callTool({ name: "tech_debt_check", arguments: { project_id: "web-app" } });
    assert.equal(codeOf(gone), "project_unknown");
    assert.deepEqual(structured(gone).projects, ["lib"]);
  });

  it("answers project_ambiguous (no-default) while the client lists no root", async () => {
    const before = listed;
    roots = [];
    await session.client.sendRootsListChanged();
    assert.ok(await eventually(() => listed > before));
    const result = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
    assert.equal(codeOf(result), "project_ambiguous");
    assert.deepEqual(structured(result), {
      error_code: "project_ambiguous",
      message:
        "No project to read: no project is registered; add a folder to the client's roots (the server takes them, --client-roots) or give one with --root <id>=<dir>",
      reason: "no-default",
      projects: [],
      truncated: false,
    });
    assert.deepEqual(await projects(), {
      ids: [],
      truncated: false,
      selection: "none",
      implicit: { error_code: "project_ambiguous", reason: "no-default" },
    });
  });

  it("keeps the configured projects for a client that offers no roots", async () => {
    const plain = await connect({ args: ["serve", "--client-roots", ...work.args] });
    try {
      const facts = structured(await plain.client.callTool({ name: "host_context", arguments: {} }));
      assert.deepEqual((facts.projects as Structured).ids, ["app", "lib"]);
      assert.match(plain.stderr(), /"event":"client_roots_unavailable"/);
    } finally {
      await plain.close();
    }
  });

  it("refuses --client-roots over HTTP, saying why", async () => {
    const result = await runWarden(["serve", "--http", "--client-roots"]);
    assert.notEqual(result.code, 0);
    assert.match(
      result.stderr,
      /--client-roots works over stdio only: an HTTP server answers many clients, each with roots of its own, and asks none of them; give the projects with --root/,
    );
  });
});

describe(`a plugin tool that takes project_id (${runtimeName})`, () => {
  let work: ReturnType<typeof projectsDir>;
  let env: Record<string, string>;
  before(() => {
    work = projectsDir();
    const key = path.join(work.dir, "key");
    sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", "key", "-f", key);
    const fingerprint = sshKeygen("-l", "-E", "sha256", "-f", `${key}.pub`).split(" ")[1];
    const [type, blob] = readFileSync(`${key}.pub`, "utf8").trim().split(" ");
    writeFileSync(
      path.join(work.dir, "allowed_signers"),
      `team@warden.invalid namespaces="warden-plugin-v1" ${type} ${blob}\n`,
    );
    const digest = writeSignedEchoPlugin(path.join(work.dir, "plugins", "where"), "where", key, true);
    writeFileSync(
      path.join(work.dir, "plugins.lock.json"),
      JSON.stringify({
        lockVersion: 1,
        plugins: {
          where: {
            manifestDigest: digest,
            version: "1.0.0",
            principal: "team@warden.invalid",
            fingerprint,
            pinnedAt: "2026-12-01T00:00:00.000Z",
          },
        },
      }),
    );
    env = {
      WARDEN_PLUGINS_DIR: path.join(work.dir, "plugins"),
      WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
      WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "allowed_signers"),
      WARDEN_REVOKED_KEYS: path.join(work.dir, "revoked_keys"),
    };
  });
  after(() => work?.remove());

  it("gets the project the host settled, and its refusals, as a built-in tool does", async () => {
    const session = await connect({ args: ["serve", "--strict-project-selection", ...work.args], env });
    try {
      const named = await session.client.callTool({ name: "where_echo", arguments: { text: "hi", project_id: "lib" } });
      assert.equal(textOf(named), '{"text":"hi","project_id":"lib"}', session.stderr());
      const implicit = await session.client.callTool({ name: "where_echo", arguments: { text: "hi" } });
      assert.equal(codeOf(implicit), "project_ambiguous", textOf(implicit));
      const unknown = await session.client.callTool({ name: "where_echo", arguments: { text: "hi", project_id: "x" } });
      assert.equal(codeOf(unknown), "project_unknown");
    } finally {
      await session.close();
    }
  });
});
