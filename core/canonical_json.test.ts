// canonical_json's promises: RFC 8785 key order (UTF-16 code units) at every
// depth, ECMAScript number forms, JSON.stringify's string escapes, one text
// per value whatever the insertion order, and a clear error for what JSON
// cannot hold. The catalog digest and signed manifests rest on these.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, prettyCanonicalJson } from "./canonical_json.ts";
import { WardenError } from "./errors.ts";

const runtime = "Deno" in globalThis ? "deno" : "node";

/** The keys of RFC 8785's sorting example (section 3.2.3), in the order the RFC gives them. */
const RFC_KEYS = ["\u20ac", "\r", "\ufb33", "1", "\ud83d\ude00", "\u0080", "\u00f6"];
/** The order the RFC expects: by UTF-16 code unit, so the emoji's high surrogate (d83d) sorts before U+FB33. */
const RFC_ORDER = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"];

/** The canonical text of an object whose keys, in this order, each map to 0. */
function textOf(keys: readonly string[]): string {
  return `{${keys.map((key) => `${JSON.stringify(key)}:0`).join(",")}}`;
}

describe(`canonicalJson: key order (${runtime})`, () => {
  it("sorts keys by UTF-16 code units, as RFC 8785's example does", () => {
    assert.equal(canonicalJson(Object.fromEntries(RFC_KEYS.map((key) => [key, 0]))), textOf(RFC_ORDER));
  });

  it("sorts many keys (past the small-object path) in the same order", () => {
    // 17 keys and more take the built-in sort; the RFC's keys land among plain ones as they do alone.
    const plain = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, "0")}`);
    const inserted = [...plain, ...RFC_KEYS].reverse();
    assert.equal(
      canonicalJson(Object.fromEntries(inserted.map((key) => [key, 0]))),
      textOf([...RFC_ORDER.slice(0, 2), ...plain, ...RFC_ORDER.slice(2)]),
    );
  });

  it("sorts at every depth: objects in objects, in arrays, in arrays of arrays", () => {
    const value = { z: { y: 1, x: [{ d: 1, c: [[{ b: 1, a: 2 }]] }] }, a: null };
    assert.equal(canonicalJson(value), '{"a":null,"z":{"x":[{"c":[[{"a":2,"b":1}]],"d":1}],"y":1}}');
  });

  it("gives one text per value, whatever the order the keys were inserted in", () => {
    const a = { b: { d: 1, c: 2 }, a: [1, { f: 1, e: 2 }] };
    const b = { a: [1, { e: 2, f: 1 }], b: { c: 2, d: 1 } };
    assert.equal(canonicalJson(a), canonicalJson(b));
    assert.equal(canonicalJson(JSON.parse(canonicalJson(a))), canonicalJson(a));
  });

  it("keeps the order of array elements", () => {
    assert.equal(canonicalJson([3, 1, 2, "b", "a"]), '[3,1,2,"b","a"]');
  });
});

describe(`canonicalJson: values (${runtime})`, () => {
  it("writes numbers in their ECMAScript form (RFC 8785's examples)", () => {
    const cases: [number, string][] = [
      [0, "0"],
      [-0, "0"],
      [1e21, "1e+21"],
      [1e30, "1e+30"],
      [4.5, "4.5"],
      [0.002, "0.002"],
      [1e-7, "1e-7"],
      [1e-27, "1e-27"],
      [333333333.33333329, "333333333.3333333"],
      [-1.5, "-1.5"],
      [9007199254740992, "9007199254740992"],
      [5e-324, "5e-324"],
    ];
    for (const [value, text] of cases) assert.equal(canonicalJson(value), text, String(value));
  });

  it("escapes strings as JSON.stringify does: the short escapes, other controls as \\u00xx, nothing else", () => {
    assert.equal(
      canonicalJson('\u0000\b\f\n\r\t"\\/\u001f\u007f\u00e9\u20ac\ud83d\ude00'),
      '"\\u0000\\b\\f\\n\\r\\t\\"\\\\/\\u001f\u007f\u00e9\u20ac\ud83d\ude00"',
    );
  });

  it("writes literals and empty containers without whitespace", () => {
    assert.equal(
      canonicalJson({ t: true, f: false, n: null, o: {}, a: [] }),
      '{"a":[],"f":false,"n":null,"o":{},"t":true}',
    );
  });

  it("leaves out a key whose value is undefined, and writes undefined in an array as null, as JSON.stringify does", () => {
    assert.equal(canonicalJson({ b: undefined, a: 1 }), '{"a":1}');
    assert.equal(canonicalJson({ only: undefined }), "{}");
    assert.equal(canonicalJson([undefined, 1]), "[null,1]");
  });
});

describe(`canonicalJson: what JSON cannot hold (${runtime})`, () => {
  const refused = (value: unknown, detail: string) => {
    assert.throws(() => canonicalJson(value), (error: unknown) => {
      assert.ok(error instanceof WardenError, String(error));
      assert.equal(error.code, "invalid_output");
      assert.equal(error.message, `Cannot canonicalize JSON: ${detail}`);
      return true;
    });
  };

  it("refuses numbers that are not finite, at any depth", () => {
    refused(Number.NaN, "numbers must be finite, received NaN");
    refused({ a: [Infinity] }, "numbers must be finite, received Infinity");
    refused([{ b: -Infinity }], "numbers must be finite, received -Infinity");
  });

  it("refuses a string with a lone surrogate: it has no UTF-8 form, so no one text", () => {
    refused("\ud800", 'strings must be well-formed UTF-16, received "\\ud800"');
    refused({ a: ["x\udc00y"] }, 'strings must be well-formed UTF-16, received "x\\udc00y"');
  });

  it("refuses values of no JSON type, where JSON.stringify would drop them or throw", () => {
    refused(undefined, "unsupported value of type undefined");
    refused(10n, "unsupported value of type bigint");
    refused({ f: () => 1 }, "unsupported value of type function");
    refused([Symbol("s")], "unsupported value of type symbol");
  });
});

describe(`prettyCanonicalJson (${runtime})`, () => {
  it("indents by two spaces, in canonical order, and ends with a newline", () => {
    assert.equal(
      prettyCanonicalJson({ b: [1, { d: 1, c: 2 }], a: {}, e: [] }),
      '{\n  "a": {},\n  "b": [\n    1,\n    {\n      "c": 2,\n      "d": 1\n    }\n  ],\n  "e": []\n}\n',
    );
  });

  it("holds the same value as the compact form", () => {
    const value = { z: [1, "two", { y: null, x: 3.5 }], a: { c: true, b: false } };
    assert.equal(canonicalJson(JSON.parse(prettyCanonicalJson(value))), canonicalJson(value));
  });
});
