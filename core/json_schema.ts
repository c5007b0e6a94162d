// Validation against the JSON Schema subset warden publishes: what
// @valibot/to-json-schema writes, which is also all a plugin manifest may
// use. The host validates plugin arguments with it before any plugin code
// runs, so a keyword it does not understand is refused when the manifest is
// read, never silently ignored.

/** One way a value fails a schema, in the shape every argument message uses. */
export interface SchemaIssue {
  readonly path: readonly (string | number)[];
  readonly kind: "unknown-key" | "missing" | "invalid";
  /** e.g. `string`, `>=1`, `"a" | "b"` */
  readonly expected: string;
  /** e.g. `42`, `"yes"`, `Object` */
  readonly received: string;
}

type Schema = Record<string, unknown>;

const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "format",
  "deprecated",
  "readOnly",
  "writeOnly",
]);
const NUMERIC_KEYWORDS = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
];
const SUBSCHEMA_KEYWORDS = ["additionalProperties", "items", "propertyNames"];
const LIST_KEYWORDS = ["anyOf", "oneOf", "allOf"];
/** Every keyword the validator checks; any other non-annotation keyword is refused. */
const ASSERTIONS = new Set([
  "type",
  "properties",
  "required",
  "uniqueItems",
  "enum",
  "const",
  "pattern",
  ...NUMERIC_KEYWORDS,
  ...SUBSCHEMA_KEYWORDS,
  ...LIST_KEYWORDS,
]);
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/**
 * A length bound as every message words it, for strings and arrays alike: expected `length >=1`, received
 * `length 0` (the value itself may be long; its length is what failed).
 */
export function lengthIssue(path: readonly (string | number)[], bound: string, length: number): SchemaIssue {
  return { path, kind: "invalid", expected: `length ${bound}`, received: `length ${length}` };
}

/** What a pattern expects, as every message words it. */
export function patternExpected(source: string): string {
  return `text matching /${source}/`;
}

/** How valibot names a received value, so plugin and built-in messages read alike. */
export function describeReceived(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "Array";
  return "Object";
}

/**
 * Problems that make `schema` unusable here: an unknown keyword, a malformed
 * value, an uncompilable pattern. Empty when the schema is fine.
 */
export function schemaProblems(schema: unknown, where = "$"): string[] {
  const problems: string[] = [];
  collectSchemaProblems(schema, where, problems);
  return problems;
}

// Indexed loops into one list: this runs over every plugin tool schema at
// startup, mostly before the JIT has seen it, where for-of and spreading
// allocate per step.
function collectSchemaProblems(schema: unknown, where: string, problems: string[]): void {
  if (typeof schema === "boolean") return;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    problems.push(`${where} is not a schema object`);
    return;
  }
  const s = schema as Schema;
  const keys = Object.keys(s);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (!ANNOTATIONS.has(key) && !ASSERTIONS.has(key)) problems.push(`${where} uses the unsupported keyword "${key}"`);
  }
  if (s.type !== undefined) {
    const types: unknown[] = Array.isArray(s.type) ? s.type : [s.type];
    for (let i = 0; i < types.length; i++) {
      const t = types[i];
      if (typeof t !== "string" || !TYPES.has(t)) {
        problems.push(`${where}.type has the unknown type ${JSON.stringify(t)}`);
      }
    }
  }
  if (s.pattern !== undefined) {
    try {
      new RegExp(String(s.pattern), "u");
    } catch {
      problems.push(`${where}.pattern is not a valid regular expression`);
    }
  }
  if (s.properties !== undefined) {
    if (typeof s.properties !== "object" || s.properties === null) {
      problems.push(`${where}.properties is not an object`);
    } else {
      const properties = s.properties as Record<string, unknown>;
      const names = Object.keys(properties);
      for (let i = 0; i < names.length; i++) {
        collectSchemaProblems(properties[names[i]], `${where}.properties.${names[i]}`, problems);
      }
    }
  }
  if (s.required !== undefined && (!Array.isArray(s.required) || s.required.some((r) => typeof r !== "string"))) {
    problems.push(`${where}.required is not a list of names`);
  }
  for (let i = 0; i < SUBSCHEMA_KEYWORDS.length; i++) {
    const key = SUBSCHEMA_KEYWORDS[i];
    if (s[key] !== undefined) collectSchemaProblems(s[key], `${where}.${key}`, problems);
  }
  for (let i = 0; i < LIST_KEYWORDS.length; i++) {
    const key = LIST_KEYWORDS[i];
    const list = s[key];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.length === 0) {
      problems.push(`${where}.${key} is not a non-empty list`);
    } else list.forEach((sub, n) => collectSchemaProblems(sub, `${where}.${key}[${n}]`, problems));
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) problems.push(`${where}.enum is not a list`);
  for (let i = 0; i < NUMERIC_KEYWORDS.length; i++) {
    const key = NUMERIC_KEYWORDS[i];
    if (s[key] !== undefined && typeof s[key] !== "number") problems.push(`${where}.${key} is not a number`);
  }
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length &&
    ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Every issue of `value` against `schema` (a schema `schemaProblems` accepted). */
export function validateJsonSchema(schema: unknown, value: unknown, path: (string | number)[] = []): SchemaIssue[] {
  if (schema === true || schema === undefined) return [];
  const invalid = (
    expected: string,
  ): SchemaIssue[] => [{ path, kind: "invalid", expected, received: describeReceived(value) }];
  if (schema === false) return invalid("never");
  const s = schema as Schema;

  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type as string[] : [s.type as string];
    const actual = typeOf(value);
    if (!types.some((t) => t === actual || (t === "number" && actual === "integer"))) return invalid(types.join(" | "));
  }
  if (s.const !== undefined && !deepEqual(s.const, value)) return invalid(JSON.stringify(s.const));
  if (Array.isArray(s.enum) && !s.enum.some((option) => deepEqual(option, value))) {
    return invalid(s.enum.map((option) => JSON.stringify(option)).join(" | "));
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = s[key] as unknown[] | undefined;
    if (!options) continue;
    const passing = options.filter((option) => validateJsonSchema(option, value, path).length === 0).length;
    if (key === "anyOf" ? passing === 0 : passing !== 1) {
      return invalid(options.map((o) => describeSchema(o)).join(" | "));
    }
  }
  const issues: SchemaIssue[] = [];
  for (const sub of (s.allOf as unknown[] | undefined) ?? []) issues.push(...validateJsonSchema(sub, value, path));

  // A value gets one issue of its own, the first check it fails, as valibot's pipes report it (abortPipeEarly).
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return [...issues, ...invalid(`>=${s.minimum}`)];
    if (typeof s.maximum === "number" && value > s.maximum) return [...issues, ...invalid(`<=${s.maximum}`)];
    if (typeof s.exclusiveMinimum === "number" && value <= s.exclusiveMinimum) {
      return [...issues, ...invalid(`>${s.exclusiveMinimum}`)];
    }
    if (typeof s.exclusiveMaximum === "number" && value >= s.exclusiveMaximum) {
      return [...issues, ...invalid(`<${s.exclusiveMaximum}`)];
    }
    if (typeof s.multipleOf === "number" && value % s.multipleOf !== 0) {
      return [...issues, ...invalid(`multiple of ${s.multipleOf}`)];
    }
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof s.minLength === "number" && length < s.minLength) {
      return [...issues, lengthIssue(path, `>=${s.minLength}`, length)];
    }
    if (typeof s.maxLength === "number" && length > s.maxLength) {
      return [...issues, lengthIssue(path, `<=${s.maxLength}`, length)];
    }
    if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(value)) {
      return [...issues, ...invalid(patternExpected(s.pattern))];
    }
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === "number" && value.length < s.minItems) {
      issues.push(lengthIssue(path, `>=${s.minItems}`, value.length));
    }
    if (typeof s.maxItems === "number" && value.length > s.maxItems) {
      issues.push(lengthIssue(path, `<=${s.maxItems}`, value.length));
    }
    if (s.uniqueItems === true && value.some((item, n) => value.findIndex((other) => deepEqual(other, item)) !== n)) {
      issues.push(...invalid("unique items"));
    }
    if (s.items !== undefined) {
      value.forEach((item, n) => issues.push(...validateJsonSchema(s.items, item, [...path, n])));
    }
  }
  if (typeOf(value) === "object") {
    const record = value as Record<string, unknown>;
    const properties = (s.properties ?? {}) as Record<string, unknown>;
    for (const key of (s.required as string[] | undefined) ?? []) {
      if (!Object.hasOwn(record, key)) {
        issues.push({
          path: [...path, key],
          kind: "missing",
          expected: describeSchema(properties[key]),
          received: "undefined",
        });
      }
    }
    for (const key of Object.keys(record)) {
      if (Object.hasOwn(properties, key)) {
        issues.push(...validateJsonSchema(properties[key], record[key], [...path, key]));
      } else if (s.additionalProperties === false) {
        issues.push({
          path: [...path, key],
          kind: "unknown-key",
          expected: "never",
          received: describeReceived(record[key]),
        });
      } else if (s.additionalProperties !== undefined) {
        issues.push(...validateJsonSchema(s.additionalProperties, record[key], [...path, key]));
      }
      if (s.propertyNames !== undefined) issues.push(...validateJsonSchema(s.propertyNames, key, [...path, key]));
    }
    const count = Object.keys(record).length;
    if (typeof s.minProperties === "number" && count < s.minProperties) {
      issues.push({
        path,
        kind: "invalid",
        expected: `>=${s.minProperties} properties`,
        received: `${count} properties`,
      });
    }
    if (typeof s.maxProperties === "number" && count > s.maxProperties) {
      issues.push({
        path,
        kind: "invalid",
        expected: `<=${s.maxProperties} properties`,
        received: `${count} properties`,
      });
    }
  }
  return issues;
}

/** A short name for what a schema accepts, for messages. */
export function describeSchema(schema: unknown): string {
  if (typeof schema !== "object" || schema === null) return schema === false ? "never" : "any value";
  const s = schema as Schema;
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((o) => JSON.stringify(o)).join(" | ");
  if (s.type !== undefined) return Array.isArray(s.type) ? s.type.join(" | ") : String(s.type);
  const options = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (options) return options.map(describeSchema).join(" | ");
  return "any value";
}
