// `warden ledger verify [--json]`: the report of ledger_verify.ts, for people or as JSON.
import { problem, WardenError } from "../errors.ts";
import { platform } from "../platform/mod.ts";
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
};

/** `warden ledger verify [--json]`: exits with VERIFY_EXIT[status]. */
export async function ledgerCommand(dir: string, args: readonly string[]): Promise<number> {
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
  const report = await verifyLedger(dir);
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
