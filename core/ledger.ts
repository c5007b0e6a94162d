// The call ledger: one append-only, hash-chained JSONL row per tools/call.
// Each server process writes its own file (<dir>/<started>-<pid>.jsonl), so
// concurrent servers never interleave rows and no lock is needed; each row
// carries `prev`, the sha256 of the previous row's exact line, so an edited,
// removed or reordered row breaks the chain. Arguments are never written,
// only their hash.
import * as v from "valibot";
import path from "node:path";
import { canonicalJson } from "./canonical_json.ts";
import { messageOf, problem, WardenError } from "./errors.ts";
import { type AppendOnlyFile, platform } from "./platform/mod.ts";
import { RISK_CLASSES, type RiskClass } from "./tool.ts";

export const LEDGER_VERSION = 1;
/** `prev` of a file's first row. */
export const GENESIS = "sha256:" + "0".repeat(64);

const Digest = v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/));

/** The valibot schema of a row; schema/ledger-row.schema.json is its JSON Schema. */
export const LedgerRowSchema = v.strictObject({
  v: v.literal(LEDGER_VERSION),
  seq: v.pipe(v.number(), v.integer(), v.minValue(1)),
  time: v.pipe(v.string(), v.isoTimestamp()),
  pid: v.number(),
  tool: v.string(),
  risk: v.picklist(RISK_CLASSES as [RiskClass, ...RiskClass[]]),
  plugin: v.nullable(v.strictObject({ id: v.string(), manifestDigest: Digest })),
  principal: v.nullable(v.string()),
  argsHash: Digest,
  decision: v.picklist(["allowed", "denied"]),
  reason: v.nullable(v.string()),
  outcome: v.picklist(["ok", "error", "denied"]),
  errorCode: v.nullable(v.string()),
  durationMs: v.number(),
  prev: Digest,
});

export type LedgerRow = v.InferOutput<typeof LedgerRowSchema>;
/** What the caller says about a call; the ledger adds seq, time, pid and prev. */
export type LedgerEntry = Omit<LedgerRow, "v" | "seq" | "time" | "pid" | "prev" | "argsHash"> & { args: unknown };

function nullableString(value: string | null): string {
  return value === null ? "null" : JSON.stringify(value);
}

/** The outcome of an append: written, or why not (reported in the call's result). */
export type AppendOutcome = { ok: true } | { ok: false; error: string };

/** This process's ledger file, opened on the first row. */
export class Ledger {
  readonly #dir: string;
  #file: AppendOnlyFile | undefined;
  #prev = GENESIS;
  /** The last row written whose hash (the next row's `prev`) is not yet computed. */
  #unhashed: string | undefined;
  #seq = 0;
  #broken: string | undefined;
  /** `"pid":<pid>,"plugin":`, the same on every row of this process. */
  readonly #pidField = `,"pid":${platform().pid()},"plugin":`;
  #second = -1;
  #secondPrefix = "";

  constructor(dir: string) {
    this.#dir = dir;
  }

  /**
   * Appends one row, synchronously, before the call's result goes out. The
   * hash of the row, which only the next row needs, is left to `settle`.
   */
  append(entry: LedgerEntry): AppendOutcome {
    if (this.#broken) return { ok: false, error: this.#broken };
    let argsHash: string;
    try {
      argsHash = platform().sha256Hex(canonicalJson(entry.args ?? {}));
    } catch {
      argsHash = platform().sha256Hex(JSON.stringify(entry.args ?? {}) ?? "");
    }
    this.settle();
    const line = this.#line(entry, argsHash);
    try {
      this.#file ??= this.#open();
      this.#file.append(line + "\n");
    } catch (error) {
      // A failed append may have left part of a line: this file's chain cannot go on.
      this.#broken = `the call ledger could not be written (${
        messageOf(error).split("\n")[0]
      }); later calls are not recorded either`;
      return { ok: false, error: this.#broken };
    }
    this.#seq++;
    this.#unhashed = line;
    return { ok: true };
  }

  /**
   * Hashes the last row written, if that is still to do. The transport calls
   * it once a response is out, so the hash is off the call's path; `append`
   * calls it too, so a row never waits on anyone else.
   */
  settle(): void {
    if (this.#unhashed === undefined) return;
    this.#prev = "sha256:" + platform().sha256Hex(this.#unhashed);
    this.#unhashed = undefined;
  }

  /**
   * The row's canonical (RFC 8785) text, written out field by field in sorted
   * key order: the row's shape is fixed, and building an object for
   * JSON.stringify cost more than the write. Strings from outside go through
   * JSON.stringify, which escapes as RFC 8785 does; a test holds each line
   * equal to canonicalJson of its parse.
   */
  #line(entry: LedgerEntry, argsHash: string): string {
    const plugin = entry.plugin
      ? `{"id":${JSON.stringify(entry.plugin.id)},"manifestDigest":${JSON.stringify(entry.plugin.manifestDigest)}}`
      : "null";
    return `{"argsHash":"sha256:${argsHash}","decision":"${entry.decision}","durationMs":${
      String(entry.durationMs)
    },"errorCode":${
      nullableString(entry.errorCode)
    },"outcome":"${entry.outcome}"${this.#pidField}${plugin},"prev":"${this.#prev}","principal":${
      nullableString(entry.principal)
    },"reason":${nullableString(entry.reason)},"risk":"${entry.risk}","seq":${
      this.#seq + 1
    },"time":"${this.#now()}","tool":${JSON.stringify(entry.tool)},"v":${LEDGER_VERSION}}`;
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
    return platform().fs.createAppendOnly(path.join(this.#dir, `${stamp}-${platform().pid()}.jsonl`));
  }

  /** Makes sure the directory exists; call at startup. */
  async prepare(): Promise<void> {
    try {
      await platform().fs.mkdir(this.#dir);
    } catch (error) {
      this.#broken = `the call ledger directory cannot be created (${messageOf(error).split("\n")[0]})`;
    }
  }

  close(): void {
    this.#unhashed = undefined;
    this.#file?.close();
  }
}

/** Exit codes of `warden ledger verify`, one per finding. */
export const VERIFY_EXIT = { intact: 0, broken: 3, torn: 4, absent: 5, unreadable: 6 } as const;

/** What `warden ledger verify` found. */
export interface VerifyReport {
  readonly status: keyof typeof VERIFY_EXIT;
  readonly files: number;
  readonly rows: number;
  /** The first bad row: file (name only) and 1-based line, and why. */
  readonly firstBad: { readonly file: string; readonly line: number; readonly problem: string } | null;
}

/** Walks every ledger file of `dir` and checks each chain row by row. */
export async function verifyLedger(dir: string): Promise<VerifyReport> {
  let names: string[];
  try {
    names = (await platform().fs.readDir(dir)).filter((e) => e.kind === "file" && e.name.endsWith(".jsonl")).map((e) =>
      e.name
    ).sort();
  } catch (error) {
    const code = (error as { code?: string }).code;
    return { status: code === "ENOENT" ? "absent" : "unreadable", files: 0, rows: 0, firstBad: null };
  }
  if (names.length === 0) return { status: "absent", files: 0, rows: 0, firstBad: null };
  let rows = 0;
  for (const name of names) {
    let text: string;
    try {
      text = await platform().fs.readTextFile(path.join(dir, name));
    } catch (error) {
      return {
        status: "unreadable",
        files: names.length,
        rows,
        firstBad: { file: name, line: 0, problem: messageOf(error) },
      };
    }
    const lines = text.split("\n");
    const torn = lines.pop() !== "";
    let prev = GENESIS;
    for (const [i, line] of lines.entries()) {
      const bad = (why: string): VerifyReport => ({
        status: "broken",
        files: names.length,
        rows,
        firstBad: { file: name, line: i + 1, problem: why },
      });
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return bad("not JSON");
      }
      const parsed = v.safeParse(LedgerRowSchema, value);
      if (!parsed.success) return bad(`not a ledger row (${parsed.issues[0].message})`);
      if (canonicalJson(parsed.output) !== line) return bad("not in canonical form");
      if (parsed.output.seq !== i + 1) return bad(`seq ${parsed.output.seq} where ${i + 1} was due`);
      if (parsed.output.prev !== prev) return bad("prev does not match the previous row");
      prev = "sha256:" + platform().sha256Hex(line);
      rows++;
    }
    if (torn) {
      return {
        status: "torn",
        files: names.length,
        rows,
        firstBad: { file: name, line: lines.length + 1, problem: "the last row is incomplete" },
      };
    }
  }
  return { status: "intact", files: names.length, rows, firstBad: null };
}

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
  } else {
    const where = report.firstBad
      ? `: first bad row ${report.firstBad.file} line ${report.firstBad.line} (${report.firstBad.problem})`
      : "";
    const lines: Record<VerifyReport["status"], string> = {
      intact: `Ledger intact: ${report.rows} rows in ${report.files} file(s)`,
      broken: `Ledger broken${where}`,
      torn: `Ledger torn${where}`,
      absent: `No ledger in ${dir}`,
      unreadable: `Ledger unreadable${where}`,
    };
    platform().writeStdout(lines[report.status] + "\n");
  }
  return VERIFY_EXIT[report.status];
}
