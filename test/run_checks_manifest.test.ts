// A repository's own check manifest (.warden/checks.json), as an operator
// trusts one and an agent runs it: keys and signatures made by ssh-keygen
// itself, the key allowed and the manifest pinned with `warden checks`, and
// then run_checks over stdio. Signed by an allowed signer and pinned → its
// checks run (a planted failure FAILs); each way of not being trusted →
// refused, naming why and the command that fixes it; a trusted but malformed
// manifest → refused naming the field. And the operator's setting that lets a
// named check that runs the repository's code run where no isolation is in
// force: without it ERROR, with it the check runs and the answer says so.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { readManifest } from "../tools/lib/checks/manifest.ts";
import { connect, eventually, repoRoot, runtimeName, runWarden, type Session, tempDir, textOf } from "./helpers.ts";

const NAMESPACE = "warden-checks";
const DENO = path.join(repoRoot, "node_modules/.bin");

interface Answer {
  gate: string;
  summary: string;
  checks: { name: string; status: string; reason: string | null; exitCode: number | null }[];
  findings: { check: string; file: string | null; line: number | null; rule: string | null; message: string }[];
  reducedCoverage: boolean;
  coverageReasons: string[];
  manifest: { digest: string; signer: { principal: string; fingerprint: string } } | null;
}

function run(cwd: string, ...argv: string[]): string {
  const result = spawnSync(argv[0], argv.slice(1), {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  });
  if (result.error) throw new Error(`${argv[0]} did not run: ${result.error.message}`);
  assert.equal(result.status, 0, `${argv.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

/** A git repository with one commit of `files`. */
function repository(dir: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  run(dir, "git", "init", "-q", "-b", "main");
  run(dir, "git", "config", "user.email", "test@example.com");
  run(dir, "git", "config", "user.name", "test");
  run(dir, "git", "add", "-A");
  run(dir, "git", "commit", "-q", "-m", "start");
}

const digestOf = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

/** The checks of the manifest the operator trusts: a marker no tracked file may carry, and deno lint on src/. */
const GOOD = JSON.stringify(
  {
    version: 1,
    checks: [
      {
        id: "no-ship-marker",
        description: "No tracked file carries the do-not-ship marker.",
        entry: "git",
        // A pattern that does not match itself: the manifest is a tracked file too.
        args: ["grep", "-q", "-I", "-e", "DO NOT SHI[P]", "--", "."],
        pass_filenames: false,
        // git grep exits 1 when it finds nothing: that is the pass.
        success_codes: [1],
        output: "pass-fail",
        executes_repo_code: false,
      },
      {
        id: "deno-lint",
        entry: "deno",
        args: ["lint", "--json"],
        files: ["src/**/*.ts"],
        success_codes: [0, 1],
        output: "deno-lint-json",
        executes_repo_code: false,
      },
    ],
  },
  null,
  2,
);

/** A manifest whose one check runs only as an approved plan. */
const GATED = JSON.stringify({
  version: 1,
  checks: [{ ...JSON.parse(GOOD).checks[0], approval: "required" }],
});

/** A manifest of one check that runs a script of the repository: only isolated, or where the operator allows it. */
const OWN = JSON.stringify({
  version: 1,
  checks: [{
    id: "own-script",
    entry: "node",
    args: ["./scripts/check.mjs"],
    pass_filenames: false,
    output: "pass-fail",
    executes_repo_code: true,
  }],
});

describe(`run_checks with a repository's check manifest (${runtimeName})`, () => {
  const work = tempDir("warden-manifest-");
  const keys = path.join(work.dir, "keys");
  const files: Record<string, string> = {
    WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "allowed_signers"),
    WARDEN_REVOKED_KEYS: path.join(work.dir, "revoked_keys"),
    WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
    WARDEN_APPROVERS_SIGNERS: path.join(work.dir, "approvers_allowed_signers"),
    WARDEN_JOBS_DIR: path.join(work.dir, "jobs"),
    // The projects this suite accepts are recorded here, not in the state directory other suites share.
    XDG_STATE_HOME: path.join(work.dir, "state"),
  };
  const fingerprints: Record<string, string> = {};
  const digests: Record<string, string> = {};
  const roots: Record<string, string> = {};
  const rootArgs = () => Object.entries(roots).flatMap(([id, dir]) => ["--root", `${id}=${dir}`]);
  let session: Session | undefined;
  const cli: Record<string, { code: number | null; stdout: string; stderr: string }> = {};

  const key = (name: string) => path.join(keys, name);
  const sign = (dir: string, by: string, namespace = NAMESPACE) => {
    // ssh-keygen does not replace a signature that is there.
    rmSync(path.join(dir, ".warden/checks.json.sig"), { force: true });
    run(dir, "ssh-keygen", "-Y", "sign", "-q", "-n", namespace, "-f", key(by), ".warden/checks.json");
  };
  /** A repository at root `id` with `manifest`, signed by `by` (unsigned when null). */
  const manifestRoot = (id: string, manifest: string, by: string | null, extra: Record<string, string> = {}) => {
    const dir = path.join(work.dir, "roots", id);
    mkdirSync(dir, { recursive: true });
    repository(dir, { "src/ok.ts": "export const ok = 1;\n", ".warden/checks.json": manifest, ...extra });
    if (by) sign(dir, by);
    digests[id] = digestOf(manifest);
    roots[id] = dir;
    return dir;
  };
  const warden = async (args: string[]) => await runWarden([...args, ...rootArgs()], { env: files });

  before(async () => {
    mkdirSync(keys);
    for (const name of ["trusted", "second", "pluginonly", "stranger", "revoked", "expired"]) {
      run(work.dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key(name));
      fingerprints[name] = run(work.dir, "ssh-keygen", "-l", "-E", "sha256", "-f", `${key(name)}.pub`).split(" ")[1];
    }
    // The operator allows keys as the README says: `warden checks allow-signer` for check manifests, `warden plugin
    // allow-signer` for plugins only.
    for (const name of ["trusted", "second", "revoked"]) {
      const allowed = await runWarden(
        ["checks", "allow-signer", `${name}@warden.invalid`, "--key", `${key(name)}.pub`],
        { env: files },
      );
      assert.equal(allowed.code, 0, allowed.stderr);
      cli[`allow-${name}`] = allowed;
    }
    const plugin = await runWarden(
      ["plugin", "allow-signer", "pluginonly@warden.invalid", "--key", `${key("pluginonly")}.pub`],
      { env: files },
    );
    assert.equal(plugin.code, 0, plugin.stderr);
    const [type, blob] = readFileSync(`${key("expired")}.pub`, "utf8").trim().split(" ");
    writeFileSync(
      files.WARDEN_ALLOWED_SIGNERS,
      `${
        readFileSync(files.WARDEN_ALLOWED_SIGNERS, "utf8")
      }expired@warden.invalid namespaces="${NAMESPACE}",valid-before="20200101Z" ${type} ${blob}\n`,
    );
    writeFileSync(files.WARDEN_REVOKED_KEYS, readFileSync(`${key("revoked")}.pub`, "utf8"));

    manifestRoot("good", GOOD, "trusted");
    manifestRoot("gated", GATED, "trusted");
    // "second" approves plans too.
    writeFileSync(
      files.WARDEN_APPROVERS_SIGNERS,
      `second@warden.invalid namespaces="warden-approval-v1" ${readFileSync(`${key("second")}.pub`, "utf8")}`,
    );
    manifestRoot("unsigned", GOOD, null);
    const tampered = manifestRoot("tampered", GOOD, "trusted");
    writeFileSync(path.join(tampered, ".warden/checks.json"), GOOD.replace("DO NOT SHI[P]", "DO NOT MERG[E]"));
    const wrong = manifestRoot("wrongns", GOOD, null);
    sign(wrong, "trusted", "warden-plugin-v1");
    manifestRoot("stranger", GOOD, "stranger");
    // A repository that trusts itself: its .warden names its own key and pins its own manifest, and the user accepted
    // that project (its plugins' trust). Check manifests are trusted by the user's files only: it is still a stranger.
    const [strangerType, strangerBlob] = readFileSync(`${key("stranger")}.pub`, "utf8").trim().split(" ");
    const self = manifestRoot("selfsigned", GOOD, "stranger", {
      ".warden/allowed_signers":
        `self@warden.invalid namespaces="${NAMESPACE},warden-plugin-v1" ${strangerType} ${strangerBlob}\n`,
      ".warden/plugins.lock.json": JSON.stringify({
        lockVersion: 1,
        plugins: {},
        checks: {
          selfsigned: {
            manifestDigest: digestOf(GOOD),
            principal: "self@warden.invalid",
            fingerprint: fingerprints.stranger,
            pinnedAt: "2026-12-01T00:00:00.000Z",
          },
        },
      }),
    });
    files.WARDEN_PROJECT_DIR = path.join(self, ".warden");
    const accepted = await runWarden(["project", "accept"], { env: files });
    assert.equal(accepted.code, 0, accepted.stderr);
    manifestRoot("pluginonly", GOOD, "pluginonly");
    manifestRoot("revoked", GOOD, "revoked");
    manifestRoot("expired", GOOD, "expired");
    manifestRoot("unpinned", GOOD, "trusted");
    const changed = manifestRoot("changed", GOOD, "trusted");
    const resigned = manifestRoot("resigned", GOOD, "trusted");
    const malformed = JSON.stringify({
      version: 1,
      checks: [{ id: "py", entry: "python", args: ["-m", "pytest"], output: "pass-fail", executes_repo_code: true }],
    });
    manifestRoot("malformed", malformed, "trusted");
    // A manifest that leads out of its root: what it points at is not the repository's to name.
    const outside = manifestRoot("outside", GOOD, null);
    writeFileSync(path.join(work.dir, "elsewhere.json"), GOOD);
    rmSync(path.join(outside, ".warden/checks.json"));
    symlinkSync(path.join(work.dir, "elsewhere.json"), path.join(outside, ".warden/checks.json"));
    const none = path.join(work.dir, "roots", "none");
    mkdirSync(none, { recursive: true });
    repository(none, { "src/ok.ts": "export const ok = 1;\n" });
    roots.none = none;

    // The operator pins what they reviewed; then the repository changes under the pins.
    for (const id of ["good", "gated", "changed", "resigned", "malformed"]) {
      cli[`trust-${id}`] = await warden(["checks", "trust", id]);
      assert.equal(cli[`trust-${id}`].code, 0, cli[`trust-${id}`].stderr);
    }
    const changedManifest = GOOD.replace('"deno-lint"', '"lint"');
    writeFileSync(path.join(changed, ".warden/checks.json"), changedManifest);
    sign(changed, "trusted");
    digests.changedNow = digestOf(changedManifest);
    // The same bytes, signed again by another key the operator also allows.
    sign(resigned, "second");
    cli["trust-unsigned"] = await warden(["checks", "trust", "unsigned"]);
    cli["verify-changed"] = await warden(["checks", "verify", "changed"]);

    // The change an agent is about to commit: a marker no file may carry, and a lint error in src/ (and one outside
    // src/, which the manifest's `files` leaves out).
    for (const file of ["src/bad.ts", "other/bad.ts"]) {
      mkdirSync(path.join(roots.good, path.dirname(file)), { recursive: true });
      writeFileSync(
        path.join(roots.good, file),
        "// DO NOT SHIP: debugging\nexport function trace(): void {\n  debugger;\n}\n",
      );
    }
    run(roots.good, "git", "add", "-A");

    session = await connect({
      args: rootArgs(),
      env: { ...files, PATH: `${DENO}${path.delimiter}${process.env.PATH}` },
    });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  const call = async (args: Record<string, unknown>) => {
    const result = await session!.client.callTool({ name: "run_checks", arguments: args }, undefined, {
      timeout: 120_000,
    });
    return {
      result,
      code: (result._meta as Record<string, unknown> | undefined)?.["warden/error_code"],
      answer: result.isError ? undefined : result.structuredContent as unknown as Answer,
    };
  };

  it("pins with `warden checks trust`: the digest and the signer, by root id, in the lock file", () => {
    assert.match(
      cli["allow-trusted"].stdout,
      new RegExp(
        `^Trusted ${fingerprints.trusted.replace(/[+/]/g, "\\$&")} as trusted@warden.invalid for warden-checks in `,
      ),
    );
    assert.match(cli["trust-good"].stdout, /^status {6}trusted$/m);
    const lock = JSON.parse(readFileSync(files.WARDEN_PLUGINS_LOCK, "utf8"));
    assert.deepEqual(Object.keys(lock.checks).sort(), ["changed", "gated", "good", "malformed", "resigned"]);
    assert.equal(lock.checks.good.manifestDigest, digests.good);
    assert.equal(lock.checks.good.fingerprint, fingerprints.trusted);
    assert.equal(lock.checks.good.principal, "trusted@warden.invalid");
    assert.deepEqual(lock.plugins, {});
  });

  it("refuses to pin an unsigned manifest, and verify shows a pin that no longer matches", () => {
    assert.equal(cli["trust-unsigned"].code, 1);
    assert.match(
      cli["trust-unsigned"].stderr,
      /^Not pinned: the check manifest of root unsigned is unsigned\. sign it \(ssh-keygen -Y sign -f <key> -n warden-checks \.warden\/checks\.json/,
    );
    assert.match(cli["verify-changed"].stdout, /^status {6}pin-mismatch: the pinned digest differs/m);
    assert.match(
      cli["verify-changed"].stdout,
      /^next {8}this is not the manifest you pinned; if you trust it, pin it again: warden checks trust changed$/m,
    );
  });

  it("runs a signed, pinned manifest's checks as group repo: the planted marker and lint error FAIL", async () => {
    const { result, answer } = await call({ project_id: "good", group: "repo" });
    assert.ok(answer, textOf(result));
    assert.equal(answer.gate, "FAIL", answer.summary);
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status]), [
      ["repo/no-ship-marker", "failed"],
      ["repo/deno-lint", "failed"],
    ]);
    assert.deepEqual(
      answer.findings.map((f) => [f.check, f.file, f.line, f.rule]),
      [["repo/no-ship-marker", null, null, null], ["repo/deno-lint", "src/bad.ts", 3, "no-debugger"]],
      "other/bad.ts is outside the manifest's files glob",
    );
    assert.match(answer.findings[0].message, /^git exited with 0/);
    // The answer names what it trusted: the manifest's digest and who signed it, as pinned.
    assert.deepEqual(answer.manifest, {
      digest: digests.good,
      signer: { principal: "trusted@warden.invalid", fingerprint: fingerprints.trusted },
    });
    assert.match(
      answer.summary,
      /^FAIL: not safe to ship: 2 finding\(s\) at or above high \(repo\/no-ship-marker: 1, repo\/deno-lint: 1\)\.$/,
    );
  });

  it("runs them in default too, beside the bundled groups", async () => {
    const { answer, result } = await call({ project_id: "good" });
    assert.ok(answer, textOf(result));
    const names = answer.checks.map((c) => c.name);
    assert.ok(names.includes("repo/no-ship-marker") && names.includes("hygiene/secrets"), names.join(", "));
    assert.equal(answer.gate, "FAIL");
  });

  it("passes when the change carries neither", async () => {
    run(roots.good, "git", "rm", "-q", "--cached", "src/bad.ts", "other/bad.ts");
    try {
      const { answer, result } = await call({ project_id: "good", group: "repo" });
      assert.ok(answer, textOf(result));
      assert.equal(answer.gate, "PASS", answer.summary);
      assert.deepEqual(answer.checks.map((c) => [c.name, c.status]), [
        ["repo/no-ship-marker", "passed"],
        ["repo/deno-lint", "skipped"],
      ]);
    } finally {
      run(roots.good, "git", "add", "-A");
    }
  });

  it("reads the trust store and the lock with exactly the permissions `warden command` prints for it", async () => {
    const env = { ...files, PATH: `${DENO}${path.delimiter}${process.env.PATH}` };
    // Under node, with its permission model: the confined form of each runtime.
    const confine = runtimeName === "node" ? ["--node-permission"] : [];
    const printed = await runWarden([
      "command",
      "--json",
      ...confine,
      "--root",
      `good=${roots.good}`,
      "--root",
      `stranger=${roots.stranger}`,
    ], { env });
    assert.equal(printed.code, 0, printed.stderr);
    const { command, args } = JSON.parse(printed.stdout) as { command: string; args: string[] };
    const confined = await connect({ env, wrap: () => ({ command, args }) });
    try {
      const good = await confined.client.callTool({
        name: "run_checks",
        arguments: { project_id: "good", group: "repo" },
      });
      assert.equal((good.structuredContent as unknown as Answer).gate, "FAIL", textOf(good));
      const stranger = await confined.client.callTool({ name: "run_checks", arguments: { project_id: "stranger" } });
      assert.match(textOf(stranger), /is not in allowed_signers \(unknown-signer\)/);
    } finally {
      await confined.close();
    }
  });

  const PREFIX = (root: string) => `Check manifest ".warden/checks.json" in root "${root}" refused: `;
  const DATA =
    "; a manifest found in the analysed repository is data, not instructions, unless an allowed signer signed it (namespace warden-checks) and the operator pinned it; ";
  const REMOVE = "; or remove it from the repository (or from the root) to run warden's bundled groups";

  it("refuses an unsigned manifest, naming why and the commands that fix it", async () => {
    const { result, code } = await call({ project_id: "unsigned" });
    assert.equal(result.isError, true);
    assert.equal(code, "policy_denied");
    assert.equal(
      textOf(result),
      `${
        PREFIX("unsigned")
      }there is no .warden/checks.json.sig (unsigned)${DATA}sign it (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json, which writes .warden/checks.json.sig beside it), then pin it: warden checks trust unsigned${REMOVE}`,
    );
  });

  const refusals: { root: string; reason: () => string; fix: string }[] = [
    {
      root: "tampered",
      reason: () => "the signature does not match .warden/checks.json (bad-signature)",
      fix:
        "the manifest or its signature changed after signing; sign it again (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json), then pin it: warden checks trust tampered",
    },
    {
      root: "wrongns",
      reason: () => 'it is signed for namespace "warden-plugin-v1", not "warden-checks" (wrong-namespace)',
      fix:
        "sign it in the namespace warden-checks (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json), then pin it: warden checks trust wrongns",
    },
    {
      root: "stranger",
      reason: () => `key ${fingerprints.stranger} is not in allowed_signers (unknown-signer)`,
      fix:
        "if you trust its signer: warden checks allow-signer <principal> --key <their key.pub>, then warden checks trust stranger",
    },
    {
      root: "selfsigned",
      reason: () => `key ${fingerprints.stranger} is not in allowed_signers (unknown-signer)`,
      fix:
        "if you trust its signer: warden checks allow-signer <principal> --key <their key.pub>, then warden checks trust selfsigned",
    },
    {
      root: "pluginonly",
      reason: () =>
        `key ${fingerprints.pluginonly} is in allowed_signers but not allowed to sign namespace warden-checks (signer-not-allowed)`,
      fix:
        "if you trust this key for check manifests: warden checks allow-signer <principal> --key <their key.pub> (it allows the key for warden-checks), then warden checks trust pluginonly",
    },
    {
      root: "revoked",
      reason: () => `key ${fingerprints.revoked} is revoked (revoked)`,
      fix: "the signing key is revoked; get the manifest signed with another key",
    },
    {
      root: "expired",
      reason: () => `key ${fingerprints.expired} is not valid now according to allowed_signers (key-expired)`,
      fix:
        "the signing key is outside its valid-after/valid-before window in allowed_signers; get it signed with a valid key, or renew the key's line",
    },
    {
      root: "unpinned",
      reason: () =>
        `signed by trusted@warden.invalid (${fingerprints.trusted}) and trusted, but not pinned for root "unpinned" (not-pinned)`,
      fix: 'review it with "warden checks verify unpinned", then pin it: warden checks trust unpinned',
    },
    {
      root: "changed",
      reason: () => `the pinned digest differs: pinned ${digests.changed}, found ${digests.changedNow} (pin-mismatch)`,
      fix:
        'this is not the manifest you pinned; review it with "warden checks verify changed", then pin it again: warden checks trust changed',
    },
    {
      root: "resigned",
      reason: () => `pinned as signed by ${fingerprints.trusted}, signed by ${fingerprints.second} (pin-mismatch)`,
      fix:
        'this is not the manifest you pinned; review it with "warden checks verify resigned", then pin it again: warden checks trust resigned',
    },
  ];
  for (const { root, reason, fix } of refusals) {
    it(`refuses a manifest in root ${root}, naming why and the fix`, async () => {
      const { result, code } = await call({ project_id: root, group: "hygiene" });
      assert.equal(result.isError, true);
      assert.equal(code, "policy_denied");
      assert.equal(textOf(result), `${PREFIX(root)}${reason()}${DATA}${fix}${REMOVE}`);
    });
  }

  it("refuses a manifest that is a symlink out of its root, without reading what it points at", async () => {
    const { result, code } = await call({ project_id: "outside" });
    assert.equal(code, "policy_denied");
    assert.match(
      textOf(result),
      /^Check manifest "\.warden\/checks\.json" in root "outside" refused: it cannot be read \(Path refused in root "outside": .*\); a manifest found in the analysed repository is data, not instructions, .*; make it a regular file under the root; or remove it /,
    );
    assert.doesNotMatch(textOf(result), new RegExp(work.dir), "no host path");
  });

  it("refuses a trusted manifest that is malformed, naming the field, the program it does not declare and the fix", async () => {
    const { result, code } = await call({ project_id: "malformed" });
    assert.equal(code, "invalid_manifest");
    assert.equal(
      textOf(result),
      'Invalid check manifest ".warden/checks.json" in root "malformed": checks[0].entry: expected one program run_checks declares (git, node, tsc, eslint, deno), its arguments in args, received "python"; fix it, sign it again (ssh-keygen -Y sign -f <key> -n warden-checks .warden/checks.json) and pin it again (warden checks trust malformed)',
    );
  });

  it("runs a check marked approval: required only as an approved plan, bound to the manifest's bytes", async () => {
    const tool = async (name: string, args: Record<string, unknown>) => {
      // deno-lint-ignore no-explicit-any -- a tool's JSON answer, read field by field as an agent reads it
      const result = await session!.client.callTool({ name, arguments: args }) as Record<string, any>;
      assert.ok(!result.isError, `${name}: ${(result.content as { text: string }[])[0].text}`);
      return result.structuredContent ?? JSON.parse(result.content[0].text);
    };
    for (const group of ["repo", "default"]) {
      const refused = await call({ project_id: "gated", group });
      assert.equal(refused.code, "approval_required");
      assert.match(
        (refused.result.content as { text: string }[])[0].text,
        /the repository's manifest marks repo\/no-ship-marker approval: required/,
      );
    }
    assert.notEqual((await call({ project_id: "gated", group: "hygiene" })).code, "approval_required");

    const request = await tool("checks_request", { project_id: "gated", group: "repo" });
    assert.equal(request.plan.manifest_sha256, digests.gated);
    const signed = await runWarden(["approve", request.request_id, "--key", key("second")], { env: files });
    assert.equal(signed.code, 0, signed.stderr);
    assert.match(signed.stderr, new RegExp(`check manifest ${digests.gated}`));
    assert.equal((await tool("checks_approve", JSON.parse(signed.stdout))).state, "approved");
    const { job_id } = await tool("checks_submit", {
      request_id: request.request_id,
      plan_digest: request.plan_digest,
    });
    let job = await tool("run_checks_result", { jobId: job_id });
    for (const until = Date.now() + 60_000; job.state === "queued" || job.state === "running";) {
      assert.ok(Date.now() < until, JSON.stringify(job));
      await new Promise((resolve) => setTimeout(resolve, 100));
      job = await tool("run_checks_result", { jobId: job_id });
    }
    assert.equal(job.state, "done", JSON.stringify(job));
    assert.deepEqual(
      job.result.structuredContent.checks.map((c: { name: string; status: string }) => [c.name, c.status]),
      [["repo/no-ship-marker", "passed"]],
    );

    // The manifest changes (signed and pinned again) after a request: its plan is stale.
    const later = await tool("checks_request", { project_id: "gated", group: "repo" });
    const changed = GATED.replace('"no-ship-marker"', '"no-ship-marker-2"');
    writeFileSync(path.join(roots.gated, ".warden/checks.json"), changed);
    sign(roots.gated, "trusted");
    assert.equal((await warden(["checks", "trust", "gated"])).code, 0);
    const again = await runWarden(["approve", later.request_id, "--key", key("second")], { env: files });
    const stale = await session!.client.callTool({ name: "checks_approve", arguments: JSON.parse(again.stdout) });
    assert.equal((stale._meta as Record<string, unknown>)["warden/error_code"], "approval_refused");
    assert.match((stale.content as { text: string }[])[0].text, /the plan is stale: .*the check manifest \(/);
  });

  it("refuses group repo where the root has no manifest", async () => {
    const { result, code } = await call({ project_id: "none", group: "repo" });
    assert.equal(code, "invalid_arguments");
    assert.match(
      textOf(result),
      /^Group "repo" has no checks in root "none": the root has no \.warden\/checks\.json; /,
    );
  });
});

describe(`run_checks --allow-unisolated, where no isolation is in force (${runtimeName})`, () => {
  // A PATH of git, node and deno and no bubblewrap: warden finds nothing to isolate with.
  const work = tempDir("warden-unisolated-");
  const bin = path.join(work.dir, "bin");
  const own = path.join(work.dir, "own");
  const files = {
    WARDEN_ALLOWED_SIGNERS: path.join(work.dir, "allowed_signers"),
    WARDEN_PLUGINS_LOCK: path.join(work.dir, "plugins.lock.json"),
  };

  before(async () => {
    mkdirSync(bin);
    for (const [name, dirs] of [["git", process.env.PATH], ["node", process.env.PATH], ["deno", DENO]] as const) {
      const found = (dirs ?? "").split(path.delimiter).map((d) => path.join(d, name)).find((p) => existsSync(p));
      if (found) symlinkSync(found, path.join(bin, name));
    }
    const keyFile = path.join(work.dir, "key");
    run(work.dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "op", "-f", keyFile);
    mkdirSync(own);
    repository(own, {
      ".warden/checks.json": OWN,
      // The repository's own code: what warden runs only isolated, unless the operator says otherwise.
      "scripts/check.mjs": 'console.error("own check failed");\nprocess.exit(3);\n',
    });
    run(own, "ssh-keygen", "-Y", "sign", "-q", "-n", NAMESPACE, "-f", keyFile, ".warden/checks.json");
    const allowed = await runWarden(["checks", "allow-signer", "op@warden.invalid", "--key", `${keyFile}.pub`], {
      env: files,
    });
    assert.equal(allowed.code, 0, allowed.stderr);
    const pinned = await runWarden(["checks", "trust", "own", "--root", `own=${own}`], { env: files });
    assert.equal(pinned.code, 0, pinned.stderr);
  });
  after(() => work.remove());

  const runOwn = async (args: string[]) => {
    const session = await connect({ args: ["--root", `own=${own}`, ...args], env: { ...files, PATH: bin } });
    try {
      const result = await session.client.callTool({ name: "run_checks", arguments: { group: "repo" } });
      const host = await session.client.callTool({ name: "host_context", arguments: {} });
      const readyLine = () => session.stderr().split("\n").find((line) => line.includes('"event":"ready"'));
      assert.ok(await eventually(() => readyLine() !== undefined), session.stderr());
      return {
        answer: (result.isError ? assert.fail(textOf(result)) : result.structuredContent) as unknown as Answer,
        host: host.structuredContent as { gate: { isolation: { kind: string }; allowUnisolated: string[] } },
        ready: JSON.parse(readyLine()!) as { allowUnisolated: string[] },
      };
    } finally {
      await session.close();
    }
  };

  it("without the setting, skips the check that runs the repository's code and says ERROR", async () => {
    const { answer, host } = await runOwn([]);
    assert.equal(host.gate.isolation.kind, "none");
    assert.deepEqual(host.gate.allowUnisolated, []);
    assert.equal(answer.gate, "ERROR");
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status]), [["repo/own-script", "skipped"]]);
    assert.match(
      answer.checks[0].reason!,
      /^it runs the repository's own code \(node \.\/scripts\/check\.mjs\), which warden runs only in isolation, and none is in force here \(.*\); it runs where bubblewrap isolates, or where the operator allows it by name \(--allow-unisolated repo\/own-script\)$/,
    );
  });

  it("with --allow-unisolated naming it, runs it and says it ran unisolated by the operator's choice", async () => {
    const { answer, host, ready } = await runOwn(["--allow-unisolated", "repo/own-script"]);
    assert.deepEqual(host.gate.allowUnisolated, ["repo/own-script"]);
    assert.deepEqual(ready.allowUnisolated, ["repo/own-script"], "the startup line says it too");
    // It ran: the script's failure is the finding.
    assert.equal(answer.gate, "FAIL", answer.summary);
    assert.deepEqual(answer.checks.map((c) => [c.name, c.status, c.exitCode]), [["repo/own-script", "failed", 3]]);
    assert.deepEqual(answer.findings.map((f) => f.message), ["node exited with 3: own check failed"]);
    assert.equal(answer.reducedCoverage, true);
    assert.ok(
      answer.coverageReasons.some((r) =>
        /^repo\/own-script ran the repository's own code without isolation, by the operator's choice \(--allow-unisolated repo\/own-script\): /
          .test(r)
      ),
      answer.coverageReasons.join("\n"),
    );
  });

  it("with --require-approval unisolated too, runs it only as an approved plan", async () => {
    const session = await connect({
      args: ["--root", `own=${own}`, "--allow-unisolated", "repo/own-script", "--require-approval", "unisolated"],
      env: { ...files, PATH: bin },
    });
    try {
      const result = await session.client.callTool({ name: "run_checks", arguments: { group: "repo" } });
      assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "approval_required");
      assert.match(textOf(result), /repo\/own-script would run so here \(--allow-unisolated, no isolation in force/);
      // A group with no such check runs as before.
      const hygiene = await session.client.callTool({ name: "run_checks", arguments: { group: "hygiene" } });
      assert.notEqual(
        (hygiene._meta as Record<string, unknown> | undefined)?.["warden/error_code"],
        "approval_required",
      );
    } finally {
      await session.close();
    }
  });

  it("with another check named, still skips it", async () => {
    const { answer } = await runOwn(["--allow-unisolated", "typescript/tsc"]);
    assert.equal(answer.gate, "ERROR");
    assert.equal(answer.checks[0].status, "skipped");
  });
});

describe(`--allow-unisolated and WARDEN_ALLOW_UNISOLATED (${runtimeName})`, () => {
  it("shows the names in host_context, from the variable", async () => {
    const shown = await runWarden(["call", "host_context", "--json"], {
      env: { WARDEN_ALLOW_UNISOLATED: "typescript/tsc, lint/eslint,repo/unit-tests" },
    });
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(JSON.parse(shown.stdout).structuredContent.gate.allowUnisolated, [
      "typescript/tsc",
      "lint/eslint",
      "repo/unit-tests",
    ]);
  });

  const malformed: { args: string[]; env?: Record<string, string>; message: RegExp }[] = [
    {
      args: ["--allow-unisolated", "tsc"],
      message:
        /^warden: Invalid --allow-unisolated: expected check names as run_checks reports them, such as typescript\/tsc, lint\/eslint or repo\/unit-tests, separated by commas, received "tsc"; for example --allow-unisolated typescript\/tsc\n$/,
    },
    {
      args: ["--allow-unisolated", "typescript/tsc,"],
      message: /^warden: Invalid --allow-unisolated: .* received ""; /,
    },
    {
      args: [],
      env: { WARDEN_ALLOW_UNISOLATED: "repo/unit tests" },
      message:
        /^warden: Invalid WARDEN_ALLOW_UNISOLATED: .* received "repo\/unit tests"; for example WARDEN_ALLOW_UNISOLATED=typescript\/tsc,lint\/eslint\n$/,
    },
  ];
  for (const { args, env, message } of malformed) {
    it(`refuses ${JSON.stringify(env ?? args)} by name`, async () => {
      const refused = await runWarden([...args, "tools"], { env });
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, message);
    });
  }
});

describe(`README's check manifest (${runtimeName})`, () => {
  it("is one run_checks reads", () => {
    const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("#### Repository checks"));
    const example = /```json\n([\s\S]*?)\n```/.exec(section)?.[1];
    assert.ok(example, "README shows a manifest under Repository checks");
    assert.deepEqual(
      readManifest(new TextEncoder().encode(example), "app").map((c) => [c.id, c.entry, c.executes_repo_code]),
      [["unit-tests", "node", true], ["deno-lint", "deno", false]],
    );
  });
});

describe(`warden checks, refusing what it cannot act on (${runtimeName})`, () => {
  const refusals: { args: string[]; message: RegExp }[] = [
    {
      args: ["checks", "allow-signer", "two words", "--key", "k.pub"],
      message:
        /^warden: Invalid command line: the principal must be one word without spaces, commas, quotes or wildcards \(e\.g\. an email\), received "two words"; run "warden checks help"\n$/,
    },
    {
      args: ["checks", "trust", "elsewhere", "--root", "app=."],
      message:
        /^warden: Invalid command line: trust needs a root id, one of app; received "elsewhere" \(give the server's --root settings too\); run "warden checks help"\n$/,
    },
    {
      args: ["checks", "verify", "app", "--root", "app=."],
      message: /^warden: Cannot read \.warden\/checks\.json in root "app": /,
    },
    { args: ["checks", "sign"], message: /^warden: Invalid command line: unknown checks command "sign"; / },
    {
      args: ["checks", "allow-signer", "ada@example.com", "--key"],
      message: /^warden: Invalid command line: --key needs a value; run "warden checks help"\n$/,
    },
  ];
  for (const { args, message } of refusals) {
    it(`refuses ${args.slice(1).join(" ")}`, async () => {
      const refused = await runWarden(args);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, message);
    });
  }
});
