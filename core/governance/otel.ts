// OpenTelemetry for warden, loaded only when WARDEN_OTEL_ENABLED=1 (core/governance/telemetry.ts decides): a span per
// tools/call and three metrics, exported over OTLP/HTTP (JSON) in the background by the OpenTelemetry SDK, which
// reads the standard OTEL_* variables (endpoint, headers, timeout, sampler, batch delays). It imports nothing of
// warden's core at run time (types only): the node build makes it a file of its own (dist/vendor/otel.js) that a
// server without telemetry never reads, and what it needs of the core (the log) is handed to it. The types of what a
// call tells telemetry live here, so that core/governance/telemetry.ts, which loads this module, imports from it alone.
import {
  type Attributes,
  defaultTextMapGetter,
  diag,
  type DiagLogger,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { TelemetrySettings } from "../config.ts";
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
  /** warden's log (core/log.ts), handed in: this module imports nothing of the core at run time. */
  readonly log: (level: "warn" | "info" | "debug", event: string, fields: Record<string, unknown>) => void;
}

/** The seconds buckets of the call duration histogram, as the MCP semantic conventions advise. */
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** Starts the SDK: nothing is sent until a span ends or the first export interval passes. */
export function startOtel(start: TelemetryStart): Telemetry {
  const { log } = start;
  const report = (level: "warn" | "debug") => (message: string, ...args: unknown[]) =>
    log(level, "otel", {
      message: [message, ...args.map((a) => a instanceof Error ? a.message : String(a))].join(" "),
    });
  // The SDK's own complaints (an export that failed, a collector that timed out) become warden's log lines, on
  // stderr: the SDK's default console logger would write to stdout, which is the protocol's.
  const logger: DiagLogger = {
    error: report("warn"),
    warn: report("warn"),
    info: report("debug"),
    debug: () => {},
    verbose: () => {},
  };
  diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });

  // Neither the process detector (its command line names paths) nor the host one: the service, its version and this
  // process's instance id, and what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES add.
  const resource = defaultResource()
    .merge(resourceFromAttributes({
      "service.name": "warden",
      "service.version": start.serviceVersion,
      "service.instance.id": start.instanceId,
    }))
    .merge(detectResources({ detectors: [envDetector] }));
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(),
        exportIntervalMillis: start.exportIntervalMs,
        exportTimeoutMillis: Math.min(start.exportTimeoutMs, start.exportIntervalMs),
      }),
    ],
  });
  const tracer = tracerProvider.getTracer("warden", start.serviceVersion);
  const meter = meterProvider.getMeter("warden", start.serviceVersion);
  const duration = meter.createHistogram("mcp.server.operation.duration", {
    unit: "s",
    description: "How long a tools/call took, from its arrival to its answer",
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const denials = meter.createCounter("warden.policy.denials", {
    unit: "{call}",
    description: "tools/call requests the policy refused before the tool ran",
  });
  const inFlight = meter.createUpDownCounter("warden.calls.in_flight", {
    unit: "{call}",
    description: "tools/call requests being answered now",
  });
  const propagator = new W3CTraceContextPropagator();

  return {
    callStarted(facts: CallSpanFacts) {
      const started = performance.now();
      const carrier = { traceparent: facts.traceparent ?? undefined, tracestate: facts.tracestate ?? undefined };
      // A trace the client began (its traceparent in the request's _meta) goes on; a malformed one is ignored.
      const parent = facts.traceparent ? propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter) : ROOT_CONTEXT;
      const common: Attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": facts.tool,
        "warden.risk_class": facts.risk,
      };
      const span = tracer.startSpan(`tools/call ${facts.tool}`, {
        kind: SpanKind.SERVER,
        attributes: {
          ...common,
          "gen_ai.operation.name": "execute_tool",
          "mcp.protocol.version": facts.protocolVersion,
          "network.transport": facts.transport === "http" ? "tcp" : "pipe",
          ...(facts.requestId !== null ? { "jsonrpc.request.id": String(facts.requestId) } : {}),
        },
      }, parent);
      inFlight.add(1, common);
      return (outcome) => {
        const seconds = (performance.now() - started) / 1000;
        const errorType = outcome.errorCode ?? undefined;
        if (errorType !== undefined) {
          span.setAttribute("error.type", errorType);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
        inFlight.add(-1, common);
        duration.record(seconds, errorType !== undefined ? { ...common, "error.type": errorType } : common);
        if (outcome.denied) denials.add(1, { ...common, "warden.denial.reason": errorType ?? "denied" });
      };
    },
    async shutdown(timeoutMs: number) {
      const done = Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">((resolve) => timer = setTimeout(() => resolve("timeout"), timeoutMs));
      const first = await Promise.race([done, timedOut]);
      clearTimeout(timer); // a shutdown that finished first must not keep the process for the rest of the timeout
      if (first === "timeout") {
        log("warn", "otel", { message: `telemetry not exported within ${timeoutMs} ms of shutdown; dropped` });
      }
    },
  };
}
