// The MCP server over stdio. This is the only module that imports
// @modelcontextprotocol/sdk, so moving to another SDK major is a one-file change.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, InitializeRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Ledger } from "./ledger.ts";
import { governedCall, type Policy } from "./policy.ts";
import type { Catalog } from "./catalog.ts";
import { resultJson } from "./call.ts";
import { log } from "./log.ts";
import { platform } from "./platform/mod.ts";
import type { RootFs } from "./roots.ts";
import type { Spawner } from "./spawn.ts";
import { StdioTransport } from "./stdio.ts";
import { CLIENT_LOG_LEVELS, type ClientLogLevel, type HostFacts } from "./tool.ts";

/** What `serve` needs: the frozen catalog and the door tools read through. */
export interface ServeOptions {
  readonly name: string;
  readonly version: string;
  readonly catalog: Catalog;
  readonly fs: RootFs;
  readonly callTimeoutMs: number;
  readonly spawner: Spawner;
  readonly policy: Policy;
  readonly ledger: Ledger;
  /** Host facts without the protocol version, which initialize decides. */
  readonly host: Omit<HostFacts, "protocolVersion" | "transport">;
  /** Stops what the server started (plugin children) before the process ends. */
  readonly shutdown: () => Promise<void>;
}

type Params = Record<string, unknown> | undefined;

function invalidParams(message: string): McpError {
  return new McpError(ErrorCode.InvalidParams, message);
}

/**
 * Serves the catalog over stdin/stdout until stdin closes, then exits the
 * process. Resolves once the server is listening.
 */
export async function serve(options: ServeOptions): Promise<void> {
  const { catalog } = options;
  let protocolVersion: string | null = null;
  let clientLogLevel = CLIENT_LOG_LEVELS.indexOf("info");

  const host: HostFacts = Object.freeze({
    ...options.host,
    transport: "stdio" as const,
    get protocolVersion() {
      return protocolVersion;
    },
  });

  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: { tools: { listChanged: false }, logging: {} },
      // Used only to check elicitation replies, which warden never requests;
      // passing one keeps the SDK from building Ajv (and the build drops Ajv).
      jsonSchemaValidator: {
        getValidator() {
          throw new Error("warden does not elicit input");
        },
      },
    },
  );

  // The SDK negotiates the version; we only remember what it agreed.
  const initialize = server["_oninitialize"].bind(server);
  server.setRequestHandler(InitializeRequestSchema, async (request) => {
    const result = await initialize(request);
    protocolVersion = result.protocolVersion;
    return result;
  });

  // tools/* and logging/setLevel are answered here, with warden's own
  // validation, instead of the SDK's per-request zod parsing of requests and results.
  server.removeRequestHandler("logging/setLevel");
  server.fallbackRequestHandler = async (request, extra) => {
    const params = request.params as Params;
    switch (request.method) {
      case "tools/list": {
        if (params?.cursor !== undefined) {
          throw invalidParams(
            `Invalid cursor ${JSON.stringify(params.cursor)}: the catalog has one page; omit the cursor`,
          );
        }
        return catalog.listResult as unknown as Record<string, unknown>;
      }
      case "tools/call": {
        const name = params?.name;
        if (typeof name !== "string") {
          throw invalidParams("Invalid tools/call: params.name must be the tool name as a string");
        }
        const tool = catalog.tools.get(name);
        if (!tool) {
          throw invalidParams(`Unknown tool ${JSON.stringify(name)}: call tools/list for the tools this server has`);
        }
        const args = params?.arguments;
        if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
          throw invalidParams(
            `Invalid tools/call: params.arguments must be an object, received ${JSON.stringify(args)}`,
          );
        }
        const progressToken = (params?._meta as Params)?.progressToken;
        const validToken = typeof progressToken === "string" || typeof progressToken === "number";
        const result = await governedCall(tool, args, {
          policy: options.policy,
          ledger: options.ledger,
          fs: options.fs,
          host,
          timeoutMs: options.callTimeoutMs,
          spawner: options.spawner,
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
            if (CLIENT_LOG_LEVELS.indexOf(level) < clientLogLevel) return;
            void extra.sendNotification({ method: "notifications/message", params: { level, logger: name, data } })
              .catch(() => {});
          },
        });
        if (result.isError) log("debug", "call_failed", { tool: name, code: result._meta?.["warden/error_code"] });
        const json = resultJson(result);
        if (json !== undefined) transport.preserialize(result, json);
        return result as unknown as Record<string, unknown>;
      }
      case "logging/setLevel": {
        const level = CLIENT_LOG_LEVELS.indexOf(params?.level as ClientLogLevel);
        if (level === -1) {
          throw invalidParams(
            `Invalid log level ${JSON.stringify(params?.level)}: expected one of ${CLIENT_LOG_LEVELS.join(", ")}`,
          );
        }
        clientLogLevel = level;
        return {};
      }
      default:
        throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
    }
  };

  const transport = new StdioTransport();
  transport.preserialize(catalog.listResult, JSON.stringify(catalog.listResult));
  // The ledger hashes each row (the next row's `prev`) after the response is out.
  transport.onsent = () => options.ledger.settle();
  transport.onerror = (error) => log("warn", "transport_error", { error: error.message });
  server.onerror = (error) => log("warn", "protocol_error", { error: error.message });
  server.onclose = () => {
    // Closing stdin is the stdio shutdown: the SDK has already aborted every
    // running call (their signals fire), and nothing is left to answer.
    log("info", "stopped", { reason: "stdin closed" });
    // Plugin children die with their stdin anyway; stopping them here kills their process groups now.
    const deadline = setTimeout(() => platform().exit(0), 500);
    void options.shutdown().finally(() => {
      clearTimeout(deadline);
      platform().exit(0);
    });
  };
  await server.connect(transport);
}
