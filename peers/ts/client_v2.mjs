// An ACP v2 client written with the official TypeScript SDK's `/experimental/v2` API, for acpio's
// router tests: it has no v1 fallback (a v1 answer to its initialize is an error, as in the SDK).
//
// Run: node peers/ts/client_v2.mjs --cwd DIR [--prompt TEXT]... [--timeout SECONDS] -- AGENT [ARGS...]
//
// It spawns AGENT, sends a v2 initialize (protocolVersion 2, info, capabilities {}), session/new with
// cwd DIR, then each --prompt as one turn: session/prompt (acknowledged at once in v2), then the
// session's updates until the idle state_update that ends the turn. It prints one JSON summary on
// stdout and exits 0 when the run got to its end, 1 when it could not ("fatal" says why):
//   {"sdkVersion", "protocolVersion", "agentInfo", "agentCapabilities", "sessionId",
//    "turns": [{"prompt", "ack", "text", "stopReason", "updates": [sessionUpdate kinds, in order]}],
//    "sdkErrors": [what the SDK reported on console.error/warn], "fatal"}

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { captureSdkComplaints, nodeModules } from "./sdk.mjs";

const USAGE = "usage: client_v2.mjs --cwd DIR [--prompt TEXT]... [--timeout SECONDS] -- AGENT [ARGS...]";

function parseArgs(argv) {
  const options = { cwd: null, prompts: [], timeout: 30, agent: [] };
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
    else if (arg === "--timeout") options.timeout = Number(value());
    else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (!options.cwd || options.agent.length === 0) throw new Error(USAGE);
  return options;
}

let options;
try {
  options = parseArgs(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`client_v2.mjs: ${error.message}\n`);
  process.exit(2);
}

const root = join(nodeModules(), "@agentclientprotocol", "sdk");
const v2 = await import(pathToFileURL(join(root, "dist", "v2", "stable", "acp.js")).href);
const summary = {
  sdkVersion: JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version,
  protocolVersion: null,
  agentInfo: null,
  agentCapabilities: null,
  sessionId: null,
  turns: [],
  sdkErrors: [],
  fatal: null,
};
captureSdkComplaints(summary.sdkErrors);

const child = spawn(options.agent[0], options.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = v2.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const timer = setTimeout(() => {
  summary.fatal = `timed out after ${options.timeout} s`;
  finish(1);
}, options.timeout * 1000);

function finish(code) {
  clearTimeout(timer);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  child.kill();
  process.exit(code);
}

try {
  await v2.client({ name: "ts-v2-client" }).connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: 2,
      info: { name: "ts-v2-client", version: summary.sdkVersion },
      capabilities: {},
    });
    summary.protocolVersion = init.protocolVersion;
    summary.agentInfo = init.info ?? null;
    summary.agentCapabilities = init.capabilities ?? null;
    const session = await ctx.buildSession(options.cwd).start();
    summary.sessionId = session.sessionId;
    for (const text of options.prompts) {
      const turn = { prompt: text, ack: null, text: "", stopReason: null, updates: [] };
      summary.turns.push(turn);
      turn.ack = await session.prompt(text);
      for (;;) {
        const message = await session.nextUpdate();
        turn.updates.push(message.update.sessionUpdate);
        if (message.update.sessionUpdate === "agent_message_chunk" && message.update.content?.type === "text") {
          turn.text += message.update.content.text;
        }
        if (message.kind === "stop") {
          turn.stopReason = message.stopReason ?? null;
          break;
        }
      }
    }
    session.dispose();
  });
} catch (error) {
  summary.fatal = `${error?.name ?? "Error"}: ${error?.message ?? String(error)}${
    error?.code !== undefined ? ` (code ${error.code}${error.data !== undefined ? `, data ${JSON.stringify(error.data)}` : ""})` : ""
  }`;
  finish(1);
}
finish(0);
