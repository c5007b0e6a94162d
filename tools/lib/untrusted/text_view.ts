// What the detector's rules read instead of the raw text: the text as a reader
// (or a model) takes it in, with a map back to the original offsets, and the
// structure that decides whether a phrase is an instruction or a quotation of
// one: where clauses start, which spans are quoted, fenced or introduced as an
// example, which lie in HTML comments.

/** Regular expression source without doubled backslashes. */
const raw = String.raw;

/** A scanned text, normalised, with each normalised code unit's span in the original. */
export interface TextView {
  /** The normalised text the rules match: invisible characters gone, tag characters decoded, full-width folded. */
  readonly text: string;
  /** For each code unit of `text`, where its source starts in the original (UTF-16 offsets). */
  readonly from: Int32Array;
  /** For each code unit of `text`, where its source ends in the original. */
  readonly to: Int32Array;
  /** Clause starts, ascending: where an imperative can begin. */
  readonly starts: readonly ClauseStart[];
  /** Ranges of `text` that are reported speech by their layout: fenced code, the block after "Example:". */
  readonly reported: readonly (readonly [number, number])[];
  /** Ranges of `text` inside HTML comments (`<!-- … -->`), which a rendered page hides. */
  readonly comments: readonly (readonly [number, number])[];
}

/**
 * `line`: after a line's lead-in (indentation, comment markers, list and quote markers). `sentence`: after `.`, `!`
 * or `?`. `colon`: after `:` or `;` (`colon` is where it stands). `open`: after an opening quote, bracket, tag or
 * comment opener.
 */
export interface ClauseStart {
  readonly at: number;
  readonly kind: "line" | "sentence" | "colon" | "open";
  readonly colon: number;
}

// Characters a reader does not see: zero-width and joiner characters, bidirectional controls, the soft hyphen,
// variation selectors, fillers. An instruction spelled across them is the instruction without them.
const INVISIBLE_CLASS =
  raw`\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0`;
const INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`);
const SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\r]/;
// Cyrillic and Greek letters drawn like Latin ones, as spoofed text uses them.
const HOMOGLYPHS: Readonly<Record<string, string>> = {
  "\u0430": "a",
  "\u0435": "e",
  "\u043e": "o",
  "\u0440": "p",
  "\u0441": "c",
  "\u0443": "y",
  "\u0445": "x",
  "\u0455": "s",
  "\u0456": "i",
  "\u0458": "j",
  "\u0410": "A",
  "\u0415": "E",
  "\u041e": "O",
  "\u0420": "P",
  "\u0421": "C",
  "\u0422": "T",
  "\u0425": "X",
  "\u0406": "I",
  "\u03bf": "o",
  "\u039f": "O",
};

const HIDDEN = new RegExp(`[${INVISIBLE_CLASS}]|\\udb40[\\udc00-\\udc7f]`);

/** True when `text` holds a character `normalise` drops or decodes (what `hidden-text` reports). */
export function hasInvisible(text: string): boolean {
  return HIDDEN.test(text);
}

/**
 * The text as read: invisible characters dropped; Unicode tag characters (U+E0020–E007E, "ASCII smuggling")
 * decoded to the ASCII they encode, on a line of their own (a flag's tags spell its region, "gbeng"); full-width
 * and look-alike letters folded; other spaces made plain. A path's separators become line breaks and its `_` and `-`
 * spaces, so each component is read as a line.
 */
export function normalise(original: string, path: boolean): { text: string; from: Int32Array; to: Int32Array } {
  // At most three units out for two in (a lone tag character between its two line breaks).
  const codes = new Uint16Array(original.length * 2 + 2);
  const from = new Int32Array(codes.length);
  const to = new Int32Array(codes.length);
  let n = 0;
  const push = (code: number, start: number, end: number) => {
    codes[n] = code;
    from[n] = start;
    to[n++] = end;
  };
  let inTags = false;
  for (let i = 0; i < original.length;) {
    const unit = original.charCodeAt(i);
    if (unit < 0x80 && !inTags) {
      // ASCII, most of any text: only a path's separators and a carriage return change.
      const code = !path
        ? (unit === 13 ? 32 : unit)
        : unit === 47 || unit === 92
        ? 10
        : unit === 95 || unit === 45
        ? 32
        : unit;
      push(code, i, i + 1);
      i++;
      continue;
    }
    const cp = original.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    const isTag = cp >= 0xe0000 && cp <= 0xe007f;
    // A decoded run stands on a line of its own: it was never part of the visible sentence around it.
    const decoded = cp >= 0xe0020 && cp <= 0xe007e;
    if (inTags !== decoded) push(10, i, i);
    inTags = decoded;
    if (isTag) {
      if (decoded) push(cp - 0xe0000, i, i + width);
    } else if (cp >= 0xe0100 && cp <= 0xe01ef) {
      // Variation selectors supplement: invisible.
    } else if (width === 2) {
      push(unit, i, i + 2);
      push(original.charCodeAt(i + 1), i, i + 2);
    } else if (cp >= 0xff01 && cp <= 0xff5e) {
      push(cp - 0xfee0, i, i + 1);
    } else if (cp >= 0x80) {
      const ch = original[i];
      if (SPACES.test(ch)) push(32, i, i + 1);
      else if (!INVISIBLE.test(ch)) push((HOMOGLYPHS[ch] ?? ch).charCodeAt(0), i, i + 1);
    } else {
      continue; // an ASCII character after a tag run: the run is closed, take the character on the fast path
    }
    i += width;
  }
  if (inTags) push(10, original.length, original.length);
  let text = "";
  for (let i = 0; i < n; i += 4096) {
    // apply takes the typed array as it is; a spread would iterate it.
    text += String.fromCharCode.apply(null, codes.subarray(i, Math.min(n, i + 4096)) as unknown as number[]);
  }
  return { text, from: from.slice(0, n), to: to.slice(0, n) };
}

// What may precede a line's first word without being part of it: indentation, comment markers of the common
// languages, Markdown's quote, list, heading and task markers, docstring quotes, table bars, a log line's level.
const LEAD_IN =
  /[ \t]*(?:(?:\/\/+!?|\/\*+!?|\*+\/?|#+!?|--+|;+|%+|>+|<!--|\{-|\(\*|'''|"""|rem(?=\s)|[-+•]|\d{1,3}[.)]|\[[ xX]\]|\|+|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|NOTICE|TRACE|info|warn|warning|error|debug|notice|trace)\])[ \t]*)*/y;
// Where a clause starts inside a line. The sentence end skips common abbreviations ("e.g. ignore …" is not a
// sentence) and a number's point.
const INNER_START = new RegExp(
  [
    raw`(?<sentence>(?<!\b(?:e\.g|i\.e|etc|vs|cf|viz|approx|fig|no|dr|mr|mrs|ms|st)|\d)[.!?]+["'”’)\]*_]*[ \t]+)`,
    raw`(?<colon>[:;]["'”’)\]*_]*[ \t]+|:(?=["'“‘\x60]))`,
    raw`(?<open><!--[ \t]*|\/\*+[ \t]*|<\/?[A-Za-z][\w-]*(?:[ \t][^<>\n]*)?>[ \t]*|["“‘'\x60([][ \t]*)`,
  ].join("|"),
  "g",
);

/** Builds the view of a text: normalised, its clause starts, its reported and hidden ranges. */
export function viewOf(original: string, path: boolean): TextView {
  const { text, from, to } = normalise(original, path);
  const starts: ClauseStart[] = [];
  for (let lineStart = 0; lineStart < text.length;) {
    const newline = text.indexOf("\n", lineStart);
    const lineEnd = newline === -1 ? text.length : newline;
    LEAD_IN.lastIndex = lineStart;
    LEAD_IN.exec(text);
    const first = LEAD_IN.lastIndex;
    const lead = text.slice(lineStart, Math.min(first, lineEnd));
    // A wrapped line that goes on with a sentence ("… tell the model to\nignore previous …", also under a comment or
    // quote marker) starts no clause; a list item, a log line's level, a path's component each start one.
    const goesOn = !path && !/[-+•\d[]/.test(lead) &&
      /[a-z,]$/.test(text.slice(Math.max(0, lineStart - 81), Math.max(0, lineStart - 1))) &&
      /^[a-z]/.test(text[first] ?? "");
    if (first < lineEnd && !goesOn) starts.push({ at: first, kind: "line", colon: -1 });
    lineStart = lineEnd + 1;
  }
  for (const m of text.matchAll(INNER_START)) {
    const at = m.index + m[0].length;
    if (at >= text.length || text[at] === "\n") continue;
    const kind = m.groups!.sentence !== undefined ? "sentence" : m.groups!.colon !== undefined ? "colon" : "open";
    starts.push({ at, kind, colon: kind === "colon" ? m.index : -1 });
  }
  starts.sort((a, b) => a.at - b.at);
  const unique = starts.filter((s, i) => i === 0 || starts[i - 1].at !== s.at);
  return { text, from, to, starts: unique, reported: reportedRanges(text), comments: commentRanges(text) };
}

/**
 * Words that make what follows a colon reported speech, not an address: "attackers write: …", "Example: …", "a
 * comment might say: …". What a quotation is introduced by, never what an instruction is addressed to.
 */
export const REPORTING_CUE =
  /\b(?:says?|said|saying|writes?|wrote|written|reads?|such\s+as|like|e\.g|for\s+example|for\s+instance|examples?|contains?|containing|includes?|including|phrases?|payloads?|strings?|tells?|told|instructs?|instructed|asks?|asked|claims?|quoted?|as\s+follows|samples?|patterns?|inputs?|expected|fixtures?|test\s+cases?|attacks?|attackers?|injections?|injected|malicious|hostile|adversar\w*|jailbreaks?)\b/i;

/**
 * Fenced code blocks (``` or ~~~), and the block that follows a line ending in a colon that introduces an example
 * ("A typical payload looks like this:"), up to the next blank line after it.
 */
function reportedRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  const lines = text.split("\n");
  let offset = 0;
  let fence: { marker: string; start: number } | undefined;
  let intro: "pending" | "open" | undefined;
  let introStart = 0;
  for (const line of lines) {
    const end = offset + line.length;
    const trimmed = line.trim();
    const marker = /^(`{3,}|~{3,})/.exec(trimmed)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence.marker[0] && marker.length >= fence.marker.length) {
        ranges.push([fence.start, end]);
        fence = undefined;
        intro = undefined;
      }
    } else if (marker !== undefined) {
      fence = { marker, start: offset };
    } else if (intro === "pending" && trimmed !== "") {
      intro = "open";
      introStart = offset;
    } else if (intro === "open" && trimmed === "") {
      ranges.push([introStart, offset]);
      intro = undefined;
    }
    if (fence === undefined && intro === undefined && /:[*_]*$/.test(trimmed) && REPORTING_CUE.test(trimmed)) {
      intro = "pending";
    }
    offset = end + 1;
  }
  if (fence !== undefined) ranges.push([fence.start, text.length]);
  if (intro === "open") ranges.push([introStart, text.length]);
  return ranges;
}

function commentRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  for (const m of text.matchAll(/<!--[\s\S]*?(?:-->|$(?![\s\S]))/g)) ranges.push([m.index, m.index + m[0].length]);
  return ranges;
}

/** True when `at` lies in one of `ranges`. */
export function within(ranges: readonly (readonly [number, number])[], at: number): boolean {
  return ranges.some(([start, end]) => at >= start && at < end);
}

const LETTER = /[\p{L}\p{N}]/u;

/**
 * Whether `at` is inside quotation marks on its line, and if so whether the quotation is data (a JSON or YAML value,
 * a string assigned in code: its content is what the repository says) or reported speech (a quotation inside a
 * sentence: "attackers write 'ignore …'", "'ignore …' works because …"). Reported wins over data when quotes nest.
 */
export function quoteContext(view: TextView, at: number): "none" | "data" | "reported" {
  const { text } = view;
  const lineStart = text.lastIndexOf("\n", at - 1) + 1;
  LEAD_IN.lastIndex = lineStart;
  LEAD_IN.exec(text);
  const first = Math.min(LEAD_IN.lastIndex, at);
  const open: { ch: string; at: number }[] = [];
  for (let i = first; i < at; i++) {
    const ch = text[i];
    const top = open.at(-1)?.ch;
    if (ch === "\\") {
      i++;
    } else if (top === "`") {
      if (ch === "`") open.pop();
    } else if (ch === '"' || ch === "`") {
      if (top === ch) open.pop();
      else open.push({ ch, at: i });
    } else if (ch === "“") {
      open.push({ ch, at: i });
    } else if (ch === "”") {
      if (top === "“") open.pop();
    } else if (ch === "'" || ch === "‘" || ch === "’") {
      const before = i > lineStart && LETTER.test(text[i - 1]);
      const after = i + 1 < text.length && LETTER.test(text[i + 1]);
      if ((top === "'" || top === "‘") && !after) open.pop();
      else if (ch !== "’" && !before && /\S/.test(text[i + 1] ?? " ")) open.push({ ch, at: i });
    }
  }
  if (open.length === 0) return "none";
  return open.some((q) => isReported(text, first, q.at, q.ch, at)) ? "reported" : "data";
}

const CLOSING: Readonly<Record<string, string>> = { '"': '"', "`": "`", "“": "”", "'": "'", "‘": "’" };

/** Whether the quotation opened at `quote` is reported speech, from what stands before and after it. */
function isReported(text: string, first: number, quote: number, ch: string, inside: number): boolean {
  const before = text.slice(first, quote).trimEnd();
  const lineEnd = text.indexOf("\n", inside) === -1 ? text.length : text.indexOf("\n", inside);
  const close = text.indexOf(CLOSING[ch], inside);
  if (close !== -1 && close < lineEnd && /^\s*[\p{L}]/u.test(text.slice(close + 1, lineEnd))) return true;
  if (before === "") return false;
  if (/(?:[=[{?+]|=>|\|\||&&|\breturn)$/.test(before)) return false;
  if (/[\w$\])]\($/.test(before)) return false;
  if (before.endsWith(",")) return !/[[({]/.test(before);
  if (before.endsWith(":")) {
    // "Payload: `…`" introduces a quotation; "description: \"…\"" is a value.
    if (REPORTING_CUE.test(before.split(/[.!?]\s+/).at(-1)!)) return true;
    return !/^(?:[-*]\s+)?(?:"[^"]*"|'[^']*'|[\w$.-]+)\s*:$/.test(before) &&
      !/[{,]\s*(?:"[^"]*"|[\w$]+)\s*:$/.test(before);
  }
  return true;
}
