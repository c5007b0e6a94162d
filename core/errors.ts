// One shape for every message a user reads: what failed, a colon, what was
// received, and what to do about it. Tests assert these strings.

/** Machine-readable reason carried beside every message. */
export type ErrorCode =
  | "config_invalid"
  | "tool_load_failed"
  | "invalid_arguments"
  | "invalid_cursor"
  | "unknown_tool"
  | "unknown_root"
  | "project_unknown"
  | "project_ambiguous"
  | "path_refused"
  | "not_found"
  | "too_large"
  | "timeout"
  | "cancelled"
  | "tool_failed"
  | "invalid_output"
  | "invalid_key"
  | "invalid_signature"
  | "invalid_trust_store"
  | "invalid_manifest"
  | "plugin_failed"
  | "capability_denied"
  | "policy_denied"
  | "policy_unavailable"
  | "approval_refused"
  | "approval_required"
  | "risk_class_disabled";

/** An error whose message is meant for the person or agent that caused it. */
export class WardenError extends Error {
  readonly code: ErrorCode;
  /** The error as data besides its message, for the call's `structuredContent`: never a host path. */
  readonly details: Readonly<Record<string, unknown>> | undefined;
  constructor(code: ErrorCode, message: string, details?: Readonly<Record<string, unknown>>) {
    super(message);
    this.name = "WardenError";
    this.code = code;
    this.details = details;
  }
}

/** Renders a received value for a message: JSON, cut to a readable length. */
export function received(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? "undefined" : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Builds a message: `<what>: <detail>` and, when given, `; <fix>`.
 *
 * @example
 * ```ts
 * problem("Invalid --call-timeout", `expected a duration such as 30s, received ${received("abc")}`, "use ms, s or m")
 * // 'Invalid --call-timeout: expected a duration such as 30s, received "abc"; use ms, s or m'
 * ```
 */
export function problem(what: string, detail: string, fix?: string): string {
  return fix ? `${what}: ${detail}; ${fix}` : `${what}: ${detail}`;
}

/** The message of anything thrown, without a stack. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
