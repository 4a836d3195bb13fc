// The inspector's page: the live feed over a WebSocket (/ws), the controls that drive the agent, the
// agent's requests waiting for an answer, the warnings. Commands are JSON objects (see
// acpio/inspector/commands.py); the feed's messages are described in acpio/inspector/record.py.
import { SessionView } from "/static/session.js";

const $ = (id) => document.getElementById(id);
const state = { session: null, root: "", live: false, proxy: false, paused: false, warnings: 0, frames: new Map() };
let socket = null;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function status(kind, text) {
  $("status").className = "status " + kind;
  $("status-text").textContent = text;
}

function note(text, level) {
  const item = el("li", level || "", text);
  $("notes").prepend(item);
}

function command(op, fields) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return note("not connected to acpio inspect", "error");
  socket.send(JSON.stringify({ op, ...fields }));
}

function send(method, params, notification) {
  command("send", { method, params, notification: !!notification });
}

function needSession() {
  if (!state.session) note("no session yet: press session/new (or load one)", "error");
  return state.session;
}

// --- what the agent offers, set by SessionView ----------------------------------------------------
const offers = {
  session(id, modes, options) {
    if (id) setSession(id);
    if (modes) {
      $("mode").replaceChildren(...(modes.availableModes || []).map((m) => new Option(m.name || m.id, m.id)));
      $("mode").value = modes.currentModeId;
    }
    if (options) offers.options(options);
  },
  mode(id) { $("mode").value = id; },
  commands(list) {
    $("commands").replaceChildren(...list.map((c) => {
      const b = el("button", "", "/" + c.name);
      b.title = c.description || "";
      b.addEventListener("click", () => { $("prompt-text").value = `/${c.name} `; $("prompt-text").focus(); });
      return b;
    }));
  },
  options(list) {
    if (!list) return;
    $("options").replaceChildren(...list.map((o) => {
      const label = el("label", "", o.name || o.id);
      const field = el("select");
      field.dataset.option = o.id;
      if (o.type === "boolean") {
        field.append(new Option("true", "true"), new Option("false", "false"));
        field.value = String(o.currentValue);
      } else {
        for (const v of o.options || []) field.append(new Option(v.name || v.value, v.value));
        field.value = o.currentValue;
      }
      field.addEventListener("change", () => {
        if (!needSession()) return;
        const value = o.type === "boolean" ? field.value === "true" : field.value;
        const params = { sessionId: state.session, configId: o.id, value };
        if (o.type === "boolean") params.type = "boolean";
        send("session/set_config_option", params);
      });
      label.append(field);
      return label;
    }));
  },
};
const session = new SessionView(offers);

function setSession(id) {
  state.session = id;
  $("current-session").textContent = id;
  $("session-id").value = id;
}

// --- the agent's requests waiting for the person ---------------------------------------------------
function reply(id, fields) {
  command("answer", { id, ...fields });
}

function pendingCard(ev) {
  const card = el("div", "card");
  card.dataset.requestId = JSON.stringify(ev.id);
  card.dataset.method = ev.method;
  card.append(el("div", "what", ev.method));
  const p = ev.params || {};
  const buttons = el("div", "buttons");
  if (ev.method === "session/request_permission") {
    card.append(el("div", "", (p.toolCall && p.toolCall.title) || "permission"));
    for (const option of p.options || []) {
      const b = el("button", "", option.name);
      b.dataset.option = option.optionId;
      b.addEventListener("click", () => reply(ev.id, { result: { outcome: { outcome: "selected", optionId: option.optionId } } }));
      buttons.append(b);
    }
    const c = el("button", "", "cancelled");
    c.addEventListener("click", () => reply(ev.id, { result: { outcome: { outcome: "cancelled" } } }));
    buttons.append(c);
  } else if (ev.method === "elicitation/create") {
    card.append(el("div", "", p.message || ""));
    card.append(elicitationForm(ev.id, p));
  } else {
    const what = ev.method.startsWith("fs/") ? p.path : [p.command, ...(p.args || [])].join(" ");
    card.append(el("div", "", `${what} (root ${state.root})`));
    const ok = el("button", "", ev.method === "terminal/create" ? "run it" : "do it");
    ok.dataset.action = "perform";
    ok.addEventListener("click", () => reply(ev.id, { perform: true }));
    const no = el("button", "", "refuse");
    no.dataset.action = "refuse";
    no.addEventListener("click", () => reply(ev.id, { error: { code: -32000, message: "refused by the person at acpio inspect" } }));
    buttons.append(ok, no);
  }
  card.append(el("pre", "", JSON.stringify(p, null, 2)), buttons);
  return card;
}

function elicitationForm(id, params) {
  const form = el("form");
  form.className = "elicitation";
  const schema = params.requestedSchema || { properties: {} };
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    const label = el("label", "", (prop.title || name) + ((schema.required || []).includes(name) ? " *" : "") + " ");
    let field;
    const choices = prop.enum || (prop.oneOf || []).map((o) => o.const) || null;
    if (prop.type === "boolean") { field = el("input"); field.type = "checkbox"; }
    else if (prop.type === "array") {
      field = el("select"); field.multiple = true;
      const items = prop.items || {};
      for (const v of items.enum || (items.anyOf || []).map((o) => o.const)) field.append(new Option(v, v));
    } else if (choices && choices.length) {
      field = el("select");
      for (const v of choices) field.append(new Option(v, v));
    } else { field = el("input"); field.type = prop.type === "integer" || prop.type === "number" ? "number" : "text"; }
    field.name = name;
    field.dataset.kind = prop.type;
    label.append(field);
    form.append(label);
  }
  const collect = () => {
    const content = {};
    for (const field of form.querySelectorAll("[name]")) {
      const kind = field.dataset.kind;
      if (kind === "boolean") content[field.name] = field.checked;
      else if (kind === "array") content[field.name] = [...field.selectedOptions].map((o) => o.value);
      else if (field.value === "") continue;
      else if (kind === "integer") content[field.name] = parseInt(field.value, 10);
      else if (kind === "number") content[field.name] = Number(field.value);
      else content[field.name] = field.value;
    }
    return content;
  };
  for (const action of ["accept", "decline", "cancel"]) {
    const b = el("button", "", action);
    b.type = "button";
    b.dataset.action = action;
    b.addEventListener("click", () => reply(id, { result: action === "accept" ? { action, content: collect() } : { action } }));
    form.append(b);
  }
  return form;
}

function countPending() {
  $("pending-count").textContent = String($("pending").children.length);
}

function answered(ev) {
  for (const card of $("pending").querySelectorAll(".card")) {
    if (card.dataset.requestId === JSON.stringify(ev.id)) card.remove();
  }
  countPending();
}

// --- the feed -------------------------------------------------------------------------------------
function warning(frame, finding) {
  state.warnings += 1;
  $("warning-count").textContent = String(state.warnings);
  const item = el("li");
  item.dataset.rule = finding.rule;
  const ev = frame.event;
  item.append(el("span", "rule", `#${frame.seq} ${finding.rule}`), " ", el("span", "", finding.message), " ");
  const link = el("a", "", "spec");
  link.href = finding.spec;
  link.target = "_blank";
  link.rel = "noopener";
  link.title = finding.title;
  item.append(link);
  const raw = el("pre", "frame-json", JSON.stringify(ev, null, 2));
  raw.hidden = true;
  item.addEventListener("click", (e) => { if (e.target !== link) raw.hidden = !raw.hidden; });
  item.append(raw);
  $("warnings").append(item);
}

function frame(message) {
  const ev = message.event;
  state.frames.set(message.seq, message);
  for (const finding of message.findings) warning(message, finding);
  if (message.held) {
    $("pending").append(pendingCard(ev));
    countPending();
  }
  if (ev.type === "response" && ev.from === "Client") answered(ev);
  session.event(ev);
}

function receive(message) {
  if (message.kind === "hello") {
    const info = message.info;
    $("command").textContent = info.command || "";
    $("command").title = info.command || "";
    $("capture").textContent = info.capture || "";
    state.live = message.live;
    state.proxy = !!message.proxy;
    state.root = message.root || "";
    $("root").textContent = state.root;
    if (message.policies) policies(message.policies);
    $("proxy-controls").hidden = !state.proxy;
    $("controls").classList.toggle("recording", !state.live);
    status(state.live ? "live" : "ended", state.live ? (state.proxy ? "watching the editor's traffic" : "live") : "recorded run");
  } else if (message.kind === "frame") frame(message);
  else if (message.kind === "policies") policies(message.policies);
  else if (message.kind === "paused") {
    state.paused = message.paused;
    $("pause").textContent = message.paused ? "resume" : "pause";
    status("live", message.paused ? "paused" : "live");
  } else if (message.kind === "exit") status("ended", message.text);
  else if (message.kind === "note") note(message.text, message.level);
  else if (message.kind === "sent") note(`sent ${message.method} (id ${message.id})`);
}

function policies(p) {
  for (const [name, value] of Object.entries(p)) {
    const field = $("policy-" + name);
    if (field) field.value = value;
  }
}

function connect() {
  const url = new URL("/ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  socket = new WebSocket(url);
  socket.addEventListener("message", (e) => receive(JSON.parse(e.data)));
  socket.addEventListener("close", () => { if (state.live) status("error", "disconnected from acpio inspect"); });
}

// --- the controls ---------------------------------------------------------------------------------
$("init").addEventListener("click", () => {
  const clientCapabilities = {
    fs: { readTextFile: $("cap-read").checked, writeTextFile: $("cap-write").checked },
    terminal: $("cap-terminal").checked,
  };
  if ($("cap-elicitation").checked) clientCapabilities.elicitation = { form: {} };
  send("initialize", { protocolVersion: 1, clientCapabilities, clientInfo: { name: "acpio-inspect", version: "1" } });
});
$("new-session").addEventListener("click", () => send("session/new", { cwd: $("cwd").value || state.root, mcpServers: [] }));
for (const [button, method] of [["load-session", "session/load"], ["resume-session", "session/resume"]]) {
  $(button).addEventListener("click", () => {
    const id = $("session-id").value.trim();
    if (!id) return note("give the id of the session to " + method, "error");
    setSession(id);
    send(method, { sessionId: id, cwd: $("cwd").value || state.root, mcpServers: [] });
  });
}
function imageBlock(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ type: "image", mimeType: file.type, data: String(reader.result).split(",", 2)[1] });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

$("send-prompt").addEventListener("click", async () => {
  if (!needSession()) return;
  const prompt = [];
  const text = $("prompt-text").value;
  if (text) prompt.push({ type: "text", text });
  const uri = $("prompt-uri").value.trim();
  if (uri) prompt.push({ type: "resource_link", uri, name: uri.split("/").pop() || uri });
  const image = $("prompt-image").files[0];
  if (image) prompt.push(await imageBlock(image));
  send("session/prompt", { sessionId: state.session, prompt });
});
$("cancel").addEventListener("click", () => { if (needSession()) send("session/cancel", { sessionId: state.session }, true); });
$("mode").addEventListener("change", () => { if (needSession()) send("session/set_mode", { sessionId: state.session, modeId: $("mode").value }); });
for (const field of document.querySelectorAll("[data-policy]")) {
  field.addEventListener("change", () => command("policies", { [field.dataset.policy]: field.value }));
}
$("raw-send").addEventListener("click", () => {
  let params;
  try { params = $("raw-params").value.trim() ? JSON.parse($("raw-params").value) : undefined; }
  catch (e) { return note("the params are not JSON: " + e.message, "error"); }
  send($("raw-method").value.trim(), params, $("raw-notification").checked);
});
$("pause").addEventListener("click", () => command("pause", { paused: !state.paused }));

connect();
