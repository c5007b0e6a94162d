// Telemetry is opt-in (WARDEN_OTEL_ENABLED=1 with an OTLP endpoint): what a call tells it, and how it starts. Off,
// nothing here loads the OpenTelemetry SDK (core/governance/otel.ts) and a call pays one comparison with null.
// What it records is the call's shape (its tool, risk class, protocol version, request id, duration, error code),
// never an argument, a path, a project or a principal.
import type { TelemetrySettings } from "../config.ts";
import { log } from "../log.ts";
import type { RiskClass } from "../tool.ts";

/** What a tools/call's span and metrics are made of. */
export interface CallSpanFacts {
  readonly tool: string;
  readonly risk: RiskClass;
  readonly requestId: string | number | null;
  readonly protocolVersion: string;
  readonly transport: "stdio" | "http";
  /** The W3C trace context the request's `_meta` carried, if any. */
  readonly traceparent: string | null;
  readonly tracestate: string | null;
}

/** How a call ended, for its span's status and the metrics. */
export interface CallOutcome {
  /** The result's error code (`warden/error_code`), null for an answer. */
  readonly errorCode: string | null;
  /** Whether the policy refused it before the tool ran. */
  readonly denied: boolean;
}

export interface Telemetry {
  /** Begins a call's span; the function it returns ends it. */
  callStarted(facts: CallSpanFacts): (outcome: CallOutcome) => void;
  /** Exports what is pending, for at most `timeoutMs`; what is not out by then is dropped (and logged). */
  shutdown(timeoutMs: number): Promise<void>;
}

/** What the SDK is started with. */
export interface TelemetryStart extends TelemetrySettings {
  readonly serviceVersion: string;
  readonly instanceId: string;
  readonly log: typeof log;
}

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
