// What a new operator meets with plugins, from the shell and over MCP: a plugins directory that is not there, a
// review that does not send them in circles, a pin that shows, a rebuild that keeps a valid signature, a refused
// plugin's tool that says why, and a golden catalog that stays the built-in contract once a plugin is trusted.
import assert from "node:assert/strict";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { connect, eventually, repoRoot, runtimeName, runWarden, tempDir } from "./helpers.ts";

const TRUST = path.join(repoRoot, "test/fixtures/trust");
const FINGERPRINT = "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE";
const WRITE = ["--allow-write"];

/** A copy of the example plugin in a plugins directory of its own, with a lock and trust files of the test's. */
function exampleSetup(work: string, trusted: boolean): { plugins: string; dir: string; env: Record<string, string> } {
  const plugins = path.join(work, "plugins");
  const dir = path.join(plugins, "licenses");
  cpSync(path.join(repoRoot, "plugins", "licenses"), dir, { recursive: true });
  return {
    plugins,
    dir,
    env: {
      WARDEN_PLUGINS_DIR: plugins,
      WARDEN_PLUGINS_LOCK: path.join(work, "plugins.lock.json"),
      WARDEN_ALLOWED_SIGNERS: trusted ? path.join(TRUST, "allowed_signers") : path.join(work, "no_signers"),
    },
  };
}

const line = (stdout: string, label: string) => stdout.split("\n").find((l) => l.startsWith(label.padEnd(12)));

describe(`a plugins directory a setting names that is not there (${runtimeName})`, () => {
  it("is said on one line by a shell command, which still runs", async () => {
    const work = tempDir();
    try {
      const missing = path.join(work.dir, "plugins");
      const flag = await runWarden(["tools", "--plugins-dir", missing]);
      assert.equal(flag.code, 0);
      assert.equal(
        flag.stderr,
        `warden: --plugins-dir ${
          JSON.stringify(missing)
        } is not a directory, so no plugin loads; create it, or fix the setting\n`,
      );
      const variable = await runWarden(["call", "host_context"], { env: { WARDEN_PLUGINS_DIR: missing } });
      assert.equal(variable.code, 0);
      assert.match(variable.stderr, /^warden: WARDEN_PLUGINS_DIR ".*" is not a directory, so no plugin loads;/);
    } finally {
      work.remove();
    }
  });

  it("stops a --strict-plugins start with exit 2", async () => {
    const work = tempDir();
    try {
      const missing = path.join(work.dir, "plugins");
      const { code, stderr } = await runWarden(["tools", "--strict-plugins", "--plugins-dir", missing]);
      assert.equal(code, 2);
      assert.equal(
        stderr,
        `warden: Invalid --plugins-dir: ${JSON.stringify(missing)} is not a directory; create it, or fix the setting\n`,
      );
    } finally {
      work.remove();
    }
  });

  it("is a structured warning when serving", async () => {
    const work = tempDir();
    try {
      const missing = path.join(work.dir, "plugins");
      const session = await connect({ args: ["--plugins-dir", missing] });
      try {
        const result = await session.client.callTool({ name: "host_context", arguments: {} });
        assert.equal(result.isError, undefined);
        const warning = session.stderr().split("\n").filter(Boolean).map((l) => JSON.parse(l))
          .find((l) => l.event === "plugins_dir_missing");
        assert.deepEqual(
          { level: warning?.level, setting: warning?.setting, dir: warning?.dir, fix: warning?.fix },
          { level: "warn", setting: "--plugins-dir", dir: missing, fix: "create it, or fix the setting" },
        );
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});

describe(`warden plugin verify and trust, as an operator reviews (${runtimeName})`, () => {
  it("says a missing directory is missing, without sending the operator to build it", async () => {
    const work = tempDir();
    try {
      const { env } = exampleSetup(work.dir, false);
      const typo = path.join(work.dir, "plugins", "licences");
      const { code, stdout, stderr } = await runWarden(["plugin", "verify", typo], { env });
      assert.equal(code, 2);
      assert.equal(stdout, "");
      assert.equal(
        stderr,
        `warden: Cannot verify ${typo}: no such plugin directory; "warden plugin list" lists the plugin directories of ${
          path.join(path.relative(repoRoot, path.join(work.dir, "plugins")), path.sep)
        }; "warden plugin new <id>" starts one\n`,
      );
    } finally {
      work.remove();
    }
  });

  it("tells the next step, not to run itself again, and names the directory as it was typed", async () => {
    const work = tempDir();
    try {
      const { dir, env } = exampleSetup(work.dir, false);
      const unknown = await runWarden(["plugin", "verify", dir], { env });
      assert.equal(unknown.code, 1);
      assert.equal(
        line(unknown.stdout, "next"),
        `next        if you trust its signer, run "warden plugin allow-signer <principal> --key <their key.pub>", then pin it with "warden plugin trust ${dir}"`,
      );
      assert.doesNotMatch(unknown.stdout, /plugin verify/);
      const trusted = exampleSetup(path.join(work.dir, "t"), true);
      const notPinned = await runWarden(["plugin", "verify", trusted.dir], { env: trusted.env });
      assert.equal(notPinned.code, 0);
      assert.equal(
        line(notPinned.stdout, "status"),
        "status      not-pinned: signed and trusted, but not pinned in plugins.lock.json",
      );
      assert.equal(
        line(notPinned.stdout, "next"),
        `next        if you trust it, pin it with "warden plugin trust ${trusted.dir}"`,
      );
    } finally {
      work.remove();
    }
  });

  it("shows pinned yes when the lock pins the plugin, whatever else is wrong with it", async () => {
    const work = tempDir();
    try {
      const { dir, env } = exampleSetup(work.dir, true);
      const trust = await runWarden(["plugin", "trust", dir], { env, denoFlags: WRITE });
      assert.equal(trust.code, 0, trust.stderr);
      assert.equal(line(trust.stdout, "pinned"), "pinned      no", "trust shows the state before it pins");
      const again = await runWarden(["plugin", "trust", dir], { env, denoFlags: WRITE });
      assert.equal(line(again.stdout, "pinned"), "pinned      yes");
      const pinned = await runWarden(["plugin", "verify", dir], { env });
      assert.equal(line(pinned.stdout, "status"), "status      verified");
      assert.equal(line(pinned.stdout, "pinned"), "pinned      yes");
      // The signer is no longer trusted: refused, and still pinned.
      const untrusted = await runWarden(["plugin", "verify", dir], {
        env: { ...env, WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "no_signers") },
      });
      assert.equal(
        line(untrusted.stdout, "status"),
        `status      unknown-signer: key ${FINGERPRINT} is not in allowed_signers`,
      );
      assert.equal(line(untrusted.stdout, "pinned"), "pinned      yes");
    } finally {
      work.remove();
    }
  });
});

describe(`warden plugin build keeps a signature that still holds (${runtimeName})`, () => {
  it("keeps manifest.json.sig when the rebuilt manifest is byte-identical, and removes it when it is not", async () => {
    // Inside the repository: the plugin's source imports valibot and the SDK from its node_modules.
    const plugins = path.join(repoRoot, ".test-tmp", `rebuild-${runtimeName}-${Date.now()}`);
    const work = { remove: () => rmSync(plugins, { recursive: true, force: true }) };
    try {
      const env = { WARDEN_PLUGINS_DIR: plugins, WARDEN_ALLOWED_SIGNERS: path.join(TRUST, "allowed_signers") };
      const all = { env, denoFlags: WRITE };
      const dir = path.join(plugins, "hello");
      const sig = path.join(dir, "manifest.json.sig");
      for (const step of [["plugin", "new", "hello"], ["plugin", "build", dir]]) {
        const result = await runWarden(step, all);
        assert.equal(result.code, 0, result.stderr);
      }
      const signed = await runWarden(["plugin", "sign", dir, "--key", path.join(TRUST, "plugin_test_key")], all);
      assert.equal(signed.code, 0, signed.stderr);
      const signature = readFileSync(sig, "utf8");
      const rebuilt = await runWarden(["plugin", "build", dir], all);
      assert.equal(rebuilt.code, 0, rebuilt.stderr);
      assert.match(
        rebuilt.stdout,
        /The manifest is byte for byte the one before: its signature, if any, still holds\.\n$/,
      );
      assert.equal(readFileSync(sig, "utf8"), signature);
      const verified = await runWarden(["plugin", "verify", dir], { env });
      assert.match(verified.stdout, /^status {6}not-pinned: /m);
      const source = path.join(dir, "src", "main.ts");
      writeFileSync(source, readFileSync(source, "utf8").replace("Counts the files of a root.", "Counts files."));
      const changed = await runWarden(["plugin", "build", dir], all);
      assert.equal(changed.code, 0, changed.stderr);
      assert.match(changed.stdout, /Next: warden plugin sign /);
      assert.ok(!existsSync(sig), "a signature of the old manifest is removed");
    } finally {
      work.remove();
    }
  });
});

describe(`a refused plugin's tool, called (${runtimeName})`, () => {
  const why = () =>
    `Tool "licenses_list" is not served: its plugin "licenses" is refused (unknown-signer: key ${FINGERPRINT} is not in allowed_signers); review it with "warden plugin verify plugins/licenses"; if you trust its signer, run "warden plugin allow-signer <principal> --key <their key.pub>", then pin it with "warden plugin trust plugins/licenses"`;

  it("says which plugin has it, why it is refused and the fix, from the shell and over MCP", async () => {
    const work = tempDir();
    try {
      const { env } = exampleSetup(work.dir, false);
      const called = await runWarden(["call", "licenses_list"], { env });
      assert.equal(called.code, 2);
      assert.equal(called.stderr, `warden: ${why()}\n`);
      const unknown = await runWarden(["call", "licences_list"], { env });
      assert.equal(unknown.stderr, 'warden: Unknown tool: "licences_list"; run "warden tools" to list the tools\n');
      const session = await connect({ env });
      try {
        await assert.rejects(
          session.client.callTool({ name: "licenses_list", arguments: {} }),
          (error: Error & { code?: number }) => {
            assert.equal(error.code, -32602);
            // The SDK puts "MCP error -32602: " before the message on each side of the wire.
            assert.equal(error.message.replace(/^(?:MCP error -32602: )+/, ""), why());
            return true;
          },
        );
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});

describe(`the example plugin out of the box teaches without nagging (${runtimeName})`, () => {
  const env = { WARDEN_PLUGINS_DIR: path.join(repoRoot, "plugins") };

  it("adds one short line where its tools are missing, none to a call of another tool", async () => {
    const tools = await runWarden(["tools"], { env });
    assert.equal(tools.code, 0);
    assert.equal(
      tools.stderr,
      'warden: plugin licenses (unknown-signer) refused, so not listed; "warden plugin list" says why\n',
    );
    const call = await runWarden(["call", "host_context"], { env });
    assert.equal(call.code, 0);
    assert.equal(call.stderr, "");
  });

  it("keeps the structured plugin_refused line, with its fix, in the server's log", async () => {
    const session = await connect({ env });
    try {
      // No key is trusted, so the checks run after the initialize answer (core/main.ts).
      assert.ok(await eventually(() => session.stderr().includes('"event":"plugin_refused"')), session.stderr());
      const refused = session.stderr().split("\n").filter(Boolean).map((l) => JSON.parse(l))
        .find((l) => l.event === "plugin_refused");
      assert.equal(refused?.plugin, "licenses");
      assert.equal(refused?.status, "unknown-signer");
      assert.match(refused?.fix, /warden plugin verify plugins\/licenses.*warden plugin trust plugins\/licenses/);
    } finally {
      await session.close();
    }
  });
});

describe(`warden catalog --check once a plugin is trusted (${runtimeName})`, () => {
  it("checks the built-in contract and reports the plugin beside it, with its digests", async () => {
    const work = tempDir();
    try {
      const { dir, env } = exampleSetup(work.dir, true);
      const trust = await runWarden(["plugin", "trust", dir], { env, denoFlags: WRITE });
      assert.equal(trust.code, 0, trust.stderr);
      const manifest = /^manifest {4}(sha256:[0-9a-f]{64})$/m.exec(trust.stdout)![1];
      const golden = JSON.parse(readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8"));
      const check = await runWarden(["catalog", "--check"], { env });
      assert.equal(check.code, 0, check.stderr);
      const session = await connect({ env });
      let served: string;
      try {
        const host = await session.client.callTool({ name: "host_context", arguments: {} });
        served = (host.structuredContent as { catalogDigest: string }).catalogDigest;
        assert.ok((await session.client.listTools()).tools.some((t) => t.name === "licenses_list"));
      } finally {
        await session.close();
      }
      assert.notEqual(served, golden.digest, "the served catalog holds the plugin's tool too");
      // (Under deno without /proc, a plugin_limits_partial log line comes first.)
      assert.equal(
        check.stderr.split("\n").filter((l) => !l.startsWith("{")).join("\n"),
        `Catalog matches schema/catalog.json (${golden.digest})\n` +
          "Plugins beside it, not in schema/catalog.json; each pinned by its manifest digest in the lock file:\n" +
          `  licenses 1.0.0 (served): manifest ${manifest}, tools licenses_list\n` +
          `Served catalog, built-in tools and plugins together (host_context's digest): ${served}\n`,
      );
      const printed = await runWarden(["catalog"], { env });
      assert.equal(printed.stdout, readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8"));
      assert.ok(!printed.stdout.includes("licenses_list"));
    } finally {
      work.remove();
    }
  });
});
