"""A user's decision asked of every client controlling a session (unstable): the first answer wins.

A turn's ``session/request_permission`` and ``elicitation/create`` go to the session's own client
and to each client attached to it as a controller (``_acpio/session/attach``, role
``controller``). The first answer is the turn's; each other client is then sent
``_acpio/session/request_resolved`` naming its copy of the request and the answer, and what it
answers later is ignored. A client that leaves before answering is not waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from acpio.capabilities import ClientFeatures
from acpio.errors import AcpError, ConnectionClosed
from acpio.jsonrpc import Connection, SentRequest, TypedRequest
from acpio.session.attach import AttachedRequestResolved

__all__ = ["Askers", "Deciders", "ask_first"]

R = TypeVar("R")

#: The clients controlling a session besides its own, with what each advertised, as they are when
#: the turn asks.
Deciders = Callable[[], Sequence[tuple[Connection, ClientFeatures]]]
#: Whether a client that advertised these features can answer a request (a form needs ``elicitation``).
Able = Callable[[ClientFeatures], bool]


class Askers:
    """Who a turn's decisions (permissions, forms) are asked of: the session's client and its controllers."""

    def __init__(self, cx: Connection, session_id: str, deciders: Deciders | None = None) -> None:
        self._cx = cx
        self._session_id = session_id
        self._deciders = deciders

    async def ask(self, request: TypedRequest[R], able: Able | None = None) -> R:
        """The first answer to ``request`` (:func:`ask_first`), of the controllers ``able`` to answer."""
        deciders = self._deciders() if self._deciders is not None else ()
        others = [cx for cx, features in deciders if able is None or able(features)]
        return await ask_first(self._cx, others, self._session_id, request)


async def ask_first(
    cx: Connection, others: Sequence[Connection], session_id: str, request: TypedRequest[R]
) -> R:
    """Send ``request`` to ``cx`` and to each of ``others``: the first answer (or error) received.

    Raises :class:`~acpio.ConnectionClosed` when every one of them left without answering.
    Cancelling the caller sends ``$/cancel_request`` to each client still asked.
    """
    askers = [cx, *(other for other in others if other is not cx and not other.closed)]
    if len(askers) == 1:
        return await cx.send_request(request)
    first: asyncio.Future[tuple[Connection, R | AcpError]] = asyncio.get_running_loop().create_future()
    sent: dict[Connection, SentRequest[R]] = {}
    gone: list[AcpError] = []

    def on_answer(asker: Connection) -> Callable[[R | AcpError], Any]:
        async def answered(result: R | AcpError) -> None:
            if first.done():
                return  # a late answer: the request was decided, and that client was told
            if isinstance(result, ConnectionClosed):
                gone.append(result)
                if len(gone) == len(askers):
                    first.set_result((asker, result))
                return
            first.set_result((asker, result))

        return answered

    for asker in askers:
        try:
            copy = asker.send_request(request)
        except ConnectionClosed as exc:
            gone.append(exc)
            continue
        sent[asker] = copy
        copy.on_receiving_result(on_answer(asker))
    if len(gone) == len(askers):
        raise gone[0]
    try:
        winner, result = await first
    except asyncio.CancelledError:
        for copy in sent.values():
            copy.cancel()
        raise
    for asker, copy in sent.items():
        if asker is not winner and not asker.closed:
            with contextlib.suppress(ConnectionClosed):  # it left meanwhile
                asker.send_notification(_resolved(session_id, copy, result))
    if isinstance(result, AcpError):
        raise result
    return result


def _resolved(session_id: str, copy: SentRequest[Any], result: object) -> AttachedRequestResolved:
    if isinstance(result, AcpError):
        return AttachedRequestResolved(
            session_id=session_id, request_id=copy.id, method=copy.method, error=str(result)
        )
    to_wire = getattr(result, "to_wire", None)
    answer = to_wire() if callable(to_wire) else result
    return AttachedRequestResolved(
        session_id=session_id, request_id=copy.id, method=copy.method, result=answer
    )
