// A pin is the manifest's whole digest and the key that signed it: the same
// manifest re-signed by another trusted key, a digest that differs from the
// pinned one only in its last character, and a pinned fingerprint that does,
// are each refused as pin-mismatch, and their tools are not served. Keys and
// signatures come from ssh-keygen itself, not from warden's own code. The
// ledger records a call to a pinned plugin with that identity.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, runtimeName, runWarden, sshKeygen, tempDir, writeSignedEchoPlugin } from "./helpers.ts";

const NAMESPACE = "warden-plugin-v1";

/** Flips the last character of a hex or base64 string to another of its alphabet. */
function lastCharChanged(text: string): string {
  const last = text.at(-1)!;
  return text.slice(0, -1) + (last === "0" ? "1" : last === "A" ? "B" : "0");
}

type Listed = { id: string; status: string; reason: string | null; manifestDigest: string | null };

describe(`plugin pins compare the whole digest and the signer (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let env: Record<string, string>;
  let listed: Map<string, Listed>;
  let served: string[];
  const fingerprints: Record<string, string> = {};
  const digests: Record<string, string> = {};
  const rows: { tool?: string; plugin?: unknown }[] = [];

  before(async () => {
    work = tempDir();
    const plugins = path.join(work.dir, "plugins");
    const signers: string[] = [];
    for (const name of ["first", "second"]) {
      const key = path.join(work.dir, name);
      sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key);
      const pub = sshKeygen("-l", "-E", "sha256", "-f", `${key}.pub`);
      fingerprints[name] = pub.split(" ")[1];
      const [type, blob] = readFileSync(`${key}.pub`, "utf8").trim().split(" ");
      signers.push(`${name}@warden.invalid namespaces="${NAMESPACE}" ${type} ${blob}`);
    }
    writeFileSync(path.join(work.dir, "allowed_signers"), signers.join("\n") + "\n");

    // The same manifest bytes for every id but its own, signed by `key` with ssh-keygen -Y sign.
    const write = (id: string, key: string) => {
      digests[id] = writeSignedEchoPlugin(path.join(plugins, id), id, path.join(work.dir, key));
    };
    const pin = (digest: string, fingerprint: string) => ({
      manifestDigest: digest,
      version: "1.0.0",
      principal: "first@warden.invalid",
      fingerprint,
      pinnedAt: "2026-12-01T00:00:00.000Z",
    });

    write("exact", "first");
    write("resigned", "second");
    write("digesttail", "first");
    write("keytail", "first");
    const pins = {
      exact: pin(digests.exact, fingerprints.first),
      // Pinned as the first key signed it; the same bytes now carry the second (also trusted) key's signature.
      resigned: pin(digests.resigned, fingerprints.first),
      digesttail: pin(lastCharChanged(digests.digesttail), fingerprints.first),
      keytail: pin(digests.keytail, lastCharChanged(fingerprints.first)),
    };
    writeFileSync(path.join(work.dir, "plugins.lock.json"), JSON.stringify({ lockVersion: 1, plugins: pins }));
    env = {
      WARDEN_PLUGINS_DIR: plugins,
      WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
      WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "allowed_signers"),
      WARDEN_REVOKED_KEYS: path.join(work.dir, "revoked_keys"),
    };
    const list = await runWarden(["plugin", "list", "--json"], { env });
    assert.equal(list.code, 0, list.stderr);
    listed = new Map((JSON.parse(list.stdout) as Listed[]).map((r) => [r.id, r]));
    const session = await connect({ env: { ...env, WARDEN_LEDGER: path.join(work.dir, "ledger") } });
    try {
      served = (await session.client.listTools()).tools.map((t) => t.name);
      if (served.includes("exact_echo")) {
        await session.client.callTool({ name: "exact_echo", arguments: { text: "hi" } });
        await session.client.callTool({ name: "host_context", arguments: {} });
      }
    } finally {
      await session.close();
    }
    for (const file of readdirSync(path.join(work.dir, "ledger"))) {
      for (const line of readFileSync(path.join(work.dir, "ledger", file), "utf8").split("\n")) {
        if (line) rows.push(JSON.parse(line));
      }
    }
  });
  after(() => work?.remove());

  it("serves the plugin whose pin matches exactly", () => {
    assert.equal(listed.get("exact")?.status, "verified", JSON.stringify(listed.get("exact")));
    assert.ok(served.includes("exact_echo"));
  });

  it("records a call to the pinned plugin with its id and pinned digest, and a built-in's with none", () => {
    const plugin = rows.filter((r) => r.tool === "exact_echo");
    assert.ok(plugin.length > 0, "the plugin's call has a ledger row");
    for (const row of plugin) assert.deepEqual(row.plugin, { id: "exact", manifestDigest: digests.exact });
    const builtin = rows.filter((r) => r.tool === "host_context");
    assert.ok(builtin.length > 0, "the built-in's call has a ledger row");
    for (const row of builtin) assert.equal(row.plugin, null);
  });

  it("refuses the same manifest re-signed by another trusted key", () => {
    const record = listed.get("resigned")!;
    assert.equal(record.manifestDigest, digests.resigned, "the digest is the pinned one");
    assert.equal(record.status, "pin-mismatch", JSON.stringify(record));
    assert.equal(record.reason, `pinned for key ${fingerprints.first}, signed by ${fingerprints.second}`);
    assert.ok(!served.includes("resigned_echo"));
  });

  it("refuses a digest that differs from the pin only in its last character", () => {
    const record = listed.get("digesttail")!;
    assert.equal(record.status, "pin-mismatch", JSON.stringify(record));
    assert.equal(record.reason, `pinned at ${lastCharChanged(digests.digesttail)}, found ${digests.digesttail}`);
    assert.ok(!served.includes("digesttail_echo"));
  });

  it("refuses a pinned fingerprint that differs from the signer's only in its last character", () => {
    const record = listed.get("keytail")!;
    assert.equal(record.status, "pin-mismatch", JSON.stringify(record));
    assert.equal(
      record.reason,
      `pinned for key ${lastCharChanged(fingerprints.first)}, signed by ${fingerprints.first}`,
    );
    assert.ok(!served.includes("keytail_echo"));
  });
});
