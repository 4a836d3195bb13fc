"""The inspector's warning engine: what in a stream of ACP frames breaks the protocol (no I/O, no web).

A :class:`FrameChecker` is fed every frame of one connection, in the order they crossed it, with the
side that sent it (``"client"`` or ``"agent"``), and returns a :class:`Finding` for each rule the
frame breaks. It follows what the frames negotiate (the capabilities of ``initialize``, the sessions
created, loaded and resumed, the requests still unanswered), so it needs every frame, both ways::

    checker = FrameChecker()
    checker.observe("client", b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{...}}')
    checker.observe("agent", b"Starting my agent...")  # [Finding(rule=RULES["stdout-noise"], ...)]

Each :class:`Rule` names the page of the ACP specification it comes from. :data:`RULES` lists them all;
``acpio inspect`` shows the findings beside the frames. The schema and capability rules are ACP v1's:
once the agent answers ``initialize`` with another protocol version, only the others apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias, get_args, get_origin

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from acpio.schema.methods import NOTIFICATIONS, REQUESTS
from acpio.transports.base import OversizedFrame

__all__ = ["DEFAULT_LONG_LINE", "RULES", "Finding", "FrameChecker", "Rule", "Side"]

Side: TypeAlias = Literal["client", "agent"]
"""Which end sent a frame."""

#: Lines longer than this many bytes are flagged: 1 MiB, far above what a message needs (an image
#: excepted) and above the default line limits of common JSON-lines readers.
DEFAULT_LONG_LINE = 1 << 20

_SPEC = "https://agentclientprotocol.com/protocol/v1/"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the protocol a frame can break."""

    id: str
    """A short stable name: ``"stdout-noise"``, ``"unadvertised-capability"``..."""
    title: str
    """What the rule asks, in one line."""
    spec: str
    """The address of the rule in the ACP specification."""


def _rule(id: str, title: str, page: str) -> Rule:
    return Rule(id, title, page if page.startswith("https://") else _SPEC + page)


#: Every rule the checker knows, by id.
RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        _rule(
            "stdout-noise",
            "The agent must not write anything to its stdout that is not a valid ACP message",
            "transports#stdio",
        ),
        _rule(
            "long-line",
            "A message is one line; lines this long break readers with a line limit",
            "transports#stdio",
        ),
        _rule(
            "not-json-rpc",
            "Every message is a JSON-RPC 2.0 request, response or notification",
            "https://www.jsonrpc.org/specification#request_object",
        ),
        _rule(
            "schema",
            "Params and results follow the ACP schema of their method",
            "schema",
        ),
        _rule(
            "unadvertised-capability",
            "A method behind a capability is used only when the other side advertised it in initialize",
            "initialization#capabilities",
        ),
        _rule(
            "response-to-nothing",
            "A response answers a request that was sent and not answered yet",
            "https://www.jsonrpc.org/specification#response_object",
        ),
        _rule(
            "update-before-session-new",
            "Updates name a session the client knows: the answer to session/new comes first",
            "session-setup#creating-a-session",
        ),
        _rule(
            "update-after-load",
            "The agent replays the whole conversation before it answers session/load",
            "session-setup#loading-a-session",
        ),
        _rule(
            "unknown-session",
            "A session id is one the agent returned from session/new (or the client loaded or resumed)",
            "session-setup#session-id",
        ),
    )
}

#: The page of the specification that tells how to check each capability-gated method's support.
_CAPABILITY_PAGES = {
    "fs/": "file-system#checking-support",
    "terminal/": "terminals#checking-support",
    "elicitation/": "elicitation#checking-support",
    "session/load": "session-setup#checking-support",
    "session/resume": "session-setup#checking-support-2",
    "session/close": "session-setup#checking-support-3",
}

#: The kinds of update a replay of the conversation sends.
_REPLAYED = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)

#: Methods whose answer names a new session in ``result.sessionId``.
_CREATING = frozenset({"session/new", "session/fork"})


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule broken by one frame."""

    rule: Rule
    """The rule."""
    message: str
    """What the frame did, in a sentence naming the method, id or session concerned."""
    spec: str = field(default="")
    """Where the specification says it (the rule's page, or a more precise section)."""

    def __post_init__(self) -> None:
        if not self.spec:
            object.__setattr__(self, "spec", self.rule.spec)


@dataclass(slots=True)
class _Pending:
    method: str
    params: Any


def _finding(rule: str, message: str, spec: str = "") -> Finding:
    return Finding(RULES[rule], message, spec)


def _advertised(capabilities: Any, path: list[str]) -> bool:
    value = capabilities
    for name in path:
        if not isinstance(value, dict) or name not in value:
            return False
        value = value[name]
    return value is not None and value is not False


def _session_id(params: Any) -> str | None:
    if isinstance(params, dict):
        session = params.get("sessionId")
        if isinstance(session, str):
            return session
    return None


def _first_error(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "(top level)"
    more = error.error_count() - 1
    return f"{where}: {problem['msg']}" + (f" (and {more} more)" if more else "")


def _known_variants(annotation: Any) -> Any:
    """The discriminated union of known variants inside a lenient union annotation, if any."""
    for arg in get_args(annotation):
        if get_origin(arg) is Annotated:
            _, *metadata = get_args(arg)
            if any(getattr(entry, "discriminator", None) for entry in metadata):
                return arg
        if get_args(arg) and (found := _known_variants(arg)) is not None:
            return found
    return None


_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def _fallback_error(model: BaseModel, raw: Any) -> str | None:
    """Why a value the lenient models kept as an ``Unknown*`` variant does not match its known tag.

    The models read a known variant that breaks its schema as unknown (so a proxy passes it on): this
    finds those, anywhere in ``model``, and validates them strictly; a tag that is new is no error.
    """
    if not isinstance(raw, dict):
        return None
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        value, raw_value = getattr(model, name, None), raw.get(key)
        pairs = (
            zip(value, raw_value, strict=False)
            if isinstance(value, list) and isinstance(raw_value, list)
            else [(value, raw_value)]
        )
        for item, raw_item in pairs:
            if not isinstance(item, BaseModel):
                continue
            if type(item).__name__.startswith("Unknown"):
                known = _known_variants(info.annotation)
                if known is None:
                    continue
                adapter = _ADAPTERS.setdefault(id(known), TypeAdapter(known))
                try:
                    adapter.validate_python(raw_item)
                except ValidationError as error:
                    if error.errors()[0]["type"] != "union_tag_invalid":
                        return f"{key}." + _first_error(error)
            elif (found := _fallback_error(item, raw_item)) is not None:
                return f"{key}.{found}"
    return None


class FrameChecker:
    """Checks each frame of one client-agent connection against the rules in :data:`RULES`.

    ``long_line`` is the length in bytes above which a line is flagged (``long-line``).
    """

    def __init__(self, *, long_line: int = DEFAULT_LONG_LINE) -> None:
        self._long_line = long_line
        self._pending: dict[Side, dict[Any, _Pending]] = {"client": {}, "agent": {}}
        self._capabilities: dict[Side, Any] = {"client": None, "agent": None}
        self._sessions: set[str] = set()
        #: Sessions whose session/load was answered and that have had no prompt since.
        self._loaded: set[str] = set()
        #: The protocol version the agent answered; the schema and capability rules are v1's.
        self._version: Any = None

    def observe(self, sender: Side, frame: bytes | OversizedFrame) -> list[Finding]:
        """The rules ``frame``, sent by ``sender``, breaks (none: an empty list)."""
        if isinstance(frame, OversizedFrame):
            return [
                _finding("long-line", f"a line of {frame.size} bytes from the {sender}, too long to read")
            ]
        findings: list[Finding] = []
        if len(frame) > self._long_line:
            findings.append(
                _finding(
                    "long-line",
                    f"a line of {len(frame)} bytes from the {sender} (flagged above {self._long_line})",
                )
            )
        try:
            message = orjson.loads(frame)
        except orjson.JSONDecodeError:
            text = frame[:80].decode("utf-8", "replace")
            rule = "stdout-noise" if sender == "agent" else "not-json-rpc"
            return [*findings, _finding(rule, f"the {sender} wrote a line that is not JSON: {text!r}")]
        for entry in message if isinstance(message, list) else [message]:
            findings.extend(self._message(sender, entry))
        return findings

    def _message(self, sender: Side, message: Any) -> list[Finding]:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [_finding("not-json-rpc", f"the {sender} sent JSON that is not a JSON-RPC 2.0 message")]
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                return self._request(sender, message["id"], method, message.get("params"))
            return self._notification(sender, method, message.get("params"))
        if "id" in message and ("result" in message or "error" in message):
            return self._response(sender, message)
        return [
            _finding("not-json-rpc", f"the {sender} sent a JSON-RPC object with neither method nor result")
        ]

    def _request(self, sender: Side, id: Any, method: str, params: Any) -> list[Finding]:
        self._pending[sender][id] = _Pending(method, params)
        findings = self._schema(method, params, REQUESTS.get(method))
        findings += self._capability(sender, method)
        session = _session_id(params)
        if sender == "client":
            if method == "initialize" and isinstance(params, dict):
                self._capabilities["client"] = params.get("clientCapabilities")
            if session is not None:
                self._sessions.add(session)
                if method == "session/prompt":
                    self._loaded.discard(session)
        else:
            findings += self._session_known(method, session)
        return findings

    def _notification(self, sender: Side, method: str, params: Any) -> list[Finding]:
        findings = self._schema(method, params, NOTIFICATIONS.get(method))
        findings += self._capability(sender, method)
        if sender == "agent":
            session = _session_id(params)
            findings += self._session_known(method, session)
            update = params.get("update") if isinstance(params, dict) else None
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            if method == "session/update" and session in self._loaded and kind in _REPLAYED:
                findings.append(
                    _finding(
                        "update-after-load",
                        f"a {kind} update for session {session} after the agent answered session/load "
                        "(and before any prompt): the replay must come before the answer",
                    )
                )
        return findings

    def _response(self, sender: Side, message: dict[str, Any]) -> list[Finding]:
        asker: Side = "agent" if sender == "client" else "client"
        pending = self._pending[asker].pop(message["id"], None)
        if pending is None:
            return [
                _finding(
                    "response-to-nothing",
                    f"the {sender} answered id {message['id']!r}, which no unanswered request of the "
                    f"{asker} has",
                )
            ]
        if "error" in message:
            return []
        result = message.get("result")
        spec = REQUESTS.get(pending.method)
        findings = self._schema(pending.method, result, spec, answer=True)
        if pending.method == "initialize" and isinstance(result, dict):
            self._capabilities["agent"] = result.get("agentCapabilities")
            self._version = result.get("protocolVersion")
        if pending.method in _CREATING and (session := _session_id(result)) is not None:
            self._sessions.add(session)
        if pending.method == "session/load" and (session := _session_id(pending.params)) is not None:
            self._loaded.add(session)
        return findings

    def _schema(self, method: str, payload: Any, spec: Any, *, answer: bool = False) -> list[Finding]:
        if spec is None or self._version not in (None, 1):
            return []
        model = spec.result if answer else spec.params
        if model is None:
            return []
        what = "the answer to" if answer else "the params of"
        breaks = "breaks" if answer else "break"
        try:
            validated = model.model_validate(payload)
        except ValidationError as error:
            return [_finding("schema", f"{what} {method} {breaks} the schema: {_first_error(error)}")]
        if isinstance(validated, BaseModel) and (problem := _fallback_error(validated, payload)) is not None:
            return [_finding("schema", f"{what} {method} {breaks} the schema: {problem}")]
        return []

    def _capability(self, sender: Side, method: str) -> list[Finding]:
        spec = REQUESTS.get(method) or NOTIFICATIONS.get(method)
        if spec is None or spec.capability is None or self._version not in (None, 1):
            return []
        side, *path = spec.capability.split(".")
        advertiser: Side = "client" if side == "C" else "agent"
        if advertiser == sender:
            return []
        capabilities = self._capabilities[advertiser]
        if capabilities is not None and _advertised(capabilities, path):
            return []
        page = next((page for prefix, page in _CAPABILITY_PAGES.items() if method.startswith(prefix)), "")
        named = ".".join(path)
        where = "clientCapabilities" if advertiser == "client" else "agentCapabilities"
        return [
            _finding(
                "unadvertised-capability",
                f"the {sender} called {method}, but the {advertiser} did not advertise {where}.{named}",
                _SPEC + page if page else "",
            )
        ]

    def _session_known(self, method: str, session: str | None) -> list[Finding]:
        if session is None or session in self._sessions:
            return []
        if any(p.method in _CREATING for p in self._pending["client"].values()):
            return [
                _finding(
                    "update-before-session-new",
                    f"{method} names session {session} before the agent answered session/new with it",
                )
            ]
        return [
            _finding("unknown-session", f"{method} names session {session}, which no session/new created")
        ]
