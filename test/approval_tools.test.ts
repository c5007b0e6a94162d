// Approvals end to end (issue 19), as an agent and an approver meet them: the SDK's Client over stdio and HTTP, a
// real git repository, keys made by ssh-keygen, `warden approve` signing, the job queue, a restart, and the ledger
// verified afterwards. A group the operator marks (--require-approval) is refused to run_checks and run_checks_start;
// checks_request fixes a plan; an approval with a wrong digest, a stranger's key, another request's signature (a
// replay), or none is refused; a moved HEAD (or working tree) makes a plan stale; the right approval runs once, and
// submitting again, also after a restart, answers the same job.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import * as v from "valibot";
import { APPROVAL_NAMESPACE } from "../core/governance/approvals.ts";
import { Ledger, LedgerRowSchema } from "../core/governance/ledger.ts";
import { verifyLedger } from "../core/governance/ledger_verify.ts";
import { initPlatform } from "../core/platform/mod.ts";
import {
  connect,
  httpClient,
  type HttpServer,
  runtimeName,
  runWarden,
  type Session,
  sshKeygen,
  startHttp,
  tempDir,
  textOf,
} from "./helpers.ts";

// deno-lint-ignore no-explicit-any -- tool results are read field by field, as an agent reads JSON
type Result = any;

function git(cwd: string, ...argv: string[]): string {
  const result = spawnSync("git", argv, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  });
  assert.equal(result.status, 0, `git ${argv.join(" ")}: ${result.stderr}`);
  return result.stdout.trim();
}

/** A repository with one commit and a staged change (hygiene's checks read the change). */
function repository(dir: string): void {
  mkdirSync(path.join(dir, "src"), { recursive: true });
  writeFileSync(path.join(dir, "src/a.ts"), "export const a = 1;\n");
  git(dir, "init", "-q", "-b", "main");
  git(dir, "config", "user.email", "test@example.com");
  git(dir, "config", "user.name", "test");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "start");
  writeFileSync(path.join(dir, "src/a.ts"), "export const a = 2; // FIXME before release\n");
  git(dir, "add", "-A");
}

/** Every row of the ledger files in `dir`, checked against the row schema. */
function ledgerRows(dir: string): Record<string, Result>[] {
  return readdirSync(dir).filter((f) => f.endsWith(".jsonl")).flatMap((f) =>
    readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((line) => {
      const row = JSON.parse(line);
      assert.ok(v.safeParse(LedgerRowSchema, row).success, `a ledger row of the schema: ${line}`);
      return row;
    })
  );
}

describe(`approvals: request, approve, submit (${runtimeName})`, () => {
  const work = tempDir("warden-approval-tools-");
  const web = path.join(work.dir, "web");
  const moving = path.join(work.dir, "moving");
  const keys = path.join(work.dir, "keys");
  const ledger = path.join(work.dir, "ledger");
  const env = {
    WARDEN_LEDGER: ledger,
    WARDEN_JOBS_DIR: path.join(work.dir, "jobs"),
    WARDEN_APPROVERS_SIGNERS: path.join(work.dir, "approvers_allowed_signers"),
    WARDEN_REVOKED_KEYS: path.join(work.dir, "revoked_keys"),
  };
  const args = ["--root", `web=${web}`, "--root", `moving=${moving}`, "--require-approval", "hygiene"];
  const key = (name: string) => path.join(keys, name);
  let session: Session;

  const call = async (name: string, args: Record<string, unknown>): Promise<Result> =>
    await session.client.callTool({ name, arguments: args });
  const ok = async (name: string, args: Record<string, unknown>): Promise<Result> => {
    const result = await call(name, args);
    assert.ok(!result.isError, `${name}: ${textOf(result)}`);
    // A tool without an output schema (run_checks_result) answers its JSON as text.
    return result.structuredContent ?? JSON.parse(result.content[0].text);
  };
  const refused = async (name: string, args: Record<string, unknown>, code: string, why: RegExp) => {
    const result = await call(name, args);
    assert.equal(result.isError, true, `${name} should be refused: ${textOf(result)}`);
    assert.equal(result._meta?.["warden/error_code"], code, textOf(result));
    assert.match(textOf(result), why);
    return textOf(result);
  };
  /** `warden approve` with `name`'s key: the arguments of checks_approve it prints. */
  const approveWith = async (name: string, requestId: string, extra: string[] = []) => {
    const run = await runWarden(["approve", requestId, "--key", key(name), ...extra], { env });
    assert.equal(run.code, 0, run.stderr);
    return { printed: JSON.parse(run.stdout), stderr: run.stderr };
  };
  /** ssh-keygen's own signature of `text`, as an approver makes it by hand. */
  let signed = 0;
  const signByHand = (name: string, text: string) => {
    const file = path.join(work.dir, `message-${++signed}`);
    writeFileSync(file, text);
    sshKeygen("-Y", "sign", "-q", "-n", APPROVAL_NAMESPACE, "-f", key(name), file);
    return readFileSync(file + ".sig", "utf8");
  };

  before(async () => {
    initPlatform();
    repository(web);
    repository(moving);
    mkdirSync(keys);
    for (const name of ["carol", "mallory"]) {
      sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key(name));
    }
    writeFileSync(
      env.WARDEN_APPROVERS_SIGNERS,
      `carol@example.com namespaces="${APPROVAL_NAMESPACE}" ${readFileSync(key("carol") + ".pub", "utf8")}`,
    );
    session = await connect({ args, env });
  });
  after(async () => {
    await session?.close();
    work.remove();
  });

  it("refuses a group that needs approval to run_checks and run_checks_start, saying how to ask", async () => {
    for (const tool of ["run_checks", "run_checks_start"]) {
      await refused(
        tool,
        { project_id: "web", group: "hygiene" },
        "approval_required",
        /group "hygiene" on project "web" needs an approved plan.*the operator requires approval for group hygiene.*checks_request/s,
      );
    }
    // host_context tells an agent beforehand.
    assert.deepEqual((await ok("host_context", {})).gate.requireApproval, ["hygiene"]);
    // A group the operator did not mark runs as before.
    const typescript = await ok("run_checks", { project_id: "web", group: "typescript" });
    assert.ok(["PASS", "FAIL", "ERROR"].includes(typescript.gate));
  });

  it("requests a plan bound to HEAD, its tree and the change; refuses an approval that is not an approver's", async () => {
    const request = await ok("checks_request", { project_id: "web", group: "hygiene", fail_on: "none" });
    assert.equal(request.state, "pending_approval");
    assert.match(request.request_id, /^req_[0-9a-f]{32}$/);
    assert.match(request.plan_digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(request.plan.head, git(web, "rev-parse", "HEAD"));
    assert.equal(request.plan.tree, git(web, "rev-parse", "HEAD^{tree}"));
    assert.deepEqual(request.plan.filters, { fail_on: "none" });
    assert.match(request.approval_required, /the operator requires approval for group hygiene/);
    assert.match(request.next, /warden approve req_/);
    const id = request.request_id;
    const digest = request.plan_digest;

    // No signature over stdio: nobody is an approver by principal here.
    await refused(
      "checks_approve",
      { request_id: id, plan_digest: digest, decision: "approve" },
      "approval_refused",
      /carries no approver's signature, and only an HTTP caller can be an approver by principal/,
    );
    // A wrong digest: plan substitution, even with an approver's signature of it.
    const other = "sha256:" + "0".repeat(64);
    await refused(
      "checks_approve",
      { request_id: id, plan_digest: other, decision: "approve", signature: signByHand("carol", "approve " + other) },
      "approval_refused",
      /is not this request's plan \(plan substitution\)/,
    );
    // A stranger's key.
    await refused(
      "checks_approve",
      {
        request_id: id,
        plan_digest: digest,
        decision: "approve",
        signature: signByHand("mallory", "approve " + digest),
      },
      "approval_refused",
      /the signing key is not an approver's/,
    );
    // A signature in another namespace (a plugin signature is never an approval).
    const file = path.join(work.dir, "plugin-message");
    writeFileSync(file, "approve " + digest);
    sshKeygen("-Y", "sign", "-q", "-n", "warden-plugin-v1", "-f", key("carol"), file);
    await refused(
      "checks_approve",
      { request_id: id, plan_digest: digest, decision: "approve", signature: readFileSync(file + ".sig", "utf8") },
      "approval_refused",
      /namespace "warden-plugin-v1", not "warden-approval-v1"/,
    );
    // A replay: carol's approval of this request, offered for a second request of the same arguments.
    const second = await ok("checks_request", { project_id: "web", group: "hygiene", fail_on: "none" });
    assert.notEqual(second.plan_digest, digest, "each request has a digest of its own");
    await refused(
      "checks_approve",
      {
        request_id: second.request_id,
        plan_digest: second.plan_digest,
        decision: "approve",
        signature: signByHand("carol", "approve " + digest),
      },
      "approval_refused",
      /the signature is not of "approve <this plan_digest>"/,
    );
    // An approver's rejection, its decision turned into an approval: the decision is signed too.
    const rejection = (await approveWith("carol", id, ["--reject"])).printed;
    assert.equal(rejection.decision, "reject");
    await refused(
      "checks_approve",
      { ...rejection, decision: "approve" },
      "approval_refused",
      /the signature is the approver's "reject" of this plan, not "approve"/,
    );
    // Submitting before an approval.
    await refused(
      "checks_submit",
      { request_id: id, plan_digest: digest },
      "approval_refused",
      /it is pending_approval, not approved/,
    );
    assert.equal((await ok("checks_status", { request_id: id })).state, "pending_approval", "nothing was decided");
    // Cancelled, it can be neither approved nor submitted.
    assert.equal(
      (await ok("checks_cancel", { request_id: second.request_id, plan_digest: second.plan_digest })).state,
      "cancelled",
    );
  });

  let submittedId = "";
  let submittedDigest = "";
  let jobId = "";

  it("approves with warden approve's signature, runs once, and answers the same job when submitted again", async () => {
    const request = await ok("checks_request", { project_id: "web", group: "hygiene", fail_on: "none" });
    const { printed, stderr } = await approveWith("carol", request.request_id);
    // The approver sees the plan they sign, not the agent's words about it.
    assert.match(stderr, /run_checks group "hygiene" on project "web"/);
    assert.match(stderr, new RegExp(`at commit ${request.plan.head}`));
    assert.deepEqual(Object.keys(printed).sort(), ["decision", "plan_digest", "request_id", "signature"]);
    assert.equal(printed.plan_digest, request.plan_digest);
    const approved = await ok("checks_approve", printed);
    assert.equal(approved.state, "approved");
    assert.deepEqual(approved.decider?.principal, "carol@example.com");
    assert.equal(approved.decider?.via, "signature");
    // Decided once.
    await refused("checks_approve", printed, "approval_refused", /it is approved, not pending_approval/);

    const runs = () => ledgerRows(ledger).filter((row) => row.kind === "call" && row.tool === "run_checks").length;
    const runsBefore = runs();
    const submitted = await ok("checks_submit", { request_id: request.request_id, plan_digest: request.plan_digest });
    assert.equal(submitted.state, "submitted");
    assert.match(submitted.job_id, /^job_[0-9a-f]{32}$/);
    assert.equal(submitted.resubmitted, false);
    const again = await ok("checks_submit", { request_id: request.request_id, plan_digest: request.plan_digest });
    assert.deepEqual([again.job_id, again.resubmitted], [submitted.job_id, true]);
    let job: Result = await ok("run_checks_result", { jobId: submitted.job_id });
    for (const until = Date.now() + 60_000; job.state === "queued" || job.state === "running";) {
      assert.ok(Date.now() < until, `the job finished: ${JSON.stringify(job)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      job = await ok("run_checks_result", { jobId: submitted.job_id });
    }
    assert.equal(job.state, "done", JSON.stringify(job));
    assert.equal(job.result.structuredContent.group, "hygiene");
    assert.ok(
      job.result.structuredContent.findings.some((f: Result) => f.check === "hygiene/debt-markers"),
      "hygiene ran on the change",
    );
    assert.equal(runs() - runsBefore, 1, "run_checks ran once");
    [submittedId, submittedDigest, jobId] = [request.request_id, request.plan_digest, submitted.job_id];
  });

  it("makes a plan stale when HEAD or the working tree moves, before approval or before submit", async () => {
    const request = await ok("checks_request", { project_id: "moving", group: "hygiene" });
    writeFileSync(path.join(moving, "src/b.ts"), "export const b = 1;\n");
    git(moving, "add", "-A");
    git(moving, "commit", "-q", "-m", "moved");
    const { printed } = await approveWith("carol", request.request_id);
    await refused(
      "checks_approve",
      printed,
      "approval_refused",
      /the plan is stale: the repository's HEAD \([0-9a-f]{12} → [0-9a-f]{12}\), HEAD's tree .* since it was requested/,
    );
    assert.equal((await ok("checks_status", { request_id: request.request_id })).state, "stale");

    // Approved, then an untracked file appears: the run is refused before it starts.
    const later = await ok("checks_request", { project_id: "moving", group: "hygiene" });
    await ok("checks_approve", (await approveWith("carol", later.request_id)).printed);
    writeFileSync(path.join(moving, "planted.mjs"), "console.log('not what was approved');\n");
    await refused(
      "checks_submit",
      { request_id: later.request_id, plan_digest: later.plan_digest },
      "approval_refused",
      /the plan is stale: the working tree's changes/,
    );
    assert.equal((await ok("checks_status", { request_id: later.request_id })).state, "stale");

    // A file git is told not to look at: its changes would be in no diff, so no plan is made.
    git(moving, "update-index", "--assume-unchanged", "src/a.ts");
    try {
      await refused(
        "checks_request",
        { project_id: "moving", group: "hygiene" },
        "invalid_arguments",
        /has files git is told not to look at \(src\/a\.ts\).*git update-index --no-assume-unchanged/,
      );
    } finally {
      git(moving, "update-index", "--no-assume-unchanged", "src/a.ts");
    }
  });

  it("submits only while the approval holds: an approver's key revoked since refuses it", async () => {
    const request = await ok("checks_request", { project_id: "web", group: "hygiene" });
    await ok("checks_approve", (await approveWith("carol", request.request_id)).printed);
    writeFileSync(env.WARDEN_REVOKED_KEYS, readFileSync(key("carol") + ".pub", "utf8"));
    try {
      await refused(
        "checks_submit",
        { request_id: request.request_id, plan_digest: request.plan_digest },
        "approval_refused",
        /its approval no longer holds: the signing key is revoked/,
      );
      assert.equal((await ok("checks_status", { request_id: request.request_id })).state, "approved", "not submitted");
    } finally {
      writeFileSync(env.WARDEN_REVOKED_KEYS, "");
    }
  });

  it("answers for its requests after a restart, and a submit then is still the same job", async () => {
    await session.close();
    session = await connect({ args, env });
    const status = await ok("checks_status", { request_id: submittedId });
    assert.deepEqual([status.state, status.job_id], ["submitted", jobId]);
    const again = await ok("checks_submit", { request_id: submittedId, plan_digest: submittedDigest });
    assert.deepEqual([again.job_id, again.resubmitted], [jobId, true]);
    await refused(
      "checks_status",
      { request_id: "req_" + "f".repeat(32) },
      "not_found",
      /No approval request "?req_f{32}"?: checks_request gives one/,
    );
    await refused("checks_status", { request_id: "../../etc/passwd" }, "invalid_arguments", /request_id/);
  });

  it("records every step in the ledger, and warden ledger verify checks the approvals again", async () => {
    await session.close();
    const rows = ledgerRows(ledger).filter((row) => row.kind === "approval" && row.request === submittedId);
    assert.deepEqual(rows.map((row) => row.state), ["pending_approval", "approved", "submitted"]);
    assert.ok(rows.every((row) => row.planDigest === submittedDigest));
    assert.equal(rows[1].approver.principal, "carol@example.com");
    assert.match(rows[1].signature, /^-----BEGIN SSH SIGNATURE-----/);
    assert.equal(rows[2].job, jobId);
    const verified = await runWarden(["ledger", "verify", "--json"], { env });
    const report = JSON.parse(verified.stdout);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.equal(report.status, "intact");
    assert.ok(
      report.notes.some((n: Result) =>
        /approval row\(s\) checked against the approvers' allowed_signers file/.test(n.note)
      ),
      JSON.stringify(report.notes),
    );
    session = await connect({ args, env });
  });
});

describe(`approvals in the ledger, verified offline (${runtimeName})`, () => {
  const work = tempDir("warden-approval-ledger-");
  before(() => initPlatform());
  after(() => work.remove());

  it("finds an approval whose signature is not of its digest, and a submission never approved", async () => {
    const keyFile = path.join(work.dir, "carol");
    sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", "carol", "-f", keyFile);
    const digest = "sha256:" + "1".repeat(64);
    const other = "sha256:" + "2".repeat(64);
    const message = path.join(work.dir, "message");
    writeFileSync(message, other);
    sshKeygen("-Y", "sign", "-q", "-n", APPROVAL_NAMESPACE, "-f", keyFile, message);
    const signature = readFileSync(message + ".sig", "utf8");
    const fingerprint = sshKeygen("-l", "-E", "sha256", "-f", keyFile + ".pub").split(" ")[1];
    const dir = path.join(work.dir, "ledger");
    const written = new Ledger(dir);
    await written.prepare();
    const row = {
      request: "req_" + "a".repeat(32),
      planDigest: digest,
      principal: null,
      projectId: "web",
      approver: null,
      signature: null,
      job: null,
    };
    await written.approval({ ...row, state: "pending_approval" });
    await written.approval({
      ...row,
      state: "approved",
      approver: { principal: "carol@example.com", via: "signature", fingerprint },
      signature,
    });
    await written.approval({
      ...row,
      request: "req_" + "b".repeat(32),
      state: "submitted",
      job: "job_" + "c".repeat(32),
    });
    await written.seal();
    const report = await verifyLedger(dir);
    assert.equal(report.status, "unapproved");
    assert.deepEqual(
      report.findings.map((f) => f.problem.replace(/: .*/s, "")),
      ["request req_" + "a".repeat(32), "request req_" + "b".repeat(32)],
    );
    assert.match(
      report.findings[0].problem,
      /the approver's signature does not hold: .*not of "approve <this plan_digest>"/,
    );
    assert.match(report.findings[1].problem, /submitted as job_c{32} with no approval of plan/);
  });
});

describe(`approvals by principal over HTTP (${runtimeName})`, () => {
  const work = tempDir("warden-approval-http-");
  const web = path.join(work.dir, "web");
  const tokensFile = path.join(work.dir, "tokens");
  const tokens: Record<string, string> = {};
  let server: HttpServer;
  const env = {
    WARDEN_LEDGER: path.join(work.dir, "ledger"),
    WARDEN_JOBS_DIR: path.join(work.dir, "jobs"),
    WARDEN_APPROVERS_SIGNERS: path.join(work.dir, "approvers_allowed_signers"),
  };
  before(async () => {
    repository(web);
    for (const who of ["alice@example.com", "bob@example.com", "eve@example.com"]) {
      tokens[who] = (await runWarden(["token", "add", who, "--tokens", tokensFile])).stdout.trim();
    }
    server = await startHttp(
      [
        "--tokens",
        tokensFile,
        "--root",
        `web=${web}`,
        "--require-approval",
        "hygiene",
        "--approvers",
        "alice@example.com,bob@example.com",
      ],
      env,
      false,
    );
  });
  after(async () => {
    await server?.stop();
    work.remove();
  });

  it("lets an approver who is not the requester approve; refuses the requester and a non-approver", async () => {
    const as = async (who: string) => await httpClient(server.url, tokens[who]);
    const alice = await as("alice@example.com");
    const request: Result = (await alice.callTool({
      name: "checks_request",
      arguments: { project_id: "web", group: "hygiene" },
    })).structuredContent;
    assert.equal(request.plan.requested_by, "alice@example.com");
    const decide = { request_id: request.request_id, plan_digest: request.plan_digest, decision: "approve" };
    const own: Result = await alice.callTool({ name: "checks_approve", arguments: decide });
    assert.equal(own.isError, true);
    assert.match(textOf(own), /alice@example\.com requested it, and may not approve its own request/);
    const eve = await as("eve@example.com");
    const stranger: Result = await eve.callTool({ name: "checks_approve", arguments: decide });
    assert.match(textOf(stranger), /the caller \(eve@example\.com\) is not one of the operator's approvers/);
    const bob = await as("bob@example.com");
    const approved: Result = (await bob.callTool({ name: "checks_approve", arguments: decide })).structuredContent;
    assert.deepEqual([approved.state, approved.decider.principal, approved.decider.via], [
      "approved",
      "bob@example.com",
      "principal",
    ]);
    const submitted: Result = (await alice.callTool({
      name: "checks_submit",
      arguments: { request_id: request.request_id, plan_digest: request.plan_digest },
    })).structuredContent;
    assert.equal(submitted.state, "submitted");
    for (const client of [alice, bob, eve]) await client.close();
  });
});
