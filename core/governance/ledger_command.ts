// `warden ledger verify [--json]`: the report of ledger_verify.ts, for people or as JSON.
import { problem, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { readTrustStore, type TrustStore } from "../plugins/trust/discover.ts";
import { VERIFY_EXIT, verifyLedger, type VerifyReport } from "./ledger_verify.ts";

const HEADLINES: Record<VerifyReport["status"], string> = {
  intact: "Ledger intact",
  broken: "Ledger broken",
  torn: "Ledger torn",
  absent: "No ledger",
  unreadable: "Ledger unreadable",
  missing: "Ledger missing a file",
  truncated: "Ledger truncated",
  unsealed: "Ledger not sealed",
  unfinished: "Ledger has unfinished calls",
  unapproved: "Ledger has approvals that do not hold",
};

/**
 * `warden ledger verify [--json]`: exits with VERIFY_EXIT[status]. Approvals by signature are checked against the
 * approvers' allowed_signers file when there is one (`approvers`), else from their signatures alone.
 */
export async function ledgerCommand(
  dir: string,
  args: readonly string[],
  approvers: { readonly signersFile: string; readonly revokedKeysFile: string } | null = null,
): Promise<number> {
  const [sub, ...rest] = args;
  const unknown = rest.find((a) => a !== "--json");
  if (sub !== "verify" || unknown) {
    throw new WardenError(
      "config_invalid",
      problem(
        "Invalid command line",
        `expected "warden ledger verify [--json]"`,
        `received ${JSON.stringify(args.join(" "))}`,
      ),
    );
  }
  let store: TrustStore | undefined;
  if (approvers !== null && platform().fs.lstatSync(approvers.signersFile) !== null) {
    store = await readTrustStore({
      allowedSignersFile: approvers.signersFile,
      revokedKeysFile: approvers.revokedKeysFile,
    });
  }
  const report = await verifyLedger(dir, { approvers: store });
  if (rest.includes("--json")) {
    platform().writeStdout(JSON.stringify(report, null, 2) + "\n");
  } else if (report.status === "absent") {
    platform().writeStdout(`No ledger in ${dir}\n`);
  } else {
    const out = [
      `${HEADLINES[report.status]}: ${report.rows} rows in ${report.files} file(s)${
        report.findings.length ? `, ${report.findings.length} finding(s)` : ""
      }`,
      ...report.findings.map((f) => `${f.kind}: ${f.file} line ${f.line}: ${f.problem}`),
      ...report.notes.map((n) => `note: ${n.file}: ${n.note}`),
    ];
    platform().writeStdout(out.join("\n") + "\n");
  }
  return VERIFY_EXIT[report.status];
}
