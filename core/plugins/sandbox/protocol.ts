// The messages between the host and a plugin's child: newline-delimited JSON
// on the child's stdin and stdout. Both ends ship together (child.ts is the
// other end), so the names are internal. The host trusts nothing the child
// writes: checkMessage is the only way a line becomes a message.
//
// Host → child: {type:"load", code, rootIds, maxMessageBytes}, {type:"call",
// id, token, tool, args}, {type:"cancel", callId}, {type:"host-reply", id, ok,
// value | error:{code, message}}.
// Child → host: {type:"loaded", ok, tools | error:{message}}, {type:"result",
// callId, token, ok, value | error:{message, code?, kind?}},
// {type:"host-request", id, callId, token, op, args}, {type:"progress",
// callId, token, progress, total?, message?}, {type:"log", callId, token,
// level, data}. A host-request asks the host for what the plugin cannot do
// itself (op: readText, list, glob, stat, stats, write, spawn or fetch; see
// requests.ts); every message about a call carries that call's token.
import { received } from "../../errors.ts";
import { CLIENT_LOG_LEVELS, type ClientLogLevel } from "../../tool.ts";

const LOG_LEVELS: ReadonlySet<string> = new Set(CLIENT_LOG_LEVELS);

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

function isOptional(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || value === null || check(value);
}

export const isString = (value: unknown) => typeof value === "string";
const isFiniteNumber = (value: unknown) => typeof value === "number" && Number.isFinite(value);

/** A message from the child whose fields have been checked. */
export type ChildMessage =
  | { type: "loaded"; ok: true; tools: string[] }
  | { type: "loaded"; ok: false; error: { message: string } }
  | { type: "result"; callId: number; token: string; ok: true; value: unknown }
  | {
    type: "result";
    callId: number;
    token: string;
    ok: false;
    error: { message: string; code?: string; kind?: string };
  }
  | { type: "host-request"; id: number; callId: number; token: string; op: string; args: unknown[] }
  | {
    type: "progress";
    callId: number;
    token: string;
    progress: number;
    total?: number | null;
    message?: string | null;
  }
  | { type: "log"; callId: number; token: string; level: ClientLogLevel; data: unknown };

/** The checked message, or why it is not one. */
export function checkMessage(value: unknown): ChildMessage | string {
  if (!isRecord(value) || typeof value.type !== "string") {
    return `it sent a line that is not a message: ${received(value)}`;
  }
  const m = value;
  const errorOk = (e: unknown) => isRecord(e) && typeof e.message === "string";
  let valid: boolean;
  switch (m.type) {
    case "loaded":
      valid = m.ok === true ? Array.isArray(m.tools) && m.tools.every(isString) : m.ok === false && errorOk(m.error);
      break;
    case "result":
      valid = isId(m.callId) && isString(m.token) && (m.ok === true || (m.ok === false && errorOk(m.error)));
      break;
    case "host-request":
      valid = isId(m.id) && isId(m.callId) && isString(m.token) && typeof m.op === "string" &&
        Array.isArray(m.args);
      break;
    case "progress":
      valid = isId(m.callId) && isString(m.token) && isFiniteNumber(m.progress) &&
        isOptional(m.total, isFiniteNumber) && isOptional(m.message, isString);
      break;
    case "log":
      valid = isId(m.callId) && isString(m.token) && typeof m.level === "string" && LOG_LEVELS.has(m.level);
      break;
    default:
      return `it sent a message of unknown type ${received(m.type)}`;
  }
  return valid ? (m as unknown as ChildMessage) : `it sent an invalid "${m.type}" message: ${received(m)}`;
}
