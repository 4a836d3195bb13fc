// An ACP agent written with the official TypeScript SDK, for acpio's interoperability tests.
//
// Run: node peers/ts/agent.mjs   (speaks ACP v1 on stdin/stdout; see peers/README.md for its turn)
//      node peers/ts/agent.mjs --listen PORT   (the SDK's experimental AcpServer: Streamable HTTP and
//      WebSocket on 127.0.0.1:PORT, 0 for any; prints `listening on http://127.0.0.1:N` once ready)
//
// A prompt whose text is "wait" streams one chunk, then waits for session/cancel (at most 30 s) and
// ends the turn with `cancelled`. Any other prompt runs the full turn:
//   1. the prompt text streamed back as agent_message_chunks, one per word (spaces kept);
//   2. tool call `edit-1` (kind edit) and session/request_permission for it (allow-once / reject-once);
//      a rejected or cancelled permission fails the tool call, says "permission denied" and ends the turn;
//   3. fs/read_text_file <cwd>/input.txt, fs/write_text_file <cwd>/output.txt with that text upper-cased,
//      and `edit-1` completed with a diff (oldText null);
//   4. tool call `run-1` (kind execute): terminal/create `echo terminal works`, terminal/wait_for_exit,
//      terminal/output, terminal/release; `run-1` completed (exit 0) or failed;
//   5. a closing chunk "done: read N chars, wrote output.txt, terminal said: ... (exit N)", then end_turn.
// A step the client did not advertise (fs, terminal) is skipped with a message chunk saying so.
// session/cancel stops the turn at its next step and the prompt is answered `cancelled`.

import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { loadSdk } from "./sdk.mjs";

const { sdk: acp, version } = await loadSdk();

const WAIT_LIMIT_MS = 30_000;

/** Per-session state: the working directory and the cancel switch of the running turn. */
const sessions = new Map();
let clientCapabilities = {};
let nextSession = 1;

class Cancelled extends Error {}

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** "a b  c" -> ["a ", "b ", " ", "c"]: one chunk per word, every space kept. */
function words(text) {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

async function runTurn(client, sessionId, session, text, signal) {
  const check = () => {
    if (signal.aborted) throw new Cancelled();
  };
  const update = async (body) => {
    check();
    await client.notify(acp.methods.client.session.update, { sessionId, update: body });
  };
  const say = (chunk) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk } });

  if (text.trim() === "wait") {
    await say("waiting for cancel");
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, WAIT_LIMIT_MS);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    check();
    return "end_turn";
  }

  for (const word of words(text)) await say(word);

  const inputPath = join(session.cwd, "input.txt");
  const outputPath = join(session.cwd, "output.txt");
  const editCall = { toolCallId: "edit-1", title: "Copy input.txt to output.txt in upper case", kind: "edit" };
  await update({
    sessionUpdate: "tool_call",
    ...editCall,
    status: "pending",
    locations: [{ path: inputPath }, { path: outputPath }],
  });
  check();
  const permission = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { ...editCall, status: "pending" },
    options: [
      { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
      { optionId: "reject-once", name: "Reject", kind: "reject_once" },
    ],
  });
  check();
  const allowed = permission.outcome.outcome === "selected" && permission.outcome.optionId === "allow-once";
  if (!allowed) {
    await update({ sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "failed" });
    await say("permission denied");
    return "end_turn";
  }

  let readLength = 0;
  const fs = clientCapabilities.fs ?? {};
  if (fs.readTextFile && fs.writeTextFile) {
    await update({ sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "in_progress" });
    const read = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: inputPath });
    check();
    readLength = read.content.length;
    const newText = read.content.toUpperCase();
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: outputPath, content: newText });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "edit-1",
      status: "completed",
      content: [{ type: "diff", path: outputPath, oldText: null, newText }],
    });
  } else {
    await update({ sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "failed" });
    await say("the client has no fs capability; skipping the file step. ");
  }

  let terminalSaid = "(no terminal)";
  let exitCode = null;
  if (clientCapabilities.terminal) {
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "run-1",
      title: "echo terminal works",
      kind: "execute",
      status: "in_progress",
    });
    const terminal = await client.createTerminal({
      sessionId,
      command: "echo",
      args: ["terminal", "works"],
      cwd: session.cwd,
    });
    try {
      await update({
        sessionUpdate: "tool_call_update",
        toolCallId: "run-1",
        content: [{ type: "terminal", terminalId: terminal.id }],
      });
      const exit = await terminal.waitForExit();
      const output = await terminal.currentOutput();
      exitCode = exit.exitCode ?? null;
      terminalSaid = output.output.trim();
    } finally {
      await terminal.release();
    }
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "run-1",
      status: exitCode === 0 ? "completed" : "failed",
      content: [{ type: "content", content: { type: "text", text: terminalSaid } }],
    });
  } else {
    await say("the client has no terminal capability; skipping the terminal step. ");
  }

  await say(`done: read ${readLength} chars, wrote output.txt, terminal said: ${terminalSaid} (exit ${exitCode})`);
  return "end_turn";
}

const app = acp
  .agent({ name: "ts-peer-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? {};
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "ts-peer-agent", title: "TypeScript SDK peer agent", version },
      authMethods: [],
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-session-${nextSession++}`;
    sessions.set(sessionId, { cwd: params.cwd, turn: null });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) {
      throw acp.RequestError.invalidParams(undefined, `unknown session ${params.sessionId}`);
    }
    session.turn?.abort();
    const turn = new AbortController();
    session.turn = turn;
    try {
      const stopReason = await runTurn(client, params.sessionId, session, textOf(params.prompt), turn.signal);
      return { stopReason };
    } catch (error) {
      if (error instanceof Cancelled || turn.signal.aborted) return { stopReason: "cancelled" };
      throw error;
    } finally {
      if (session.turn === turn) session.turn = null;
    }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
  });

const listenAt = process.argv.indexOf("--listen");
if (listenAt >= 0) {
  const { nodeModules } = await import("./sdk.mjs");
  const { listen } = await import("./listen.mjs");
  await listen(app, Number(process.argv[listenAt + 1] ?? "0"), nodeModules());
} else {
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await connection.closed;
}
