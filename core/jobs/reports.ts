// Each job's report directory, <jobs dir>/reports/<job id>/: `result.json`,
// the job as <tool>_result answers it once it has finished (written whole:
// a reader never sees half of it), and `logs/<name>.log`, what a program run
// with ctx.spawn's `log: name` wrote to stdout and stderr, as it came,
// appended while the program runs (never held whole in memory) and cut at
// MAX_LOG_BYTES with a line that says so. Only the core writes here, and only
// for a job's run: a tool names a log, never a file. The directories follow
// their jobs: made before a job's id is given out, removed when it is pruned.
import path from "node:path";
import { messageOf, problem, WardenError } from "../errors.ts";
import { log } from "../log.ts";
import { platform } from "../platform/mod.ts";
import type { AppendOnlyFile } from "../platform/types.ts";
import type { OutputLog } from "../doors/spawn.ts";

/** The report directories' parent, under the jobs directory. */
export const REPORTS_DIR = "reports";
/** A log is cut here: the end of a flood says less than its start, and a resource is read whole. */
export const MAX_LOG_BYTES = 1024 * 1024;
/** result.json is read back whole for a resource; a larger one is refused rather than read. */
const MAX_RESULT_BYTES = 64 * 1024 * 1024;
/** The file names of logs: what `logFileName` makes of a check's name. */
export const LOG_FILE = /^[a-z0-9][a-z0-9._-]{0,126}\.log$/;
export const RESULT_FILE = "result.json";
/** A report directory's name: its job's id. */
const JOB_DIR = /^job_[0-9a-f]{32}$/;

/** A file of a report, as the resources list names it. */
export interface ReportFile {
  /** `result.json` or `logs/<name>.log`. */
  readonly file: string;
  readonly size: number;
}

/** The report of one job while it runs: the logs its programs write to. */
export interface JobReport {
  /** The log named `name` (a check's name): one file per name for the life of the job, opened on first use. */
  log(name: string): OutputLog;
}

/** Where jobs' reports are kept; behind an interface, as the job store is. */
export interface JobReports {
  /** Makes job `id`'s directory; a WardenError naming it when it cannot (then no job may start). */
  open(id: string): Promise<JobReport>;
  /** Closes the job's logs and writes its `result.json`, if it still has a directory. */
  finish(id: string, job: Record<string, unknown>): Promise<void>;
  /** Removes the job's directory and everything in it. */
  remove(id: string): Promise<void>;
  /** The files of job `id`'s report: result.json first, then the logs by name; none when it has no directory. */
  files(id: string): Promise<ReportFile[]>;
  /** The bytes of `file` (as `files` names it) of job `id`'s report; a WardenError for anything else. */
  read(id: string, file: string): Promise<Uint8Array>;
  /**
   * Removes the directories of jobs no store knows (`known` are the ones that do) last changed before `before` (ms since
   * the epoch): a process killed between making a job's directory and recording the job leaves one.
   */
  sweep(known: ReadonlySet<string>, before: number): Promise<void>;
}

/** `typescript/tsc:packages/web` → `typescript-tsc-packages-web.log`: a plain file name, whatever the check's name. */
export function logFileName(name: string): string {
  const plain = name.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[^a-z0-9]+/, "").slice(0, 120);
  return `${plain.replace(/-+$/, "") || "log"}.log`;
}

/** The report directories under `jobsDir`/reports, one per job. */
export class FileJobReports implements JobReports {
  readonly #dir: string;
  /** The reports of this process's jobs that have not finished, by id. */
  readonly #open = new Map<string, FileJobReport>();
  /** Each job's writes and removal in the order they were asked for: the last one asked is what stays. */
  readonly #pending = new Map<string, Promise<void>>();

  constructor(jobsDir: string) {
    this.#dir = path.join(jobsDir, REPORTS_DIR);
  }

  /** Job `id`'s directory. */
  dirOf(id: string): string {
    return path.join(this.#dir, id);
  }

  async open(id: string): Promise<JobReport> {
    const dir = this.dirOf(id);
    try {
      await platform().fs.mkdir(path.join(dir, "logs"));
    } catch (error) {
      throw new WardenError(
        "config_invalid",
        problem(
          `The job report directory ${dir} cannot be made`,
          `${messageOf(error).split("\n")[0]}; give --jobs-dir a directory warden can write`,
        ),
      );
    }
    const report = new FileJobReport(dir);
    this.#open.set(id, report);
    return report;
  }

  finish(id: string, job: Record<string, unknown>): Promise<void> {
    this.#open.get(id)?.close();
    this.#open.delete(id);
    const text = JSON.stringify(job, null, 2) + "\n";
    return this.#inTurn(id, async () => {
      // A job whose directory is gone (pruned meanwhile, or from before reports) gets none.
      if (!platform().fs.lstatSync(this.dirOf(id))?.isDirectory) return;
      try {
        await platform().fs.writeFileAtomic(path.join(this.dirOf(id), RESULT_FILE), text);
      } catch (error) {
        // The job's answer is in the store all the same; only its resource is missing.
        log("warn", "job_report_unwritten", { job: id, error: messageOf(error) });
      }
    });
  }

  remove(id: string): Promise<void> {
    this.#open.get(id)?.close();
    this.#open.delete(id);
    return this.#inTurn(id, async () => {
      try {
        await platform().fs.removeTree(this.dirOf(id));
      } catch (error) {
        log("warn", "job_report_left", { job: id, error: messageOf(error) });
      }
    });
  }

  async sweep(known: ReadonlySet<string>, before: number): Promise<void> {
    let entries;
    try {
      entries = await platform().fs.readDir(this.#dir);
    } catch {
      return; // No reports yet.
    }
    for (const entry of entries) {
      if (entry.kind !== "directory" || !JOB_DIR.test(entry.name) || known.has(entry.name)) continue;
      // A fresh one may be another process's start, between its directory and its record.
      const changed = platform().fs.lstatSync(this.dirOf(entry.name))?.mtimeMs ?? Infinity;
      if (changed < before) await this.remove(entry.name);
    }
  }

  #inTurn(id: string, work: () => Promise<void>): Promise<void> {
    const done = (this.#pending.get(id) ?? Promise.resolve()).then(work);
    this.#pending.set(id, done);
    return done.finally(() => {
      if (this.#pending.get(id) === done) this.#pending.delete(id);
    });
  }

  async files(id: string): Promise<ReportFile[]> {
    const dir = this.dirOf(id);
    const found: ReportFile[] = [];
    const fs = platform().fs;
    // Only regular files in real directories, looked at without following links: a symlink planted here names nothing.
    if (!fs.lstatSync(this.#dir)?.isDirectory || !fs.lstatSync(dir)?.isDirectory) return found;
    const result = fs.lstatSync(path.join(dir, RESULT_FILE));
    if (result?.isFile) found.push({ file: RESULT_FILE, size: result.size });
    if (!fs.lstatSync(path.join(dir, "logs"))?.isDirectory) return found;
    let entries;
    try {
      entries = await fs.readDir(path.join(dir, "logs"));
    } catch {
      return found;
    }
    for (const name of entries.filter((e) => e.kind === "file" && LOG_FILE.test(e.name)).map((e) => e.name).sort()) {
      const stat = fs.lstatSync(path.join(dir, "logs", name));
      if (stat?.isFile) found.push({ file: `logs/${name}`, size: stat.size });
    }
    return found;
  }

  async read(id: string, file: string): Promise<Uint8Array> {
    if (file !== RESULT_FILE && !(file.startsWith("logs/") && LOG_FILE.test(file.slice(5)))) {
      throw new WardenError(
        "not_found",
        problem(`No report file ${file}`, "a report holds result.json and logs/<name>.log"),
      );
    }
    const dir = this.dirOf(id);
    const fs = platform().fs;
    // Every directory on the way is a directory, not a link (the file itself is opened without following one).
    for (const part of [this.#dir, dir, ...(file.startsWith("logs/") ? [path.join(dir, "logs")] : [])]) {
      const stat = fs.lstatSync(part);
      if (stat === null) throw missing(id, file);
      if (!stat.isDirectory) {
        throw notWritten(id, file, `${part} is ${stat.isSymlink ? "a symlink" : "not a directory"}`);
      }
    }
    let read;
    try {
      read = await fs.readRegularFile(path.join(dir, file), MAX_RESULT_BYTES);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") throw missing(id, file);
      throw new WardenError(
        "tool_failed",
        problem(`Report file ${file} of job ${id} cannot be read`, messageOf(error).split("\n")[0]),
      );
    }
    if (read.kind === "ok") return read.bytes;
    if (read.kind === "too_large") {
      throw new WardenError(
        "too_large",
        problem(`Report file ${file} of job ${id} is too large`, `${read.size} bytes, at most ${MAX_RESULT_BYTES}`),
      );
    }
    throw notWritten(id, file, read.kind === "symlink" ? "it is a symlink" : `it is ${read.what}`);
  }
}

function missing(id: string, file: string): WardenError {
  return new WardenError(
    "not_found",
    problem(
      `Job ${id} has no ${file}`,
      file === RESULT_FILE ? "it has not finished, or its report was not written" : "no program wrote that log",
      "resources/list names the files each report has",
    ),
  );
}

function notWritten(id: string, file: string, why: string): WardenError {
  return new WardenError(
    "path_refused",
    problem(
      `Report file ${file} of job ${id} refused`,
      `${why}, not a file warden wrote`,
      "warden serves only the regular files it wrote in a report directory",
    ),
  );
}

/** One job's report while it runs: its logs, open for appending, by name. */
class FileJobReport implements JobReport {
  readonly #dir: string;
  readonly #logs = new Map<string, FileLog>();
  #closed = false;

  constructor(dir: string) {
    this.#dir = dir;
  }

  log(name: string): OutputLog {
    const known = this.#logs.get(name);
    if (known) return known;
    const taken = new Set([...this.#logs.values()].map((l) => l.file));
    let file = logFileName(name);
    for (let n = 2; taken.has(file); n++) file = logFileName(`${name}-${n}`);
    const opened = new FileLog(path.join(this.#dir, "logs", file), file, this.#closed);
    this.#logs.set(name, opened);
    return opened;
  }

  close(): void {
    this.#closed = true;
    for (const opened of this.#logs.values()) opened.close();
  }
}

/**
 * A log file: what each program wrote, between a line that says what ran and one that says how it ended, stdout and
 * stderr interleaved as they came. Written synchronously chunk by chunk: nothing is held but a decoder's few bytes
 * and, per stream, an end that may be the start of the root's host path. That path is shown as the result shows it
 * (`<root>/src/a.ts` as `src/a.ts`): nothing of the host's layout reaches a client through a log.
 */
class FileLog implements OutputLog {
  readonly file: string;
  readonly #path: string;
  #out: AppendOnlyFile | null = null;
  #written = 0;
  #cut = 0;
  #closed: boolean;
  #failed = false;
  #decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  /** The root's host path with its final `/`, and the path alone (not followed by more of a name). */
  #root: { dir: string; bare: RegExp } | null = null;
  /** Per stream, text not written yet because it may be the start of the root's path. */
  #held = { stdout: "", stderr: "" };

  constructor(file: string, name: string, closed: boolean) {
    this.#path = file;
    this.file = name;
    this.#closed = closed;
  }

  begin(argv: readonly string[], rootPath: string): void {
    this.#decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const bare = rootPath.replace(/\/+$/, "");
    this.#root = bare ? { dir: `${bare}/`, bare: new RegExp(`${escaped(bare)}(?![\\w.-])`, "g") } : null;
    this.#held = { stdout: "", stderr: "" };
    this.#append(`$ ${argv.map(quoted).join(" ")}\n`, true);
  }

  write(stream: "stdout" | "stderr", chunk: Uint8Array): void {
    if (this.#closed || this.#failed) return;
    const room = MAX_LOG_BYTES - this.#written;
    if (room <= 0) {
      this.#cut += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#cut += chunk.length - part.length;
    // Decoded as a stream per stream: a character split between two chunks stays whole.
    const text = this.#decoders[stream].decode(part, { stream: part === chunk });
    this.#append(this.#shown(stream, text, false), false, part.length);
  }

  end(how: string): void {
    const rest = this.#shown("stdout", this.#decoders.stdout.decode(), true) +
      this.#shown("stderr", this.#decoders.stderr.decode(), true);
    if (rest) this.#append(rest, true);
    if (this.#cut > 0) {
      this.#append(
        `\n[warden: log truncated: it is kept to its first ${MAX_LOG_BYTES} bytes of output; ${this.#cut} more bytes were not written]\n`,
        true,
      );
      this.#cut = 0;
    }
    this.#append(`\n[warden: ${how}]\n`, true);
  }

  close(): void {
    this.#closed = true;
    try {
      this.#out?.close();
    } catch {
      // Closed once already, or the disk went away: nothing more is written either way.
    }
    this.#out = null;
  }

  /** `text` with the root's host path hidden; unless `final`, an end that may begin that path is held back. */
  #shown(stream: "stdout" | "stderr", text: string, final: boolean): string {
    if (!this.#root) return text;
    const { bare, dir } = this.#root;
    let buffer = (this.#held[stream] + text).replaceAll(dir, "");
    let held = "";
    if (!final) {
      for (let i = Math.max(0, buffer.length - dir.length + 1); i < buffer.length; i++) {
        if (dir.startsWith(buffer.slice(i))) {
          held = buffer.slice(i);
          buffer = buffer.slice(0, i);
          break;
        }
      }
    }
    this.#held[stream] = held;
    return buffer.replace(bare, ".");
  }

  /** `framing`: warden's own lines, which do not count against the cap. */
  #append(text: string, framing: boolean, bytes = 0): void {
    if (this.#closed || this.#failed || text === "") {
      if (!framing) this.#written += bytes;
      return;
    }
    try {
      this.#out ??= platform().fs.createAppendOnly(this.#path);
      this.#out.append(text);
      if (!framing) this.#written += bytes;
    } catch (error) {
      // A full disk loses the log, never the run: the result is the answer, the log its evidence.
      this.#failed = true;
      log("warn", "job_log_unwritten", { file: this.#path, error: messageOf(error) });
    }
  }
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function quoted(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
