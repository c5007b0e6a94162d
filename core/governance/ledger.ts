// The call ledger: append-only, hash-chained JSONL. Each server process writes
// its own file (<dir>/<started>-<pid>.jsonl), so concurrent servers never
// interleave rows and no lock is needed. The rows form groups, each group the
// consecutive rows that carry the same `prev`: the sha256 of the previous
// group's exact lines (joined by newlines), so an edited, removed or
// reordered row breaks the chain. A group is closed once it holds GROUP_CHARS
// of text, or at the seal: one hash per group, since one per row cost deno a
// fifth of a trivial call's throughput (scripts/bench/README.md). The chains
// are anchored across files: a file's first row commits to the heads (name,
// last seq, hash of the last group) of the files it found, and a clean exit
// seals the file with a last row, so a removed tail or a deleted file is found
// too. A `gate` or `external-side-effect` call writes an intent row before its
// tool runs, so a crash during it leaves a call that never finished.
// Arguments are never written, only their hash; nor is the text a signal row
// is about, only where it was, the rule and the span's hash. This file is the
// row format and the writer; ledger_verify.ts checks what it wrote.
import * as v from "valibot";
import path from "node:path";
import { canonicalJson } from "../canonical_json.ts";
import { messageOf } from "../errors.ts";
import { type AppendOnlyFile, platform } from "../platform/mod.ts";
import { loadNativeSha256, sha256Hex } from "../sha256.ts";
import { RISK_CLASSES, type RiskClass } from "../tool.ts";

/**
 * The row format this warden writes; verify reads versions 1 (calls only, no anchors or seals), 2 (anchors,
 * intents and seals; a group of one row each) and 3 (groups of rows).
 */
export const LEDGER_VERSION = 3;
/**
 * A group is closed, and the next row's `prev` is its hash, once its lines hold this many characters (about ten rows).
 * A hash costs a fixed part per call (most of it under deno) and a part per byte: larger groups would save little, and
 * the rows of a crashed file's last group are committed to by no later row.
 */
export const GROUP_CHARS = 4096;
/** How long before an anchor was begun a file must have been last written for a later anchor to skip reading it. */
const UNCHANGED_MARGIN_MS = 2000;
/** Tools whose row text is kept (then it starts over): more than a catalog holds. */
const WHO_ENTRIES = 4096;
/** `prev` of a file's first row. */
export const GENESIS = "sha256:" + "0".repeat(64);

const Digest = v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/));
const Seq = v.pipe(v.number(), v.integer(), v.minValue(1));
const Time = v.pipe(v.string(), v.isoTimestamp());
/** Versions 2 and 3 have the same rows; 3 groups them. */
const Version = v.picklist([2, 3]);
const Risk = v.picklist(RISK_CLASSES as [RiskClass, ...RiskClass[]]);
const Plugin = v.nullable(v.strictObject({ id: v.string(), manifestDigest: Digest }));
const callFields = {
  tool: v.string(),
  risk: Risk,
  plugin: Plugin,
  principal: v.nullable(v.string()),
  argsHash: Digest,
  decision: v.picklist(["allowed", "denied"]),
  reason: v.nullable(v.string()),
  outcome: v.picklist(["ok", "error", "denied"]),
  errorCode: v.nullable(v.string()),
  durationMs: v.number(),
};

/** A row of a version 1 ledger: a call, without kind, anchor or seal. */
export const V1Row = v.strictObject({
  v: v.literal(1),
  seq: Seq,
  time: Time,
  pid: v.number(),
  ...callFields,
  prev: Digest,
});
/** A call, run or refused; `intent` is the seq of its intent row, when it has one. */
const CallRow = v.strictObject({
  v: Version,
  kind: v.literal("call"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  ...callFields,
  intent: v.nullable(Seq),
  prev: Digest,
});
/** Written before a gate or external-side-effect tool runs; the call row that ends it names its seq. */
export const IntentRow = v.strictObject({
  v: Version,
  kind: v.literal("intent"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  tool: v.string(),
  risk: Risk,
  plugin: Plugin,
  principal: v.nullable(v.string()),
  argsHash: Digest,
  prev: Digest,
});
/** Where another file ended when this process started: its last complete row (seq 0 and GENESIS when it had none). */
const Head = v.strictObject({
  file: v.pipe(v.string(), v.regex(/^[^/\\]+\.jsonl$/)),
  seq: v.pipe(v.number(), v.integer(), v.minValue(0)),
  hash: Digest,
});
/** A file's first row: the heads it commits to. */
const AnchorRow = v.strictObject({
  v: Version,
  kind: v.literal("anchor"),
  seq: v.literal(1),
  time: Time,
  pid: v.number(),
  heads: v.array(Head),
  prev: v.literal(GENESIS),
});
/** A file's last row, written on a clean exit. */
const SealRow = v.strictObject({
  v: Version,
  kind: v.literal("seal"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  prev: Digest,
});

/** What a tool says of one signal (core/tool.ts's SignalRecord): never the text, only where, the rule and a hash. */
export const SIGNAL_FIELDS = {
  source: v.picklist(["input", "output"]),
  where: v.pipe(v.string(), v.maxLength(200)),
  rule: v.pipe(v.string(), v.regex(/^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/), v.maxLength(64)),
  spanHash: v.pipe(v.string(), v.regex(/^[0-9a-f]{16}$/)),
};
/**
 * A signal of instructions in untrusted text that a running gate call met (version 3 only): written during the call,
 * after its intent row (`intent`), and as a job's (`job`) when the call runs as one.
 */
const SignalRow = v.strictObject({
  v: v.literal(3),
  kind: v.literal("signal"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  tool: v.string(),
  job: v.nullable(v.pipe(v.string(), v.regex(/^job_[0-9a-f]{32}$/))),
  intent: v.nullable(Seq),
  ...SIGNAL_FIELDS,
  prev: Digest,
});

/**
 * The policy engine's decision on a call (version 3, only where `--policy-url` names one): written before the call's
 * row, with the project it reads, the reasons the policy gave (or why there is no decision: then it denied by
 * default) and how long the engine took.
 */
const DecisionRow = v.strictObject({
  v: v.literal(3),
  kind: v.literal("decision"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  tool: v.string(),
  principal: v.nullable(v.string()),
  projectId: v.nullable(v.string()),
  argsHash: Digest,
  allow: v.boolean(),
  reasons: v.pipe(v.array(v.pipe(v.string(), v.maxLength(500))), v.maxLength(10)),
  failure: v.nullable(v.string()),
  policyMs: v.number(),
  prev: Digest,
});

/** The states an approval request moves through (core/governance/approval_desk.ts), as its rows name them. */
export const APPROVAL_STATES = [
  "pending_approval",
  "approved",
  "rejected",
  "stale",
  "submitted",
  "cancelled",
] as const;

/**
 * A step of an approval request (version 3): requested (pending_approval), decided, gone stale, submitted as a job,
 * cancelled. Each names the plan's digest; a decision names its approver and keeps an approver's signature, so that
 * `warden ledger verify` checks it again from this row alone.
 */
export const ApprovalRow = v.strictObject({
  v: v.literal(3),
  kind: v.literal("approval"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  request: v.pipe(v.string(), v.regex(/^req_[0-9a-f]{32}$/)),
  planDigest: Digest,
  state: v.picklist(APPROVAL_STATES),
  /** Who took the step: the caller's principal, or null (stdio without --principal). */
  principal: v.nullable(v.string()),
  projectId: v.string(),
  approver: v.nullable(v.strictObject({
    principal: v.string(),
    via: v.picklist(["principal", "signature"]),
    fingerprint: v.nullable(v.string()),
  })),
  signature: v.nullable(v.pipe(v.string(), v.maxLength(16384))),
  job: v.nullable(v.pipe(v.string(), v.regex(/^job_[0-9a-f]{32}$/))),
  prev: Digest,
});

/** The rows of versions 2 and 3, by kind. */
export const ROWS = {
  anchor: AnchorRow,
  approval: ApprovalRow,
  call: CallRow,
  decision: DecisionRow,
  intent: IntentRow,
  seal: SealRow,
  signal: SignalRow,
} as const;

/** The valibot schema of a row; schema/ledger-row.schema.json is its JSON Schema. */
export const LedgerRowSchema = v.union([
  v.variant("kind", [AnchorRow, ApprovalRow, CallRow, DecisionRow, IntentRow, SealRow, SignalRow]),
  V1Row,
]);

export type LedgerRow = v.InferOutput<typeof LedgerRowSchema>;
export type Head = v.InferOutput<typeof Head>;

/** What the caller says about a finished call; the ledger adds seq, time, pid and prev. */
export interface LedgerCall {
  readonly tool: string;
  readonly risk: RiskClass;
  readonly plugin: { readonly id: string; readonly manifestDigest: string } | null;
  readonly principal: string | null;
  /** From `argsHash`. */
  readonly argsHash: string;
  readonly decision: "allowed" | "denied";
  readonly reason: string | null;
  readonly outcome: "ok" | "error" | "denied";
  readonly errorCode: string | null;
  readonly durationMs: number;
  /** The seq of the call's intent row, or null. */
  readonly intent: number | null;
}

/** What an intent row says: who calls which tool with what, before it runs. */
export type LedgerIntent = Pick<LedgerCall, "tool" | "risk" | "plugin" | "principal" | "argsHash">;

/** What a signal row says; the ledger adds seq, time, pid and prev. */
export interface LedgerSignal {
  readonly tool: string;
  /** The job the call runs as, or null. */
  readonly job: string | null;
  /** The seq of the call's intent row, or null. */
  readonly intent: number | null;
  readonly source: "input" | "output";
  readonly where: string;
  readonly rule: string;
  readonly spanHash: string;
}

/** What a decision row says; the ledger adds seq, time, pid and prev. */
export interface LedgerDecision {
  readonly tool: string;
  readonly principal: string | null;
  readonly projectId: string | null;
  readonly argsHash: string;
  readonly allow: boolean;
  readonly reasons: readonly string[];
  readonly failure: string | null;
  readonly policyMs: number;
}

/** What an approval row says; the ledger adds seq, time, pid and prev. */
export type LedgerApproval = Omit<v.InferOutput<typeof ApprovalRow>, "v" | "kind" | "seq" | "time" | "pid" | "prev">;

/** Why `signal` cannot be a row (a field SIGNAL_FIELDS refuses), or null when it can. */
export function signalProblem(signal: unknown): string | null {
  const checked = v.safeParse(v.strictObject(SIGNAL_FIELDS), signal);
  if (checked.success) return null;
  const issue = checked.issues[0];
  return `${v.getDotPath(issue) ?? "(root)"}: ${issue.message}`;
}

/** The outcome of an append: written, or why not (reported in the call's result). */
export type AppendOutcome = { ok: true } | { ok: false; error: string };

const WRITTEN: AppendOutcome = Object.freeze({ ok: true });

/**
 * `String(ms)` for a duration rounded to the µs, as `governedCall` gives it, from the whole µs: a double's
 * shortest form was a large share of the row's cost. Anything else goes to String.
 */
export function durationText(ms: number): string {
  // Stryker disable next-line ArithmeticOperator: equivalent, a wrong µs fails the check below, and String(ms) follows
  const us = Math.round(ms * 1000);
  if (!(us >= 0 && us / 1000 === ms)) return String(ms);
  // Stryker disable next-line all: equivalent, past 2^53 µs (285 years) the way below still writes String's text
  if (us > Number.MAX_SAFE_INTEGER) return String(ms);
  const whole = Math.floor(us / 1000);
  const fraction = us - whole * 1000;
  if (fraction === 0) return String(whole);
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
  // Stryker disable next-line EqualityOperator: equivalent, a fraction of 100 took the branch above
  if (fraction % 10 === 0) return `${whole}.${fraction < 100 ? "0" : ""}${fraction / 10}`;
  // Stryker disable next-line EqualityOperator: equivalent, fractions of 10 and 100 took the branches above
  return `${whole}.${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}`;
}

function pluginField(plugin: LedgerCall["plugin"]): string {
  return plugin
    ? `{"id":${JSON.stringify(plugin.id)},"manifestDigest":${JSON.stringify(plugin.manifestDigest)}}`
    : "null";
}

/** What a row says of who calls which tool, as text: before `prev`, after it, before seq, after time. */
interface Who {
  readonly risk: RiskClass;
  readonly plugin: LedgerCall["plugin"];
  readonly principalValue: string | null;
  readonly pluginPrev: string;
  readonly principal: string;
  readonly riskSeq: string;
  readonly toolEnd: string;
}

const SETTLED = Promise.resolve();

/** An intent row in the queue, told from a call row by its class. */
class QueuedIntent {
  constructor(readonly entry: LedgerIntent) {}
}

/**
 * A row made the plain way, its canonical form from its fields: signals, the policy engine's decisions and approvals'
 * steps, which are rare or come with a round trip that dwarfs it, never on a trivial call's path.
 */
class QueuedRow {
  constructor(readonly kind: "signal" | "decision" | "approval", readonly fields: object) {}
}

/** `value` with lone UTF-16 surrogates replaced: canonical JSON (RFC 8785) has no form for those. */
function wellFormed<T extends string | null>(value: T): T {
  return value === null ? value : value.toWellFormed() as T;
}

/** How the ledger opens its file; the bench swaps it to time the ledger without its write. */
export type OpenAppendOnly = (path: string) => AppendOnlyFile;

/** This process's ledger file, opened (and anchored) when the first row is written. */
export class Ledger {
  readonly #dir: string;
  readonly #openFile: OpenAppendOnly;
  #file: AppendOnlyFile | undefined;
  #prev = GENESIS;
  /** The lines of the open group (the rows whose `prev` is `#prev`), joined by newlines; "" when it has none. */
  #group = "";
  /** The last seq given out (rows are written in seq order). */
  #seq = 0;
  #broken: AppendOutcome | undefined;
  #sealed = false;
  /** Rows queued for the next append, in seq order: the last of them has seq `#seq`. */
  #queue: (LedgerCall | QueuedIntent | QueuedRow)[] = [];
  /** The next append, of the rows queued in this turn: every call among them waits on it. */
  #batch: Promise<AppendOutcome> | undefined;
  /** The anchor row, once the heads of the other files are read; started by the first row. */
  #anchor: Promise<string> | undefined;
  #anchorLine: string | undefined;
  readonly #pid = platform().pid();
  // Caches (the last second's time text, the last arguments' hash, who calls each tool): their start values are never
  // read as an answer, since no second is -1 and no canonical JSON is empty.
  // Stryker disable next-line all: equivalent, see above
  #second = -1;
  // Stryker disable next-line all: equivalent, see above
  #secondPrefix = "";
  /** The last argument text hashed, and its digest. */
  // Stryker disable next-line all: equivalent, see above
  #argsText = "";
  // Stryker disable next-line all: equivalent, see above
  #argsDigest = "";
  #whos = new Map<string, Who>();

  constructor(dir: string, openFile: OpenAppendOnly = (p) => platform().fs.createAppendOnly(p)) {
    this.#dir = dir;
    this.#openFile = openFile;
  }

  /** `sha256:<hex>` of the arguments' canonical (RFC 8785) JSON; `{}` when there are none. */
  argsHash(args: unknown): string {
    let text: string;
    try {
      text = canonicalJson(args ?? {});
    } catch {
      // Not canonicalizable (a non-finite number): still one text per value.
      // Stryker disable next-line StringLiteral: equivalent, JSON.stringify of an object is never undefined
      text = JSON.stringify(args ?? {}) ?? "";
    }
    // Agents repeat arguments (`{}`, a path, a query), often call after call: the last one's hash is kept. One entry,
    // not a map: keeping many texts cost more on distinct arguments than it saved.
    // Stryker disable next-line ConditionalExpression: equivalent, without the cache the same digest is computed
    if (text === this.#argsText) return this.#argsDigest;
    const digest = "sha256:" + sha256Hex(text);
    this.#argsText = text;
    this.#argsDigest = digest;
    return digest;
  }

  /**
   * Queues a finished call's row. The promise, shared by the rows of one
   * turn, resolves once they are written with one append (or could not be):
   * the call's result waits on it, and reports a row that was not written.
   */
  call(entry: LedgerCall): Promise<AppendOutcome> {
    // Stryker disable next-line ConditionalExpression: equivalent, #schedule answers a broken ledger the same way
    if (this.#broken) return Promise.resolve(this.#broken);
    this.#next();
    this.#queue.push(entry);
    return this.#schedule();
  }

  /** Queues an intent row; its seq goes into the call's row, and the tool runs once `written` resolves. */
  intent(entry: LedgerIntent): { seq: number; written: Promise<AppendOutcome> } {
    if (this.#broken) return { seq: 0, written: Promise.resolve(this.#broken) };
    const seq = this.#next();
    this.#queue.push(new QueuedIntent(entry));
    return { seq, written: this.#schedule() };
  }

  /**
   * Queues a row for each signal a running call met. The promise resolves once they are written with one append (or
   * could not be); the signals are checked by the caller (signalProblem).
   */
  signals(entries: readonly LedgerSignal[]): Promise<AppendOutcome> {
    // Stryker disable next-line ConditionalExpression: equivalent, #schedule answers a broken ledger the same way
    if (this.#broken) return Promise.resolve(this.#broken);
    if (entries.length === 0) return Promise.resolve(WRITTEN);
    for (const entry of entries) {
      this.#next();
      this.#queue.push(new QueuedRow("signal", entry));
    }
    return this.#schedule();
  }

  /** Queues the policy engine's decision on a call, before the call's own row. */
  decision(entry: LedgerDecision): Promise<AppendOutcome> {
    // Its texts come from the engine, which may send anything JSON holds, lone UTF-16 surrogates included.
    return this.#queuePlain("decision", {
      ...entry,
      principal: wellFormed(entry.principal),
      projectId: wellFormed(entry.projectId),
      reasons: entry.reasons.map(wellFormed),
      failure: wellFormed(entry.failure),
    });
  }

  /** Queues a step of an approval request. */
  approval(entry: LedgerApproval): Promise<AppendOutcome> {
    // A principal is a token's `sub` or a setting: text that may hold lone UTF-16 surrogates.
    return this.#queuePlain("approval", {
      ...entry,
      principal: wellFormed(entry.principal),
      projectId: wellFormed(entry.projectId),
      approver: entry.approver && { ...entry.approver, principal: wellFormed(entry.approver.principal) },
    });
  }

  /** Queues one row made the plain way. */
  #queuePlain(kind: QueuedRow["kind"], fields: object): Promise<AppendOutcome> {
    // Stryker disable next-line ConditionalExpression: equivalent, #schedule answers a broken ledger the same way
    if (this.#broken) return Promise.resolve(this.#broken);
    this.#next();
    this.#queue.push(new QueuedRow(kind, fields));
    return this.#schedule();
  }

  /** A queued row's line: its text is made here, once, with its `prev` and the batch's time. */
  #line(row: LedgerCall | QueuedIntent | QueuedRow, seq: number, time: string): string {
    if (row instanceof QueuedRow) {
      return canonicalJson({
        ...row.fields,
        kind: row.kind,
        pid: this.#pid,
        prev: this.#prev,
        seq,
        time,
        v: LEDGER_VERSION,
      });
    }
    if (row instanceof QueuedIntent) {
      const who = this.#who(row.entry);
      return `{"argsHash":"${row.entry.argsHash}","kind":"intent${who.pluginPrev}${this.#prev}${who.principal}${who.riskSeq}${seq},"time":"${time}${who.toolEnd}`;
    }
    const who = this.#who(row);
    return `{"argsHash":"${row.argsHash}","decision":"${row.decision}","durationMs":${
      durationText(row.durationMs)
    },"errorCode":${
      JSON.stringify(row.errorCode)
    },"intent":${row.intent},"kind":"call","outcome":"${row.outcome}${who.pluginPrev}${this.#prev}${who.principal},"reason":${
      JSON.stringify(row.reason)
    }${who.riskSeq}${seq},"time":"${time}${who.toolEnd}`;
  }

  /** The text a row takes from who calls which tool, made once per tool: the same for each of its rows. */
  #who(entry: LedgerIntent): Who {
    const known = this.#whos.get(entry.tool);
    // Stryker disable ConditionalExpression,BlockStatement: equivalent, a miss makes the same text again
    if (
      known !== undefined && known.risk === entry.risk && known.plugin === entry.plugin &&
      known.principalValue === entry.principal
    ) {
      return known;
    }
    // Stryker restore ConditionalExpression,BlockStatement
    const who: Who = {
      risk: entry.risk,
      plugin: entry.plugin,
      principalValue: entry.principal,
      pluginPrev: `","pid":${this.#pid},"plugin":${pluginField(entry.plugin)},"prev":"`,
      principal: `","principal":${JSON.stringify(entry.principal)}`,
      riskSeq: `,"risk":"${entry.risk}","seq":`,
      toolEnd: `","tool":${JSON.stringify(entry.tool)},"v":${LEDGER_VERSION}}`,
    };
    // Stryker disable next-line all: equivalent, the bound only keeps the cache small
    if (this.#whos.size >= WHO_ENTRIES) this.#whos.clear();
    this.#whos.set(entry.tool, who);
    return who;
  }

  #next(): number {
    if (this.#sealed) {
      this.#broken = {
        ok: false,
        error: "the call ledger is sealed (the server is stopping); this call is not recorded",
      };
    }
    if (this.#seq === 0) {
      // Seq 1 is the anchor, written with the first batch once the heads are read.
      this.#seq = 1;
      // The anchor's time is when it began to read the heads: a later anchor trusts it to skip older files.
      const time = this.#now();
      // The first batch waits for the heads anyway: the native hash loads meanwhile (deno: its node layer, once).
      this.#anchor = Promise.all([this.#readHeads(), loadNativeSha256()]).then(([heads]) =>
        canonicalJson({ heads, kind: "anchor", pid: this.#pid, prev: GENESIS, seq: 1, time, v: LEDGER_VERSION })
      );
    }
    return ++this.#seq;
  }

  #schedule(): Promise<AppendOutcome> {
    if (this.#broken) {
      this.#queue.length = 0;
      return Promise.resolve(this.#broken);
    }
    if (this.#batch) return this.#batch;
    // A reaction queued behind every one already queued: the results ready in this turn join the batch.
    // Stryker disable next-line ConditionalExpression: equivalent, the anchor's promise has the same line, later
    this.#batch = this.#anchorLine !== undefined ? SETTLED.then(() => this.#flush()) : this.#anchor!.then(
      (line) => {
        this.#anchorLine = line;
        return this.#flush();
      },
      (error: unknown) => this.#fail(`the call ledger could not be anchored (${messageOf(error).split("\n")[0]})`),
    );
    return this.#batch;
  }

  /** Writes the queued rows with one append, into the open group. */
  #flush(): AppendOutcome {
    const rows = this.#queue;
    this.#batch = undefined;
    this.#queue = [];
    // Not broken here: #schedule checked, and nothing breaks the ledger while a batch waits (a failed append ends the
    // batch it is in, and seal waits for every batch before it seals).
    this.settle();
    let text = "";
    if (this.#file === undefined) {
      // The anchor is a group of its own: the first rows commit to it at once.
      text = this.#anchorLine + "\n";
      this.#prev = "sha256:" + sha256Hex(this.#anchorLine!);
    }
    // The rows of one append were all ready in one turn: they share its time.
    const time = this.#now();
    let seq = this.#seq - rows.length;
    let lines: string;
    try {
      lines = this.#line(rows[0], ++seq, time);
      for (let i = 1; i < rows.length; i++) lines += "\n" + this.#line(rows[i], ++seq, time);
    } catch (error) {
      // A row that cannot be written as JSON (the entries are made so that none is): the chain cannot skip its seq.
      return this.#fail(
        `a call ledger row could not be made (${messageOf(error).split("\n")[0]}); later calls are not recorded either`,
      );
    }
    try {
      this.#file ??= this.#open();
      this.#file.append(text + lines + "\n");
    } catch (error) {
      // A failed append may have left part of a line: this file's chain cannot go on.
      return this.#fail(
        `the call ledger could not be written (${
          messageOf(error).split("\n")[0]
        }); later calls are not recorded either`,
      );
    }
    this.#group = this.#group === "" ? lines : this.#group + "\n" + lines;
    return WRITTEN;
  }

  /** Breaks the ledger: the rows queued and every later one are reported as not written. */
  #fail(error: string): AppendOutcome {
    this.#broken = { ok: false, error };
    // Stryker disable next-line ArrayDeclaration: equivalent, a broken ledger never flushes its queue again
    this.#queue = [];
    this.#batch = undefined;
    return this.#broken;
  }

  /**
   * Closes the open group once it is full: its hash is the next row's
   * `prev`. The transport calls it once a response is out, so the hash is
   * off the call's path; a flush calls it too, so a group never outgrows
   * GROUP_CHARS by more than one append.
   */
  settle(): void {
    if (this.#group.length >= GROUP_CHARS) this.#close();
  }

  #close(): void {
    this.#prev = "sha256:" + sha256Hex(this.#group);
    this.#group = "";
  }

  /**
   * Writes the seal, the file's last row, once the rows queued are written;
   * later rows are refused. Call on a clean exit: a file without a seal reads
   * as a crash. Nothing is written by a process that wrote no row.
   */
  async seal(): Promise<void> {
    while (this.#batch) await this.#batch;
    // Both equivalent for StrykerJS: a second seal's append comes after close() and throws, and with no file the
    // append of undefined throws; the catch below swallows both, and nothing is written.
    // Stryker disable next-line ConditionalExpression: equivalent, see above
    if (this.#sealed) return;
    this.#sealed = true;
    // Stryker disable next-line ConditionalExpression: equivalent, see above
    if (this.#file === undefined) return;
    if (this.#broken) return;
    // The seal is a group of its own, so it commits to every row before it.
    if (this.#group !== "") this.#close();
    const line = `{"kind":"seal","pid":${this.#pid},"prev":"${this.#prev}","seq":${++this
      .#seq},"time":"${this.#now()}","v":${LEDGER_VERSION}}`;
    try {
      this.#file.append(line + "\n");
      this.#file.close();
    } catch {
      // Nothing to report it to: verify finds the file unsealed.
    }
  }

  /**
   * The heads of the ledger files already in the directory. A file whose head
   * the newest anchor already holds is left to it, and so is one last written
   * well before that anchor was begun (its head then is its head now): that
   * anchor, or one it names, commits to it, and this one commits to that
   * anchor through its file's head. So each anchor lists only the files that
   * changed since the last one, and only those are read.
   */
  async #readHeads(): Promise<Head[]> {
    const names = await ledgerFiles(this.#dir);
    let held = new Map<string, Head>();
    let newest: string | undefined;
    let unchangedBefore = -Infinity;
    for (const name of names.slice(-3).reverse()) {
      const anchor = await readAnchor(path.join(this.#dir, name));
      if (anchor) {
        held = new Map(anchor.heads.map((h) => [h.file, h]));
        newest = name;
        unchangedBefore = Date.parse(anchor.time) - UNCHANGED_MARGIN_MS;
        break;
      }
    }
    const heads: Head[] = [];
    for (const name of names) {
      const file = path.join(this.#dir, name);
      // Stryker disable next-line UnaryOperator,EqualityOperator: equivalent, a file gone since the listing is not listed either way (its head cannot be read), and one last written exactly at the bound is as safe to skip as to read
      if (name !== newest && (platform().fs.lstatSync(file)?.mtimeMs ?? -Infinity) < unchangedBefore) continue;
      let head: { seq: number; hash: string };
      try {
        head = await readHead(file);
      } catch {
        // Gone or unreadable since the listing: verify reports what is wrong with it.
        continue;
      }
      const known = held.get(name);
      if (name === newest || known?.seq !== head.seq || known.hash !== head.hash) heads.push({ file: name, ...head });
    }
    return heads;
  }

  /**
   * The time as toISOString writes it, the date and second formatted once a second: toISOString costs 0.8–1.2 µs, most
   * of the ledger's own CPU when calls come one at a time (an append each), as an agent's do.
   */
  #now(): string {
    const now = Date.now();
    const ms = now % 1000;
    const second = now - ms;
    // Stryker disable next-line ConditionalExpression: equivalent, the text of the same second made again
    if (second !== this.#second) {
      this.#second = second;
      this.#secondPrefix = new Date(second).toISOString().slice(0, 20);
    }
    // The milliseconds padded to three digits: 1000 + ms has four.
    return this.#secondPrefix + String(1000 + ms).slice(1) + "Z";
  }

  #open(): AppendOnlyFile {
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    return this.#openFile(path.join(this.#dir, `${stamp}-${this.#pid}.jsonl`));
  }

  /** Makes sure the directory exists; call at startup. */
  async prepare(): Promise<void> {
    try {
      await platform().fs.mkdir(this.#dir);
    } catch (error) {
      this.#broken = {
        ok: false,
        error: `the call ledger directory cannot be created (${messageOf(error).split("\n")[0]})`,
      };
    }
  }
}

/** The ledger files of `dir`, oldest first (their names start with the time their process started). */
export async function ledgerFiles(dir: string): Promise<string[]> {
  return (await platform().fs.readDir(dir)).filter((e) => e.kind === "file" && e.name.endsWith(".jsonl")).map((e) =>
    e.name
  ).sort();
}

const decoder = new TextDecoder();

/** A line's `prev`, or undefined when it is no row with one. */
function prevOf(line: string): unknown {
  try {
    // Stryker disable next-line OptionalChaining: equivalent, null.prev throws, and the catch answers the same
    return JSON.parse(line)?.prev;
  } catch {
    // Not JSON: no row, so no prev.
  }
  return undefined;
}

/**
 * A file's head: the seq of its last complete row (0 when there is none or it
 * is damaged) and the hash of its last group up to that row (the lines with
 * that row's `prev`, as the next row would commit to them: the row alone in
 * a version 1 or 2 file), so that an anchor commits to every row no later one does.
 */
async function readHead(file: string): Promise<{ seq: number; hash: string }> {
  for (let window = 4096;; window *= 8) {
    const { size, bytes } = await platform().fs.readRange(file, -window, window);
    const whole = bytes.length >= size;
    const end = bytes.lastIndexOf(10);
    // Stryker disable next-line EqualityOperator,UnaryOperator: equivalent, a window with a newline then grows until it holds the whole file, which has the same last row
    if (end === -1 && !whole) continue;
    if (end === -1) return { seq: 0, hash: GENESIS };
    const lines = decoder.decode(bytes.subarray(0, end)).split("\n");
    // Unless the window holds the whole file, its first line may be cut.
    const firstWhole = whole ? 0 : 1;
    if (lines.length <= firstWhole) continue;
    let first = lines.length - 1;
    let seq = 0;
    try {
      const last = JSON.parse(lines[first]);
      // Stryker disable next-line OptionalChaining,EqualityOperator: equivalent, null.seq throws into the catch with seq 0, and a seq of 0 is 0
      if (Number.isSafeInteger(last?.seq) && last.seq > 0) seq = last.seq;
      // Stryker disable next-line OptionalChaining: equivalent, a null row threw on the line above
      const prev = last?.prev;
      if (typeof prev === "string") { while (first > firstWhole && prevOf(lines[first - 1]) === prev) first--; }
    } catch {
      // A damaged row is still committed to by its hash; verify reports the damage.
    }
    // The group may begin before the window.
    if (first === firstWhole && !whole) continue;
    return { seq, hash: "sha256:" + sha256Hex(lines.slice(first).join("\n")) };
  }
}

/** The anchor a file starts with, or undefined (a version 1 file, or one not yet anchored). */
export async function readAnchor(file: string): Promise<v.InferOutput<typeof AnchorRow> | undefined> {
  try {
    for (let window = 4096;; window *= 8) {
      const { size, bytes } = await platform().fs.readRange(file, 0, window);
      const end = bytes.indexOf(10);
      if (end === -1 && bytes.length < size) continue;
      // Stryker disable next-line UnaryOperator: equivalent, a file without a newline has no whole first row either way
      if (end === -1) return undefined;
      const parsed = v.safeParse(AnchorRow, JSON.parse(decoder.decode(bytes.subarray(0, end))));
      return parsed.success ? parsed.output : undefined;
    }
  } catch {
    // Unreadable, or a first line that is not JSON: no anchor.
  }
  return undefined;
}
