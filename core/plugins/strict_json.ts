// A JSON reader for signed files: it refuses what JSON.parse forgives.
// JSON.parse keeps the last of duplicate keys, so two parsers could read two
// different manifests from one signed text; this one names the duplicate.
// It also names non-integer numbers, which RFC 8785 writers disagree on.

/** Why a text is not strict JSON, with a JSON-path-like location. */
export class StrictJsonError extends Error {
  readonly kind: "syntax" | "duplicate-key" | "non-integer";
  constructor(kind: StrictJsonError["kind"], message: string) {
    super(message);
    this.kind = kind;
  }
}

/**
 * Parses `text` as JSON, throwing `StrictJsonError` on a syntax error, a
 * duplicate key or a number that is not a safe integer.
 */
export function parseStrictJson(text: string): unknown {
  let i = 0;
  const fail = (kind: StrictJsonError["kind"], what: string): never => {
    throw new StrictJsonError(kind, `${what} at offset ${i}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\n" || text[i] === "\r" || text[i] === "\t")) i++;
  };
  const value = (where: string): unknown => {
    ws();
    const ch = text[i];
    if (ch === "{") {
      i++;
      const out: Record<string, unknown> = {};
      const seen = new Set<string>();
      ws();
      if (text[i] === "}") {
        i++;
        return out;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("syntax", `expected a key in ${where}`);
        const key = string();
        if (seen.has(key)) fail("duplicate-key", `duplicate key ${JSON.stringify(key)} in ${where}`);
        seen.add(key);
        ws();
        if (text[i] !== ":") fail("syntax", `expected ":" after key ${JSON.stringify(key)} in ${where}`);
        i++;
        // defineProperty: a "__proto__" key is data here, as in JSON.parse.
        Object.defineProperty(out, key, {
          value: value(`${where}.${key}`),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return out;
        }
        fail("syntax", `expected "," or "}" in ${where}`);
      }
    }
    if (ch === "[") {
      i++;
      const out: unknown[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return out;
      }
      for (;;) {
        out.push(value(`${where}[${out.length}]`));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return out;
        }
        fail("syntax", `expected "," or "]" in ${where}`);
      }
    }
    if (ch === '"') return string();
    for (const [word, result] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return result;
      }
    }
    const number = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!number) {
      return fail("syntax", `unexpected ${ch === undefined ? "end of text" : JSON.stringify(ch)} in ${where}`);
    }
    const parsed = Number(number[0]);
    if (number[1] !== undefined || number[2] !== undefined || !Number.isSafeInteger(parsed)) {
      fail("non-integer", `number ${number[0]} in ${where} is not a safe integer`);
    }
    i += number[0].length;
    return parsed;
  };
  const string = (): string => {
    const start = i;
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
  const result = value("$");
  ws();
  if (i !== text.length) fail("syntax", "unexpected text after the value");
  return result;
}
