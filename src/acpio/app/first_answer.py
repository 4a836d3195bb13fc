"""A user's decision asked of every client controlling a session (unstable): the first answer wins.

A turn's ``session/request_permission`` and ``elicitation/create`` go to the session's own client
and to each client attached to it as a controller (``_acpio/session/attach``, role
``controller``). The first answer is the turn's; each other client is then sent
``_acpio/session/request_resolved`` naming its copy of the request and the answer, and what it
answers later is ignored. A client that leaves (or detaches) before answering is not waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from acpio.capabilities import ClientFeatures
from acpio.errors import AcpError, ConnectionClosed
from acpio.jsonrpc import Connection, SentRequest, TypedRequest

if TYPE_CHECKING:
    from acpio.session.attach import AttachedRequestResolved

__all__ = ["Able", "Askers", "Deciders", "Race"]

R = TypeVar("R")

#: The clients controlling a session besides its own, with what each advertised, as they are when
#: the turn asks (``None`` instead: the session has no other client, nor ever will).
Deciders = Callable[[], Sequence[tuple[Connection, ClientFeatures]]]
#: Whether a client that advertised these features can answer a request (a form needs ``elicitation``).
Able = Callable[[ClientFeatures], bool]


class Askers:
    """Who a turn's decisions (permissions, forms) are asked of: the session's client and its controllers.

    ``waiting`` keeps the requests still unanswered, so that a controller attaching meanwhile is
    asked too (:meth:`Race.join`).
    """

    def __init__(
        self,
        cx: Connection,
        session_id: str,
        deciders: Deciders | None = None,
        waiting: set[Race[Any]] | None = None,
    ) -> None:
        self._cx = cx
        self._session_id = session_id
        self._deciders = deciders
        self._waiting = waiting if waiting is not None else set[Race[Any]]()

    async def ask(self, request: TypedRequest[R], able: Able | None = None) -> R:
        """The first answer to ``request`` from the session's client or a controller ``able`` to answer.

        Raises :class:`~acpio.ConnectionClosed` when every client asked left without answering.
        Cancelling the caller sends ``$/cancel_request`` to each client still asked.
        """
        if self._deciders is None:
            return await self._cx.send_request(request)
        race = Race(self._session_id, request, able)
        race.join(self._cx, None)
        for cx, features in self._deciders():
            race.join(cx, features)
        self._waiting.add(race)
        try:
            return await race.result()
        finally:
            self._waiting.discard(race)


class Race(Generic[R]):
    """One request asked of several clients: the first answer (or error) wins, the others are told."""

    def __init__(self, session_id: str, request: TypedRequest[R], able: Able | None) -> None:
        self._session_id = session_id
        self._request = request
        self._able = able
        self._first: asyncio.Future[tuple[Connection, R | AcpError]] = (
            asyncio.get_running_loop().create_future()
        )
        self._sent: dict[Connection, SentRequest[R]] = {}
        self._gone: dict[Connection, AcpError] = {}

    def join(self, cx: Connection, features: ClientFeatures | None) -> None:
        """Ask ``cx`` too (``features``: what it advertised; ``None``: the session's own client)."""
        if self._first.done() or cx in self._sent or cx.closed:
            return
        if features is not None and self._able is not None and not self._able(features):
            return
        try:
            copy = cx.send_request(self._request)
        except ConnectionClosed:
            return
        self._sent[cx] = copy
        copy.on_receiving_result(functools.partial(self._answered, cx, copy))

    def leave(self, cx: Connection) -> None:
        """``cx`` stopped controlling the session: its copy is cancelled, and what it answers ignored."""
        copy = self._sent.pop(cx, None)
        if copy is None or self._first.done():
            return
        self._gone.pop(cx, None)
        copy.cancel()
        if self._sent and len(self._gone) == len(self._sent):
            last = next(iter(self._gone))
            self._first.set_result((last, self._gone[last]))

    async def _answered(self, cx: Connection, copy: SentRequest[R], result: R | AcpError) -> None:
        if self._first.done() or self._sent.get(cx) is not copy:
            return  # a late answer (the request was decided, that client told), or its client left
        if isinstance(result, ConnectionClosed):
            self._gone[cx] = result
            if len(self._gone) == len(self._sent):
                self._first.set_result((cx, result))
            return
        self._first.set_result((cx, result))

    async def result(self) -> R:
        """The first answer; the other clients asked get ``_acpio/session/request_resolved``."""
        if not self._sent:
            raise ConnectionClosed(f"No client of session {self._session_id!r} is left to answer")
        try:
            winner, result = await self._first
        except asyncio.CancelledError:
            for copy in self._sent.values():
                copy.cancel()
            raise
        for asker, copy in self._sent.items():
            if asker is not winner and not asker.closed:
                with contextlib.suppress(ConnectionClosed):  # it left meanwhile
                    asker.send_notification(_resolved(self._session_id, copy, result))
        if isinstance(result, AcpError):
            raise result
        return result


def _resolved(session_id: str, copy: SentRequest[Any], result: object) -> AttachedRequestResolved:
    # only an attached client's answer leads here: the client-side session code loads then
    from acpio.session.attach import AttachedRequestResolved

    if isinstance(result, AcpError):
        return AttachedRequestResolved(
            session_id=session_id, request_id=copy.id, method=copy.method, error=str(result)
        )
    to_wire = getattr(result, "to_wire", None)
    answer = to_wire() if callable(to_wire) else result
    return AttachedRequestResolved(
        session_id=session_id, request_id=copy.id, method=copy.method, result=answer
    )
