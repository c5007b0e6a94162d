// `warden approve <request_id> --key <file>`: an approver's signature over a request's plan_digest (namespace
// warden-approval-v1, an unencrypted Ed25519 key; ssh-keygen -Y sign for others), after showing them the plan it
// approves. It prints the arguments of checks_approve, signature
// included, for the agent (or the approver) to pass; it decides nothing itself, so that every decision goes through
// the server, its checks (the plan's repository still as planned) and its ledger.
import path from "node:path";
import { messageOf, problem, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { parsePrivateKey, signMessage } from "../plugins/trust/sshsig.ts";
import { approvalDeskIn } from "./approval_desk.ts";
import { APPROVAL_NAMESPACE } from "./approvals.ts";
import { approvalMessage } from "./approval_signatures.ts";

const USAGE = "warden approve <request_id> --key <private key file> [--reject]";

function usage(why: string): WardenError {
  return new WardenError("config_invalid", problem("Invalid command line", why, `expected "${USAGE}"`));
}

/** `warden approve`: shows the plan on stderr, prints checks_approve's arguments on stdout. */
export async function approveCommand(jobsDir: string, args: readonly string[]): Promise<number> {
  let id: string | undefined;
  let key: string | undefined;
  let decision: "approve" | "reject" = "approve";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--key") {
      key = args[++i];
      if (key === undefined) throw usage("--key needs the private key file");
    } else if (arg.startsWith("--key=")) key = arg.slice("--key=".length);
    else if (arg === "--reject") decision = "reject";
    else if (arg.startsWith("-") || id !== undefined) throw usage(`unexpected ${JSON.stringify(arg)}`);
    else id = arg;
  }
  if (id === undefined) throw usage("the request_id is missing (checks_request answered it)");
  if (key === undefined) {
    throw usage("--key is missing: the approver's private key, whose public key the operator lists");
  }
  const request = await approvalDeskIn(jobsDir).get(id);
  const { plan } = request;
  // What the approver approves, before anything is signed: they read it here, not in the agent's words.
  platform().writeStderr(
    [
      `Request ${plan.request_id} (${request.state}), by ${plan.requested_by ?? "a caller without a principal"}:`,
      `  run_checks group "${plan.group}" on project "${plan.project_id}"`,
      `  arguments ${JSON.stringify(plan.filters)}`,
      `  at commit ${plan.head} (tree ${plan.tree})`,
      `  uncommitted changes ${plan.worktree}`,
      `  check manifest ${plan.manifest_sha256 ?? "none"}`,
      `  plan_digest ${request.plan_digest}`,
      "",
    ].join("\n"),
  );
  if (request.state !== "pending_approval") {
    throw new WardenError(
      "approval_refused",
      problem(`Request ${id} cannot be decided`, `it is ${request.state}, not pending_approval`),
    );
  }
  let text: string;
  try {
    text = await platform().fs.readTextFile(path.resolve(platform().cwd(), key), 64 * 1024);
  } catch (error) {
    throw new WardenError("invalid_key", problem(`Cannot read the key ${key}`, messageOf(error)));
  }
  let signature: string;
  try {
    signature = await signMessage(
      await parsePrivateKey(text),
      approvalMessage(decision, request.plan_digest),
      APPROVAL_NAMESPACE,
    );
  } catch (error) {
    // A key warden cannot use itself (a passphrase, another type): ssh-keygen signs it, as by hand.
    if (!(error instanceof WardenError) || error.code !== "invalid_key") throw error;
    throw new WardenError(
      "invalid_key",
      problem(
        `Cannot sign with ${key}`,
        error.message.split("\n")[0],
        `sign with ssh-keygen, which asks for a passphrase: printf '${decision} %s' ${request.plan_digest} | ssh-keygen -Y sign -n ${APPROVAL_NAMESPACE} -f ${key}, and pass what it prints as checks_approve's signature`,
      ),
    );
  }
  platform().writeStdout(
    JSON.stringify({ request_id: id, plan_digest: request.plan_digest, decision, signature }, null, 2) + "\n",
  );
  platform().writeStderr(
    `Signed. Call checks_approve with the arguments above (the agent may pass them as they are).\n`,
  );
  return 0;
}
