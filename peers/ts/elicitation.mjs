// Elicitation with the official TypeScript SDK, for acpio's interoperability tests; two roles.
//
// Run: node peers/ts/elicitation.mjs client --cwd DIR --prompt TEXT -- AGENT [ARGS...]
//      node peers/ts/elicitation.mjs agent
//
// client: spawns AGENT, initializes advertising form and URL elicitation, opens a session in DIR and
//   sends TEXT as one turn. It answers every elicitation/create: a form is accepted with a value for
//   each field, chosen from the field's schema (the first choice, the minimum, true, "ts-peer"); a URL
//   is accepted. It prints one JSON summary on stdout: {elicitations, answers, notifications, updates,
//   stopReason, sdkErrors, fatal}, and exits 0 when the turn ended, 1 otherwise.
// agent: an ACP agent on stdio. Each prompt asks, when the client advertised them, a form
//   (elicitation/create, mode form: a string, an integer, a boolean, a choice and several choices) and
//   then a URL (mode url, then elicitation/complete after an accept), and says each answer as an
//   agent message ("form: ACTION JSON", "url: ACTION").

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { captureSdkComplaints, loadSdk } from "./sdk.mjs";

const { sdk: acp, version } = await loadSdk();
const role = process.argv[2];

/** A value the form field accepts, from its schema. */
function valueFor(field) {
  if (field.type === "boolean") return true;
  if (field.type === "integer" || field.type === "number") return field.minimum ?? 1;
  if (field.type === "array") {
    const items = field.items ?? {};
    const choices = items.enum ?? (items.anyOf ?? []).map((option) => option.const);
    return choices.slice(0, 1);
  }
  if (field.enum) return field.enum[0];
  if (field.oneOf) return field.oneOf[0].const;
  if (field.format === "email") return "ts-peer@example.com";
  return "ts-peer";
}

async function runClient(argv) {
  const dash = argv.indexOf("--");
  const agentArgv = argv.slice(dash + 1);
  const cwd = argv[argv.indexOf("--cwd") + 1];
  const text = argv[argv.indexOf("--prompt") + 1];
  const summary = { elicitations: [], answers: [], notifications: [], updates: [], stopReason: null, sdkErrors: [], fatal: null };
  captureSdkComplaints(summary.sdkErrors);
  const child = spawn(agentArgv[0], agentArgv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const app = acp
    .client({ name: "ts-peer-elicitation-client" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      summary.updates.push(params.update);
    })
    .onNotification("*", ({ method, params }) => {
      summary.notifications.push({ method, params });
    })
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
      summary.elicitations.push(params);
      let answer = { action: "accept" };
      if (params.mode === "form") {
        const content = {};
        for (const [name, field] of Object.entries(params.requestedSchema.properties ?? {})) content[name] = valueFor(field);
        answer = { action: "accept", content };
      }
      summary.answers.push(answer);
      return answer;
    });
  try {
    const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
    await app.connectWith(stream, async (agent) => {
      await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { elicitation: { form: {}, url: {} } },
        clientInfo: { name: "ts-peer-elicitation-client", version },
      });
      const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      const response = await agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text }],
      });
      summary.stopReason = response.stopReason;
    });
  } catch (error) {
    summary.fatal = `${error?.name ?? "Error"}: ${error?.message ?? error}`;
  }
  child.stdin.end();
  const grace = setTimeout(() => child.kill("SIGTERM"), 3000);
  await exited;
  clearTimeout(grace);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exitCode = summary.fatal === null && summary.stopReason !== null ? 0 : 1;
}

const FORM = {
  type: "object",
  properties: {
    name: { type: "string", title: "Name", minLength: 1 },
    age: { type: "integer", title: "Age", minimum: 0 },
    agree: { type: "boolean", title: "Agree", default: false },
    colour: { type: "string", title: "Colour", enum: ["red", "green"] },
    tags: { type: "array", title: "Tags", items: { type: "string", enum: ["a", "b", "c"] } },
  },
  required: ["name"],
};

async function runAgent() {
  let clientCapabilities = {};
  let nextSession = 1;
  const app = acp
    .agent({ name: "ts-peer-elicitation-agent" })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      clientCapabilities = params.clientCapabilities ?? {};
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false },
        agentInfo: { name: "ts-peer-elicitation-agent", version },
      };
    })
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `ts-elicit-${nextSession++}` }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const sessionId = params.sessionId;
      const say = (text) =>
        client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
        });
      const modes = clientCapabilities.elicitation ?? {};
      if (modes.form) {
        const answer = await client.request(acp.methods.client.elicitation.create, {
          sessionId,
          mode: "form",
          message: "Tell the TypeScript agent about you",
          requestedSchema: FORM,
        });
        await say(`form: ${answer.action} ${JSON.stringify(answer.content ?? null)}\n`);
      } else {
        await say("form: not advertised\n");
      }
      if (modes.url) {
        const answer = await client.request(acp.methods.client.elicitation.create, {
          sessionId,
          mode: "url",
          message: "Authorize the TypeScript agent",
          elicitationId: "ts-url-1",
          url: "https://example.com/ts-authorize",
        });
        if (answer.action === "accept") {
          await client.notify(acp.methods.client.elicitation.complete, { elicitationId: "ts-url-1" });
        }
        await say(`url: ${answer.action}\n`);
      } else {
        await say("url: not advertised\n");
      }
      return { stopReason: "end_turn" };
    });
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await connection.closed;
}

if (role === "client") await runClient(process.argv.slice(3));
else if (role === "agent") await runAgent();
else {
  process.stderr.write("usage: elicitation.mjs client --cwd DIR --prompt TEXT -- AGENT... | elicitation.mjs agent\n");
  process.exit(2);
}
