// A JSON reader for signed files: it refuses what JSON.parse forgives.
// JSON.parse keeps the last of duplicate keys, so two parsers could read two
// different manifests from one signed text; this one names the duplicate.
// It also names non-integer numbers, which RFC 8785 writers disagree on,
// and nesting deeper than MAX_DEPTH, which would otherwise end in whichever
// recursion (here or in a later reader) overflows the stack first.
//
// It runs on the lock file at startup, mostly before the JIT has seen it. A
// text exactly as JSON.stringify writes its own value (what writers write)
// is read by JSON.parse; anything else by the reader below, which reads
// tokens with sticky regular expressions rather than a loop per character
// and spells out the location only when there is an error.

/** Why a text is not strict JSON, with a JSON-path-like location. */
export class StrictJsonError extends Error {
  readonly kind: "syntax" | "duplicate-key" | "non-integer";
  constructor(kind: StrictJsonError["kind"], message: string) {
    super(message);
    this.kind = kind;
  }
}

/** A string token without escapes or control characters: its text is its value. */
// deno-lint-ignore no-control-regex
const PLAIN_STRING = /"[^"\\\u0000-\u001f]*"/y;
const WHITESPACE = /[ \n\r\t]*/y;
const NUMBER = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/;

/** How deeply objects and arrays may nest (the outermost is level 1). */
export const MAX_DEPTH = 512;

/**
 * True when a JSON value (as JSON.parse returns it) is one the strict reader could return: every number a safe
 * integer, objects and arrays nested at most `MAX_DEPTH` deep.
 */
export function isStrictJsonValue(value: unknown, depth = 0): boolean {
  if (typeof value === "number") return Number.isSafeInteger(value);
  if (typeof value !== "object" || value === null) return true;
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isStrictJsonValue(value[i], depth + 1)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) if (!isStrictJsonValue(record[keys[i]], depth + 1)) return false;
  return true;
}

const NOT_WRITTEN = Symbol("not as JSON.stringify writes it");

/**
 * The value of a text that is exactly JSON.stringify's output for that value, compact or indented by two spaces
 * (with or without a final newline), when `isStrictJsonValue`; `NOT_WRITTEN` otherwise. Such a text is what the
 * strict reader accepts, read to the same value: it is JSON, JSON.stringify never writes a key twice, its numbers
 * are plain integers and it is not nested too deeply.
 */
function writtenValue(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    if (!isStrictJsonValue(value)) return NOT_WRITTEN;
    if (JSON.stringify(value) === text) return value;
    const indented = JSON.stringify(value, null, 2);
    return indented === text || indented + "\n" === text ? value : NOT_WRITTEN;
  } catch {
    return NOT_WRITTEN; // not JSON, or nested too deeply to walk: the reader below says so, as it always did
  }
}

/**
 * Parses `text` as JSON, throwing `StrictJsonError` on a syntax error (also
 * for nesting deeper than `MAX_DEPTH`), a duplicate key or a number that is
 * not a safe integer.
 */
export function parseStrictJson(text: string): unknown {
  const written = writtenValue(text);
  if (written !== NOT_WRITTEN) return written;
  let i = 0;
  /** Keys and indexes from the root to the value being read; `where()` spells it `$.a.b[0]`. */
  const path: (string | number)[] = [];
  const where = (): string => {
    let out = "$";
    for (const step of path) out += typeof step === "number" ? `[${step}]` : `.${step}`;
    return out;
  };
  const fail = (kind: StrictJsonError["kind"], what: string): never => {
    throw new StrictJsonError(kind, `${what} at offset ${i}`);
  };
  const ws = () => {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
    WHITESPACE.lastIndex = i;
    WHITESPACE.test(text);
    i = WHITESPACE.lastIndex;
  };
  const value = (): unknown => {
    ws();
    const c = text.charCodeAt(i);
    if ((c === 0x7b /* { */ || c === 0x5b /* [ */) && path.length >= MAX_DEPTH) {
      fail("syntax", `nested deeper than ${MAX_DEPTH} levels`);
    }
    if (c === 0x7b /* { */) {
      i++;
      const out: Record<string, unknown> = {};
      ws();
      if (text.charCodeAt(i) === 0x7d /* } */) {
        i++;
        return out;
      }
      for (;;) {
        ws();
        if (text.charCodeAt(i) !== 0x22 /* " */) fail("syntax", `expected a key in ${where()}`);
        const key = string();
        if (Object.hasOwn(out, key)) fail("duplicate-key", `duplicate key ${JSON.stringify(key)} in ${where()}`);
        ws();
        if (text.charCodeAt(i) !== 0x3a /* : */) {
          fail("syntax", `expected ":" after key ${JSON.stringify(key)} in ${where()}`);
        }
        i++;
        path.push(key);
        const item = value();
        path.pop();
        if (key in out) {
          // An inherited name ("__proto__", "toString"...): defineProperty makes it plain data, as in JSON.parse.
          Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
        } else out[key] = item;
        ws();
        const next = text.charCodeAt(i);
        if (next === 0x2c /* , */) {
          i++;
          continue;
        }
        if (next === 0x7d /* } */) {
          i++;
          return out;
        }
        fail("syntax", `expected "," or "}" in ${where()}`);
      }
    }
    if (c === 0x5b /* [ */) {
      i++;
      const out: unknown[] = [];
      ws();
      if (text.charCodeAt(i) === 0x5d /* ] */) {
        i++;
        return out;
      }
      for (;;) {
        path.push(out.length);
        out.push(value());
        path.pop();
        ws();
        const next = text.charCodeAt(i);
        if (next === 0x2c /* , */) {
          i++;
          continue;
        }
        if (next === 0x5d /* ] */) {
          i++;
          return out;
        }
        fail("syntax", `expected "," or "]" in ${where()}`);
      }
    }
    if (c === 0x22 /* " */) return string();
    if (c === 0x74 /* t */ && text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (c === 0x66 /* f */ && text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (c === 0x6e /* n */ && text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    const number = NUMBER.exec(text.slice(i, i + 400));
    if (!number) {
      const ch = text[i];
      return fail("syntax", `unexpected ${ch === undefined ? "end of text" : JSON.stringify(ch)} in ${where()}`);
    }
    const parsed = Number(number[0]);
    if (number[1] !== undefined || number[2] !== undefined || !Number.isSafeInteger(parsed)) {
      fail("non-integer", `number ${number[0]} in ${where()} is not a safe integer`);
    }
    i += number[0].length;
    return parsed;
  };
  /** The string token at `i` (a `"`), which it consumes. */
  const string = (): string => {
    const start = i;
    PLAIN_STRING.lastIndex = start;
    if (PLAIN_STRING.test(text)) {
      i = PLAIN_STRING.lastIndex;
      return text.slice(start + 1, i - 1);
    }
    // Escapes, a control character or no closing quote: character by character, for the exact error.
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") i++;
      else if (text.charCodeAt(i) < 0x20) fail("syntax", "control character in a string");
      i++;
    }
    if (i >= text.length) fail("syntax", "unterminated string");
    i++;
    try {
      return JSON.parse(text.slice(start, i));
    } catch {
      return fail("syntax", "invalid escape in a string");
    }
  };
  const result = value();
  ws();
  if (i !== text.length) fail("syntax", "unexpected text after the value");
  return result;
}
