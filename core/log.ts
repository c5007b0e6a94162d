// Structured log lines on stderr. stdout belongs to the protocol, so nothing
// here may ever write to it.
import { platform } from "./platform/mod.ts";

/** Severity of a log line, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

export const LOG_LEVELS: readonly LogLevel[] = Object.freeze(["debug", "info", "warn", "error"]);

let threshold = LOG_LEVELS.indexOf("info");

/** Lines below `level` are dropped from now on. */
export function setLogLevel(level: LogLevel): void {
  threshold = LOG_LEVELS.indexOf(level);
}

/** Writes one JSON line to stderr: time, level, event name and fields. */
export function log(level: LogLevel, event: string, fields: Record<string, unknown> = {}): void {
  if (LOG_LEVELS.indexOf(level) < threshold) return;
  const line = JSON.stringify({ time: new Date().toISOString(), level, event, ...fields });
  platform().writeStderr(line + "\n");
}
