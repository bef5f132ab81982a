// The benchmark's tools served by the TypeScript SDK (McpServer over stdio).
//
// CommonJS so that the driver can point NODE_PATH at the node_modules that
// bench/setup.sh installed in the cache, outside the project.
"use strict";

const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

const server = new McpServer({ name: "bench-ts", version: "1.0.0" });

const text = (value) => ({ content: [{ type: "text", text: value }] });

server.registerTool(
  "add",
  { description: "Add two integers.", inputSchema: { a: z.number().int(), b: z.number().int() } },
  async ({ a, b }) => text(String(a + b)),
);

server.registerTool(
  "echo",
  { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
  async ({ text: value }) => text(value),
);

server.registerTool(
  "sleep",
  { description: "Wait `ms` milliseconds (a timer: node has no blocking sleep).", inputSchema: { ms: z.number() } },
  ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(text("slept")), ms)),
);

server.connect(new StdioServerTransport()).catch((error) => {
  console.error(error);
  process.exit(1);
});
