// Approvals' foundation (core/governance/approvals.ts): a plan's digest, and an approval as an SSH signature over it
// in its own namespace, made with the real ssh-keygen (and with warden's own signer) and checked against an approvers'
// allowed_signers file: the right one names its approver; another plan's, another namespace's, a stranger's, a revoked
// or expired key's are each refused, saying why.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import { APPROVAL_NAMESPACE, newRequestId, type Plan, planDigest } from "../core/governance/approvals.ts";
import { approvalMessage, verifyApproval } from "../core/governance/approval_signatures.ts";
import { ApprovalDesk } from "../core/governance/approval_desk.ts";
import { initPlatform } from "../core/platform/mod.ts";
import { parseAllowedSigners, parseRevokedKeys } from "../core/plugins/trust/allowed_signers.ts";
import { parsePrivateKey, signMessage } from "../core/plugins/trust/sshsig.ts";
import { runtimeName, sshKeygen, tempDir } from "./helpers.ts";

const PLAN: Plan = {
  request_id: "req_" + "a".repeat(32),
  project_id: "web",
  group: "repo",
  filters: { base: "main", paths: ["src/**"] },
  head: "1".repeat(40),
  tree: "2".repeat(40),
  worktree: "sha256:" + "6".repeat(64),
  manifest_sha256: "sha256:" + "3".repeat(64),
  requested_by: "agent@example.com",
};

describe(`approvals: plan digests and approvers' signatures (${runtimeName})`, () => {
  const dir = tempDir("warden-approvals-");
  const key = (name: string) => path.join(dir.dir, name);
  const publicKey = (name: string) => readFileSync(key(name) + ".pub", "utf8").trim();
  /** ssh-keygen's signature of `text` with key `name` in `namespace`. */
  const sign = (name: string, text: string, namespace = APPROVAL_NAMESPACE) => {
    // A file of its own each time: ssh-keygen does not write over an existing signature file.
    const file = path.join(dir.dir, `message-${++signed}`);
    writeFileSync(file, text);
    sshKeygen("-Y", "sign", "-q", "-n", namespace, "-f", key(name), file);
    return readFileSync(file + ".sig", "utf8");
  };
  let signed = 0;
  let signers: Awaited<ReturnType<typeof parseAllowedSigners>>;
  before(async () => {
    for (const name of ["carol", "mallory", "dave", "erin"]) {
      sshKeygen("-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key(name));
    }
    signers = await parseAllowedSigners(
      [
        `carol@example.com namespaces="${APPROVAL_NAMESPACE}" ${publicKey("carol")}`,
        `dave@example.com namespaces="warden-plugin-v1" ${publicKey("dave")}`,
        `erin@example.com namespaces="${APPROVAL_NAMESPACE}",valid-before="20200101Z" ${publicKey("erin")}`,
      ].join("\n"),
      "approvers",
    );
  });
  after(() => dir.remove());

  it("digests a plan as its canonical JSON, and every field moves it", () => {
    const digest = planDigest(PLAN);
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(planDigest({ ...PLAN, filters: { paths: ["src/**"], base: "main" } }), digest, "key order is not");
    for (
      const changed of [
        { request_id: newRequestId() },
        { project_id: "api" },
        { group: "default" },
        { filters: { base: "main" } },
        { head: "4".repeat(40) },
        { tree: "5".repeat(40) },
        { worktree: "sha256:" + "8".repeat(64) },
        { manifest_sha256: null },
        { requested_by: null },
      ]
    ) {
      assert.notEqual(planDigest({ ...PLAN, ...changed }), digest, JSON.stringify(changed));
    }
    assert.match(newRequestId(), /^req_[0-9a-f]{32}$/);
    assert.notEqual(newRequestId(), newRequestId());
    assert.throws(() => planDigest({ ...PLAN, head: "HEAD" }), /Invalid plan: head: expected a git commit id/);
    assert.throws(() => planDigest({ ...PLAN, request_id: "req_1" }), /request_id: expected req_ and 32/);
  });

  it("names the approver of a signature made with ssh-keygen -Y sign, and of one made by warden's signer", async () => {
    const digest = planDigest(PLAN);
    const now = new Date();
    const approved = await verifyApproval("approve", digest, sign("carol", "approve " + digest), signers, [], now);
    assert.equal(approved.principal, "carol@example.com");
    assert.match(approved.fingerprint, /^SHA256:/);
    const own = await signMessage(
      await parsePrivateKey(readFileSync(key("carol"), "utf8")),
      approvalMessage("approve", digest),
      APPROVAL_NAMESPACE,
    );
    assert.equal((await verifyApproval("approve", digest, own, signers, [], now)).principal, "carol@example.com");
  });

  it("refuses another plan's signature, another namespace's, a stranger's, a revoked, an expired key's", async () => {
    const digest = planDigest(PLAN);
    const other = planDigest({ ...PLAN, head: "9".repeat(40) });
    const now = new Date();
    const revoked = await parseRevokedKeys(publicKey("carol"), "revoked");
    const refusals: [string, () => Promise<unknown>, RegExp][] = [
      [
        "plan substitution",
        () => verifyApproval("approve", digest, sign("carol", "approve " + other), signers, [], now),
        /not of "approve <this plan_digest>"/,
      ],
      [
        "a rejection offered as an approval",
        () => verifyApproval("approve", digest, sign("carol", "reject " + digest), signers, [], now),
        /the signature is the approver's "reject" of this plan, not "approve"/,
      ],
      [
        "the bare digest, no decision",
        () => verifyApproval("approve", digest, sign("carol", digest), signers, [], now),
        /not of "approve <this plan_digest>"/,
      ],
      [
        "a plugin signature",
        () =>
          verifyApproval("approve", digest, sign("carol", "approve " + digest, "warden-plugin-v1"), signers, [], now),
        /namespace "warden-plugin-v1", not "warden-approval-v1".*ssh-keygen -Y sign -n warden-approval-v1/,
      ],
      [
        "a stranger",
        () => verifyApproval("approve", digest, sign("mallory", "approve " + digest), signers, [], now),
        /not an approver's \(it is not in the approvers' allowed_signers file\)/,
      ],
      [
        "a key only for plugins",
        () => verifyApproval("approve", digest, sign("dave", "approve " + digest), signers, [], now),
        /may not sign in namespace "warden-approval-v1"/,
      ],
      [
        "an expired key",
        () => verifyApproval("approve", digest, sign("erin", "approve " + digest), signers, [], now),
        /not valid now/,
      ],
      [
        "a revoked key",
        () =>
          verifyApproval(
            "approve",
            digest,
            sign("carol", "approve " + digest),
            signers,
            revoked,
            now,
          ),
        /the signing key is revoked/,
      ],
      ["not a signature", () => verifyApproval("approve", digest, "approved!", signers, [], now), /signature/i],
    ];
    for (const [what, attempt, why] of refusals) {
      await assert.rejects(attempt(), (error: Error & { code?: string }) => {
        assert.match(error.message, why, what);
        assert.ok(["invalid_signature", "invalid_key"].includes(error.code ?? ""), `${what}: ${error.code}`);
        return true;
      }, what);
    }
  });
});

describe(`approvals: the desk, request by request (${runtimeName})`, () => {
  const dir = tempDir("warden-approval-desk-");
  before(() => initPlatform());
  after(() => dir.remove());
  const plan = (requested_by: string | null = "agent@example.com"): Plan => ({
    ...PLAN,
    request_id: newRequestId(),
    requested_by,
  });
  const carol = { principal: "carol@example.com", via: "principal" as const, fingerprint: null, signature: null };
  const HEAD = { head: PLAN.head, tree: PLAN.tree, worktree: PLAN.worktree, manifest_sha256: PLAN.manifest_sha256 };
  const MOVED = { ...HEAD, head: "7".repeat(40) };

  it("files a request pending, approves it once, submits it once, and a new desk reads it back", async () => {
    const desk = new ApprovalDesk(dir.dir);
    const request = await desk.open(plan());
    assert.equal(request.state, "pending_approval");
    assert.equal(request.plan_digest, planDigest(request.plan));
    const id = request.plan.request_id;
    const approved = await desk.decide(id, request.plan_digest, "approve", carol, HEAD);
    assert.deepEqual([approved.state, approved.decider?.principal], ["approved", "carol@example.com"]);
    let started = 0;
    const start = () => Promise.resolve(`job_${String(++started).padStart(32, "0")}`);
    // Two submits at once, and one after: one job.
    const [a, b] = await Promise.all([
      desk.submit(id, request.plan_digest, HEAD, start),
      desk.submit(id, request.plan_digest, HEAD, start),
    ]);
    const again = await new ApprovalDesk(dir.dir).submit(id, request.plan_digest, HEAD, start);
    assert.equal(started, 1, "the job was started once");
    assert.deepEqual(
      [a.request.job_id, b.request.job_id, again.request.job_id],
      [a.request.job_id, a.request.job_id, a.request.job_id],
    );
    assert.deepEqual([a.resubmitted, b.resubmitted, again.resubmitted], [false, true, true]);
    assert.equal((await new ApprovalDesk(dir.dir).get(id)).state, "submitted", "it survives a restart");
  });

  it("lets one of two servers sharing the directory submit a request, and one decide it", async () => {
    const [one, two] = [new ApprovalDesk(dir.dir), new ApprovalDesk(dir.dir)];
    const request = await one.open(plan());
    const id = request.plan.request_id;
    // Two replicas decide at once, one approving and one rejecting: one decision stands, the other is refused.
    const decisions = await Promise.allSettled([
      one.decide(id, request.plan_digest, "approve", carol, HEAD),
      two.decide(id, request.plan_digest, "reject", { ...carol, principal: "dave@example.com" }, HEAD),
    ]);
    assert.equal(decisions.filter((d) => d.status === "fulfilled").length, 1, JSON.stringify(decisions));
    assert.match(
      String((decisions.find((d) => d.status === "rejected") as PromiseRejectedResult).reason),
      /it is (approved|rejected), not pending_approval/,
    );
    // Two replicas submit one approved request at once.
    const approved = await one.open(plan());
    await one.decide(approved.plan.request_id, approved.plan_digest, "approve", carol, HEAD);
    let started = 0;
    const start = async () => {
      started++;
      // A job takes a moment to queue: the other replica's submit arrives meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return `job_${String(started).padStart(32, "0")}`;
    };
    const [a, b] = await Promise.all([
      one.submit(approved.plan.request_id, approved.plan_digest, HEAD, start),
      two.submit(approved.plan.request_id, approved.plan_digest, HEAD, start),
    ]);
    assert.equal(started, 1, "one job for the two replicas");
    assert.equal(a.request.job_id, b.request.job_id);
    assert.deepEqual([a.resubmitted, b.resubmitted].sort(), [false, true]);
    assert.ok(!readdirSync(dir.dir).some((name) => name.endsWith(".lock")), "no claim is left behind");
  });

  it("takes over the claim of a server that died during a step, an expired claim, and one that does not read", async () => {
    const desk = new ApprovalDesk(dir.dir);
    const request = await desk.open(plan());
    const id = request.plan.request_id;
    // A pid no process has: the claim of a server that crashed.
    const lock = path.join(dir.dir, `${id}.lock`);
    writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 12345, token: "x", at: Date.now() }));
    assert.equal((await desk.decide(id, request.plan_digest, "approve", carol, HEAD)).state, "approved");
    // This very process's pid, but a claim older than any step takes (another container's pid 1, say).
    const other = await desk.open(plan());
    writeFileSync(
      path.join(dir.dir, `${other.plan.request_id}.lock`),
      JSON.stringify({ pid: process.pid, token: "y", at: Date.now() - 120_000 }),
    );
    assert.equal((await desk.cancel(other.plan.request_id, other.plan_digest, () => {})).state, "cancelled");
    // A claim that does not read.
    const third = await desk.open(plan());
    writeFileSync(path.join(dir.dir, `${third.plan.request_id}.lock`), "{not json");
    assert.equal((await desk.cancel(third.plan.request_id, third.plan_digest, () => {})).state, "cancelled");
    assert.ok(!readdirSync(dir.dir).some((name) => name.endsWith(".lock")), "every claim was removed");
  });

  it("refuses a wrong digest, a requester approving itself, a moved HEAD, a second decision, an unapproved submit", async () => {
    const desk = new ApprovalDesk(dir.dir);
    const refusal = async (attempt: () => Promise<unknown>, why: RegExp) =>
      await assert.rejects(attempt, (error: Error & { code?: string }) => {
        assert.equal(error.code, "approval_refused", error.message);
        assert.match(error.message, why);
        return true;
      });
    const one = await desk.open(plan());
    const id = one.plan.request_id;
    const other = planDigest({ ...one.plan, head: MOVED.head });
    await refusal(
      () => desk.decide(id, other, "approve", carol, HEAD),
      /is not this request's plan \(plan substitution\)/,
    );
    await refusal(
      () => desk.decide(id, one.plan_digest, "approve", { ...carol, principal: "agent@example.com" }, HEAD),
      /agent@example\.com requested it, and may not approve its own request/,
    );
    await refusal(
      () => desk.submit(id, one.plan_digest, HEAD, () => Promise.resolve("x")),
      /it is pending_approval, not approved/,
    );
    await refusal(
      () => desk.decide(id, one.plan_digest, "approve", carol, MOVED),
      /the plan is stale: the repository's HEAD \(111111111111 → 777777777777\)/,
    );
    assert.equal((await desk.get(id)).state, "stale");
    await refusal(() => desk.decide(id, one.plan_digest, "approve", carol, HEAD), /it is stale, not pending_approval/);
    // A signature by an approver's key may approve even the requester's own request.
    const own = await desk.open(plan("carol@example.com"));
    const signed = {
      ...carol,
      via: "signature" as const,
      fingerprint: "SHA256:x",
      signature: "-----BEGIN SSH SIGNATURE-----",
    };
    assert.equal((await desk.decide(own.plan.request_id, own.plan_digest, "approve", signed, HEAD)).state, "approved");
    await refusal(() => desk.decide(own.plan.request_id, own.plan_digest, "reject", carol, HEAD), /it is approved/);
    // Moved between approval and submit.
    await refusal(
      () => desk.submit(own.plan.request_id, own.plan_digest, MOVED, () => Promise.resolve("x")),
      /the plan is stale: the repository's HEAD/,
    );
    const rejected = await desk.open(plan());
    assert.equal(
      (await desk.decide(rejected.plan.request_id, rejected.plan_digest, "reject", carol, HEAD)).state,
      "rejected",
    );
    const cancelled = await desk.open(plan());
    const stopped: string[] = [];
    assert.equal(
      (await desk.cancel(cancelled.plan.request_id, cancelled.plan_digest, (job) => stopped.push(job))).state,
      "cancelled",
    );
    assert.deepEqual(stopped, [], "a request not submitted has no job to stop");
    await refusal(
      () => desk.cancel(cancelled.plan.request_id, cancelled.plan_digest, () => {}),
      /it is cancelled already/,
    );
    await assert.rejects(desk.get(newRequestId()), /No approval request/);
    await assert.rejects(desk.get("../../etc/passwd"), /Invalid request_id/);
  });

  it("refuses a request file whose plan was edited by hand", async () => {
    const desk = new ApprovalDesk(dir.dir);
    const request = await desk.open(plan());
    const file = path.join(dir.dir, `${request.plan.request_id}.json`);
    writeFileSync(file, readFileSync(file, "utf8").replace(`"group": "repo"`, `"group": "default"`));
    await assert.rejects(desk.get(request.plan.request_id), /was altered: its plan no longer has its digest/);
  });
});
