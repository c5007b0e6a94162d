// Telemetry is opt-in (WARDEN_OTEL_ENABLED=1 with an OTLP endpoint): what a call tells it, and how it starts. Off,
// nothing here loads the OpenTelemetry SDK (core/governance/otel.ts) and a call pays one comparison with null.
// What it records is the call's shape (its tool, risk class, protocol version, request id, duration, error code),
// never an argument, a path, a project or a principal.
import type { TelemetrySettings } from "../config.ts";
import { log } from "../log.ts";
import type { Telemetry } from "./otel.ts";

export type { CallOutcome, CallSpanFacts, Telemetry } from "./otel.ts";

/** How long a stopping server waits for its telemetry to be exported. */
export const TELEMETRY_SHUTDOWN_MS = 5000;

/** The error codes of a call the policy refused before its tool ran. */
const DENIALS = new Set(["policy_denied", "policy_unavailable", "risk_class_disabled"]);

/** Whether a result's error code is the policy's refusal. */
export const isDenial = (errorCode: string | null): boolean => errorCode !== null && DENIALS.has(errorCode);

/** Loads the OpenTelemetry SDK and starts it; it connects to nothing until it has something to export. */
export async function startTelemetry(
  settings: TelemetrySettings,
  facts: { readonly serviceVersion: string; readonly instanceId: string },
): Promise<Telemetry> {
  const { startOtel } = await import("./otel.ts");
  const telemetry = startOtel({ ...settings, ...facts, log });
  log("info", "telemetry", {
    traces: settings.tracesEndpoint,
    metrics: settings.metricsEndpoint,
    exportIntervalMs: settings.exportIntervalMs,
  });
  return telemetry;
}
