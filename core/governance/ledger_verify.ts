// `warden ledger verify`'s checks: each file's chain group by group, then the
// anchors, seals and intents across files (the format is ledger.ts's).
import * as v from "valibot";
import path from "node:path";
import { canonicalJson } from "../canonical_json.ts";
import { messageOf } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import { loadNativeSha256, sha256Hex } from "../sha256.ts";
import { APPROVAL_NAMESPACE } from "./approvals.ts";
import { type Decision, verifyApproval } from "./approval_signatures.ts";
import type { AllowedSigner } from "../plugins/trust/allowed_signers.ts";
import type { TrustStore } from "../plugins/trust/discover.ts";
import { parseSignature } from "../plugins/trust/sshsig.ts";
import {
  type ApprovalRow,
  GENESIS,
  type Head,
  type IntentRow,
  ledgerFiles,
  type LedgerRow,
  readAnchor,
  ROWS,
  V1Row,
} from "./ledger.ts";

/** Exit codes of `warden ledger verify`: 0 intact, else that of the most severe finding. */
export const VERIFY_EXIT = {
  intact: 0,
  broken: 3,
  torn: 4,
  absent: 5,
  unreadable: 6,
  missing: 7,
  truncated: 8,
  unsealed: 9,
  unfinished: 10,
  unapproved: 11,
} as const;

type FindingKind = Exclude<keyof typeof VERIFY_EXIT, "intact" | "absent">;
/** Most severe first: tampering, then what a crash leaves. */
const SEVERITY: readonly FindingKind[] = [
  "broken",
  "unapproved",
  "missing",
  "truncated",
  "unreadable",
  "torn",
  "unsealed",
  "unfinished",
];

/** One thing verify found: the file (name only), the 1-based line (row) it is about, and why. */
export interface Finding {
  readonly kind: FindingKind;
  readonly file: string;
  readonly line: number;
  readonly problem: string;
}

/** What `warden ledger verify` found. */
export interface VerifyReport {
  readonly status: keyof typeof VERIFY_EXIT;
  readonly files: number;
  readonly rows: number;
  /** Most severe first. */
  readonly findings: readonly Finding[];
  /** Files not sealed because their process still runs, and version 1 files (no anchor or seal to check). */
  readonly notes: readonly { readonly file: string; readonly note: string }[];
}

/** One file as read by verify. */
interface Scanned {
  readonly name: string;
  /** Intact rows read. */
  rows: number;
  /** For each row some anchor names, by seq: the hash of its group up to it, and the group's first line. */
  readonly hashes: Map<number, { hash: string; from: number }>;
  version: 1 | 2 | 3 | undefined;
  anchor: readonly Head[] | undefined;
  sealed: boolean;
  /** Read up to a bad row only. */
  bad: boolean;
  pid: number | undefined;
  last: { line: number; row: LedgerRow } | undefined;
  readonly intents: Map<number, { line: number; row: v.InferOutput<typeof IntentRow> }>;
  /** Its approval rows, checked across files once all are read. */
  readonly approvals: { line: number; row: v.InferOutput<typeof ApprovalRow> }[];
}

function describeRow(row: LedgerRow): string {
  if (row.v === 1) return `call of "${row.tool}" at ${row.time}`;
  if (row.kind === "anchor") return `the anchor, at ${row.time}`;
  if (row.kind === "seal") return `the seal, at ${row.time}`;
  if (row.kind === "approval") return `approval request ${row.request} ${row.state} at ${row.time}`;
  return `${row.kind} of "${row.tool}" at ${row.time}`;
}

/**
 * Checks one file's chain; adds what is wrong to `findings`. A group is the
 * consecutive rows with the same `prev`, which must be the hash of the group
 * before (its lines joined by newlines), the first group's GENESIS. Versions 1
 * and 2 wrote groups of one row.
 */
function scanFile(
  name: string,
  text: string,
  findings: Finding[],
  wanted: ReadonlySet<number> | undefined,
): Scanned {
  const file: Scanned = {
    name,
    rows: 0,
    hashes: new Map(),
    version: undefined,
    anchor: undefined,
    sealed: false,
    bad: false,
    pid: undefined,
    last: undefined,
    intents: new Map(),
    approvals: [],
  };
  const lines = text.split("\n");
  const torn = lines.pop() !== "";
  /** The `prev` of the open group, and its first line's index. */
  let groupPrev: string | undefined;
  let groupStart = 0;
  for (const [i, line] of lines.entries()) {
    const bad = (why: string): Scanned => {
      findings.push({ kind: "broken", file: name, line: i + 1, problem: why });
      file.bad = true;
      return file;
    };
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return bad("not JSON");
    }
    const version = (value as { v?: unknown } | null)?.v;
    const kind = (value as { kind?: unknown } | null)?.kind;
    const schema = version === 1
      ? V1Row
      : (version === 2 || version === 3) && typeof kind === "string" && Object.hasOwn(ROWS, kind)
      ? ROWS[kind as keyof typeof ROWS]
      : undefined;
    if (!schema) {
      return bad(
        version === 2 || version === 3
          ? `not a ledger row (unknown kind ${
            JSON.stringify(kind)
          }; expected anchor, approval, call, decision, intent, seal or signal)`
          : `not a ledger row of a known version (v ${JSON.stringify(version)}; this warden reads 1, 2 and 3)`,
      );
    }
    const parsed = v.safeParse(schema, value);
    if (!parsed.success) return bad(`not a ledger row (${parsed.issues[0].message})`);
    const row = parsed.output as LedgerRow;
    if (canonicalJson(row) !== line) return bad("not in canonical form");
    if (row.seq !== i + 1) return bad(`seq ${row.seq} where ${i + 1} was due`);
    file.version ??= row.v;
    if (row.v !== file.version) return bad(`a version ${row.v} row in a version ${file.version} file`);
    if (row.prev !== groupPrev || file.version < 3) {
      // A new group: its prev commits to the one before.
      const due = i === 0 ? GENESIS : "sha256:" + sha256Hex(lines.slice(groupStart, i).join("\n"));
      if (row.prev !== due) {
        return bad(
          i - groupStart > 1
            ? `prev does not match the rows before it (lines ${groupStart + 1} to ${i})`
            : "prev does not match the previous row",
        );
      }
      groupPrev = row.prev;
      groupStart = i;
    }
    if (file.sealed) return bad("a row after the seal");
    if (row.v !== 1) {
      if ((i === 0) !== (row.kind === "anchor")) {
        return bad(i === 0 ? "the first row is not an anchor" : "an anchor after the first row");
      }
      if (row.kind === "anchor") file.anchor = row.heads;
      if (row.kind === "seal") file.sealed = true;
      if (row.kind === "intent") file.intents.set(row.seq, { line: i + 1, row });
      if (row.kind === "approval") file.approvals.push({ line: i + 1, row });
      if (row.kind === "call" && row.intent !== null) {
        if (!file.intents.delete(row.intent)) return bad(`the call names intent ${row.intent}, not an open intent`);
      }
      // A signal is met while its call runs: between the call's intent and its call row.
      if (row.kind === "signal" && row.intent !== null && !file.intents.has(row.intent)) {
        return bad(`the signal names intent ${row.intent}, not an open intent`);
      }
    }
    file.pid ??= row.pid;
    file.rows++;
    if (wanted?.has(row.seq)) {
      file.hashes.set(row.seq, {
        hash: "sha256:" + sha256Hex(lines.slice(groupStart, i + 1).join("\n")),
        from: groupStart + 1,
      });
    }
    file.last = { line: i + 1, row };
  }
  if (torn) {
    findings.push({ kind: "torn", file: name, line: lines.length + 1, problem: "the last row is incomplete" });
  }
  return file;
}

/**
 * Checks the approvals the rows record, from the rows alone: each decision by signature is a signature of that decision
 * on its plan's digest, in the approvals' namespace, by the key it names (and, given the approvers' trust store, by a
 * key it trusts at the row's time and that is not revoked now); no decision by principal is the requester's own; each
 * submitted plan has an approval of that digest in the ledger.
 */
async function checkApprovals(
  scanned: Iterable<Scanned>,
  findings: Finding[],
  approvers: TrustStore | undefined,
): Promise<number> {
  const rows = [...scanned].flatMap((file) => file.approvals.map((found) => ({ file: file.name, ...found })));
  /** Who requested each request (its pending_approval row's caller). */
  const requester = new Map(
    rows.filter(({ row }) => row.state === "pending_approval").map(({ row }) => [row.request, row.principal]),
  );
  /** The plans whose approval holds. Replicas' clocks may differ: a submission is matched in any order. */
  const approved = new Set<string>();
  const submitted: typeof rows = [];
  for (const found of rows) {
    const { file, line, row } = found;
    const unapproved = (why: string) =>
      findings.push({ kind: "unapproved", file, line, problem: `request ${row.request}: ${why}` });
    if (row.state === "submitted") submitted.push(found);
    if (row.state !== "approved" && row.state !== "rejected") continue;
    if (row.approver === null) {
      unapproved(`${row.state} without an approver`);
      continue;
    }
    if (row.approver.via === "principal" && row.approver.principal === requester.get(row.request)) {
      unapproved(`${row.state} by ${row.approver.principal}, who requested it`);
      continue;
    }
    if (row.approver.via === "signature") {
      if (row.signature === null) {
        unapproved(`${row.state} by a signature the row does not keep`);
        continue;
      }
      const decision = row.state === "approved" ? "approve" : "reject";
      const why = await signatureProblem(
        decision,
        row.planDigest,
        row.signature,
        row.approver,
        new Date(row.time),
        approvers,
      );
      if (why !== null) {
        unapproved(`the approver's signature does not hold: ${why}`);
        continue;
      }
    }
    if (row.state === "approved") approved.add(`${row.request} ${row.planDigest}`);
  }
  for (const { file, line, row } of submitted) {
    if (!approved.has(`${row.request} ${row.planDigest}`)) {
      findings.push({
        kind: "unapproved",
        file,
        line,
        problem: `request ${row.request}: submitted as ${
          row.job ?? "a job"
        } with no approval of plan ${row.planDigest} in the ledger`,
      });
    }
  }
  return rows.length;
}

/** Why `armored` is not `approver`'s `decision` on `digest`, or null. */
async function signatureProblem(
  decision: Decision,
  digest: string,
  armored: string,
  approver: { readonly principal: string; readonly fingerprint: string | null },
  at: Date,
  approvers: TrustStore | undefined,
): Promise<string | null> {
  try {
    const signature = await parseSignature(armored);
    if (signature.publicKey.fingerprint !== approver.fingerprint) {
      return `it is by key ${signature.publicKey.fingerprint}, the row names ${approver.fingerprint}`;
    }
    if (approvers === undefined) {
      // The plan's digest and the signature alone: whoever holds the key signed this digest in this namespace.
      const signer: AllowedSigner = {
        principals: [approver.principal],
        key: signature.publicKey,
        namespaces: [APPROVAL_NAMESPACE],
        validAfter: null,
        validBefore: null,
        certAuthority: false,
        source: "the ledger row",
        line: 0,
      };
      await verifyApproval(decision, digest, armored, [signer], [], at);
    } else {
      const found = await verifyApproval(decision, digest, armored, approvers.signers, approvers.revoked, at);
      if (found.principal !== approver.principal) {
        return `the approvers' file names its key ${found.principal}, the row ${approver.principal}`;
      }
    }
    return null;
  } catch (error) {
    return messageOf(error).replace(/\s+/g, " ");
  }
}

/** Walks every ledger file of `dir`: each chain row by row, then the anchors, seals and intents across files. */
export async function verifyLedger(dir: string, options: { approvers?: TrustStore } = {}): Promise<VerifyReport> {
  let names: string[];
  try {
    names = await ledgerFiles(dir);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT") return { status: "absent", files: 0, rows: 0, findings: [], notes: [] };
    return {
      status: "unreadable",
      files: 0,
      rows: 0,
      findings: [{ kind: "unreadable", file: dir, line: 0, problem: messageOf(error) }],
      notes: [],
    };
  }
  if (names.length === 0) return { status: "absent", files: 0, rows: 0, findings: [], notes: [] };
  await loadNativeSha256();
  const findings: Finding[] = [];
  const notes: { file: string; note: string }[] = [];
  const scanned = new Map<string, Scanned>();
  // The rows the anchors name, read first (each a file's first line), so that only their hashes are kept.
  const wanted = new Map<string, Set<number>>();
  for (const name of names) {
    for (const head of (await readAnchor(path.join(dir, name)))?.heads ?? []) {
      wanted.set(head.file, (wanted.get(head.file) ?? new Set()).add(head.seq));
    }
  }
  let rows = 0;
  for (const name of names) {
    let text: string;
    try {
      text = await platform().fs.readTextFile(path.join(dir, name));
    } catch (error) {
      findings.push({ kind: "unreadable", file: name, line: 0, problem: messageOf(error) });
      continue;
    }
    const file = scanFile(name, text, findings, wanted.get(name));
    rows += file.rows;
    scanned.set(name, file);
  }
  for (const file of scanned.values()) {
    for (const head of file.anchor ?? []) {
      const target = scanned.get(head.file);
      const by = `the anchor of ${file.name} (line 1) committed to`;
      if (!target) {
        if (!names.includes(head.file)) {
          findings.push({
            kind: "missing",
            file: head.file,
            line: head.seq,
            problem: `the file is missing; ${by} its row ${head.seq}`,
          });
        }
      } else if (target.bad) {
        // Its own finding says why.
      } else if (target.rows < head.seq) {
        findings.push({
          kind: "truncated",
          file: head.file,
          line: target.rows + 1,
          problem: `rows ${target.rows + 1} to ${head.seq} were removed; ${by} its row ${head.seq}`,
        });
      } else if (head.seq > 0 && target.hashes.get(head.seq)?.hash !== head.hash) {
        const from = target.hashes.get(head.seq)?.from ?? head.seq;
        findings.push({
          kind: "broken",
          file: head.file,
          line: head.seq,
          problem: from === head.seq
            ? `not the row ${by} (the file was rewritten)`
            : `rows ${from} to ${head.seq} are not those ${by} (the file was rewritten)`,
        });
      }
    }
  }
  for (const file of scanned.values()) {
    if (file.bad || file.last === undefined) continue;
    if (file.version === 1) {
      notes.push({ file: file.name, note: "version 1 (no anchor or seal): its end cannot be checked" });
      continue;
    }
    const unsealed = !file.sealed;
    if (unsealed && file.pid !== undefined && await platform().processRunning(file.pid)) {
      notes.push({ file: file.name, note: `not sealed yet: its process (pid ${file.pid}) is running` });
      continue;
    }
    if (unsealed) {
      findings.push({
        kind: "unsealed",
        file: file.name,
        line: file.last.line,
        problem:
          `never sealed: its process (pid ${file.pid}) ended without a clean exit (a crash, or its seal was cut off); last row ${file.last.line}: ${
            describeRow(file.last.row)
          }`,
      });
    }
    for (const { line, row } of file.intents.values()) {
      findings.push({
        kind: "unfinished",
        file: file.name,
        line,
        problem: `the ${row.risk} call of "${row.tool}" that started at ${row.time} never finished`,
      });
    }
  }
  const approvals = await checkApprovals(
    [...scanned.values()].filter((file) => !file.bad),
    findings,
    options.approvers,
  );
  if (approvals > 0) {
    notes.push({
      file: "approvals",
      note: `${approvals} approval row(s) checked${
        options.approvers ? " against the approvers' allowed_signers file" : " from their signatures alone"
      }`,
    });
  }
  findings.sort((a, b) => SEVERITY.indexOf(a.kind) - SEVERITY.indexOf(b.kind));
  return { status: findings[0]?.kind ?? "intact", files: names.length, rows, findings, notes };
}
