"""The active session: send prompts, read the turn, cancel, hand off to proxy mode, close."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any, TypeAlias

from acpio.client.files import ConfinedFiles
from acpio.client.permissions import PermissionChoice
from acpio.jsonrpc import Connection, DynamicHandlerRegistration
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
from acpio.session.delivery import SessionDelivery
from acpio.session.messages import (
    PromptContent,
    SessionMessage,
    TurnEnded,
    content_blocks,
)
from acpio.session.peers import agent_peer
from acpio.session.prompting import send_prompt_request
from acpio.session.routing import Routing, protocol_version
from acpio.session.turn_reading import TurnReader
from acpio.session.turn_view import TurnView

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
        delivery = self._delivery = SessionDelivery(
            cx, Routing(cx, session_id) if _routing is None else _routing, mcp_registrations, scoped=_scoped
        )
        #: The notifications ``session/load`` replayed before its answer (the conversation so far),
        #: in the order the agent sent them; empty for the other setup methods. Read it as the
        #: session's past: :meth:`read_update` gives only what came after the answer.
        self.history: list[SessionMessage] = delivery.take_history()
        self._items = delivery.items  # read_update() pops from it directly: no call per message
        #: The ACP version of the session (that of its connection when it was set up).
        self.protocol_version = protocol_version(cx)
        self._reader = TurnReader(self.protocol_version)
        #: Why the last turn read to its end stopped; ``None`` before that.
        self.stop_reason: StopReason | str | None = None
        #: The agent's answer to the last ``session/prompt`` read to its end; ``None`` before that.
        self.last_response: PromptResponse | None = None

    def __repr__(self) -> str:
        return f"<ActiveSession {self.session_id!r} {self._delivery.mode}>"

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
        return self._delivery.mode == "queue"

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
        self._delivery.check_active("send_prompt")
        blocks = content_blocks(prompt)
        self._reader.start()
        send_prompt_request(
            self._cx, self.session_id, blocks, meta, self.protocol_version, self._delivery.deliver
        )

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
        self._delivery.drop_answered_requests()

    async def read_update(self) -> SessionMessage | TurnEnded:
        """The next message for this session, or the :class:`TurnEnded` of a prompt.

        Raises the agent's error if it answered ``session/prompt`` with one, and
        :class:`~acpio.ConnectionClosed` once the connection ended and everything queued before
        was read. Waits without limit: bound it with ``asyncio.timeout`` if needed.
        """
        self._delivery.check_active("read_update")
        read: SessionMessage | TurnEnded | None = self._reader.take_end()
        items = self._items
        while read is None:  # an acceptance reads as None: the v2 turn may have ended with it
            item = items.popleft() if items else await self._delivery.next_item()
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
        self._delivery.hand_off()

    def close(self) -> None:
        """Detach the session: its messages are no longer read here, its MCP servers stop.

        Queued requests nobody read are answered with an error. The session itself lives on at the
        agent. Called when the ``async with`` block ends; calling it again does nothing.
        """
        self._delivery.close(f"Session {self.session_id!r} was closed by the client")

    async def __aenter__(self) -> ActiveSession:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
