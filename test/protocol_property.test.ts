// The property the protocol layer promises: every request with a valid id is
// answered exactly once, whatever is wrong with it, the server keeps serving,
// and stdout carries nothing but JSON-RPC. Each request shape the server
// supports has each of its fields mutated in turn (dropped, wrong type, null,
// object, array, huge string, deep nesting, edge numbers, an extra member),
// then seeded random combinations are sent back to back. Set
// WARDEN_FUZZ_SEED to replay another seed.
import assert from "node:assert/strict";
import process from "node:process";
import { describe, it } from "node:test";
import { fixtureToolsDir, runtimeName, startRaw } from "./helpers.ts";

const SEED = Number(process.env.WARDEN_FUZZ_SEED ?? 20261201);

/** mulberry32: small, seeded, the same sequence on both runtimes. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Message = { [key: string]: Json };

/** Every request shape the server answers, valid as written. */
const SHAPES: readonly { name: string; message: Message }[] = [
  {
    name: "initialize",
    message: {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "fuzz", version: "1.0.0" } },
    },
  },
  { name: "ping", message: { jsonrpc: "2.0", id: 1, method: "ping" } },
  {
    name: "ping with _meta",
    message: { jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: { progressToken: 1 } } },
  },
  { name: "tools/list", message: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} } },
  {
    name: "tools/call",
    message: {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "fixture_echo",
        arguments: { text: "hi", count: 2, nested: { flag: true }, tags: ["a"] },
        _meta: { progressToken: "p" },
      },
    },
  },
  {
    name: "tools/call with progress",
    message: {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "fixture_progress", arguments: { steps: 1 }, _meta: { progressToken: 7 } },
    },
  },
  {
    name: "logging/setLevel",
    message: { jsonrpc: "2.0", id: 1, method: "logging/setLevel", params: { level: "error" } },
  },
  { name: "unknown method", message: { jsonrpc: "2.0", id: 1, method: "resources/list", params: {} } },
  { name: "notification sent with an id", message: { jsonrpc: "2.0", id: 1, method: "notifications/initialized" } },
  {
    name: "cancellation sent with an id",
    message: { jsonrpc: "2.0", id: 1, method: "notifications/cancelled", params: { requestId: 424242 } },
  },
];

/** Paths never mutated: a huge or infinite step count makes a call that runs until its timeout. */
const KEEP = new Set(["params.arguments.steps"]);

/** A replacement for a field: raw JSON text, or undefined to drop the field. */
type Mutation = { name: string; raw: (value: Json) => string | undefined };

const deepArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);

const MUTATIONS: readonly Mutation[] = [
  { name: "dropped", raw: () => undefined },
  {
    name: "wrong type",
    raw: (value) =>
      typeof value === "string" ? "42" : typeof value === "number" ? JSON.stringify(String(value)) : '"wrong"',
  },
  { name: "null", raw: () => "null" },
  { name: "object", raw: () => '{"x":1}' },
  { name: "array", raw: () => '[1,"a",null]' },
  { name: "empty string", raw: () => '""' },
  { name: "huge string", raw: () => JSON.stringify("x".repeat(200_000)) },
  { name: "lone surrogate", raw: () => '"\\ud800\\u0000"' },
  { name: "deep array", raw: () => deepArray(5000) },
  { name: "deep object", raw: () => deepObject(300) },
  { name: "just under the depth limit", raw: () => deepArray(100) },
  { name: "zero", raw: () => "0" },
  { name: "negative zero", raw: () => "-0" },
  { name: "negative", raw: () => "-1" },
  { name: "fraction", raw: () => "1.5" },
  { name: "overflow to infinity", raw: () => "1e309" },
  { name: "underflow to zero", raw: () => "1e-400" },
  { name: "beyond safe integers", raw: () => "9007199254740993" },
  { name: "true", raw: () => "true" },
  { name: "extra member", raw: (value) => extraMember(value) },
];

function extraMember(value: Json): string {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return JSON.stringify({ ...value, unexpected: { by: "anyone" } });
  }
  return JSON.stringify([value, value]);
}

/** The dotted paths of every field of `message`, parents before children. */
function fieldPaths(value: Json, prefix: string[] = []): string[][] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [];
  const out: string[][] = [];
  for (const [key, child] of Object.entries(value)) {
    const path = [...prefix, key];
    if (KEEP.has(path.join("."))) continue;
    out.push(path, ...fieldPaths(child, path));
  }
  return out;
}

/** The message with each (path, mutation) applied, as one JSON line; its id replaced by `id` first. */
function mutate(message: Message, id: Json, changes: readonly { path: string[]; mutation: Mutation }[]): string {
  const copy = structuredClone({ ...message, id }) as Message;
  const raws: string[] = [];
  for (const { path, mutation } of changes) {
    let parent: Json = copy;
    for (const key of path.slice(0, -1)) {
      parent = (parent as Record<string, Json> | null)?.[key] ?? null;
    }
    if (typeof parent !== "object" || parent === null || Array.isArray(parent)) continue;
    const key = path[path.length - 1];
    if (!(key in parent)) continue;
    const raw = mutation.raw(parent[key]);
    if (raw === undefined) {
      delete parent[key];
    } else {
      parent[key] = `\u0001raw${raws.length}\u0001`;
      raws.push(raw);
    }
  }
  let line = JSON.stringify(copy);
  raws.forEach((raw, i) => (line = line.replace(JSON.stringify(`\u0001raw${i}\u0001`), () => raw)));
  return line;
}

/** An id as the server keys it: 1 and "1" differ, 1 and 1.0 do not. */
function idKey(id: unknown): string | undefined {
  if (typeof id === "string") return `s${id}`;
  if (typeof id === "number" && Number.isFinite(id)) return `n${id}`;
  return undefined;
}

/** The key of the answer a line calls for, or undefined when it calls for none (a notification, a response). */
function expectedAnswer(line: string): string | undefined {
  const message = JSON.parse(line) as unknown;
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  if (!("id" in m)) return undefined;
  // A message with an id and no method is a response to the server, unless it is neither a result nor an error.
  if (!("method" in m) && ("result" in m || "error" in m)) return undefined;
  return idKey(m.id);
}

/** Checks every stdout line and counts the answers by id key. */
function answersOf(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line);
    } catch {
      assert.fail(`stdout carries a line that is not JSON: ${line.slice(0, 120)}`);
    }
    assert.equal(message.jsonrpc, "2.0", `stdout line is JSON-RPC 2.0: ${line.slice(0, 120)}`);
    if (typeof message.method === "string") {
      assert.ok(!("id" in message), `the server sends only notifications: ${line.slice(0, 120)}`);
      continue;
    }
    assert.ok(
      ("result" in message) !== ("error" in message),
      `a response has a result or an error: ${line.slice(0, 120)}`,
    );
    if ("error" in message) {
      const code = (message.error as { code?: unknown }).code;
      // -32603 would mean something inside threw: every bad input has a code of its own.
      assert.ok([-32700, -32600, -32601, -32602].includes(code as number), `error code ${code}: ${line.slice(0, 300)}`);
    }
    const key = idKey(message.id);
    if (key !== undefined) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe(`every request is answered exactly once (${runtimeName}, seed ${SEED})`, () => {
  it("mutates each field of each request shape, one at a time and in random combinations", async () => {
    const raw = startRaw({ env: { WARDEN_TOOLS_DIR: fixtureToolsDir } });
    try {
      const expected = new Map<string, number>();
      const expect = (line: string) => {
        const key = expectedAnswer(line);
        if (key !== undefined) expected.set(key, (expected.get(key) ?? 0) + 1);
        return key;
      };
      let next = 1000;
      // Lock step: each line, then a ping; the ping's answer and the line's (when due) must both come.
      const sendAndWait = async (line: string, label: string) => {
        const key = expect(line);
        const sentinel = `sentinel-${next++}`;
        raw.send(line);
        raw.request({ jsonrpc: "2.0", id: sentinel, method: "ping" });
        await raw.next((m) => m.id === sentinel, 10_000);
        if (key !== undefined) {
          await raw.next((m) => idKey(m.id) === key && !("method" in m), 10_000).catch(() => {
            assert.fail(`no answer to ${label}: ${line.slice(0, 200)}`);
          });
        }
      };

      let single = 0;
      for (const shape of SHAPES) {
        for (const path of fieldPaths(shape.message)) {
          for (const mutation of MUTATIONS) {
            // A unique id, unless the id itself is what is mutated.
            await sendAndWait(
              mutate(shape.message, next++, [{ path, mutation }]),
              `${shape.name} with ${path.join(".")} ${mutation.name}`,
            );
            single++;
          }
        }
      }

      // Back to back, without waiting: several mutations at once, ids that repeat while in flight.
      const rand = random(SEED);
      const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)];
      const burst: string[] = [];
      // A cancellation could hit a request in flight, which then rightly gets no answer: not in the burst.
      const shapes = SHAPES.filter((shape) => shape.message.method !== "notifications/cancelled");
      for (let i = 0; i < 300; i++) {
        const shape = pick(shapes);
        const paths = fieldPaths(shape.message);
        const changes = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
          path: pick(paths),
          mutation: pick(MUTATIONS),
        }));
        // Every fifth id repeats, so that some requests share an id while both are in flight.
        burst.push(mutate(shape.message, i % 5 === 0 ? 7 : next++, changes));
      }
      const keys = burst.map(expect);
      raw.send(burst.join("\n"));
      for (const key of new Set(keys)) {
        if (key === undefined) continue;
        const want = keys.filter((k) => k === key).length;
        for (let n = 0; n < want; n++) await raw.next((m) => idKey(m.id) === key && !("method" in m), 10_000);
      }

      // Still serving: a last ping, then a clean exit once input ends.
      raw.request({ jsonrpc: "2.0", id: "last", method: "ping" });
      await raw.next((m) => m.id === "last");
      expected.set("slast", 1);
      raw.closeStdin();
      const { code } = await raw.exited();
      assert.equal(code, 0, `the server exits cleanly; stderr:\n${raw.stderr().slice(-2000)}`);

      const answers = answersOf(raw.lines());
      for (const [key, want] of expected) {
        assert.equal(answers.get(key) ?? 0, want, `answers to id ${key.slice(0, 80)}`);
      }
      for (const [key, got] of answers) {
        if (key.startsWith("ssentinel-")) continue;
        assert.ok(expected.has(key), `an answer to id ${key.slice(0, 80)}, which no request carried (${got})`);
      }
      assert.ok(single > 500, `${single} single mutations sent`);
    } finally {
      raw.kill();
    }
  });
});
