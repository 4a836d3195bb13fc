// Serves an SDK agent app over Streamable HTTP and WebSocket with the SDK's experimental AcpServer, on
// 127.0.0.1:port (0: any), one agent connection per remote connection. Prints
// `listening on http://127.0.0.1:N` once ready; SIGTERM or SIGINT closes it. Used by peers/ts/agent.mjs
// (the interop suite) and benchmarks/peers/ts_agent.mjs (benchmarks/remote.py).
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function listen(app, port, nodeModules) {
  const transports = join(nodeModules, "@agentclientprotocol", "sdk", "dist", "transports");
  const { AcpServer } = await import(pathToFileURL(join(transports, "server.js")).href);
  const adapter = await import(pathToFileURL(join(transports, "node-adapter.js")).href);
  const { WebSocketServer } = await import(pathToFileURL(join(nodeModules, "ws", "wrapper.mjs")).href);
  const server = new AcpServer({ agent: app });
  const http = createServer(adapter.createNodeHttpHandler(server));
  const sockets = new WebSocketServer({ noServer: true });
  http.on("upgrade", adapter.createNodeWebSocketUpgradeHandler(server, sockets));
  http.listen(port, "127.0.0.1", () => {
    process.stdout.write(`listening on http://127.0.0.1:${http.address().port}\n`);
  });
  const stop = async () => {
    await server.close();
    http.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
