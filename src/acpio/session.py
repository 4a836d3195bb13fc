"""Sessions: set one up (``session/new``, ``/load``, ``/resume``, ``/fork``), prompt it, read its updates.

Start from a connection to an agent (a client, or a proxy talking to its successor)::

    from acpio.session import build_session

    async with build_session(cx, "/path/to/project").start_session() as session:
        session.send_prompt("Hello")
        async for message in session:           # this turn's messages, until its stop reason
            print(message.text or message.method)
        print(session.stop_reason)              # end_turn

        session.send_prompt("And now?")
        print(await session.read_to_string())   # the agent's text for the whole turn

    # later, maybe on another connection: the same conversation, its history replayed first
    async with build_session_load(cx, session_id, "/path/to/project").start_session() as session:
        for message in session.history:         # what session/load replayed, in order
            print(message.text)

**Entry point.** The session helpers are free functions taking the connection, because the
engine's :class:`~acpio.jsonrpc.Connection` knows nothing of ACP. One builder per setup method,
all giving a :class:`SessionBuilder` with the same start methods and an :class:`ActiveSession`:

* ``session/new``: :func:`build_session` (``cwd``), :func:`build_session_cwd` (the current directory);
* ``session/load``: :func:`build_session_load` (the history is replayed into
  :attr:`ActiveSession.history`);
* ``session/resume``: :func:`build_session_resume` (no replay);
* ``session/fork`` (unstable: the connection needs ``Client.builder(unstable=True)``):
  :func:`build_session_fork` (the answer names the new session);
* any of the four from a request: :func:`build_session_from`.

:func:`attach_session` reads a session set up by other means. :class:`SessionMethods` is the same
functions as methods: a connection class that inherits it gives ``cx.build_session(cwd)``,
``cx.build_session_load(session_id, cwd)``...

**Blocking and non-blocking.** :meth:`SessionBuilder.start_session`,
:meth:`SessionBuilder.run_until` and :meth:`SessionBuilder.start_session_proxy` wait for the
agent's answer, so they work in spawned tasks and in ``connect_with``'s main function; inside a
handler they raise :class:`~acpio.DeadlockError`. Inside a handler, use
:meth:`SessionBuilder.on_session_start` or :meth:`SessionBuilder.on_proxy_session_start`: they
return at once and run the callback in a task once the session exists.

**Ordering.** For ``session/new`` and ``session/fork``, whose answer names the session, the
handler that routes the session's messages is installed by the dispatch loop itself, right after it
reads the response and before the next message, so an update that follows the response (even in
the same batch) reaches the session. Updates that arrive *before* the response is read are parked
by the client role's default handler and replayed to the session, in order, when its handler is
installed. For ``session/load`` and ``session/resume`` the session id is known in advance, so the
handler is installed *before* the request is sent and nothing needs parking; the notifications a
``session/load`` receives before its answer (the replayed conversation) become
:attr:`ActiveSession.history`, and a refused load or resume removes the handler again. A prompt's
stop reason is queued by the dispatch loop when the ``session/prompt`` response is read, so it
always comes after the turn's updates.

**The agent's requests.** A request the agent sends during the session is read as an
:class:`AgentRequestMessage` subclass (:class:`RequestPermissionMessage`,
:class:`ReadTextFileMessage`...): the typed request, answered in place with ``item.respond(...)``.
:meth:`ActiveSession.read_to_string` answers them as told (``permissions="allow"``,
``files=root``: the policies and :class:`~acpio.client.ConfinedFiles` of :mod:`acpio.client`),
and only what the client advertised.

**Proxy hand-off.** :meth:`ActiveSession.proxy_remaining_messages` switches a session from being
read here to being forwarded to the client, losing and reordering nothing: see its docstring.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable
from pathlib import Path
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Generic,
    Literal,
    Protocol,
    TypeAlias,
    TypeVar,
    cast,
    overload,
    runtime_checkable,
)

from typing_extensions import TypeVar as DefaultTypeVar

from acpio.capabilities import AgentFeatures, ClientFeatures, fill_required_fields
from acpio.client.files import ConfinedFiles
from acpio.client.permissions import PermissionChoice, PermissionPolicy, permission_policy
from acpio.errors import (
    AcpError,
    ConnectionClosed,
    DeadlockError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
)
from acpio.jsonrpc import (
    UNSET,
    Connection,
    Dispatch,
    DynamicHandlerRegistration,
    Handler,
    NotificationDispatch,
    RequestDispatch,
    Role,
    TypedRequest,
    Unhandled,
    UntypedMessage,
)
from acpio.peer import PeerState
from acpio.schema import (
    AgentMessageChunk,
    CancelledPermissionOutcome,
    CancelNotification,
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    ForkSessionRequest,
    ForkSessionResponse,
    InitializeRequest,
    KillTerminalRequest,
    KillTerminalResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionConfigOption,
    SessionModeState,
    SessionNotification,
    SessionUpdate,
    StopReason,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue, Responder, SentRequest
    from acpio.transports.base import Transport

__all__ = [
    "ActiveSession",
    "AgentRequestMessage",
    "CreateElicitationMessage",
    "CreateTerminalMessage",
    "KillTerminalMessage",
    "McpServerList",
    "McpServerRegistry",
    "PromptContent",
    "ReadTextFileMessage",
    "ReleaseTerminalMessage",
    "RequestPermissionMessage",
    "SessionBuilder",
    "SessionConnection",
    "SessionMessage",
    "SessionMethods",
    "SessionPeers",
    "SessionSetupRequest",
    "SessionSetupResponse",
    "SessionStart",
    "TerminalOutputMessage",
    "TurnEnded",
    "WaitForTerminalExitMessage",
    "WriteTextFileMessage",
    "attach_session",
    "build_session",
    "build_session_cwd",
    "build_session_fork",
    "build_session_from",
    "build_session_load",
    "build_session_resume",
]

_log = logging.getLogger("acpio.session")

T = TypeVar("T")

#: What :meth:`ActiveSession.send_prompt` takes: text, one content block, or several.
PromptContent: TypeAlias = str | ContentBlock | Iterable[ContentBlock]

#: The requests that set a session up, one per :class:`SessionBuilder` kind.
SessionSetupRequest: TypeAlias = (
    NewSessionRequest | LoadSessionRequest | ResumeSessionRequest | ForkSessionRequest
)
#: The agent's answers to them: what :meth:`ActiveSession.response` gives.
SessionSetupResponse: TypeAlias = (
    NewSessionResponse | LoadSessionResponse | ResumeSessionResponse | ForkSessionResponse
)

#: The setup request a :class:`SessionBuilder` sends (``SessionBuilder`` alone: ``session/new``).
RequestT = DefaultTypeVar("RequestT", bound=SessionSetupRequest, default=NewSessionRequest)
#: The same, for functions generic over the request.
_R = TypeVar("_R", bound=SessionSetupRequest)
_Result = TypeVar("_Result")

_UPDATE_METHOD = SessionNotification.METHOD
_PERMISSION_METHOD = RequestPermissionRequest.METHOD
_CANCEL_METHOD = CancelNotification.METHOD


# --- peers ---------------------------------------------------------------------------------------


@runtime_checkable
class SessionPeers(Protocol):
    """What the session helpers ask of a connection's role: which of its peers is the agent, the client.

    The ACP roles of :mod:`acpio.roles` implement it. Each method gives the role instance (one of
    the role's :meth:`~acpio.jsonrpc.Role.peers`) that plays the part, or ``None`` when this side
    has no such peer: a ``Client`` connection addresses the agent as its counterpart and has no
    client, a ``Proxy`` connection reaches the agent (its successor) through envelopes. On a
    connection whose role does not implement it (``UntypedRole``, ``Conductor``) the counterpart
    plays both parts and nothing is checked against ACP.
    """

    def agent_peer(self) -> Role | None:
        """The peer that is the agent; ``None`` if this side has none."""
        ...

    def client_peer(self) -> Role | None:
        """The peer that is the client; ``None`` if this side has none."""
        ...


def _agent_role(role: Role) -> Role | None:
    """The role that is the agent among ``role``'s peers; ``None`` if none, or if ``role`` does not say."""
    return role.agent_peer() if isinstance(role, SessionPeers) else None


def _agent_peer(cx: Connection) -> Role | None:
    """How to address the agent on ``cx`` (``None``: the counterpart); a clear error if it has none."""
    role = cx.role
    if not isinstance(role, SessionPeers):
        return None
    agent = role.agent_peer()
    if agent is None:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(role).__name__} connection: it has no agent to "
            "open sessions with. Sessions are started from a Client or a Proxy connection."
        )
    return None if agent == cx.counterpart else agent


def _client_peer(cx: Connection) -> Role | None:
    """How to address the client on ``cx`` (``None``: the counterpart); a clear error if it has none."""
    role = cx.role
    if not isinstance(role, SessionPeers):
        return None
    client = role.client_peer()
    if client is None:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(role).__name__} connection: it has no client to "
            "forward session messages to. Proxy mode needs a Proxy connection."
        )
    return None if client == cx.counterpart else client


# --- MCP servers ----------------------------------------------------------------------------------


@runtime_checkable
class McpServerRegistry(Protocol):
    """MCP servers to offer the agent in one session: what :meth:`SessionBuilder.with_mcp_server` takes.

    ``attach`` declares the servers in ``request.mcp_servers`` (appending to the list) and starts
    serving them on ``cx`` (typically with :meth:`~acpio.jsonrpc.Connection.add_dynamic_handler`),
    returning the registrations that serve them. They are active while the session starts, removed
    when the session ends or its setup request fails, and kept for the connection's lifetime when
    the session is handed to proxy mode.

    ``request`` is the ``session/new`` request being prepared. For the other setup methods
    (``session/load``, ``/resume``, ``/fork``) the builder passes a ``session/new`` request with the
    same ``cwd`` and no servers, and copies what ``attach`` declared into the real request: a
    registry declares servers the same way whatever sets the session up.
    """

    def attach(self, request: NewSessionRequest, cx: Connection) -> Iterable[DynamicHandlerRegistration]:
        """Declare the servers in ``request`` and start serving them on ``cx``."""
        ...


class McpServerList:
    """A registry of plain MCP server declarations (stdio, http, sse) that acpio does not serve itself.

    ``McpServerList()`` is the empty registry; ``McpServerList([McpServerStdio(...)])`` appends
    those declarations to the setup request's ``mcpServers`` and registers no handler.
    """

    __slots__ = ("servers",)

    def __init__(self, servers: Iterable[Any] = ()) -> None:
        self.servers: list[Any] = list(servers)

    def __repr__(self) -> str:
        return f"McpServerList({self.servers!r})"

    def attach(self, request: NewSessionRequest, cx: Connection) -> Iterable[DynamicHandlerRegistration]:
        """Append the declarations to ``request.mcp_servers``; nothing to serve."""
        request.mcp_servers.extend(self.servers)
        return ()


# --- what a session reads -------------------------------------------------------------------------


class SessionMessage:
    """A message from the agent for this session: a ``session/update`` notification, or a request.

    :attr:`dispatch` is the message itself. A request that no builder handler claimed must be
    answered: the ones ACP defines (``session/request_permission``, ``fs/read_text_file``...) come
    as an :class:`AgentRequestMessage` subclass, typed and answerable in place
    (``message.respond(...)``); others (extension methods) through ``message.dispatch.responder``.
    :attr:`notification`, :attr:`update` and :attr:`text` parse a ``session/update`` on first use.
    """

    __slots__ = ("_notification", "_parsed", "dispatch")

    def __init__(self, dispatch: RequestDispatch | NotificationDispatch) -> None:
        self.dispatch = dispatch
        self._parsed = False
        self._notification: SessionNotification | None = None

    def __repr__(self) -> str:
        return f"SessionMessage({self.dispatch!r})"

    @property
    def method(self) -> str:
        """The wire method, for example ``"session/update"``."""
        return self.dispatch.method

    @property
    def is_request(self) -> bool:
        """Whether the agent waits for an answer (through ``dispatch.responder``)."""
        return type(self.dispatch) is RequestDispatch

    @property
    def notification(self) -> SessionNotification | None:
        """The parsed ``session/update`` notification; ``None`` for other methods.

        Raises :class:`~acpio.InvalidParams` if the agent sent an update that does not match the schema.
        """
        if not self._parsed:
            if self.dispatch.method == _UPDATE_METHOD and type(self.dispatch) is NotificationDispatch:
                self._notification = self.dispatch.parse(SessionNotification)
            self._parsed = True
        return self._notification

    @property
    def update(self) -> SessionUpdate | None:
        """The update of a ``session/update`` (``AgentMessageChunk``, ``ToolCall``...); else ``None``."""
        notification = self.notification
        return notification.update if notification is not None else None

    @property
    def text(self) -> str | None:
        """The text of an ``agent_message_chunk`` carrying text content; ``None`` for anything else."""
        update = self.update
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent):
            return update.content.text
        return None


_ReqT = TypeVar("_ReqT")
_RespT = TypeVar("_RespT")


class AgentRequestMessage(SessionMessage, Generic[_ReqT, _RespT]):
    """A request the agent sent for this session, typed and answered in place.

    :attr:`request` is the typed request (parsed on first use); :meth:`respond` takes the request's
    response type, so a type checker checks the answer. One subclass per request ACP lets an agent
    send a client; narrow with ``isinstance``::

        item = await session.read_update()
        if isinstance(item, ReadTextFileMessage):
            item.respond(ReadTextFileResponse(content=read_the_file(item.request.path)))
        elif isinstance(item, RequestPermissionMessage):
            item.respond(RequestPermissionResponse(outcome=CancelledPermissionOutcome()))

    The agent waits for the answer, so every request read must be answered (an error will do).
    The first answer wins; later ones are ignored, as is an answer to a permission request the
    connection already answered ``cancelled`` (see :meth:`ActiveSession.cancel`).
    """

    __slots__ = ("_request",)

    #: The typed request class (``ReadTextFileRequest``...).
    REQUEST: ClassVar[type[Any]]

    def __init__(self, dispatch: RequestDispatch) -> None:
        super().__init__(dispatch)
        self._request: _ReqT | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dispatch!r})"

    @property
    def request(self) -> _ReqT:
        """The typed request; raises :class:`~acpio.InvalidParams` if the agent's params do not match it.

        Answer such a request with that error: ``message.respond_with_error(exc)``.
        """
        if self._request is None:
            self._request = cast(_ReqT, self.dispatch.parse(type(self).REQUEST))
        return self._request

    @property
    def responder(self) -> Responder[_RespT]:
        """The responder that answers the request (what :meth:`respond` uses)."""
        return cast(RequestDispatch, self.dispatch).responder

    @property
    def answered(self) -> bool:
        """Whether the request has been answered (by this message, or ``cancelled`` by the connection)."""
        return self.responder.done

    @property
    def cancelled(self) -> bool:
        """Whether the answer is no longer wanted: the agent cancelled the request, or the client the turn."""
        return self.responder.cancelled

    def respond(self, response: _RespT) -> None:
        """Answer the agent with ``response`` (the request's response type)."""
        self.responder.respond(response)

    def respond_with_error(self, error: BaseException) -> None:
        """Answer the agent with ``error``; anything but a :class:`~acpio.RequestError` goes as ``-32603``."""
        self.responder.respond_with_error(error)


class RequestPermissionMessage(AgentRequestMessage[RequestPermissionRequest, RequestPermissionResponse]):
    """``session/request_permission``: answer with the option chosen, or the ``cancelled`` outcome."""

    __slots__ = ()
    REQUEST = RequestPermissionRequest


class ReadTextFileMessage(AgentRequestMessage[ReadTextFileRequest, ReadTextFileResponse]):
    """``fs/read_text_file`` (only if the client advertised ``fs.readTextFile``): answer with the text."""

    __slots__ = ()
    REQUEST = ReadTextFileRequest


class WriteTextFileMessage(AgentRequestMessage[WriteTextFileRequest, WriteTextFileResponse]):
    """``fs/write_text_file`` (only if the client advertised ``fs.writeTextFile``): write, then answer."""

    __slots__ = ()
    REQUEST = WriteTextFileRequest


class CreateTerminalMessage(AgentRequestMessage[CreateTerminalRequest, CreateTerminalResponse]):
    """``terminal/create`` (only if the client advertised ``terminal``): start a command, answer its id."""

    __slots__ = ()
    REQUEST = CreateTerminalRequest


class TerminalOutputMessage(AgentRequestMessage[TerminalOutputRequest, TerminalOutputResponse]):
    """``terminal/output``: answer with what the command wrote so far (and its exit status, if it ended)."""

    __slots__ = ()
    REQUEST = TerminalOutputRequest


class WaitForTerminalExitMessage(
    AgentRequestMessage[WaitForTerminalExitRequest, WaitForTerminalExitResponse]
):
    """``terminal/wait_for_exit``: answer once the command ended, with its exit status."""

    __slots__ = ()
    REQUEST = WaitForTerminalExitRequest


class KillTerminalMessage(AgentRequestMessage[KillTerminalRequest, KillTerminalResponse]):
    """``terminal/kill``: kill the command, keep the terminal."""

    __slots__ = ()
    REQUEST = KillTerminalRequest


class ReleaseTerminalMessage(AgentRequestMessage[ReleaseTerminalRequest, ReleaseTerminalResponse]):
    """``terminal/release``: kill the command if it still runs, forget the terminal."""

    __slots__ = ()
    REQUEST = ReleaseTerminalRequest


class CreateElicitationMessage(AgentRequestMessage[CreateElicitationRequest, CreateElicitationResponse]):
    """``elicitation/create`` (only if the client advertised ``elicitation``): ask the user, answer."""

    __slots__ = ()
    REQUEST = CreateElicitationRequest


_REQUEST_MESSAGES: Final[dict[str, type[AgentRequestMessage[Any, Any]]]] = {
    kind.REQUEST.METHOD: kind
    for kind in (
        RequestPermissionMessage,
        ReadTextFileMessage,
        WriteTextFileMessage,
        CreateTerminalMessage,
        TerminalOutputMessage,
        WaitForTerminalExitMessage,
        KillTerminalMessage,
        ReleaseTerminalMessage,
        CreateElicitationMessage,
    )
}


def _session_message(dispatch: RequestDispatch | NotificationDispatch) -> SessionMessage:
    """The item a session reads: typed for the requests ACP defines, plain for the rest."""
    if type(dispatch) is RequestDispatch:
        kind = _REQUEST_MESSAGES.get(dispatch.method)
        if kind is not None:
            return kind(dispatch)
    return SessionMessage(dispatch)


class TurnEnded:
    """The end of a prompt turn: the agent answered ``session/prompt``.

    It is read after every update the agent sent during the turn.
    """

    __slots__ = ("response",)

    def __init__(self, response: PromptResponse) -> None:
        self.response = response

    def __repr__(self) -> str:
        return f"TurnEnded(stop_reason={self.stop_reason!r})"

    @property
    def stop_reason(self) -> StopReason | str:
        """Why the turn ended (``end_turn``, ``cancelled``...; an unknown value is kept as a string)."""
        return self.response.stop_reason


_Item: TypeAlias = "SessionMessage | TurnEnded | BaseException"


class _Inbox:
    """The session's queue: filled by the dispatch loop, read by :class:`ActiveSession`."""

    __slots__ = ("closed", "items", "waiter")

    def __init__(self) -> None:
        self.items: deque[_Item] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False

    def put(self, item: _Item) -> None:
        self.items.append(item)
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


_Mode = Literal["queue", "forward", "detached"]


class _SessionRouter:
    """The dynamic handler of one session: claims the agent's messages carrying its ``sessionId``.

    In ``queue`` mode it puts them in the session's inbox (notifications go to ``history`` instead
    while that is a list: a ``session/load`` waiting for its answer); in ``forward`` mode (after the
    hand-off to proxy mode) it forwards them to the client.
    """

    __slots__ = ("client", "history", "inbox", "mode", "session_id", "source")

    def __init__(
        self, cx: Connection, session_id: str, inbox: _Inbox | None, mode: _Mode, client: Any = None
    ) -> None:
        self.session_id = session_id
        self.inbox = inbox
        self.mode: _Mode = mode
        self.client = client
        #: The peer the agent's messages come from; ``None``: take every message as the agent's.
        self.source = _agent_role(cx.role)
        #: While a list: where the notifications go (the replay of a ``session/load`` not answered yet).
        self.history: list[SessionMessage] | None = None

    def __repr__(self) -> str:
        return f"_SessionRouter({self.session_id!r}, mode={self.mode!r})"

    @property
    def session_scope(self) -> str:
        """Only this session's messages: the handler chain offers it no other (its session index)."""
        return self.session_id

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications from the agent carrying this session's id."""
        kind = type(message)
        if kind is not NotificationDispatch and kind is not RequestDispatch:
            return False
        if message.session_id != self.session_id:
            return False
        source = self.source
        if source is None:
            return True
        peer = message.peer  # None: a dispatch made by hand
        return peer is None or peer == source

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Queue or forward the message; decline anything else."""
        mode = self.mode
        if mode == "detached" or not self.accepts(message):
            return Unhandled(message)
        if mode == "forward":
            cx.send_proxied_message_to(self.client, message)
            return None
        assert self.inbox is not None
        assert isinstance(message, RequestDispatch | NotificationDispatch)
        history = self.history
        if history is not None and type(message) is NotificationDispatch:
            history.append(SessionMessage(message))
        else:
            self.inbox.put(_session_message(message))
        return None


class _Routing:
    """A session's handler (and inbox) installed before its setup request is sent.

    For ``session/load`` and ``session/resume``, which name the session: the handler is in place
    before the agent can send anything for it, so nothing is parked. ``client``: forward the
    session's messages to it (a proxy's hand-off from the start) instead of queueing them.
    """

    __slots__ = ("inbox", "registration", "router")

    def __init__(
        self, cx: Connection, session_id: str, *, history: bool = False, client: Any = UNSET
    ) -> None:
        if client is UNSET:
            self.inbox: _Inbox | None = _Inbox()
            self.router = _SessionRouter(cx, session_id, self.inbox, "queue")
            if history:
                self.router.history = []
        else:
            self.inbox = None
            self.router = _SessionRouter(cx, session_id, None, "forward", client)
        self.registration = cx.add_dynamic_handler(self.router)

    def discard(self, why: str) -> None:
        """The session was not set up here: stop routing it, answer the requests it queued."""
        self.router.mode = "detached"
        self.registration.remove()
        if self.inbox is not None:
            _refuse_queued(self.inbox, why)


def _refuse_queued(inbox: _Inbox, why: str) -> None:
    """Close ``inbox``: the agent's requests in it that nobody read are answered with an error."""
    inbox.closed = True
    while inbox.items:
        item = inbox.items.popleft()
        if isinstance(item, SessionMessage) and item.is_request:
            cast(RequestDispatch, item.dispatch).responder.respond_with_error(InternalError(message=why))
    inbox.wake()


# --- the active session ---------------------------------------------------------------------------


class ActiveSession:
    """A session set up by the agent: send prompts, read what the agent sends for it.

    Made by :meth:`SessionBuilder.start_session` (or :func:`attach_session`), whatever set it up
    (``session/new``, ``/load``, ``/resume``, ``/fork``). It holds the session id and what every
    setup answer carries (modes, config options, ``_meta``); :meth:`response` is the answer itself.
    It is an async context manager: leaving the ``async with`` block detaches it (see
    :meth:`close`). Read with :meth:`read_update`, with ``async for message in session`` (the
    current turn's messages) or with :meth:`read_to_string`; a loaded session's replayed
    conversation is :attr:`history`.
    """

    def __init__(
        self,
        cx: Connection,
        response: SessionSetupResponse,
        mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
        *,
        session_id: str | None = None,
        _routing: _Routing | None = None,
    ) -> None:
        answered = getattr(response, "session_id", None)
        if session_id is None:
            session_id = answered
        if not isinstance(session_id, str):
            raise TypeError(
                f"A {type(response).__name__} does not name its session: pass session_id=... (the id "
                "the session/load or session/resume request named)"
            )
        if answered is not None and answered != session_id:
            raise ValueError(f"session_id {session_id!r} differs from the answer's {answered!r}")
        self._cx = cx
        self._response = response
        self._session_id = session_id
        if _routing is None:
            _routing = _Routing(cx, session_id)
        assert _routing.inbox is not None, "a session read here has an inbox"
        self._inbox = _routing.inbox
        self._router = _routing.router
        self._registration = _routing.registration
        #: The notifications ``session/load`` replayed before its answer (the conversation so far),
        #: in the order the agent sent them; empty for the other setup methods. Read it as the
        #: session's past: :meth:`read_update` gives only what came after the answer.
        self.history: list[SessionMessage] = self._router.history or []
        self._router.history = None  # from now on everything is queued for read_update
        self._mcp = list(mcp_registrations)
        self._watcher: asyncio.Task[None] | None = None
        self._connection_ended = False
        self._scoped = False
        #: Why the last turn read to its end stopped; ``None`` before that.
        self.stop_reason: StopReason | str | None = None
        #: The agent's answer to the last ``session/prompt`` read to its end; ``None`` before that.
        self.last_response: PromptResponse | None = None

    def __repr__(self) -> str:
        return f"<ActiveSession {self.session_id!r} {self._router.mode}>"

    # --- what the setup answer said -------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session's id (as the agent chose it for ``session/new`` and ``session/fork``)."""
        return self._session_id

    @property
    def modes(self) -> SessionModeState | None:
        """The modes the agent offers and the current one, if it supports modes."""
        return self._response.modes

    @property
    def config_options(self) -> list[SessionConfigOption] | None:
        """The session's configuration options, if the agent reported any."""
        return self._response.config_options

    @property
    def meta(self) -> dict[str, Any] | None:
        """The ``_meta`` of the setup answer."""
        return self._response.meta

    @property
    def connection(self) -> Connection:
        """The connection to the agent."""
        return self._cx

    @property
    def active(self) -> bool:
        """Whether messages for this session are still read here (not closed, not handed off)."""
        return self._router.mode == "queue"

    def response(self) -> SessionSetupResponse:
        """A copy of the agent's setup answer, for example to answer a client with.

        A :class:`~acpio.schema.NewSessionResponse`, ``LoadSessionResponse``,
        ``ResumeSessionResponse`` or ``ForkSessionResponse``: the type of the request that set the
        session up.
        """
        return self._response.model_copy(deep=True)

    # --- prompting ------------------------------------------------------------------------------

    def send_prompt(self, prompt: PromptContent, *, meta: dict[str, Any] | None = None) -> None:
        """Send ``session/prompt`` and return at once; read the turn with the methods below.

        ``prompt`` is text, one content block (``TextContent``, ``ResourceLink``...) or several.
        The agent's answer is read as a :class:`TurnEnded` after the turn's updates; an error answer
        is raised by the read that reaches it. Raises :class:`~acpio.ConnectionClosed` if the
        connection is closed.
        """
        self._check_active("send_prompt")
        request = PromptRequest(session_id=self.session_id, prompt=_content_blocks(prompt))
        if meta is not None:
            request.meta = meta
        sent: SentRequest[PromptResponse] = self._cx.send_request_to(_agent_peer(self._cx), request)
        inbox = self._inbox

        async def on_result(result: PromptResponse | AcpError) -> None:
            if self._router.mode != "queue":
                return  # closed or handed off: nobody reads the turn here
            inbox.put(TurnEnded(result) if isinstance(result, PromptResponse) else result)

        sent.on_receiving_result(on_result)

    def cancel(self) -> None:
        """Send ``session/cancel``: the agent stops the turn and ends it with ``cancelled``.

        As ACP requires of the client, the agent's ``session/request_permission`` requests for this
        session that are still unanswered (read or not) are answered with the ``cancelled``
        outcome at once (on a client's connection; see :class:`SessionConnection`); those not read
        yet are dropped from the session's queue. Read the turn on: the agent may still send
        updates before its stop reason.
        """
        self._cx.send_notification_to(_agent_peer(self._cx), CancelNotification(session_id=self.session_id))
        items = self._inbox.items
        if any(_answered_request(item) for item in items):
            kept = [item for item in items if not _answered_request(item)]
            items.clear()
            items.extend(kept)

    async def read_update(self) -> SessionMessage | TurnEnded:
        """The next message for this session, or the :class:`TurnEnded` of a prompt.

        Raises the agent's error if it answered ``session/prompt`` with one, and
        :class:`~acpio.ConnectionClosed` once the connection ended and everything queued before
        was read. Waits without limit: bound it with ``asyncio.timeout`` if needed.
        """
        self._check_active("read_update")
        item = await self._next_item()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, TurnEnded):
            self.last_response = item.response
            self.stop_reason = item.stop_reason
        return item

    def __aiter__(self) -> AsyncIterator[SessionMessage]:
        """Iterate over the current turn's messages; ends after the stop reason (see :attr:`stop_reason`)."""
        return self._turn()

    async def _turn(self) -> AsyncIterator[SessionMessage]:
        while True:
            item = await self.read_update()
            if isinstance(item, TurnEnded):
                return
            yield item

    async def read_to_string(
        self,
        *,
        permissions: PermissionChoice | None = None,
        files: str | os.PathLike[str] | ConfinedFiles | None = None,
    ) -> str:
        """Read the current turn to its end; return the text of the agent's message chunks.

        Other updates are skipped. The agent's requests during the turn are answered as told:

        * ``session/request_permission`` by ``permissions``: ``"allow"`` picks the ``allow_once``
          option (else ``allow_always``, else a reject option), ``"deny"`` picks ``reject_once``
          (else ``reject_always``, else the ``cancelled`` outcome); an async callback is given the
          :class:`~acpio.schema.RequestPermissionRequest` and returns the chosen option's id or an
          outcome; a :class:`~acpio.client.PermissionPolicy` decides as it likes.
        * ``fs/read_text_file`` and ``fs/write_text_file`` by ``files``: the directory (or a
          :class:`~acpio.client.ConfinedFiles`) the agent may read and write in, and nowhere else
          (a path outside is refused ``-32602``, naming the path and the root). As ACP requires,
          only what this client advertised in its ``initialize`` request is answered
          (``fs.readTextFile``, ``fs.writeTextFile``); the rest is refused ``-32601``.
        * Anything else (``terminal/*``...), and the above when not told how, is refused ``-32601``
          with ``data`` saying how to answer it: read the turn with :meth:`read_update` and answer
          the typed :class:`AgentRequestMessage` in place, or register a handler on the builder.

        If the permission callback raises a :class:`~acpio.RequestError`, the agent gets that error;
        any other exception (or an option the agent did not offer) answers the agent ``-32603`` and
        is raised here.
        """
        answers = _TurnAnswers(self._cx, permissions, files)
        parts: list[str] = []
        async for message in self:
            if message.is_request:
                await answers.answer(message)
                continue
            try:
                text = message.text
            except InvalidParams as exc:
                _log.warning("Skipping a malformed session/update for %r: %s", self.session_id, exc)
                continue
            if text is not None:
                parts.append(text)
        return "".join(parts)

    # --- hand-off and end -----------------------------------------------------------------------

    def proxy_remaining_messages(self) -> None:
        """Stop reading this session here and forward its messages to the client from now on.

        For a proxy that started the session itself (to add MCP servers, or to send prompts of its
        own) and now steps aside. The hand-off loses and reorders nothing:

        1. the session's handler stops queueing: no new message enters the queue;
        2. what is queued and unread is forwarded to the client, in order (stop reasons of the
           proxy's own prompts are bookkeeping and are not forwarded);
        3. the handler then forwards every later message of the session to the client.

        All three steps run without yielding to the event loop, so the dispatch loop cannot slip
        a message between them. The handler is switched in place rather than replaced, because a
        handler added from outside the dispatch loop only starts at the loop's next turn. The
        session's MCP servers stay up for the connection's lifetime. This consumes the session:
        reading it afterwards raises ``RuntimeError``. A loaded session's :attr:`history` was
        delivered here and is not forwarded (:meth:`SessionBuilder.start_session_proxy` forwards it
        before answering the client).
        """
        if self._scoped:
            raise RuntimeError(
                "proxy_remaining_messages() cannot be used on a session from run_until(): it ends "
                "with its callback. Use start_session() for a session that outlives the call."
            )
        self._check_active("proxy_remaining_messages")
        client = _client_peer(self._cx)
        router = self._router
        router.mode = "detached"  # 1. nothing more is queued
        forwarded = 0
        while self._inbox.items:  # 2. forward what is queued, in order
            item = self._inbox.items.popleft()
            if isinstance(item, SessionMessage):
                self._cx.send_proxied_message_to(client, item.dispatch)
                forwarded += 1
        router.client = client  # 3. forward whatever comes next
        router.mode = "forward"
        router.inbox = None
        self._registration.run_indefinitely()
        for registration in self._mcp:
            registration.run_indefinitely()
        self._stop_watching()
        self._inbox.closed = True
        self._inbox.wake()
        _log.debug(
            "Session %r handed off to proxy mode (%d queued messages forwarded)", self.session_id, forwarded
        )

    def close(self) -> None:
        """Detach the session: its messages are no longer read here, its MCP servers stop.

        Queued requests nobody read are answered with an error. The session itself lives on at the
        agent. Called when the ``async with`` block ends; calling it again does nothing.
        """
        router = self._router
        if router.mode != "queue":
            return
        router.mode = "detached"
        self._registration.remove()
        for registration in self._mcp:
            registration.remove()
        self._stop_watching()
        _refuse_queued(self._inbox, f"Session {self.session_id!r} was closed by the client")

    async def __aenter__(self) -> ActiveSession:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- internals ------------------------------------------------------------------------------

    def _check_active(self, what: str) -> None:
        mode = self._router.mode
        if mode == "forward":
            raise RuntimeError(
                f"{what}(): session {self.session_id!r} was handed to proxy mode; its messages now go "
                "to the client. Start another session to read one here."
            )
        if mode == "detached":
            raise RuntimeError(
                f"{what}(): session {self.session_id!r} was closed (its async with block ended). "
                "Call it inside the block, or attach again with attach_session()."
            )

    async def _next_item(self) -> _Item:
        inbox = self._inbox
        while not inbox.items:
            self._check_active("read_update")  # closed or handed off by another task meanwhile
            if self._watcher is None:
                self._watch_connection()
            if self._connection_ended:
                return ConnectionClosed(
                    f"Connection {self._cx.name!r} closed while reading session {self.session_id!r}"
                )
            if inbox.waiter is not None:
                raise RuntimeError(
                    f"Another task is already reading session {self.session_id!r}; read a session "
                    "from one task at a time."
                )
            waiter = inbox.waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                inbox.waiter = None
        return inbox.items.popleft()

    def _watch_connection(self) -> None:
        """Wake the reader once the connection ends (a task, started on the first wait)."""
        try:
            self._watcher = self._cx.spawn(self._cx.wait_closed)
        except ConnectionClosed:
            self._on_watcher_done()
            return
        self._watcher.add_done_callback(self._on_watcher_done)

    def _on_watcher_done(self, _: object = None) -> None:
        self._connection_ended = True
        self._inbox.wake()

    def _stop_watching(self) -> None:
        watcher = self._watcher
        self._watcher = None
        if watcher is not None and not watcher.done():
            watcher.remove_done_callback(self._on_watcher_done)
            watcher.cancel()


def _answered_request(item: _Item) -> bool:
    """Whether ``item`` is a request from the agent that is already answered."""
    if not isinstance(item, SessionMessage):
        return False
    dispatch = item.dispatch
    return isinstance(dispatch, RequestDispatch) and dispatch.responder.done


class _TurnAnswers:
    """How :meth:`ActiveSession.read_to_string` answers the agent's requests: as told, else ``-32601``."""

    __slots__ = ("advertised", "files", "policy")

    def __init__(
        self,
        cx: Connection,
        permissions: PermissionChoice | None,
        files: str | os.PathLike[str] | ConfinedFiles | None,
    ) -> None:
        self.policy: PermissionPolicy | None = (
            permission_policy(permissions) if permissions is not None else None
        )
        if files is not None and not isinstance(files, ConfinedFiles):
            files = ConfinedFiles(files, set_by="read_to_string(files=...)")
        self.files = files
        #: What this client advertised at ``initialize``; ``None``: not known, so nothing was.
        self.advertised: ClientFeatures | None = (
            cx.peer_state.client_features if isinstance(cx, SessionConnection) else None
        )

    async def answer(self, message: SessionMessage) -> None:
        """Answer one request of the turn."""
        try:
            if isinstance(message, RequestPermissionMessage) and self.policy is not None:
                await self._permission(message, self.policy)
                return
            if isinstance(message, ReadTextFileMessage | WriteTextFileMessage) and self.files is not None:
                await self._file(message, self.files)
                return
        except RequestError as exc:  # the agent's params did not validate, or the file was refused
            cast(RequestDispatch, message.dispatch).responder.respond_with_error(exc)
            return
        _decline(message, _how_to_answer(message))

    async def _permission(self, message: RequestPermissionMessage, policy: PermissionPolicy) -> None:
        if message.answered:  # answered cancelled: the client cancelled the turn
            return
        request = message.request
        try:
            outcome = await message.responder.run_until_cancelled(policy.decide(request))
        except RequestCancelled as exc:  # the turn was cancelled (that answer stands), or the agent gave up
            message.respond_with_error(exc)
            return
        except RequestError:  # the callback's answer to the agent: sent by answer()
            raise
        except Exception as exc:
            message.respond_with_error(
                InternalError(message=f"The client failed to decide the permission request: {exc}")
            )
            raise
        message.respond(RequestPermissionResponse(outcome=outcome))

    async def _file(self, message: ReadTextFileMessage | WriteTextFileMessage, files: ConfinedFiles) -> None:
        reading = isinstance(message, ReadTextFileMessage)
        capability = "fs.readTextFile" if reading else "fs.writeTextFile"
        advertised = self.advertised
        if advertised is None or not (advertised.read_text_file if reading else advertised.write_text_file):
            _decline(
                message,
                f"this client did not advertise {capability} in its initialize request, so the agent "
                "must not call it; to let read_to_string(files=...) answer it, send InitializeRequest("
                "client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, "
                "write_text_file=True))) from this connection",
            )
            return
        # In a thread, so that reading or writing a big file does not stop the event loop.
        if isinstance(message, ReadTextFileMessage):
            message.respond(await asyncio.to_thread(files.read, message.request))
        else:
            message.respond(await asyncio.to_thread(files.write, message.request))


def _how_to_answer(message: SessionMessage) -> str:
    """What to do for read_to_string() (or the reader) to answer ``message``'s request."""
    method = message.method
    item = type(message).__name__
    read_it = (
        f"or read the turn with read_update() and answer the {item} with item.respond(...)"
        if isinstance(message, AgentRequestMessage)
        else "or read the turn with read_update() and answer it through item.dispatch.responder"
    )
    if isinstance(message, RequestPermissionMessage):
        return (
            "read_to_string() answers it when given permissions='allow', 'deny' or an async callback; "
            + read_it
        )
    if isinstance(message, ReadTextFileMessage | WriteTextFileMessage):
        return (
            "read_to_string() answers it when given files=ROOT, the directory the agent may read and "
            f"write in; {read_it}"
        )
    return f"read_to_string() does not answer {method}: register a handler for it on the builder, {read_it}"


def _decline(message: SessionMessage, how: str) -> None:
    """Refuse the agent's request ``-32601``, saying in ``data`` how to have it answered."""
    dispatch = message.dispatch
    assert isinstance(dispatch, RequestDispatch)
    _log.warning("read_to_string() answered %r with -32601: %s", dispatch.method, how)
    dispatch.responder.respond_with_error(MethodNotFound(f"{dispatch.method}: {how}"))


def _content_blocks(prompt: PromptContent) -> list[ContentBlock]:
    if isinstance(prompt, str):
        return [TextContent(text=prompt)]
    if hasattr(prompt, "model_dump"):  # one content block model
        return [cast(ContentBlock, prompt)]
    blocks = list(prompt)
    for block in blocks:
        if not hasattr(block, "model_dump"):
            raise TypeError(
                f"send_prompt() takes text, a content block or an iterable of content blocks; got "
                f"{block!r} in the iterable. Wrap text as TextContent(text=...)."
            )
    return blocks


def attach_session(
    cx: Connection,
    response: SessionSetupResponse,
    mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
    *,
    session_id: str | None = None,
) -> ActiveSession:
    """Start reading the session that ``response`` (the agent's answer to a setup request) describes.

    Low level: :meth:`SessionBuilder.start_session` does this for you. The answers to
    ``session/load`` and ``session/resume`` do not name their session: pass ``session_id``. Call it
    inside the dispatch loop (a response callback) for the session to see the very next message;
    from elsewhere its handler starts at the loop's next turn, and the client role's queue keeps
    what came between. ``mcp_registrations`` are the session's MCP handlers, removed with it.
    """
    return ActiveSession(cx, response, mcp_registrations, session_id=session_id)


# --- the builder ----------------------------------------------------------------------------------

_SETUP_METHODS: Final[dict[type[Any], str]] = {
    NewSessionRequest: NewSessionRequest.METHOD,
    LoadSessionRequest: LoadSessionRequest.METHOD,
    ResumeSessionRequest: ResumeSessionRequest.METHOD,
    ForkSessionRequest: ForkSessionRequest.METHOD,
}


class SessionStart:
    """What :meth:`SessionBuilder.start_session` returns: await it, or use it with ``async with``.

    ``session = await builder.start_session()`` gives the :class:`ActiveSession`;
    ``async with builder.start_session() as session:`` also closes it at the end of the block.
    """

    __slots__ = ("_builder", "_session")

    def __init__(self, builder: SessionBuilder[Any]) -> None:
        self._builder = builder
        self._session: ActiveSession | None = None

    def __await__(self) -> Generator[Any, None, ActiveSession]:
        return self._builder._start().__await__()

    async def __aenter__(self) -> ActiveSession:
        self._session = await self._builder._start()
        return self._session

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            self._session.close()


_OnAnswer: TypeAlias = Callable[["SessionSetupResponse | AcpError", "_Routing | None"], Awaitable[None]]


class SessionBuilder(Generic[RequestT]):
    """A session-setup request being prepared; start it with one of the ``start``/``on`` methods.

    Generic over the request it sends: ``SessionBuilder[NewSessionRequest]`` (``SessionBuilder``
    alone) from :func:`build_session`, :func:`build_session_cwd`; ``LoadSessionRequest`` from
    :func:`build_session_load`; ``ResumeSessionRequest`` from :func:`build_session_resume`;
    ``ForkSessionRequest`` from :func:`build_session_fork`; any of them from
    :func:`build_session_from`. Every kind starts the same way and gives an
    :class:`ActiveSession`. :attr:`request` may be changed before starting (its ``mcp_servers`` is
    always a list, so ``mcpServers`` is always sent). A builder starts one session.
    """

    def __init__(self, cx: Connection, request: RequestT) -> None:
        if type(request) not in _SETUP_METHODS:
            raise TypeError(
                f"SessionBuilder takes a NewSessionRequest, LoadSessionRequest, ResumeSessionRequest or "
                f"ForkSessionRequest; got {type(request).__name__}"
            )
        request = fill_required_fields(_SETUP_METHODS[type(request)], request)
        self._cx = cx
        #: The setup request's params that will be sent.
        self.request: RequestT = request
        self._mcp: list[DynamicHandlerRegistration] = []
        self._used = False

    def __repr__(self) -> str:
        request = self.request
        named = f" session_id={request.session_id!r}" if not isinstance(request, NewSessionRequest) else ""
        return (
            f"<SessionBuilder {self.method}{named} cwd={request.cwd!r} "
            f"mcp_servers={len(request.mcp_servers or ())}>"
        )

    @property
    def method(self) -> str:
        """The setup method this builder sends: ``session/new``, ``session/load``..."""
        return _SETUP_METHODS[type(self.request)]

    def with_mcp_server(self, registry: McpServerRegistry) -> SessionBuilder[RequestT]:
        """Offer the agent the MCP servers of ``registry`` in this session; returns the builder.

        The registry declares its servers in the request and starts serving them now, so they are
        ready while the agent sets the session up. They stop when the session ends or is refused.
        Works alike for every setup method (see :class:`McpServerRegistry`).
        """
        self._check_unused()
        attach = getattr(registry, "attach", None)
        if not callable(attach):
            raise TypeError(
                f"with_mcp_server() takes an MCP server registry (with attach(request, cx)); got "
                f"{registry!r}. Wrap plain server declarations in McpServerList([...])."
            )
        request = self.request
        if isinstance(request, NewSessionRequest):
            self._mcp.extend(registry.attach(request, self._cx))
            return self
        declared = NewSessionRequest(cwd=request.cwd, mcp_servers=[])
        self._mcp.extend(registry.attach(declared, self._cx))
        servers = request.mcp_servers
        if servers is None:  # set to None after the builder was made
            servers = request.mcp_servers = []
        servers.extend(declared.mcp_servers)
        return self

    # --- blocking -------------------------------------------------------------------------------

    def start_session(self) -> SessionStart:
        """Send the setup request and give the :class:`ActiveSession` once the agent answered.

        Await the result, or use it with ``async with`` (the session is closed at the end). For
        ``session/load``, the replayed conversation is in the session's :attr:`~ActiveSession.history`
        when it is handed over. Raises the agent's error (a :class:`~acpio.RequestError`) if it
        refuses the session, :class:`~acpio.ConnectionClosed` if the connection ends first, and
        :class:`~acpio.DeadlockError` inside a handler (use :meth:`on_session_start` there).
        """
        return SessionStart(self)

    async def run_until(self, callback: Callable[[ActiveSession], Awaitable[T]]) -> T:
        """Start the session, run ``await callback(session)``, close the session; return its result.

        For a session scoped to one piece of work: its MCP servers stop when the callback returns,
        and it cannot be handed to proxy mode. Errors as for :meth:`start_session`.
        """
        session = await self._start()
        session._scoped = True
        async with session:
            return await callback(session)

    async def start_session_proxy(self, responder: Responder[Any]) -> str:
        """Start the session, answer the client's request through ``responder``, then forward.

        For a proxy that handles the client's setup request (to add MCP servers, say) and then
        lets the session's traffic through: see :meth:`ActiveSession.proxy_remaining_messages`.
        A loaded session's history is forwarded to the client first, in order, then the answer.
        Returns the session id. If the agent refuses, the client gets the error and so does the
        caller.
        """
        try:
            session = await self._start()
        except AcpError as exc:
            responder.respond_with_error(exc)
            raise
        client = _client_peer(self._cx)
        for message in session.history:  # session/load: the client's replay precedes the answer
            self._cx.send_proxied_message_to(client, message.dispatch)
        responder.respond(session.response())
        session.proxy_remaining_messages()
        return session.session_id

    async def _start(self) -> ActiveSession:
        self._check_unused()
        cx = self._cx
        if cx.in_dispatch_loop():
            raise DeadlockError(
                "start_session(), run_until() and start_session_proxy() wait for the agent's answer, "
                "which only this handler's own dispatch loop can read. Inside a handler use "
                "on_session_start(callback) or on_proxy_session_start(responder, callback), or move "
                "the call into cx.spawn(...)."
            )
        self._used = True
        abandoned = False
        attached: asyncio.Future[ActiveSession] = asyncio.get_running_loop().create_future()

        async def on_answer(result: SessionSetupResponse | AcpError, routing: _Routing | None) -> None:
            # Runs in the dispatch loop, before the message after the response.
            if isinstance(result, AcpError):
                return  # the awaiting side raises the error itself
            if abandoned:
                if routing is not None:
                    routing.discard(f"Nobody reads session {routing.router.session_id!r} any more")
                self._remove_mcp()
                _log.info("A session was set up, but its caller stopped waiting for it: %r", result)
                return
            attached.set_result(self._attach(result, routing))

        sent = self._send(on_answer)
        try:
            try:
                await sent
            except AcpError as exc:
                if not isinstance(exc, ConnectionClosed | DeadlockError):
                    exc.add_note(f"(the agent refused {self._describe()}; -32000 means: authenticate first)")
                raise
            if not attached.done():
                # The response callback is queued in the dispatch loop; it runs before the next message.
                await _wait_or_closed(cx, attached)
        except BaseException:
            abandoned = True
            if attached.done() and not attached.cancelled():
                attached.result().close()
            raise
        return attached.result()

    # --- non-blocking (for handlers) ------------------------------------------------------------

    def on_session_start(self, callback: Callable[[ActiveSession], Awaitable[object]]) -> None:
        """Send the setup request and return at once; run ``callback(session)`` in a task once it exists.

        Safe inside handlers. The session's handler is in place before the message after the
        response (for ``session/load`` and ``/resume``, before the request is sent), and the session
        is closed when the callback returns (unless it handed the session to proxy mode). If the
        agent refuses the session, or the callback raises, the connection fails with that error, as
        a spawned task's failure does; to handle a refusal yourself, run :meth:`run_until` in
        ``cx.spawn(...)`` and catch the error there.
        """
        self._check_unused()
        self._used = True
        cx = self._cx

        async def on_answer(result: SessionSetupResponse | AcpError, routing: _Routing | None) -> None:
            if isinstance(result, AcpError):
                result.add_note(f"(the agent refused {self.method} started by on_session_start())")
                raise result
            session = self._attach(result, routing)

            async def run() -> None:
                async with session:
                    await callback(session)

            cx.spawn(run)

        self._send(on_answer)

    def on_proxy_session_start(
        self,
        responder: Responder[Any],
        callback: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        """For a proxy: forward the setup request, answer the client, route the session to it.

        Returns at once (safe inside handlers). When the agent answers, the dispatch loop answers
        the client through ``responder`` and installs the handler that forwards the session's
        messages to the client, before reading the next message (for ``session/load`` and
        ``/resume`` that handler is installed before the request is sent, so a load's replay
        reaches the client live, before the answer); then ``callback(session_id)`` runs in a task. A
        refusal is passed to the client (the callback does not run). If the client cancels its
        request, the cancellation is passed on to the agent.
        """
        self._check_unused()
        self._used = True
        cx = self._cx
        client = _client_peer(cx)

        async def on_answer(result: SessionSetupResponse | AcpError, routing: _Routing | None) -> None:
            if isinstance(result, AcpError):
                responder.respond_with_error(result)
                return
            for registration in self._mcp:
                registration.run_indefinitely()
            responder.respond(result)
            if routing is None:
                router = _SessionRouter(cx, self._session_id(result), None, "forward", client)
                registration = cx.add_dynamic_handler(router)
            else:
                registration = routing.registration
            registration.run_indefinitely()
            if callback is not None:
                cx.spawn(callback, self._session_id(result))

        self._send(on_answer, client=client).forward_cancellation_from(responder)

    # --- internals ------------------------------------------------------------------------------

    def _send(self, on_answer: _OnAnswer, *, client: Any = UNSET) -> SentRequest[SessionSetupResponse]:
        """Send the request, the one start path of every kind and style.

        ``session/load`` and ``/resume`` name their session: its handler is installed first (queueing
        it, or forwarding it to ``client``), so nothing the agent sends for it is parked or lost. A
        refusal removes that handler and the MCP servers before ``on_answer`` sees the error.
        """
        cx = self._cx
        request = self.request
        peer = _agent_peer(cx)  # a wrong kind of connection fails before anything is installed
        routing: _Routing | None = None
        if isinstance(request, LoadSessionRequest | ResumeSessionRequest):
            routing = _Routing(
                cx, request.session_id, history=isinstance(request, LoadSessionRequest), client=client
            )
        try:
            sent: SentRequest[SessionSetupResponse] = cx.send_request_to(peer, request)
        except BaseException:
            if routing is not None:
                routing.discard(f"{self.method} was not sent")
            self._remove_mcp()
            raise

        async def on_result(result: SessionSetupResponse | AcpError) -> None:
            if isinstance(result, AcpError):
                if routing is not None:
                    routing.discard(f"The agent refused {self._describe()}")
                self._remove_mcp()
            await on_answer(result, routing)

        sent.on_receiving_result(on_result)
        return sent

    def _attach(self, result: SessionSetupResponse, routing: _Routing | None) -> ActiveSession:
        return ActiveSession(
            self._cx, result, self._mcp, session_id=self._session_id(result), _routing=routing
        )

    def _session_id(self, result: SessionSetupResponse) -> str:
        """The session set up: named by the answer (new, fork) or by the request (load, resume)."""
        if isinstance(result, NewSessionResponse | ForkSessionResponse):
            return result.session_id
        request = self.request
        assert not isinstance(request, NewSessionRequest)
        return request.session_id

    def _describe(self) -> str:
        request = self.request
        if isinstance(request, NewSessionRequest):
            return f"{self.method} for cwd {request.cwd!r}"
        return f"{self.method} of session {request.session_id!r} in cwd {request.cwd!r}"

    def _remove_mcp(self) -> None:
        for registration in self._mcp:
            registration.remove()

    def _check_unused(self) -> None:
        if self._used:
            raise RuntimeError(
                "This SessionBuilder already started its session; make another builder "
                "(build_session(cx, cwd), build_session_load(cx, session_id, cwd)...) for another one."
            )


def _cancelled_session(message: Any, params: Any) -> str | None:
    """The session a ``session/cancel`` being sent names (typed, untyped or by name); else ``None``."""
    if params is UNSET:
        if type(message) is CancelNotification:
            return message.session_id
        if not (isinstance(message, UntypedMessage) and message.method == _CANCEL_METHOD):
            return None
        params = message.params
    elif message != _CANCEL_METHOD:
        return None
    session_id = params.get("sessionId") if isinstance(params, dict) else getattr(params, "session_id", None)
    return session_id if isinstance(session_id, str) else None


async def _wait_or_closed(cx: Connection, future: asyncio.Future[Any]) -> None:
    """Wait for ``future``; raise ``ConnectionClosed`` if the connection ends first."""
    closed = asyncio.ensure_future(cx.wait_closed())
    try:
        await asyncio.wait((future, closed), return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
    if not future.done():
        raise ConnectionClosed(f"Connection {cx.name!r} closed before the session was attached")


# --- entry points ---------------------------------------------------------------------------------


def build_session(cx: Connection, cwd: str | os.PathLike[str]) -> SessionBuilder[NewSessionRequest]:
    """A :class:`SessionBuilder` for a new session (``session/new``) working in ``cwd``, no MCP servers yet.

    ACP requires an absolute ``cwd``: a relative one is made absolute against the current
    directory (without resolving symbolic links).
    """
    return SessionBuilder(cx, NewSessionRequest(cwd=_absolute(cwd), mcp_servers=[]))


def build_session_cwd(cx: Connection) -> SessionBuilder[NewSessionRequest]:
    """A :class:`SessionBuilder` for a new session working in the current directory.

    Raises :class:`~acpio.InternalError` if the current directory no longer exists.
    """
    try:
        cwd = Path.cwd()
    except OSError as exc:
        raise InternalError(
            message=f"Cannot get the current directory ({exc}); pass one with build_session(cx, cwd)"
        ) from exc
    return build_session(cx, cwd)


def build_session_load(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[LoadSessionRequest]:
    """A :class:`SessionBuilder` loading an existing session (``session/load``) in ``cwd``.

    The agent replays the conversation before it answers; the started session has it in
    :attr:`ActiveSession.history`, in order, and :meth:`ActiveSession.read_update` gives only what
    comes after. The agent must advertise ``loadSession``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, LoadSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_resume(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[ResumeSessionRequest]:
    """A :class:`SessionBuilder` resuming an existing session (``session/resume``) in ``cwd``.

    Nothing is replayed: the session goes on from where it was. The agent must advertise
    ``sessionCapabilities.resume``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, ResumeSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_fork(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[ForkSessionRequest]:
    """A :class:`SessionBuilder` forking session ``session_id`` into a new one (``session/fork``).

    The new session starts from the context of the old one, which is left as it was; its id is in
    the agent's answer (:attr:`ActiveSession.session_id`). ``session/fork`` is unstable: the
    connection must be made with ``Client.builder(unstable=True)`` (``Proxy`` likewise) and the agent
    must advertise ``sessionCapabilities.fork``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, ForkSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_from(cx: Connection, request: _R) -> SessionBuilder[_R]:
    """A :class:`SessionBuilder` starting from an existing setup request (copied).

    ``request`` is a ``NewSessionRequest``, ``LoadSessionRequest``, ``ResumeSessionRequest`` or
    ``ForkSessionRequest``: for a proxy that intercepted a client's request and wants to change it
    (add MCP servers, say) before sending it on, or to set fields the other helpers do not take
    (``additional_directories``...).
    """
    return SessionBuilder(cx, cast(_R, request.model_copy(deep=True)))


def _absolute(cwd: str | os.PathLike[str]) -> str:
    return str(Path(cwd).absolute())


class SessionMethods:
    """Mixin for a connection class: ``cx.build_session(cwd)`` and friends as methods.

    A class that inherits both this and :class:`~acpio.jsonrpc.Connection` gets
    :meth:`build_session`, :meth:`build_session_cwd`, :meth:`build_session_load`,
    :meth:`build_session_resume`, :meth:`build_session_fork`, :meth:`build_session_from` and
    :meth:`attach_session`, each the module function of the same name applied to ``self``.
    """

    __slots__ = ()

    def build_session(self, cwd: str | os.PathLike[str]) -> SessionBuilder[NewSessionRequest]:
        """See :func:`acpio.session.build_session`."""
        return build_session(cast("Connection", self), cwd)

    def build_session_cwd(self) -> SessionBuilder[NewSessionRequest]:
        """See :func:`acpio.session.build_session_cwd`."""
        return build_session_cwd(cast("Connection", self))

    def build_session_load(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[LoadSessionRequest]:
        """See :func:`acpio.session.build_session_load`."""
        return build_session_load(cast("Connection", self), session_id, cwd)

    def build_session_resume(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[ResumeSessionRequest]:
        """See :func:`acpio.session.build_session_resume`."""
        return build_session_resume(cast("Connection", self), session_id, cwd)

    def build_session_fork(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[ForkSessionRequest]:
        """See :func:`acpio.session.build_session_fork`."""
        return build_session_fork(cast("Connection", self), session_id, cwd)

    def build_session_from(self, request: _R) -> SessionBuilder[_R]:
        """See :func:`acpio.session.build_session_from`."""
        return build_session_from(cast("Connection", self), request)

    def attach_session(
        self,
        response: SessionSetupResponse,
        mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
        *,
        session_id: str | None = None,
    ) -> ActiveSession:
        """See :func:`acpio.session.attach_session`."""
        return attach_session(cast("Connection", self), response, mcp_registrations, session_id=session_id)


class _PermissionRequests:
    """The agent's ``session/request_permission`` requests not answered yet, by session id.

    The first handler of a client's connection: it records each one, weakly (a responder its
    handler dropped is still answered by the engine), and passes it on. On ``session/cancel`` the
    connection answers those of the session ``cancelled``, as ACP requires.
    """

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[str, weakref.WeakSet[Responder[Any]]] = {}

    def accepts(self, message: Dispatch) -> bool:
        """Permission requests only."""
        return message.method == _PERMISSION_METHOD and type(message) is RequestDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled:
        """Record the request's responder under its session, then pass the request on."""
        assert isinstance(message, RequestDispatch)
        session_id = message.session_id
        if session_id is not None:
            self.pending.setdefault(session_id, weakref.WeakSet()).add(message.responder)
        return Unhandled(message)

    def take(self, session_id: str) -> list[Responder[Any]]:
        """Forget and return the recorded requests of ``session_id``."""
        found = self.pending.pop(session_id, None)
        return list(found) if found is not None else []


class SessionConnection(SessionMethods, Connection):
    """The connection handle (``cx``) of Client and Proxy builders.

    A :class:`~acpio.jsonrpc.Connection` with the session builders (:meth:`build_session`,
    :meth:`build_session_cwd`, :meth:`build_session_load`, :meth:`build_session_resume`,
    :meth:`build_session_fork`, :meth:`build_session_from`) and :meth:`attach_session`. Annotate
    ``cx`` with it to have the type checker see those methods.
    """

    def __init__(
        self,
        role: Role,
        transport: Transport,
        *,
        name: str,
        handlers: Iterable[Handler],
        startup: Iterable[Callable[[Connection], Awaitable[object]]] = (),
        close_callbacks: Iterable[Callable[..., Awaitable[object]]] = (),
    ) -> None:
        #: The role that is the agent here (``None``: no agent, or a role that does not say).
        self._agent = _agent_role(role)
        #: What the agent said at ``initialize``: what sessions may be started with, and when.
        self.peer_state = PeerState("agent")
        #: The agent's permission requests still unanswered, seen before any handler sees them.
        self._permission_requests = _PermissionRequests()
        if self._agent is not None and role.counterpart() == self._agent:
            handlers = (self._permission_requests, *handlers)
        super().__init__(
            role, transport, name=name, handlers=handlers, startup=startup, close_callbacks=close_callbacks
        )

    @property
    def agent_features(self) -> AgentFeatures | None:
        """What the agent advertised in its ``initialize`` answer; ``None`` before it was read.

        Recorded when a typed :class:`~acpio.schema.InitializeRequest` sent to the agent from this
        connection is answered (see :attr:`peer_state`). Until then a client's connection refuses
        ``session/*`` requests.
        """
        return self.peer_state.agent_features

    @property
    def protocol_version(self) -> int | None:
        """The protocol version the agent answered ``initialize`` with; ``None`` before that."""
        return self.peer_state.protocol_version

    @property
    def client_features(self) -> ClientFeatures | None:
        """What this client advertised in the typed ``initialize`` it sent; ``None`` before that.

        :meth:`ActiveSession.read_to_string` answers only the requests advertised here.
        """
        return self.peer_state.client_features

    @overload
    def send_request_to(self, peer: Any, message: str, params: JsonValue = None) -> SentRequest[Any]: ...
    @overload
    def send_request_to(self, peer: Any, message: TypedRequest[_Result]) -> SentRequest[_Result]: ...
    @overload
    def send_request_to(self, peer: Any, message: Any) -> SentRequest[Any]: ...

    def send_request_to(self, peer: Any, message: Any, params: JsonValue = UNSET) -> SentRequest[Any]:
        """Send a request; typed requests to the agent are checked against what ACP allows.

        * ``initialize``: the answer's protocol version must be one acpio speaks; otherwise the
          connection is closed and awaiting the answer raises
          :class:`~acpio.capabilities.UnsupportedProtocolVersion`. The agent's capabilities are
          then recorded (:attr:`agent_features`).
        * session-setup requests: a relative ``cwd`` or ``additionalDirectories`` entry raises
          ``ValueError``; ``session/resume`` and ``session/fork`` without ``mcp_servers`` are sent
          with ``mcpServers: []`` (the spec requires the field, the schema leaves it optional).
        * on a client's connection, a ``session/*`` request before the agent answered
          ``initialize`` raises ``RuntimeError``: ACP requires initialization first. (A proxy's
          successor is initialized by the conductor, so a proxy connection is not checked.)
        * once the agent's capabilities are known, a method it did not advertise
          (``session/load``...) or content it did not advertise (an image in a prompt, an HTTP MCP
          server...) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead of being sent.

        The checks are those of :meth:`acpio.peer.PeerState.check`.
        """
        method: Any = getattr(type(message), "METHOD", None)
        to_agent = isinstance(method, str) and params is UNSET and self._addresses_agent(peer)
        if to_agent:
            # A proxy's successor is initialized by the conductor; a closed connection raises below.
            client = self.counterpart == self._agent and not self.closed
            message = self.peer_state.check(method, message, initialize_first="session" if client else None)
        sent = super().send_request_to(peer, message, params)
        if to_agent and isinstance(message, InitializeRequest):
            self.peer_state.record_request(message)  # what this client advertised, for its own answers
            return self.peer_state.follow(sent, self.close)
        return sent

    def send_notification_to(self, peer: Any, message: Any, params: JsonValue = UNSET) -> None:
        """Send a notification; ``session/cancel`` from a client also answers its pending permissions.

        ACP: once the client sends ``session/cancel``, it MUST answer every pending
        ``session/request_permission`` of that session with the ``cancelled`` outcome. On a client's
        connection, the agent's permission requests that are not answered yet, whoever holds them
        (a builder handler, a session's reader, a trait-style ``request_permission``), are answered
        so right after the notification is sent; their responders then read as
        :attr:`~acpio.jsonrpc.Responder.cancelled`, which stops work run with
        ``responder.run_until_cancelled(...)``, and later answers to them are ignored.
        """
        super().send_notification_to(peer, message, params)
        if self._permission_requests.pending and self._addresses_agent(peer):
            session_id = _cancelled_session(message, params)
            if session_id is not None:
                self._answer_permission_requests_cancelled(session_id)

    def _answer_permission_requests_cancelled(self, session_id: str) -> int:
        """Answer the agent's unanswered permission requests for ``session_id`` ``cancelled``.

        Returns how many were answered. Their responders are marked cancelled, so work waiting on
        them (``run_until_cancelled``, a trait-style ``request_permission`` task) stops.
        """
        answered = 0
        for responder in self._permission_requests.take(session_id):
            if responder.done:
                continue
            responder.respond(RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
            responder.mark_cancelled()  # the answer is no longer wanted: stop whoever is deciding
            answered += 1
        if answered:
            _log.debug("Answered %d permission request(s) of %r: cancelled", answered, session_id)
        return answered

    def _addresses_agent(self, peer: Any) -> bool:
        agent = self._agent
        if agent is None:
            return False
        if peer is None:
            return self.counterpart == agent
        return peer == agent or peer is type(agent)
