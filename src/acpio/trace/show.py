"""A trace as rows of text: what ``acpio trace show FILE`` prints, and what the viewer page draws.

:func:`build_rows` turns events (:func:`acpio.trace.read_trace`) into :class:`Row` objects, one a message,
with what a reader looks for:

* a **label** that says what happened: the command of ``terminal/create``, the path of ``fs/*``, a
  tool call's title (a ``tool_call_update`` gets the title of its ``tool_call``), the prompt's text,
  the stop reason, an error's code and message;
* **durations**: a request's time until its answer, on both rows (``untimed`` logs have none);
* **runs of streamed chunks** (``agent_message_chunk``, ``agent_thought_chunk``,
  ``user_message_chunk`` one after the other on one hop, for one session) as one row, with their
  count and their text joined (``expand=True`` keeps each chunk's row too, under the run's);
* the **client edge** (``edge="client"``): only what crosses the client's edge, each logical message
  once, drawn between the client and the agent as if the proxies were not there;
* filters: session, method words (``-word`` hides), kinds, and full-text search in each event's JSON.

:func:`format_rows` writes them as lines of text (plain, or styled for a terminal).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from acpio.trace.events import (
    LanesEvent,
    NotificationEvent,
    RequestEvent,
    ResponseEvent,
    StderrEvent,
    TraceEvent,
)

__all__ = ["CHUNK_KINDS", "Filters", "Row", "build_rows", "format_rows", "label_of"]

#: The ``session/update`` kinds whose runs are collapsed into one row.
CHUNK_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
_CLIENT = "Client"


@dataclass(slots=True)
class Row:
    """One line of the view: a message, a stderr line, or a run of chunks (``count`` > 1)."""

    kind: str
    """``request``, ``response``, ``notification`` or ``stderr``."""
    ts: float
    """Seconds since the trace started (0 for an untimed log)."""
    from_lane: str
    """The sending lane, as shown (on the client edge, the agent's lane stands for the chain)."""
    to_lane: str
    """The receiving lane, as shown."""
    method: str
    """The method (a response: its request's); for a stderr row, the stream."""
    label: str
    """What the message is about (see :func:`label_of`); a stderr row's line."""
    session: str | None = None
    """The session the message belongs to, when known."""
    untimed: bool = False
    """Whether the log has no times (``acpio prompt --json``): no time, no durations."""
    #: Seconds between a request and its answer (on both rows), when both are known and timed.
    duration: float | None = None
    #: The error code of an error response.
    error: int | None = None
    #: How many chunks a run row stands for (1: a single message).
    count: int = 1
    #: Whether this row is a member of a run shown under the run's row (``expand=True``).
    member: bool = False
    #: A run's chunks' text, joined.
    text: str = ""
    event: TraceEvent | None = field(default=None, repr=False)


@dataclass(slots=True)
class Filters:
    """What :func:`build_rows` keeps: all of it by default."""

    session: str | None = None
    """Only this session (``""``: only messages of no session)."""
    methods: Sequence[str] = ()
    """Method words: a method containing any kept word is shown; ``-word`` hides methods containing it."""
    kinds: frozenset[str] = frozenset({"request", "response", "notification", "stderr"})
    search: str = ""
    """Text that must occur in the event's JSON (case-insensitive)."""
    edge: str | None = None
    """``"client"``: the client edge only."""

    def keeps(self, event: TraceEvent, session: str | None) -> bool:
        """Whether ``event`` (of ``session``) passes the filters (the edge is applied elsewhere)."""
        if event.type not in self.kinds:
            return False
        if self.session is not None and (session or "") != self.session:
            return False
        method = getattr(event, "method", None) or ""
        method = method.lower()
        include = [w.lower() for w in self.methods if w and not w.startswith("-")]
        exclude = [w[1:].lower() for w in self.methods if w.startswith("-") and len(w) > 1]
        if include and not any(w in method for w in include):
            return False
        if any(w in method for w in exclude):
            return False
        return not self.search or self.search.lower() in _haystack(event.raw)


def _haystack(raw: dict[str, Any]) -> str:
    """An event's JSON text, lower case, for the full-text search (past orjson's 254 levels: json's)."""
    try:
        return orjson.dumps(raw).decode("utf-8", "replace").lower()
    except orjson.JSONEncodeError:
        try:
            return json.dumps(raw, ensure_ascii=False).lower()
        except (RecursionError, ValueError):
            return ""


def _text(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _quoted(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    cut = value if len(value) <= limit else value[: limit - 1] + "…"
    return orjson.dumps(cut).decode()


def _first_text(blocks: Any) -> str:
    if isinstance(blocks, list):
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
    return ""


def label_of(method: str, params: object, tool_titles: dict[str, str] | None = None) -> str:
    """What a request or notification is about, in a few words (``""``: nothing to add).

    Both protocol versions: v2's upserts are labelled by their id (``agent_message m-2 "..."``,
    ``terminal_update term-1 $ make exit 0``), its state updates by the state (``state_update idle
    end_turn``), and its tool calls by the title their first ``tool_call_update`` gave.
    """
    titles = tool_titles if tool_titles is not None else {}
    if not isinstance(params, dict):
        return ""
    if method == "session/update" and isinstance(params.get("update"), dict):
        return _update_label(params["update"], titles)
    if method == "session/prompt":
        return _quoted(_first_text(params.get("prompt")), 70)
    if method == "terminal/create" and isinstance(params.get("command"), str):
        args = params.get("args")
        words = [params["command"]]
        if isinstance(args, list):
            words.extend(a for a in args if isinstance(a, str))
        return "$ " + _text(" ".join(words), 80)
    if method.startswith("terminal/") and isinstance(params.get("terminalId"), str):
        return str(params["terminalId"])
    if method == "tool_call/cancel" and isinstance(params.get("toolCallId"), str):
        call = params["toolCallId"]
        return f"{call} {_text(titles.get(call, ''), 60)}".strip()
    if isinstance(params.get("path"), str):
        return _text(params["path"], 80)
    tool_call = params.get("toolCall")
    if isinstance(tool_call, dict):
        title = tool_call.get("title") or titles.get(str(tool_call.get("toolCallId")), "")
        return _text(title, 60)
    if method == "session/request_permission" and isinstance(params.get("title"), str):
        return _text(params["title"], 60)  # v2: the prompt's own title
    if isinstance(params.get("cwd"), str):
        return _text(params["cwd"], 70)
    if isinstance(params.get("modeId"), str):
        return str(params["modeId"])
    if "protocolVersion" in params:
        return f"protocol v{params['protocolVersion']}{_info_name(params, 'clientInfo')}"
    return ""


def _info_name(payload: dict[str, Any], v1_field: str) -> str:
    """`` name`` of the peer's implementation (v1 ``clientInfo``/``agentInfo``, v2 ``info``), or ``""``."""
    for key in (v1_field, "info"):
        info = payload.get(key)
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            return f" {info['name']}"
    return ""


def _update_label(update: dict[str, Any], titles: dict[str, str]) -> str:
    """The label of one ``session/update`` (v1 or v2)."""
    kind = update.get("sessionUpdate") or ""
    content = update.get("content")
    detail = ""
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        detail = _quoted(content["text"], 70)
    elif kind in _MESSAGE_UPSERTS:
        detail = f"{update.get('messageId', '')} {_upsert_content(update)}".strip()
    elif kind in ("tool_call", "tool_call_update", "tool_call_content_chunk"):
        detail = _text(update.get("title") or titles.get(str(update.get("toolCallId")), ""), 60)
    elif kind == "plan" and isinstance(update.get("entries"), list):
        detail = _plan_done(update["entries"])
    elif kind == "plan_update" and isinstance(update.get("plan"), dict):
        plan = update["plan"]
        entries = plan.get("entries")
        done = _plan_done(entries) if isinstance(entries, list) else str(plan.get("type", ""))
        detail = f"{plan.get('planId', '')} {done}".strip()
    elif kind == "state_update":
        detail = " ".join(str(update[k]) for k in ("state", "stopReason") if isinstance(update.get(k), str))
    elif kind in ("terminal_update", "terminal_output_chunk"):
        detail = _terminal_detail(update, titles)
    if isinstance(update.get("status"), str):
        detail = f"{detail} {update['status']}".strip()
    return f"{kind} {detail}".strip()


#: v2's whole-message upserts (``content`` is a list that replaces the message's content).
_MESSAGE_UPSERTS = frozenset({"agent_message", "user_message", "agent_thought"})


def _upsert_content(update: dict[str, Any]) -> str:
    """What an upsert does to its message: ``"text"`` (replaced), ``cleared``, or nothing (unchanged)."""
    if "content" not in update:
        return ""
    content = update["content"]
    if not content:
        return "cleared"
    return _quoted(_first_text(content), 70)


def _plan_done(entries: list[Any]) -> str:
    done = sum(1 for e in entries if isinstance(e, dict) and e.get("status") == "completed")
    return f"{done}/{len(entries)} done"


def _terminal_detail(update: dict[str, Any], titles: dict[str, str]) -> str:
    """An agent-owned terminal (v2): its id, its command (remembered by id), its output, its exit."""
    terminal = str(update.get("terminalId", ""))
    words = [terminal]
    command = update.get("command")
    if isinstance(command, str):
        titles[_TERMINAL_KEY + terminal] = command
    known = titles.get(_TERMINAL_KEY + terminal)
    if known:
        words.append("$ " + _text(known, 60))
    data = update.get("data")
    output = update.get("output")
    if isinstance(output, dict):
        data = output.get("data")
    if isinstance(data, str):
        words.append(_quoted(_decoded(data), 50))
    status = update.get("exitStatus")
    if isinstance(status, dict):
        code = status.get("exitCode")
        words.append(f"exit {code}" if code is not None else f"signal {status.get('signal')}")
    return " ".join(words)


#: Terminal commands share the title map with tool calls, under keys no tool call id can clash with.
_TERMINAL_KEY = "\0terminal:"


def _decoded(data: str) -> str:
    """Base64 terminal bytes as text (invalid bytes replaced); the data itself when it is not base64."""
    try:
        return base64.b64decode(data, validate=True).decode("utf-8", "replace")
    except (ValueError, binascii.Error):
        return data


def _answer_label(method: str, event: ResponseEvent) -> str:
    payload = event.payload
    if event.is_error:
        if not isinstance(payload, dict):
            return ""
        parts = [payload.get("message"), payload.get("data")]
        return _text(": ".join(p for p in parts if isinstance(p, str) and p), 90)
    if not isinstance(payload, dict):
        return "null" if payload is None else ""
    if isinstance(payload.get("stopReason"), str):
        return f"stopReason: {payload['stopReason']}"
    if isinstance(payload.get("sessionId"), str):
        return str(payload["sessionId"])
    outcome = payload.get("outcome")
    if isinstance(outcome, dict):
        return " ".join(str(outcome[k]) for k in ("outcome", "optionId") if isinstance(outcome.get(k), str))
    if isinstance(payload.get("terminalId"), str):
        return str(payload["terminalId"])
    if isinstance(payload.get("output"), str):
        return _quoted(payload["output"], 60)
    if "exitCode" in payload:
        code = payload["exitCode"]
        return f"exit {code}" if code is not None else f"signal {payload.get('signal')}"
    if isinstance(payload.get("content"), str):
        return _quoted(payload["content"], 60)
    if "protocolVersion" in payload:  # the negotiated version, and who answered
        info: dict[str, Any] = next(
            (payload[k] for k in ("agentInfo", "info") if isinstance(payload.get(k), dict)), {}
        )
        name = " ".join(str(info[k]) for k in ("name", "version") if isinstance(info.get(k), str))
        return f"protocol v{payload['protocolVersion']} {name}".strip()
    if isinstance(payload.get("messageId"), str):
        return f"accepted {payload['messageId']}"  # v2: session/prompt acknowledges its user message
    return ""


def _chunk(event: TraceEvent) -> tuple[str, str] | None:
    """``(kind, text)`` of a streamed chunk notification, else ``None``.

    A v2 chunk's kind carries its ``messageId``: chunks of two messages are two runs.
    """
    if not isinstance(event, NotificationEvent) or event.method != "session/update":
        return None
    params = event.params
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict) or update.get("sessionUpdate") not in CHUNK_KINDS:
        return None
    content = update.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    kind = str(update["sessionUpdate"])
    if isinstance(update.get("messageId"), str):
        kind = f"{kind} {update['messageId']}"
    return kind, text if isinstance(text, str) else ""


def build_rows(
    events: Iterable[TraceEvent],
    filters: Filters | None = None,
    *,
    collapse: bool = True,
    expand: bool = False,
) -> list[Row]:
    """The rows for ``events`` (in file order), filtered, chunk runs collapsed (see the module docstring)."""
    return _RowBuilder(list(events), filters or Filters(), collapse=collapse, expand=expand).rows()


class _RowBuilder:
    """One pass over a trace's events, keeping what later rows need (open requests, titles, runs)."""

    def __init__(self, events: list[TraceEvent], keep: Filters, *, collapse: bool, expand: bool) -> None:
        self.events = events
        self.keep = keep
        self.collapse = collapse
        self.expand = expand
        self.client_edge = keep.edge == "client"
        lanes = [lane.lane for e in events if isinstance(e, LanesEvent) for lane in e.lanes]
        self.far = _far_lane(events, lanes)
        self.titles: dict[str, str] = {}
        self.open: dict[tuple[str, str, str], tuple[RequestEvent, Row | None]] = {}
        #: Per hop, session and chunk kind: the run row the next chunk joins, while nothing else came.
        self.runs: dict[tuple[str, str, str | None, str], Row] = {}
        self.out: list[Row] = []

    def rows(self) -> list[Row]:
        for event in self.events:
            if isinstance(event, StderrEvent):
                if self.keep.keeps(event, None):
                    untimed = event.raw.get("untimed") is True
                    row = Row("stderr", event.ts, event.from_lane, event.to_lane, event.stream, event.line)
                    row.untimed, row.event = untimed, event
                    self.out.append(row)
            elif isinstance(event, RequestEvent | NotificationEvent):
                self._message(event)
            elif isinstance(event, ResponseEvent):
                self._response(event)
        return self.out

    def _shown(self, source: str, target: str, method: str) -> tuple[str, str, str]:
        """The lanes a message is drawn between, and its method, as the view shows them."""
        if not self.client_edge:
            return source, target, method
        if method in _PROXY_INITIALIZE and self.far == "Agent":
            method = "initialize"  # what the client sent; the proxy received it as proxy/initialize
        return (source, self.far, method) if source == _CLIENT else (self.far, target, method)

    def _row(
        self, event: TraceEvent, source: str, target: str, method: str, label: str, session: str | None
    ) -> Row:
        row = Row(
            event.type, event.ts, source, target, method, label, session, event.raw.get("untimed") is True
        )
        row.event = event
        return row

    def _message(self, event: RequestEvent | NotificationEvent) -> None:
        hop = (event.from_lane, event.to_lane)
        session, params = event.session, event.params
        _note_title(self.titles, event.method, params)
        chunk = _chunk(event)
        run_key = None if chunk is None else (*hop, session, chunk[0])
        for key in [k for k in self.runs if k[:2] == hop and k != run_key]:
            del self.runs[key]
        row: Row | None = None
        if self.keep.keeps(event, session) and (_CLIENT in hop or not self.client_edge):
            source, target, method = self._shown(*hop, event.method)
            row = self._row(
                event, source, target, method, label_of(event.method, params, self.titles), session
            )
            run = self.runs.get(run_key) if run_key is not None and self.collapse else None
            if run is not None and chunk is not None:
                run.count += 1
                run.text += chunk[1]
                run.label = f"{chunk[0]} ×{run.count} {_quoted(run.text, 70)}"  # noqa: RUF001
                run.duration = None if run.untimed else event.ts - run.ts
                if self.expand:
                    row.member = True
                    self.out.append(row)
                return
            self.out.append(row)
            if run_key is not None and chunk is not None and self.collapse:
                self.runs[run_key] = row
                row.text = chunk[1]
        if isinstance(event, RequestEvent):
            self.open[(*hop, orjson.dumps(event.id).decode())] = (event, row)

    def _response(self, event: ResponseEvent) -> None:
        source, target = event.from_lane, event.to_lane
        for key in [k for k in self.runs if k[:2] in ((source, target), (target, source))]:
            del self.runs[key]
        request, request_row = self.open.pop((target, source, orjson.dumps(event.id).decode()), (None, None))
        method = event.method or (request.method if request is not None else "") or ""
        session = event.session or (request.session if request is not None else None)
        duration = None
        if request is not None and event.raw.get("untimed") is not True:
            duration = event.ts - request.ts
            if request_row is not None:
                request_row.duration = duration
        if not self.keep.keeps(event, session) or (self.client_edge and _CLIENT not in (source, target)):
            return
        shown_from, shown_to, method = self._shown(source, target, method)
        row = self._row(event, shown_from, shown_to, method, _answer_label(method, event), session)
        row.duration = duration
        code = event.payload.get("code") if event.is_error and isinstance(event.payload, dict) else None
        row.error = code if isinstance(code, int) else (0 if event.is_error else None)
        self.out.append(row)


def _note_title(titles: dict[str, str], method: str, params: Any) -> None:
    """Remember the title of a tool call, for the updates that name it by id only."""
    if not isinstance(params, dict):
        return
    call = params.get("update") if method == "session/update" else params.get("toolCall")
    if isinstance(call, dict) and isinstance(call.get("title"), str) and call.get("toolCallId"):
        titles[str(call["toolCallId"])] = call["title"]


def _far_lane(events: Sequence[TraceEvent], lanes: list[str]) -> str:
    """The lane the client edge's other end is drawn on: the agent (or the successor)."""
    for name in ("Agent", "Successor"):
        if name in lanes:
            return name
    seen = {lane for e in events if not isinstance(e, LanesEvent) for lane in (e.from_lane, e.to_lane)}
    for name in ("Agent", "Successor"):
        if name in seen:
            return name
    return "Agent"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


_MARKS = {"request": "→", "response": "⇢", "notification": "↝"}
#: The names a proxy is initialized with: on the client edge, the client sent ``initialize``.
_PROXY_INITIALIZE = frozenset({"proxy/initialize", "_proxy/initialize"})


def format_rows(rows: Sequence[Row], *, styled: bool = False, width: int = 160) -> list[str]:
    """The rows as lines of text; ``styled``: with rich markup (colours per kind, errors in red)."""
    if not rows:
        return []
    lane_width = max(len(r.from_lane) for r in rows)
    target_width = max(len(r.to_lane) for r in rows)
    lines = []
    for row in rows:
        ts = "      —" if row.untimed else f"{row.ts:8.3f}"
        if row.kind == "stderr":
            hop = f"{row.from_lane:>{lane_width}} ! {'':<{target_width}}"
            head = f"{ts}  {hop}  {row.method}"
            body = row.label
        else:
            mark = _MARKS[row.kind]
            hop = f"{row.from_lane:>{lane_width}} {mark} {row.to_lane:<{target_width}}"
            method = row.method or "(response)"
            head = f"{ts}  {hop}  {'  ' if row.member else ''}{method}"
            body = row.label
            if row.error is not None:
                body = f"✕ {row.error or 'error'} {body}".strip()
        # A request and its answer carry the request's wait; a run, the time from its first chunk to its last.
        timed = row.duration is not None and (row.kind != "notification" or row.count > 1)
        took = f"  [{_duration(row.duration)}]" if timed and row.duration is not None else ""
        room = max(width - len(head) - len(took) - 2, 10)
        if len(body) > room:
            body = body[: room - 1] + "…"
        if not styled:
            lines.append("  ".join(part for part in (head, body) if part) + took)
            continue
        colour = {"request": "blue", "response": "green", "notification": "magenta", "stderr": "yellow"}[
            row.kind
        ]
        if row.error is not None:
            colour = "red"
        from rich.markup import escape

        rest = escape(head[len(ts) + len(hop) + 4 :])
        text = f"[dim]{escape(ts)}[/dim]  {escape(hop)}  [bold {colour}]{rest}[/]"
        lines.append(f"{text}  {escape(body)}[dim]{escape(took)}[/dim]")
    return lines
