// hygiene/debt-markers: TODO, FIXME, HACK, XXX and STUB markers in the lines
// the change adds, found by tools/lib/debt_scanner.ts (comments told from
// strings, tags where people write them), so the debt a change brings in is
// named and the debt it leaves alone is not.
import { WardenError } from "../../../../core/errors.ts";
import { createDebtScanner, DEFAULT_TAGS, isScannable } from "../../debt_scanner.ts";
import type { BuiltinCheck, ChangedFile, Finding, Severity } from "../types.ts";
import { presentFiles } from "./change.ts";

const CHECK = "hygiene/debt-markers";

/**
 * A TODO is a plan and an XXX a note to look again: low. A FIXME says the code is wrong, a HACK that it is wrong on
 * purpose, a STUB (or `throw new Error("not implemented")`) that it does not do its job yet: shipping one ships a
 * known defect, so medium.
 */
export const DEFAULT_DEBT_SEVERITIES: Readonly<Record<string, Severity>> = Object.freeze({
  TODO: "low",
  XXX: "low",
  FIXME: "medium",
  HACK: "medium",
  STUB: "medium",
});

/** Options of hygiene/debt-markers. */
export interface DebtMarkersOptions {
  /** Markers looked for (default TODO, FIXME, HACK, XXX, STUB). */
  readonly tags?: readonly string[];
  /** Severity by tag; a tag not named here is low. */
  readonly severities?: Readonly<Record<string, Severity>>;
}

/** Larger files are scanned from their added lines alone (a block comment opened above is then not seen). */
const MAX_TEXT_BYTES = 2 * 1024 * 1024;

/**
 * The text to scan for `file`: the file as it is now when each added line reads the same there (the scanner then
 * sees block comments opened above an added line), otherwise (the change is staged and the work tree moved on, or the
 * file cannot be read) the added lines alone, each at its number.
 */
async function textOf(
  read: (path: string) => Promise<string>,
  file: ChangedFile,
): Promise<string> {
  let text: string | undefined;
  try {
    text = await read(file.path);
  } catch (error) {
    if (!(error instanceof WardenError)) throw error;
  }
  if (text !== undefined) {
    const lines = text.split("\n");
    const same = file.addedLines.every(({ line, text: added }) =>
      lines[line - 1] === added || lines[line - 1] === `${added}\r`
    );
    if (same) return text;
  }
  const last = file.addedLines.reduce((max, { line }) => Math.max(max, line), 0);
  const lines = new Array<string>(last).fill("");
  for (const { line, text: added } of file.addedLines) lines[line - 1] = added;
  return lines.join("\n");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The check, with its options. */
export function debtMarkersCheck(options: DebtMarkersOptions = {}): BuiltinCheck {
  const tags = options.tags ?? DEFAULT_TAGS;
  const scanner = createDebtScanner({ tags });
  // What every marker the scanner reports contains (a tag, or the words of stub code): an added line without any
  // cannot hold one, so a file whose added lines have none is neither read nor scanned.
  const candidate = new RegExp(
    `${tags.map(escapeRegExp).join("|")}${
      tags.some((tag) => tag.toUpperCase() === "STUB") ? "|implemented|NotImplemented|todo!" : ""
    }`,
    "i",
  );
  const severities = { ...DEFAULT_DEBT_SEVERITIES, ...options.severities };
  return {
    name: CHECK,
    description: `Debt markers (${
      tags.join(", ")
    }) in the lines the change adds, in comments and prose, not in strings or identifiers. Severity by tag: by default TODO and XXX low; FIXME, HACK and STUB (with code that throws a not-implemented error) medium.`,
    async run(scope, ctx) {
      const read = (path: string) => ctx.fs.readText(scope.root, path, { maxBytes: MAX_TEXT_BYTES });
      const findings: Finding[] = [];
      for (const file of presentFiles(scope)) {
        if (file.binary || !isScannable(file.path)) continue;
        if (!file.addedLines.some(({ text }) => candidate.test(text))) continue;
        const added = new Set(file.addedLines.map((a) => a.line));
        for (const marker of scanner.scan(file.path, await textOf(read, file))) {
          if (!added.has(marker.line)) continue;
          findings.push({
            check: CHECK,
            file: file.path,
            line: marker.line,
            column: marker.column,
            severity: severities[marker.tag] ?? "low",
            rule: marker.tag,
            message: `Added ${marker.tag} marker: ${marker.text}`,
          });
        }
      }
      return findings;
    },
  };
}
