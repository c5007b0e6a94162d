// The two protocol eras, told apart per request. A legacy client (2024-11-05 to
// 2025-11-25) opens with initialize and the SDK's Server answers it as it always
// has; a modern one (2026-07-28) sends no initialize: every request carries its
// version and capabilities in `_meta`, and this module reads them, refuses what is
// malformed or of a version warden does not speak, and shapes modern results
// (resultType, cache hints). No SDK import: core/transport/server.ts hands it the
// SDK's own list of legacy versions.
import { received } from "../errors.ts";
import { CLIENT_LOG_LEVELS } from "../tool.ts";
import { SerializedResult } from "./stdio.ts";

/** The one modern revision warden speaks. */
export const MODERN_VERSION = "2026-07-28";

/** The `_meta` keys of a modern request, and of a modern result's server identity. */
export const META = Object.freeze({
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
});

/** JSON-RPC codes of the modern era (2026-07-28, basic/index and versioning). */
export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;

/** What a modern request said about itself, for its answer. */
export interface ModernRequest {
  readonly version: string;
  /** The least severe notifications/message level the client asked for, as an index in CLIENT_LOG_LEVELS; null: none. */
  readonly logLevel: number | null;
  /** W3C trace context from `_meta`, when well formed (for logs now, telemetry later). */
  readonly traceparent: string | null;
}

/** A JSON-RPC error for a modern request, with the HTTP status the Streamable HTTP transport gives it. */
export interface EraRefusal {
  readonly code: number;
  readonly message: string;
  readonly data?: Record<string, unknown>;
  readonly status: 400 | 404;
}

/** The methods of the modern era warden answers; anything else is -32601 (404 over HTTP). */
const MODERN_METHODS = new Set([
  "server/discover",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "tasks/get",
  "tasks/result",
  "tasks/list",
  "tasks/cancel",
]);

/** Removed by 2026-07-28, with what replaced each: said in the -32601 a modern request of one gets. */
const REMOVED: Record<string, string> = {
  initialize: "a modern request carries its version and capabilities in _meta; send initialize without them",
  ping: "there is no session to keep alive",
  "logging/setLevel": "send _meta io.modelcontextprotocol/logLevel with each request",
};

const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

type Message = { readonly method?: unknown; readonly params?: unknown };

function metaOf(message: Message): Record<string, unknown> | undefined {
  const meta = (message.params as { _meta?: unknown } | undefined)?._meta;
  return typeof meta === "object" && meta !== null && !Array.isArray(meta)
    ? meta as Record<string, unknown>
    : undefined;
}

/**
 * Which era a request is of: null for legacy (no modern `_meta`; the SDK's Server answers it), a ModernRequest, or the
 * refusal a malformed or unsupported modern request gets. `server/discover` is modern even without `_meta` (a client's
 * probe, answered rather than read as a legacy server's error). `legacy` is the SDK's list of initialize-era versions.
 */
export function eraOf(message: Message, legacy: readonly string[]): ModernRequest | EraRefusal | null {
  const meta = metaOf(message);
  const method = message.method;
  if (meta?.[META.protocolVersion] === undefined) {
    return method === "server/discover" ? { version: MODERN_VERSION, logLevel: null, traceparent: null } : null;
  }
  const version = meta[META.protocolVersion];
  if (typeof version !== "string") {
    return invalid(`_meta["${META.protocolVersion}"] must be a protocol version string, received ${received(version)}`);
  }
  if (version !== MODERN_VERSION) {
    return {
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version: received ${
        received(version)
      }; this server speaks ${MODERN_VERSION} per request, and ${legacy.join(", ")} after initialize`,
      data: { supported: [MODERN_VERSION, ...legacy], requested: version },
      status: 400,
    };
  }
  const capabilities = meta[META.clientCapabilities];
  if (
    method !== "server/discover" &&
    (typeof capabilities !== "object" || capabilities === null || Array.isArray(capabilities))
  ) {
    return invalid(
      `_meta["${META.clientCapabilities}"] must be an object (the client's capabilities, {} for none), received ${
        received(capabilities)
      }`,
    );
  }
  const level = meta[META.logLevel];
  const logLevel = level === undefined ? -1 : CLIENT_LOG_LEVELS.indexOf(level as never);
  if (level !== undefined && logLevel === -1) {
    return invalid(
      `_meta["${META.logLevel}"] must be one of ${CLIENT_LOG_LEVELS.join(", ")}, received ${received(level)}`,
    );
  }
  if (typeof method !== "string" || !MODERN_METHODS.has(method)) {
    const why = typeof method === "string" ? REMOVED[method] : undefined;
    return {
      code: METHOD_NOT_FOUND,
      message: `Method not found: ${String(method)}${why ? ` is not part of ${MODERN_VERSION} (${why})` : ""}`,
      status: 404,
    };
  }
  const trace = meta.traceparent;
  return {
    version,
    logLevel: logLevel === -1 ? null : logLevel,
    traceparent: typeof trace === "string" && TRACEPARENT.test(trace) ? trace : null,
  };
}

function invalid(detail: string): EraRefusal {
  return { code: INVALID_PARAMS, message: `Invalid params: ${detail}`, status: 400 };
}

export function isRefusal(era: ModernRequest | EraRefusal | null): era is EraRefusal {
  return era !== null && "code" in era;
}

/**
 * What an HTTP request of the modern era must also say in its headers (2026-07-28, Streamable HTTP): its version in
 * MCP-Protocol-Version, its method in Mcp-Method, and for tools/call and resources/read its tool or resource in
 * Mcp-Name, each equal to the body's. Null when they agree, and for a probe without _meta (server/discover alone),
 * which has nothing for headers to agree with.
 */
export function headerMismatch(message: Message, version: string, headers: Headers): EraRefusal | null {
  if (metaOf(message)?.[META.protocolVersion] === undefined) return null;
  const params = message.params as { name?: unknown; uri?: unknown } | undefined;
  const expected: [string, unknown][] = [
    ["MCP-Protocol-Version", version],
    ["Mcp-Method", message.method],
    ...(message.method === "tools/call" ? [["Mcp-Name", params?.name] as [string, unknown]] : []),
    ...(message.method === "resources/read" ? [["Mcp-Name", params?.uri] as [string, unknown]] : []),
  ];
  for (const [header, value] of expected) {
    const sent = headers.get(header);
    if (sent !== value) {
      return {
        code: HEADER_MISMATCH,
        message: `Header mismatch: ${header} ${sent === null ? "is missing" : `is ${received(sent)}`}; it must be ${
          received(value)
        }, as in the body`,
        status: 400,
      };
    }
  }
  return null;
}

/** Cache hints of a modern list or discover result: the catalog is frozen for the process, the same for every caller. */
const CATALOG_CACHE = Object.freeze({ ttlMs: 300_000, cacheScope: "public" as const });
/** Cache hints of what changes as jobs run (their reports): read again each time, one caller's. */
const NO_CACHE = Object.freeze({ ttlMs: 0, cacheScope: "private" as const });

/**
 * The cache hints a modern result carries (2026-07-28, caching): the catalog and the server's identity are fixed for
 * the process and the same for every caller; the job reports change as jobs run.
 */
const CACHE_HINTS: Record<string, Record<string, unknown>> = {
  "server/discover": CATALOG_CACHE,
  "tools/list": CATALOG_CACHE,
  "resources/templates/list": CATALOG_CACHE,
  "resources/list": NO_CACHE,
  "resources/read": NO_CACHE,
};

/**
 * A modern request's result: `resultType` first, then the result as it would be, then the cache hints of its method.
 * A result serialized already (a tool's answer) is extended as text, not parsed again.
 */
export function modernResult(method: string, result: unknown): unknown {
  const extra = CACHE_HINTS[method] ?? {};
  if (result instanceof SerializedResult) {
    const tail = Object.keys(extra).length === 0 ? "" : `,${JSON.stringify(extra).slice(1, -1)}`;
    const body = result.json.slice(1, -1);
    return new SerializedResult(`{"resultType":"complete"${body === "" ? "" : `,${body}`}${tail}}`);
  }
  return { resultType: "complete", ...(result as Record<string, unknown>), ...extra };
}
