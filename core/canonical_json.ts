// RFC 8785 (JSON Canonicalization Scheme): keys sorted by UTF-16 code units,
// ECMAScript number form, no insignificant whitespace. The catalog digest and
// signed manifests depend on it producing one text per value.
import { problem, received, WardenError } from "./errors.ts";

function fail(detail: string): never {
  throw new WardenError("invalid_output", problem("Cannot canonicalize JSON", detail));
}

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
    return "[" + value.map((item) => pad + serialize(item === undefined ? null : item, indent, depth + 1)).join(",") +
      end + "]";
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort((
    a,
    b,
  ) => (a < b ? -1 : a > b ? 1 : 0));
  if (keys.length === 0) return "{}";
  return "{" +
    keys.map((key) => pad + JSON.stringify(key) + sep + serialize(record[key], indent, depth + 1)).join(",") + end +
    "}";
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
