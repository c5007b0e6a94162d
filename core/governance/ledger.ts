// The call ledger: append-only, hash-chained JSONL. Each server process writes
// its own file (<dir>/<started>-<pid>.jsonl), so concurrent servers never
// interleave rows and no lock is needed. Each row carries `prev`, the sha256
// of the previous row's exact line, so an edited, removed or reordered row
// breaks the chain. The chains are anchored across files: a file's first row
// commits to the heads (name, last seq, last row hash) of the files it found,
// and a clean exit seals the file with a last row, so a removed tail or a
// deleted file is found too. A `gate` or `external-side-effect` call writes an
// intent row before its tool runs, so a crash during it leaves a call that
// never finished. Arguments are never written, only their hash.
import * as v from "valibot";
import path from "node:path";
import { canonicalJson } from "../canonical_json.ts";
import { messageOf, problem, WardenError } from "../errors.ts";
import { type AppendOnlyFile, platform } from "../platform/mod.ts";
import { loadNativeSha256, sha256Hex } from "../sha256.ts";
import { RISK_CLASSES, type RiskClass } from "../tool.ts";

/** The row format this warden writes; verify reads versions 1 (calls only, no anchors or seals) and 2. */
export const LEDGER_VERSION = 2;
/** How long before an anchor was begun a file must have been last written for a later anchor to skip reading it. */
const UNCHANGED_MARGIN_MS = 2000;
/** Tools whose row text is kept (then it starts over): more than a catalog holds. */
const WHO_ENTRIES = 4096;
/** `prev` of a file's first row. */
export const GENESIS = "sha256:" + "0".repeat(64);

const Digest = v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/));
const Seq = v.pipe(v.number(), v.integer(), v.minValue(1));
const Time = v.pipe(v.string(), v.isoTimestamp());
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
const V1Row = v.strictObject({ v: v.literal(1), seq: Seq, time: Time, pid: v.number(), ...callFields, prev: Digest });
/** A call, run or refused; `intent` is the seq of its intent row, when it has one. */
const CallRow = v.strictObject({
  v: v.literal(2),
  kind: v.literal("call"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  ...callFields,
  intent: v.nullable(Seq),
  prev: Digest,
});
/** Written before a gate or external-side-effect tool runs; the call row that ends it names its seq. */
const IntentRow = v.strictObject({
  v: v.literal(2),
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
  v: v.literal(2),
  kind: v.literal("anchor"),
  seq: v.literal(1),
  time: Time,
  pid: v.number(),
  heads: v.array(Head),
  prev: v.literal(GENESIS),
});
/** A file's last row, written on a clean exit. */
const SealRow = v.strictObject({
  v: v.literal(2),
  kind: v.literal("seal"),
  seq: Seq,
  time: Time,
  pid: v.number(),
  prev: Digest,
});

const V2_ROWS = { anchor: AnchorRow, call: CallRow, intent: IntentRow, seal: SealRow } as const;

/** The valibot schema of a row; schema/ledger-row.schema.json is its JSON Schema. */
export const LedgerRowSchema = v.union([v.variant("kind", [AnchorRow, CallRow, IntentRow, SealRow]), V1Row]);

export type LedgerRow = v.InferOutput<typeof LedgerRowSchema>;
type Head = v.InferOutput<typeof Head>;

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

/** The outcome of an append: written, or why not (reported in the call's result). */
export type AppendOutcome = { ok: true } | { ok: false; error: string };

const WRITTEN: AppendOutcome = Object.freeze({ ok: true });

function nullableString(value: string | null): string {
  return value === null ? "null" : JSON.stringify(value);
}

/**
 * `String(ms)` for a duration rounded to the µs, as `governedCall` gives it, from the whole µs: a double's
 * shortest form cost a tenth of the row. Anything else goes to String.
 */
export function durationText(ms: number): string {
  const us = Math.round(ms * 1000);
  if (!(us >= 0 && us <= Number.MAX_SAFE_INTEGER && us / 1000 === ms)) return String(ms);
  const whole = Math.floor(us / 1000);
  const fraction = us - whole * 1000;
  if (fraction === 0) return String(whole);
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
  if (fraction % 10 === 0) return `${whole}.${fraction < 100 ? "0" : ""}${fraction / 10}`;
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

/** How the ledger opens its file; the bench swaps it to time the ledger without its write. */
export type OpenAppendOnly = (path: string) => AppendOnlyFile;

/** This process's ledger file, opened (and anchored) when the first row is written. */
export class Ledger {
  readonly #dir: string;
  readonly #openFile: OpenAppendOnly;
  #file: AppendOnlyFile | undefined;
  #prev = GENESIS;
  /** The last row written whose hash (the next row's `prev`) is not yet computed. */
  #unhashed: string | undefined;
  /** The last seq given out (rows are written in seq order). */
  #seq = 0;
  #broken: AppendOutcome | undefined;
  #sealed = false;
  /** Rows queued for the next append, in seq order: the last of them has seq `#seq`. */
  #queue: (LedgerCall | QueuedIntent)[] = [];
  /** The next append, of the rows queued in this turn: every call among them waits on it. */
  #batch: Promise<AppendOutcome> | undefined;
  /** The anchor row, once the heads of the other files are read; started by the first row. */
  #anchor: Promise<string> | undefined;
  #anchorLine: string | undefined;
  readonly #pid = platform().pid();
  #second = -1;
  #secondPrefix = "";
  /** The last argument text hashed, and its digest. */
  #argsText = "";
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
      text = JSON.stringify(args ?? {}) ?? "";
    }
    // Agents repeat arguments (`{}`, a path, a query), often call after call: the last one's hash was ~15% of the
    // ledger's own CPU. One entry, not a map: keeping many texts cost more on distinct arguments than it saved.
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

  /** A queued row's line: its text is made here, once, with its `prev` and the batch's time. */
  #line(row: LedgerCall | QueuedIntent, seq: number, time: string): string {
    if (row instanceof QueuedIntent) {
      const who = this.#who(row.entry);
      return `{"argsHash":"${row.entry.argsHash}","kind":"intent${who.pluginPrev}${this.#prev}${who.principal}${who.riskSeq}${seq},"time":"${time}${who.toolEnd}`;
    }
    const who = this.#who(row);
    return `{"argsHash":"${row.argsHash}","decision":"${row.decision}","durationMs":${
      durationText(row.durationMs)
    },"errorCode":${nullableString(row.errorCode)},"intent":${
      row.intent === null ? "null" : row.intent
    },"kind":"call","outcome":"${row.outcome}${who.pluginPrev}${this.#prev}${who.principal},"reason":${
      nullableString(row.reason)
    }${who.riskSeq}${seq},"time":"${time}${who.toolEnd}`;
  }

  /** The text a row takes from who calls which tool, made once per tool: the same for each of its rows. */
  #who(entry: LedgerIntent): Who {
    const known = this.#whos.get(entry.tool);
    if (
      known !== undefined && known.risk === entry.risk && known.plugin === entry.plugin &&
      known.principalValue === entry.principal
    ) {
      return known;
    }
    const who: Who = {
      risk: entry.risk,
      plugin: entry.plugin,
      principalValue: entry.principal,
      pluginPrev: `","pid":${this.#pid},"plugin":${pluginField(entry.plugin)},"prev":"`,
      principal: `","principal":${nullableString(entry.principal)}`,
      riskSeq: `,"risk":"${entry.risk}","seq":`,
      toolEnd: `","tool":${JSON.stringify(entry.tool)},"v":2}`,
    };
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
        canonicalJson({ heads, kind: "anchor", pid: this.#pid, prev: GENESIS, seq: 1, time, v: 2 })
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
    this.#batch = this.#anchorLine !== undefined ? SETTLED.then(() => this.#flush()) : this.#anchor!.then(
      (line) => {
        this.#anchorLine = line;
        return this.#flush();
      },
      (error: unknown) => this.#fail(`the call ledger could not be anchored (${messageOf(error).split("\n")[0]})`),
    );
    return this.#batch;
  }

  /** Writes the queued rows with one append, each chained to the one before. */
  #flush(): AppendOutcome {
    const rows = this.#queue;
    this.#batch = undefined;
    this.#queue = [];
    if (this.#broken) return this.#broken;
    this.settle();
    let text = "";
    if (this.#file === undefined) {
      text = this.#anchorLine + "\n";
      this.#prev = "sha256:" + sha256Hex(this.#anchorLine!);
    }
    // The rows of one append were all ready in one turn: they share its time.
    const time = this.#now();
    let seq = this.#seq - rows.length;
    const last = rows.length - 1;
    for (let i = 0; i < last; i++) {
      const line = this.#line(rows[i], ++seq, time);
      text += line + "\n";
      this.#prev = "sha256:" + sha256Hex(line);
    }
    const line = this.#line(rows[last], ++seq, time);
    try {
      this.#file ??= this.#open();
      this.#file.append(text + line + "\n");
    } catch (error) {
      // A failed append may have left part of a line: this file's chain cannot go on.
      return this.#fail(
        `the call ledger could not be written (${
          messageOf(error).split("\n")[0]
        }); later calls are not recorded either`,
      );
    }
    this.#unhashed = line;
    return WRITTEN;
  }

  /** Breaks the ledger: the rows queued and every later one are reported as not written. */
  #fail(error: string): AppendOutcome {
    this.#broken = { ok: false, error };
    this.#queue = [];
    this.#batch = undefined;
    return this.#broken;
  }

  /**
   * Hashes the last row written, if that is still to do. The transport calls
   * it once a response is out, so the hash is off the call's path; a flush
   * calls it too, so a row never waits on anyone else.
   */
  settle(): void {
    if (this.#unhashed === undefined) return;
    this.#prev = "sha256:" + sha256Hex(this.#unhashed);
    this.#unhashed = undefined;
  }

  /**
   * Writes the seal, the file's last row, once the rows queued are written;
   * later rows are refused. Call on a clean exit: a file without a seal reads
   * as a crash. Nothing is written by a process that wrote no row.
   */
  async seal(): Promise<void> {
    while (this.#batch) await this.#batch;
    if (this.#sealed) return;
    this.#sealed = true;
    if (this.#file === undefined || this.#broken) return;
    this.settle();
    const line = `{"kind":"seal","pid":${this.#pid},"prev":"${this.#prev}","seq":${++this
      .#seq},"time":"${this.#now()}","v":2}`;
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

  /** The time as toISOString writes it, formatting the date part once a second. */
  #now(): string {
    const now = Date.now();
    const ms = now % 1000;
    const second = now - ms;
    if (second !== this.#second) {
      this.#second = second;
      this.#secondPrefix = new Date(second).toISOString().slice(0, 20);
    }
    return this.#secondPrefix + (ms < 10 ? "00" : ms < 100 ? "0" : "") + ms + "Z";
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
async function ledgerFiles(dir: string): Promise<string[]> {
  return (await platform().fs.readDir(dir)).filter((e) => e.kind === "file" && e.name.endsWith(".jsonl")).map((e) =>
    e.name
  ).sort();
}

const decoder = new TextDecoder();

/** The last complete row of a file: its seq and hash; seq 0 when there is none. */
async function readHead(file: string): Promise<{ seq: number; hash: string }> {
  for (let window = 4096;; window *= 8) {
    const { size, bytes } = await platform().fs.readRange(file, -window, window);
    const end = bytes.lastIndexOf(10);
    const start = end === -1 ? -1 : bytes.lastIndexOf(10, end - 1);
    if (start === -1 && bytes.length < size) continue;
    if (end === -1) return { seq: 0, hash: GENESIS };
    const line = decoder.decode(bytes.subarray(start + 1, end));
    let seq = 0;
    try {
      const parsed = JSON.parse(line)?.seq;
      if (Number.isSafeInteger(parsed) && parsed > 0) seq = parsed;
    } catch {
      // A damaged row is still committed to by its hash; verify reports the damage.
    }
    return { seq, hash: "sha256:" + sha256Hex(line) };
  }
}

/** The anchor a file starts with, or undefined (a version 1 file, or one not yet anchored). */
async function readAnchor(file: string): Promise<v.InferOutput<typeof AnchorRow> | undefined> {
  try {
    for (let window = 4096;; window *= 8) {
      const { size, bytes } = await platform().fs.readRange(file, 0, window);
      const end = bytes.indexOf(10);
      if (end === -1 && bytes.length < size) continue;
      if (end === -1) return undefined;
      const parsed = v.safeParse(AnchorRow, JSON.parse(decoder.decode(bytes.subarray(0, end))));
      return parsed.success ? parsed.output : undefined;
    }
  } catch {
    return undefined;
  }
}

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
} as const;

type FindingKind = Exclude<keyof typeof VERIFY_EXIT, "intact" | "absent">;
/** Most severe first: tampering, then what a crash leaves. */
const SEVERITY: readonly FindingKind[] = [
  "broken",
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
  /** The hash of each row some anchor names, by seq. */
  readonly hashes: Map<number, string>;
  version: 1 | 2 | undefined;
  anchor: readonly Head[] | undefined;
  sealed: boolean;
  /** Read up to a bad row only. */
  bad: boolean;
  pid: number | undefined;
  last: { line: number; row: LedgerRow } | undefined;
  readonly intents: Map<number, { line: number; row: v.InferOutput<typeof IntentRow> }>;
}

function describeRow(row: LedgerRow): string {
  if (row.v === 1) return `call of "${row.tool}" at ${row.time}`;
  if (row.kind === "anchor") return `the anchor, at ${row.time}`;
  if (row.kind === "seal") return `the seal, at ${row.time}`;
  return `${row.kind} of "${row.tool}" at ${row.time}`;
}

/** Checks one file's chain row by row; adds what is wrong to `findings`. */
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
  };
  const lines = text.split("\n");
  const torn = lines.pop() !== "";
  let prev = GENESIS;
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
      : version === 2 && typeof kind === "string" && Object.hasOwn(V2_ROWS, kind)
      ? V2_ROWS[kind as keyof typeof V2_ROWS]
      : undefined;
    if (!schema) {
      return bad(
        version === 2
          ? `not a ledger row (unknown kind ${JSON.stringify(kind)}; expected anchor, call, intent or seal)`
          : `not a ledger row of a known version (v ${JSON.stringify(version)}; this warden reads 1 and 2)`,
      );
    }
    const parsed = v.safeParse(schema, value);
    if (!parsed.success) return bad(`not a ledger row (${parsed.issues[0].message})`);
    const row = parsed.output as LedgerRow;
    if (canonicalJson(row) !== line) return bad("not in canonical form");
    if (row.seq !== i + 1) return bad(`seq ${row.seq} where ${i + 1} was due`);
    if (row.prev !== prev) return bad("prev does not match the previous row");
    file.version ??= row.v;
    if (row.v !== file.version) return bad(`a version ${row.v} row in a version ${file.version} file`);
    if (file.sealed) return bad("a row after the seal");
    if (row.v === 2) {
      if ((i === 0) !== (row.kind === "anchor")) {
        return bad(i === 0 ? "the first row is not an anchor" : "an anchor after the first row");
      }
      if (row.kind === "anchor") file.anchor = row.heads;
      if (row.kind === "seal") file.sealed = true;
      if (row.kind === "intent") file.intents.set(row.seq, { line: i + 1, row });
      if (row.kind === "call" && row.intent !== null) {
        if (!file.intents.delete(row.intent)) return bad(`the call names intent ${row.intent}, not an open intent`);
      }
    }
    file.pid ??= row.pid;
    prev = "sha256:" + sha256Hex(line);
    file.rows++;
    if (wanted?.has(row.seq)) file.hashes.set(row.seq, prev);
    file.last = { line: i + 1, row };
  }
  if (torn) {
    findings.push({ kind: "torn", file: name, line: lines.length + 1, problem: "the last row is incomplete" });
  }
  return file;
}

/** Walks every ledger file of `dir`: each chain row by row, then the anchors, seals and intents across files. */
export async function verifyLedger(dir: string): Promise<VerifyReport> {
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
      } else if (head.seq > 0 && target.hashes.get(head.seq) !== head.hash) {
        findings.push({
          kind: "broken",
          file: head.file,
          line: head.seq,
          problem: `not the row ${by} (the file was rewritten)`,
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
  findings.sort((a, b) => SEVERITY.indexOf(a.kind) - SEVERITY.indexOf(b.kind));
  return { status: findings[0]?.kind ?? "intact", files: names.length, rows, findings, notes };
}

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
