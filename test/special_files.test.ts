// No file-system operation of the host may block on a special file. A FIFO, a socket or a device, inside a root or
// where the host reads its own files (a plugin's manifest, signature and entry, the trust store, the lock, the
// ledger directory), is refused with an error naming its kind, promptly, and the server keeps answering; a file
// larger than the cap is refused without being read, and one growing while read is read up to the size it had.
// For built-in tools, for plugins (per call, and at startup), and for the CLI. Each case asserts the answer came
// well before the SDK's own request timeout and that a ping is answered after it.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { canonicalJson } from "../core/canonical_json.ts";
import { parsePrivateKey, signMessage } from "../core/plugins/trust/sshsig.ts";
import {
  childEnv,
  connect,
  fixtureToolsDir,
  mkfifo,
  onDeno,
  repoRoot,
  runtimeName,
  type Session,
  skipOrFail,
  tempDir,
  textOf,
  wardenCommand,
} from "./helpers.ts";

const TRUST = path.join(repoRoot, "test/fixtures/trust");
const FINGERPRINT = "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE";
/** Well under the SDK's 60 s request timeout, well over any honest answer here. */
const PROMPT_MS = 10_000;
const FOUR_GIB = 4 * 1024 * 1024 * 1024;

/** Unix sockets listening at the given paths; closed by the returned function. */
async function listenAt(files: string[]): Promise<() => Promise<void>> {
  const servers: Server[] = [];
  for (const file of files) {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(file, () => resolve()));
    servers.push(server);
  }
  return () => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => {});
}

/** A character device (like /dev/zero) and a block device, where this process may make them (root, CAP_MKNOD). */
function makeDevices(dir: string): { char: string | null; block: string | null; why: string } {
  const char = path.join(dir, "zero-device");
  const block = path.join(dir, "block-device");
  const c = spawnSync("mknod", [char, "c", "1", "5"], { encoding: "utf8" });
  const b = spawnSync("mknod", [block, "b", "7", "200"], { encoding: "utf8" });
  return {
    char: c.status === 0 ? char : null,
    block: b.status === 0 ? block : null,
    why: `mknod needs root or CAP_MKNOD: ${(c.stderr || b.stderr || "").trim()}`,
  };
}

/** A file of `size` bytes that takes no disk: a hole. */
function sparse(file: string, size: number): void {
  const fd = openSync(file, "w");
  closeSync(fd);
  const made = spawnSync("truncate", ["-s", String(size), file]);
  if (made.status !== 0) throw new Error(`truncate failed: ${made.stderr}`);
}

/** Times `work`, which must settle within PROMPT_MS. */
async function promptly<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work;
  const ms = performance.now() - start;
  assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
  return { value, ms };
}

/** Runs a warden command, which must exit within PROMPT_MS: one that hangs is killed and fails the test. */
async function runWarden(
  args: string[],
  options: { env: Record<string, string> },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { command, args: full } = wardenCommand(args);
  const child = spawn(command, full, { cwd: repoRoot, env: childEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill("SIGKILL");
  }, PROMPT_MS);
  const code = await new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  clearTimeout(timer);
  assert.ok(!hung, `warden ${args.join(" ")} did not exit within ${PROMPT_MS} ms; stderr: ${stderr}`);
  return { code, stdout, stderr };
}

async function answersPing(session: Session): Promise<void> {
  await promptly(session.client.ping({ timeout: PROMPT_MS }));
}

function codeOf(result: unknown): unknown {
  return ((result as { _meta?: Record<string, unknown> })._meta ?? {})["warden/error_code"];
}

async function sha256(bytes: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(bytes));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A plugin whose tools hand their arguments to ctx.fs. */
const PROBE_BUNDLE = `export const tools = {
  read: (args, ctx) => ctx.fs.readText(ctx.fs.rootIds[0], args.path),
  glob: (args, ctx) => ctx.fs.glob(ctx.fs.rootIds[0], args.path),
  list: (args, ctx) => ctx.fs.list(ctx.fs.rootIds[0], args.path),
  stat: (args, ctx) => ctx.fs.stat(ctx.fs.rootIds[0], args.path),
};
`;

/** Writes plugin `id` (the probe), signed with the test key; returns its pin. */
async function writeProbePlugin(pluginsDir: string, id: string): Promise<Record<string, string>> {
  const dir = path.join(pluginsDir, id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "plugin.js"), PROBE_BUNDLE);
  const tool = (name: string) => ({
    name,
    title: name,
    description: `ctx.fs.${name}`,
    inputSchema: {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    },
  });
  const manifestText = canonicalJson({
    schemaVersion: 1,
    id,
    version: "1.0.0",
    description: `Probe ${id}.`,
    author: "tests",
    risk: "read",
    entry: { path: "plugin.js", sha256: await sha256(PROBE_BUNDLE) },
    capabilities: { readRoots: ["*"] },
    tools: ["read", "glob", "list", "stat"].map(tool),
  });
  writeFileSync(path.join(dir, "manifest.json"), manifestText);
  const key = await parsePrivateKey(readFileSync(path.join(TRUST, "plugin_test_key"), "utf8"));
  writeFileSync(
    path.join(dir, "manifest.json.sig"),
    await signMessage(key, new TextEncoder().encode(manifestText), "warden-plugin-v1"),
  );
  return {
    manifestDigest: `sha256:${await sha256(manifestText)}`,
    version: "1.0.0",
    principal: "test-signer@warden.invalid",
    fingerprint: FINGERPRINT,
    pinnedAt: "2026-12-01T00:00:00.000Z",
  };
}

/** A root with FIFOs (one is its .gitignore), a 4 GiB hole, a link to /dev/zero and a directory link out. */
function specialRoot(dir: string): { root: string; sockets: string[] } {
  const root = path.join(dir, "root");
  const outside = path.join(dir, "outside");
  mkdirSync(path.join(root, "src", "sub"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(root, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(path.join(outside, "secret.txt"), "top secret\n");
  writeFileSync(path.join(outside, "outside-debt.ts"), "// TODO: outside the root\nexport const o = 1;\n");
  mkfifo(path.join(root, "pipe"));
  mkfifo(path.join(root, "src", "pipe.ts"));
  // Ignore files glob reads on its own: a FIFO and a socket there must not stop it.
  mkfifo(path.join(root, ".gitignore"));
  sparse(path.join(root, "huge.bin"), FOUR_GIB);
  symlinkSync("/dev/zero", path.join(root, "zero-link"));
  symlinkSync(outside, path.join(root, "dirlink-out"));
  return { root, sockets: [path.join(root, "sock"), path.join(root, "src", "sub", ".gitignore")] };
}

describe(`special files in a root, read by built-in tools (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let root: string;
  let closeSockets: () => Promise<void> = () => Promise.resolve();
  let fixtures: Session | undefined;
  let builtins: Session | undefined;
  let devices: ReturnType<typeof makeDevices>;
  const specials: { name: string; kind: string }[] = [
    { name: "pipe", kind: "a FIFO" },
    { name: "src/pipe.ts", kind: "a FIFO" },
    { name: ".gitignore", kind: "a FIFO" },
    { name: "sock", kind: "a socket" },
  ];

  before(async () => {
    work = tempDir();
    const made = specialRoot(work.dir);
    root = made.root;
    closeSockets = await listenAt(made.sockets);
    devices = makeDevices(root);
    if (devices.char) specials.push({ name: "zero-device", kind: "a character device" });
    if (devices.block) specials.push({ name: "block-device", kind: "a block device" });
    fixtures = await connect({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir }, args: ["--root", `app=${root}`] });
    builtins = await connect({ args: ["--root", `app=${root}`] });
  });
  after(async () => {
    await fixtures?.close();
    await builtins?.close();
    await closeSockets();
    work.remove();
  });

  const call = (session: Session, name: string, args: Record<string, unknown>) =>
    promptly(session.client.callTool({ name, arguments: args }, undefined, { timeout: PROMPT_MS }));

  it("refuses to read each special file, naming its kind, and keeps answering", async () => {
    for (const { name, kind } of specials) {
      const { value: result } = await call(fixtures!, "fixture_fs", { op: "read", path: name });
      assert.equal(result.isError, true, name);
      assert.equal(
        textOf(result),
        `Path refused in root "app": ${JSON.stringify(name)} is ${kind}; only regular files are read`,
      );
      assert.equal(codeOf(result), "path_refused");
      await answersPing(fixtures!);
    }
  });

  it("has made a character and a block device, or says why not", (t) => {
    if (!devices.char || !devices.block) skipOrFail(t, devices.why);
    else assert.equal(specials.length, 6);
  });

  it("refuses a link to /dev/zero as a link out of the root", async () => {
    const { value: result } = await call(fixtures!, "fixture_fs", { op: "read", path: "zero-link" });
    assert.match(
      textOf(result),
      /^Path refused in root "app": "zero-link" leads outside the root through a symlink/,
    );
  });

  it("refuses a sparse 4 GiB file as too large without reading it, at the default cap and at a larger one", async () => {
    const { value: result, ms } = await call(fixtures!, "fixture_fs", { op: "read", path: "huge.bin" });
    assert.equal(
      textOf(result),
      `File too large in root "app": "huge.bin" has ${FOUR_GIB} bytes, the limit is 16777216`,
    );
    assert.equal(codeOf(result), "too_large");
    assert.ok(ms < 2000, `${ms} ms`);
    const { value: larger } = await call(fixtures!, "fixture_fs", { op: "read", path: "huge.bin", maxBytes: 2 ** 33 });
    assert.equal(
      textOf(larger),
      `File too large in root "app": "huge.bin" has ${FOUR_GIB} bytes, the limit is 1073741824`,
      "a maxBytes above 1 GiB is lowered to 1 GiB",
    );
  });

  it("stats and lists special files without opening them, and globs only regular files", async () => {
    const stat = JSON.parse(textOf((await call(fixtures!, "fixture_fs", { op: "stat", path: "pipe" })).value));
    assert.deepEqual(stat, { path: "pipe", kind: "other", size: 0 });
    const listed = JSON.parse(textOf((await call(fixtures!, "fixture_fs", { op: "list", path: "." })).value));
    assert.deepEqual(
      listed.filter((e: { kind: string }) => e.kind === "other").map((e: { name: string }) => e.name).sort(),
      [
        ".gitignore",
        "pipe",
        "sock",
        ...(devices.block ? ["block-device"] : []),
        ...(devices.char ? ["zero-device"] : []),
      ]
        .sort(),
    );
    // .gitignore is a FIFO and src/sub/.gitignore a socket: glob reads ignore files, and must skip these.
    const { value: globbed } = await call(fixtures!, "fixture_fs", { op: "glob", path: "**" });
    assert.deepEqual(JSON.parse(textOf(globbed)), ["huge.bin", "src/a.ts"]);
    await answersPing(fixtures!);
  });

  it("keeps the built-in tools answering over a root full of special files", async () => {
    const calls: [string, Record<string, unknown>][] = [
      ["tech_debt_check", {}],
      ["component_discover", {}],
      ["code_dead_exports", {}],
      ["code_about", { module: "src/a.ts" }],
      ["code_about", { module: "src/pipe.ts" }],
      ["code_blast_radius", { module: "src/pipe" }],
    ];
    for (const [name, args] of calls) {
      const { value: result } = await call(builtins!, name, args);
      const text = textOf(result);
      assert.ok(!text.includes(work.dir), `${name}: no host path in ${text}`);
      if (result.isError) assert.doesNotMatch(text, /\n\s+at /, `${name}: a clear error, not a stack`);
      await answersPing(builtins!);
    }
    const { value: about } = await call(builtins!, "code_about", { module: "src/a.ts" });
    assert.equal(about.isError, undefined, textOf(about));
  });

  it("lets no built-in tool name what a directory link leads out to", async () => {
    const calls: [string, Record<string, unknown>][] = [
      ["tech_debt_check", {}],
      ["tech_debt_check", { glob: "dirlink-out/**" }],
      ["tech_debt_check", { glob: ["dirlink-out/*.ts", "{..,src}/*.ts"] }],
      ["component_discover", {}],
      ["component_discover", { path: "dirlink-out" }],
      ["code_dead_exports", {}],
      ["code_about", { module: "dirlink-out/outside-debt.ts" }],
    ];
    for (const [name, args] of calls) {
      const { value: result } = await call(builtins!, name, args);
      // The name given as an argument may come back in an error; no other name from outside may.
      const text = JSON.stringify(result).replaceAll("dirlink-out/outside-debt.ts", "");
      for (const outside of ["outside-debt", "secret", "TODO: outside"]) {
        assert.ok(!text.includes(outside), `${name} ${JSON.stringify(args)} named ${outside}: ${text}`);
      }
    }
    const { value: debt } = await call(builtins!, "tech_debt_check", { glob: "dirlink-out/**" });
    // Before, glob named the file outside and the read was refused: it showed only as one file unreadable.
    const { filesScanned, skipped } = debt.structuredContent as { filesScanned: number; skipped: object };
    assert.equal(filesScanned, 0, JSON.stringify(debt));
    assert.deepEqual(skipped, { binary: 0, tooLarge: 0, unreadable: 0, unknownType: 0 });
  });

  it("reads a file growing under a writer up to the size it had, and stops at the cap", async () => {
    const file = path.join(root, "grow.log");
    writeFileSync(file, "");
    // Appends 16 KiB a millisecond at most, and says "ready" past 1 MiB.
    const source = `import { appendFileSync } from "node:fs";
const chunk = "x".repeat(16384);
let written = 0;
setInterval(() => {
  appendFileSync(${JSON.stringify(file)}, chunk);
  written += chunk.length;
  if (written === 1048576) console.log("ready");
}, 1);`;
    const writer: ChildProcess = onDeno
      ? spawn(process.execPath, ["eval", source], { stdio: ["ignore", "pipe", "inherit"] })
      : spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise<void>((resolve, reject) => {
        writer.stdout!.setEncoding("utf8").on("data", (chunk: string) => chunk.includes("ready") && resolve());
        writer.once("exit", (code) => reject(new Error(`the writer exited (${code})`)));
      });
      const { value: whole } = await call(fixtures!, "fixture_fs", { op: "read", path: "grow.log" });
      if (whole.isError) {
        // A slow machine let it pass 16 MiB first.
        assert.match(textOf(whole), /^File too large in root "app": "grow\.log" has \d+ bytes, the limit is 16777216$/);
      } else {
        const text = textOf(whole);
        assert.ok(text.length >= 1048576 && text.length <= 16777216, `${text.length} bytes`);
        assert.match(text.slice(0, 64), /^x+$/);
      }
      const { value: capped } = await call(fixtures!, "fixture_fs", {
        op: "read",
        path: "grow.log",
        maxBytes: 65536,
      });
      assert.match(textOf(capped), /^File too large in root "app": "grow\.log" has \d+ bytes, the limit is 65536$/);
      await answersPing(fixtures!);
    } finally {
      writer.kill("SIGKILL");
      rmSync(file, { force: true });
    }
  });
});

describe(`special files reached by a plugin, and in the plugins' own files (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let root: string;
  let plugins: string;
  let env: Record<string, string>;
  let closeSockets: () => Promise<void> = () => Promise.resolve();
  let session: Session | undefined;
  /** Plugin id → its special file (relative to its directory) and what it is. */
  const broken: Record<string, { file: string; kind: "a FIFO" | "a socket"; reason: RegExp; status: string }> = {
    mfifo: {
      file: "manifest.json",
      kind: "a FIFO",
      status: "invalid-manifest",
      reason: /^manifest\.json is a FIFO, not a regular file$/,
    },
    msock: {
      file: "manifest.json",
      kind: "a socket",
      status: "invalid-manifest",
      reason: /^manifest\.json is a socket, not a regular file$/,
    },
    sfifo: {
      file: "manifest.json.sig",
      kind: "a FIFO",
      status: "unsigned",
      reason: /^manifest\.json\.sig is a FIFO, not a regular file$/,
    },
    efifo: {
      file: "plugin.js",
      kind: "a FIFO",
      status: "entry-digest-mismatch",
      reason: /^entry plugin\.js is a FIFO, not a regular file$/,
    },
    esock: {
      file: "plugin.js",
      kind: "a socket",
      status: "entry-digest-mismatch",
      reason: /^entry plugin\.js is a socket, not a regular file$/,
    },
  };

  before(async () => {
    work = tempDir();
    const made = specialRoot(work.dir);
    root = made.root;
    plugins = path.join(work.dir, "plugins");
    const pins: Record<string, unknown> = {};
    const sockets = [...made.sockets];
    for (const id of ["probe", ...Object.keys(broken)]) pins[id] = await writeProbePlugin(plugins, id);
    for (const [id, { file, kind }] of Object.entries(broken)) {
      const at = path.join(plugins, id, file);
      rmSync(at);
      if (kind === "a FIFO") mkfifo(at);
      else sockets.push(at);
    }
    // A ledger directory with a FIFO and a socket that look like ledger files.
    const ledger = path.join(work.dir, "ledger");
    mkdirSync(ledger);
    mkfifo(path.join(ledger, "2026-12-01T00-00-00-1.jsonl"));
    sockets.push(path.join(ledger, "2026-12-01T00-00-00-2.jsonl"));
    closeSockets = await listenAt(sockets);
    const lock = path.join(work.dir, "plugins.lock.json");
    writeFileSync(lock, JSON.stringify({ lockVersion: 1, plugins: pins }));
    env = {
      WARDEN_PLUGINS_DIR: plugins,
      WARDEN_PLUGINS_LOCK: lock,
      WARDEN_ALLOWED_SIGNERS: path.join(TRUST, "allowed_signers"),
      WARDEN_REVOKED_KEYS: path.join(work.dir, "revoked_keys"),
      WARDEN_LEDGER: ledger,
    };
    // Started as a command first: a startup that hangs is killed there, before a session could be left behind.
    const tools = await runWarden(["tools", "--root", `app=${root}`], { env });
    assert.equal(tools.code, 0, tools.stderr);
    session = await connect({ env, args: ["--root", `app=${root}`] });
  });
  after(async () => {
    await session?.close();
    await closeSockets();
    work.remove();
  });

  const call = (name: string, args: Record<string, unknown>) =>
    promptly(session!.client.callTool({ name, arguments: args }, undefined, { timeout: PROMPT_MS }));

  it("starts, refusing each plugin whose manifest, signature or entry is a FIFO or a socket, and why", async () => {
    const { value: result } = await call("extension_list", {});
    const { extensions } = result.structuredContent as { extensions: { id: string; status: string; reason: string }[] };
    const byId = new Map(extensions.map((e) => [e.id, e]));
    assert.equal(byId.get("probe")?.status, "verified", JSON.stringify(byId.get("probe")));
    for (const [id, { status, reason }] of Object.entries(broken)) {
      assert.equal(byId.get(id)?.status, status, id);
      assert.match(byId.get(id)!.reason, reason, id);
    }
    await answersPing(session!);
  });

  it("refuses a plugin's read of a FIFO, a socket and a 4 GiB hole, promptly, and keeps answering", async () => {
    const cases: [string, RegExp][] = [
      ["pipe", /"pipe" is a FIFO; only regular files are read/],
      ["sock", /"sock" is a socket; only regular files are read/],
      [".gitignore", /"\.gitignore" is a FIFO; only regular files are read/],
      ["huge.bin", new RegExp(`"huge\\.bin" has ${FOUR_GIB} bytes, the limit is 16777216`)],
      ["zero-link", /"zero-link" leads outside the root through a symlink/],
    ];
    for (const [file, message] of cases) {
      const { value: result } = await call("probe_read", { path: file });
      assert.equal(result.isError, true, file);
      assert.match(textOf(result), message, file);
      assert.ok(!textOf(result).includes(work.dir), `no host path: ${textOf(result)}`);
      await answersPing(session!);
    }
    const { value: ok } = await call("probe_read", { path: "src/a.ts" });
    assert.equal(textOf(ok), "export const a = 1;\n", "the same child still reads a regular file");
  });

  it("lets a plugin glob, list and stat past special files and names nothing outside the root", async () => {
    assert.deepEqual(JSON.parse(textOf((await call("probe_glob", { path: "**" })).value)), ["huge.bin", "src/a.ts"]);
    for (const pattern of ["dirlink-out/**", "dirlink-out/secret.txt", "dirlink-out/*"]) {
      assert.deepEqual(JSON.parse(textOf((await call("probe_glob", { path: pattern })).value)), [], pattern);
    }
    const listed = await call("probe_list", { path: "dirlink-out" });
    assert.match(textOf(listed.value), /"dirlink-out" leads outside the root through a symlink/);
    const stat = await call("probe_stat", { path: "pipe" });
    assert.equal(JSON.parse(textOf(stat.value)).kind, "other");
    await answersPing(session!);
  });

  it("lists and verifies the plugins from the command line, promptly", async () => {
    const list = await runWarden(["plugin", "list"], { env });
    for (const [id, { status }] of Object.entries(broken)) {
      assert.match(list.stdout, new RegExp(`^${id} +user +\\S+ +${status}`, "m"), list.stdout);
    }
    for (const id of ["mfifo", "sfifo", "efifo", "esock"]) {
      const verify = await runWarden(["plugin", "verify", path.join(plugins, id)], { env });
      assert.notEqual(verify.code, 0, id);
      const reason = broken[id].reason.source.slice(1, -1); // the same sentence, unanchored
      assert.match(verify.stdout + verify.stderr, new RegExp(reason), id);
    }
  });

  it("verifies a ledger directory holding a FIFO and a socket, promptly", async () => {
    const verified = await runWarden(["ledger", "verify"], { env });
    assert.ok(verified.code !== null, "exited");
  });
});

describe(`special files as the trust store or the lock (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let closeSockets: () => Promise<void> = () => Promise.resolve();
  before(() => {
    work = tempDir();
  });
  after(async () => {
    await closeSockets();
    work.remove();
  });

  const files = [
    { env: "WARDEN_ALLOWED_SIGNERS", name: "allowed_signers" },
    { env: "WARDEN_REVOKED_KEYS", name: "revoked_keys" },
    { env: "WARDEN_PLUGINS_LOCK", name: "plugins.lock.json" },
  ];
  it("refuses to start, and plugin list fails, naming the file and its kind, promptly", async () => {
    const plugins = path.join(work.dir, "plugins");
    await writeProbePlugin(plugins, "probe");
    const sockets: string[] = [];
    const cases: { env: Record<string, string>; file: string; kind: string }[] = [];
    for (const { env, name } of files) {
      for (const kind of ["a FIFO", "a socket"]) {
        const dir = path.join(work.dir, `${name}-${kind.slice(2)}`);
        mkdirSync(dir);
        const file = path.join(dir, name);
        if (kind === "a FIFO") mkfifo(file);
        else sockets.push(file);
        cases.push({ env: { WARDEN_PLUGINS_DIR: plugins, [env]: file }, file, kind });
      }
    }
    closeSockets = await listenAt(sockets);
    for (const { env, file, kind } of cases) {
      const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const message = new RegExp(`Cannot read (the plugin lock file )?${escaped}: it is ${kind}, not a regular file`);
      const serve = await runWarden(["tools"], { env });
      assert.match(serve.stderr, message, `${file}: ${serve.stderr}`);
      const list = await runWarden(["plugin", "list"], { env });
      assert.notEqual(list.code, 0);
      assert.match(list.stderr, message, `${file}: ${list.stderr}`);
    }
  });
});
