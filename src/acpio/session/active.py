"""The active session: send prompts, read the turn, cancel, hand off to proxy mode, close."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias

from acpio.client.files import ConfinedFiles
from acpio.client.permissions import PermissionChoice
from acpio.errors import ConnectionClosed
from acpio.jsonrpc import Connection, DynamicHandlerRegistration, RequestDispatch
from acpio.schema import (
    CancelNotification,
    ForkSessionRequest,
    ForkSessionResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionConfigOption,
    SessionModeState,
    StopReason,
)
from acpio.session.answers import TurnAnswers
from acpio.session.messages import (
    PromptContent,
    QueueItem,
    SessionMessage,
    TurnEnded,
    content_blocks,
)
from acpio.session.peers import agent_peer, client_peer
from acpio.session.prompting import send_prompt_request
from acpio.session.routing import Routing, protocol_version, refuse_queued
from acpio.session.turn_reading import TurnReader
from acpio.session.turn_view import TurnView

if TYPE_CHECKING:
    pass

_log = logging.getLogger("acpio.session")

#: The requests that set a session up, one per :class:`SessionBuilder` kind.
SessionSetupRequest: TypeAlias = (
    NewSessionRequest | LoadSessionRequest | ResumeSessionRequest | ForkSessionRequest
)
#: The agent's answers to them: what :meth:`ActiveSession.response` gives.
SessionSetupResponse: TypeAlias = (
    NewSessionResponse | LoadSessionResponse | ResumeSessionResponse | ForkSessionResponse
)


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
        _routing: Routing | None = None,
        _scoped: bool = False,
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
            _routing = Routing(cx, session_id)
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
        #: Made by run_until(): it ends with the callback and cannot be handed off.
        self._scoped = _scoped
        #: The ACP version of the session (that of its connection when it was set up).
        self.protocol_version = protocol_version(cx)
        self._reader = TurnReader(self.protocol_version)
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
        The end of the turn is read as a :class:`TurnEnded` after the turn's updates: on ACP v1 the
        agent's answer, on v2 the idle ``state_update`` that follows the answer (which only
        accepts the prompt). An error answer is raised by the read that reaches it. Raises
        :class:`~acpio.ConnectionClosed` if the connection is closed.
        """
        self._check_active("send_prompt")
        blocks = content_blocks(prompt)
        self._reader.start()
        send_prompt_request(self._cx, self.session_id, blocks, meta, self.protocol_version, self._deliver)

    def _deliver(self, item: QueueItem) -> None:
        if self._router.mode == "queue":  # closed or handed off: nobody reads the turn here
            self._inbox.put(item)

    def cancel(self) -> None:
        """Send ``session/cancel``: the agent stops the turn and ends it with ``cancelled``.

        As ACP requires of the client, the agent's ``session/request_permission`` requests for this
        session that are still unanswered (read or not) are answered with the ``cancelled``
        outcome at once (on a client's connection; see :class:`SessionConnection`); those not read
        yet are dropped from the session's queue. Read the turn on: the agent may still send
        updates before its stop reason.
        """
        self._cx.send_notification_to(agent_peer(self._cx), CancelNotification(session_id=self.session_id))
        self._reader.cancel()
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
        read: SessionMessage | TurnEnded | None = self._reader.take_end()
        items = self._inbox.items
        while read is None:  # an acceptance reads as None: the v2 turn may have ended with it
            item = items.popleft() if items else await self._next_item()
            read = self._reader.read(item) or self._reader.take_end()
        if isinstance(read, TurnEnded):
            self.last_response = read.response
            self.stop_reason = read.stop_reason
        return read

    @property
    def view(self) -> TurnView:
        """The session as the messages read left it, the same for ACP v1 and v2 (:class:`TurnView`).

        Messages by id, tool calls and terminals merged from their updates, plans, the state; each
        message read changes it (:attr:`SessionMessage.event` says how). On v1 it is kept from the
        first time it is asked for: reading a turn without it costs what it always did.
        """
        return self._reader.kept_view()

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
        view = self.view
        answers = TurnAnswers(self._cx, permissions, files, view)
        already = view.text  # what read_update() gave before this call is not read again
        while not isinstance(message := await self.read_update(), TurnEnded):  # as `async for`, a layer less
            if message.is_request:
                await answers.answer(message)
        text = view.text
        return text[len(already) :] if text.startswith(already) else text

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
        client = client_peer(self._cx)
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
        refuse_queued(self._inbox, f"Session {self.session_id!r} was closed by the client")

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

    async def _next_item(self) -> QueueItem:
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


def _answered_request(item: QueueItem) -> bool:
    """Whether ``item`` is a request from the agent that is already answered."""
    if not isinstance(item, SessionMessage):
        return False
    dispatch = item.dispatch
    return isinstance(dispatch, RequestDispatch) and dispatch.responder.done
