// The peer of the HTTP bench: the SDK's own stateless Streamable HTTP example
// (examples/server/simpleStatelessStreamableHttp.js: express through
// createMcpExpressApp, a McpServer and a transport per request), serving the
// same trivial `echo` tool as the stdio peers. Listens on a free loopback port
// and names it on stderr.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import * as z from "zod/v4";

const getServer = () => {
  const server = new McpServer({ name: "sdk-http", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool(
    "echo",
    { description: "Returns its text.", inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
};

const app = createMcpExpressApp();
app.post("/mcp", async (req, res) => {
  const server = getServer();
  try {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
    res.on("close", () => {
      transport.close();
      server.close();
    });
  } catch {
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id: null });
    }
  }
});
const listener = app.listen(0, "127.0.0.1", () => {
  process.stderr.write(`${JSON.stringify({ event: "listening", port: listener.address().port })}\n`);
});
