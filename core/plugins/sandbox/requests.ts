// What the host answers to a plugin's host-request: file reads against the
// plugin's RootFs (already confined to its roots), spawn, fetch and write
// through the host context of the call, which checks the plugin's class and
// manifest declarations. Every argument is checked here first, since the
// child is not trusted, and what goes back to the plugin loses host paths and
// addresses.
import { problem, received, WardenError } from "../../errors.ts";
import { DEFAULT_MAX_READ_BYTES, type GlobOptions, type RootFs } from "../../doors/roots.ts";
import type { FetchRequest, FetchResult, WriteResult } from "../../doors/egress.ts";
import type { SpawnRequest, SpawnResult } from "../../doors/spawn.ts";
import { isRecord, isString } from "./protocol.ts";

/**
 * The host tool context's own capability methods, which check the plugin's
 * class and manifest declarations: the child's ctx.spawn, ctx.fetch and
 * ctx.fs.write are requests answered by these.
 */
export interface PluginCapabilities {
  spawn(argv: readonly string[], options?: SpawnRequest): Promise<SpawnResult>;
  fetch(url: string, request?: FetchRequest): Promise<FetchResult>;
  write(root: string, file: string, data: string): Promise<WriteResult>;
}

/** `what`: the kind of request, "file" (reads and writes), "spawn" or "fetch". */
function invalidRequest(detail: string, what = "file"): WardenError {
  return new WardenError("invalid_arguments", problem(`Invalid ${what} request`, detail));
}

function stringArg(value: unknown, name: string, what = "file"): string {
  if (typeof value !== "string") throw invalidRequest(`${name} must be a string, received ${received(value)}`, what);
  return value;
}

function globOptions(value: unknown): GlobOptions {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw invalidRequest(`glob options must be an object, received ${received(value)}`);
  const out: { cwd?: string; gitignore?: boolean; dot?: boolean; ignore?: string[] } = {};
  for (const [key, option] of Object.entries(value)) {
    if (option === undefined || option === null) continue;
    if (key === "cwd" && typeof option === "string") out.cwd = option;
    else if ((key === "gitignore" || key === "dot") && typeof option === "boolean") out[key] = option;
    else if (key === "ignore" && Array.isArray(option) && option.every(isString)) out.ignore = option as string[];
    else throw invalidRequest(`glob option ${received(key)} is unknown or has the wrong type`);
  }
  return out;
}

/** Host requests the call's host context answers (the others are file reads, answered by the plugin's RootFs). */
export const CAPABILITY_OPS = ["spawn", "fetch", "write"];

/** Runs a spawn, fetch or write request through the host context, which checks class and declarations. */
export function runCapabilityRequest(
  id: string,
  capabilities: PluginCapabilities | undefined,
  op: string,
  args: unknown[],
): Promise<unknown> {
  if (!capabilities) {
    return Promise.reject(
      new WardenError(
        "capability_denied",
        problem(`Plugin "${id}" may not use ${op}`, "the host offers it no capabilities"),
      ),
    );
  }
  const [first, second, third] = args;
  const options = (value: unknown) => (isRecord(value) ? value : {});
  switch (op) {
    case "spawn":
      if (!Array.isArray(first) || !first.every(isString)) {
        throw invalidRequest(`argv must be an array of strings, received ${received(first)}`, "spawn");
      }
      return capabilities.spawn(first as string[], options(second) as SpawnRequest);
    case "fetch":
      return capabilities.fetch(stringArg(first, "url", "fetch"), options(second) as FetchRequest);
    default:
      return capabilities.write(stringArg(first, "root"), stringArg(second, "path"), stringArg(third, "data"));
  }
}

/** Runs one file request of a plugin against its confined RootFs. */
export function runFileRequest(fs: RootFs, op: string, args: unknown[]): Promise<unknown> {
  const [root, first, second] = args;
  switch (op) {
    case "readText": {
      let maxBytes = DEFAULT_MAX_READ_BYTES;
      if (isRecord(second) && typeof second.maxBytes === "number" && second.maxBytes > 0) {
        maxBytes = Math.min(Math.floor(second.maxBytes), DEFAULT_MAX_READ_BYTES);
      }
      return fs.readText(stringArg(root, "root"), stringArg(first, "path"), { maxBytes });
    }
    case "list":
      return fs.list(
        stringArg(root, "root"),
        first === undefined || first === null ? undefined : stringArg(first, "dir"),
      );
    case "stat":
      return fs.stat(stringArg(root, "root"), stringArg(first, "path"));
    case "stats":
      if (!Array.isArray(first) || !first.every(isString)) {
        return Promise.reject(invalidRequest(`paths must be an array of strings, received ${received(first)}`));
      }
      return fs.stats(stringArg(root, "root"), first as string[]);
    case "glob": {
      const patterns = typeof first === "string"
        ? first
        : Array.isArray(first) && first.every(isString)
        ? (first as string[])
        : undefined;
      if (patterns === undefined) {
        throw invalidRequest(`patterns must be a string or an array of strings, received ${received(first)}`);
      }
      return fs.glob(stringArg(root, "root"), patterns, globOptions(second));
    }
    default:
      return Promise.reject(invalidRequest(`unknown operation ${received(op)}`));
  }
}

/**
 * Host facts out of a text that leaves for a plugin: absolute paths (the
 * host's layout) and IP addresses (its resolver, its network's private
 * addresses). What a plugin asked for keeps its shape: an origin stays
 * `https://<address>`, a relative path stays.
 */
export function withoutHostFacts(text: string): string {
  return text
    .replace(/(?<=^|[\s"'`(=,[])\/(?!\/)[^\s"'`),;\]]*/g, "<path>")
    .replace(/(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])/g, "<address>")
    .replace(
      /(?<![\w:.])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:.])/gi,
      (match) => match.includes("::") || /[a-f]/i.test(match) ? "<address>" : match,
    );
}

/** The error a plugin sees for a failed host request: host paths and addresses never leave the host. */
export function requestError(op: string, error: unknown): { code: string; message: string } {
  if (error instanceof WardenError) return { code: error.code, message: withoutHostFacts(error.message) };
  const code = (error as { code?: unknown } | null)?.code;
  const what = CAPABILITY_OPS.includes(op) ? `${op[0].toUpperCase()}${op.slice(1)} failed` : "File access failed";
  return {
    code: CAPABILITY_OPS.includes(op) ? "tool_failed" : "fs_failed",
    message: problem(what, typeof code === "string" && /^E[A-Z]+$/.test(code) ? code : "unexpected error"),
  };
}

/** A capability's result as the plugin sees it: a path the host could not remove is not the plugin's to know. */
export function replyValue(op: string, value: unknown): unknown {
  if (op === "spawn" && isRecord(value) && typeof value.scratchLeft === "string") {
    return { ...value, scratchLeft: withoutHostFacts(value.scratchLeft) };
  }
  return value;
}
