// The output formats of program checks, read into findings: SARIF 2.1.0,
// eslint's `--format json`, `deno lint --json`, tsc's diagnostics
// (`--pretty false`), and pass/fail (the exit code alone). The names follow
// trunk's `output` field (sarif, regex, pass_fail...); a format that does not
// parse is an error for the check, never an empty list of findings.
import { problem, WardenError } from "../../../core/errors.ts";
import type { Finding, Severity } from "./types.ts";

export const OUTPUT_FORMATS = ["sarif", "eslint-json", "deno-lint-json", "tsc", "pass-fail"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Turns a path or `file:` URI a program printed into a root-relative path, or null when it is outside the root. */
export type PathMapper = (printed: string) => string | null;

/** Reads `text` in `format` as findings of `check`; throws `tool_failed` when it is not that format. */
export function parseOutput(format: OutputFormat, text: string, check: string, toRoot: PathMapper): Finding[] {
  switch (format) {
    case "sarif":
      return parseSarif(text, check, toRoot);
    case "eslint-json":
      return parseEslintJson(text, check, toRoot);
    case "deno-lint-json":
      return parseDenoLintJson(text, check, toRoot);
    case "tsc":
      return parseTsc(text, check, toRoot);
    case "pass-fail":
      return [];
  }
}

function unparsable(check: string, format: string, why: string): WardenError {
  return new WardenError("tool_failed", problem(`Output of ${check} is not ${format}`, why));
}

function parseJson(text: string, check: string, format: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw unparsable(check, format, (error as Error).message);
  }
}

function finding(
  check: string,
  toRoot: PathMapper,
  file: string | null,
  fields: Omit<Finding, "check" | "file">,
): Finding {
  const relative = file === null ? null : toRoot(file);
  // A path outside the root is not shown (results never show host paths); the message says where it was.
  const message = file !== null && relative === null
    ? `${fields.message} (in a file outside the root)`
    : fields.message;
  return { check, file: relative, ...fields, message };
}

const SARIF_LEVELS: Record<string, Severity> = { error: "high", warning: "medium", note: "low", none: "info" };

/**
 * GitHub's `security-severity` convention (a CVSS-like score on the rule) when present, else the result's `level`,
 * else its rule's default level, else SARIF's default, `warning`.
 */
function sarifSeverity(level: unknown, securitySeverity: unknown): Severity {
  const score = typeof securitySeverity === "string" ? Number(securitySeverity) : securitySeverity;
  if (typeof score === "number" && Number.isFinite(score) && score > 0) {
    return score >= 9 ? "critical" : score >= 7 ? "high" : score >= 4 ? "medium" : "low";
  }
  return SARIF_LEVELS[typeof level === "string" ? level : "warning"] ?? "medium";
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;
const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** SARIF 2.1.0: every result of every run, located by its first physical location. */
export function parseSarif(text: string, check: string, toRoot: PathMapper): Finding[] {
  const log = parseJson(text, check, "SARIF");
  if (!isObject(log) || !Array.isArray(log.runs)) throw unparsable(check, "SARIF", "it has no runs array");
  const out: Finding[] = [];
  for (const run of log.runs) {
    if (!isObject(run)) throw unparsable(check, "SARIF", "a run is not an object");
    const driver = isObject(run.tool) && isObject(run.tool.driver) ? run.tool.driver : {};
    const rules = Array.isArray(driver.rules) ? driver.rules.filter(isObject) : [];
    for (const result of Array.isArray(run.results) ? run.results : []) {
      if (!isObject(result)) throw unparsable(check, "SARIF", "a result is not an object");
      const rule = rules.find((r) => r.id === result.ruleId) ??
        (typeof result.ruleIndex === "number" ? rules[result.ruleIndex] : undefined);
      const level = result.level ??
        (isObject(rule?.defaultConfiguration) ? rule.defaultConfiguration.level : undefined);
      const security = isObject(rule?.properties) ? rule.properties["security-severity"] : undefined;
      const physical = Array.isArray(result.locations) && isObject(result.locations[0]) &&
          isObject(result.locations[0].physicalLocation)
        ? result.locations[0].physicalLocation
        : {};
      const uri = isObject(physical.artifactLocation) && typeof physical.artifactLocation.uri === "string"
        ? physical.artifactLocation.uri
        : null;
      const region = isObject(physical.region) ? physical.region : {};
      const message = isObject(result.message) && typeof result.message.text === "string"
        ? result.message.text
        : String(result.ruleId ?? "finding");
      out.push(finding(check, toRoot, uri, {
        line: num(region.startLine),
        column: num(region.startColumn),
        severity: sarifSeverity(level, security),
        rule: typeof result.ruleId === "string" ? result.ruleId : typeof rule?.id === "string" ? rule.id : null,
        message,
      }));
    }
  }
  return out;
}

/** eslint `--format json`: one entry per file, `severity` 2 an error (high), 1 a warning (medium). */
export function parseEslintJson(text: string, check: string, toRoot: PathMapper): Finding[] {
  const files = parseJson(text, check, "eslint JSON");
  if (!Array.isArray(files)) throw unparsable(check, "eslint JSON", "it is not an array of files");
  const out: Finding[] = [];
  for (const file of files) {
    if (!isObject(file) || typeof file.filePath !== "string" || !Array.isArray(file.messages)) {
      throw unparsable(check, "eslint JSON", "an entry has no filePath and messages");
    }
    for (const message of file.messages) {
      if (!isObject(message)) continue;
      // "File ignored because of a matching ignore pattern": eslint was handed a file its config leaves out.
      if (message.ruleId === null && message.fatal !== true && message.severity === 1) continue;
      out.push(finding(check, toRoot, file.filePath, {
        line: num(message.line),
        column: num(message.column),
        severity: message.severity === 2 || message.fatal === true ? "high" : "medium",
        rule: typeof message.ruleId === "string" ? message.ruleId : null,
        message: String(message.message ?? ""),
      }));
    }
  }
  return out;
}

/** `deno lint --json`: diagnostics (0-based columns) and files that did not parse, all errors. */
export function parseDenoLintJson(text: string, check: string, toRoot: PathMapper): Finding[] {
  const report = parseJson(text, check, "deno lint JSON");
  if (!isObject(report) || !Array.isArray(report.diagnostics)) {
    throw unparsable(check, "deno lint JSON", "it has no diagnostics array");
  }
  const out: Finding[] = [];
  for (const d of report.diagnostics) {
    if (!isObject(d) || typeof d.filename !== "string") continue;
    const start = isObject(d.range) && isObject(d.range.start) ? d.range.start : {};
    const column = num(start.col);
    out.push(finding(check, toRoot, d.filename, {
      line: num(start.line),
      column: column === null ? null : column + 1,
      severity: "high",
      rule: typeof d.code === "string" ? d.code : null,
      message: typeof d.hint === "string" ? `${d.message}: ${d.hint}` : String(d.message ?? ""),
    }));
  }
  for (const e of Array.isArray(report.errors) ? report.errors : []) {
    if (!isObject(e) || typeof e.file_path !== "string") continue;
    const message = String(e.message ?? "");
    const at = /:(\d+):(\d+)\s*$/.exec(message);
    out.push(finding(check, toRoot, e.file_path, {
      line: at ? Number(at[1]) : null,
      column: at ? Number(at[2]) : null,
      severity: "high",
      rule: null,
      message: message.split("\n")[0],
    }));
  }
  return out;
}

const TSC_LINE = /^(.+?)\((\d+),(\d+)\): (error|warning|message|suggestion) (TS\d+): (.*)$/;
const TSC_GLOBAL = /^(error|warning|message|suggestion) (TS\d+): (.*)$/;
const TSC_SEVERITY: Record<string, Severity> = {
  error: "high",
  warning: "medium",
  message: "info",
  suggestion: "info",
};

/**
 * tsc with `--pretty false`: `file(line,col): error TS2322: message`, or `error TS18003: message` for the project;
 * indented lines continue the message above (its chain). A line that is neither is not tsc's: the output is refused.
 */
export function parseTsc(text: string, check: string, toRoot: PathMapper): Finding[] {
  const out: Finding[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const located = TSC_LINE.exec(line);
    const global = located ? null : TSC_GLOBAL.exec(line);
    if (located) {
      out.push(finding(check, toRoot, located[1], {
        line: Number(located[2]),
        column: Number(located[3]),
        severity: TSC_SEVERITY[located[4]],
        rule: located[5],
        message: located[6],
      }));
    } else if (global) {
      out.push({
        check,
        file: null,
        line: null,
        column: null,
        severity: TSC_SEVERITY[global[1]],
        rule: global[2],
        message: global[3],
      });
    } else if (/^\s/.test(line) && out.length > 0) {
      const last = out[out.length - 1];
      out[out.length - 1] = { ...last, message: `${last.message} ${line.trim()}` };
    } else {
      throw unparsable(check, "tsc diagnostics", `unexpected line ${JSON.stringify(line.slice(0, 120))}`);
    }
  }
  return out;
}
