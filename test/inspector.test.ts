// The MCP Inspector's CLI, the ecosystem's own client for poking a server, against `warden serve --http`: it lists
// the catalog, calls tools in both protocol eras, sends a bearer token, and finds nothing to warn about in the
// built-in tools' schemas (--strict). It is installed apart, in .cache/inspector (.ci/run does it): its web UI and
// terminal UI bring a hundred megabytes no user of warden needs.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { type HttpServer, repoRoot, runtimeName, runWarden, skipOrFail, startHttp, tempDir } from "./helpers.ts";

/** The version .ci/run installs; the one these tests were written against. */
const INSPECTOR_VERSION = "2.12.0";
const INSPECTOR = path.join(
  repoRoot,
  ".cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
);
const INSTALL =
  `npm install --no-audit --no-fund --prefix .cache/inspector @modelcontextprotocol/inspector@${INSPECTOR_VERSION}`;

/** Skips (fails under CI) where the Inspector is not installed, saying how to install it. */
function inspectorOrSkip(t: { skip(message?: string): void }): boolean {
  if (existsSync(INSPECTOR)) return true;
  skipOrFail(t, `the MCP Inspector is not installed in .cache/inspector; install it with: ${INSTALL}`);
  return false;
}

/** Runs the Inspector's CLI against `url` with `args`, with a home of its own (it keeps a catalog there). */
function inspect(
  url: URL,
  home: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The Inspector is a node program, whichever runtime serves warden.
  const child = spawn("node", [
    INSPECTOR,
    "--cli",
    String(url),
    "--format",
    "json",
    "--connect-timeout",
    "20000",
    ...args,
  ], { env: { PATH: process.env.PATH ?? "", HOME: home, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** The JSON result the CLI printed, or a failure that shows what it said. */
function resultOf(run: { code: number | null; stdout: string; stderr: string }): Record<string, unknown> {
  assert.equal(run.code, 0, `the Inspector failed:\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe(`the MCP Inspector CLI against serve --http (${runtimeName})`, () => {
  const dir = tempDir("warden-inspector-");
  const tokensFile = path.join(dir.dir, "tokens");
  let server: HttpServer;
  let token: string;
  before(async () => {
    if (!existsSync(INSPECTOR)) return;
    token = (await runWarden(["token", "add", "inspector@example.com", "--tokens", tokensFile])).stdout.trim();
    server = await startHttp(["--tokens", tokensFile], { WARDEN_LEDGER: path.join(dir.dir, "ledger") }, false);
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0);
    dir.remove();
  });
  const auth = () => ["--header", `Authorization: Bearer ${token}`];

  it("lists the frozen catalog, with no schema the Inspector's portability check warns about", async (t) => {
    if (!inspectorOrSkip(t)) return;
    const run = await inspect(server.url, dir.dir, [...auth(), "--method", "tools/list", "--strict"]);
    const { tools } = (resultOf(run) as { result: { tools: { name: string }[] } }).result;
    const expected = JSON.parse(readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8")).tools.map((
      tool: { name: string },
    ) => tool.name);
    assert.deepEqual(tools.map((tool) => tool.name), expected);
    assert.doesNotMatch(run.stderr, /warning|error/i, `--strict found problems:\n${run.stderr}`);
  });

  for (const era of ["legacy", "modern"] as const) {
    it(`calls a tool in the ${era} era and reads the answer`, async (t) => {
      if (!inspectorOrSkip(t)) return;
      const run = await inspect(server.url, dir.dir, [
        ...auth(),
        "--protocol-era",
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "host_context",
      ]);
      const { result } = resultOf(run) as {
        result: { structuredContent: { transport: string; protocolVersion: string }; isError?: boolean };
      };
      assert.equal(result.isError, undefined);
      assert.equal(result.structuredContent.transport, "http");
      assert.equal(result.structuredContent.protocolVersion, era === "modern" ? "2026-07-28" : "2025-11-25");
    });
  }

  it("shows a tool's refusal as the tool's error, with its code", async (t) => {
    if (!inspectorOrSkip(t)) return;
    const run = await inspect(server.url, dir.dir, [
      ...auth(),
      "--method",
      "tools/call",
      "--tool-name",
      "code_about",
      "--tool-arg",
      "project_id=nowhere",
      "--tool-arg",
      "module=x.ts",
    ]);
    // The CLI prints the result, then exits non-zero for a result that is an error.
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /"code":"tool_is_error"/);
    const { result } = JSON.parse(run.stdout) as {
      result: { isError: boolean; structuredContent: { error_code: string; projects: string[] } };
    };
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.error_code, "project_unknown");
    assert.deepEqual(result.structuredContent.projects, ["default"]);
  });

  it("is refused without the token, and says so", async (t) => {
    if (!inspectorOrSkip(t)) return;
    // --stored-auth-only: without it the CLI, told 401, would start an interactive OAuth login.
    const run = await inspect(server.url, dir.dir, ["--stored-auth-only", "--method", "tools/list"]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /"code":"auth_required"/);
    assert.match(run.stderr, /Unauthorized: send .*Authorization: Bearer <token>.*warden token add <principal>/);
  });
});
