// The package as people install it: `npm pack` of this checkout, installed outside it (as a dependency, globally into
// a prefix of its own, and through npx), then started as an agent starts it, on node and on deno, and driven with
// the SDK's Client. One pack and one install of each kind for the whole file: npm needs the registry for the
// dependencies (its cache first).
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.d.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.d.ts"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { BWRAP_MISSING, bwrapPath, repoRoot, runtimeName, skipOrFail, tempDir, textOf } from "./helpers.ts";

const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { name: string; version: string };
const NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];

/**
 * The environment of everything this file starts: this process's, less npm's variables (`npm test` sets
 * npm_config_local_prefix and the like, which would point npm back at this checkout) and warden's settings.
 */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(npm_|WARDEN_|XDG_)/i.test(key)) env[key] = value;
  }
  return { ...env, ...USER_ENV, ...extra };
}

/** PATH without a deno in it, as on a machine where none is installed (npm test puts node_modules/.bin first). */
const PATH_WITHOUT_DENO = (process.env.PATH ?? "").split(path.delimiter)
  .filter((dir) => !existsSync(path.join(dir, "deno"))).join(path.delimiter);

/** Runs `command` to its end; rejects with its output when it fails. */
function run(command: string, args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const child = spawn(command, args, { cwd, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) =>
    child.on(
      "close",
      (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${stderr}`)),
    )
  );
}

/** Every file and directory under `dir`, with its size and modification time: what a write would change. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort().map((rel) => {
    const stat = lstatSync(path.join(dir, rel));
    return `${rel} ${stat.size} ${stat.mtimeMs}`;
  });
}

const work = tempDir("warden-package-");
/** Scratch state of the tests that set a path by its flag. */
const state = path.join(work.dir, "state");
/**
 * The user's directories of every installed warden here (XDG's, which warden takes before HOME's; HOME stays, for
 * npm's cache): warden's defaults, its config and state and never the package, land here, never in the real user's.
 */
const home = path.join(work.dir, "home");
const USER_ENV = {
  XDG_CONFIG_HOME: path.join(home, ".config"),
  XDG_STATE_HOME: path.join(home, ".local", "state"),
};
const userState = path.join(USER_ENV.XDG_STATE_HOME, "warden");
/** The root the tools read: one file with one TODO. */
const root = path.join(work.dir, "root");
const ROOT_FLAGS = ["--root", `default=${root}`];
/**
 * A project that depends on the package and on deno (the optional peer that plugins and the deno command need), and a
 * global prefix that has the package alone, as `npx -y` and `npm i -g` install it.
 */
const project = path.join(work.dir, "project");
const prefix = path.join(work.dir, "global");
const empty = path.join(work.dir, "empty");
let tarball = "";
let packed: string[] = [];
let ready: Promise<void> = Promise.resolve();

const installed = () => path.join(project, "node_modules", pkg.name);
const globalInstalled = () => path.join(prefix, "lib", "node_modules", pkg.name);

before(async () => {
  mkdirSync(path.join(state, "plugins"), { recursive: true });
  mkdirSync(root, { recursive: true });
  mkdirSync(project, { recursive: true });
  mkdirSync(empty, { recursive: true });
  writeFileSync(path.join(root, "main.ts"), "// TODO: ship it\nexport const x = 1;\n");
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "project", private: true }));
  // What npm test built (scripts/test.mjs builds first): packing with scripts would rebuild dist/ under the suites
  // running beside this one.
  if (!existsSync(path.join(repoRoot, "dist/core/main.js")) || !existsSync(path.join(repoRoot, "dist/vendor"))) {
    throw new Error("dist/ is not built: run npm run build (npm test builds it)");
  }
  const out = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work.dir], repoRoot);
  const [info] = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(work.dir, info.filename);
  packed = info.files.map((file) => file.path).sort();
  ready = Promise.all([
    run("npm", ["install", ...NPM_FLAGS, tarball, "deno"], project),
    run("npm", ["install", "--global", "--prefix", prefix, ...NPM_FLAGS, tarball], work.dir),
  ]).then(() => {});
  await ready;
});

after(() => {
  // npm exec installed the tarball into npm's cache (_npx/<hash>/, which names the spec): scratch too.
  const cache = spawnSync("npm", ["config", "get", "cache"], { env: cleanEnv(), encoding: "utf8" }).stdout.trim();
  const npx = path.join(cache, "_npx");
  for (const name of existsSync(npx) ? readdirSync(npx) : []) {
    const manifest = path.join(npx, name, "package.json");
    if (existsSync(manifest) && readFileSync(manifest, "utf8").includes(work.dir)) {
      rmSync(path.join(npx, name), { recursive: true, force: true });
    }
  }
  work.remove();
});

/** An SDK Client connected to `command` over stdio, started in `cwd`, with the server's stderr. */
async function connect(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ client: Client; stderr: () => string; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({ command, args: [...args], cwd, env: cleanEnv(env), stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => (stderr += new TextDecoder().decode(chunk)));
  const client = new Client({ name: "warden-package-test", version: "1.0.0" }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (error) {
    await transport.close().catch(() => {});
    throw new Error(`${(error as Error).message}; its stderr:\n${stderr}`);
  }
  return { client, stderr: () => stderr, close: () => client.close() };
}

/** initialize (by connecting), tools/list and one read tool's call on the temp root: what an agent does first. */
async function drive(command: string, args: readonly string[], cwd: string, env: Record<string, string> = {}) {
  const session = await connect(command, args, cwd, env);
  try {
    assert.equal(session.client.getServerVersion()?.name, "warden");
    assert.equal(session.client.getServerVersion()?.version, pkg.version);
    const { tools } = await session.client.listTools();
    assert.ok(tools.some((tool) => tool.name === "tech_debt_check"), JSON.stringify(tools.map((tool) => tool.name)));
    const result = await session.client.callTool({ name: "tech_debt_check", arguments: {} });
    assert.ok(!result.isError, textOf(result));
    assert.equal(JSON.parse(textOf(result)).totals.TODO, 1, textOf(result));
    return session.stderr();
  } finally {
    await session.close();
  }
}

/** The deno command warden prints for the install at `bin` (`warden command --runtime deno --json`). */
function denoCommand(bin: string, cwd: string): { command: string; args: string[]; env: Record<string, string> } {
  const printed = spawnSync(bin, ["command", "--runtime", "deno", "--json", ...ROOT_FLAGS], {
    cwd,
    env: cleanEnv(),
    encoding: "utf8",
  });
  assert.equal(printed.status, 0, printed.stderr);
  return JSON.parse(printed.stdout);
}

describe(`the package, packed and installed (${runtimeName})`, () => {
  it("has deno.json's name, version and exports, its version package.json's", () => {
    const deno = JSON.parse(readFileSync(path.join(repoRoot, "deno.json"), "utf8"));
    assert.equal(deno.version, pkg.version, "deno.json and package.json carry one version");
    assert.match(deno.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/, "a JSR scope and name");
    assert.equal(deno.exports, "./core/main.ts");
  });

  it("packs the build, the source deno runs, schema, the example plugin, README and LICENSE, and nothing else", () => {
    for (
      const file of [
        "package.json",
        "README.md",
        "LICENSE",
        "deno.json",
        "dist/core/main.js",
        "dist/vendor/mcp-sdk.js",
        "dist/tools/_builtin.js",
        "core/main.ts",
        "tools/host_context.ts",
        "schema/catalog.json",
        "plugins/licenses/manifest.json",
        "plugins/licenses/manifest.json.sig",
        "plugins/licenses/plugin.js",
      ]
    ) assert.ok(packed.includes(file), `${file} is packed`);
    const stray = packed.filter((file) =>
      !/^(package\.json|README\.md|LICENSE|deno\.json)$|^(dist\/(core|tools|chunks|vendor)|core|tools|schema|plugins\/licenses)\//
        .test(file) || /\.test\.ts$|\.map$|\/corpus\//.test(file)
    );
    assert.deepEqual(stray, [], "only what runs is packed");
  });

  it("installs as packed: no build at install (npm runs prepare for links and git, not a tarball), no scripts/", async () => {
    await ready;
    const files = readdirSync(installed(), { recursive: true, encoding: "utf8" })
      .filter((rel) => lstatSync(path.join(installed(), rel)).isFile()).map((rel) => rel.split(path.sep).join("/"));
    assert.deepEqual(files.sort(), packed);
  });

  it("installed as a dependency, serves stdio on node and on the deno command it prints", async () => {
    await ready;
    const bin = path.join(project, "node_modules", ".bin", "warden");
    await drive(bin, [...ROOT_FLAGS], project);
    const deno = denoCommand(bin, project);
    assert.ok(deno.args.includes(path.join(installed(), "dist", "core", "main.js")), "deno runs the build");
    await drive(deno.command, deno.args, project, deno.env);
  });

  it("installed globally without deno, warden tools lists the tools; node serves, and deno from PATH", async () => {
    await ready;
    const bin = path.join(prefix, "bin", "warden");
    assert.ok(!existsSync(path.join(globalInstalled(), "node_modules", "deno")), "deno is an optional peer");
    const tools = spawnSync(bin, ["tools"], {
      cwd: empty,
      env: cleanEnv({ PATH: PATH_WITHOUT_DENO }),
      encoding: "utf8",
    });
    assert.equal(tools.status, 0, tools.stderr);
    assert.match(tools.stdout, /^host_context +read /m);
    await drive(bin, [...ROOT_FLAGS], empty, { PATH: PATH_WITHOUT_DENO });
    // deno installed on its own: the one in PATH.
    const denoDir = path.join(work.dir, "deno-bin");
    mkdirSync(denoDir, { recursive: true });
    symlinkSync(realpathSync(path.join(repoRoot, "node_modules", ".bin", "deno")), path.join(denoDir, "deno"));
    const withDeno = `${denoDir}${path.delimiter}${PATH_WITHOUT_DENO}`;
    const printed = spawnSync(bin, ["command", "--runtime", "deno", "--json", ...ROOT_FLAGS], {
      cwd: empty,
      env: cleanEnv({ PATH: withDeno }),
      encoding: "utf8",
    });
    assert.equal(printed.status, 0, printed.stderr);
    const deno = JSON.parse(printed.stdout);
    assert.equal(deno.command, path.join(denoDir, "deno"));
    assert.ok(deno.args.includes(path.join(globalInstalled(), "dist", "core", "main.js")), "deno runs the build");
    await drive(deno.command, deno.args, empty, { ...deno.env, PATH: withDeno });
  });

  it("without deno, a plugin that passed every check is refused as deno-missing, saying how to install one", async () => {
    await ready;
    const bin = path.join(prefix, "bin", "warden");
    const plugins = path.join(globalInstalled(), "plugins");
    const trust = [
      "--plugins-dir",
      plugins,
      "--allowed-signers",
      path.join(repoRoot, "test", "fixtures", "trust", "allowed_signers"),
      "--plugins-lock",
      path.join(state, "no-deno.lock.json"),
      "--revoked-keys",
      path.join(state, "revoked_keys"),
      "--ledger",
      path.join(state, "ledger"),
      "--jobs-dir",
      path.join(state, "jobs"),
    ];
    const env = { PATH: PATH_WITHOUT_DENO };
    const pinned = spawnSync(bin, ["plugin", "trust", path.join(plugins, "licenses"), ...trust], {
      cwd: empty,
      env: cleanEnv(env),
      encoding: "utf8",
    });
    assert.equal(pinned.status, 0, pinned.stderr);
    const session = await connect(bin, [...ROOT_FLAGS, ...trust], empty, env);
    try {
      const listed = await session.client.callTool({ name: "extension_list", arguments: {} });
      const licenses = JSON.parse(textOf(listed)).extensions.find((e: { id: string }) => e.id === "licenses");
      assert.equal(licenses.status, "deno-missing");
      assert.equal(
        licenses.reason,
        "it passed every check, but no deno is here to run it (neither warden's optional deno package nor a deno in PATH)",
      );
      assert.equal(
        licenses.fix,
        'run "npm install deno" where warden is installed, or install deno (https://docs.deno.com/runtime/) in PATH',
      );
      // Refused, so not served: its tools are not listed, and a call names the tool as unknown.
      const { tools } = await session.client.listTools();
      assert.ok(!tools.some((tool) => tool.name === "licenses_list"));
      await assert.rejects(
        session.client.callTool({ name: "licenses_list", arguments: {} }),
        /Tool "licenses_list" is not served: its plugin "licenses" is refused \(deno-missing: .*\); run "npm install deno" where warden is installed/,
      );
      assert.match(session.stderr(), /"event":"plugin_refused","plugin":"licenses","status":"deno-missing"/);
    } finally {
      await session.close();
    }
  });

  it("registers itself as npx -y <name>@<version>: the startup line and warden command", async () => {
    await ready;
    const bin = path.join(project, "node_modules", ".bin", "warden");
    const printed = spawnSync(bin, ["command", "--json"], { cwd: project, env: cleanEnv(), encoding: "utf8" });
    assert.equal(printed.status, 0, printed.stderr);
    assert.deepEqual(JSON.parse(printed.stdout), { command: "npx", args: ["-y", `${pkg.name}@${pkg.version}`] });
    const stderr = await drive(bin, [...ROOT_FLAGS], project);
    const line = stderr.split("\n").find((l) => l.includes('"event":"ready"'));
    assert.ok(line, stderr);
    const { register } = JSON.parse(line);
    assert.ok(
      register.claudeCode.startsWith(`claude mcp add warden -- npx -y ${pkg.name}@${pkg.version} --root `),
      register.claudeCode,
    );
    assert.deepEqual(register.mcpJson.mcpServers.warden.args.slice(0, 2), ["-y", `${pkg.name}@${pkg.version}`]);
  });

  it("npx answers initialize from an empty directory", async () => {
    await ready;
    // npm exec takes a tarball only as --package; the registry form is npx -y mcp-warden.
    await drive("npm", [
      "exec",
      "--yes",
      ...NPM_FLAGS,
      "--package",
      tarball,
      "--",
      "warden",
      ...ROOT_FLAGS,
    ], empty);
  });

  it("from an empty directory with npx: a plugin authored, built, signed, trusted into .warden/ and called; the ledger in the user's state directory; nothing written in the package", async () => {
    await ready;
    const fresh = path.join(work.dir, "fresh");
    mkdirSync(fresh);
    writeFileSync(path.join(fresh, "main.ts"), "export const x = 1;\n");
    const npx = (args: readonly string[], env: Record<string, string> = {}) =>
      run("npm", ["exec", "--yes", ...NPM_FLAGS, "--package", tarball, "--", "warden", ...args], fresh, env);
    await npx(["plugin", "new", "hello", "--project"]);
    // The project has no node_modules: the build takes valibot from warden's own dependencies.
    assert.ok(!existsSync(path.join(fresh, "node_modules")));
    await npx(["plugin", "build", ".warden/plugins/hello"]);
    const key = path.join(work.dir, "fresh-key");
    const keygen = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "me", "-f", key], {
      encoding: "utf8",
    });
    assert.equal(keygen.status, 0, keygen.stderr);
    await npx(["plugin", "sign", ".warden/plugins/hello", "--key", key]);
    await npx(["plugin", "allow-signer", "me@example.com", "--key", `${key}.pub`, "--project"]);
    await npx(["plugin", "trust", ".warden/plugins/hello"]);
    assert.deepEqual(readdirSync(path.join(fresh, ".warden")).sort(), [
      "allowed_signers",
      "plugins",
      "plugins.lock.json",
    ]);
    // npx's install of the package, in npm's cache: what a write by warden would change.
    const cache = spawnSync("npm", ["config", "get", "cache"], { env: cleanEnv(), encoding: "utf8" }).stdout.trim();
    const installs = readdirSync(path.join(cache, "_npx")).map((name) => path.join(cache, "_npx", name))
      .filter((dir) => readFileSync(path.join(dir, "package.json"), "utf8").includes(work.dir));
    assert.equal(installs.length, 1, installs.join(", "));
    const pkgDir = path.join(installs[0], "node_modules", pkg.name);
    const before = listing(pkgDir);
    // Plugins run under deno: the machine has one in PATH.
    const denoDir = path.join(work.dir, "deno-bin-fresh");
    mkdirSync(denoDir);
    symlinkSync(realpathSync(path.join(repoRoot, "node_modules", ".bin", "deno")), path.join(denoDir, "deno"));
    const session = await connect(
      "npm",
      ["exec", "--yes", ...NPM_FLAGS, "--package", tarball, "--", "warden"],
      fresh,
      { PATH: `${denoDir}${path.delimiter}${PATH_WITHOUT_DENO}` },
    );
    try {
      const { tools } = await session.client.listTools();
      assert.ok(tools.some((tool) => tool.name === "hello_count"), JSON.stringify(tools.map((tool) => tool.name)));
      const counted = await session.client.callTool({ name: "hello_count", arguments: {} });
      assert.ok(!counted.isError, textOf(counted));
      assert.deepEqual(counted.structuredContent, { root: "default", files: 1 }, textOf(counted));
      const listed = await session.client.callTool({ name: "extension_list", arguments: {} });
      const hello = JSON.parse(textOf(listed)).extensions.find((e: { id: string }) => e.id === "hello");
      assert.deepEqual([hello.status, hello.scope], ["verified", "project"], JSON.stringify(hello));
    } finally {
      await session.close();
    }
    assert.ok(
      readdirSync(path.join(userState, "ledger")).some((name) => name.endsWith(".jsonl")),
      "the ledger is in the user's state directory",
    );
    assert.deepEqual(listing(pkgDir), before, "nothing was written in the package");
  });

  it("runs with its install directory read-only, on node and deno, and writes nothing in it", async (t) => {
    const bwrap = bwrapPath();
    if (!bwrap) return skipOrFail(t, BWRAP_MISSING);
    await ready;
    const dir = installed();
    const sandbox = (
      command: string,
      args: readonly string[],
    ) => ["--dev-bind", "/", "/", "--ro-bind", dir, dir, "--", command, ...args];
    // As root, permissions do not stop a write: the read-only bind does.
    const touch = spawnSync(bwrap, sandbox("touch", [path.join(dir, "written")]), { encoding: "utf8" });
    assert.notEqual(touch.status, 0, "the bind is read-only");
    const before = listing(dir);
    const bin = path.join(project, "node_modules", ".bin", "warden");
    await drive(bwrap, sandbox(bin, [...ROOT_FLAGS]), project);
    const deno = denoCommand(bin, project);
    await drive(bwrap, sandbox(deno.command, deno.args), project, deno.env);
    assert.deepEqual(listing(dir), before, "nothing was written in the package");
    assert.ok(
      readdirSync(path.join(userState, "ledger")).some((name) => name.endsWith(".jsonl")),
      "the ledger went to the user's state directory",
    );
  });
});
