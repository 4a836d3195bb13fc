// The benchmark client on the official TypeScript SDK (@agentclientprotocol/sdk), in its app style:
// `client()` with a typed `session/update` handler (params parsed by the SDK's schemas) that counts the
// updates, `connectWith` over `ndJsonStream` on the spawned agent's pipes. Same command line and report as
// the Python clients (see _harness.py), plus --node-modules.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const MODE_ID = "bench";
const IDLE_SETTLE_MS = 200;

const { values: args } = parseArgs({
  options: {
    "node-modules": { type: "string" },
    agent: { type: "string" },
    requests: { type: "string", default: "0" },
    "warmup-requests": { type: "string", default: "0" },
    updates: { type: "string", default: "0" },
    "warmup-updates": { type: "string", default: "0" },
    spawns: { type: "string", default: "0" },
    cwd: { type: "string", default: process.cwd() },
    url: { type: "string" },
  },
});
if (!args["node-modules"] || !(args.agent || args.url)) {
  console.error("ts_client.mjs: --node-modules <dir> and --agent '<json argv>' (or --url URL) are required");
  process.exit(2);
}
const require = createRequire(join(args["node-modules"], "resolve.js"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const argv = args.agent ? JSON.parse(args.agent) : null;
const count = (name) => Number.parseInt(args[name], 10);

function memoryMb(pid, field) {
  for (const line of readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
    const [name, value] = line.split(":");
    if (name === field) return (Number.parseInt(value.trim().split(/\s+/)[0], 10) * 1024) / 1e6;
  }
  throw new Error(`/proc/${pid}/status has no ${field} line`);
}

function spawnAgent() {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream };
}

// --url: the SDK's experimental remote clients (benchmarks/remote.py); no child, so no memory figures.
async function connectRemote() {
  const transports = join(args["node-modules"], "@agentclientprotocol", "sdk", "dist", "transports");
  if (args.url.startsWith("ws")) {
    const { createWebSocketStream } = await import(pathToFileURL(join(transports, "ws-stream.js")).href);
    const { default: WebSocket } = await import(pathToFileURL(join(args["node-modules"], "ws", "wrapper.mjs")).href);
    return { child: null, stream: createWebSocketStream(args.url, { WebSocket }) };
  }
  const { createHttpStream } = await import(pathToFileURL(join(transports, "http-stream.js")).href);
  return { child: null, stream: createHttpStream(args.url) };
}

async function endAgent(child) {
  if (child === null) return;
  const exited = once(child, "exit");
  child.stdin.end();
  await exited;
}

async function sessionRun() {
  let received = 0;
  const app = acp.client({ name: "bench-client" }).onNotification(acp.methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") received++;
  });
  const { child, stream } = args.url ? await connectRemote() : spawnAgent();
  const figures = await app.connectWith(stream, async (agent) => {
    await agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const session = await agent.request(acp.methods.agent.session.new, { cwd: args.cwd, mcpServers: [] });
    await sleep(IDLE_SETTLE_MS);
    const figures = child === null ? {} : { idle_rss_mb: memoryMb(child.pid, "VmRSS") };
    const roundTrip = () =>
      agent.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: MODE_ID });
    const requests = count("requests");
    if (requests) {
      for (let i = 0; i < count("warmup-requests"); i++) await roundTrip();
      const latencies = new Float64Array(requests);
      const start = performance.now();
      for (let i = 0; i < requests; i++) {
        const t0 = performance.now();
        await roundTrip();
        latencies[i] = performance.now() - t0;
      }
      const elapsed = (performance.now() - start) / 1e3;
      latencies.sort();
      figures.req_per_s = requests / elapsed;
      figures.p50_us = latencies[Math.floor(requests / 2)] * 1e3;
      figures.p99_us = latencies[Math.min(requests - 1, Math.floor(requests * 0.99))] * 1e3;
    }
    const stream = async (updates) => {
      received = 0;
      const start = performance.now();
      await agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: `stream ${updates}` }],
      });
      const elapsed = (performance.now() - start) / 1e3;
      if (received !== updates) {
        throw new Error(`the client's session/update handler counted ${received} updates, expected ${updates}`);
      }
      return elapsed;
    };
    const updates = count("updates");
    if (updates) {
      if (count("warmup-updates")) await stream(count("warmup-updates"));
      figures.msgs_per_s = updates / (await stream(updates));
      if (child !== null) figures.peak_rss_mb = memoryMb(child.pid, "VmHWM");
    }
    return figures;
  });
  await endAgent(child);
  return figures;
}

async function spawnRun(spawns) {
  const times = [];
  for (let i = 0; i < spawns; i++) {
    const start = performance.now();
    const { child, stream } = spawnAgent();
    const answered = await acp.client({ name: "bench-client" }).connectWith(stream, async (agent) => {
      await agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      return performance.now();
    });
    times.push(answered - start);
    await endAgent(child);
  }
  return { spawn_ms: times };
}

const figures = count("spawns") ? await spawnRun(count("spawns")) : await sessionRun();
process.stdout.write(JSON.stringify(figures) + "\n");
if (args.url) process.exit(0); // a remote stream may hold the event loop open after the connection ended
