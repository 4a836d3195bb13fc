"""A conductor run's requests in flight: those from upstream still waiting, what each went on as."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from acpio.errors import RequestError
from acpio.jsonrpc import SentRequest

if TYPE_CHECKING:
    from acpio.jsonrpc import Responder

__all__ = ["InFlight"]

#: Tables of requests in flight are swept of finished entries when they grow past this size.
_SWEEP_AT: Final = 256


class InFlight:
    """The responders of requests from upstream, and per link the request each received one was sent on as."""

    __slots__ = ("forwarded", "waiting")

    def __init__(self) -> None:
        #: Responders of requests from upstream, so a broken chain can answer those still waiting.
        self.waiting: list[Responder[Any]] = []
        #: Per link: id of a request received there -> the request it was forwarded as.
        self.forwarded: dict[int, dict[Any, SentRequest[Any]]] = {}

    def remember(self, responder: Responder[Any]) -> None:
        """Keep ``responder`` (of a request from upstream) to answer if the chain breaks."""
        waiting = self.waiting
        if len(waiting) >= _SWEEP_AT:
            waiting[:] = [r for r in waiting if not r.done]
        waiting.append(responder)

    def forwarded_as(self, link: int, request_id: Any, sent: SentRequest[Any]) -> None:
        """The request ``request_id`` received on ``link`` went on as ``sent``."""
        table = self.forwarded.setdefault(link, {})
        if len(table) >= _SWEEP_AT:
            for done in [rid for rid, s in table.items() if s.done]:
                del table[done]
        table[request_id] = sent

    def cancel(self, link: int, params: Any) -> None:
        """A wrapped ``$/cancel_request`` from ``link``: cancel what that request was forwarded as."""
        request_id = params.get("requestId") if type(params) is dict else None
        sent = self.forwarded.get(link, {}).get(request_id)
        if sent is not None:
            sent.cancel()

    def answer_all(self, answer: RequestError) -> None:
        """Answer every request from upstream still waiting with ``answer`` (the chain broke)."""
        waiting, self.waiting = self.waiting, []
        for responder in waiting:
            if not responder.done:
                responder.respond_with_error(answer)
