// RFC 8785 (JSON Canonicalization Scheme): keys sorted by UTF-16 code units,
// ECMAScript number form, no insignificant whitespace. The catalog digest and
// signed manifests depend on it producing one text per value.
import { problem, received, WardenError } from "./errors.ts";

function fail(detail: string): never {
  throw new WardenError("invalid_output", problem("Cannot canonicalize JSON", detail));
}

/**
 * Sorts keys by UTF-16 code units (`<` on strings), as RFC 8785 orders them: insertion sort for the few keys of a
 * typical object (no allocation), the built-in sort (the same order) for many.
 */
function sortKeys(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
}

// Written with indexed loops and string concatenation rather than for-of,
// map, filter, join and sort: it runs over every plugin manifest and the
// whole catalog at startup, mostly before the JIT has seen it, and the
// iterators and intermediate arrays were most of what it allocated.
function serialize(value: unknown, indent: string, depth: number): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) fail(`numbers must be finite, received ${String(value)}`);
      return JSON.stringify(value);
    case "string":
      if (!value.isWellFormed()) fail(`strings must be well-formed UTF-16, received ${received(value)}`);
      return JSON.stringify(value);
    case "object":
      break;
    default:
      fail(`unsupported value of type ${typeof value}`);
  }
  const pad = indent ? "\n" + indent.repeat(depth + 1) : "";
  const end = indent ? "\n" + indent.repeat(depth) : "";
  const sep = indent ? ": " : ":";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      // A hole writes nothing (as Array.prototype.map and join did); JSON values have none.
      if (i in value) out += pad + serialize(value[i] === undefined ? null : value[i], indent, depth + 1);
    }
    return out + end + "]";
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let count = 0;
  for (let i = 0; i < keys.length; i++) if (record[keys[i]] !== undefined) keys[count++] = keys[i];
  keys.length = count;
  if (count === 0) return "{}";
  sortKeys(keys);
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (i > 0) out += ",";
    out += pad + JSON.stringify(key) + sep + serialize(record[key], indent, depth + 1);
  }
  return out + end + "}";
}

/**
 * The RFC 8785 canonical form of a JSON value.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, "x"] }) // '{"a":[true,"x"],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, "", 0);
}

/** Canonical key order and numbers, indented by two spaces: for files people diff. */
export function prettyCanonicalJson(value: unknown): string {
  return serialize(value, "  ", 0) + "\n";
}
