// Signed plugins end to end: the status every tampering earns (and that a
// refused plugin never runs), the pin, the audit, the author's five
// commands, and a verified plugin serving calls from its sandbox.
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { canonicalJson } from "../core/canonical_json.ts";
import { parsePrivateKey, signMessage } from "../core/plugins/trust/sshsig.ts";
import {
  connect,
  eventually,
  repoRoot,
  runtimeName,
  runWarden,
  type Session,
  skipOrFail,
  tempDir,
  textOf,
} from "./helpers.ts";

const TRUST = path.join(repoRoot, "test/fixtures/trust");
const NAMESPACE = "warden-plugin-v1";

async function sha256(bytes: Uint8Array | string): Promise<string> {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A bundle that says which build it is and, if it ever runs outside its sandbox, shouts. */
function bundle(marker: string): string {
  return `globalThis.process?.stderr?.write?.("CANARY ${marker} RAN IN THE HOST\\n");
export const tools = { echo: async (args) => ({ marker: ${JSON.stringify(marker)}, text: args.text }) };
`;
}

interface PluginFiles {
  manifest: Record<string, unknown>;
  manifestText: string;
  entry: string;
}

/** Writes a signed plugin `id` (tool `echo`) into `dir`; `edit` may change the manifest before it is signed. */
async function writePlugin(
  pluginsDir: string,
  id: string,
  options: {
    tool?: string;
    marker?: string;
    entry?: string;
    edit?: (m: Record<string, unknown>) => void;
    key?: string;
    namespace?: string;
  } = {},
): Promise<PluginFiles> {
  const dir = path.join(pluginsDir, id);
  mkdirSync(dir, { recursive: true });
  const entry = options.entry ?? bundle(options.marker ?? id);
  writeFileSync(path.join(dir, "plugin.js"), entry);
  const manifest: Record<string, unknown> = {
    schemaVersion: 1,
    id,
    version: "1.0.0",
    description: `Test plugin ${id}.`,
    author: "tests",
    risk: "read",
    entry: { path: "plugin.js", sha256: await sha256(entry) },
    capabilities: { readRoots: ["*"] },
    tools: [{
      name: options.tool ?? "echo",
      title: "Echo",
      description: "Echoes.",
      inputSchema: {
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
        additionalProperties: false,
      },
    }],
  };
  options.edit?.(manifest);
  const manifestText = canonicalJson(manifest);
  writeFileSync(path.join(dir, "manifest.json"), manifestText);
  const key = await parsePrivateKey(readFileSync(options.key ?? path.join(TRUST, "plugin_test_key"), "utf8"));
  writeFileSync(
    path.join(dir, "manifest.json.sig"),
    await signMessage(key, new TextEncoder().encode(manifestText), options.namespace ?? NAMESPACE),
  );
  return { manifest, manifestText, entry };
}

type Record_ = {
  id: string;
  status: string;
  reason: string | null;
  fix: string | null;
  pinned: boolean;
  tools: string[];
  isolation: string;
};

describe(`plugin statuses (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let env: Record<string, string>;
  const expected = new Map<string, { status: string; reason: RegExp }>();
  let records: Map<string, Record_>;
  let toolNames: string[];
  let serveStderr: string;

  before(async () => {
    work = tempDir();
    const plugins = path.join(work.dir, "plugins");
    const lock = path.join(work.dir, "plugins.lock.json");
    const signers = path.join(work.dir, "allowed_signers");
    const revoked = path.join(work.dir, "revoked_keys");
    const pub = readFileSync(path.join(TRUST, "plugin_test_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    // Keys of their own for the unknown, revoked and expired cases.
    const { spawnSync } = await import("node:child_process");
    for (const name of ["stranger", "revoked", "expired"]) {
      spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path.join(work.dir, name)]);
    }
    const keyText = (name: string) =>
      readFileSync(path.join(work.dir, `${name}.pub`), "utf8").trim().split(" ").slice(0, 2).join(" ");
    writeFileSync(
      signers,
      [
        `tests@warden.invalid namespaces="${NAMESPACE}" ${pub}`,
        `revoked@warden.invalid namespaces="${NAMESPACE}" ${keyText("revoked")}`,
        `expired@warden.invalid namespaces="${NAMESPACE}",valid-before="20200101" ${keyText("expired")}`,
        "",
      ].join("\n"),
    );
    writeFileSync(revoked, keyText("revoked") + "\n");

    const pins: Record<string, unknown> = {};
    const pin = async (id: string, files: PluginFiles, digest?: string) => {
      pins[id] = {
        manifestDigest: digest ?? `sha256:${await sha256(files.manifestText)}`,
        version: "1.0.0",
        principal: "tests@warden.invalid",
        fingerprint: "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE",
        pinnedAt: "2026-11-29T00:00:00.000Z",
      };
    };
    const add = (id: string, status: string, reason: RegExp) => expected.set(id, { status, reason });

    await pin("good", await writePlugin(plugins, "good"));
    add("good", "verified", /^$/);

    const flipped = await writePlugin(plugins, "flipped");
    const flippedEntry = Buffer.from(flipped.entry);
    flippedEntry[10] ^= 1;
    writeFileSync(path.join(plugins, "flipped", "plugin.js"), flippedEntry);
    await pin("flipped", flipped);
    add(
      "flipped",
      "entry-digest-mismatch",
      /^entry plugin\.js has sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}$/,
    );

    const edited = await writePlugin(plugins, "edited");
    writeFileSync(
      path.join(plugins, "edited", "manifest.json"),
      edited.manifestText.replace("Test plugin edited.", "Test plugin EDITED."),
    );
    await pin("edited", edited);
    add("edited", "bad-signature", /^the signature does not match manifest\.json$/);

    const reordered = await writePlugin(plugins, "reordered");
    const swapped = JSON.stringify({ version: "1.0.0", ...JSON.parse(reordered.manifestText) });
    writeFileSync(path.join(plugins, "reordered", "manifest.json"), swapped);
    add("reordered", "not-canonical", /^manifest\.json differs from its canonical form at offset \d+/);

    const duplicate = await writePlugin(plugins, "duplicate");
    writeFileSync(
      path.join(plugins, "duplicate", "manifest.json"),
      duplicate.manifestText.replace('{"author"', '{"author":"x","author"'),
    );
    add("duplicate", "not-canonical", /^duplicate key "author" in \$ at offset \d+$/);

    const floating = await writePlugin(plugins, "floating");
    writeFileSync(
      path.join(plugins, "floating", "manifest.json"),
      floating.manifestText.replace('"schemaVersion":1', '"schemaVersion":1.0'),
    );
    add("floating", "not-canonical", /^number 1\.0 in \$\.schemaVersion is not a safe integer/);

    const trailing = await writePlugin(plugins, "trailing");
    writeFileSync(path.join(plugins, "trailing", "manifest.json"), trailing.manifestText + "\n");
    add("trailing", "not-canonical", /text after the JSON value/);

    await writePlugin(plugins, "stranger", { key: path.join(work.dir, "stranger") });
    add("stranger", "unknown-signer", /^key SHA256:\S+ is not in allowed_signers$/);

    await writePlugin(plugins, "revoked", { key: path.join(work.dir, "revoked") });
    add("revoked", "revoked", /^key SHA256:\S+ is revoked$/);

    await writePlugin(plugins, "expired", { key: path.join(work.dir, "expired") });
    add("expired", "key-expired", /^key SHA256:\S+ is not valid now according to allowed_signers$/);

    await writePlugin(plugins, "namespace", { namespace: "git" });
    add("namespace", "wrong-namespace", /^signed for namespace "git", not "warden-plugin-v1"$/);

    await writePlugin(plugins, "swapped");
    cpSync(path.join(plugins, "good", "manifest.json.sig"), path.join(plugins, "swapped", "manifest.json.sig"));
    add("swapped", "bad-signature", /^the signature does not match manifest\.json$/);

    const linked = await writePlugin(plugins, "linked");
    writeFileSync(path.join(work.dir, "outside.js"), linked.entry);
    rmSync(path.join(plugins, "linked", "plugin.js"));
    symlinkSync(path.join(work.dir, "outside.js"), path.join(plugins, "linked", "plugin.js"));
    await pin("linked", linked);
    add("linked", "entry-digest-mismatch", /^entry plugin\.js is a symlink; it must be the file itself$/);

    await writePlugin(plugins, "unsigned");
    rmSync(path.join(plugins, "unsigned", "manifest.json.sig"));
    add("unsigned", "unsigned", /^manifest\.json\.sig is missing$/);

    await writePlugin(plugins, "unpinned");
    add("unpinned", "not-pinned", /^signed and trusted, but not pinned in plugins\.lock\.json$/);

    await pin("repinned", await writePlugin(plugins, "repinned"), `sha256:${"0".repeat(64)}`);
    add("repinned", "pin-mismatch", /^pinned at sha256:0{64}, found sha256:[0-9a-f]{64}$/);

    await writePlugin(plugins, "wrongid", { edit: (m) => void (m.id = "other") });
    add("wrongid", "invalid-manifest", /^manifest id "other" differs from its directory "wrongid"$/);

    await writePlugin(plugins, "schema", {
      edit: (m) => void ((m.tools as Record<string, unknown>[])[0].inputSchema = { type: "object", $ref: "#/x" }),
    });
    add("schema", "invalid-manifest", /^tools\.echo\.inputSchema uses the unsupported keyword "\$ref"$/);

    await writePlugin(plugins, "badargv", {
      edit: (m) => {
        m.risk = "gate";
        m.capabilities = { readRoots: ["*"], argv: ["/bin/sh"] };
      },
    });
    add("badargv", "invalid-manifest", /^manifest\.json capabilities\.argv\.0: /);

    const surrogate = await writePlugin(plugins, "surrogate");
    writeFileSync(
      path.join(plugins, "surrogate", "manifest.json"),
      surrogate.manifestText.replace('"author":"tests"', '"author":"\\ud800"'),
    );
    add("surrogate", "not-canonical", /^manifest\.json has no canonical form: /);

    await pin("limited", await writePlugin(plugins, "limited", { edit: (m) => void (m.limits = { memoryMb: 256 }) }));
    add("limited", "verified", /^$/);

    await writePlugin(plugins, "greedy", { edit: (m) => void (m.limits = { memoryMb: 8192, cpuMsPerCall: 1000 }) });
    add(
      "greedy",
      "invalid-manifest",
      /^manifest\.json limits\.memoryMb: Invalid value: Expected <=4096 but received 8192$/,
    );

    await pin("host", await writePlugin(plugins, "host", { tool: "context" }));
    add("host", "name-conflict", /^tool host_context is already served by a built-in tool$/);

    writeFileSync(lock, JSON.stringify({ lockVersion: 1, plugins: pins }, null, 2));
    env = {
      WARDEN_PLUGINS_DIR: plugins,
      WARDEN_PLUGINS_LOCK: lock,
      WARDEN_ALLOWED_SIGNERS: signers,
      WARDEN_REVOKED_KEYS: revoked,
    };

    const listed = await runWarden(["plugin", "list", "--json"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    records = new Map((JSON.parse(listed.stdout) as Record_[]).map((r) => [r.id, r]));
    const tools = await runWarden(["tools", "--json"], { env });
    toolNames = (JSON.parse(tools.stdout).tools as { name: string }[]).map((t) => t.name);
    const session = await connect({ env });
    try {
      const good = await session.client.callTool({ name: "good_echo", arguments: { text: "hi" } });
      assert.deepEqual(JSON.parse(textOf(good)), { marker: "good", text: "hi" });
      serveStderr = session.stderr();
    } finally {
      await session.close();
    }
  });
  after(() => work.remove());

  it("lists every plugin directory, sorted by id", () => {
    assert.deepEqual([...records.keys()], [...expected.keys()].sort());
  });

  it("shows the limits each verified plugin runs under: the manifest's, or the defaults", () => {
    const limited = records.get("limited")!.isolation;
    const good = records.get("good")!.isolation;
    assert.match(
      limited,
      /^deno subprocess: no permissions .* no web storage and no cache directory, frozen between calls; /,
    );
    assert.match(
      limited,
      /memory(?: 256 MiB \(OS limit RLIMIT_DATA, and the V8 heap\)|: V8 heap 256 MiB only \(no OS limit: )/,
    );
    assert.match(good, /memory(?: 512 MiB \(OS limit|: V8 heap 512 MiB only)/);
    assert.match(good, /CPU(?: 30000 ms per call|: no per-call budget)/);
  });

  for (
    const id of [
      "good",
      "flipped",
      "edited",
      "reordered",
      "duplicate",
      "floating",
      "trailing",
      "stranger",
      "revoked",
      "expired",
      "namespace",
      "swapped",
      "linked",
      "unsigned",
      "unpinned",
      "repinned",
      "wrongid",
      "schema",
      "badargv",
      "surrogate",
      "limited",
      "greedy",
      "host",
    ]
  ) {
    it(`${id}: the right status and reason, and a refused plugin never runs`, () => {
      const want = expected.get(id)!;
      const record = records.get(id)!;
      assert.equal(record.status, want.status, JSON.stringify(record));
      assert.match(record.reason ?? "", want.reason);
      if (want.status === "verified") {
        assert.ok(toolNames.includes(`${id}_echo`));
        return;
      }
      assert.ok(record.fix, "every refusal says what to do next");
      for (const name of record.tools) {
        // A clash leaves the built-in tool in place, once; any other refused tool is absent.
        const count = toolNames.filter((n) => n === name).length;
        assert.equal(count, want.status === "name-conflict" ? 1 : 0, `${name} appears ${count} times in the catalog`);
      }
      assert.match(serveStderr, new RegExp(`"event":"plugin_refused","plugin":"${id}","status":"${want.status}"`));
      assert.ok(!serveStderr.includes(`CANARY ${id} RAN`), "the plugin's code never ran");
    });
  }

  it("--strict-plugins refuses to start when any plugin is refused", async () => {
    const { code, stderr } = await runWarden(["tools", "--strict-plugins"], { env });
    assert.equal(code, 2);
    assert.match(stderr, /^warden: Plugins refused with --strict-plugins: badargv is invalid-manifest \(/m);
    assert.match(stderr, /fix them or start without --strict-plugins\n$/);
  });
});

/** Pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command may contain spaces and parentheses: the ppid is the second field after the last ")".
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

const REPLACED_ENTRY = "export const plugin = { tools: { list: { handler: () => ({ replaced: true }) } } };\n";

describe(`a verified plugin at work (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let session: Session;
  /** A second server, to be killed. */
  let doomed: Session;
  let plugins: string;

  before(async () => {
    work = tempDir();
    plugins = path.join(work.dir, "plugins");
    mkdirSync(plugins);
    cpSync(path.join(repoRoot, "plugins", "licenses"), path.join(plugins, "licenses"), { recursive: true });
    const root = path.join(work.dir, "project");
    const pkg = (dir: string, body: Record<string, unknown>) => {
      mkdirSync(path.join(root, dir), { recursive: true });
      writeFileSync(path.join(root, dir, "package.json"), JSON.stringify(body));
    };
    pkg("node_modules/left-pad", { name: "left-pad", version: "1.3.0", license: "WTFPL" });
    pkg("node_modules/@scope/tool", { name: "@scope/tool", version: "2.0.0", license: { type: "MIT" } });
    pkg("node_modules/@scope/tool/node_modules/inner", {
      name: "inner",
      version: "0.1.0",
      licenses: [{ type: "ISC" }],
    });
    pkg("node_modules/nolicense", { name: "nolicense", version: "0.0.1" });
    pkg("node_modules/left-pad/dist", { type: "module" });
    writeFileSync(path.join(root, ".gitignore"), "node_modules/\n");
    const lock = path.join(work.dir, "plugins.lock.json");
    const env = {
      WARDEN_PLUGINS_DIR: plugins,
      WARDEN_PLUGINS_LOCK: lock,
      WARDEN_ALLOWED_SIGNERS: path.join(TRUST, "allowed_signers"),
    };
    const trust = await runWarden(["plugin", "trust", path.join(plugins, "licenses")], {
      env,
      denoFlags: ["--allow-write"],
    });
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(
      trust.stdout,
      /signer {6}test-signer@warden\.invalid SHA256:U5TnVnq0X\/MHWlo45Gyto\+XsgifUYXqQEF5OjOhukTE/,
    );
    assert.match(trust.stdout, /^Pinned licenses 1\.0\.0 at sha256:[0-9a-f]{64} in /m);
    session = await connect({ env, args: ["--root", `default=${root}`] });
    doomed = await connect({ env, args: ["--root", `default=${root}`] });
    // Verified at startup; replaced before its first call. The verified bytes must be what runs.
    writeFileSync(path.join(plugins, "licenses", "plugin.js"), REPLACED_ENTRY);
  });
  after(async () => {
    await session.close().catch(() => {});
    await doomed.close().catch(() => {});
    work.remove();
  });

  it("serves the plugin's tool with its descriptor and origin", async () => {
    const { tools } = await session.client.listTools();
    const tool = tools.find((t) => t.name === "licenses_list");
    assert.ok(tool, "licenses_list is in the catalog");
    assert.equal(tool._meta?.["warden/risk"], "read");
    assert.deepEqual(Object.keys(tool._meta?.["warden/plugin"] as object).sort(), ["id", "manifestDigest", "version"]);
    assert.equal(tool.annotations?.readOnlyHint, true);
  });

  it("answers from its sandbox through the host's confined ctx.fs", async () => {
    const result = await session.client.callTool({ name: "licenses_list", arguments: {} });
    assert.equal(result.isError, undefined, textOf(result));
    const report = result.structuredContent as {
      packages: { name: string; license: string | null; path: string }[];
      byLicense: Record<string, number>;
      unlicensed: string[];
      total: number;
    };
    assert.deepEqual(report.packages.map((p) => [p.name, p.license, p.path]), [
      ["@scope/tool", "MIT", "node_modules/@scope/tool/package.json"],
      ["inner", "ISC", "node_modules/@scope/tool/node_modules/inner/package.json"],
      ["left-pad", "WTFPL", "node_modules/left-pad/package.json"],
      ["nolicense", null, "node_modules/nolicense/package.json"],
    ]);
    assert.deepEqual(report.byLicense, { MIT: 1, ISC: 1, WTFPL: 1, "(none)": 1 });
    assert.deepEqual(report.unlicensed, ["nolicense"]);
  });

  it("validates plugin arguments in the host, before any plugin code runs", async () => {
    const result = await session.client.callTool({ name: "licenses_list", arguments: { limit: 0, colour: "red" } });
    assert.equal(result.isError, true);
    assert.equal(
      textOf(result),
      'Invalid argument "limit": expected >=1 but received 0\nUnknown argument "colour": licenses_list does not take it; it accepts license, limit, root',
    );
    // The manifest's JSON Schema words an issue as valibot does for a built-in tool.
    const fraction = await session.client.callTool({ name: "licenses_list", arguments: { limit: 1.5 } });
    assert.equal(textOf(fraction), 'Invalid argument "limit": expected integer but received 1.5');
  });

  it("reports itself in extension_list, without host paths", async () => {
    const result = await session.client.callTool({ name: "extension_list", arguments: {} });
    const { extensions, totals } = result.structuredContent as {
      extensions: Record<string, unknown>[];
      totals: Record<string, number>;
    };
    assert.deepEqual(totals, { verified: 1 });
    assert.equal(extensions[0].id, "licenses");
    assert.equal(extensions[0].status, "verified");
    assert.equal(extensions[0].pinned, true);
    assert.deepEqual(extensions[0].signer, {
      principal: "test-signer@warden.invalid",
      fingerprint: "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE",
    });
    assert.match(String(extensions[0].isolation), /^deno subprocess: no permissions/);
    assert.ok(!textOf(result).includes(work.dir), "no host path");
  });

  it("leaves no plugin process behind when stdin closes", async () => {
    const server = session.transport.pid!;
    const children = childrenOf(server);
    assert.ok(children.length > 0, "the plugin runs in a child of the server");
    await session.close();
    const gone = await eventually(() => [server, ...children].every((pid) => !alive(pid)), 3000);
    assert.ok(gone, `still running: ${[server, ...children].filter(alive).join(", ")}`);
  });

  it("leaves no plugin process behind when the server is killed, though its child is frozen between calls", async (t) => {
    if (!["/usr/bin/setpriv", "/bin/setpriv"].some(existsSync)) return skipOrFail(t, "needs setpriv (util-linux)");
    const server = doomed.transport.pid!;
    const result = await doomed.client.callTool({ name: "licenses_list", arguments: {} });
    assert.equal(result.isError, undefined, textOf(result));
    const children = childrenOf(server);
    try {
      assert.ok(children.length > 0, "the plugin runs in a child of the server");
      const state = (pid: number) => {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2)[0];
      };
      assert.ok(await eventually(() => children.every((pid) => state(pid) === "T"), 2000), "frozen between calls");
      process.kill(server, "SIGKILL");
      const gone = await eventually(() => children.every((pid) => !alive(pid)), 3000);
      assert.ok(gone, `still there: ${children.filter(alive).join(", ")}`);
    } finally {
      for (const pid of children) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone, as it should be.
        }
      }
    }
  });

  it("ran the verified bytes although the entry file was replaced before the first call", () => {
    // The answers above came from the verified bundle; the file on disk is the replacement.
    assert.equal(readFileSync(path.join(plugins, "licenses", "plugin.js"), "utf8"), REPLACED_ENTRY);
  });
});

describe(`from new to a pinned, loaded plugin in five commands (${runtimeName})`, () => {
  it("new, build, sign, allow-signer, trust", async () => {
    const plugins = path.join(repoRoot, ".test-tmp", `five-${runtimeName}-${Date.now()}`);
    const work = tempDir();
    try {
      const env = {
        WARDEN_PLUGINS_DIR: plugins,
        WARDEN_PLUGINS_LOCK: path.join(work.dir, "lock.json"),
        WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "trust", "allowed_signers"),
      };
      const all = { env, denoFlags: ["--allow-write"] };
      const dir = path.join(plugins, "hello");
      const steps = [
        ["plugin", "new", "hello"],
        ["plugin", "build", dir],
        ["plugin", "sign", dir, "--key", path.join(TRUST, "plugin_test_key")],
        ["plugin", "allow-signer", "ada@example.com", "--key", path.join(TRUST, "plugin_test_key.pub")],
        ["plugin", "trust", dir],
      ];
      for (const step of steps) {
        const result = await runWarden(step, all);
        assert.equal(result.code, 0, `${step.join(" ")}:\n${result.stdout}\n${result.stderr}`);
      }
      const called = await runWarden([
        "call",
        "hello_count",
        "--root",
        `default=${path.join(repoRoot, "test")}`,
        "--arg",
        "glob=*.test.ts",
      ], all);
      assert.equal(called.code, 0, called.stderr);
      assert.equal(JSON.parse(called.stdout).root, "default");
      assert.ok(JSON.parse(called.stdout).files >= 10);
    } finally {
      rmSync(plugins, { recursive: true, force: true });
      work.remove();
    }
  });
});

describe(`plugin capabilities cross the sandbox only through the host's checks (${runtimeName})`, () => {
  it("a gate plugin runs its declared program; anything else, and a read plugin's reach, is refused", async () => {
    const work = tempDir();
    try {
      const plugins = path.join(work.dir, "plugins");
      const reach = `export const tools = {
  echo: async (args, ctx) => {
    const out = {};
    for (const [name, attempt] of Object.entries({
      allowed: () => ctx.spawn(["sh", "-c", "echo from-sh"]),
      other: () => ctx.spawn(["touch", "/tmp/warden-plugin-pwned"]),
      fetch: () => ctx.fetch("http://127.0.0.1:9/"),
      write: () => ctx.fs.write("default", "pwned.txt", "x"),
    })) {
      try { const r = await attempt(); out[name] = r.stdout ?? "done"; } catch (e) { out[name] = String(e.message ?? e); }
    }
    return out;
  },
};
`;
      const pins: Record<string, unknown> = {};
      for (const [id, risk, argv] of [["gated", "gate", ["sh"]], ["reader", "read", []]] as const) {
        const files = await writePlugin(plugins, id, {
          entry: reach,
          edit: (m) => {
            m.risk = risk;
            m.capabilities = argv.length ? { readRoots: ["*"], argv: [...argv] } : { readRoots: ["*"] };
          },
        });
        pins[id] = {
          manifestDigest: `sha256:${await sha256(files.manifestText)}`,
          version: "1.0.0",
          principal: "tests@warden.invalid",
          fingerprint: "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE",
          pinnedAt: "2026-11-29T00:00:00.000Z",
        };
      }
      const lock = path.join(work.dir, "lock.json");
      writeFileSync(lock, JSON.stringify({ lockVersion: 1, plugins: pins }));
      const env = {
        WARDEN_PLUGINS_DIR: plugins,
        WARDEN_PLUGINS_LOCK: lock,
        WARDEN_ALLOWED_SIGNERS: path.join(TRUST, "allowed_signers"),
      };
      const session = await connect({ env, args: ["--root", `default=${work.dir}`] });
      try {
        const gated = JSON.parse(
          textOf(await session.client.callTool({ name: "gated_echo", arguments: { text: "x" } })),
        );
        assert.equal(gated.allowed, "from-sh\n");
        assert.match(gated.other, /^Program "touch" is not on the allowlist of tool "gated_echo": it may run sh$/);
        assert.match(gated.fetch, /^ctx\.fetch needs risk class "external-side-effect": tool "gated_echo" is "gate"/);
        assert.match(
          gated.write,
          /^ctx\.fs\.write needs risk class "external-side-effect": tool "gated_echo" is "gate"/,
        );
        const reader = JSON.parse(
          textOf(await session.client.callTool({ name: "reader_echo", arguments: { text: "x" } })),
        );
        assert.match(
          reader.allowed,
          /^ctx\.spawn needs risk class "gate": tool "reader_echo" is "read"; nothing was run$/,
        );
        assert.ok(!existsSync("/tmp/warden-plugin-pwned") && !existsSync(path.join(work.dir, "pwned.txt")));
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});
