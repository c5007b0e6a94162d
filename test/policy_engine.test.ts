// `--policy-url`: before each call warden's own policy allows, the operator's policy engine decides. The engine here is
// OPA itself (its Go engine, compiled to WebAssembly: test/fixtures/opa/server.mjs) behind OPA's data API, with the
// real Rego policy test/fixtures/opa/authz.rego: one principal may not run gate tools, one project is closed, all else
// is allowed. Every failure of the engine (down, slow, an HTTP error, an answer that is no decision) denies, and each
// decision, with its reasons and the engine's latency, is a ledger row before the call's.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as v from "valibot";
import { LedgerRowSchema } from "../core/governance/ledger.ts";
import {
  connect,
  eventually,
  fixtureToolsDir,
  httpClient,
  type HttpServer,
  repoRoot,
  runtimeName,
  runWarden,
  startHttp,
  tempDir,
  textOf,
} from "./helpers.ts";

/** OPA's data API over a policy file: its port, and the inputs it was asked about. */
interface Opa {
  readonly url: string;
  inputs(): Record<string, unknown>[];
  stop(): void;
}

/** Starts test/fixtures/opa/server.mjs (a node program, whichever runtime runs the tests) on `policy`. */
function startOpa(policy: string): Promise<Opa> {
  const child: ChildProcess = spawn("node", [path.join(repoRoot, "test/fixtures/opa/server.mjs"), policy], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const port = /\{"port":(\d+)\}/.exec(stdout)?.[1];
      if (port === undefined) return;
      resolve({
        url: `http://127.0.0.1:${port}/v1/data/warden/authz`,
        inputs: () => stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line)),
        stop: () => child.kill(),
      });
    });
    child.on("exit", (code) => reject(new Error(`the OPA fixture exited (${code}):\n${stderr}`)));
  });
}

/** Every row of the ledger files in `dir`. */
function ledgerRows(dir: string): Record<string, unknown>[] {
  return readdirSync(dir).filter((f) => f.endsWith(".jsonl")).flatMap((f) =>
    readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((line) => JSON.parse(line))
  );
}

// any: tool results, read field by field.
// deno-lint-ignore no-explicit-any
type Result = any;

const SECRET_ARG = "an argument the policy engine must never see";
/** What warden asks the engine: these fields, exactly. */
const INPUT_FIELDS = ["action", "args_sha256", "plugin", "principal", "project_id", "risk", "tool", "transport"];

describe(`the policy engine, OPA with a Rego policy (${runtimeName})`, () => {
  const dir = tempDir("warden-opa-");
  const ledger = path.join(dir.dir, "ledger");
  const tokensFile = path.join(dir.dir, "tokens");
  let opa: Opa;
  let server: HttpServer;
  const tokens: Record<string, string> = {};
  /** Two projects, the two principals' tokens, the engine. */
  const serverArgs = () => [
    "--root",
    `open=${path.join(dir.dir, "open")}`,
    "--root",
    `secret=${path.join(dir.dir, "secret")}`,
    "--tokens",
    tokensFile,
    "--policy-url",
    opa.url,
    // The WebAssembly OPA takes about half a second a decision; a real one, a millisecond.
    "--policy-timeout",
    "10s",
  ];
  before(async () => {
    for (const project of ["open", "secret"]) {
      mkdirSync(path.join(dir.dir, project));
      writeFileSync(path.join(dir.dir, project, "a.txt"), "one\ntwo\n");
    }
    for (const who of ["alice@example.com", "bob@example.com"]) {
      tokens[who] = (await runWarden(["token", "add", who, "--tokens", tokensFile])).stdout.trim();
    }
    opa = await startOpa(path.join(repoRoot, "test/fixtures/opa/authz.rego"));
    server = await startHttp(serverArgs(), { WARDEN_LEDGER: ledger });
  });
  after(async () => {
    await server?.stop();
    opa?.stop();
    dir.remove();
  });

  const call = async (who: string, name: string, args: Record<string, unknown>): Promise<Result> => {
    const client = await httpClient(server.url, tokens[who]);
    try {
      return await client.callTool({ name, arguments: args });
    } finally {
      await client.close();
    }
  };

  it("denies bob's gate call with the policy's reason, and records the decision before the call", async () => {
    const denied = await call("bob@example.com", "fixture_gate", { argv: ["sh", "-c", `echo "${SECRET_ARG}"`] });
    assert.equal(denied.isError, true);
    assert.equal(denied.structuredContent.error_code, "policy_denied");
    assert.deepEqual(denied.structuredContent.reasons, ["bob@example.com may not run gate tools"]);
    assert.match(
      textOf(denied),
      /refused by the operator's policy: bob@example\.com may not run gate tools.*nothing was run/,
    );
    const rows = ledgerRows(ledger);
    const decision = rows.findLast((row) => row.kind === "decision")!;
    assert.deepEqual(
      { ...decision, time: "", pid: 0, seq: 0, prev: "", argsHash: "", policyMs: typeof decision.policyMs },
      {
        v: 3,
        kind: "decision",
        seq: 0,
        time: "",
        pid: 0,
        tool: "fixture_gate",
        principal: "bob@example.com",
        projectId: null,
        argsHash: "",
        allow: false,
        reasons: ["bob@example.com may not run gate tools"],
        failure: null,
        policyMs: "number",
        prev: "",
      },
    );
    assert.ok((decision.policyMs as number) > 0);
    const callRow = rows.findLast((row) => row.kind === "call")!;
    assert.deepEqual([callRow.tool, callRow.decision, callRow.reason, callRow.principal], [
      "fixture_gate",
      "denied",
      "policy_denied",
      "bob@example.com",
    ]);
    assert.equal(callRow.argsHash, decision.argsHash, "the same arguments");
    assert.ok((callRow.seq as number) > (decision.seq as number), "the decision comes first");
    for (const row of rows) assert.ok(v.safeParse(LedgerRowSchema, row).success, JSON.stringify(row));
  });

  it("lets bob read and alice run the gate: allowed by default", async () => {
    const echoed = await call("bob@example.com", "fixture_echo", { text: "read" });
    assert.equal(echoed.isError, undefined, textOf(echoed));
    const gate = await call("alice@example.com", "fixture_gate", { argv: ["sh", "-c", "echo ran"] });
    assert.ok(!String(gate.structuredContent?.error_code ?? "").startsWith("policy"), textOf(gate));
    const allowed = ledgerRows(ledger).filter((row) => row.kind === "decision" && row.allow === true);
    assert.deepEqual(allowed.map((row) => [row.tool, row.principal]), [
      ["fixture_echo", "bob@example.com"],
      ["fixture_gate", "alice@example.com"],
    ]);
  });

  it("denies the closed project to everyone, names the project in the input, and hides it in host_context", async () => {
    const open = await call("alice@example.com", "line_count", { project_id: "open", path: "a.txt" });
    assert.equal(open.isError, undefined, textOf(open));
    const closed = await call("alice@example.com", "line_count", { project_id: "secret", path: "a.txt" });
    assert.equal(closed.structuredContent.error_code, "policy_denied");
    assert.deepEqual(closed.structuredContent.reasons, ["project secret is closed"]);
    const decisions = ledgerRows(ledger).filter((row) => row.kind === "decision" && row.tool === "line_count");
    assert.deepEqual(decisions.map((row) => [row.projectId, row.allow]), [["open", true], ["secret", false]]);
    // host_context is a built-in tool: a server of the built-ins, same projects, same engine.
    const builtins = await startHttp(serverArgs(), { WARDEN_LEDGER: ledger }, false);
    try {
      const client = await httpClient(builtins.url, tokens["alice@example.com"]);
      const context = await client.callTool({ name: "host_context", arguments: { probe: "secret" } }) as Result;
      await client.close();
      assert.deepEqual(context.structuredContent.projects.ids, ["open"], "the engine hides the closed project");
      assert.deepEqual(
        [context.structuredContent.probe.known, context.structuredContent.probe.problem],
        [false, "not a project of this server: pass one of projects.ids"],
        "a probe does not tell a hidden project from one the server lacks",
      );
    } finally {
      await builtins.stop();
    }
  });

  it("sends the engine who calls what, with the arguments' hash and never the arguments", () => {
    const inputs = opa.inputs();
    assert.ok(inputs.length >= 6, `${inputs.length} inputs`);
    for (const input of inputs) assert.deepEqual(Object.keys(input).sort(), INPUT_FIELDS);
    const gate = inputs.find((input) => input.tool === "fixture_gate" && input.principal === "bob@example.com")!;
    assert.deepEqual({ ...gate, args_sha256: "" }, {
      action: "tools/call",
      tool: "fixture_gate",
      risk: "gate",
      plugin: null,
      principal: "bob@example.com",
      project_id: null,
      args_sha256: "",
      transport: "http",
    });
    assert.match(String(gate.args_sha256), /^sha256:[0-9a-f]{64}$/);
    assert.ok(inputs.some((input) => input.action === "projects/list" && input.project_id === "secret"));
    assert.ok(!JSON.stringify(inputs).includes(SECRET_ARG), "no argument reaches the engine");
  });

  it("leaves a ledger that warden ledger verify finds intact, decision rows and all", async () => {
    const { code, stdout } = await runWarden(["ledger", "verify", "--json", "--ledger", ledger]);
    const report = JSON.parse(stdout);
    assert.equal(report.status, "intact", stdout);
    assert.equal(code, 0);
    assert.ok(ledgerRows(ledger).filter((row) => row.kind === "decision").length >= 4);
  });

  it("judges a stdio server's calls as its operator's (--principal)", async () => {
    const session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      args: ["--principal", "bob@example.com", "--policy-url", opa.url, "--policy-timeout", "10s"],
    });
    try {
      const denied = await session.client.callTool({ name: "fixture_gate", arguments: { argv: ["sh", "-c", "true"] } });
      assert.equal((denied.structuredContent as Result).error_code, "policy_denied");
    } finally {
      await session.close();
    }
    assert.equal(opa.inputs().at(-1)!.transport, "stdio");
  });
});

describe(`the policy engine and jobs (${runtimeName})`, () => {
  it("decides a job when it is started, for its caller, and does not ask again when it runs", async () => {
    const dir = tempDir("warden-opa-jobs-");
    const tokensFile = path.join(dir.dir, "tokens");
    const alice = (await runWarden(["token", "add", "alice@example.com", "--tokens", tokensFile])).stdout.trim();
    const opa = await startOpa(path.join(repoRoot, "test/fixtures/opa/principals.rego"));
    const jobTools = path.join(repoRoot, runtimeName === "deno" ? "test/fixtures/jobs" : "dist/test/fixtures/jobs");
    const server = await startHttp(["--tokens", tokensFile, "--policy-url", opa.url, "--policy-timeout", "10s"], {
      WARDEN_TOOLS_DIR: jobTools,
      WARDEN_LEDGER: path.join(dir.dir, "ledger"),
      WARDEN_JOBS_DIR: path.join(dir.dir, "jobs"),
    }, false);
    try {
      const client = await httpClient(server.url, alice);
      const started = await client.callTool({ name: "fixture_wait_start", arguments: { ms: 10, text: "waited" } });
      const jobId = (started.structuredContent as Result).jobId;
      assert.match(String(jobId), /^job_/, textOf(started));
      let job: Result;
      for (let i = 0; i < 200; i++) {
        const answer = await client.callTool({ name: "fixture_wait_result", arguments: { jobId } });
        assert.ok(!answer.isError, textOf(answer));
        job = JSON.parse(textOf(answer));
        if (job.state !== "queued" && job.state !== "running") break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(job.state, "done", JSON.stringify(job));
      assert.match(JSON.stringify(job.result), /waited/, "the run was not denied as the server's");
      await client.close();
      const asked = opa.inputs().filter((input) => input.action === "tools/call").map((input) => input.tool);
      assert.ok(asked.includes("fixture_wait_start"));
      assert.ok(!asked.includes("fixture_wait"), `the run was asked about again: ${asked}`);
    } finally {
      await server.stop();
      opa.stop();
      dir.remove();
    }
  });
});

describe(`the policy engine, when it does not decide (${runtimeName})`, () => {
  const dir = tempDir("warden-opa-fail-");
  let broken: Opa;
  let odd: Server;
  let oddUrl = "";
  before(async () => {
    broken = await startOpa(path.join(repoRoot, "test/fixtures/opa/broken.rego"));
    // Answers by path: a hang, an undefined document, a result that is no decision, HTML.
    odd = createServer((req, res) => {
      if (req.url === "/hang") return;
      if (req.url === "/huge") {
        res.writeHead(200, { "content-type": "application/json" });
        res.write(`{"result": {"allow": true, "reasons": ["${"x".repeat(1 << 20)}`);
        return void res.end('"]}}');
      }
      if (req.url === "/surrogates") {
        // A lone surrogate, and a reason whose 500th character is the first half of a pair: JSON holds both.
        const reasons = ["\\ud800", "a".repeat(499) + "\\ud83d\\ude00"];
        return void res.writeHead(200, { "content-type": "application/json" })
          .end(`{"result": {"allow": false, "reasons": ["${reasons.join('", "')}"]}}`);
      }
      const body = req.url === "/undefined"
        ? "{}"
        : req.url === "/strange"
        ? JSON.stringify({ result: { allow: "yes" } })
        : "<html>proxy error</html>";
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => odd.listen(0, "127.0.0.1", resolve));
    oddUrl = `http://127.0.0.1:${(odd.address() as { port: number }).port}`;
  });
  after(() => {
    broken.stop();
    odd.closeAllConnections();
    odd.close();
    dir.remove();
  });

  it("denies every call by default, saying why, and records the failure", async () => {
    const cases: [string, string, RegExp][] = [
      [`${oddUrl}/hang`, "250ms", /did not answer within 250 ms \(--policy-timeout\)/],
      ["http://127.0.0.1:9/v1/data/warden/authz", "2s", /could not be reached/],
      [broken.url, "10s", /answered HTTP 500/],
      [`${oddUrl}/undefined`, "2s", /not a decision .*an undefined document answers \{\}/],
      [`${oddUrl}/strange`, "2s", /not a decision/],
      [`${oddUrl}/html`, "2s", /not JSON/],
      [`${oddUrl}/huge`, "2s", /answer is over 65536 bytes/],
    ];
    for (const [url, timeout, why] of cases) {
      const ledger = path.join(dir.dir, `ledger-${cases.findIndex((c) => c[0] === url)}`);
      const session = await connect({
        env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
        args: ["--policy-url", url, "--policy-timeout", timeout],
      });
      let result: Result;
      try {
        result = await session.client.callTool({ name: "fixture_echo", arguments: { text: "x" } });
      } finally {
        await session.close();
      }
      assert.equal(result.isError, true, url);
      assert.equal(result.structuredContent.error_code, "policy_unavailable", url);
      assert.match(textOf(result), why, url);
      assert.match(textOf(result), /without a decision every call is denied/, url);
      assert.ok(await eventually(() => ledgerRows(ledger).some((row) => row.kind === "decision"), 5000));
      const decision = ledgerRows(ledger).find((row) => row.kind === "decision")!;
      assert.equal(decision.allow, false, url);
      assert.match(String(decision.failure), why, url);
    }
  });

  it("takes reasons that are not well-formed text, cut between characters, and the ledger stays whole", async () => {
    const ledger = path.join(dir.dir, "ledger-surrogates");
    const session = await connect({
      env: { WARDEN_TOOLS_DIR: fixtureToolsDir, WARDEN_LEDGER: ledger },
      args: ["--policy-url", `${oddUrl}/surrogates`],
    });
    let result: Result;
    try {
      result = await session.client.callTool({ name: "fixture_echo", arguments: { text: "x" } });
      // The server lives on: a second call is answered too.
      await session.client.callTool({ name: "fixture_echo", arguments: { text: "y" } });
    } finally {
      await session.close();
    }
    assert.equal(result.structuredContent.error_code, "policy_denied");
    assert.deepEqual(result.structuredContent.reasons, ["\ufffd", "a".repeat(499)]);
    assert.ok(await eventually(() => ledgerRows(ledger).filter((row) => row.kind === "call").length === 2, 5000));
    const decision = ledgerRows(ledger).find((row) => row.kind === "decision")!;
    assert.deepEqual(decision.reasons, ["\ufffd", "a".repeat(499)]);
    const { stdout } = await runWarden(["ledger", "verify", "--json", "--ledger", ledger]);
    assert.equal(JSON.parse(stdout).status, "intact", stdout);
  });

  it("refuses a --policy-url or --policy-timeout it cannot use", async () => {
    for (
      const [args, why] of [
        [["--policy-url", "opa:8181/v1/data/x"], /Invalid --policy-url: expected the http or https URL of a decision/],
        [["--policy-url", "http://127.0.0.1:8181/v1/data/x", "--policy-timeout", "1m"], /Invalid --policy-timeout/],
      ] as const
    ) {
      const { code, stderr } = await runWarden(["tools", ...args]);
      assert.equal(code, 2, args.join(" "));
      assert.match(stderr, why);
    }
  });
});
