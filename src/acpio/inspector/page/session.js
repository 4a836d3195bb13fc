// The session as a person sees it, built from the frames: the conversation (prompts, the agent's
// text and thoughts), tool calls with their status and diffs, the plan, the usage, and what the agent
// offers (slash commands, modes, config options), handed to the controls through `offers`.

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function blockText(block) {
  if (!block || typeof block !== "object") return "";
  if (block.type === "text") return block.text || "";
  if (block.type === "resource_link") return `[${block.name || block.uri}](${block.uri})`;
  if (block.type === "resource") return `[resource ${block.resource && block.resource.uri}]`;
  if (block.type === "image") return "[image]";
  return `[${block.type}]`;
}

function diffView(item) {
  const box = el("div", "diff");
  box.append(el("div", "path", item.path || ""));
  const old = item.oldText ? item.oldText.split("\n") : [];
  const neu = (item.newText || "").split("\n");
  for (const line of old) if (!neu.includes(line)) box.append(el("div", "del", "- " + line));
  for (const line of neu) if (!old.includes(line)) box.append(el("div", "add", "+ " + line));
  return box;
}

export class SessionView {
  constructor(offers) {
    this.offers = offers;
    this.conversation = document.getElementById("conversation");
    this.plan = document.getElementById("plan");
    this.usage = document.getElementById("usage");
    this.tools = new Map();
    this.last = null;
  }

  event(ev) {
    if (ev.type === "request" && ev.method === "session/prompt" && ev.params) {
      const text = (ev.params.prompt || []).map(blockText).join("\n");
      this.message("user", text);
    } else if (ev.type === "notification" && ev.method === "session/update" && ev.params) {
      this.update(ev.params.update || {});
    } else if (ev.type === "response" && !ev.is_error && ev.payload) {
      if (ev.method === "session/prompt") {
        this.conversation.append(el("div", "stop", `stop reason: ${ev.payload.stopReason}`));
        this.last = null;
        if (ev.payload.usage) this.showUsage(ev.payload.usage);
      } else if (["session/new", "session/load", "session/resume", "session/fork"].includes(ev.method)) {
        this.offers.session(ev.payload.sessionId, ev.payload.modes, ev.payload.configOptions);
      } else if (ev.method === "session/set_config_option") {
        this.offers.options(ev.payload.configOptions);
      }
    }
  }

  message(kind, text) {
    if (this.last && this.last.kind === kind && kind !== "user") {
      this.last.node.textContent += text;
      return;
    }
    const node = el("div", `msg ${kind}`, text);
    this.conversation.append(node);
    this.last = { kind, node };
  }

  update(u) {
    const kind = u.sessionUpdate;
    if (kind === "agent_message_chunk") this.message("agent", blockText(u.content));
    else if (kind === "agent_thought_chunk") this.message("thought", blockText(u.content));
    else if (kind === "user_message_chunk") this.message("user", blockText(u.content));
    else if (kind === "tool_call" || kind === "tool_call_update") this.tool(u);
    else if (kind === "plan") this.showPlan(u.entries || []);
    else if (kind === "available_commands_update") this.offers.commands(u.availableCommands || []);
    else if (kind === "current_mode_update") this.offers.mode(u.currentModeId);
    else if (kind === "config_option_update") this.offers.options(u.configOptions);
    else if (kind === "usage_update") this.showUsage(u);
  }

  tool(u) {
    let card = this.tools.get(u.toolCallId);
    if (!card) {
      card = { node: el("div", "tool"), title: el("b"), status: el("span", "status"), body: el("div") };
      card.node.dataset.toolCallId = u.toolCallId;
      card.node.append(card.title, " ", card.status, card.body);
      this.tools.set(u.toolCallId, card);
      this.conversation.append(card.node);
      this.last = null;
    }
    if (u.title) card.title.textContent = u.title;
    if (u.status) card.status.textContent = u.status;
    if (u.content) {
      card.body.replaceChildren();
      for (const item of u.content) {
        if (item.type === "diff") card.body.append(diffView(item));
        else if (item.type === "content") card.body.append(el("div", "", blockText(item.content)));
        else if (item.type === "terminal") card.body.append(el("div", "", `terminal ${item.terminalId}`));
      }
    }
  }

  showPlan(entries) {
    this.plan.replaceChildren(...entries.map((e) => el("li", e.status, e.content)));
  }

  showUsage(u) {
    this.usage.textContent = "usage: " + JSON.stringify(u);
  }
}
