// OpenTelemetry, opt-in: an OTLP/HTTP receiver started here takes what warden exports (JSON, as the OTLP
// specification defines it) and the tests read the spans and metrics that arrive: one span per tools/call with the
// MCP semantic conventions' attributes and nothing else, a trace the client began continued, the duration, denial and
// in-flight metrics. A collector that is down blocks neither start-up nor a call, and a stop waits for it only so long.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import process from "node:process";
import { after, before, describe, it } from "node:test";
import {
  childEnv,
  connect,
  eventually,
  fixtureToolsDir,
  freePort,
  httpClient,
  runtimeName,
  runWarden,
  startHttp,
  textOf,
  wardenCommand,
} from "./helpers.ts";

// any: OTLP JSON documents, read field by field in assertions.
// deno-lint-ignore no-explicit-any
type Otlp = any;

/** An OTLP/HTTP receiver: what arrived at /v1/traces and /v1/metrics, parsed. */
interface Receiver {
  readonly endpoint: string;
  readonly traces: Otlp[];
  readonly metrics: Otlp[];
  /** Every span received, flattened with its resource's attributes. */
  spans(): { span: Otlp; resource: Record<string, unknown> }[];
  close(): Promise<void>;
}

/** An attribute list as OTLP JSON writes it (`[{key, value: {stringValue}}]`), as a plain object. */
function attributes(list: Otlp[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a: Otlp) => [a.key, Object.values(a.value)[0]]));
}

async function startReceiver(): Promise<Receiver> {
  const traces: Otlp[] = [];
  const metrics: Otlp[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => {
      if (req.method !== "POST" || !String(req.headers["content-type"]).startsWith("application/json")) {
        res.writeHead(415).end();
        return;
      }
      if (req.url === "/v1/traces") traces.push(JSON.parse(body));
      else if (req.url === "/v1/metrics") metrics.push(JSON.parse(body));
      else return res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    traces,
    metrics,
    spans: () =>
      traces.flatMap((t) =>
        t.resourceSpans.flatMap((rs: Otlp) =>
          rs.scopeSpans.flatMap((ss: Otlp) =>
            ss.spans.map((span: Otlp) => ({ span, resource: attributes(rs.resource?.attributes) }))
          )
        )
      ),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The data points of the metric `name` in every export received. */
function points(receiver: Receiver, name: string): { kind: string; point: Otlp }[] {
  return receiver.metrics.flatMap((m) =>
    m.resourceMetrics.flatMap((rm: Otlp) =>
      rm.scopeMetrics.flatMap((sm: Otlp) =>
        sm.metrics.filter((metric: Otlp) => metric.name === name).flatMap((metric: Otlp) => {
          const kind = Object.keys(metric).find((k) => ["sum", "gauge", "histogram"].includes(k))!;
          return metric[kind].dataPoints.map((point: Otlp) => ({ kind, point }));
        })
      )
    )
  );
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN = "00f067aa0ba902b7";
const SECRET = "an argument that must stay out of telemetry";
/** The attributes a tools/call span carries: the MCP semantic conventions' and warden's risk class, nothing else. */
const SPAN_ATTRIBUTES = [
  "gen_ai.operation.name",
  "gen_ai.tool.name",
  "jsonrpc.request.id",
  "mcp.method.name",
  "mcp.protocol.version",
  "network.transport",
  "warden.risk_class",
];

describe(`telemetry (${runtimeName})`, () => {
  let receiver: Receiver;
  const otel = () => ({
    WARDEN_OTEL_ENABLED: "1",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: "50",
    OTEL_METRIC_EXPORT_INTERVAL: "200",
    WARDEN_PRINCIPAL: "alice@example.com",
    WARDEN_TOOLS_DIR: fixtureToolsDir,
  });
  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());

  it("sends a span per tools/call over stdio, continuing the client's trace, with nothing of its arguments", async () => {
    const session = await connect({ env: otel(), args: ["--disable-tool", "fixture_sleep"] });
    try {
      const echoed = await session.client.callTool({
        name: "fixture_echo",
        arguments: { text: SECRET },
        _meta: { traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01` },
      });
      assert.match(textOf(echoed), new RegExp(SECRET));
      const denied = await session.client.callTool({ name: "fixture_sleep", arguments: { ms: 1 } });
      assert.equal(denied.isError, true);
      assert.ok(
        await eventually(() => receiver.spans().length >= 2, 10_000),
        `spans arrived: ${receiver.spans().length}; stderr:\n${session.stderr()}`,
      );
    } finally {
      await session.close();
    }
    const spans = receiver.spans();
    const echo = spans.find(({ span }) => span.name === "tools/call fixture_echo")!;
    assert.ok(echo, `span names: ${spans.map(({ span }) => span.name)}`);
    assert.equal(echo.span.kind, 2, "SPAN_KIND_SERVER");
    assert.equal(echo.span.traceId, TRACE_ID, "the client's trace goes on");
    assert.equal(echo.span.parentSpanId, PARENT_SPAN);
    const attrs = attributes(echo.span.attributes);
    assert.deepEqual(Object.keys(attrs).sort(), SPAN_ATTRIBUTES);
    assert.deepEqual(
      { ...attrs, "jsonrpc.request.id": typeof attrs["jsonrpc.request.id"] },
      {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "fixture_echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "string",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "pipe",
        "warden.risk_class": "read",
      },
    );
    assert.equal(echo.span.status?.code ?? 0, 0, "an answer is not an error");
    assert.equal(echo.resource["service.name"], "warden");
    assert.ok(!("process.command_args" in echo.resource) && !("host.name" in echo.resource));
    const sleep = spans.find(({ span }) => span.name === "tools/call fixture_sleep")!;
    assert.equal(attributes(sleep.span.attributes)["error.type"], "policy_denied");
    assert.equal(sleep.span.status.code, 2, "STATUS_CODE_ERROR");
    assert.notEqual(sleep.span.traceId, TRACE_ID, "a call with no traceparent begins its own trace");
    // Nothing of the arguments, the roots or the principal anywhere in what was sent.
    const everything = JSON.stringify([receiver.traces, receiver.metrics]);
    for (const secret of [SECRET, "alice@example.com", process.cwd()]) {
      assert.ok(!everything.includes(secret), `telemetry carries ${JSON.stringify(secret)}`);
    }
  });

  it("exports the call duration, the policy's denials and the calls in flight as metrics", async () => {
    assert.ok(await eventually(() => points(receiver, "warden.policy.denials").length > 0, 10_000));
    const durations = points(receiver, "mcp.server.operation.duration");
    assert.ok(durations.length > 0);
    assert.ok(durations.every(({ kind }) => kind === "histogram"));
    const echo = durations.find(({ point }) => attributes(point.attributes)["gen_ai.tool.name"] === "fixture_echo")!;
    assert.equal(Number(echo.point.count), 1);
    assert.ok(Number(echo.point.sum) > 0 && Number(echo.point.sum) < 10, `${echo.point.sum} s`);
    const denial = points(receiver, "warden.policy.denials").at(-1)!;
    assert.deepEqual(attributes(denial.point.attributes), {
      "mcp.method.name": "tools/call",
      "gen_ai.tool.name": "fixture_sleep",
      "warden.risk_class": "read",
      "warden.denial.reason": "policy_denied",
    });
    assert.equal(Number(denial.point.asDouble ?? denial.point.asInt), 1);
    const inFlight = points(receiver, "warden.calls.in_flight");
    assert.ok(
      inFlight.length > 0 && inFlight.every(({ point }) => Number(point.asDouble ?? point.asInt) === 0),
      "none left in flight",
    );
  });

  it("sends the spans of calls over HTTP too", async () => {
    const before = receiver.spans().length;
    const server = await startHttp([], otel());
    try {
      const client = await httpClient(server.url);
      await client.callTool({ name: "fixture_echo", arguments: { text: "over http" } });
      await client.close();
      assert.ok(await eventually(() => receiver.spans().length > before, 10_000));
    } finally {
      await server.stop();
    }
    const span = receiver.spans().slice(before).find(({ span }) => span.name === "tools/call fixture_echo")!;
    assert.equal(attributes(span.span.attributes)["network.transport"], "tcp");
  });

  it("starts, answers and stops without a collector, logging what it dropped", async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const session = await connect({ env: { ...otel(), OTEL_EXPORTER_OTLP_ENDPOINT: nobody } });
    const started = performance.now();
    const echoed = await session.client.callTool({ name: "fixture_echo", arguments: { text: "still answered" } });
    assert.match(textOf(echoed), /still answered/);
    assert.ok(performance.now() - started < 2000, "the call did not wait for the collector");
    assert.ok(
      await eventually(() => /"event":"otel"/.test(session.stderr()), 5000),
      `an export failure is logged:\n${session.stderr()}`,
    );
    await session.close();
  });

  it("exits within its shutdown budget when the collector never answers", async () => {
    // A collector that accepts connections and never answers: the export waits, the stop does not.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { command, args } = wardenCommand([]);
    const child = spawn(command, args, {
      env: childEnv({
        ...otel(),
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(silent.address() as { port: number }).port}`,
      }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const send = (message: unknown) => child.stdin.write(JSON.stringify(message) + "\n");
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "fixture_echo", arguments: { text: "x" } } });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    assert.ok(await eventually(() => stdout.includes('"id":2'), 10_000), stderr);
    const answer = JSON.parse(stdout.split("\n").find((line) => line.includes('"id":2'))!);
    assert.equal(answer.result?.isError, undefined, `the call was answered while the collector hung: ${stdout}`);
    const stopping = performance.now();
    child.stdin.end();
    assert.equal(await exited, 0);
    const took = performance.now() - stopping;
    assert.ok(took < 7000, `stopped in ${Math.round(took)} ms (budget: 5 s of telemetry, then exit)`);
    silent.closeAllConnections();
    silent.close();
  });

  it("refuses telemetry settings it cannot use, naming the variable and the fix", async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ WARDEN_OTEL_ENABLED: "1" }, /WARDEN_OTEL_ENABLED=1 needs a collector.*OTEL_EXPORTER_OTLP_ENDPOINT/],
      [{ WARDEN_OTEL_ENABLED: "yes" }, /Invalid WARDEN_OTEL_ENABLED: expected 1 or 0/],
      [
        { WARDEN_OTEL_ENABLED: "1", OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
        /Invalid OTEL_EXPORTER_OTLP_ENDPOINT: expected an http or https URL/,
      ],
      [
        { WARDEN_OTEL_ENABLED: "1", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
        /Unsupported OTEL_EXPORTER_OTLP_PROTOCOL: warden sends OTLP over HTTP as JSON \(http\/json\)/,
      ],
      [
        { WARDEN_OTEL_ENABLED: "1", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_METRIC_EXPORT_INTERVAL: "soon" },
        /Invalid OTEL_METRIC_EXPORT_INTERVAL/,
      ],
    ];
    for (const [env, why] of cases) {
      const { code, stderr } = await runWarden(["tools"], { env });
      assert.equal(code, 2, JSON.stringify(env));
      assert.match(stderr, why, JSON.stringify(env));
    }
  });
});
