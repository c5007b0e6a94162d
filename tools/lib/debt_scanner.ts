// Finds technical-debt markers (TODO, FIXME, HACK, XXX, STUB) in source text.
// Markers count only inside comments for languages whose comment syntax is
// known (so `const TODO_URL` or "TODO" in a string is not debt), in prose
// files line by line, and STUB also matches code that admits it is
// unimplemented. Within that text a tag counts only where people write tags
// (see isTagPlace), so a tag that commented-out code or a sentence mentions
// (`// const badData = 'XXX';`) is not debt.

/** The markers looked for unless the caller names others. */
export const DEFAULT_TAGS: readonly string[] = Object.freeze(["TODO", "FIXME", "HACK", "XXX", "STUB"]);

/** One marker found in a file. */
export interface DebtFinding {
  /** 1-based line and column of the marker. */
  readonly line: number;
  readonly column: number;
  /** The tag as configured (upper case for the defaults), whatever case matched. */
  readonly tag: string;
  /** The marker and the rest of its comment on that line, trimmed. */
  readonly text: string;
}

interface CommentSyntax {
  readonly line: readonly string[];
  readonly block: readonly (readonly [string, string])[];
  readonly quotes: string;
}

const C_LIKE: CommentSyntax = { line: ["//"], block: [["/*", "*/"]], quotes: `"'\`` };
const HASH: CommentSyntax = { line: ["#"], block: [], quotes: `"'` };
const DASH: CommentSyntax = { line: ["--"], block: [["--[[", "]]"], ["{-", "-}"]], quotes: `"'` };
const MARKUP: CommentSyntax = { line: [], block: [["<!--", "-->"]], quotes: "" };
const COMPONENT: CommentSyntax = { line: ["//"], block: [["/*", "*/"], ["<!--", "-->"]], quotes: `"'\`` };
/** Prose: every line is text a marker may stand in. */
const PROSE = "prose" as const;

const BY_EXTENSION: Record<string, CommentSyntax | typeof PROSE> = {};
for (
  const ext
    of "ts tsx mts cts js jsx mjs cjs java c h cc cpp hpp cxx cs go rs swift kt kts scala dart php css scss less groovy json jsonc json5 proto zig"
      .split(" ")
) {
  BY_EXTENSION[ext] = C_LIKE;
}
for (
  const ext
    of "py pyi rb sh bash zsh fish yaml yml toml r pl pm ps1 cmake nix ex exs tf hcl conf ini cfg properties mk gitignore dockerignore env"
      .split(" ")
) {
  BY_EXTENSION[ext] = HASH;
}
for (const ext of "sql lua hs elm".split(" ")) BY_EXTENSION[ext] = DASH;
for (const ext of "html htm xml svg xhtml".split(" ")) BY_EXTENSION[ext] = MARKUP;
for (const ext of "vue svelte astro".split(" ")) BY_EXTENSION[ext] = COMPONENT;
for (const ext of "md markdown mdx txt rst adoc org".split(" ")) BY_EXTENSION[ext] = PROSE;
const BY_NAME: Record<string, CommentSyntax> = {
  Dockerfile: HASH,
  Makefile: HASH,
  makefile: HASH,
  Gemfile: HASH,
  Rakefile: HASH,
};

function syntaxOf(file: string): CommentSyntax | typeof PROSE | undefined {
  const base = file.slice(file.lastIndexOf("/") + 1);
  if (BY_NAME[base]) return BY_NAME[base];
  const dot = base.lastIndexOf(".");
  return dot === -1 ? undefined : BY_EXTENSION[base.slice(dot + 1).toLowerCase()];
}

/** Whether `file` is a kind the scanner understands (known comments or prose). */
export function isScannable(file: string): boolean {
  return syntaxOf(file) !== undefined;
}

/** Code that says it is a stub, in the languages warden's users write most. */
const STUB_CODE =
  /\b(?:throw\s+new\s+Error\(\s*["'`](?:not\s+(?:yet\s+)?implemented|unimplemented|stub)\b|raise\s+NotImplementedError\b|NotImplementedException\b|unimplemented!\s*\(|todo!\s*\()/i;

/**
 * What may stand before a tag that opens a comment's text: the comment opener
 * and its decoration (`//`, `#`, `--`, ` * `, `/// `, `//!`), and in prose a
 * list bullet, number or checkbox, or a quote mark.
 */
const TEXT_START = /^(?:[\s/#*!+>-]|\d+[.)]\s|\[[ xX]\]\s)*$/;

/**
 * Whether a tag found in comment text stands where people write tags: at the
 * start of the comment's text, followed by anything but a word character (as
 * eslint's no-warning-comments with `location: "start"`, pylint's fixme and
 * golangci's godox read it), or anywhere in tag syntax, `TODO:` or
 * `FIXME(bob)` (checkstyle's TodoComment). A tag right after a quote is a
 * string in commented-out code (`// const s = 'XXX';`). A tag mid-comment
 * followed by a word is not counted: on real trees that phrase is mostly a
 * mention ("finds TODO comments", "STUB markers"), not a marker.
 */
function isTagPlace(before: string, after: string): boolean {
  if (/['"`]$/.test(before)) return false;
  return TEXT_START.test(before) || after.startsWith(":") || after.startsWith("(");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Comment text on one line, as [start, end) spans, carrying block state across lines. */
function commentSpans(
  line: string,
  syntax: CommentSyntax,
  state: { block: readonly [string, string] | null },
): [number, number][] {
  const spans: [number, number][] = [];
  let i = 0;
  let quote = "";
  while (i < line.length) {
    if (state.block) {
      const close = line.indexOf(state.block[1], i);
      const end = close === -1 ? line.length : close;
      spans.push([i, end]);
      if (close === -1) return spans;
      i = close + state.block[1].length;
      state.block = null;
      continue;
    }
    const ch = line[i];
    if (quote) {
      if (ch === "\\") i += 2;
      else {
        if (ch === quote) quote = "";
        i++;
      }
      continue;
    }
    if (syntax.quotes.includes(ch)) {
      quote = ch;
      i++;
      continue;
    }
    // Block openers first: `--[[` must win over the `--` line comment.
    const opener = syntax.block.find(([open]) => line.startsWith(open, i));
    if (opener) {
      state.block = opener;
      i += opener[0].length;
      continue;
    }
    if (syntax.line.some((start) => line.startsWith(start, i))) {
      spans.push([i, line.length]);
      return spans;
    }
    i++;
  }
  return spans;
}

/** A scanner for a fixed set of tags; build once, use for every file. */
export interface DebtScanner {
  scan(file: string, text: string): DebtFinding[];
}

/**
 * Makes a scanner for `tags` (default: TODO, FIXME, HACK, XXX, STUB).
 * Tags match as whole words where a tag is written (see isTagPlace);
 * `caseSensitive` (default true) decides whether `todo` counts as `TODO`.
 */
export function createDebtScanner(options: { tags?: readonly string[]; caseSensitive?: boolean } = {}): DebtScanner {
  const tags = [...new Set(options.tags ?? DEFAULT_TAGS)];
  const caseSensitive = options.caseSensitive ?? true;
  const flags = caseSensitive ? "g" : "gi";
  // Longest first so that an alternation never stops at a shorter tag.
  const ordered = [...tags].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(`(?<![\\w$])(${ordered.map(escapeRegExp).join("|")})(?![\\w$])`, flags);
  const canonical = new Map(tags.map((tag) => [caseSensitive ? tag : tag.toLowerCase(), tag]));
  const stubTag = tags.find((tag) => tag.toUpperCase() === "STUB");

  return {
    scan(file, text) {
      const syntax = syntaxOf(file);
      if (syntax === undefined) return [];
      const findings: DebtFinding[] = [];
      const state: { block: readonly [string, string] | null } = { block: null };
      const lines = text.split("\n");
      for (let n = 0; n < lines.length; n++) {
        let line = lines[n];
        if (line.endsWith("\r")) line = line.slice(0, -1);
        const spans = syntax === PROSE ? [[0, line.length] as [number, number]] : commentSpans(line, syntax, state);
        let stubbed = false;
        for (const [start, end] of spans) {
          const segment = line.slice(start, end);
          pattern.lastIndex = 0;
          for (let m = pattern.exec(segment); m !== null; m = pattern.exec(segment)) {
            if (!isTagPlace(segment.slice(0, m.index), segment.slice(m.index + m[1].length))) continue;
            const tag = canonical.get(caseSensitive ? m[1] : m[1].toLowerCase()) ?? m[1];
            const rest = segment.slice(m.index).replace(/\s*(?:\*\/|-->|\]\]|-\})\s*$/, "").trim();
            findings.push({
              line: n + 1,
              column: start + m.index + 1,
              tag,
              text: rest.length > 200 ? rest.slice(0, 197) + "..." : rest,
            });
            if (tag === stubTag) stubbed = true;
          }
        }
        if (stubTag && !stubbed && syntax !== PROSE) {
          const m = STUB_CODE.exec(line);
          if (m && !spans.some(([s, e]) => m.index >= s && m.index < e)) {
            findings.push({
              line: n + 1,
              column: m.index + 1,
              tag: stubTag,
              text: line.slice(m.index).trim().slice(0, 200),
            });
          }
        }
      }
      return findings;
    },
  };
}

/** True when the bytes look binary: a NUL in the first 8 KiB. */
export function looksBinary(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.length, 8192);
  for (let i = 0; i < end; i++) if (bytes[i] === 0) return true;
  return false;
}
