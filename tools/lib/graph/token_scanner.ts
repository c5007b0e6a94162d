// A scanner for the tokens of a TypeScript module (no JSX), faster than
// TypeScript's own on the texts an outline reads (scripts/bench/README.md):
// it makes no string for a token nobody asks the value of, and looks a word
// up among the keywords only when a NameFilter lets it through. It gives the same tokens as TypeScript's scanner (kinds, positions,
// line breaks before, values), which tests hold on every module of this
// repository and of the code fixtures and on random fragments; on what it
// does not handle the same way (a character outside ASCII in code, a
// backslash outside a literal, a number with a leading zero), and wherever
// TypeScript's scanner reports an error, it reports one too, and the caller
// parses the whole text.
import type { ts as TS } from "ts-morph";
import type { TsApi } from "../typescript/typescript.ts";
import { NameFilter } from "./name_filter.ts";

/** What an outline asks of a scanner: TypeScript's Scanner in part, with the same meaning. */
export interface TokenScanner {
  scan(): TS.SyntaxKind;
  getTokenStart(): number;
  getTokenEnd(): number;
  getTokenValue(): string;
  hasPrecedingLineBreak(): boolean;
  lookAhead<T>(callback: () => T): T;
  /** On a `/` or `/=`: reads a regular expression literal from it instead. */
  reScanSlashToken(): TS.SyntaxKind;
  /** On the `}` that closes a template literal's `${`: reads the template on from it (no escape is an error). */
  reScanTemplateToken(isTaggedTemplate: boolean): TS.SyntaxKind;
}

/** Character classes of ASCII: a letter, `$` or `_` starts a word; digits go on one. */
const WORD_START = 1;
const WORD_PART = 2;
const CHARS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z$_]/.test(ch)) CHARS[c] = WORD_START | WORD_PART;
  else if (/[0-9]/.test(ch)) CHARS[c] = WORD_PART;
}

type ScannerClass = new (text: string, onError: () => void) => TokenScanner;

let scannerFor: { ts: TsApi; Scanner: ScannerClass } | undefined;

/** TokenScanner over `text`; `onError` is called where TypeScript's scanner would report one, or where this one gives up. */
export function createTokenScanner(ts: TsApi, text: string, onError: () => void): TokenScanner {
  if (scannerFor?.ts !== ts) scannerFor = { ts, Scanner: defineScanner(ts) };
  return new scannerFor.Scanner(text, onError);
}

/**
 * The scanner class for one TypeScript. Its token kinds are constants of this closure rather than properties of
 * SyntaxKind: a property read in a branch not yet run when V8 optimizes the scanner throws the optimized code away
 * when it first runs (as it did over zod's sources).
 */
function defineScanner(ts: TsApi): ScannerClass {
  const SK = ts.SyntaxKind;
  const {
    AmpersandAmpersandEqualsToken,
    AmpersandAmpersandToken,
    AmpersandEqualsToken,
    AmpersandToken,
    AsteriskAsteriskEqualsToken,
    AsteriskAsteriskToken,
    AsteriskEqualsToken,
    AsteriskToken,
    AtToken,
    BarBarEqualsToken,
    BarBarToken,
    BarEqualsToken,
    BarToken,
    BigIntLiteral,
    CaretEqualsToken,
    CaretToken,
    CloseBraceToken,
    CloseBracketToken,
    CloseParenToken,
    ColonToken,
    CommaToken,
    DotDotDotToken,
    DotToken,
    EndOfFileToken,
    EqualsEqualsEqualsToken,
    EqualsEqualsToken,
    EqualsGreaterThanToken,
    EqualsToken,
    ExclamationEqualsEqualsToken,
    ExclamationEqualsToken,
    ExclamationToken,
    GreaterThanToken,
    Identifier,
    LessThanEqualsToken,
    LessThanLessThanEqualsToken,
    LessThanLessThanToken,
    LessThanToken,
    MinusEqualsToken,
    MinusMinusToken,
    MinusToken,
    NoSubstitutionTemplateLiteral,
    NumericLiteral,
    OpenBraceToken,
    OpenBracketToken,
    OpenParenToken,
    PercentEqualsToken,
    PercentToken,
    PlusEqualsToken,
    PlusPlusToken,
    PlusToken,
    PrivateIdentifier,
    QuestionDotToken,
    QuestionQuestionEqualsToken,
    QuestionQuestionToken,
    QuestionToken,
    RegularExpressionLiteral,
    SemicolonToken,
    SlashEqualsToken,
    SlashToken,
    StringLiteral,
    TemplateHead,
    TemplateMiddle,
    TemplateTail,
    TildeToken,
    Unknown,
  } = SK;
  const keywords = new Map<string, TS.SyntaxKind>();
  for (let kind = SK.FirstKeyword; kind <= SK.LastKeyword; kind++) {
    const text = ts.tokenToString(kind);
    if (text !== undefined) keywords.set(text, kind);
  }
  // Kept for as long as this TypeScript is: never released.
  const maybeKeyword = new NameFilter(keywords.keys());

  return class AsciiScanner implements TokenScanner {
    readonly #text: string;
    readonly #onError: () => void;
    #pos = 0;
    #start = 0;
    #token: TS.SyntaxKind = Unknown;
    #lineBreak = false;

    constructor(text: string, onError: () => void) {
      this.#text = text;
      this.#onError = onError;
      // `#!/usr/bin/env node` on the first line is trivia.
      if (text.startsWith("#!")) this.#pos = lineEnd(text, 2);
    }

    getTokenStart(): number {
      return this.#start;
    }

    getTokenEnd(): number {
      return this.#pos;
    }

    hasPrecedingLineBreak(): boolean {
      return this.#lineBreak;
    }

    getTokenValue(): string {
      const token = this.#token;
      const text = this.#text;
      if (token === StringLiteral || token === NoSubstitutionTemplateLiteral) {
        const inner = text.slice(this.#start + 1, this.#pos - 1);
        // Escapes and line ends (a template's `\r\n` reads as `\n`) are TypeScript's to cook.
        if (inner.includes("\\") || inner.includes("\r")) return this.#cooked();
        return inner;
      }
      return text.slice(this.#start, this.#pos);
    }

    #cooked(): string {
      const literal = this.#text.slice(this.#start, this.#pos);
      const scanner = ts.createScanner(
        ts.ScriptTarget.Latest,
        true,
        ts.LanguageVariant.Standard,
        literal,
      );
      scanner.scan();
      return scanner.getTokenValue();
    }

    lookAhead<T>(callback: () => T): T {
      const pos = this.#pos;
      const start = this.#start;
      const token = this.#token;
      const lineBreak = this.#lineBreak;
      const result = callback();
      this.#pos = pos;
      this.#start = start;
      this.#token = token;
      this.#lineBreak = lineBreak;
      return result;
    }

    #fail(): TS.SyntaxKind {
      this.#onError();
      this.#pos = this.#text.length;
      return this.#token = Unknown;
    }

    scan(): TS.SyntaxKind {
      const text = this.#text;
      const end = text.length;
      let pos = this.#pos;
      this.#lineBreak = false;
      for (;;) {
        this.#start = pos;
        if (pos >= end) {
          this.#pos = pos;
          return this.#token = EndOfFileToken;
        }
        const ch = text.charCodeAt(pos);
        const next = text.charCodeAt(pos + 1); // NaN past the end: equal to nothing
        let token: TS.SyntaxKind;
        let length = 1;
        switch (ch) {
          case 10: // \n
          case 13: // \r
            this.#lineBreak = true;
            pos++;
            continue;
          case 9: // \t
          case 11: // \v
          case 12: // \f
          case 32: // space
            pos++;
            continue;
          case 47: // /
            if (next === 47) {
              pos = lineEnd(text, pos + 2);
              continue;
            }
            if (next === 42) {
              const close = text.indexOf("*/", pos + 2);
              if (close < 0) return this.#fail();
              if (!this.#lineBreak && hasLineBreak(text, pos + 2, close)) this.#lineBreak = true;
              pos = close + 2;
              continue;
            }
            if (next === 61) {
              token = SlashEqualsToken;
              length = 2;
            } else token = SlashToken;
            break;
          case 34: // "
          case 39: // '
            return this.#token = this.#string(ch);
          case 96: // `
            return this.#token = this.#template(true);
          case 33: // !
            if (next === 61) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? ExclamationEqualsEqualsToken : ExclamationEqualsToken;
              length = three ? 3 : 2;
            } else token = ExclamationToken;
            break;
          case 37: // %
            if (next === 61) {
              token = PercentEqualsToken;
              length = 2;
            } else token = PercentToken;
            break;
          case 38: // &
            if (next === 38) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? AmpersandAmpersandEqualsToken : AmpersandAmpersandToken;
              length = three ? 3 : 2;
            } else if (next === 61) {
              token = AmpersandEqualsToken;
              length = 2;
            } else token = AmpersandToken;
            break;
          case 40:
            token = OpenParenToken;
            break;
          case 41:
            token = CloseParenToken;
            break;
          case 42: // *
            if (next === 61) {
              token = AsteriskEqualsToken;
              length = 2;
            } else if (next === 42) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? AsteriskAsteriskEqualsToken : AsteriskAsteriskToken;
              length = three ? 3 : 2;
            } else token = AsteriskToken;
            break;
          case 43: // +
            if (next === 43) {
              token = PlusPlusToken;
              length = 2;
            } else if (next === 61) {
              token = PlusEqualsToken;
              length = 2;
            } else token = PlusToken;
            break;
          case 44:
            token = CommaToken;
            break;
          case 45: // -
            if (next === 45) {
              token = MinusMinusToken;
              length = 2;
            } else if (next === 61) {
              token = MinusEqualsToken;
              length = 2;
            } else token = MinusToken;
            break;
          case 46: // .
            if (isDigit(next)) return this.#token = this.#number();
            if (next === 46 && text.charCodeAt(pos + 2) === 46) {
              token = DotDotDotToken;
              length = 3;
            } else token = DotToken;
            break;
          case 58:
            token = ColonToken;
            break;
          case 59:
            token = SemicolonToken;
            break;
          case 60: // <
            if (isConflictMarker(text, pos, ch)) return this.#fail();
            if (next === 60) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? LessThanLessThanEqualsToken : LessThanLessThanToken;
              length = three ? 3 : 2;
            } else if (next === 61) {
              token = LessThanEqualsToken;
              length = 2;
            } else token = LessThanToken;
            break;
          case 61: // =
            if (isConflictMarker(text, pos, ch)) return this.#fail();
            if (next === 61) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? EqualsEqualsEqualsToken : EqualsEqualsToken;
              length = three ? 3 : 2;
            } else if (next === 62) {
              token = EqualsGreaterThanToken;
              length = 2;
            } else token = EqualsToken;
            break;
          case 62: // > (one at a time: the parser joins `>>`, `>=`…)
            if (isConflictMarker(text, pos, ch)) return this.#fail();
            token = GreaterThanToken;
            break;
          case 63: // ?
            if (next === 46 && !isDigit(text.charCodeAt(pos + 2))) {
              token = QuestionDotToken;
              length = 2;
            } else if (next === 63) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? QuestionQuestionEqualsToken : QuestionQuestionToken;
              length = three ? 3 : 2;
            } else token = QuestionToken;
            break;
          case 64:
            token = AtToken;
            break;
          case 91:
            token = OpenBracketToken;
            break;
          case 93:
            token = CloseBracketToken;
            break;
          case 94: // ^
            if (next === 61) {
              token = CaretEqualsToken;
              length = 2;
            } else token = CaretToken;
            break;
          case 123:
            token = OpenBraceToken;
            break;
          case 124: // |
            if (isConflictMarker(text, pos, ch)) return this.#fail();
            if (next === 124) {
              const three = text.charCodeAt(pos + 2) === 61;
              token = three ? BarBarEqualsToken : BarBarToken;
              length = three ? 3 : 2;
            } else if (next === 61) {
              token = BarEqualsToken;
              length = 2;
            } else token = BarToken;
            break;
          case 125:
            token = CloseBraceToken;
            break;
          case 126:
            token = TildeToken;
            break;
          case 35: // #name
            if (next < 128 && (CHARS[next] & WORD_START) !== 0) {
              this.#pos = wordEnd(text, pos + 2);
              if (this.#pos < 0) return this.#fail();
              return this.#token = PrivateIdentifier;
            }
            return this.#fail();
          default:
            if (ch < 128) {
              if ((CHARS[ch] & WORD_START) !== 0) return this.#token = this.#word();
              if (isDigit(ch)) return this.#token = this.#number();
              return this.#fail();
            }
            if (ch === 0x2028 || ch === 0x2029) {
              this.#lineBreak = true;
              pos++;
              continue;
            }
            if (isSpaceOutsideAscii(ch)) {
              pos++;
              continue;
            }
            return this.#fail();
        }
        this.#pos = pos + length;
        return this.#token = token;
      }
    }

    /** The word from #start: a keyword or an identifier. */
    #word(): TS.SyntaxKind {
      const text = this.#text;
      const start = this.#start;
      const end = wordEnd(text, start + 1);
      if (end < 0) return this.#fail();
      this.#pos = end;
      const length = end - start;
      const first = text.charCodeAt(start);
      // Like TypeScript's scanner: only words of 2 to 12 lowercase-led characters are looked up.
      if (length >= 2 && length <= 12 && first >= 97 && first <= 122 && maybeKeyword.mayBe(text, start, end)) {
        const keyword = keywords.get(text.slice(start, end));
        if (keyword !== undefined) return keyword;
      }
      return Identifier;
    }

    /** The number from #start: decimal, with a fraction and an exponent, or hexadecimal, binary, octal; a bigint. */
    #number(): TS.SyntaxKind {
      const text = this.#text;
      let pos = this.#start;
      let integer = true;
      const first = text.charCodeAt(pos);
      const second = text.charCodeAt(pos + 1);
      const base = second | 32;
      if (first === 48 && (base === 120 || base === 98 || base === 111)) {
        // 0x…, 0b…, 0o…
        const digit = base === 120 ? isHexDigit : base === 98 ? isBinaryDigit : isOctalDigit;
        pos = digitsEnd(text, pos + 2, digit);
        if (pos === this.#start + 2 || pos < 0) return this.#fail();
      } else {
        if (first === 48 && (isDigit(second) || second === 95)) return this.#fail(); // legacy octal, a leading zero
        pos = digitsEnd(text, pos);
        if (pos >= 0 && text.charCodeAt(pos) === 46) {
          integer = false;
          // `1.` and `1.5`, not `1._5`
          pos = text.charCodeAt(pos + 1) === 95 ? -1 : digitsEnd(text, pos + 1);
        }
        if (pos >= 0 && (text.charCodeAt(pos) | 32) === 101) {
          integer = false;
          pos++;
          const sign = text.charCodeAt(pos);
          if (sign === 43 || sign === 45) pos++;
          const digits = pos;
          pos = digitsEnd(text, pos);
          if (pos === digits) return this.#fail();
        }
        if (pos < 0) return this.#fail();
      }
      let token: TS.SyntaxKind = NumericLiteral;
      if (text.charCodeAt(pos) === 110) {
        if (!integer) return this.#fail();
        pos++;
        token = BigIntLiteral;
      }
      // A word right after a number is an error in TypeScript too.
      const after = text.charCodeAt(pos);
      if (after >= 128 || (CHARS[after] & WORD_PART) !== 0 || after === 92) return this.#fail();
      this.#pos = pos;
      return token;
    }

    /** The string literal from #start. */
    #string(quote: number): TS.SyntaxKind {
      const text = this.#text;
      const end = text.length;
      let pos = this.#start + 1;
      for (;;) {
        if (pos >= end) return this.#fail();
        const ch = text.charCodeAt(pos);
        if (ch === quote) break;
        if (ch === 92) {
          pos = escapeEnd(text, pos);
          if (pos < 0) return this.#fail();
          continue;
        }
        if (ch === 10 || ch === 13) return this.#fail();
        pos++;
      }
      this.#pos = pos + 1;
      return StringLiteral;
    }

    /** A template literal's text from #start (its backtick, or the `}` of a `${`) to its next `${` or its end. */
    #template(startedWithBacktick: boolean): TS.SyntaxKind {
      const text = this.#text;
      const end = text.length;
      let pos = this.#start + 1;
      for (;;) {
        if (pos >= end) return this.#fail();
        const ch = text.charCodeAt(pos);
        if (ch === 96) {
          this.#pos = pos + 1;
          return startedWithBacktick ? NoSubstitutionTemplateLiteral : TemplateTail;
        }
        if (ch === 36 && text.charCodeAt(pos + 1) === 123) {
          this.#pos = pos + 2;
          return startedWithBacktick ? TemplateHead : TemplateMiddle;
        }
        pos += ch === 92 ? 2 : 1;
      }
    }

    reScanSlashToken(): TS.SyntaxKind {
      if (this.#token !== SlashToken && this.#token !== SlashEqualsToken) return this.#token;
      const text = this.#text;
      const end = text.length;
      let pos = this.#start + 1;
      let inClass = false;
      for (;;) {
        if (pos >= end) return this.#fail();
        const ch = text.charCodeAt(pos);
        if (ch === 10 || ch === 13 || ch === 0x2028 || ch === 0x2029) return this.#fail();
        if (ch === 92) {
          pos += 2;
          continue;
        }
        if (ch === 47 && !inClass) break;
        if (ch === 91) inClass = true;
        else if (ch === 93) inClass = false;
        pos++;
      }
      pos = wordEnd(text, pos + 1);
      if (pos < 0) return this.#fail();
      this.#pos = pos;
      return this.#token = RegularExpressionLiteral;
    }

    reScanTemplateToken(_isTaggedTemplate: boolean): TS.SyntaxKind {
      this.#pos = this.#start;
      return this.#token = this.#template(false);
    }
  };
}

/**
 * Where the escape sequence at `pos` (its backslash) in a string literal ends; -1 where TypeScript reports it: `\x` and
 * `\u` without their hexadecimal digits, a code point past U+10FFFF, an octal escape, `\8` and `\9`. An escaped `\r\n`
 * continues the line.
 */
function escapeEnd(text: string, pos: number): number {
  const ch = text.charCodeAt(pos + 1);
  if (ch === 120) return isHexDigit(text.charCodeAt(pos + 2)) && isHexDigit(text.charCodeAt(pos + 3)) ? pos + 4 : -1;
  if (ch === 117) {
    if (text.charCodeAt(pos + 2) === 123) {
      let end = pos + 3;
      while (isHexDigit(text.charCodeAt(end))) end++;
      const digits = text.slice(pos + 3, end);
      if (digits === "" || text.charCodeAt(end) !== 125 || parseInt(digits, 16) > 0x10ffff) return -1;
      return end + 1;
    }
    for (let i = 2; i < 6; i++) if (!isHexDigit(text.charCodeAt(pos + i))) return -1;
    return pos + 6;
  }
  if (ch >= 49 && ch <= 57) return -1; // \1 to \9
  if (ch === 48 && isDigit(text.charCodeAt(pos + 2))) return -1; // \0 before a digit
  return ch === 13 && text.charCodeAt(pos + 2) === 10 ? pos + 3 : pos + 2;
}

function isDigit(ch: number): boolean {
  return ch >= 48 && ch <= 57;
}

function isHexDigit(ch: number): boolean {
  return isDigit(ch) || ((ch | 32) >= 97 && (ch | 32) <= 102);
}

function isBinaryDigit(ch: number): boolean {
  return ch === 48 || ch === 49;
}

function isOctalDigit(ch: number): boolean {
  return ch >= 48 && ch <= 55;
}

/** Where the run of digits at `pos` ends, each `_` in it between two digits; -1 at a `_` anywhere else. */
function digitsEnd(text: string, pos: number, digit: (ch: number) => boolean = isDigit): number {
  let afterDigit = false;
  for (;; pos++) {
    const ch = text.charCodeAt(pos);
    if (digit(ch)) afterDigit = true;
    else if (ch !== 95) return pos;
    else if (!afterDigit || !digit(text.charCodeAt(pos + 1))) return -1;
    else afterDigit = false;
  }
}

/** Where the word whose characters go on at `pos` ends; -1 at a backslash or a letter outside ASCII in it. */
function wordEnd(text: string, pos: number): number {
  for (;;) {
    const ch = text.charCodeAt(pos);
    if (ch < 128) {
      if ((CHARS[ch] & WORD_PART) === 0) return ch === 92 ? -1 : pos;
    } else if (ch !== ch) return pos; // NaN: the end of the text
    else return isSpaceOutsideAscii(ch) || ch === 0x2028 || ch === 0x2029 ? pos : -1;
    pos++;
  }
}

/** Where the line that goes on at `pos` ends (its line break not included). */
function lineEnd(text: string, pos: number): number {
  const end = text.length;
  for (; pos < end; pos++) {
    const ch = text.charCodeAt(pos);
    if (ch === 10 || ch === 13 || ch === 0x2028 || ch === 0x2029) return pos;
  }
  return end;
}

function hasLineBreak(text: string, from: number, to: number): boolean {
  for (let pos = from; pos < to; pos++) {
    const ch = text.charCodeAt(pos);
    if (ch === 10 || ch === 13 || ch === 0x2028 || ch === 0x2029) return true;
  }
  return false;
}

/** What TypeScript reads as white space outside ASCII (isWhiteSpaceSingleLine). */
function isSpaceOutsideAscii(ch: number): boolean {
  return ch === 0xa0 || ch === 0x85 || ch === 0x1680 || (ch >= 0x2000 && ch <= 0x200b) || ch === 0x202f ||
    ch === 0x205f || ch === 0x3000 || ch === 0xfeff;
}

/** A merge conflict marker (seven of `<`, `=`, `>` or `|` at a line's start): TypeScript skips it, this scanner gives up. */
function isConflictMarker(text: string, pos: number, ch: number): boolean {
  if (pos > 0) {
    const before = text.charCodeAt(pos - 1);
    if (before !== 10 && before !== 13) return false;
  }
  for (let i = 1; i < 7; i++) if (text.charCodeAt(pos + i) !== ch) return false;
  return true;
}
