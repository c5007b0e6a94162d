// The operator's own policy engine (`--policy-url`): an Open Policy Agent, or anything that answers as its data API
// does (`POST <url>` with `{"input": …}`, answered `{"result": …}`). warden asks it before every tools/call that
// warden's own policy (policy.ts) lets through, and denies on any failure: unreachable, slower than
// `--policy-timeout`, an HTTP error, an answer that is not a decision. The input says who calls which tool in which
// project, with the sha256 of the arguments, never the arguments.
import type { Agent } from "node:http";
import { boundedBody, concatBytes } from "../bytes.ts";
import type { PolicyEngineSettings } from "../config.ts";
import { messageOf } from "../errors.ts";
import { platform } from "../platform/mod.ts";
import type { RiskClass } from "../tool.ts";

/** What the engine is asked; its field names are its policies' interface (README, "Policy engine"). */
export interface PolicyInput {
  /** `tools/call` for a call; `projects/list` for whether a project is shown to the principal (host_context). */
  readonly action: "tools/call" | "projects/list";
  readonly tool: string | null;
  readonly risk: RiskClass | null;
  readonly plugin: { readonly id: string; readonly manifest_digest: string } | null;
  readonly principal: string | null;
  readonly project_id: string | null;
  /** `sha256:<hex>` of the arguments' canonical JSON, as the ledger writes it; null for projects/list. */
  readonly args_sha256: string | null;
  readonly transport: "stdio" | "http" | "cli";
}

/** The engine's decision, and what it took. */
export interface PolicyDecision {
  readonly allow: boolean;
  /** What the policy gave as its reasons (at most MAX_REASONS, each at most MAX_REASON_CHARS), or why it failed. */
  readonly reasons: readonly string[];
  /** Why there is no decision of the policy's own (the denial is warden's default); null when it answered. */
  readonly failure: string | null;
  /** How long the question took, in milliseconds. */
  readonly latencyMs: number;
}

const MAX_REASONS = 10;
const MAX_REASON_CHARS = 500;
/** The most of an answer read: a decision is a few hundred bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A reason well formed whatever the engine sent (a lone surrogate), cut to MAX_REASON_CHARS between characters. */
function cutReason(text: string): string {
  const whole = text.toWellFormed();
  if (whole.length <= MAX_REASON_CHARS) return whole;
  const end = /[\uD800-\uDBFF]/.test(whole[MAX_REASON_CHARS - 1]) ? MAX_REASON_CHARS - 1 : MAX_REASON_CHARS;
  return whole.slice(0, end);
}

/**
 * The decision of a `result`: `true` or `false`, or an object with a boolean `allow` and, optionally, `reasons` (a
 * list of strings) or `reason` (one), or a `deny` set of messages (which denies when not empty). Null when it is none
 * of these: an undefined document (a wrong path, a policy not loaded) answers `{}`, which is no decision.
 */
export function decisionOf(result: unknown): { allow: boolean; reasons: string[] } | null {
  if (typeof result === "boolean") return { allow: result, reasons: [] };
  if (typeof result !== "object" || result === null || Array.isArray(result)) return null;
  const { allow, reasons, reason, deny } = result as Record<string, unknown>;
  const texts = (value: unknown): string[] | null =>
    value === undefined
      ? []
      : typeof value === "string"
      ? [value]
      : Array.isArray(value) && value.every((item) => typeof item === "string")
      ? value
      : null;
  const given = texts(reasons);
  const one = texts(reason);
  const denials = texts(deny);
  if (given === null || one === null || denials === null) return null;
  const all = [...given, ...one, ...denials].slice(0, MAX_REASONS).map(cutReason);
  if (typeof allow === "boolean") return { allow: allow && denials.length === 0, reasons: all };
  if (deny !== undefined) return { allow: denials.length === 0, reasons: all };
  return null;
}

/** Kept-alive connections to the engine, one pool per scheme: a decision is asked for on every call. */
const agents = new Map<string, Agent>();

/**
 * POSTs `body` to `url` and reads the answer (null past MAX_ANSWER_BYTES). Under node, node:http with its connections
 * kept alive: node's fetch cost a call 20 to 25% more than it (scripts/bench/policy.mjs: 930 to 1170 µs of asking
 * against 690 to 930); under deno, fetch, which cost 300 to 460 µs against node:http's 480 to 575.
 */
async function post(url: URL, body: string, timeoutMs: number): Promise<{ status: number; text: string | null }> {
  if (platform().runtime.name === "deno") {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "manual",
    });
    // Read up to the cap, and no further: an answer that goes on is cut off, not held.
    const bytes = await boundedBody(response, MAX_ANSWER_BYTES);
    return { status: response.status, text: bytes === null ? null : new TextDecoder().decode(bytes) };
  }
  const secure = url.protocol === "https:";
  const http = secure ? await import("node:https") : await import("node:http");
  let agent = agents.get(url.protocol);
  if (!agent) agents.set(url.protocol, agent = new http.Agent({ keepAlive: true, maxSockets: 64 }));
  const bytes = new TextEncoder().encode(body);
  return await new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", accept: "application/json", "content-length": bytes.byteLength },
      signal: AbortSignal.timeout(timeoutMs),
    }, (response) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      response.on("data", (chunk: Uint8Array) => {
        size += chunk.byteLength;
        if (size <= MAX_ANSWER_BYTES) return void chunks.push(chunk);
        // An answer that goes on is cut off, not read.
        resolve({ status: response.statusCode ?? 0, text: null });
        response.destroy();
      });
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          text: size > MAX_ANSWER_BYTES ? null : new TextDecoder().decode(concatBytes(chunks, size)),
        }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(bytes);
  });
}

/** Asks the engine; never throws: a failure is a denial that says why. */
export async function askPolicy(settings: PolicyEngineSettings, input: PolicyInput): Promise<PolicyDecision> {
  const started = performance.now();
  const failed = (failure: string): PolicyDecision => ({
    allow: false,
    reasons: [],
    failure,
    latencyMs: Math.round((performance.now() - started) * 1000) / 1000,
  });
  let answered: { status: number; text: string | null };
  try {
    answered = await post(new URL(settings.url), JSON.stringify({ input }), settings.timeoutMs);
  } catch (error) {
    const name = (error as { name?: unknown }).name;
    return failed(
      name === "TimeoutError" || name === "AbortError"
        ? `the policy engine did not answer within ${settings.timeoutMs} ms (--policy-timeout)`
        : `the policy engine could not be reached (${messageOf(error).split("\n")[0]})`,
    );
  }
  const { status, text } = answered;
  // A redirect is not followed: the decision is the operator's URL's, or none.
  if (status < 200 || status > 299) return failed(`the policy engine answered HTTP ${status}`);
  if (text === null) return failed(`the policy engine's answer is over ${MAX_ANSWER_BYTES} bytes`);
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return failed("the policy engine's answer is not JSON");
  }
  const decision = decisionOf((answer as { result?: unknown } | null)?.result);
  if (decision === null) {
    return failed(
      'the policy engine\'s answer is not a decision (expected {"result": true|false} or {"result": {"allow": …}}; ' +
        "an undefined document answers {}: check the policy's path in --policy-url)",
    );
  }
  return { ...decision, failure: null, latencyMs: Math.round((performance.now() - started) * 1000) / 1000 };
}
