// The two plugin scopes, the user's and the project's `.warden/`: a project's
// plugins load only once the user accepted the project's allowed_signers and
// lock as they are (a repository must not trust itself), a change after that
// (a pull, a hand edit) refuses them again, the same id in both scopes loads
// the user's, and the commands that write into the project accept their own
// change but never one the user has not seen.
import assert from "node:assert/strict";
import { appendFileSync, cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { defaultPathsUnder, runtimeName, runWarden, sshKeygen, tempDir, writeSignedEchoPlugin } from "./helpers.ts";

const NAMESPACE = "warden-plugin-v1";

type Listed = { id: string; scope: string; status: string; reason: string | null; fix: string | null };

describe(`a project's plugins and their acceptance (${runtimeName})`, () => {
  let work: { dir: string; remove: () => void };
  let project: string;
  let env: Record<string, string>;
  let key: string;
  let signersLine: string;
  let pin: Record<string, string>;
  before(() => {
    work = tempDir();
    project = path.join(work.dir, "project");
    key = path.join(work.dir, "key");
    sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", "key", "-f", key);
    const fingerprint = sshKeygen("-l", "-E", "sha256", "-f", `${key}.pub`).split(" ")[1];
    const [type, blob] = readFileSync(`${key}.pub`, "utf8").trim().split(" ");
    signersLine = `team@warden.invalid namespaces="${NAMESPACE}" ${type} ${blob}\n`;
    const plugin = path.join(project, ".warden", "plugins", "solo");
    pin = {
      manifestDigest: writeSignedEchoPlugin(plugin, "solo", key),
      version: "1.0.0",
      principal: "team@warden.invalid",
      fingerprint,
      pinnedAt: "2026-12-01T00:00:00.000Z",
    };
    // The user's directories are the test's; no path setting, so every default is used ("" is unset).
    env = defaultPathsUnder(path.join(work.dir, "config"), path.join(work.dir, "state"));
  });
  after(() => work?.remove());

  const warden = (args: string[]) => runWarden(args, { env, cwd: project });
  const list = async () => {
    const result = await warden(["plugin", "list", "--json"]);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Listed[];
  };
  /** The repository as a clone or a pull brings it: its own key and its own pin. */
  const shipTrust = () => {
    writeFileSync(path.join(project, ".warden", "allowed_signers"), signersLine);
    writeFileSync(
      path.join(project, ".warden", "plugins.lock.json"),
      JSON.stringify({ lockVersion: 1, plugins: { solo: pin } }),
    );
  };
  const forget = () => rmSync(path.join(work.dir, "state"), { recursive: true, force: true });

  it("refuses a project's own key and pin until the user accepts them, then loads and runs its plugin", async () => {
    forget();
    shipTrust();
    const refused = await list();
    assert.deepEqual(refused.map((r) => [r.id, r.scope, r.status]), [["solo", "project", "project-not-accepted"]]);
    assert.equal(
      refused[0].reason,
      "the project's .warden/allowed_signers and .warden/plugins.lock.json were never accepted",
    );
    assert.equal(
      refused[0].fix,
      'review them ("warden project status" or "warden doctor" shows what changed), then run "warden project accept"',
    );
    const tools = await warden(["tools", "--json"]);
    assert.ok(!tools.stdout.includes("solo_echo"), "a refused plugin adds no tool");
    assert.match(tools.stderr, /plugin solo \(project-not-accepted\) refused/);

    // Reviewed from the shell: the project's own key does not count before it is accepted.
    const verify = await warden(["plugin", "verify", ".warden/plugins/solo"]);
    assert.equal(verify.code, 1);
    assert.match(verify.stdout, /^status {6}unknown-signer: key SHA256:\S+ is not in allowed_signers$/m);
    assert.match(verify.stdout, /^scope {7}project$/m);
    const status = await warden(["project", "status", "--json"]);
    assert.equal(JSON.parse(status.stdout).state, "not-accepted");
    const accept = await warden(["project", "accept"]);
    assert.equal(accept.code, 0, accept.stderr);
    assert.match(
      accept.stdout,
      /^Accepted .*project\/\.warden: allowed_signers sha256:[0-9a-f]{64}, plugins\.lock\.json sha256:[0-9a-f]{64}; /,
    );
    // Recorded in the user's state directory, nowhere in the project.
    const record = JSON.parse(readFileSync(path.join(work.dir, "state", "warden", "accepted_projects.json"), "utf8"));
    assert.deepEqual(Object.keys(record.projects), [path.join(project, ".warden")]);

    assert.deepEqual((await list()).map((r) => [r.id, r.scope, r.status]), [["solo", "project", "verified"]]);
    assert.match((await warden(["plugin", "verify", ".warden/plugins/solo"])).stdout, /^status {6}verified$/m);
    const call = await warden(["call", "solo_echo", "--arg", "text=hello", "--json"]);
    assert.equal(call.code, 0, call.stderr);
    assert.deepEqual(JSON.parse(JSON.parse(call.stdout).content[0].text), { text: "hello" });
  });

  it("refuses them again after the lock is edited by hand, says which file changed, and loads once it is accepted again", async () => {
    forget();
    shipTrust();
    assert.equal((await warden(["project", "accept"])).code, 0);
    const lockFile = path.join(project, ".warden", "plugins.lock.json");
    writeFileSync(
      lockFile,
      JSON.stringify({ lockVersion: 1, plugins: { solo: { ...pin, pinnedAt: "2026-12-02T00:00:00.000Z" } } }),
    );
    const [record] = await list();
    assert.equal(record.status, "project-not-accepted");
    assert.equal(record.reason, "the project's .warden/plugins.lock.json changed since you accepted it");
    const verify = await warden(["plugin", "verify", ".warden/plugins/solo"]);
    assert.equal(verify.code, 1);
    assert.match(
      verify.stdout,
      /^status {6}project-not-accepted: the project's \.warden\/plugins\.lock\.json changed since you accepted it$/m,
    );
    const status = JSON.parse((await warden(["project", "status", "--json"])).stdout);
    assert.equal(status.state, "changed");
    assert.deepEqual(status.changed, ["plugins.lock.json"]);
    const doctor = await warden(["doctor"]);
    assert.equal(doctor.code, 1, doctor.stdout);
    assert.match(
      doctor.stdout,
      /^FAIL +project +changed: \.warden\/plugins\.lock\.json changed since you accepted it, so its plugins are refused; fix: .*warden project accept/m,
    );
    assert.equal((await warden(["project", "accept"])).code, 0);
    assert.equal((await list())[0].status, "verified");
    // A new key shipped beside it is a change too.
    appendFileSync(path.join(project, ".warden", "allowed_signers"), "# another line\n");
    assert.equal((await list())[0].reason, "the project's .warden/allowed_signers changed since you accepted it");
  });

  it("loads the user's plugin when both scopes hold the same id, and refuses the project's naming both", async () => {
    forget();
    shipTrust();
    assert.equal((await warden(["project", "accept"])).code, 0);
    const userPlugins = path.join(work.dir, "config", "warden", "plugins");
    cpSync(path.join(project, ".warden", "plugins", "solo"), path.join(userPlugins, "solo"), { recursive: true });
    try {
      const records = await list();
      assert.deepEqual(records.map((r) => [r.id, r.scope, r.status]), [
        ["solo", "user", "unknown-signer"],
        ["solo", "project", "duplicate-id"],
      ]);
      assert.equal(
        records[1].reason,
        "plugin solo is both in the user's plugins directory and in the project's .warden/plugins; the user's is the one loaded",
      );
    } finally {
      rmSync(userPlugins, { recursive: true, force: true });
    }
  });

  it("allow-signer --project and trust accept what they write into the project, and refuse to write over a change not accepted", async () => {
    forget();
    rmSync(path.join(project, ".warden", "allowed_signers"), { force: true });
    rmSync(path.join(project, ".warden", "plugins.lock.json"), { force: true });
    const allow = await warden(["plugin", "allow-signer", "team@warden.invalid", "--key", `${key}.pub`, "--project"]);
    assert.equal(allow.code, 0, allow.stderr);
    assert.equal(readFileSync(path.join(project, ".warden", "allowed_signers"), "utf8"), signersLine);
    const trust = await warden(["plugin", "trust", ".warden/plugins/solo"]);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /scope +project/);
    assert.match(
      trust.stdout,
      /Pinned solo 1\.0\.0 at sha256:[0-9a-f]{64} in .*\/project\/\.warden\/plugins\.lock\.json;/,
    );
    // No "warden project accept": the user made both changes.
    assert.deepEqual((await list()).map((r) => [r.scope, r.status]), [["project", "verified"]]);
    // The user's own lock was not touched.
    assert.throws(() => readFileSync(path.join(work.dir, "config", "warden", "plugins.lock.json")), /ENOENT/);

    // A pull changes the lock: trusting now would accept that change unseen.
    const lockFile = path.join(project, ".warden", "plugins.lock.json");
    writeFileSync(
      lockFile,
      readFileSync(lockFile, "utf8").replace(/"pinnedAt": "[^"]+"/, '"pinnedAt": "2026-12-02T00:00:00.000Z"'),
    );
    const again = await warden(["plugin", "trust", ".warden/plugins/solo"]);
    assert.equal(again.code, 2);
    assert.equal(
      again.stderr,
      `warden: Cannot change the project's .warden/plugins.lock.json: it changed since you accepted it; review it ("git log -p -- .warden/", "warden project status"), run "warden project accept", then run this again\n`,
    );
    const allowAgain = await warden([
      "checks",
      "allow-signer",
      "team@warden.invalid",
      "--key",
      `${key}.pub`,
      "--project",
    ]);
    // Check manifests' signers are the user's only: --project is not taken there.
    assert.equal(allowAgain.code, 2);
    assert.equal(
      allowAgain.stderr,
      'warden: Invalid command line: unexpected "--project"; run "warden checks help"\n',
    );
  });
});
