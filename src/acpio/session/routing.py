"""How a session's messages reach it: the inbox, the dynamic handler claiming its ``sessionId``."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Literal, cast

from acpio.acp_connection import AcpConnection
from acpio.errors import InternalError
from acpio.jsonrpc import (
    UNSET,
    Connection,
    Dispatch,
    NotificationDispatch,
    PeerLike,
    RequestDispatch,
    Unhandled,
)
from acpio.session.messages import QueueItem, SessionMessage, session_message
from acpio.session.peers import agent_role


class Inbox:
    """The session's queue: filled by the dispatch loop, read by :class:`ActiveSession`."""

    __slots__ = ("closed", "items", "waiter")

    def __init__(self) -> None:
        self.items: deque[QueueItem] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False

    def put(self, item: QueueItem) -> None:
        """Queue ``item`` and wake the reader."""
        self.items.append(item)
        self.wake()

    def wake(self) -> None:
        """Wake the reader waiting for an item, if any."""
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


RouterMode = Literal["queue", "forward", "detached"]


class SessionRouter:
    """The dynamic handler of one session: claims the agent's messages carrying its ``sessionId``.

    In ``queue`` mode it puts them in the session's inbox (notifications go to ``history`` instead
    while that is a list: a ``session/load`` waiting for its answer); in ``forward`` mode (after the
    hand-off to proxy mode) it forwards them to the client.
    """

    __slots__ = ("client", "history", "inbox", "mode", "session_id", "source")

    def __init__(
        self,
        cx: Connection,
        session_id: str,
        inbox: Inbox | None,
        mode: RouterMode,
        client: PeerLike | None = None,
    ) -> None:
        self.session_id = session_id
        self.inbox = inbox
        self.mode: RouterMode = mode
        self.client = client
        #: The peer the agent's messages come from; ``None``: take every message as the agent's.
        self.source = agent_role(cx.role)
        #: While a list: where the notifications go (the replay of a ``session/load`` not answered yet).
        self.history: list[SessionMessage] | None = None

    def __repr__(self) -> str:
        return f"SessionRouter({self.session_id!r}, mode={self.mode!r})"

    @property
    def session_scope(self) -> str:
        """Only this session's messages: the handler chain offers it no other (its session index)."""
        return self.session_id

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications from the agent carrying this session's id."""
        kind = type(message)
        if kind is not NotificationDispatch and kind is not RequestDispatch:
            return False
        params = message.params  # message.session_id, inline: this runs for every message
        if type(params) is not dict or params.get("sessionId") != self.session_id:
            return False
        source = self.source
        if source is None:
            return True
        peer = message.peer  # None: a dispatch made by hand
        return peer is None or peer == source

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Queue or forward the message; decline anything else.

        The chain calls :meth:`accepts` before this (and so does a registration replaying parked
        messages): it is not checked twice.
        """
        mode = self.mode
        if mode == "detached":
            return Unhandled(message)
        if mode == "forward":
            cx.send_proxied_message_to(self.client, message)
            return None
        assert self.inbox is not None
        assert isinstance(message, RequestDispatch | NotificationDispatch)
        version = protocol_version(cx)
        history = self.history
        if history is not None and type(message) is NotificationDispatch:
            history.append(SessionMessage(message, version))
        else:
            self.inbox.put(session_message(message, version))
        return None


def protocol_version(cx: Connection) -> int:
    """The ACP version ``cx`` speaks with the agent: what it answered ``initialize`` with; 1 before that."""
    version = cx.protocol_version if isinstance(cx, AcpConnection) else None
    return version if version is not None else 1


class Routing:
    """A session's handler (and inbox) installed before its setup request is sent.

    For ``session/load`` and ``session/resume``, which name the session: the handler is in place
    before the agent can send anything for it, so nothing is parked. ``client``: forward the
    session's messages to it (a proxy's hand-off from the start) instead of queueing them.
    """

    __slots__ = ("inbox", "registration", "router")

    def __init__(
        self, cx: Connection, session_id: str, *, history: bool = False, client: PeerLike | None = UNSET
    ) -> None:
        if client is UNSET:
            self.inbox: Inbox | None = Inbox()
            self.router = SessionRouter(cx, session_id, self.inbox, "queue")
            if history:
                self.router.history = []
        else:
            self.inbox = None
            self.router = SessionRouter(cx, session_id, None, "forward", client)
        self.registration = cx.add_dynamic_handler(self.router)

    def discard(self, why: str) -> None:
        """The session was not set up here: stop routing it, answer the requests it queued."""
        self.router.mode = "detached"
        self.registration.remove()
        if self.inbox is not None:
            refuse_queued(self.inbox, why)


def refuse_queued(inbox: Inbox, why: str) -> None:
    """Close ``inbox``: the agent's requests in it that nobody read are answered with an error."""
    inbox.closed = True
    while inbox.items:
        item = inbox.items.popleft()
        if isinstance(item, SessionMessage) and item.is_request:
            cast(RequestDispatch, item.dispatch).responder.respond_with_error(InternalError(message=why))
    inbox.wake()


# --- the active session ---------------------------------------------------------------------------
