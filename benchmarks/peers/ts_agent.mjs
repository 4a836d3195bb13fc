// The benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk), in its app style:
// `agent()` with typed `onRequest` handlers (params parsed by the SDK's schemas), served over stdio with
// `ndJsonStream`. The same behaviour as acpio_agent.py; each update is sent with `await client.notify(...)`.
//
//   node ts_agent.mjs --node-modules <dir holding @agentclientprotocol/sdk> [--listen PORT]
//
// With --listen, the SDK's experimental AcpServer serves it over Streamable HTTP and WebSocket on
// 127.0.0.1:PORT (0: any), one agent connection per remote connection (benchmarks/remote.py); it prints
// `listening on http://127.0.0.1:N` once ready.
import { createRequire } from "node:module";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const STREAM_PREFIX = "stream ";

const { values } = parseArgs({ options: { "node-modules": { type: "string" }, listen: { type: "string" } } });
if (!values["node-modules"]) {
  console.error("ts_agent.mjs: --node-modules <dir> is required (the directory holding @agentclientprotocol/sdk)");
  process.exit(2);
}
const require = createRequire(join(values["node-modules"], "resolve.js"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

function requestedUpdates(prompt) {
  const first = prompt[0];
  if (first && first.type === "text" && first.text.startsWith(STREAM_PREFIX)) {
    return Number.parseInt(first.text.slice(STREAM_PREFIX.length), 10);
  }
  return 0;
}

const app = acp
  .agent({ name: "bench-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => ({
    protocolVersion: Math.min(params.protocolVersion, acp.PROTOCOL_VERSION),
  }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: "bench-1" }))
  .onRequest(acp.methods.agent.session.setMode, () => ({}))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const count = requestedUpdates(params.prompt);
    for (let i = 0; i < count; i++) {
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "chunk" } },
      });
    }
    return { stopReason: "end_turn" };
  });

if (values.listen !== undefined) {
  const { listen } = await import("../../peers/ts/listen.mjs");
  await listen(app, Number(values.listen), values["node-modules"]);
} else {
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await connection.closed;
}
