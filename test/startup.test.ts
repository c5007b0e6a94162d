// What a server settles before it answers and what may wait: with no key trusted no plugin can load, so the plugin
// checks run after the initialize answer; the catalog, tools/list, the refusals and the startup line stay the same.
// The catalog's digest is hashed after that answer too. And the protocol version host_context reports is the one the
// initialize answer carried.
import assert from "node:assert/strict";
import { cpSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { eventually, initializeMessage, repoRoot, runtimeName, startRaw, tempDir } from "./helpers.ts";

const TRUST = path.join(repoRoot, "test/fixtures/trust");
const FINGERPRINT = "SHA256:U5TnVnq0X/MHWlo45Gyto+XsgifUYXqQEF5OjOhukTE";

/** A copy of the example plugin; `trusted`: its signer in allowed_signers (it is still refused: not pinned). */
function examplePlugins(work: string, trusted: boolean): Record<string, string> {
  const plugins = path.join(work, "plugins");
  cpSync(path.join(repoRoot, "plugins", "licenses"), path.join(plugins, "licenses"), { recursive: true });
  return {
    WARDEN_PLUGINS_DIR: plugins,
    WARDEN_PLUGINS_LOCK: path.join(work, "plugins.lock.json"),
    WARDEN_ALLOWED_SIGNERS: trusted ? path.join(TRUST, "allowed_signers") : path.join(work, "no_signers"),
  };
}

const call = (id: number, name: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: {} },
});

const readyLine = (stderr: string) =>
  JSON.parse(stderr.split("\n").find((line) => line.includes('"event":"ready"')) ?? "null");

describe(`plugin checks after the initialize answer, when no key is trusted (${runtimeName})`, () => {
  it("serves the same catalog, and a call sent at once waits for the refusals", async () => {
    const work = tempDir();
    const answers: Record<string, { list: string; digest: unknown; extensions: unknown; refusal: unknown }> = {};
    try {
      for (const trusted of [false, true]) {
        const raw = startRaw({ env: examplePlugins(path.join(work.dir, String(trusted)), trusted) });
        try {
          // Pipelined, as a client may: the calls arrive while the deferred checks may still run.
          raw.send(
            [
              initializeMessage(1),
              { jsonrpc: "2.0", method: "notifications/initialized" },
              call(2, "extension_list"),
              call(3, "licenses_list"),
              call(4, "host_context"),
              { jsonrpc: "2.0", id: 5, method: "tools/list" },
            ].map((m) => JSON.stringify(m)).join("\n"),
          );
          const extensions = await raw.next((m) => m.id === 2);
          const refusal = await raw.next((m) => m.id === 3);
          const facts = await raw.next((m) => m.id === 4);
          await raw.next((m) => m.id === 5);
          raw.closeStdin();
          assert.equal((await raw.exited()).code, 0);
          const list = raw.lines().find((line) => line.includes('"id":5,'))!;
          answers[String(trusted)] = {
            list: list.replace('"id":5,', ""),
            digest: (facts.result as { structuredContent: { catalogDigest: string } }).structuredContent.catalogDigest,
            extensions: (extensions.result as { structuredContent: { totals: unknown } }).structuredContent.totals,
            refusal: (refusal.error as { message: string }).message,
          };
          const ready = readyLine(raw.stderr());
          assert.deepEqual(ready.plugins, { loaded: [], refused: ["licenses"] }, "the startup line lists them");
          assert.equal(ready.catalog, answers[String(trusted)].digest);
          assert.match(raw.stderr(), /"event":"plugin_refused","plugin":"licenses"/);
        } finally {
          raw.kill();
        }
      }
      const [untrusted, trusted] = [answers.false, answers.true];
      assert.deepEqual(untrusted.extensions, { "unknown-signer": 1 }, "extension_list waited for the checks");
      assert.deepEqual(trusted.extensions, { "not-pinned": 1 });
      const why =
        `Tool "licenses_list" is not served: its plugin "licenses" is refused (unknown-signer: key ${FINGERPRINT}`;
      assert.ok(String(untrusted.refusal).startsWith(`MCP error -32602: ${why}`), String(untrusted.refusal));
      assert.equal(untrusted.list, trusted.list, "tools/list is the same byte for byte");
      assert.equal(untrusted.digest, trusted.digest, "so is the catalog digest");
    } finally {
      work.remove();
    }
  });

  it("checks them and says the startup line when no client speaks", async () => {
    const work = tempDir();
    const raw = startRaw({ env: examplePlugins(work.dir, false) });
    try {
      assert.ok(await eventually(() => readyLine(raw.stderr()) !== null), `a ready line; stderr:\n${raw.stderr()}`);
      assert.deepEqual(readyLine(raw.stderr()).plugins, { loaded: [], refused: ["licenses"] });
    } finally {
      raw.kill();
      work.remove();
    }
  });
});

describe(`the catalog digest, hashed after the initialize answer (${runtimeName})`, () => {
  it("says the startup line with the catalog's digest when no client speaks and no plugin waits", async () => {
    // No plugins: the digest alone is what waits, started by the fallback timer when no initialize comes.
    const quiet = startRaw();
    try {
      assert.ok(await eventually(() => readyLine(quiet.stderr()) !== null), `a ready line; stderr:\n${quiet.stderr()}`);
      const golden = JSON.parse(readFileSync(path.join(repoRoot, "schema/catalog.json"), "utf8")).digest;
      assert.equal(readyLine(quiet.stderr()).catalog, golden);
    } finally {
      quiet.kill();
    }
  });
});

describe(`the protocol version host_context reports (${runtimeName})`, () => {
  it("is the one the initialize answer carried, for each version", async () => {
    const raw = startRaw();
    try {
      // One server, initialized again and again: each answer sets what it reports.
      for (const [i, version] of [...SUPPORTED_PROTOCOL_VERSIONS, "1999-01-01"].entries()) {
        raw.request(initializeMessage(10 * i, version));
        const agreed = ((await raw.next((m) => m.id === 10 * i)).result as { protocolVersion: string }).protocolVersion;
        assert.equal(agreed, SUPPORTED_PROTOCOL_VERSIONS.includes(version) ? version : SUPPORTED_PROTOCOL_VERSIONS[0]);
        raw.request(call(10 * i + 1, "host_context"));
        const facts = (await raw.next((m) => m.id === 10 * i + 1)).result as {
          structuredContent: { protocolVersion: string };
        };
        assert.equal(facts.structuredContent.protocolVersion, agreed, `asked for ${version}`);
      }
    } finally {
      raw.kill();
    }
  });
});
