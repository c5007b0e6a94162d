// What core/transport/server.ts takes from the SDK, as one module. The build bundles it
// into dist/vendor/mcp-sdk.js, which deno.json maps the SDK specifiers to:
// deno then loads one file instead of ~200 (measured: ~150 ms to ~35 ms).
// The names exported here must cover every import of those two specifiers
// in core/transport/server.ts and test/ (a missing one fails deno check).
export { Server } from "@modelcontextprotocol/sdk/server/index.js";
export {
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCRequestSchema,
  LATEST_PROTOCOL_VERSION,
  ListRootsRequestSchema,
  McpError,
  RootsListChangedNotificationSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
