"""Sessions: create one with ``session/new``, prompt it, read its updates, or hand it to a proxy.

Start from a connection to an agent (a client, or a proxy talking to its successor)::

    from acpio.session import build_session

    async with build_session(cx, "/path/to/project").start_session() as session:
        session.send_prompt("Hello")
        async for message in session:           # this turn's messages, until its stop reason
            print(message.text or message.method)
        print(session.stop_reason)              # end_turn

        session.send_prompt("And now?")
        print(await session.read_to_string())   # the agent's text for the whole turn

**Entry point.** The session helpers are free functions taking the connection
(:func:`build_session`, :func:`build_session_cwd`, :func:`build_session_from`,
:func:`attach_session`), because the engine's :class:`~acpio.jsonrpc.Connection` knows nothing of
ACP. :class:`SessionMethods` is the same four as methods: a connection class that inherits it
gives ``cx.build_session(cwd)``.

**Blocking and non-blocking.** :meth:`SessionBuilder.start_session`,
:meth:`SessionBuilder.run_until` and :meth:`SessionBuilder.start_session_proxy` wait for the
agent's answer, so they work in spawned tasks and in ``connect_with``'s main function; inside a
handler they raise :class:`~acpio.DeadlockError`. Inside a handler, use
:meth:`SessionBuilder.on_session_start` or :meth:`SessionBuilder.on_proxy_session_start`: they
return at once and run the callback in a task once the session exists.

**Ordering.** The handler that routes the session's messages is installed by the dispatch loop
itself, right after it reads the ``session/new`` response and before the next message, so an update
that follows the response (even in the same batch) reaches the session. Updates that arrive
*before* the response is read are parked by the client role's default handler and replayed to the
session, in order, when its handler is installed. A prompt's stop reason is queued by the dispatch
loop when the ``session/prompt`` response is read, so it always comes after the turn's updates.

**Proxy hand-off.** :meth:`ActiveSession.proxy_remaining_messages` switches a session from being
read here to being forwarded to the client, losing and reordering nothing: see its docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

from acpio.capabilities import (
    AgentFeatures,
    UnsupportedProtocolVersion,
    check_absolute_paths,
    check_agent_version,
    fill_required_fields,
)
from acpio.errors import (
    AcpError,
    ConnectionClosed,
    DeadlockError,
    InternalError,
    InvalidParams,
    MethodNotFound,
)
from acpio.jsonrpc.builder import Role
from acpio.jsonrpc.connection import _UNSET, Connection
from acpio.jsonrpc.handlers import (
    Dispatch,
    DynamicHandlerRegistration,
    NotificationDispatch,
    RequestDispatch,
    Unhandled,
)
from acpio.jsonrpc.messages import UntypedMessage
from acpio.roles import Agent, Client
from acpio.schema import (
    AgentMessageChunk,
    CancelledPermissionOutcome,
    CancelNotification,
    ContentBlock,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionConfigOption,
    SessionModeState,
    SessionNotification,
    SessionUpdate,
    StopReason,
    TextContent,
)

if TYPE_CHECKING:
    from acpio.jsonrpc.connection import _Batch
    from acpio.jsonrpc.messages import JsonValue, Request
    from acpio.jsonrpc.responses import Responder, SentRequest

__all__ = [
    "ActiveSession",
    "McpServerList",
    "McpServerRegistry",
    "PromptContent",
    "SessionBuilder",
    "SessionConnection",
    "SessionMessage",
    "SessionMethods",
    "SessionStart",
    "TurnEnded",
    "attach_session",
    "build_session",
    "build_session_cwd",
    "build_session_from",
]

_log = logging.getLogger("acpio.session")

T = TypeVar("T")

#: What :meth:`ActiveSession.send_prompt` takes: text, one content block, or several.
PromptContent: TypeAlias = str | ContentBlock | Iterable[ContentBlock]

_UPDATE_METHOD = SessionNotification.METHOD
_PERMISSION_METHOD = RequestPermissionRequest.METHOD
_CANCEL_METHOD = CancelNotification.METHOD


# --- peers ----------------------------------------------------------------------------------------
#
# On a client connection the agent is the counterpart; on a proxy connection it is the successor,
# a peer whose messages travel in ``proxy/successor`` envelopes (the Proxy role wraps and unwraps
# them). On a connection without the ACP roles (``UntypedRole``) the counterpart plays both parts.

_AGENT: Final = Agent()
_CLIENT: Final = Client()


def _peer(cx: Connection, peer: Role) -> Role | None:
    """``peer`` if it is one of ``cx``'s peers but not its counterpart; else ``None`` (the counterpart)."""
    if peer == cx.counterpart or peer not in cx.role.peers():
        return None
    return peer


def _agent_peer(cx: Connection) -> Role | None:
    """How to address the agent on ``cx``; a clear error on a connection that has none (an Agent's)."""
    peers = cx.role.peers()
    if _AGENT not in peers and _CLIENT in peers:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(cx.role).__name__} connection: it has no agent to "
            "open sessions with. Sessions are started from a Client or a Proxy connection."
        )
    return _peer(cx, _AGENT)


def _client_peer(cx: Connection) -> Role | None:
    """How to address the client on ``cx``; a clear error on a connection that has none (a Client's)."""
    peers = cx.role.peers()
    if _CLIENT not in peers and _AGENT in peers:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(cx.role).__name__} connection: it has no client to "
            "forward session messages to. Proxy mode needs a Proxy connection."
        )
    return _peer(cx, _CLIENT)


def _agent_source(cx: Connection) -> Role | None:
    """The peer the agent's messages come from on ``cx``; ``None``: take every message as the agent's."""
    return _AGENT if _AGENT in cx.role.peers() else None


# --- MCP servers ----------------------------------------------------------------------------------


@runtime_checkable
class McpServerRegistry(Protocol):
    """MCP servers to offer the agent in one session: what :meth:`SessionBuilder.with_mcp_server` takes.

    ``attach`` declares the servers in ``request.mcp_servers`` (appending to the list) and starts
    serving them on ``cx`` (typically with :meth:`~acpio.jsonrpc.Connection.add_dynamic_handler`),
    returning the registrations that serve them. They are active while the session starts, removed
    when the session ends or ``session/new`` fails, and kept for the connection's lifetime when the
    session is handed to proxy mode.
    """

    def attach(self, request: NewSessionRequest, cx: Connection) -> Iterable[DynamicHandlerRegistration]:
        """Declare the servers in ``request`` and start serving them on ``cx``."""
        ...


class McpServerList:
    """A registry of plain MCP server declarations (stdio, http, sse) that acpio does not serve itself.

    ``McpServerList()`` is the empty registry; ``McpServerList([McpServerStdio(...)])`` appends
    those declarations to ``session/new``'s ``mcpServers`` and registers no handler.
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

    :attr:`dispatch` is the message itself. A request (``session/request_permission``,
    ``fs/read_text_file``...) that no builder handler claimed must be answered through
    ``message.dispatch.responder``. :attr:`notification`, :attr:`update` and :attr:`text` parse a
    ``session/update`` on first use.
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

    In ``queue`` mode it puts them in the session's inbox; in ``forward`` mode (after the hand-off
    to proxy mode) it forwards them to the client.
    """

    __slots__ = ("client", "inbox", "mode", "session_id", "source")

    def __init__(
        self, cx: Connection, session_id: str, inbox: _Inbox | None, mode: _Mode, client: Any = None
    ) -> None:
        self.session_id = session_id
        self.inbox = inbox
        self.mode: _Mode = mode
        self.client = client
        self.source = _agent_source(cx)

    def __repr__(self) -> str:
        return f"_SessionRouter({self.session_id!r}, mode={self.mode!r})"

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
        self.inbox.put(SessionMessage(message))
        return None


# --- the active session ---------------------------------------------------------------------------


class ActiveSession:
    """A session created with ``session/new``: send prompts, read what the agent sends for it.

    Made by :meth:`SessionBuilder.start_session` (or :func:`attach_session`). It is an async
    context manager: leaving the ``async with`` block detaches it (see :meth:`close`). Read with
    :meth:`read_update`, with ``async for message in session`` (the current turn's messages) or
    with :meth:`read_to_string`.
    """

    def __init__(
        self,
        cx: Connection,
        response: NewSessionResponse,
        mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
    ) -> None:
        self._cx = cx
        self._response = response
        self._inbox = _Inbox()
        self._router = _SessionRouter(cx, response.session_id, self._inbox, "queue")
        self._mcp = list(mcp_registrations)
        self._registration = cx.add_dynamic_handler(self._router)
        self._watcher: asyncio.Task[None] | None = None
        self._connection_ended = False
        self._scoped = False
        #: Why the last turn read to its end stopped; ``None`` before that.
        self.stop_reason: StopReason | str | None = None
        #: The agent's answer to the last ``session/prompt`` read to its end; ``None`` before that.
        self.last_response: PromptResponse | None = None

    def __repr__(self) -> str:
        return f"<ActiveSession {self.session_id!r} {self._router.mode}>"

    # --- what session/new said ------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session's id, as the agent chose it."""
        return self._response.session_id

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
        """The ``_meta`` of the ``session/new`` response."""
        return self._response.meta

    @property
    def connection(self) -> Connection:
        """The connection to the agent."""
        return self._cx

    @property
    def active(self) -> bool:
        """Whether messages for this session are still read here (not closed, not handed off)."""
        return self._router.mode == "queue"

    def response(self) -> NewSessionResponse:
        """A copy of the agent's ``session/new`` response, for example to answer a client with."""
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

    async def read_to_string(self) -> str:
        """Read the current turn to its end; return the text of the agent's message chunks.

        Other updates are skipped. A request the agent sends during the turn is answered
        ``-32601``: to handle ``session/request_permission`` and the like, register a handler for
        it on the builder, or read the turn with :meth:`read_update`.
        """
        parts: list[str] = []
        async for message in self:
            if message.is_request:
                _decline(message)
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
        reading it afterwards raises ``RuntimeError``.
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
        inbox = self._inbox
        inbox.closed = True
        while inbox.items:
            item = inbox.items.popleft()
            if isinstance(item, SessionMessage) and item.is_request:
                responder = cast(RequestDispatch, item.dispatch).responder
                responder.respond_with_error(
                    InternalError(message=f"Session {self.session_id!r} was closed by the client")
                )
        inbox.wake()

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


def _decline(message: SessionMessage) -> None:
    dispatch = message.dispatch
    assert isinstance(dispatch, RequestDispatch)
    _log.warning(
        "read_to_string() answered %r with -32601: register a handler for it on the builder, "
        "or read the turn with read_update()",
        dispatch.method,
    )
    dispatch.responder.respond_with_error(MethodNotFound(dispatch.method))


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
    response: NewSessionResponse,
    mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
) -> ActiveSession:
    """Start reading the session that ``response`` (a ``session/new`` answer) describes.

    Low level: :meth:`SessionBuilder.start_session` calls it. Call it inside the dispatch loop
    (a response callback) for the session to see the very next message; from elsewhere its
    handler starts at the loop's next turn, and the client role's queue keeps what came between.
    ``mcp_registrations`` are the session's MCP handlers, removed with it.
    """
    return ActiveSession(cx, response, mcp_registrations)


# --- the builder ----------------------------------------------------------------------------------


class SessionStart:
    """What :meth:`SessionBuilder.start_session` returns: await it, or use it with ``async with``.

    ``session = await builder.start_session()`` gives the :class:`ActiveSession`;
    ``async with builder.start_session() as session:`` also closes it at the end of the block.
    """

    __slots__ = ("_builder", "_session")

    def __init__(self, builder: SessionBuilder) -> None:
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


class SessionBuilder:
    """A ``session/new`` request being prepared; start it with one of the ``start``/``on`` methods.

    Made by :func:`build_session`, :func:`build_session_cwd` or :func:`build_session_from`.
    :attr:`request` may be changed before starting. A builder starts one session.
    """

    def __init__(self, cx: Connection, request: NewSessionRequest) -> None:
        self._cx = cx
        #: The ``session/new`` params that will be sent.
        self.request = request
        self._mcp: list[DynamicHandlerRegistration] = []
        self._used = False

    def __repr__(self) -> str:
        return f"<SessionBuilder cwd={self.request.cwd!r} mcp_servers={len(self.request.mcp_servers)}>"

    def with_mcp_server(self, registry: McpServerRegistry) -> SessionBuilder:
        """Offer the agent the MCP servers of ``registry`` in this session; returns the builder.

        The registry declares its servers in the request and starts serving them now, so they are
        ready while the agent sets the session up. They stop when the session ends or is refused.
        """
        self._check_unused()
        attach = getattr(registry, "attach", None)
        if not callable(attach):
            raise TypeError(
                f"with_mcp_server() takes an MCP server registry (with attach(request, cx)); got "
                f"{registry!r}. Wrap plain server declarations in McpServerList([...])."
            )
        self._mcp.extend(registry.attach(self.request, self._cx))
        return self

    # --- blocking -------------------------------------------------------------------------------

    def start_session(self) -> SessionStart:
        """Send ``session/new`` and give the :class:`ActiveSession` once the agent answered.

        Await the result, or use it with ``async with`` (the session is closed at the end). Raises
        the agent's error (a :class:`~acpio.RequestError`) if it refuses the session,
        :class:`~acpio.ConnectionClosed` if the connection ends first, and
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
        """Start the session, answer the client's ``session/new`` through ``responder``, then forward.

        For a proxy that handles the client's ``session/new`` (to add MCP servers, say) and then
        lets the session's traffic through: see :meth:`ActiveSession.proxy_remaining_messages`.
        Returns the session id. If the agent refuses, the client gets the error and so does the
        caller.
        """
        try:
            session = await self._start()
        except AcpError as exc:
            responder.respond_with_error(exc)
            raise
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

        async def on_result(result: NewSessionResponse | AcpError) -> None:
            # Runs in the dispatch loop, before the message after the response.
            if isinstance(result, AcpError):
                self._remove_mcp()  # the awaiting side raises the error itself
                return
            if abandoned:
                self._remove_mcp()
                _log.info("Session %r was created, but its caller stopped waiting for it", result.session_id)
                return
            attached.set_result(attach_session(cx, result, self._mcp))

        sent = self._send(on_result)
        try:
            try:
                await sent
            except AcpError as exc:
                if not isinstance(exc, ConnectionClosed | DeadlockError):
                    exc.add_note(
                        f"(the agent refused session/new for cwd {self.request.cwd!r}; "
                        "-32000 means: authenticate first)"
                    )
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
        """Send ``session/new`` and return at once; run ``callback(session)`` in a task once it exists.

        Safe inside handlers. The session's handler is installed by the dispatch loop before the
        message after the response, and the session is closed when the callback returns (unless
        it handed the session to proxy mode). If the agent refuses the session, or the callback
        raises, the connection fails with that error, as a spawned task's failure does; to handle a
        refusal yourself, run :meth:`run_until` in ``cx.spawn(...)`` and catch the error there.
        """
        self._check_unused()
        self._used = True
        cx = self._cx

        async def on_result(result: NewSessionResponse | AcpError) -> None:
            if isinstance(result, AcpError):
                self._remove_mcp()
                result.add_note("(the agent refused session/new started by on_session_start())")
                raise result
            session = attach_session(cx, result, self._mcp)

            async def run() -> None:
                async with session:
                    await callback(session)

            cx.spawn(run)

        self._send(on_result)

    def on_proxy_session_start(
        self,
        responder: Responder[Any],
        callback: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        """For a proxy: forward ``session/new``, answer the client, route the session to it.

        Returns at once (safe inside handlers). When the agent answers, the dispatch loop answers
        the client through ``responder`` and installs the handler that forwards the session's
        messages to the client, before reading the next message; then ``callback(session_id)``
        runs in a task. A refusal is passed to the client (the callback does not run). If the
        client cancels its request, the cancellation is passed on to the agent.
        """
        self._check_unused()
        self._used = True
        cx = self._cx

        async def on_result(result: NewSessionResponse | AcpError) -> None:
            if isinstance(result, AcpError):
                self._remove_mcp()
                responder.respond_with_error(result)
                return
            for registration in self._mcp:
                registration.run_indefinitely()
            responder.respond(result)
            router = _SessionRouter(cx, result.session_id, None, "forward", _client_peer(cx))
            cx.add_dynamic_handler(router).run_indefinitely()
            if callback is not None:
                cx.spawn(callback, result.session_id)

        self._send(on_result).forward_cancellation_from(responder)

    # --- internals ------------------------------------------------------------------------------

    def _send(
        self, on_result: Callable[[NewSessionResponse | AcpError], Awaitable[None]]
    ) -> SentRequest[NewSessionResponse]:
        try:
            sent: SentRequest[NewSessionResponse] = self._cx.send_request_to(
                _agent_peer(self._cx), self.request
            )
        except BaseException:
            self._remove_mcp()
            raise
        sent.on_receiving_result(on_result)
        return sent

    def _remove_mcp(self) -> None:
        for registration in self._mcp:
            registration.remove()

    def _check_unused(self) -> None:
        if self._used:
            raise RuntimeError(
                "This SessionBuilder already started its session; build another one with "
                "build_session(cx, cwd) for a new session."
            )


def _cancelled_session(message: Any, params: Any) -> str | None:
    """The session a ``session/cancel`` being sent names (typed, untyped or by name); else ``None``."""
    if params is _UNSET:
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


def build_session(cx: Connection, cwd: str | os.PathLike[str]) -> SessionBuilder:
    """A :class:`SessionBuilder` for a new session working in ``cwd``, with no MCP servers yet.

    ACP requires an absolute ``cwd``: a relative one is made absolute against the current
    directory (without resolving symbolic links).
    """
    return SessionBuilder(cx, NewSessionRequest(cwd=str(Path(cwd).absolute()), mcp_servers=[]))


def build_session_cwd(cx: Connection) -> SessionBuilder:
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


def build_session_from(cx: Connection, request: NewSessionRequest) -> SessionBuilder:
    """A :class:`SessionBuilder` starting from an existing ``session/new`` request (copied).

    For a proxy that intercepted a client's ``session/new`` and wants to change it (add MCP
    servers, say) before sending it on.
    """
    return SessionBuilder(cx, request.model_copy(deep=True))


class SessionMethods:
    """Mixin for a connection class: ``cx.build_session(cwd)`` and friends as methods.

    A class that inherits both this and :class:`~acpio.jsonrpc.Connection` gets
    :meth:`build_session`, :meth:`build_session_cwd`, :meth:`build_session_from` and
    :meth:`attach_session`, each the module function of the same name applied to ``self``.
    """

    __slots__ = ()

    def build_session(self, cwd: str | os.PathLike[str]) -> SessionBuilder:
        """See :func:`acpio.session.build_session`."""
        return build_session(cast("Connection", self), cwd)

    def build_session_cwd(self) -> SessionBuilder:
        """See :func:`acpio.session.build_session_cwd`."""
        return build_session_cwd(cast("Connection", self))

    def build_session_from(self, request: NewSessionRequest) -> SessionBuilder:
        """See :func:`acpio.session.build_session_from`."""
        return build_session_from(cast("Connection", self), request)

    def attach_session(
        self,
        response: NewSessionResponse,
        mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
    ) -> ActiveSession:
        """See :func:`acpio.session.attach_session`."""
        return attach_session(cast("Connection", self), response, mcp_registrations)


class SessionConnection(SessionMethods, Connection):
    """The connection handle (``cx``) of Client and Proxy builders.

    A :class:`~acpio.jsonrpc.Connection` with :meth:`build_session`, :meth:`build_session_cwd`,
    :meth:`build_session_from` and :meth:`attach_session`. Annotate ``cx`` with it to have the
    type checker see those methods.
    """

    _agent_features: AgentFeatures | None = None
    _protocol_version: int | None = None
    #: The last typed ``initialize`` sent to the agent, until its answer is read.
    _initializing: SentRequest[InitializeResponse] | None = None
    #: The agent's ``session/request_permission`` requests by session id (weakly: a responder its
    #: handler dropped is still answered by the engine); answered ``cancelled`` on ``session/cancel``.
    _permission_requests: dict[str, weakref.WeakSet[Responder[Any]]] | None = None

    @property
    def agent_features(self) -> AgentFeatures | None:
        """What the agent advertised in its ``initialize`` answer; ``None`` before it was read.

        Recorded when a typed :class:`~acpio.schema.InitializeRequest` sent to the agent from this
        connection is answered. Until then a client's connection refuses ``session/*`` requests.
        """
        return self._agent_features

    @property
    def protocol_version(self) -> int | None:
        """The protocol version the agent answered ``initialize`` with; ``None`` before that."""
        return self._protocol_version

    def send_request_to(self, peer: Any, message: Any, params: JsonValue = _UNSET) -> SentRequest[Any]:
        """Send a request; typed requests to the agent are checked against what ACP allows.

        * ``initialize``: the answer's protocol version must be one acpio speaks; otherwise the
          connection is closed and awaiting the answer raises
          :class:`~acpio.capabilities.UnsupportedProtocolVersion`. The agent's capabilities are
          then recorded (:attr:`agent_features`).
        * session-setup requests: a relative ``cwd`` or ``additionalDirectories`` entry raises
          ``ValueError``; ``session/resume`` without ``mcp_servers`` is sent with ``mcpServers: []``
          (the spec requires the field, the schema leaves it optional).
        * on a client's connection, a ``session/*`` request before the agent answered
          ``initialize`` raises ``RuntimeError``: ACP requires initialization first. (A proxy's
          successor is initialized by the conductor, so a proxy connection is not checked.)
        * once the agent's capabilities are known, a method it did not advertise
          (``session/load``...) or content it did not advertise (an image in a prompt, an HTTP MCP
          server...) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead of being sent.
        """
        method: Any = getattr(type(message), "METHOD", None)
        to_agent = isinstance(method, str) and params is _UNSET and self._addresses_agent(peer)
        if to_agent:
            features = self._agent_features
            if features is None and method.startswith("session/"):
                features = self._require_initialized(method)
            message = fill_required_fields(method, message)
            check_absolute_paths(method, message)
            if features is not None:
                features.require_params(method, message)
        sent = super().send_request_to(peer, message, params)
        if to_agent and isinstance(message, InitializeRequest):
            initializing = self._initializing = sent.map(self._initialized)
            return initializing
        return sent

    def _require_initialized(self, method: str) -> AgentFeatures | None:
        """The agent's features for ``method``; ``RuntimeError`` on a client's connection without them.

        The answer to ``initialize`` is read by whoever awaits it, which may run after a handler
        reacting to the next message: an answer that arrived but was not read yet is read here.
        """
        initializing = self._initializing
        if initializing is not None and initializing.done:
            self._initializing = None
            with contextlib.suppress(Exception):  # whoever awaits a failed initialize gets its error
                initializing._value(initializing._reply.outcome)  # records the features, once
        features = self._agent_features
        if features is not None or self._counterpart != _AGENT or self._closed:
            return features  # a proxy's successor is initialized by the conductor; a closed one raises
        raise RuntimeError(
            f"{method} was sent before initialize was answered: ACP requires the client to "
            "initialize the connection (and read the agent's capabilities) first. Send "
            "await cx.send_request(InitializeRequest(protocol_version=1, ...)) and await its "
            "answer before starting sessions."
        )

    def send_notification_to(self, peer: Any, message: Any, params: JsonValue = _UNSET) -> None:
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
        if self._permission_requests and self._addresses_agent(peer):
            session_id = _cancelled_session(message, params)
            if session_id is not None:
                self._answer_permission_requests_cancelled(session_id)

    def _request_dispatch(self, entry: Request, batch: _Batch | None, slot: int) -> RequestDispatch:
        """The engine's dispatch of an incoming request; a client keeps its permission requests."""
        dispatch = super()._request_dispatch(entry, batch, slot)
        if dispatch.method == _PERMISSION_METHOD and self._counterpart == _AGENT:
            session_id = dispatch.session_id
            if session_id is not None:
                pending = self._permission_requests
                if pending is None:
                    pending = self._permission_requests = {}
                pending.setdefault(session_id, weakref.WeakSet()).add(dispatch.responder)
        return dispatch

    def _answer_permission_requests_cancelled(self, session_id: str) -> int:
        """Answer the agent's unanswered permission requests for ``session_id`` ``cancelled``.

        Returns how many were answered. Their responders are marked cancelled, so work waiting on
        them (``run_until_cancelled``, a trait-style ``request_permission`` task) stops.
        """
        pending = self._permission_requests.pop(session_id, None) if self._permission_requests else None
        answered = 0
        for responder in list(pending or ()):
            if responder.done:
                continue
            responder.respond(RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
            responder._cancel.set()  # the answer is no longer wanted: stop whoever is deciding
            answered += 1
        if answered:
            _log.debug("Answered %d permission request(s) of %r: cancelled", answered, session_id)
        return answered

    def _addresses_agent(self, peer: Any) -> bool:
        if peer is None:
            return self._counterpart == _AGENT
        return peer is Agent or peer == _AGENT

    def _initialized(self, response: InitializeResponse) -> InitializeResponse:
        try:
            check_agent_version(response.protocol_version)
        except UnsupportedProtocolVersion:
            self.close()  # the spec: close the connection, and tell the user (the raise does)
            raise
        self._record_initialize(response)
        return response

    def _record_initialize(self, response: InitializeResponse) -> None:
        """Record the agent's ``initialize`` answer (version, capabilities): sessions may start.

        Also called by :class:`acpio.compat.ClientSideConnection`, which sends ``initialize`` itself.
        """
        self._protocol_version = response.protocol_version
        self._agent_features = AgentFeatures.from_response(response)
