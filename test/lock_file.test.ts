// The lock file: its absence pins nothing; warden plugin trust writes the
// whole pin in canonical, indented form, after which the plugin loads; every
// malformed form is refused with a message that names the file, the problem
// and the fix; and a lock file that cannot be read says so.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { runtimeName, runWarden, sshKeygen, tempDir, writeSignedEchoPlugin } from "./helpers.ts";

const NAMESPACE = "warden-plugin-v1";

type Listed = { id: string; status: string; reason: string | null; manifestDigest: string | null };

describe(`the lock file (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let env: Record<string, string>;
  let plugin: string;
  let fingerprint: string;
  let digest: string;
  before(() => {
    work = tempDir();
    const key = path.join(work.dir, "key");
    sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", "key", "-f", key);
    fingerprint = sshKeygen("-l", "-E", "sha256", "-f", `${key}.pub`).split(" ")[1];
    const [type, blob] = readFileSync(`${key}.pub`, "utf8").trim().split(" ");
    writeFileSync(
      path.join(work.dir, "allowed_signers"),
      `ada@warden.invalid namespaces="${NAMESPACE}" ${type} ${blob}\n`,
    );
    plugin = path.join(work.dir, "plugins", "solo");
    digest = writeSignedEchoPlugin(plugin, "solo", key);
    env = {
      WARDEN_PLUGINS_DIR: path.join(work.dir, "plugins"),
      WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
      WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "allowed_signers"),
    };
  });
  after(() => work?.remove());

  const list = async () => {
    const result = await runWarden(["plugin", "list", "--json"], { env });
    return { ...result, records: result.code === 0 ? JSON.parse(result.stdout) as Listed[] : [] };
  };

  it("a missing lock file pins nothing", async () => {
    rmSync(env.WARDEN_PLUGINS_LOCK, { force: true });
    const { code, records } = await list();
    assert.equal(code, 0);
    assert.deepEqual(records.map((r) => [r.id, r.status]), [["solo", "not-pinned"]]);
  });

  it("warden plugin trust writes the whole pin, canonical and indented, and the plugin then loads", async () => {
    rmSync(env.WARDEN_PLUGINS_LOCK, { force: true });
    const trust = await runWarden(["plugin", "trust", plugin], { env, denoFlags: ["--allow-write"] });
    assert.equal(trust.code, 0, trust.stderr);
    const text = readFileSync(env.WARDEN_PLUGINS_LOCK, "utf8");
    const lock = JSON.parse(text);
    const pinnedAt = lock.plugins.solo.pinnedAt;
    assert.match(pinnedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(
      text,
      `{\n  "lockVersion": 1,\n  "plugins": {\n    "solo": {\n      "fingerprint": "${fingerprint}",\n` +
        `      "manifestDigest": "${digest}",\n      "pinnedAt": "${pinnedAt}",\n` +
        `      "principal": "ada@warden.invalid",\n      "version": "1.0.0"\n    }\n  }\n}\n`,
    );
    const { records } = await list();
    assert.deepEqual(records.map((r) => [r.id, r.status]), [["solo", "verified"]]);
  });

  const pin = (edit: Record<string, unknown> = {}) => ({
    manifestDigest: digest,
    version: "1.0.0",
    principal: "ada@warden.invalid",
    fingerprint,
    pinnedAt: "2026-12-01T00:00:00.000Z",
    ...edit,
  });
  const malformed: { title: string; text: () => string; message: string | (() => string) }[] = [
    {
      title: "not JSON",
      text: () => '{"lockVersion":1,"plugins":{}',
      message: 'expected "," or "}" in $ at offset 29',
    },
    {
      title: "a duplicate key",
      text: () => '{"lockVersion":1,"lockVersion":1,"plugins":{}}',
      message: 'duplicate key "lockVersion" in $ at offset 30',
    },
    {
      title: "no object at all",
      text: () => "null",
      message: "(root): expected a JSON object, received null",
    },
    {
      title: "an array",
      text: () => "[]",
      message: "(root): expected a JSON object, received []",
    },
    {
      title: "another version",
      text: () => '{"lockVersion":2,"plugins":{}}',
      message: "lockVersion: Invalid type: Expected 1 but received 2",
    },
    {
      title: "a short digest",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { solo: pin({ manifestDigest: digest.slice(0, -1) }) } }),
      message: () =>
        `plugins.solo.manifestDigest: Invalid format: Expected /^sha256:[0-9a-f]{64}$/ but received "${
          digest.slice(0, -1)
        }"`,
    },
    {
      title: "a fingerprint that is not one",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { solo: pin({ fingerprint: "SHA256:short" }) } }),
      message:
        'plugins.solo.fingerprint: Invalid format: Expected /^SHA256:[A-Za-z0-9+/]{43}$/ but received "SHA256:short"',
    },
    {
      title: "an empty principal",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { solo: pin({ principal: "" }) } }),
      message: "plugins.solo.principal: Invalid length: Expected >=1 but received 0",
    },
    {
      title: "a date that is not one",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { solo: pin({ pinnedAt: "yesterday" }) } }),
      message: 'plugins.solo.pinnedAt: Invalid timestamp: Received "yesterday"',
    },
    {
      title: "an id that cannot be a plugin's",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { Solo: pin() } }),
      message: 'plugins.Solo: Invalid format: Expected /^[a-z][a-z0-9]{0,29}$/ but received "Solo"',
    },
    {
      title: "an unknown key",
      text: () => JSON.stringify({ lockVersion: 1, plugins: { solo: pin({ extra: true }) } }),
      message: 'plugins.solo.extra: Invalid key: Expected never but received "extra"',
    },
  ];
  for (const { title, text, message } of malformed) {
    it(`refuses a lock file with ${title}, naming the file, the problem and the fix`, async () => {
      writeFileSync(env.WARDEN_PLUGINS_LOCK, text());
      const { code, stdout, stderr } = await list();
      assert.equal(code, 2);
      assert.equal(stdout, "");
      assert.equal(
        stderr,
        `warden: Invalid plugin lock file ${env.WARDEN_PLUGINS_LOCK}: ${
          typeof message === "string" ? message : message()
        }; ` +
          'fix it, or delete it and pin again with "warden plugin trust"\n',
      );
    });
  }

  it("says when the lock file cannot be read", async () => {
    rmSync(env.WARDEN_PLUGINS_LOCK, { force: true });
    mkdirSync(env.WARDEN_PLUGINS_LOCK);
    try {
      const { code, stderr } = await list();
      assert.equal(code, 2);
      assert.ok(
        stderr.startsWith(`warden: Cannot read the plugin lock file ${env.WARDEN_PLUGINS_LOCK}: `),
        stderr,
      );
      assert.match(stderr, /: it is a directory, not a regular file\n$/);
    } finally {
      rmSync(env.WARDEN_PLUGINS_LOCK, { recursive: true, force: true });
    }
  });
});
