// The host's checks of what a plugin child writes: every well-formed message
// is accepted as it is, and every malformed one is refused with the reason
// the host's plugin_failed error then gives, one field wrong at a time.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { received } from "../../errors.ts";
import { CLIENT_LOG_LEVELS } from "../../tool.ts";
import { checkMessage } from "./protocol.ts";

const WELL_FORMED: readonly Record<string, unknown>[] = [
  { type: "loaded", ok: true, tools: ["count", "list"] },
  { type: "loaded", ok: true, tools: [] },
  { type: "loaded", ok: false, error: { message: "SyntaxError: Unexpected token" } },
  { type: "result", callId: 1, token: "t", ok: true, value: { files: 3 } },
  { type: "result", callId: 1, token: "t", ok: true },
  { type: "result", callId: 2, token: "t", ok: false, error: { message: "boom" } },
  { type: "result", callId: 2, token: "t", ok: false, error: { message: "no", code: "not_found", kind: "memory" } },
  { type: "host-request", id: 1, callId: 1, token: "t", op: "readText", args: ["main", "a.txt", null] },
  { type: "host-request", id: 9, callId: 3, token: "t", op: "spawn", args: [["git", "status"]] },
  { type: "host-request", id: 2, callId: 1, token: "t", op: "fetch", args: [] },
  { type: "progress", callId: 1, token: "t", progress: 0.5 },
  { type: "progress", callId: 1, token: "t", progress: -1, total: 2, message: "half" },
  { type: "progress", callId: 1, token: "t", progress: 1, total: null, message: null },
  ...CLIENT_LOG_LEVELS.map((level) => ({ type: "log", callId: 1, token: "t", level, data: { level } })),
  { type: "log", callId: 1, token: "t", level: "info" },
];

/** Each is one field away from a well-formed message of its type. */
const INVALID: readonly Record<string, unknown>[] = [
  { type: "loaded", tools: ["count"] },
  { type: "loaded", ok: "true", tools: ["count"] },
  { type: "loaded", ok: true },
  { type: "loaded", ok: true, tools: "count" },
  { type: "loaded", ok: true, tools: ["count", 7] },
  { type: "loaded", ok: false },
  { type: "loaded", ok: false, error: "boom" },
  { type: "loaded", ok: false, error: { message: 7 } },
  { type: "result", token: "t", ok: true },
  { type: "result", callId: 0, token: "t", ok: true },
  { type: "result", callId: -1, token: "t", ok: true },
  { type: "result", callId: 1.5, token: "t", ok: true },
  { type: "result", callId: "1", token: "t", ok: true },
  { type: "result", callId: 2 ** 53, token: "t", ok: true },
  { type: "result", callId: 1, ok: true },
  { type: "result", callId: 1, token: 5, ok: true },
  { type: "result", callId: 1, token: "t" },
  { type: "result", callId: 1, token: "t", ok: false },
  { type: "result", callId: 1, token: "t", ok: false, error: { code: "not_found" } },
  { type: "host-request", callId: 1, token: "t", op: "readText", args: [] },
  { type: "host-request", id: 0, callId: 1, token: "t", op: "readText", args: [] },
  { type: "host-request", id: 1, token: "t", op: "readText", args: [] },
  { type: "host-request", id: 1, callId: 1, op: "readText", args: [] },
  { type: "host-request", id: 1, callId: 1, token: "t", args: [] },
  { type: "host-request", id: 1, callId: 1, token: "t", op: 3, args: [] },
  { type: "host-request", id: 1, callId: 1, token: "t", op: "readText" },
  { type: "host-request", id: 1, callId: 1, token: "t", op: "readText", args: { 0: "main" } },
  { type: "progress", token: "t", progress: 1 },
  { type: "progress", callId: 1, progress: 1 },
  { type: "progress", callId: 1, token: "t" },
  { type: "progress", callId: 1, token: "t", progress: "1" },
  { type: "progress", callId: 1, token: "t", progress: Infinity },
  { type: "progress", callId: 1, token: "t", progress: NaN },
  { type: "progress", callId: 1, token: "t", progress: 1, total: "2" },
  { type: "progress", callId: 1, token: "t", progress: 1, total: Infinity },
  { type: "progress", callId: 1, token: "t", progress: 1, message: 3 },
  { type: "log", token: "t", level: "info", data: 1 },
  { type: "log", callId: 1, level: "info", data: 1 },
  { type: "log", callId: 1, token: "t", data: 1 },
  { type: "log", callId: 1, token: "t", level: "warn", data: 1 },
  { type: "log", callId: 1, token: "t", level: "INFO", data: 1 },
];

describe("checkMessage, the host's reading of a plugin child's line", () => {
  it("accepts every well-formed message as it is", () => {
    for (const message of WELL_FORMED) assert.equal(checkMessage(message), message, received(message));
  });

  it("refuses a message with one malformed field, naming its type and showing it", () => {
    for (const message of INVALID) {
      assert.equal(checkMessage(message), `it sent an invalid "${message.type}" message: ${received(message)}`);
    }
  });

  it("shows at most 80 characters of what it refused", () => {
    const message = { type: "log", callId: 1, token: "0123456789abcdef".repeat(8), level: "loud", data: null };
    assert.equal(
      checkMessage(message),
      'it sent an invalid "log" message: {"type":"log","callId":1,"token":"0123456789abcdef0123456789abcdef0123456789a...',
    );
  });

  it("refuses a type it does not know, the host's own types and the old names among them", () => {
    for (const type of ["fs", "fs-reply", "host-reply", "load", "call", "cancel", "hello", "Result", ""]) {
      assert.equal(
        checkMessage({ type, id: 1, callId: 1, token: "t", ok: true }),
        `it sent a message of unknown type ${JSON.stringify(type)}`,
      );
    }
  });

  it("refuses what is not a message: no object, or no string type", () => {
    const cases: [unknown, string][] = [
      [null, "null"],
      [42, "42"],
      ["loaded", '"loaded"'],
      [[{ type: "loaded", ok: true, tools: [] }], '[{"type":"loaded","ok":true,"tools":[]}]'],
      [{}, "{}"],
      [{ type: 1, ok: true }, '{"type":1,"ok":true}'],
      [{ ok: true, tools: [] }, '{"ok":true,"tools":[]}'],
    ];
    for (const [value, shown] of cases) {
      assert.equal(checkMessage(value), `it sent a line that is not a message: ${shown}`);
    }
  });
});
