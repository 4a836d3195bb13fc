// MCP over ACP with the official TypeScript SDK (McpOverAcpProvider, McpOverAcpCaller), for acpio's interop tests.
//
// node peers/ts/mcp.mjs consumer
//   An agent on stdin/stdout advertising mcpCapabilities.acp. On each prompt it takes the session's first
//   `acp` MCP server and, with McpOverAcpCaller, sends tools/list, tools/call `add` {"a": 2, "b": 40} and
//   tools/call `nope`; it answers with one agent_message_chunk holding the three outcomes as JSON
//   ({"list": ..., "call": ..., "unknown": ...}), then end_turn.
//
// node peers/ts/mcp.mjs provider AGENT [ARGS...]
//   A client that runs AGENT, registers an MCP server "ts-tools" with McpOverAcpProvider (tools `add`,
//   which adds a and b, and `fail`, which reports an error; a plain handler, since the SDK's fromMcpServer
//   needs @modelcontextprotocol/server, which the peers do not install), starts a session declaring it, sends the
//   prompt in $MCP_PROMPT and prints one JSON line on stdout: {"serverId", "updates": [session/update...],
//   "stopReason", "requests": [the mcp/message params it served]}.

import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { nodeModules } from "./sdk.mjs";

async function loadUnstableSdk() {
  const root = join(nodeModules(), "@agentclientprotocol", "sdk");
  const manifestPath = join(root, "package.json");
  if (!existsSync(manifestPath)) {
    throw new Error(`@agentclientprotocol/sdk is not installed in ${nodeModules()}: run \`python peers/install.py\``);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  return import(pathToFileURL(join(root, manifest.exports["./unstable"].import)).href);
}

const acp = await loadUnstableSdk();

function consumer() {
  const caller = new acp.McpOverAcpCaller({ clientInfo: { name: "ts-mcp-consumer", version: "1" } });
  const sessions = new Map();
  let next = 1;
  const app = acp
    .agent({ name: "ts-mcp-consumer" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { mcpCapabilities: { acp: true } },
      authMethods: [],
    }))
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      const sessionId = `ts-mcp-${next++}`;
      sessions.set(sessionId, (params.mcpServers ?? []).filter(acp.isMcpServerAcp));
      return { sessionId };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const [server] = sessions.get(params.sessionId) ?? [];
      if (!server) throw acp.RequestError.invalidParams(undefined, "the session declares no acp MCP server");
      const list = await caller.request(client, server.serverId, "tools/list", {});
      const call = await caller.request(client, server.serverId, "tools/call", { name: "add", arguments: { a: 2, b: 40 } });
      const unknown = await caller.request(client, server.serverId, "tools/call", { name: "nope", arguments: {} });
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify({ list, call, unknown }) } },
      });
      return { stopReason: "end_turn" };
    })
    .onNotification(acp.methods.agent.mcp.message, caller.handleNotification);
  return app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin))).closed;
}

const TOOLS = [
  {
    name: "add",
    description: "Add two numbers",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  },
  { name: "fail", description: "Always fails", inputSchema: { type: "object" } },
];

async function provider(agentArgv) {
  const requests = [];
  const handler = async (request) => {
    requests.push({ method: request.method, requestId: request.requestId, protocolVersion: request.protocolVersion });
    // Results as MCP 2026-07-28 has them (resultType; list results are cacheable: ttlMs, cacheScope).
    if (request.method === "tools/list") {
      return { result: { tools: TOOLS, resultType: "complete", ttlMs: 0, cacheScope: "private" } };
    }
    if (request.method === "tools/call") {
      const { name, arguments: args } = request.params ?? {};
      if (name === "add") {
        const text = String(args.a + args.b);
        return { result: { content: [{ type: "text", text }], isError: false, resultType: "complete" } };
      }
      if (name === "fail") {
        return { result: { content: [{ type: "text", text: "it failed" }], isError: true, resultType: "complete" } };
      }
      throw new acp.McpProtocolError(-32602, `Unknown tool: ${name}`);
    }
    throw new acp.McpProtocolError(-32601, `Method not found: ${request.method}`);
  };
  const mcp = new acp.McpOverAcpProvider();
  const updates = [];
  const child = spawn(agentArgv[0], agentArgv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const app = acp
    .client({ name: "ts-mcp-provider" })
    .onRequest(acp.methods.client.mcp.message, mcp.handleRequest);
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  await connection.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const tools = mcp.registerServer(connection.agent, { name: "ts-tools", handler });
  const session = await connection.agent.buildSession(process.cwd()).withMcpServer(tools.declaration).start();
  const prompting = session.prompt(process.env.MCP_PROMPT ?? "hello");
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind !== "session_update") break;
    updates.push(message.notification.update);
  }
  const response = await prompting;
  process.stdout.write(
    `${JSON.stringify({ serverId: tools.serverId, updates, stopReason: response.stopReason, requests })}\n`,
  );
  session.dispose();
  await tools.dispose();
  child.kill();
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "consumer") {
  await consumer();
} else if (mode === "provider") {
  await provider(rest);
  process.exit(0);
} else {
  process.stderr.write("usage: node peers/ts/mcp.mjs consumer | provider AGENT [ARGS...]\n");
  process.exit(2);
}
