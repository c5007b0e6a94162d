// The HTTP front of `warden serve --http`: what every request passes before it
// reaches the protocol (core/transport/server.ts answers it). In order: the
// path, the Host and Origin (against DNS rebinding), the bearer token (which
// names the principal), the method, the body's size and JSON, the principal's
// share of the server, and a deadline. A refusal says what was wrong and how
// to fix it, and costs the server nothing but the answer.
import { boundedBody } from "../bytes.ts";
import { type HttpSettings, isLoopback } from "../config.ts";
import { problem, WardenError } from "../errors.ts";
import { log } from "../log.ts";
import { platform } from "../platform/mod.ts";
import { metadataPaths, metadataUrl, protectedResourceMetadata, type TokenVerdict, tokenVerifier } from "./oauth.ts";
import { principalOfToken, type TokenEntry } from "./tokens.ts";

/** How long a stop waits, once every answer is out, for the connections to close. */
const CLOSE_GRACE_MS = 500;

/** The one path MCP is served on. */
export const MCP_PATH = "/mcp";

/** What a request that passed the front brings to the protocol. */
export interface HttpCall {
  /** The JSON-RPC message (or batch) of the body, parsed. */
  readonly message: unknown;
  /** Who made it: the token's principal, or the operator's (`--principal`) where no token is configured. */
  readonly principal: string | null;
  /**
   * Resolves once the request has ended: answered, refused, its client gone or its deadline past. What it still runs
   * is then cancelled, and what it holds may go.
   */
  readonly finished: Promise<void>;
}

export interface HttpFrontOptions {
  readonly settings: HttpSettings;
  readonly tokens: readonly TokenEntry[];
  /** The principal of every request where no token is configured. */
  readonly operator: string | null;
  /** Answers an MCP POST that passed the front. */
  readonly answer: (call: HttpCall, request: Request) => Promise<Response>;
}

export interface HttpFront {
  /** The port bound (the one asked for, or the one chosen for 0). */
  readonly port: number;
  /** Requests being answered now. */
  readonly inFlight: number;
  /**
   * Refuses new requests (503), stops listening, and resolves once every request in flight is answered or
   * `drainMs` has passed: true when all were answered.
   */
  stop(drainMs: number): Promise<boolean>;
}

/** The name in a `Host` header, lowercase, without its port or an IPv6 address's brackets; null when malformed. */
export function hostName(header: string | null): string | null {
  if (header === null) return null;
  const value = header.trim().toLowerCase();
  const match = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(value) ?? /^([a-z0-9.-]+)(?::\d{1,5})?$/.exec(value);
  return match ? match[1] : null;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** A refusal as the SDK's own HTTP errors are shaped: a JSON-RPC error with no id. */
function refusal(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(
    JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: status === 400 ? -32700 : -32000, message } }),
    { status, headers: { ...JSON_HEADERS, ...headers } },
  );
}

/** The headers a browser needs to read an answer to an allowed origin, and to send the ones MCP uses. */
function corsHeaders(origin: string, methods = "POST, OPTIONS"): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-methods": methods,
    "access-control-allow-headers": "authorization, content-type, accept, mcp-protocol-version, x-mcp-project",
    "access-control-expose-headers": "www-authenticate, mcp-protocol-version",
    "access-control-max-age": "600",
    vary: "origin",
  };
}

function timeoutMessage(ms: number): string {
  return `the request took longer than ${ms} ms (--request-timeout); its calls were cancelled`;
}

/** The ids of the requests in a JSON-RPC message or batch. */
function requestIds(message: unknown): (string | number)[] {
  return (Array.isArray(message) ? message : [message]).flatMap((m) => {
    const id = (m as { id?: unknown; method?: unknown } | null)?.id;
    return typeof (m as { method?: unknown } | null)?.method === "string" &&
        (typeof id === "string" || typeof id === "number")
      ? [id]
      : [];
  });
}

/**
 * `response` with `release` called once its body is sent or cancelled when it streams (SSE), at once otherwise (a
 * JSON answer is whole already). A stream still open when the request is cancelled ends, with `lastWords()` when its
 * deadline passed: the events that answer its requests with the timeout, since its status went out long before.
 */
function releasedAfter(
  response: Response,
  release: () => void,
  cancelled: AbortSignal,
  lastWords: () => string,
): Response {
  if (!response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
    release();
    return response;
  }
  const reader = response.body.getReader();
  let ended = false;
  const end = () => {
    ended = true;
    release();
  };
  const watched = new ReadableStream<Uint8Array>({
    start(controller) {
      cancelled.addEventListener("abort", () => {
        if (ended) return;
        end();
        const words = lastWords();
        if (words !== "") controller.enqueue(new TextEncoder().encode(words));
        controller.close();
        reader.cancel().catch(() => {});
      }, { once: true });
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (ended) return;
        if (done) {
          end();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        if (ended) return;
        end();
        controller.error(error);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(watched, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Checks the settings (a non-loopback address needs tokens), binds the address and answers requests until stopped.
 */
export async function startHttpFront(options: HttpFrontOptions): Promise<HttpFront> {
  const { settings, tokens, operator } = options;
  const { authorization } = settings;
  if (!isLoopback(settings.host) && tokens.length === 0 && authorization === null) {
    throw new WardenError(
      "config_invalid",
      problem(
        `Refusing to serve HTTP on ${settings.host} without tokens`,
        "anyone who reaches that address could call every tool",
        'make a token with "warden token add <principal>" (it goes in --tokens), accept an authorization server\'s' +
          " with --authorization-server, or bind --host 127.0.0.1",
      ),
    );
  }
  const verifyToken = authorization ? tokenVerifier(authorization) : null;
  const metadata = authorization ? JSON.stringify(protectedResourceMetadata(authorization)) : "";
  const servesMetadata = authorization ? metadataPaths(authorization, MCP_PATH) : new Set<string>();
  /** RFC 6750's challenge, with RFC 9728's pointer to the metadata when an authorization server is configured. */
  const challenge = (error?: { code: string; description: string }): string =>
    [
      'Bearer realm="warden"',
      ...(authorization ? [`resource_metadata="${metadataUrl(authorization)}"`] : []),
      ...(authorization && authorization.requiredScopes.length > 0
        ? [`scope="${authorization.requiredScopes.join(" ")}"`]
        : []),
      ...(error ? [`error="${error.code}"`, `error_description="${error.description.replace(/["\\]/g, "'")}"`] : []),
    ].join(", ");
  const allowedHosts = new Set([
    ...settings.allowedHosts,
    ...(isLoopback(settings.host) ? ["localhost", "127.0.0.1", "::1"] : [settings.host]),
  ]);
  const allowedOrigins = new Set(settings.allowedOrigins);
  /**
   * An `--allowed-origin`, or on loopback a page this machine serves (`http://localhost:6274`, the MCP Inspector's):
   * what DNS rebinding forges is a foreign origin resolved to a loopback address, never a loopback origin.
   */
  const originAllowed = (origin: string): boolean => {
    if (allowedOrigins.has(origin.toLowerCase())) return true;
    if (!isLoopback(settings.host)) return false;
    try {
      const url = new URL(origin);
      return (url.protocol === "http:" || url.protocol === "https:") &&
        isLoopback(url.hostname.replace(/^\[(.*)\]$/, "$1"));
    } catch {
      return false;
    }
  };
  const busy = new Map<string, number>();
  let inFlight = 0;
  let stopping = false;
  let drained: (() => void) | undefined;

  const handle = async (request: Request, remoteAddress: string): Promise<Response> => {
    const url = new URL(request.url);
    const refuse = (status: number, reason: string, message: string, headers?: Record<string, string>) => {
      log(status >= 500 ? "warn" : "info", "http_refused", {
        status,
        reason,
        remote: remoteAddress,
        path: url.pathname,
      });
      return refusal(status, message, headers);
    };
    if (stopping) {
      return refuse(503, "stopping", "Service Unavailable: the server is stopping", { connection: "close" });
    }
    const host = hostName(request.headers.get("host"));
    if (host === null || !allowedHosts.has(host)) {
      return refuse(
        403,
        "host",
        `Forbidden: Host ${JSON.stringify(request.headers.get("host"))} is not one this server answers` +
          " (against DNS rebinding); the operator allows others with --allowed-host",
      );
    }
    const origin = request.headers.get("origin");
    if (origin !== null && !originAllowed(origin)) {
      return refuse(
        403,
        "origin",
        `Forbidden: Origin ${
          JSON.stringify(origin)
        } is not allowed; the operator allows a browser origin with --allowed-origin`,
      );
    }
    if (servesMetadata.has(url.pathname)) {
      // Public, as RFC 9728 means it: what a client told 401 reads to find where to get a token.
      const headers = origin !== null ? corsHeaders(origin, "GET, OPTIONS") : {};
      if (request.method === "OPTIONS") return new Response(null, { status: 204, headers });
      if (request.method !== "GET" && request.method !== "HEAD") {
        return refuse(405, "method", `Method Not Allowed: ${request.method}; the metadata is read with GET`, {
          ...headers,
          allow: "GET, HEAD, OPTIONS",
        });
      }
      return new Response(request.method === "HEAD" ? null : metadata, {
        status: 200,
        headers: { ...headers, ...JSON_HEADERS, "cache-control": "max-age=300" },
      });
    }
    const cors = origin !== null ? corsHeaders(origin) : {};
    if (url.pathname !== MCP_PATH) {
      return refuse(404, "path", `Not Found: MCP is served at ${MCP_PATH}`, cors);
    }
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
    let principal = operator;
    if (tokens.length > 0 || authorization !== null) {
      const header = request.headers.get("authorization") ?? "";
      const token = /^Bearer ([!-~]+)$/i.exec(header.trim())?.[1];
      if (token === undefined) {
        return refuse(
          401,
          "no_token",
          'Unauthorized: send "Authorization: Bearer <token>"; ' +
            (authorization
              ? `get one from ${authorization.issuer} (the metadata at ${metadataUrl(authorization)} says how)`
              : 'the operator makes one with "warden token add <principal>"'),
          { ...cors, "www-authenticate": challenge() },
        );
      }
      const found = principalOfToken(tokens, token);
      if (found !== null) principal = found;
      else if (verifyToken === null) {
        const description = "the token is not in this server's tokens file";
        return refuse(
          401,
          "bad_token",
          "Unauthorized: the token is not one this server knows (revoked, mistyped, or for another server)",
          { ...cors, "www-authenticate": challenge({ code: "invalid_token", description }) },
        );
      } else {
        // Bounded by the request's own deadline: a first token waits for the authorization server's metadata and keys.
        let timer: ReturnType<typeof setTimeout> | undefined;
        const verdict = await Promise.race([
          verifyToken(token),
          new Promise<TokenVerdict>((resolve) =>
            timer = setTimeout(() =>
              resolve({
                principal: null,
                status: 503,
                error: null,
                description:
                  `the authorization server did not answer within ${settings.requestTimeoutMs} ms; retry later`,
              }), settings.requestTimeoutMs)
          ),
        ]).finally(() => clearTimeout(timer));
        if (verdict.principal === null) {
          const { status, error, description } = verdict;
          return refuse(
            status,
            error ?? "oauth_unavailable",
            `${status === 503 ? "Service Unavailable" : status === 403 ? "Forbidden" : "Unauthorized"}: ${description}`,
            {
              ...cors,
              ...(error ? { "www-authenticate": challenge({ code: error, description }) } : { "retry-after": "10" }),
            },
          );
        }
        principal = verdict.principal;
      }
    }
    if (request.method !== "POST") {
      // Stateless: no stream outlives its request, so there is nothing to GET and no session to DELETE.
      return refuse(
        405,
        "method",
        `Method Not Allowed: ${request.method}; this server is stateless and takes POST only`,
        { ...cors, allow: "POST, OPTIONS" },
      );
    }
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return refuse(415, "content_type", "Unsupported Media Type: send the message as application/json", cors);
    }
    const key = principal ?? "";
    const share = busy.get(key) ?? 0;
    if (share >= settings.maxCallsPerPrincipal) {
      return refuse(
        429,
        "busy",
        `Too Many Requests: ${share} requests of this principal are in flight, the most --max-calls allows; retry after one ends`,
        { ...cors, "retry-after": "1" },
      );
    }
    busy.set(key, share + 1);
    inFlight++;
    // Everything a request holds is let go when it ends (answered, refused, its client gone, its deadline past): at
    // thousands of requests a second, a per-request timer or listener left for the deadline would hold each request's
    // Server for that long.
    const cancel = new AbortController();
    const onGone = () => cancel.abort();
    request.signal.addEventListener("abort", onGone, { once: true });
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => finish = resolve);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      request.signal.removeEventListener("abort", onGone);
      const left = (busy.get(key) ?? 1) - 1;
      if (left === 0) busy.delete(key);
      else busy.set(key, left);
      if (--inFlight === 0) drained?.();
      finish();
    };
    // A client gone (or a deadline past) ends the request's share at once: nobody may read its answer's body.
    cancel.signal.addEventListener("abort", release, { once: true });
    try {
      const body = await boundedBody(request, settings.maxBodyBytes);
      if (body === null) {
        release();
        return refuse(
          413,
          "too_large",
          `Content Too Large: the body is over ${settings.maxBodyBytes} bytes, the most --max-body allows`,
          cors,
        );
      }
      let message: unknown;
      try {
        message = JSON.parse(new TextDecoder().decode(body));
      } catch {
        release();
        return refuse(400, "parse", "Parse error: the body is not JSON", cors);
      }
      if (released) return refuse(499, "client_gone", "the client went away before its request was read");
      timer = setTimeout(() => {
        timedOut = true;
        cancel.abort();
      }, settings.requestTimeoutMs);
      const answered = options.answer({ message, principal, finished }, request);
      // An answer that never comes (its calls cancelled, its Server closed) must not hold the principal's share.
      const ended = new Promise<Response>((resolve) =>
        cancel.signal.addEventListener("abort", () =>
          resolve(
            timedOut
              ? refuse(504, "timeout", `Gateway Timeout: ${timeoutMessage(settings.requestTimeoutMs)}`, cors)
              : refuse(499, "client_gone", "the client went away before its answer; its calls were cancelled"),
          ), { once: true })
      );
      const response = await Promise.race([answered, ended]);
      for (const [name, value] of Object.entries(cors)) response.headers.set(name, value);
      const lastWords = () =>
        timedOut
          ? requestIds(message).map((id) =>
            `event: message\ndata: ${
              JSON.stringify({
                jsonrpc: "2.0",
                id,
                error: { code: -32001, message: timeoutMessage(settings.requestTimeoutMs) },
              })
            }\n\n`
          ).join("")
          : "";
      return releasedAfter(response, release, cancel.signal, lastWords);
    } catch (error) {
      release();
      throw error;
    }
  };

  const listener = await platform().listenHttp({
    hostname: settings.host,
    port: settings.port,
    handler: (request, info) =>
      handle(request, info.remoteAddress).catch((error) => {
        log("error", "http_failed", { error: String(error).slice(0, 500) });
        return refusal(500, "Internal Server Error: warden could not answer this request; its log says why");
      }),
  });
  return {
    port: listener.port,
    get inFlight() {
      return inFlight;
    },
    async stop(drainMs) {
      stopping = true;
      const closed = listener.close();
      const allAnswered = inFlight === 0 ? Promise.resolve(true) : new Promise<boolean>((resolve) => {
        drained = () => resolve(true);
        AbortSignal.timeout(drainMs).addEventListener("abort", () => resolve(false));
      });
      const answered = await allAnswered;
      // Once every answer is out, connections a client keeps alive (idle) need not hold the stop for their timeout:
      // a moment for the last bytes to leave, then the process may end with them open.
      if (answered) {
        await Promise.race([
          closed,
          new Promise((resolve) => AbortSignal.timeout(CLOSE_GRACE_MS).addEventListener("abort", resolve)),
        ]);
      }
      return answered;
    },
  };
}
