import { before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { initPlatform, platform } from "./platform/mod.ts";
import { parseConfig } from "./config.ts";

before(async () => {
  await initPlatform();
});

const envOf = (vars: Record<string, string>) => (name: string) => vars[name];

test("parseConfig: path defaults under the user's directories and the first root, each with its source", () => {
  const { config } = parseConfig(
    ["--root", "app=/work/app", "--ledger", "/var/ledger"],
    envOf({ HOME: "/home/a", WARDEN_JOBS_DIR: "/var/jobs" }),
    "linux",
  );
  assert.deepEqual(
    [config.pluginsDir, config.allowedSignersFile, config.lockFile, config.projectDir, config.acceptedProjectsFile],
    [
      "/home/a/.config/warden/plugins",
      "/home/a/.config/warden/allowed_signers",
      "/home/a/.config/warden/plugins.lock.json",
      "/work/app/.warden",
      "/home/a/.local/state/warden/accepted_projects.json",
    ],
  );
  assert.deepEqual(config.sources, {
    pluginsDir: "user config",
    allowedSignersFile: "user config",
    revokedKeysFile: "user config",
    lockFile: "user config",
    projectDir: "project",
    ledgerDir: "--ledger",
    jobsDir: "WARDEN_JOBS_DIR",
    tokensFile: "user config",
    approversSignersFile: "user config",
  });
  assert.equal(config.tokensFile, "/home/a/.config/warden/tokens");
  assert.equal(config.approversSignersFile, "/home/a/.config/warden/approvers_allowed_signers");
  assert.equal(config.ledgerDir, "/var/ledger");
  assert.equal(config.jobsDir, "/var/jobs");
  const named = parseConfig(["--project-dir", "shared"], envOf({ HOME: "/h" }), "linux").config;
  assert.equal(named.projectDir, path.join(platform().cwd(), "shared"));
  assert.equal(named.sources.projectDir, "--project-dir");
});

test("parseConfig: without HOME, a default under a user directory throws when read, and only then", () => {
  const { config } = parseConfig(["--ledger", "/l"], envOf({}), "linux");
  assert.equal(config.ledgerDir, "/l");
  assert.equal(config.projectDir, path.join(platform().cwd(), ".warden"));
  assert.throws(
    () => config.pluginsDir,
    /^WardenError: Cannot find the user config directory: HOME \(or XDG_CONFIG_HOME\) is not set; /,
  );
  assert.throws(
    () => config.jobsDir,
    /Cannot find the user state directory: HOME \(or XDG_STATE_HOME\) is not set; set HOME or XDG_STATE_HOME, or name the files with --ledger and --jobs-dir/,
  );
  assert.throws(() => config.acceptedProjectsFile, /user state directory/);
  assert.ok(Object.isFrozen(config));
});

test("parseConfig: HTTP settings, their defaults, lists and normal forms", () => {
  const plain = parseConfig([], envOf({ HOME: "/h" }), "linux").config.http;
  assert.deepEqual(plain, {
    enabled: false,
    host: "127.0.0.1",
    port: 8790,
    allowedHosts: [],
    allowedOrigins: [],
    maxBodyBytes: 4 << 20,
    maxCallsPerPrincipal: 16,
    requestTimeoutMs: 70_000,
    authorization: null,
  });
  // Issuer and resource kept as written (tokens' iss and aud are compared as strings); scopes from either source.
  const oauthOf = (argv: string[], env: Record<string, string> = {}) =>
    parseConfig(argv, envOf({ HOME: "/h", ...env }), "linux").config.http.authorization;
  assert.deepEqual(
    oauthOf(["--authorization-server", "https://id.example.com/", "--resource", "https://w.example/mcp"], {
      WARDEN_REQUIRED_SCOPES: "mcp:tools, mcp:gate",
    }),
    { issuer: "https://id.example.com/", resource: "https://w.example/mcp", requiredScopes: ["mcp:tools", "mcp:gate"] },
  );
  assert.equal(
    oauthOf([], { WARDEN_AUTHORIZATION_SERVER: "http://[::1]:8080", WARDEN_RESOURCE: "http://localhost/mcp" })?.issuer,
    "http://[::1]:8080",
    "http on a loopback address: an authorization server on this machine",
  );
  assert.throws(
    () => oauthOf([], { WARDEN_AUTHORIZATION_SERVER: "https://id.example.com?x=1", WARDEN_RESOURCE: "https://w/" }),
    /Invalid WARDEN_AUTHORIZATION_SERVER: expected an https URL .*no query or fragment, received/,
  );
  const given = parseConfig(
    [
      "--http",
      "--host",
      "[::1]",
      "--allowed-host",
      "Warden.Example.com,b.example",
      "--allowed-host",
      "c.example",
      "--max-body",
      "512KiB",
      "--call-timeout",
      "5s",
    ],
    envOf({
      HOME: "/h",
      WARDEN_ALLOWED_ORIGINS: "https://App.Example.com, http://localhost:6274",
      WARDEN_HTTP_PORT: "0",
    }),
    "linux",
  ).config.http;
  assert.equal(given.enabled, true);
  assert.equal(given.host, "::1");
  assert.equal(given.port, 0);
  assert.deepEqual(given.allowedHosts, ["warden.example.com", "b.example", "c.example"]);
  assert.deepEqual(given.allowedOrigins, ["https://app.example.com", "http://localhost:6274"]);
  assert.equal(given.maxBodyBytes, 512 * 1024);
  assert.equal(given.requestTimeoutMs, 15_000, "the call timeout and 10 s");
  assert.equal(parseConfig([], envOf({ HOME: "/h", WARDEN_HTTP: "1" }), "linux").config.http.enabled, true);
  assert.throws(
    () => parseConfig([], envOf({ HOME: "/h", WARDEN_HTTP: "yes" }), "linux"),
    /Invalid WARDEN_HTTP: expected 1 or 0, received "yes"/,
  );
  // Every on/off setting is read the one way: 1/true, 0/false, anything else refused.
  const strictOf = (env: Record<string, string>, argv: string[] = []) =>
    parseConfig(argv, envOf({ HOME: "/h", ...env }), "linux").config.strictProjectSelection;
  assert.equal(strictOf({}), false);
  assert.equal(strictOf({}, ["--strict-project-selection"]), true);
  assert.equal(strictOf({ WARDEN_STRICT_PROJECT_SELECTION: "true" }), true);
  assert.equal(strictOf({ WARDEN_STRICT_PROJECT_SELECTION: "0" }), false);
  assert.throws(
    () => strictOf({ WARDEN_STRICT_PROJECT_SELECTION: "on" }),
    /Invalid WARDEN_STRICT_PROJECT_SELECTION: expected 1 or 0, received "on"/,
  );
  assert.throws(
    () => parseConfig([], envOf({ HOME: "/h", WARDEN_STRICT_PLUGINS: "yes" }), "linux"),
    /Invalid WARDEN_STRICT_PLUGINS: expected 1 or 0, received "yes"/,
  );
  assert.throws(
    () => parseConfig([], envOf({ HOME: "/h", WARDEN_ALLOWED_ORIGINS: "https://a.example/x" }), "linux"),
    /Invalid WARDEN_ALLOWED_ORIGINS: expected an origin/,
  );
  assert.throws(() => parseConfig(["--max-body", "65MiB"], envOf({ HOME: "/h" }), "linux"), /Invalid --max-body/);
  assert.throws(() => parseConfig(["--host", "a host"], envOf({ HOME: "/h" }), "linux"), /Invalid --host/);
});

test("parseConfig: approvals' settings, from flags and variables, and what they refuse", () => {
  const env = envOf({ HOME: "/h", WARDEN_APPROVERS: "carol@example.com, dave@example.com" });
  const { config } = parseConfig(["--require-approval", "repo", "--require-approval", "unisolated"], env, "linux");
  assert.deepEqual(config.requireApproval, ["repo", "unisolated"]);
  assert.deepEqual(config.approvers, ["carol@example.com", "dave@example.com"]);
  assert.equal(config.approversSignersFile, "/h/.config/warden/approvers_allowed_signers");
  assert.equal(
    parseConfig(["--approvers-signers", "/etc/approvers"], env, "linux").config.approversSignersFile,
    "/etc/approvers",
  );
  assert.throws(
    () => parseConfig(["--require-approval", "repo,tests"], env, "linux"),
    /^WardenError: Invalid --require-approval: expected run_checks groups or unisolated \(default, typescript, lint, hygiene, repo, unisolated\) separated by commas, received "tests"; for example --require-approval repo$/,
  );
  assert.throws(
    () => parseConfig([], envOf({ HOME: "/h", WARDEN_APPROVERS: "carol example" }), "linux"),
    /Invalid WARDEN_APPROVERS: expected principals, one word each, separated by commas, received "carol example"/,
  );
});
