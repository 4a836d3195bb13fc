// An ACP client written with the official TypeScript SDK, for acpio's interoperability tests.
//
// Run: node peers/ts/client.mjs --cwd DIR [--load SESSION_ID] [--prompt TEXT]... [--cancel-prompt TEXT]
//                               [--permission allow|reject|cancel] [--cancel-with session|request]
//                               [--timeout SECONDS] -- AGENT [ARGS...]
//      node peers/ts/client.mjs --cwd DIR --url http://HOST:PORT|ws://HOST:PORT [--token TOKEN] [...]
//
// It spawns AGENT (or connects to the remote agent at --url with the SDK's experimental HTTP or
// WebSocket client, sending --token as a bearer token), sends initialize (fs read/write and terminal advertised), session/new with cwd DIR, each
// --prompt as one turn, then --cancel-prompt as a turn it cancels once the turn's first session/update
// arrives: with session/cancel, or with --cancel-with request, with $/cancel_request for the session/prompt
// request (the SDK's cancellationSignal). It answers the agent's requests: the file system is confined to DIR, terminals
// run real processes, permissions are answered per --permission (allow: the first allow_* option).
// It prints one JSON summary on stdout (see peers/README.md) and exits 0 when the run got to its end,
// 1 when it could not (the summary's "fatal" says why).

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { captureSdkComplaints, loadSdk } from "./sdk.mjs";

const USAGE =
  "usage: client.mjs --cwd DIR [--load SESSION_ID] [--prompt TEXT]... [--cancel-prompt TEXT] " +
  "[--permission allow|reject|cancel] [--cancel-with session|request] [--timeout SECONDS] -- AGENT [ARGS...]";

function parseArgs(argv) {
  const options = {
    cwd: null,
    prompts: [],
    cancelPrompt: null,
    permission: "allow",
    cancelWith: "session",
    timeout: 30,
    agent: [],
    url: null,
    token: null,
    load: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (arg === "--") {
      options.agent = argv.slice(i + 1);
      break;
    } else if (arg === "--cwd") options.cwd = resolve(value());
    else if (arg === "--prompt") options.prompts.push(value());
    else if (arg === "--cancel-prompt") options.cancelPrompt = value();
    else if (arg === "--permission") options.permission = value();
    else if (arg === "--cancel-with") options.cancelWith = value();
    else if (arg === "--timeout") options.timeout = Number(value());
    else if (arg === "--url") options.url = value();
    else if (arg === "--token") options.token = value();
    else if (arg === "--load") options.load = value();
    else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (!options.cwd || (options.agent.length === 0 && options.url === null)) throw new Error(USAGE);
  if (!["allow", "reject", "cancel"].includes(options.permission)) {
    throw new Error(`--permission must be allow, reject or cancel\n${USAGE}`);
  }
  if (!["session", "request"].includes(options.cancelWith)) {
    throw new Error(`--cancel-with must be session or request\n${USAGE}`);
  }
  return options;
}

let options;
try {
  options = parseArgs(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`client.mjs: ${error.message}\n`);
  process.exit(2);
}

const { sdk: acp, version } = await loadSdk();
const summary = {
  client: { name: "ts-peer-client", sdk: "@agentclientprotocol/sdk", version },
  initialize: null,
  newSession: null,
  loadSession: null,
  replay: [],
  turns: [],
  requests: [],
  notifications: [],
  terminals: [],
  sdkErrors: [],
  agentStderr: "",
  agentExit: null,
  fatal: null,
};
captureSdkComplaints(summary.sdkErrors);

/** The turn being read: its record and the callback run on its first update. */
let currentTurn = null;
/** Whether a session/load is waiting for its answer (its replayed updates go to summary.replay). */
let loading = false;

function errorRecord(error) {
  if (error && typeof error.code === "number") {
    return { code: error.code, message: error.message, data: error.data ?? null };
  }
  return { code: null, message: String(error?.message ?? error), data: null };
}

function confined(path) {
  if (!isAbsolute(path)) {
    throw acp.RequestError.invalidParams({ path }, `path must be absolute: ${path}`);
  }
  const inside = relative(options.cwd, resolve(path));
  if (inside.startsWith("..") || isAbsolute(inside)) {
    throw acp.RequestError.invalidParams({ path }, `path is outside the allowed directory ${options.cwd}: ${path}`);
  }
  return resolve(path);
}

// --- terminals: real processes ---------------------------------------------------------------------------

const terminals = new Map();

function createTerminal(params) {
  const id = `term-${randomUUID()}`;
  const limit = params.outputByteLimit ?? null;
  const env = { ...process.env };
  for (const variable of params.env ?? []) env[variable.name] = variable.value;
  const record = { command: params.command, args: params.args ?? [], cwd: params.cwd ?? null, exitStatus: null, output: "" };
  summary.terminals.push(record);
  const terminal = { output: Buffer.alloc(0), truncated: false, exitStatus: null, record, child: null };
  terminal.exited = new Promise((resolveExit) => {
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ?? options.cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    terminal.child = child;
    const collect = (data) => {
      let output = Buffer.concat([terminal.output, data]);
      if (limit !== null && output.length > limit) {
        output = output.subarray(output.length - limit);
        terminal.truncated = true;
      }
      terminal.output = output;
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", (error) => {
      collect(Buffer.from(`${error.message}\n`));
      terminal.exitStatus = { exitCode: 127, signal: null };
      resolveExit(terminal.exitStatus);
    });
    child.on("close", (code, signal) => {
      terminal.exitStatus = { exitCode: code, signal: signal ?? null };
      record.exitStatus = terminal.exitStatus;
      record.output = terminal.output.toString("utf8");
      resolveExit(terminal.exitStatus);
    });
  });
  terminals.set(id, terminal);
  return id;
}

function terminalFor(params) {
  const terminal = terminals.get(params.terminalId);
  if (!terminal) throw acp.RequestError.resourceNotFound(params.terminalId);
  return terminal;
}

// --- the client app ----------------------------------------------------------------------------------------

function record(method, params) {
  const entry = { method, params };
  summary.requests.push(entry);
  return entry;
}

const app = acp
  .client({ name: "ts-peer-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (currentTurn === null && loading) {
      summary.replay.push(params.update);
      return;
    }
    if (currentTurn === null) {
      summary.sdkErrors.push(`session/update outside a turn: ${JSON.stringify(params)}`);
      return;
    }
    currentTurn.record.updates.push(params.update);
    currentTurn.onUpdate?.();
  })
  .onNotification("*", ({ method, params }) => {
    summary.notifications.push({ method, params });
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const entry = record("session/request_permission", params);
    // While the turn is being cancelled, the spec wants pending permission requests answered `cancelled`.
    let outcome = { outcome: "cancelled" };
    if (!currentTurn?.cancelling && options.permission !== "cancel") {
      const prefix = options.permission === "allow" ? "allow" : "reject";
      const option = params.options.find((candidate) => candidate.kind.startsWith(prefix));
      if (option) outcome = { outcome: "selected", optionId: option.optionId };
    }
    entry.answer = outcome;
    return { outcome };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    record("fs/read_text_file", params);
    const path = confined(params.path);
    let text;
    try {
      text = await readFile(path, "utf8");
    } catch {
      throw acp.RequestError.resourceNotFound(params.path);
    }
    if (params.line != null || params.limit != null) {
      const lines = text.split("\n");
      const start = Math.max((params.line ?? 1) - 1, 0);
      const end = params.limit != null ? start + params.limit : lines.length;
      text = lines.slice(start, end).join("\n");
    }
    return { content: text };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    record("fs/write_text_file", params);
    const path = confined(params.path);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, params.content, "utf8");
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    record("terminal/create", params);
    return { terminalId: createTerminal(params) };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    record("terminal/output", params);
    const terminal = terminalFor(params);
    const response = { output: terminal.output.toString("utf8"), truncated: terminal.truncated };
    if (terminal.exitStatus) response.exitStatus = terminal.exitStatus;
    return response;
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    record("terminal/wait_for_exit", params);
    return await terminalFor(params).exited;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    record("terminal/kill", params);
    terminalFor(params).child?.kill("SIGTERM");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    record("terminal/release", params);
    const terminal = terminalFor(params);
    if (terminal.exitStatus === null) terminal.child?.kill("SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  });

// --- the run -------------------------------------------------------------------------------------------------

function withTimeout(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${options.timeout} s`)), options.timeout * 1000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function runTurn(agent, sessionId, text, cancel) {
  const turn = { prompt: text, cancelled: cancel, updates: [], stopReason: null, error: null };
  summary.turns.push(turn);
  currentTurn = { record: turn, cancelling: false, onUpdate: null };
  const abort = new AbortController();
  if (cancel) {
    turn.cancelWith = options.cancelWith;
    const current = currentTurn;
    current.onUpdate = () => {
      current.onUpdate = null;
      current.cancelling = true;
      if (options.cancelWith === "request") abort.abort();
      else void agent.notify(acp.methods.agent.session.cancel, { sessionId });
    };
  }
  try {
    const response = await withTimeout(
      agent.request(
        acp.methods.agent.session.prompt,
        { sessionId, prompt: [{ type: "text", text }] },
        { cancellationSignal: abort.signal },
      ),
      "session/prompt",
    );
    turn.stopReason = response.stopReason;
  } catch (error) {
    turn.error = errorRecord(error);
  } finally {
    currentTurn = null;
  }
}

let child = null;
let exited = Promise.resolve();
let stream;
if (options.url !== null) {
  const { pathToFileURL } = await import("node:url");
  const { nodeModules } = await import("./sdk.mjs");
  const transports = resolve(nodeModules(), "@agentclientprotocol", "sdk", "dist", "transports");
  const headers = options.token === null ? {} : { Authorization: `Bearer ${options.token}` };
  if (options.url.startsWith("ws")) {
    const { createWebSocketStream } = await import(pathToFileURL(resolve(transports, "ws-stream.js")).href);
    const { default: WebSocket } = await import(pathToFileURL(resolve(nodeModules(), "ws", "wrapper.mjs")).href);
    stream = createWebSocketStream(options.url, { headers, WebSocket });
  } else {
    const { createHttpStream } = await import(pathToFileURL(resolve(transports, "http-stream.js")).href);
    stream = createHttpStream(options.url, { headers });
  }
} else {
  child = spawn(options.agent[0], options.agent.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.on("data", (data) => {
    summary.agentStderr = (summary.agentStderr + data.toString("utf8")).slice(-16_384);
  });
  exited = new Promise((resolveExit) => {
    child.on("error", (error) => {
      summary.fatal ??= `cannot start the agent ${options.agent[0]}: ${error.message}`;
      resolveExit();
    });
    child.on("exit", (code, signal) => {
      summary.agentExit = { code, signal };
      resolveExit();
    });
  });

  stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
}

try {
  await app.connectWith(stream, async (agent) => {
    summary.initialize = await withTimeout(
      agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
        clientInfo: { name: "ts-peer-client", version },
      }),
      "initialize",
    );
    let sessionId = options.load;
    if (sessionId === null) {
      summary.newSession = await withTimeout(
        agent.request(acp.methods.agent.session.new, { cwd: options.cwd, mcpServers: [] }),
        "session/new",
      );
      sessionId = summary.newSession.sessionId;
    } else {
      loading = true;
      try {
        summary.loadSession = await withTimeout(
          agent.request(acp.methods.agent.session.load, { sessionId, cwd: options.cwd, mcpServers: [] }),
          "session/load",
        );
      } finally {
        loading = false;
      }
    }
    for (const text of options.prompts) await runTurn(agent, sessionId, text, false);
    if (options.cancelPrompt !== null) await runTurn(agent, sessionId, options.cancelPrompt, true);
  });
} catch (error) {
  summary.fatal ??= `${error?.name ?? "Error"}: ${error?.message ?? error}`;
}

// End the agent: close its stdin, give it 3 s to exit, then SIGTERM.
child?.stdin.end();
const grace = setTimeout(() => child?.kill("SIGTERM"), 3000);
await exited;
clearTimeout(grace);
for (const terminal of terminals.values()) {
  if (terminal.exitStatus === null) terminal.child?.kill("SIGKILL");
}
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exitCode = summary.fatal === null ? 0 : 1;
