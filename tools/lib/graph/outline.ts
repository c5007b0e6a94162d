// Reading a module from its tokens where a syntax tree would cost more than
// it tells: the outline of its top-level statements, which is all a module
// summary reads (from its tokens, top_level.ts, or parsed when that reader
// is not sure), and how names are used in it. Tokens come from
// token_scanner.ts, which reads them as TypeScript's scanner does; what a
// scanner needs the parser for (whether a `/` starts a regular expression,
// where a template literal resumes) is decided here from the tokens before,
// and a scan that is not sure of itself says so: callers then parse the whole
// text.
import type { ts as TS } from "ts-morph";
import type { TsApi } from "../typescript/typescript.ts";
import { NameFilter } from "./name_filter.ts";
import { createTokenScanner, type TokenScanner } from "./token_scanner.ts";

/** A module's text with what the summary does not need left out, and the way back to positions in the text. */
export interface Outline {
  /**
   * The outline's text, made on first use (with `at`): the reader of top-level statements (top_level.ts) needs only
   * tokens. Text, tokens and `at` are to be asked for before the next outline is read (they throw after).
   */
  readonly text: string;
  readonly tokens: OutlineTokens;
  /** The position in the module's text of a position in the outline. */
  readonly at: (position: number) => number;
  /** The uses of the names asked to watch, read on the way (see tokenUsage). */
  readonly uses: readonly Use[];
  /** The module's `import("…")` calls, wherever they are (the outline has dropped most of them). */
  readonly imports: readonly DynamicImport[];
}

/**
 * An `import("…")` as a module summary records it: where its `import` is, the specifier and where its argument lies,
 * the names it binds (`const m = await import("x")`: the whole module as `m`, declared at `declared`; `import("x").a`:
 * `a`; a statement of its own: none).
 */
export interface DynamicImport {
  readonly at: number;
  readonly specifier: string;
  readonly argument: readonly [number, number];
  readonly bindings: readonly { readonly imported: string; readonly local: string; readonly typeOnly: false }[];
  readonly declared?: number;
}

/** The tokens of an outline, by index: their kind, where they are in the module's text, and what precedes them. */
export interface OutlineTokens {
  readonly kinds: Uint16Array;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  /** Whether the token is preceded in the outline by a line break (as it was in the text). */
  readonly lineBreaks: Uint8Array;
}

/** One occurrence of a name that is a use: at a position of the text, reading a member or, without one, escaping. */
export interface Use {
  readonly at: number;
  readonly name: string;
  readonly member?: string;
}

/** How a name is used: the members read from it, and whether it is used any other way. */
export interface Usage {
  members: Set<string>;
  escapes: boolean;
}

/**
 * The module's tokens without comments and without what only a module's behaviour needs: the inside of blocks
 * (function and class bodies, object and type literals, the callbacks of a test file…), of parameter lists and call
 * arguments, of array literals and tuple types. What is left is the outline of its top-level statements, which is
 * all a summary reads, at a fraction of the parse. Line breaks between tokens are kept (they end statements), and
 * tokens that touch still touch. Kept whole: the blocks after a top-level `import`, `export`, `type`, `,`, `const`,
 * `let` or `var` (import and export lists, destructured declarations), brackets after `const`, `let`, `var` and `,`,
 * and any parenthesized group that is not arguments or parameters, which may be an expression or a type.
 * undefined when the scan is not sure of itself (brackets that do not balance, a scanner error), and when the module
 * calls `require(…)`, assigns `module.exports` or calls `import(…)` in a shape it does not read (their specifiers and
 * bindings may sit in what an outline drops; the words in a comment or a string do not count). The caller reads the
 * outline's statements from its tokens (top_level.ts) or parses it, and drops one the parser rejects. For TypeScript
 * without JSX only: JSX text needs the parser to be scanned. A syntax error inside what is
 * dropped (a function body whose brackets balance but which does not parse) goes unseen: the whole tree would report
 * it, while the module's imports and exports read the same either way.
 */
export function outlineOf(ts: TsApi, text: string, watch?: ReadonlySet<string>): Outline | undefined {
  // Most words are not watched: a word's value is made and looked up only when the filter lets it through.
  const watched = watch && watch.size > 0 ? new NameFilter(watch) : undefined;
  const outline = readOutline(ts, text, watch, watched);
  watched?.release();
  return outline;
}

function readOutline(
  ts: TsApi,
  text: string,
  watch: ReadonlySet<string> | undefined,
  watched: NameFilter | undefined,
): Outline | undefined {
  const SK = ts.SyntaxKind;
  const tables = scanTables(ts);
  const tokens = new TokenReader(ts, tables, text);
  const scanner = tokens.scanner;
  const uses: Use[] = [];
  const imports: DynamicImport[] = [];
  let count = 0; // tokens kept in `buffers`, which the outline read before this one can no longer use
  const readAt = ++buffers.outlines;
  let lastEnd = 0; // where the last token kept ends in the text
  // For each parenthesis open around the scanner (and kept), the tokens kept up to it, to go back to when its contents
  // turn out to be arguments or parameters.
  const saved: { tokens: number; before: TS.SyntaxKind }[] = [];
  /** The depth of the bracket whose contents are being dropped; -1 when emitting. */
  let dropping = -1;
  /** The depth of the kept list or pattern being emitted (`import {…}`, `const [a, [b]] =`); nothing in it drops. */
  let keeping = Infinity;
  for (let token = tokens.next(); token !== SK.EndOfFileToken; token = tokens.next()) {
    if (
      watched && token === SK.Identifier && watched.mayBe(text, scanner.getTokenStart(), scanner.getTokenEnd()) &&
      watch!.has(scanner.getTokenValue())
    ) {
      const use = useAt(ts, tables, tokens);
      if (use) uses.push(use);
    }
    if (
      (token === SK.ImportKeyword || token === SK.RequireKeyword || token === SK.ModuleKeyword) &&
      callsOrExportsAt(ts, scanner, token)
    ) {
      const call = token === SK.ImportKeyword ? dynamicImportAt(ts, tables, text, tokens) : undefined;
      if (call === undefined) return undefined;
      imports.push(call);
    }
    const before = tokens.before;
    const depth = tokens.open.length;
    let dropFrom = -1;
    if (dropping >= 0) {
      if (depth >= dropping) continue;
      dropping = -1; // the closing bracket of what was dropped, emitted
    }
    if (depth < keeping && keeping !== Infinity && (token === SK.CloseBraceToken || token === SK.CloseBracketToken)) {
      keeping = Infinity;
    }
    if (keeping !== Infinity) {
      if (token === SK.CloseParenToken) saved.pop(); // inside a kept list or pattern, everything stays
    } else if (token === SK.OpenBraceToken) {
      if (depth === 1 && tables.keepsBlock.has(before)) keeping = depth;
      else dropFrom = depth;
    } else if (token === SK.OpenBracketToken) {
      if (depth === 1 && tables.keepsBracket.has(before)) keeping = depth;
      // An array literal or a tuple type; after what ends an expression (`x[`, `x?.[`, `x![`), an element access.
      else if (
        tables.regexMayFollow.has(before) && before !== SK.QuestionDotToken && before !== SK.ExclamationToken
      ) dropFrom = depth;
    } else if (token === SK.CloseParenToken) {
      const state = saved.pop()!;
      const next = scanner.lookAhead(() => scanner.scan());
      if (
        tables.callsBefore.has(state.before) ||
        next === SK.EqualsGreaterThanToken && !tables.groupsAfter.has(state.before) ||
        (next === SK.ColonToken || next === SK.OpenBraceToken) && tables.signatureBefore.has(state.before)
      ) {
        count = state.tokens;
        lastEnd = buffers.ends[count - 1]; // the `(`
      }
    }
    const start = scanner.getTokenStart();
    const end = scanner.getTokenEnd();
    const lineBreak = start !== lastEnd && scanner.hasPrecedingLineBreak();
    if (count === buffers.kinds.length) growBuffers();
    buffers.kinds[count] = token;
    buffers.starts[count] = start;
    buffers.ends[count] = end;
    buffers.lineBreaks[count++] = lineBreak ? 1 : 0;
    lastEnd = end;
    if (token === SK.OpenParenToken) saved.push({ tokens: count, before });
    if (dropFrom >= 0) dropping = dropFrom;
  }
  if (!tokens.complete) return undefined;
  const kept = {
    kinds: buffers.kinds.subarray(0, count),
    starts: buffers.starts.subarray(0, count),
    ends: buffers.ends.subarray(0, count),
    lineBreaks: buffers.lineBreaks.subarray(0, count),
  };
  const current = () => {
    if (buffers.outlines !== readAt) {
      throw new Error("an outline's tokens were asked for after the next outline was read");
    }
    return kept;
  };
  let layout: Layout | undefined;
  return {
    uses,
    imports,
    get text() {
      return (layout ??= layoutOf(text, current())).text;
    },
    get tokens() {
      return current();
    },
    at: (position) => (layout ??= layoutOf(text, current())).at(position),
  };
}

/**
 * Where readOutline puts the tokens it keeps, kept from module to module (a module's own arrays, grown token by token,
 * made garbage for every token, and copies of the right length still raised peak RSS: scripts/bench/README.md). An
 * outline's tokens are views of these: good until the next outline is read, which `outlines` counts.
 */
const buffers = {
  outlines: 0,
  kinds: new Uint16Array(0),
  starts: new Int32Array(0),
  ends: new Int32Array(0),
  lineBreaks: new Uint8Array(0),
};

function growBuffers(): void {
  const size = Math.max(4096, buffers.kinds.length * 2);
  const grown = {
    kinds: new Uint16Array(size),
    starts: new Int32Array(size),
    ends: new Int32Array(size),
    lineBreaks: new Uint8Array(size),
  };
  grown.kinds.set(buffers.kinds);
  grown.starts.set(buffers.starts);
  grown.ends.set(buffers.ends);
  grown.lineBreaks.set(buffers.lineBreaks);
  Object.assign(buffers, grown);
}

/** An outline's text, and the way from its positions to the module's. */
interface Layout {
  readonly text: string;
  readonly at: (position: number) => number;
}

/**
 * An outline's layout, made from its tokens only when the outline is parsed: its text has the tokens, each apart from
 * the one before by a line break or a space where the module's text had a gap.
 */
function layoutOf(text: string, { starts, ends, lineBreaks }: OutlineTokens): Layout {
  const parts: string[] = [];
  // Where the outline's offset from the text changes: outline position, and what to add there and after. A position
  // between two tokens is where the gap between them starts in the text, as for a statement's leading comments.
  const from: number[] = [0];
  const shift: number[] = [0];
  let length = 0;
  let lastEnd = 0;
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i];
    if (start !== lastEnd) {
      parts.push(lineBreaks[i] ? "\n" : " ");
      length++;
    }
    if (shift[shift.length - 1] !== start - length) {
      from.push(length);
      shift.push(start - length);
    }
    parts.push(text.slice(start, ends[i]));
    length += ends[i] - start;
    lastEnd = ends[i];
  }
  return { text: parts.join(""), at: (position) => position + shift[lastAtOrBelow(from, position)] };
}

/**
 * How each of `names` is used in the module, read from its tokens: the members read from it (`ns.a`, `ns?.a`,
 * `ns["a"]`, `ns.A` in a type), or an escape (passed on, spread, exported, indexed by a value…); undefined when not
 * used. Not uses: comments and strings, a member name (`x.ns`), a property or member being declared (`{ ns: 1 }`,
 * `ns?: T`), a declaration (`const ns`, `function ns`, `(ns) =>`), a rename (`export { a as ns }`), and tokens at the
 * positions `skip` says (import declarations). undefined for the whole answer when the scan is not sure of itself.
 * Names that are keywords (`number`, `assert`) are the caller's to avoid: the scanner cannot tell them from the type.
 * An outline made with these names watched has read the same uses already: see usageFrom.
 */
export function tokenUsage(
  ts: TsApi,
  text: string,
  names: ReadonlySet<string>,
  skip: (position: number) => boolean,
): Map<string, Usage | undefined> | undefined {
  const SK = ts.SyntaxKind;
  const tables = scanTables(ts);
  const tokens = new TokenReader(ts, tables, text);
  const scanner = tokens.scanner;
  const uses: Use[] = [];
  for (let token = tokens.next(); token !== SK.EndOfFileToken; token = tokens.next()) {
    if (token !== SK.Identifier || !names.has(scanner.getTokenValue())) continue;
    const use = useAt(ts, tables, tokens);
    if (use) uses.push(use);
  }
  return tokens.complete ? usageFrom(uses, names, skip) : undefined;
}

/** How each of `names` is used, from the uses read of them (all of them: see tokenUsage), but at positions skipped. */
export function usageFrom(
  uses: readonly Use[],
  names: ReadonlySet<string>,
  skip: (position: number) => boolean,
): Map<string, Usage | undefined> {
  const found = new Map<string, Usage | undefined>([...names].map((name) => [name, undefined]));
  for (const use of uses) {
    if (!names.has(use.name) || skip(use.at)) continue;
    let usage = found.get(use.name);
    if (!usage) found.set(use.name, usage = { members: new Set(), escapes: false });
    if (use.member !== undefined) usage.members.add(use.member);
    else usage.escapes = true;
  }
  return found;
}

/** The use the identifier the reader is on makes of its name, or undefined when it is not a use. */
function useAt(ts: TsApi, tables: ScanTables, tokens: TokenReader): Use | undefined {
  const SK = ts.SyntaxKind;
  const scanner = tokens.scanner;
  const before = tokens.before;
  if (tables.nameBefore.has(before)) return undefined;
  const name = scanner.getTokenValue();
  const at = scanner.getTokenStart();
  const lineStart = scanner.hasPrecedingLineBreak();
  const [next, member, afterParameters] = scanner.lookAhead((): [TS.SyntaxKind, string?, TS.SyntaxKind?] => {
    const next = scanner.scan();
    if (next === SK.DotToken || next === SK.QuestionDotToken) {
      const name = scanner.scan();
      return [next, name === SK.Identifier || isKeyword(ts, name) ? scanner.getTokenValue() : undefined];
    }
    if (next === SK.OpenBracketToken) {
      const index = scanner.scan();
      if (index !== SK.StringLiteral && index !== SK.NoSubstitutionTemplateLiteral) return [next, undefined];
      const value = scanner.getTokenValue();
      return [next, scanner.scan() === SK.CloseBracketToken ? value : undefined];
    }
    if (next === SK.QuestionToken) return [scanner.scan() === SK.ColonToken ? SK.ColonToken : next, undefined];
    if (next === SK.OpenParenToken && (lineStart || tables.memberBefore.has(before))) {
      // What follows the parentheses: `{` or `:` makes `ns(…)` a method being declared, not a call.
      for (let depth = 1; depth > 0;) {
        const token: TS.SyntaxKind = scanner.scan();
        if (token === SK.EndOfFileToken) return [next];
        if (token === SK.OpenParenToken) depth++;
        else if (token === SK.CloseParenToken) depth--;
      }
      return [next, undefined, scanner.scan()];
    }
    return [next, undefined];
  });
  // `{ ns: …`, `, ns: …`, `ns?: T` at the start of a member or statement: a key, a parameter, a label.
  if (next === SK.ColonToken && (lineStart || tables.keyBefore.has(before))) return undefined;
  if (next === SK.EqualsGreaterThanToken) return undefined; // `ns => …`: a parameter
  if (afterParameters === SK.OpenBraceToken || afterParameters === SK.ColonToken) return undefined; // a method
  if (before === SK.AsKeyword && member === undefined) return undefined; // `export { a as ns }`, `export * as ns`
  if (before === SK.TypeKeyword && (next === SK.LessThanToken || next === SK.EqualsToken)) return undefined;
  if (next === SK.EqualsToken && (lineStart || tables.memberBefore.has(before))) return undefined; // `static ns =`
  return member === undefined ? { at, name } : { at, name, member };
}

/**
 * The `import("…")` the reader is on, when it is one of the shapes read from tokens: `const m = await import("x")`
 * (`let`, `var`, `export`, without `await`), the same destructured on one line (`const { a, b: c } = …`),
 * `import("x").a…`, and `await import("x")` or `import("x")` as a statement of its own; undefined for any other (a
 * result assigned, passed on or parenthesized, a pattern over several lines, a computed specifier, an import type…),
 * which a syntax tree reads.
 */
function dynamicImportAt(
  ts: TsApi,
  tables: ScanTables,
  text: string,
  tokens: TokenReader,
): DynamicImport | undefined {
  const SK = ts.SyntaxKind;
  const scanner = tokens.scanner;
  const at = scanner.getTokenStart();
  const awaited = tokens.before === SK.AwaitKeyword;
  const before = awaited ? tokens.beforeBefore : tokens.before;
  const read = scanner.lookAhead(() => {
    if (scanner.scan() !== SK.OpenParenToken) return undefined;
    const open = scanner.getTokenEnd();
    if (scanner.scan() !== SK.StringLiteral) return undefined;
    const specifier = scanner.getTokenValue();
    const argument: [number, number] = [open, scanner.getTokenEnd()];
    if (scanner.scan() !== SK.CloseParenToken) return undefined;
    const after = scanner.scan();
    const lineBreak = scanner.hasPrecedingLineBreak();
    const member = after === SK.DotToken && scanner.scan() === SK.Identifier ? scanner.getTokenValue() : undefined;
    return { specifier, argument, after, lineBreak, member };
  });
  if (read === undefined) return undefined;
  const { specifier, argument, after, lineBreak, member } = read;
  const call = { at, specifier, argument };
  // What comes after ends the call's expression: the end of a statement or of a declaration, or a name on a new line.
  const ends = after === SK.SemicolonToken || after === SK.CloseBraceToken || after === SK.EndOfFileToken ||
    lineBreak && (after === SK.Identifier || after >= SK.FirstKeyword && after <= SK.LastKeyword) &&
      after !== SK.AsKeyword && after !== SK.SatisfiesKeyword && after !== SK.InKeyword &&
      after !== SK.InstanceOfKeyword;
  // A statement starts at the call (or its `await`) after `;`, `{`, `}`, or at the start of a line when what ends the
  // line before cannot go on with it.
  const lineStart = text.lastIndexOf("\n", at - 1) + 1;
  const head = text.slice(lineStart, at);
  const firstOnLine = awaited ? /^\s*await\s+$/.test(head) : /^\s*$/.test(head);
  const statementStart = before === SK.SemicolonToken || before === SK.OpenBraceToken ||
    before === SK.CloseBraceToken || before === SK.Unknown ||
    firstOnLine && !tables.regexMayFollow.has(before) && before !== SK.TemplateHead && before !== SK.TemplateMiddle;
  const memberRead = member === undefined ? undefined : [{ imported: member, local: "", typeOnly: false as const }];
  if (statementStart) {
    return memberRead ? { ...call, bindings: memberRead } : ends ? { ...call, bindings: [] } : undefined;
  }
  if (before !== SK.EqualsToken) return undefined;
  // `const m = …` is all that is before it on its line (which starts no comment or template that ends before the
  // call: either would leave `*/` or `${` on the line).
  const declaration = DECLARED_BEFORE.exec(head);
  const pattern = declaration === null ? DESTRUCTURED_BEFORE.exec(head) : null;
  if (pattern !== null && (ends || after === SK.CommaToken)) {
    // `const { a, b: c, "d-e": f } = await import("x")`: the names taken; with `...rest`, the whole module.
    const bindings: { imported: string; local: string; typeOnly: false }[] = [];
    for (const element of pattern[1].split(",")) {
      if (element.trim() === "" && bindings.length > 0) continue; // a trailing comma
      if (/^\s*\.\.\./.test(element)) return { ...call, bindings: [{ imported: "*", local: "", typeOnly: false }] };
      const taken = PATTERN_ELEMENT.exec(element);
      if (taken === null) return undefined;
      const key = taken[1] ?? taken[2] ?? taken[3];
      const local = taken[4] ?? key;
      if (isKeywordName(ts, local)) return undefined; // `{ default }` does not parse
      bindings.push({ imported: key, local, typeOnly: false });
    }
    return bindings.length > 0 ? { ...call, bindings } : undefined;
  }
  if (declaration === null || isKeywordName(ts, declaration[1])) return undefined;
  if (memberRead) return { ...call, bindings: memberRead };
  if (!ends && after !== SK.CommaToken) return undefined;
  const declared = lineStart + declaration.indices![1]![0];
  return { ...call, bindings: [{ imported: "*", local: declaration[1], typeOnly: false }], declared };
}

/** The same, destructured on one line: `const { a, b: c } = await `. */
const DESTRUCTURED_BEFORE = /^\s*(?:export\s+)?(?:const|let|var)\s*\{([^{}]*)\}\s*=\s*(?:await\s+)?$/;

/** One name of such a pattern: `a`, `a: b`, `"a-b": c` (defaults, nested patterns and comments are not read). */
const PATTERN_ELEMENT = /^\s*(?:([A-Za-z_$][\w$]*)|"([^"\\]*)"|'([^'\\]*)')\s*(?::\s*([A-Za-z_$][\w$]*))?\s*$/;

/** What may be before `import(` on its line when a declaration takes its result: `const m = await `. */
const DECLARED_BEFORE = /^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:await\s+)?$/d;

/** Whether the scanner is on `import(`, `require(` or `module.exports`. */
function callsOrExportsAt(ts: TsApi, scanner: TokenScanner, token: TS.SyntaxKind): boolean {
  const SK = ts.SyntaxKind;
  if (token === SK.ModuleKeyword) {
    return scanner.lookAhead(() =>
      scanner.scan() === SK.DotToken && scanner.scan() === SK.Identifier && scanner.getTokenValue() === "exports"
    );
  }
  return scanner.lookAhead(() => scanner.scan() === SK.OpenParenToken);
}

/** The index of the last of `sorted` (ascending, `sorted[0]` ≤ `value`) that is at most `value`. */
export function lastAtOrBelow(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (sorted[middle] <= value) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** Whether the scanner reads `name` as a keyword (`number`, `type`, `assert`…) rather than an identifier. */
export function isKeywordName(ts: TsApi, name: string): boolean {
  return isKeyword(ts, ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, name).scan());
}

function isKeyword(ts: TsApi, kind: TS.SyntaxKind): boolean {
  return kind >= ts.SyntaxKind.FirstKeyword && kind <= ts.SyntaxKind.LastKeyword;
}

/** A token as TokenReader reads it (see tokenStream). */
export interface ReadToken {
  readonly kind: TS.SyntaxKind;
  readonly start: number;
  readonly end: number;
  readonly lineBreakBefore: boolean;
  readonly value?: string;
}

/**
 * The tokens of `text` as outlines read them, with TokenScanner or, with `typescript`, TypeScript's own scanner; and
 * whether the text was read to its end. Tests hold the two equal.
 */
export function tokenStream(
  ts: TsApi,
  text: string,
  { typescript = false }: { readonly typescript?: boolean } = {},
): { tokens: ReadToken[]; complete: boolean } {
  const SK = ts.SyntaxKind;
  const tokens = new TokenReader(ts, scanTables(ts), text, typescript);
  const scanner = tokens.scanner;
  const out: ReadToken[] = [];
  for (let kind = tokens.next(); kind !== SK.EndOfFileToken; kind = tokens.next()) {
    const valued = kind === SK.Identifier || kind === SK.StringLiteral || kind === SK.NoSubstitutionTemplateLiteral ||
      kind === SK.PrivateIdentifier || isKeyword(ts, kind);
    out.push({
      kind,
      start: scanner.getTokenStart(),
      end: scanner.getTokenEnd(),
      lineBreakBefore: scanner.hasPrecedingLineBreak(),
      ...(valued ? { value: scanner.getTokenValue() } : {}),
    });
  }
  return { tokens: out, complete: tokens.complete };
}

/**
 * A scanner over a whole text (TokenScanner, or TypeScript's), with what TypeScript's parser would otherwise decide:
 * a `/` is a regular expression where no expression can end before it, a `}` resumes the template literal whose `${`
 * it closes. Keeps the brackets open, and whether they balanced and the scanner had no complaint.
 */
class TokenReader {
  readonly scanner: TokenScanner;
  /** The brackets open around the scanner: `{`, `(`, `[`, and TemplateHead for a template's `${`. */
  readonly open: TS.SyntaxKind[] = [];
  /** The token before the current one. */
  before: TS.SyntaxKind;
  #current: TS.SyntaxKind;
  #beforeBefore: TS.SyntaxKind;

  /** The token before `before`. */
  get beforeBefore(): TS.SyntaxKind {
    return this.#beforeBefore;
  }
  #failed = false;
  readonly #SK: typeof TS.SyntaxKind;
  readonly #tables: ScanTables;

  constructor(ts: TsApi, tables: ScanTables, text: string, typescript = false) {
    this.#SK = ts.SyntaxKind;
    this.#tables = tables;
    this.before = this.#current = this.#beforeBefore = ts.SyntaxKind.Unknown;
    const onError = () => (this.#failed = true);
    this.scanner = typescript
      ? ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text, onError)
      : createTokenScanner(ts, text, onError);
  }

  /** Whether the text was read to its end with balanced brackets and no scanner error. */
  get complete(): boolean {
    return !this.#failed && this.#current === this.#SK.EndOfFileToken && this.open.length === 0;
  }

  /** The next token; EndOfFileToken at the end, or as soon as the scan is lost. */
  next(): TS.SyntaxKind {
    const SK = this.#SK;
    const scanner = this.scanner;
    const tables = this.#tables;
    this.#beforeBefore = this.before;
    this.before = this.#current;
    let token = scanner.scan();
    // Most tokens need nothing: one look in a table rather than a comparison per case.
    switch (tables.action[token]) {
      case SLASH:
        // After `x!` (a non-null assertion, not a negation), a `/` divides.
        if (
          tables.regexMayFollow.has(this.before) &&
          !(this.before === SK.ExclamationToken && !tables.regexMayFollow.has(this.#beforeBefore))
        ) token = scanner.reScanSlashToken();
        break;
      case OPEN:
        this.open.push(token);
        break;
      case CLOSE:
        if (token === SK.CloseBraceToken && this.open[this.open.length - 1] === SK.TemplateHead) {
          // As a tagged template: escapes that do not cook (String.raw`\S`) are no error.
          token = scanner.reScanTemplateToken(true);
          if (token === SK.TemplateTail) this.open.pop();
          break;
        }
        if (this.open.pop() !== tables.openerOf[token]) this.#failed = true;
        break;
      case LOST:
        this.#failed = true;
    }
    if (this.#failed) {
      // Lost: end here, leaving `open` as it was so that `complete` says no.
      this.open.push(SK.Unknown);
      token = SK.EndOfFileToken;
    }
    this.#current = token;
    return token;
  }
}

/** What TokenReader does on a token (ScanTables.action). */
const SLASH = 1;
const OPEN = 2;
const CLOSE = 3;
const LOST = 4;

interface ScanTables {
  /** Tokens after which a `/` starts a regular expression rather than dividing. */
  readonly regexMayFollow: ReadonlySet<TS.SyntaxKind>;
  /** What TokenReader does on each kind of token: SLASH, OPEN, CLOSE, LOST, or 0 for nothing. */
  readonly action: Uint8Array;
  /** The opening token of each closing one. */
  readonly openerOf: Uint16Array;
  /** Tokens after which a top-level `{` opens a list of names to keep: imports, exports, destructured declarations. */
  readonly keepsBlock: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which a top-level `[` opens a destructured declaration. */
  readonly keepsBracket: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which a `(` opens arguments or parameters (a call, a named function), never an expression. */
  readonly callsBefore: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which a `(…)` followed by `:` or `{` was a parameter list (a return type, a body), not a type. */
  readonly signatureBefore: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which a `(…)` is a condition or a branch (`if (…) =>`, `? (…) =>`) even when `=>` follows. */
  readonly groupsAfter: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which a name is a member name, a declaration or a rename, not a use. */
  readonly nameBefore: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which `name:` declares a key or a parameter. */
  readonly keyBefore: ReadonlySet<TS.SyntaxKind>;
  /** Tokens after which `name(…) {` declares a method. */
  readonly memberBefore: ReadonlySet<TS.SyntaxKind>;
}

let tablesFor: { ts: TsApi; tables: ScanTables } | undefined;

function scanTables(ts: TsApi): ScanTables {
  if (tablesFor?.ts === ts) return tablesFor.tables;
  const SK = ts.SyntaxKind;
  const regexMayFollow = new Set<TS.SyntaxKind>([SK.Unknown]);
  // Punctuation, but for what ends an expression; keywords, only the reserved ones that take an operand. Contextual
  // keywords (`type`, `of`, `number`…) may be names, which end expressions. A `/` misread as division leaves a regular
  // expression's text to the scanner, whose brackets or quotes then rarely balance; misread as a regular expression,
  // a division is read up to the line's end, an error: either way the scan gives up and the whole text is parsed.
  const endsExpression = new Set([
    SK.CloseParenToken,
    SK.CloseBracketToken,
    SK.CloseBraceToken,
    SK.PlusPlusToken,
    SK.MinusMinusToken,
  ]);
  for (let kind = SK.FirstPunctuation; kind <= SK.LastPunctuation; kind++) {
    if (!endsExpression.has(kind)) regexMayFollow.add(kind);
  }
  for (
    const kind of [
      SK.ReturnKeyword,
      SK.TypeOfKeyword,
      SK.InstanceOfKeyword,
      SK.InKeyword,
      SK.NewKeyword,
      SK.DeleteKeyword,
      SK.VoidKeyword,
      SK.ThrowKeyword,
      SK.CaseKeyword,
      SK.DoKeyword,
      SK.ElseKeyword,
      SK.YieldKeyword,
      SK.AwaitKeyword,
    ]
  ) regexMayFollow.add(kind);
  const action = new Uint8Array(SK.Count);
  action[SK.SlashToken] = action[SK.SlashEqualsToken] = SLASH;
  action[SK.TemplateHead] =
    action[SK.OpenBraceToken] =
    action[SK.OpenBracketToken] =
    action[SK.OpenParenToken] =
      OPEN;
  action[SK.CloseBraceToken] = action[SK.CloseBracketToken] = action[SK.CloseParenToken] = CLOSE;
  action[SK.Unknown] = LOST;
  const openerOf = new Uint16Array(SK.Count);
  openerOf[SK.CloseBraceToken] = SK.OpenBraceToken;
  openerOf[SK.CloseBracketToken] = SK.OpenBracketToken;
  openerOf[SK.CloseParenToken] = SK.OpenParenToken;
  const modifiers = [
    SK.StaticKeyword,
    SK.PublicKeyword,
    SK.PrivateKeyword,
    SK.ProtectedKeyword,
    SK.OverrideKeyword,
    SK.AbstractKeyword,
    SK.ReadonlyKeyword,
  ];
  const tables: ScanTables = {
    regexMayFollow,
    action,
    openerOf,
    keepsBlock: new Set([
      SK.ImportKeyword,
      SK.ExportKeyword,
      SK.TypeKeyword,
      SK.CommaToken,
      SK.ConstKeyword,
      SK.LetKeyword,
      SK.VarKeyword,
    ]),
    keepsBracket: new Set([SK.CommaToken, SK.ConstKeyword, SK.LetKeyword, SK.VarKeyword]),
    // Not `>`: `f<T>(x)` is a call, `a >>> (b)` is not (the scanner gives `>` one at a time).
    callsBefore: new Set([SK.Identifier, SK.CloseParenToken, SK.CloseBracketToken, SK.SuperKeyword, SK.ThisKeyword]),
    signatureBefore: new Set([
      SK.Unknown,
      SK.EqualsToken,
      SK.CommaToken,
      SK.OpenParenToken,
      SK.GreaterThanToken,
      SK.AsyncKeyword,
      SK.FunctionKeyword,
    ]),
    groupsAfter: new Set([
      SK.IfKeyword,
      SK.ForKeyword,
      SK.WhileKeyword,
      SK.SwitchKeyword,
      SK.CatchKeyword,
      SK.WithKeyword,
      SK.QuestionToken,
    ]),
    nameBefore: new Set([
      SK.DotToken,
      SK.QuestionDotToken,
      SK.HashToken,
      SK.ConstKeyword,
      SK.LetKeyword,
      SK.VarKeyword,
      SK.FunctionKeyword,
      SK.ClassKeyword,
      SK.InterfaceKeyword,
      SK.EnumKeyword,
      SK.NamespaceKeyword,
      SK.ModuleKeyword,
      SK.GetKeyword,
      SK.SetKeyword,
      SK.BreakKeyword,
      SK.ContinueKeyword,
      // A modifier: a member being declared.
      ...modifiers,
      SK.DeclareKeyword,
      SK.AccessorKeyword,
    ]),
    keyBefore: new Set([SK.OpenBraceToken, SK.CommaToken, SK.SemicolonToken, SK.OpenParenToken, SK.DotDotDotToken]),
    memberBefore: new Set([
      SK.OpenBraceToken,
      SK.CloseBraceToken,
      SK.CommaToken,
      SK.SemicolonToken,
      SK.AsteriskToken,
      SK.AsyncKeyword,
      ...modifiers,
    ]),
  };
  tablesFor = { ts, tables };
  return tables;
}
