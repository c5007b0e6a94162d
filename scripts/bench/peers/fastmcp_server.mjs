// FastMCP peer for the startup and round-trip benchmarks: one trivial tool
// over stdio, written as FastMCP's README shows it. It runs from .bench/peers/,
// where scripts/bench/_harness.mjs installs fastmcp and zod.
import { FastMCP } from "fastmcp";
import { z } from "zod";

const server = new FastMCP({ name: "fastmcp-peer", version: "1.0.0" });
server.addTool({
  name: "echo",
  description: "Returns its text.",
  parameters: z.object({ text: z.string() }),
  execute: (args) => Promise.resolve(args.text),
});
await server.start({ transportType: "stdio" });
