// An ACP v2 agent written with the official TypeScript SDK's `/experimental/v2` API, for acpio's
// negotiating-client tests.
//
// Run: node peers/ts/agent_v2.mjs                 (a v2 agent on stdin/stdout)
//      node peers/ts/agent_v2.mjs --router v1|v2|both
//                                                 (the SDK's AgentProtocolRouter, serving a small v1
//                                                  agent, this v2 agent, or both, on stdin/stdout)
//
// The v2 turn of a prompt TEXT (session/prompt is answered at once with the user message's id; the
// turn then runs on, and ends with an idle state_update):
//   1. user_message (the prompt), state_update running;
//   2. agent_thought_chunk "thinking", then TEXT as agent_message_chunks, one per word, all with the
//      same messageId;
//   3. plan_update (plan `p1`, two entries);
//   4. tool_call_update creating `edit-1` (pending), then state_update requires_action and
//      session/request_permission (title, subject tool_call); anything but `allow-once` marks `edit-1`
//      failed, says "permission denied" and ends the turn;
//   5. state_update running, `edit-1` completed with a diff (`changes` + a git patch);
//   6. terminal_update `term-1` (command, cwd, a base64 snapshot "hello "), terminal_output_chunk
//      (base64 "world\n"), terminal_update with exitStatus 0; tool_call_update `run-1` referencing it;
//   7. agent_message_chunk " done", state_update idle end_turn.
// A prompt "wait" sends running, one chunk, and waits for session/cancel: idle `cancelled`.
// The v1 agent behind --router answers each prompt with the chunk "v1 agent: TEXT (fs: yes|no)",
// saying whether the client advertised fs.readTextFile, and ends end_turn.

import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { nodeModules } from "./sdk.mjs";

const root = join(nodeModules(), "@agentclientprotocol", "sdk");
const v2 = await import(pathToFileURL(join(root, "dist", "v2", "stable", "acp.js")).href);
const v1 = await import(pathToFileURL(join(root, "dist", "v1", "stable", "acp.js")).href);

const WAIT_LIMIT_MS = 30_000;
const b64 = (text) => Buffer.from(text, "utf8").toString("base64");

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

function words(text) {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function v2Agent() {
  const sessions = new Map();
  let next = 1;

  async function runTurn(client, sessionId, session, text, userId) {
    const n = next++;
    const agentId = `agent-${n}`;
    const update = (body) => client.notify(v2.methods.client.session.update, { sessionId, update: body });
    const state = (state, extra = {}) => update({ sessionUpdate: "state_update", state, ...extra });
    const say = (chunk) =>
      update({ sessionUpdate: "agent_message_chunk", messageId: agentId, content: { type: "text", text: chunk } });

    await update({ sessionUpdate: "user_message", messageId: userId, content: [{ type: "text", text }] });
    await state("running");
    if (text.trim() === "wait") {
      await say("waiting for cancel");
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, WAIT_LIMIT_MS);
        session.cancel = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      await state("idle", { stopReason: "cancelled" });
      return;
    }
    await update({
      sessionUpdate: "agent_thought_chunk",
      messageId: `thought-${n}`,
      content: { type: "text", text: "thinking" },
    });
    for (const word of words(text)) await say(word);
    await update({
      sessionUpdate: "plan_update",
      plan: {
        type: "items",
        planId: "p1",
        entries: [
          { content: "edit the file", priority: "high", status: "in_progress" },
          { content: "run the command", priority: "medium", status: "pending" },
        ],
      },
    });
    const path = join(session.cwd, "notes.txt");
    await update({ sessionUpdate: "tool_call_update", toolCallId: "edit-1", title: "Edit notes.txt", kind: "edit", status: "pending" });
    await state("requires_action");
    const answer = await client.request(v2.methods.client.session.requestPermission, {
      sessionId,
      title: "Edit notes.txt?",
      subject: { type: "tool_call", toolCall: { toolCallId: "edit-1", title: "Edit notes.txt" } },
      options: [
        { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
        { optionId: "reject-once", name: "Reject", kind: "reject_once" },
      ],
    });
    await state("running");
    if (answer.outcome.outcome !== "selected" || answer.outcome.optionId !== "allow-once") {
      await update({ sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "failed" });
      await say("permission denied");
      await state("idle", { stopReason: "end_turn" });
      return;
    }
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "edit-1",
      status: "completed",
      content: [
        {
          type: "diff",
          changes: [{ operation: "modify", path }],
          patch: {
            format: "git_patch",
            text: `diff --git a${path} b${path}\n--- a${path}\n+++ b${path}\n@@ -1 +1 @@\n-old\n+new\n`,
          },
        },
      ],
    });
    await update({
      sessionUpdate: "terminal_update",
      terminalId: "term-1",
      command: "echo hello world",
      cwd: session.cwd,
      output: { data: b64("hello ") },
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "run-1", title: "echo hello world", kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: "term-1" }] });
    await update({ sessionUpdate: "terminal_output_chunk", terminalId: "term-1", data: b64("world\n") });
    await update({ sessionUpdate: "terminal_update", terminalId: "term-1", exitStatus: { exitCode: 0 } });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "run-1", status: "completed" });
    await say(" done");
    await state("idle", { stopReason: "end_turn" });
  }

  return v2
    .agent({ name: "ts-peer-agent-v2" })
    .onRequest(v2.methods.agent.initialize, ({ params }) => ({
      protocolVersion: 2,
      info: { name: "ts-peer-agent-v2", version: "1.0.0" },
      capabilities: { session: {} },
      _meta: { clientName: params.info.name },
    }))
    .onRequest(v2.methods.agent.session.new, ({ params }) => {
      const sessionId = `ts-v2-session-${next++}`;
      sessions.set(sessionId, { cwd: params.cwd, cancel: null });
      return { sessionId };
    })
    .onRequest(v2.methods.agent.session.prompt, ({ params, client }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw v2.RequestError.invalidParams(undefined, `unknown session ${params.sessionId}`);
      const userId = `user-${next++}`;
      // The answer only acknowledges the prompt: the turn runs on and ends with an idle state_update.
      setImmediate(() => {
        runTurn(client, params.sessionId, session, textOf(params.prompt), userId).catch((error) =>
          console.error("turn failed", error),
        );
      });
      return { messageId: userId };
    })
    .onNotification(v2.methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.cancel?.();
    });
}

function v1Agent() {
  let fsAdvertised = false;
  let next = 1;
  return v1
    .agent({ name: "ts-peer-agent-v1" })
    .onRequest(v1.methods.agent.initialize, ({ params }) => {
      fsAdvertised = Boolean(params.clientCapabilities?.fs?.readTextFile);
      return { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "ts-peer-agent-v1", version: "1.0.0" } };
    })
    .onRequest(v1.methods.agent.session.new, () => ({ sessionId: `ts-v1-session-${next++}` }))
    .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
      await client.notify(v1.methods.client.session.update, {
        sessionId: params.sessionId,
        update: {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: `v1 agent: ${textOf(params.prompt)} (fs: ${fsAdvertised ? "yes" : "no"})` },
        },
      });
      return { stopReason: "end_turn" };
    })
    .onNotification(v1.methods.agent.session.cancel, () => {});
}

const stream = v2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const routerAt = process.argv.indexOf("--router");
let connection;
if (routerAt >= 0) {
  const which = process.argv[routerAt + 1];
  if (!["v1", "v2", "both"].includes(which)) {
    console.error(`--router takes v1, v2 or both; got ${which}`);
    process.exit(2);
  }
  const router = v2.agentProtocolRouter();
  if (which !== "v2") router.withV1(v1Agent());
  if (which !== "v1") router.withV2(v2Agent());
  connection = router.connect(stream);
} else {
  connection = v2Agent().connect(stream);
}
await connection.closed;
