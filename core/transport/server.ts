// The MCP server, over stdio or Streamable HTTP. This is the only module that imports
// @modelcontextprotocol/sdk, so moving to another SDK major is a one-file change.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  ErrorCode,
  JSONRPCRequestSchema,
  LATEST_PROTOCOL_VERSION,
  McpError,
  RootsListChangedNotificationSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import type { Ledger } from "../governance/ledger.ts";
import { governedCall } from "../governance/governed_call.ts";
import type { Policy } from "../governance/policy.ts";
import { isDenial, type Telemetry } from "../governance/telemetry.ts";
import { type Catalog, type CatalogEntry, refusedToolProblem } from "../catalog.ts";
import { stopCalls } from "../call/run.ts";
import { resultJson } from "../call/result.ts";
import { messageOf, problem, received } from "../errors.ts";
import { log } from "../log.ts";
import { platform } from "../platform/mod.ts";
import { replaceRoots, type RootFs } from "../doors/roots.ts";
import type { Spawner } from "../doors/spawn.ts";
import type { ManifestDoor } from "../doors/manifests.ts";
import { isId, type JsonRpcMessage, type RequestId, SerializedResult, StdioTransport } from "./stdio.ts";
import { CLIENT_LOG_LEVELS, type ClientLogLevel, type HostFacts } from "../tool.ts";
import type { JobHost } from "../jobs/tools.ts";
import { decide } from "../governance/policy.ts";
import { WardenError } from "../errors.ts";
import { hostAndPort, type HttpSettings } from "../config.ts";
import type { TokenEntry } from "./tokens.ts";
import { PROJECT_HEADER, projectsOfClientRoots } from "../call/projects.ts";
import {
  eraOf,
  type EraRefusal,
  headerMismatch,
  isRefusal,
  META,
  MODERN_VERSION,
  type ModernRequest,
  modernResult,
} from "./eras.ts";

/** What `serve` needs: the frozen catalog and the door tools read through. */
export interface ServeOptions {
  readonly name: string;
  readonly version: string;
  readonly catalog: Catalog;
  readonly fs: RootFs;
  readonly callTimeoutMs: number;
  readonly spawner: Spawner;
  readonly manifests: ManifestDoor;
  readonly policy: Policy;
  readonly ledger: Ledger;
  /** Host facts without what each connection has of its own: transport, protocol version, X-MCP-Project header. */
  readonly host: Omit<HostFacts, "protocolVersion" | "transport" | "projectHeader">;
  /**
   * Start-up work that may wait until the server has answered (the catalog's digest, and plugin checks that cannot
   * change the catalog, see core/main.ts), started once: when the first initialize answer is written, at the first
   * tools/call, or DEFERRED_START_MS after the server listens, whichever comes first. A tools/call waits for it, as
   * tools and the unknown-tool message read `host.catalogDigest` and `host.extensions`, which it fills in.
   */
  readonly deferred?: () => Promise<void>;
  /** Stops what the server started (plugin children) before the process ends. */
  readonly shutdown: () => Promise<void>;
  /** The job queue, when a tool is served as a job: its tools are also MCP tasks. */
  readonly jobs?: JobHost;
  /** Over stdio, the projects are the client's roots when it offers them (--client-roots): `fs` takes them. */
  readonly clientRoots?: boolean;
  /** Serve over Streamable HTTP with these settings and tokens, instead of stdio. */
  readonly http?: { readonly settings: HttpSettings; readonly tokens: readonly TokenEntry[] };
  /** The telemetry each tools/call reports to, once started (WARDEN_OTEL_ENABLED=1); null while there is none. */
  readonly telemetry?: () => Telemetry | null;
  /** How long stopping may take before the process ends anyway (500 ms unless telemetry needs to export). */
  readonly shutdownBudgetMs?: number;
}

type Params = Record<string, unknown> | undefined;

/** MCP's error code for resources/read of a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;
/** When deferred start-up work starts if no initialize came to be answered first. */
const DEFERRED_START_MS = 100;
/** How long calls still running at the end of input get to finish before they are cancelled. */
export const END_OF_INPUT_DRAIN_MS = 2000;
/** After the drain's cancellation, how long answers get to go out before the rest are given up. */
const CANCEL_GRACE_MS = 250;

function invalidParams(message: string): McpError {
  return new McpError(ErrorCode.InvalidParams, message);
}

/** A task request's refusal (unknown id, a full queue, a finished task) as the JSON-RPC error that says it. */
async function taskCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof WardenError) throw invalidParams(error.message);
    throw error;
  }
}

/** A zod issue, as the SDK's schemas report it (zod is the SDK's, not warden's). */
interface SchemaIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly expected?: string;
  readonly maximum?: number | bigint;
  readonly minimum?: number | bigint;
  readonly keys?: readonly string[];
  readonly values?: readonly unknown[];
  readonly errors?: readonly (readonly SchemaIssue[])[];
}

function schemaIssues(error: unknown): readonly SchemaIssue[] | undefined {
  const issues = (error as { name?: unknown; issues?: unknown } | null)?.issues;
  // zod's classic API throws a ZodError, its core (what the SDK's parse uses) a $ZodError.
  const name = (error as Error | null)?.name;
  return (name === "ZodError" || name === "$ZodError") && Array.isArray(issues) && issues.length > 0
    ? issues
    : undefined;
}

const KINDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  object: "an object",
  record: "an object",
  array: "an array",
};

/** What `issue` expected, in words. */
function expectedOf(issue: SchemaIssue): string | undefined {
  if (issue.code === "invalid_type" && issue.expected) return KINDS[issue.expected] ?? issue.expected;
  if (issue.code === "invalid_value" && issue.values) {
    return `one of ${issue.values.map((v) => received(v)).join(", ")}`;
  }
  if (issue.code === "invalid_union" && issue.errors) {
    const each = issue.errors.map((branch) => branch.length === 1 ? expectedOf(branch[0]) : undefined);
    if (each.every((e) => e !== undefined)) return [...new Set(each)].join(" or ");
  }
  return undefined;
}

function pathText(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === "" ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) value = (value as Record<PropertyKey, unknown> | null | undefined)?.[key];
  return value;
}

/**
 * The JSON-RPC error for a message an SDK schema refused: -32600 when the
 * request itself is malformed, -32602 when its params are, with the first
 * problem named (the SDK's own answer is -32603 and a dump of zod issues).
 */
function schemaRefusal(message: unknown, issues: readonly SchemaIssue[]): { code: number; message: string } {
  const envelope = issues.find((issue) => issue.path[0] !== "params");
  const issue = envelope ?? issues[0];
  const where = pathText(issue.path);
  let detail: string;
  if (issue.code === "unrecognized_keys") {
    const keys = (issue.keys ?? []).map((key) => JSON.stringify(key)).join(", ");
    detail = `${where || "the request"} has unexpected member ${keys}`;
  } else {
    const value = valueAt(message, issue.path);
    const expected = expectedOf(issue);
    if (issue.code === "too_big" && issue.maximum !== undefined) {
      detail = `${where} must be at most ${issue.maximum}, received ${received(value)}`;
    } else if (issue.code === "too_small" && issue.minimum !== undefined) {
      detail = `${where} must be at least ${issue.minimum}, received ${received(value)}`;
    } else if (expected === undefined) detail = `${where}: ${issue.message}`;
    else if (value === undefined) detail = `${where} is missing: expected ${expected}`;
    else detail = `${where} must be ${expected}, received ${received(value)}`;
  }
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return envelope
    ? {
      code: ErrorCode.InvalidRequest,
      message: problem(
        "Invalid Request",
        detail + more,
        "a request has jsonrpc, id (a string or an integer), method and params",
      ),
    }
    : { code: ErrorCode.InvalidParams, message: problem("Invalid params", detail + more) };
}

/** What one client's requests share: over stdio the whole process, over HTTP one request. */
interface Connection {
  readonly host: HostFacts;
  /** The policy with this connection's principal (over HTTP, the token's). */
  readonly policy: Policy;
  /** The least severe notifications/message level sent, as its index in CLIENT_LOG_LEVELS. */
  logLevel: number;
  /** The tools/call requests that came task-augmented, by id (see takeTask). */
  readonly asTask: Set<string>;
  /** The client's roots being read as the projects (--client-roots): a call waits for them. */
  projectsReady?: Promise<void> | null;
  /** The requests of the 2026-07-28 era in flight, by id (see eraOf): answered as that revision says. */
  readonly modern: Map<string, ModernRequest>;
}

/** The initialize-era versions, the SDK's own list (the modern one is warden's, core/transport/eras.ts). */
const LEGACY_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;

/** The JSON-RPC error a modern request is refused with. */
function refusalError(refusal: EraRefusal): { code: number; message: string; data?: Record<string, unknown> } {
  return { code: refusal.code, message: refusal.message, ...(refusal.data ? { data: refusal.data } : {}) };
}

const keyOfId = (id: RequestId) => `${typeof id}:${id}`;

/**
 * What the SDK refuses in a task-augmented request it has no task store for (-32603): it never sees params.task. A
 * tools/call that carried one is noted for the handler, which makes it a job when the tool is one; anything else is
 * processed normally, as MCP asks of a receiver that does not take it as a task.
 */
function takeTask(message: JsonRpcMessage, connection: Connection, jobs: boolean): JsonRpcMessage {
  const params = message.params as Params;
  if (params?.task === undefined || !isId(message.id)) return message;
  const { task: _task, ...rest } = params;
  if (jobs && message.method === "tools/call") connection.asTask.add(keyOfId(message.id));
  return { ...message, params: rest };
}

/** The protocol's side of serving, the same over either transport: one SDK Server per connection. */
function protocolOf(options: ServeOptions) {
  const { catalog } = options;
  // Started once; null once done, so that a call pays nothing for it after.
  let pending: Promise<void> | null = null;
  let startDeferred = options.deferred
    ? () => {
      startDeferred = undefined;
      const running = options.deferred!();
      pending = running.then(() => void (pending = null));
      pending.catch(() => {}); // its failure ends the process (core/main.ts)
    }
    : undefined;
  const listResult = new SerializedResult(JSON.stringify(catalog.listResult));
  /**
   * The job host, once the jobs of earlier processes are read (by the deferred start-up work, which tools/call waits
   * for too); `method` is not found where no tool runs as a job.
   */
  const jobsFor = async (method: string, why: string): Promise<JobHost> => {
    startDeferred?.();
    if (pending) await pending;
    if (!options.jobs) throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${method} (${why})`);
    return options.jobs;
  };
  /** Host facts for one connection: its transport, the protocol version it agreed and its X-MCP-Project header. */
  const hostFor = (
    transport: HostFacts["transport"],
    protocolVersion: () => string | null,
    projectHeader: string | null = null,
  ): HostFacts => {
    const facts = options.host;
    return Object.freeze({
      ...facts,
      transport,
      projectHeader,
      get protocolVersion() {
        return protocolVersion();
      },
      // Read when asked, not copied: they are filled in after initialize (options.deferred).
      get catalogDigest() {
        return facts.catalogDigest;
      },
      get extensions() {
        return facts.extensions;
      },
    });
  };

  const capabilities = {
    tools: { listChanged: false },
    logging: {},
    // A tool served as a job may also be called as a task (MCP 2025-11-25), backed by the same job store.
    ...(options.jobs ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    // The jobs' report directories (their result and their programs' logs), read-only and fenced.
    ...(options.jobs ? { resources: {} } : {}),
  };
  const serverInfo = { name: options.name, version: options.version };
  /** server/discover's answer (2026-07-28): the same for every caller while the process lives. */
  const discovered = {
    supportedVersions: [MODERN_VERSION, ...LEGACY_VERSIONS],
    capabilities,
    serverInfo,
    _meta: { [META.serverInfo]: serverInfo },
  };

  /** An SDK Server answering as warden: its tools, tasks, resources and logging, with warden's own validation. */
  const serverFor = (connection: Connection): Server => {
    const { host } = connection;
    let modernHost: HostFacts | undefined;
    /** The host facts of a modern request: the revision it named, whatever an earlier initialize agreed. */
    const hostOf = (modern: ModernRequest | undefined) =>
      modern ? (modernHost ??= hostFor(host.transport, () => MODERN_VERSION, host.projectHeader)) : host;
    const server = new Server(
      serverInfo,
      {
        capabilities,
        // Used only to check elicitation replies, which warden never requests;
        // passing one keeps the SDK from building Ajv (and the build drops Ajv).
        jsonSchemaValidator: {
          getValidator() {
            throw new Error("warden does not elicit input");
          },
        },
      },
    );
    /** What every call gets, besides its own signal, progress and log. */
    const callOptions = {
      projectHeader: host.projectHeader,
      policy: connection.policy,
      ledger: options.ledger,
      fs: options.fs,
      host,
      timeoutMs: options.callTimeoutMs,
      spawner: options.spawner,
      manifests: options.manifests,
    };
    // tools/* and logging/setLevel are answered here, with warden's own
    // validation, instead of the SDK's per-request zod parsing of requests and results.
    server.removeRequestHandler("logging/setLevel");
    server.fallbackRequestHandler = async (request, extra) => {
      const key = keyOfId(extra.requestId);
      const modern = connection.modern.get(key);
      if (modern === undefined) return await answer(request, extra, undefined);
      try {
        return modernResult(request.method, await answer(request, extra, modern)) as Record<string, unknown>;
      } finally {
        connection.modern.delete(key);
      }
    };
    /** A tools/call of `tool` whose name and arguments have been checked: run governed, or started as a task. */
    const callTool = async (
      name: string,
      tool: CatalogEntry,
      args: object | undefined,
      params: Params,
      extra: Parameters<NonNullable<Server["fallbackRequestHandler"]>>[1],
      modern: ModernRequest | undefined,
      onResult?: (errorCode: string | null) => void,
    ): Promise<Record<string, unknown>> => {
      // A task-augmented call of a job tool becomes a job. One the tool or the policy refuses is refused as a
      // JSON-RPC error with the words of the plain call's refusal (recorded in the ledger as that call would be):
      // a client that asked for a task reads a task, or an error.
      // The job starts as `<name>_start` starts it (its arguments, the policy and the tool's own precheck: a
      // request that cannot run is refused now), governed and recorded as that call.
      const taskAugmented = connection.asTask.delete(keyOfId(extra.requestId)) && tool.job === true &&
        options.jobs;
      if (taskAugmented) {
        const starter = catalog.tools.get(`${name}_start`);
        const ready = !decide(connection.policy, tool) && tool.validateInput(args ?? {}).ok &&
          starter !== undefined;
        const answer = await governedCall(ready ? starter : tool, args, callOptions);
        onResult?.(answer._meta?.["warden/error_code"] ?? null);
        const jobId = (answer.structuredContent as { jobId?: unknown } | undefined)?.jobId;
        if (ready && !answer.isError && typeof jobId === "string") {
          return { task: await taskCall(() => Promise.resolve(taskAugmented.task(jobId))) };
        }
        throw invalidParams(answer.content.map((part) => part.text).join("\n"));
      }
      const progressToken = (params?._meta as Params)?.progressToken;
      const validToken = typeof progressToken === "string" || typeof progressToken === "number";
      if (modern?.traceparent) log("debug", "call", { tool: name, traceparent: modern.traceparent });
      // A modern request asks for logs in its own _meta (none without), a legacy one with logging/setLevel.
      const logLevel = modern ? modern.logLevel : connection.logLevel;
      const result = await governedCall(tool, args, {
        ...callOptions,
        host: hostOf(modern),
        signal: extra.signal,
        sendProgress: validToken
          ? (progress, total, message) =>
            extra.sendNotification({
              method: "notifications/progress",
              params: {
                progressToken,
                progress,
                ...(total !== undefined && { total }),
                ...(message !== undefined && { message }),
              },
            })
          : undefined,
        sendLog: (level, data) => {
          if (logLevel === null || CLIENT_LOG_LEVELS.indexOf(level) < logLevel) return;
          void extra.sendNotification({ method: "notifications/message", params: { level, logger: name, data } })
            .catch(() => {});
        },
      });
      onResult?.(result._meta?.["warden/error_code"] ?? null);
      if (result.isError) log("debug", "call_failed", { tool: name, code: result._meta?.["warden/error_code"] });
      const json = resultJson(result);
      // The SDK hands the handler's value to the transport's send untouched.
      return (json === undefined ? result : new SerializedResult(json)) as unknown as Record<string, unknown>;
    };
    /** One request's answer; `modern` when it is of the 2026-07-28 era (its results carry resultType). */
    const answer = async (
      request: { method: string; params?: unknown },
      extra: Parameters<NonNullable<Server["fallbackRequestHandler"]>>[1],
      modern: ModernRequest | undefined,
    ): Promise<Record<string, unknown>> => {
      const params = request.params as Params;
      switch (request.method) {
        case "server/discover":
          if (!modern) throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
          return discovered;
        case "tools/list": {
          if (params?.cursor !== undefined) {
            throw invalidParams(
              `Invalid cursor ${JSON.stringify(params.cursor)}: the catalog has one page; omit the cursor`,
            );
          }
          return listResult as unknown as Record<string, unknown>;
        }
        case "tools/call": {
          startDeferred?.();
          if (pending) await pending;
          if (connection.projectsReady) await connection.projectsReady;
          const name = params?.name;
          if (typeof name !== "string") {
            throw invalidParams("Invalid tools/call: params.name must be the tool name as a string");
          }
          const tool = catalog.tools.get(name);
          if (!tool) {
            throw invalidParams(
              refusedToolProblem(name, host.extensions) ??
                `Unknown tool ${JSON.stringify(name)}: call tools/list for the tools this server has`,
            );
          }
          const args = params?.arguments;
          if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
            throw invalidParams(
              `Invalid tools/call: params.arguments must be an object, received ${JSON.stringify(args)}`,
            );
          }
          const telemetry = options.telemetry?.() ?? null;
          if (telemetry === null) return await callTool(name, tool, args, params, extra, modern);
          const meta = params?._meta as Params;
          const ended = telemetry.callStarted({
            tool: name,
            risk: tool.risk,
            requestId: extra.requestId ?? null,
            protocolVersion: hostOf(modern).protocolVersion ?? "unknown",
            transport: host.transport === "http" ? "http" : "stdio",
            traceparent: typeof meta?.traceparent === "string" ? meta.traceparent : null,
            tracestate: typeof meta?.tracestate === "string" ? meta.tracestate : null,
          });
          // A call that ends in a JSON-RPC error (a task refused) is an error too, of the protocol.
          let errorCode: string | null = "protocol_error";
          try {
            return await callTool(name, tool, args, params, extra, modern, (code) => errorCode = code);
          } finally {
            ended({ errorCode, denied: isDenial(errorCode) });
          }
        }
        case "tasks/get":
        case "tasks/result":
        case "tasks/list":
        case "tasks/cancel": {
          const jobs = await jobsFor(request.method, "no tool runs as a task here");
          if (request.method === "tasks/list") {
            if (params?.cursor !== undefined) {
              throw invalidParams(
                `Invalid cursor ${JSON.stringify(params.cursor)}: the task list has one page; omit the cursor`,
              );
            }
            return { tasks: jobs.tasks() };
          }
          const taskId = params?.taskId;
          if (typeof taskId !== "string") {
            throw invalidParams(`Invalid ${request.method}: params.taskId must be the task id as a string`);
          }
          if (request.method === "tasks/get") return { ...await taskCall(() => Promise.resolve(jobs.task(taskId))) };
          if (request.method === "tasks/cancel") {
            return { ...await taskCall(() => Promise.resolve(jobs.cancelTask(taskId))) };
          }
          const result = await taskCall(() => jobs.taskResult(taskId));
          const meta = (result._meta ?? {}) as Record<string, unknown>;
          return { ...result, _meta: { ...meta, "io.modelcontextprotocol/related-task": { taskId } } };
        }
        case "resources/list":
        case "resources/templates/list":
        case "resources/read": {
          const jobs = await jobsFor(request.method, "no tool runs as a job here");
          if (request.method === "resources/read") {
            try {
              return { contents: [await jobs.readResource(params?.uri)] };
            } catch (error) {
              if (!(error instanceof WardenError)) throw error;
              // A URI that names no report file is the request's fault; one that is not there has MCP's own code; a
              // report that cannot be read is the server's.
              if (error.code === "invalid_arguments" || error.code === "path_refused") {
                throw invalidParams(error.message);
              }
              // 2026-07-28 has no -32002: a resource that is not there is the request's fault too.
              if (error.code === "not_found" && modern) throw invalidParams(error.message);
              throw new McpError(
                error.code === "not_found" ? RESOURCE_NOT_FOUND : ErrorCode.InternalError,
                error.message,
              );
            }
          }
          if (params?.cursor !== undefined) {
            throw invalidParams(
              `Invalid cursor ${JSON.stringify(params.cursor)}: the resource list has one page; omit the cursor`,
            );
          }
          if (request.method === "resources/templates/list") return { resourceTemplates: jobs.resourceTemplates() };
          return { resources: await jobs.resources() };
        }
        case "logging/setLevel": {
          const level = CLIENT_LOG_LEVELS.indexOf(params?.level as ClientLogLevel);
          if (level === -1) {
            throw invalidParams(
              `Invalid log level ${JSON.stringify(params?.level)}: expected one of ${CLIENT_LOG_LEVELS.join(", ")}`,
            );
          }
          connection.logLevel = level;
          return {};
        }
        default:
          throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
      }
    };

    // The SDK parses the requests it answers itself (initialize, ping) and
    // answers a bad one with -32603 and a dump of zod issues: name the field, with -32602.
    const { handlers } = sdkInternals(server);
    for (const [method, handler] of handlers) {
      handlers.set(method, async (request, extra) => {
        try {
          return await handler(request, extra);
        } catch (error) {
          const issues = schemaIssues(error);
          if (!issues) throw error;
          const refusal = schemaRefusal(request, issues);
          throw new McpError(refusal.code, refusal.message);
        }
      });
    }
    // The SDK quotes whole messages in its errors: a log line stays readable (and small) all the same.
    server.onerror = (error) => log("warn", "protocol_error", { error: error.message.slice(0, 500) });
    return server;
  };
  return {
    serverFor,
    hostFor,
    /** Starts the deferred start-up work now, if it has not started. */
    startDeferred: () => startDeferred?.(),
  };
}

const INFO_LEVEL = CLIENT_LOG_LEVELS.indexOf("info");

/**
 * Serves the catalog until the client is gone: over stdin/stdout until stdin closes, or over HTTP (`--http`) until
 * SIGTERM or SIGINT; then exits the process. Resolves once the server is listening.
 */
export function serve(options: ServeOptions): Promise<Served> {
  return options.http ? serveHttp(options, options.http) : serveStdio(options).then(() => ({ url: null }));
}

/** Where the server answers: the HTTP endpoint's URL, or null for stdio. */
export interface Served {
  readonly url: string | null;
}

async function serveStdio(options: ServeOptions): Promise<void> {
  let protocolVersion: string | null = null;
  const protocol = protocolOf(options);
  const connection: Connection = {
    host: protocol.hostFor("stdio", () => protocolVersion),
    policy: options.policy,
    logLevel: INFO_LEVEL,
    asTask: new Set(),
    modern: new Map(),
  };
  // Not setTimeout: deno 2.9 loads its node:timers layer at a process's first setTimeout (~10 ms of CPU), which
  // would come before the initialize answer; AbortSignal.timeout does not (scripts/bench/README.md, start-up).
  if (options.deferred) {
    AbortSignal.timeout(DEFERRED_START_MS).addEventListener("abort", () => protocol.startDeferred());
  }
  const server = protocol.serverFor(connection);
  const { running, cancelled } = sdkInternals(server);
  if (options.clientRoots) followClientRoots(server, options.fs, connection);

  const transport = new StdioTransport();
  // The SDK negotiates the version and the SDK 1.x Server has no public getter for it: it is read from the
  // initialize answer as that goes out (the ids of initialize requests are noted as they come in, below).
  const initializing = new Set<RequestId>();
  const send = transport.send.bind(transport);
  transport.send = (message) => {
    if (initializing.size > 0 && isId(message.id) && !("method" in message) && initializing.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown } | undefined)?.protocolVersion;
      if (typeof version === "string") protocolVersion = version;
      const sent = send(message);
      protocol.startDeferred();
      return sent;
    }
    return send(message);
  };
  // The ledger hashes each row (the next row's `prev`) after the response is out.
  transport.onsent = () => options.ledger.settle();
  transport.onerror = (error) => log("warn", "transport_error", { error: error.message });
  // MCP: a request the client cancelled gets no answer, so the transport stops waiting for one.
  cancelled((id) => {
    if (running.has(id)) transport.forget(id);
  });
  server.onclose = () => {
    log("info", "stopped", { reason: "stdin closed" });
    exitAfter(options.shutdown, options.shutdownBudgetMs);
  };
  // At the end of input: read nothing more, answer every request already read
  // (a call still running gets a short drain, then is cancelled), then close.
  transport.onend = () => {
    const inFlight = transport.inFlight;
    log("info", "input_ended", { inFlight });
    void (async () => {
      if (!(await transport.idle(END_OF_INPUT_DRAIN_MS))) {
        stopCalls(`the client closed its input and the call did not finish within ${END_OF_INPUT_DRAIN_MS} ms`);
        if (!(await transport.idle(CANCEL_GRACE_MS))) {
          transport.abandon(
            ErrorCode.ConnectionClosed,
            "Connection closed: the input ended before this request was answered",
          );
        }
      }
      await transport.close();
    })();
  };
  // Every request with an id gets exactly one answer: one the SDK does not
  // take (its request schema is stricter than JSON-RPC's: a bad _meta, an id
  // that is not an integer, an extra member) is answered here, not dropped.
  // connect() sets onmessage and then starts the transport, which may deliver
  // a message at once: the check goes in between.
  const start = transport.start.bind(transport);
  transport.start = () => {
    checkEveryRequest();
    return start();
  };
  await server.connect(transport);

  function checkEveryRequest(): void {
    const sdkOnMessage = transport.onmessage as (message: JsonRpcMessage) => void;
    transport.onmessage = (message) => {
      const id = message.id;
      if (typeof message.method !== "string" || !isId(id)) return sdkOnMessage(message);
      // A 2026-07-28 request stands alone, whatever an initialize agreed before it: refused here when malformed or
      // of a version warden does not speak, else noted for the handler that answers it.
      const era = eraOf(message, LEGACY_VERSIONS);
      if (isRefusal(era)) return void transport.send({ jsonrpc: "2.0", id, error: refusalError(era) });
      if (era) connection.modern.set(keyOfId(id), era);
      message = takeTask(message, connection, options.jobs !== undefined);
      if (message.method === "initialize") initializing.add(id);
      const before = running.get(id);
      sdkOnMessage(message);
      if (transport.waiting(id) && running.get(id) === before) {
        connection.modern.delete(keyOfId(id)); // no handler will take it
        const issues = schemaIssues(JSONRPCRequestSchema.safeParse(message).error);
        const error = issues
          ? schemaRefusal(message, issues)
          : { code: ErrorCode.InternalError, message: "Internal error: the request was not handled" };
        void transport.send({ jsonrpc: "2.0", id, error });
      }
    };
  }
}

/**
 * --client-roots: once the client has initialized, its roots are the projects (its first is the default), read again
 * each time it says they changed; calls wait while they are read. A client that offers no roots, or fails to list
 * them, leaves the configured ones (and the log says so).
 */
function followClientRoots(server: Server, fs: RootFs, connection: Connection): void {
  const read = () => {
    const reading = (async () => {
      try {
        const { roots } = await server.listRoots();
        const { specs, refused } = projectsOfClientRoots(roots, (url) => platform().fromFileUrl(url));
        const unopened = await replaceRoots(fs, specs);
        log("info", "projects_from_client_roots", {
          projects: fs.rootIds,
          refused: [...refused.map((r) => `${r.uri}: ${r.problem}`), ...unopened.map((r) => r.problem)],
        });
      } catch (error) {
        // The SDK refuses the whole list for one root that is not a file: URI, and says so in a dump of zod issues.
        log("warn", "client_roots_unread", { error: messageOf(error).slice(0, 500), projects: fs.rootIds });
      }
    })();
    connection.projectsReady = reading;
    void reading.then(() => {
      if (connection.projectsReady === reading) connection.projectsReady = null;
    });
  };
  server.oninitialized = () => {
    if (server.getClientCapabilities()?.roots) read();
    else log("info", "client_roots_unavailable", { why: "the client offers no roots", projects: fs.rootIds });
  };
  server.setNotificationHandler(RootsListChangedNotificationSchema, () => read());
}

/** Stops what the server started, then ends the process, whatever hangs (a plugin child, a reader that stopped). */
function exitAfter(shutdown: () => Promise<void>, budgetMs = 500): void {
  setTimeout(() => platform().exit(0), budgetMs + 400);
  // Plugin children die with their stdin anyway; stopping them here kills their process groups now.
  const stopped = Promise.race([shutdown(), new Promise((resolve) => setTimeout(resolve, budgetMs))]);
  void stopped.then(() => platform().flushStdout()).finally(() => platform().exit(0));
}

/**
 * Whether a JSON-RPC message (or batch) is answered as an SSE stream: a tools/call, which may report progress or log
 * as it runs (stateless, the stream is the only way a notification reaches the client). Every other request is
 * answered with JSON.
 */
function streamsAnswer(message: unknown): boolean {
  return (Array.isArray(message) ? message : [message]).some((m) =>
    (m as JsonRpcMessage | null)?.method === "tools/call"
  );
}

/** `request` with `name` set to `value`. */
function withHeader(request: Request, name: string, value: string): Request {
  const headers = new Headers(request.headers);
  headers.set(name, value);
  return new Request(request.url, { method: request.method, headers, signal: request.signal });
}

/** A JSON-RPC error as its own HTTP answer, with the status 2026-07-28 gives it. */
function errorResponse(id: unknown, refusal: EraRefusal): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", id: isId(id) ? id : null, error: refusalError(refusal) }), {
    status: refusal.status,
    headers: { "content-type": "application/json" },
  });
}

/**
 * Whether an HTTP request is of the 2026-07-28 era: false for a legacy one (the SDK's transport answers it as ever),
 * true once noted for the handler, or the Response that refuses it (a malformed or unsupported request, a header
 * that does not say what the body says, a method the revision does not have, a batch).
 */
function modernHttp(message: unknown, request: Request, connection: Connection): boolean | Response {
  if (Array.isArray(message)) {
    const modern = message.some((m) => typeof m === "object" && m !== null && eraOf(m, LEGACY_VERSIONS) !== null);
    return modern
      ? errorResponse(null, {
        code: ErrorCode.InvalidRequest,
        message: `Invalid Request: ${MODERN_VERSION} has no batches; send each request on its own`,
        status: 400,
      })
      : false;
  }
  const m = message as JsonRpcMessage;
  if (typeof m?.method !== "string") return false;
  const era = eraOf(m, LEGACY_VERSIONS);
  if (era === null) return false;
  if (isRefusal(era)) return errorResponse(m.id, era);
  const mismatch = headerMismatch(m, era.version, request.headers);
  if (mismatch) return errorResponse(m.id, mismatch);
  if (isId(m.id)) connection.modern.set(keyOfId(m.id), era);
  return true;
}

/** How long requests in flight get to be answered after SIGTERM, before their calls are cancelled. */
export const HTTP_DRAIN_MS = 10_000;

/**
 * Serves over Streamable HTTP, stateless: every POST gets a Server and a transport of its own, so any replica can
 * answer any request. JSON answers a request; SSE a tools/call, whose progress and logs go out as it runs. Stops on SIGTERM or SIGINT:
 * new requests get 503, those in flight are answered (or, after HTTP_DRAIN_MS, cancelled), the ledger is sealed.
 */
async function serveHttp(options: ServeOptions, http: NonNullable<ServeOptions["http"]>): Promise<Served> {
  const [{ WebStandardStreamableHTTPServerTransport }, { MCP_PATH, startHttpFront }] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("./http.ts"),
  ]);
  const protocol = protocolOf(options);
  const policies = new Map<string | null, Policy>([[options.policy.principal, options.policy]]);
  const policyOf = (principal: string | null) => {
    let policy = policies.get(principal);
    if (!policy) policies.set(principal, policy = Object.freeze({ ...options.policy, principal }));
    return policy;
  };
  const front = await startHttpFront({
    settings: http.settings,
    tokens: http.tokens,
    operator: options.policy.principal,
    answer: async ({ message, principal, finished }, request) => {
      // Negotiated per request: initialize's answer says it, every later request's header repeats it.
      let protocolVersion: string | null = request.headers.get("mcp-protocol-version");
      const connection: Connection = {
        host: protocol.hostFor("http", () => protocolVersion, request.headers.get(PROJECT_HEADER)),
        policy: policyOf(principal),
        logLevel: INFO_LEVEL,
        asTask: new Set(),
        modern: new Map(),
      };
      const modern = modernHttp(message, request, connection);
      if (modern instanceof Response) return modern;
      if (modern) {
        protocolVersion = MODERN_VERSION;
        // The SDK's transport knows the initialize-era versions only: it is told one, the request is answered as modern.
        request = withHeader(request, "mcp-protocol-version", LATEST_PROTOCOL_VERSION);
      }
      const each = Array.isArray(message) ? message : [message];
      const taken = each.map((m) =>
        typeof m === "object" && m !== null && typeof (m as JsonRpcMessage).method === "string"
          ? takeTask(m as JsonRpcMessage, connection, options.jobs !== undefined)
          : m
      );
      const server = protocol.serverFor(connection);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: !streamsAnswer(message),
      });
      const send = transport.send.bind(transport);
      transport.send = async (reply, sendOptions) => {
        const version = (reply as { result?: { protocolVersion?: unknown } }).result?.protocolVersion;
        if (typeof version === "string") protocolVersion = version;
        await send(reply, sendOptions);
        options.ledger.settle();
      };
      await server.connect(transport);
      // Closing the Server aborts what it still runs (a client gone, a deadline past: its calls are cancelled) and
      // lets it and its transport go.
      void finished.then(() => server.close()).catch(() => {});
      return transport.handleRequest(request, { parsedBody: Array.isArray(message) ? taken : taken[0] });
    },
  });
  protocol.startDeferred();
  log("info", "listening", { transport: "http", host: http.settings.host, port: front.port, path: MCP_PATH });
  let stopping = false;
  const stop = (signalName: string) => {
    if (stopping) return;
    stopping = true;
    log("info", "stopping", { signal: signalName, inFlight: front.inFlight });
    void (async () => {
      if (!(await front.stop(HTTP_DRAIN_MS))) {
        stopCalls(`the server is stopping (${signalName}) and the call did not finish within ${HTTP_DRAIN_MS} ms`);
        await front.stop(CANCEL_GRACE_MS);
      }
      log("info", "stopped", { reason: signalName });
      exitAfter(options.shutdown, options.shutdownBudgetMs);
    })();
  };
  platform().onTerminate(() => stop("SIGTERM"));
  platform().onInterrupt(() => stop("SIGINT"));
  return { url: `http://${hostAndPort(http.settings.host, front.port)}${MCP_PATH}` };
}

/** A request handler as the SDK stores it. */
type SdkRequestHandler = (request: JsonRpcMessage, extra: unknown) => Promise<unknown>;

/** The SDK Server's private members warden uses, checked where they are read. */
export interface SdkInternals {
  /** Its request handlers by method, its own (initialize, ping) included: warden wraps them to name bad params. */
  readonly handlers: Map<string, SdkRequestHandler>;
  /** The requests it is running, by id: a request it did not put there, it dropped (and warden answers it). */
  readonly running: Map<RequestId, AbortController>;
  /** Calls `onCancel` with the id of each notifications/cancelled, before the SDK handles it. */
  cancelled(onCancel: (id: RequestId) => void): void;
}

/**
 * The one place warden reaches into the SDK 1.x Server: it has no public way to wrap its own handlers, to see
 * which requests it took, or to hear of a cancellation before it drops the answer. Each member is checked, so that
 * an SDK that renamed one fails the start (and test/sdk_internals.test.ts) with this message instead of
 * misbehaving; a move to SDK 2 replaces this function.
 */
export function sdkInternals(server: Server): SdkInternals {
  const sdk = server as unknown as {
    _requestHandlers?: unknown;
    _requestHandlerAbortControllers?: unknown;
    _oncancel?: unknown;
  };
  const missing = [
    ...(sdk._requestHandlers instanceof Map ? [] : ["_requestHandlers"]),
    ...(sdk._requestHandlerAbortControllers instanceof Map ? [] : ["_requestHandlerAbortControllers"]),
    ...(typeof sdk._oncancel === "function" ? [] : ["_oncancel"]),
  ];
  if (missing.length > 0) {
    throw new Error(
      `The MCP SDK's Server no longer has ${missing.join(", ")} as warden expects: use @modelcontextprotocol/sdk 1.32`,
    );
  }
  type OnCancel = (notification: { params: { requestId?: RequestId } }) => unknown;
  return {
    handlers: sdk._requestHandlers as Map<string, SdkRequestHandler>,
    running: sdk._requestHandlerAbortControllers as Map<RequestId, AbortController>,
    cancelled(onCancel) {
      const original = (sdk._oncancel as OnCancel).bind(server);
      sdk._oncancel = ((notification) => {
        const id = notification.params.requestId;
        if (id !== undefined) onCancel(id);
        return original(notification);
      }) as OnCancel;
    },
  };
}
