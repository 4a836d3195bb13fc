"""The elicitations an agent sends outside a session: forms scoped to one of its requests.

An agent may ask a form (``elicitation/create``) scoped to a request rather than a session
(during authentication, for instance), and says a URL elicitation is done with
``elicitation/complete``; neither carries a session id, so no session router takes them.
:class:`RequestScopedElicitations` is the dynamic handler that does, for ``acpio prompt`` and for
:class:`~acpio.client.AgentClient` alike. Its ``accepts`` is a cheap sync test, so the chain skips
it, without a call, for every other message (a session's updates, responses).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from acpio.errors import AcpError, RequestError
from acpio.jsonrpc import Connection, Dispatch, NotificationDispatch, RequestDispatch, Unhandled
from acpio.schema import CompleteElicitationNotification, CreateElicitationRequest, CreateElicitationResponse

__all__ = ["RequestScopedElicitations"]

_log = logging.getLogger("acpio.oneshot")


class RequestScopedElicitations:
    """Answers each ``elicitation/create`` without a session id with ``answer``.

    ``answer`` gets the typed request; a :class:`~acpio.errors.RequestError` it raises is the
    answer. ``completed``, if given, is told the id of each ``elicitation/complete``.
    """

    def __init__(
        self,
        answer: Callable[[CreateElicitationRequest], Awaitable[CreateElicitationResponse]],
        *,
        completed: Callable[[str], None] | None = None,
    ) -> None:
        self._answer = answer
        self._completed = completed

    def accepts(self, message: Dispatch) -> bool:
        """A request ``elicitation/create`` without a session id; ``elicitation/complete`` if followed."""
        if type(message) is RequestDispatch:
            return message.method == CreateElicitationRequest.METHOD and message.session_id is None
        return (
            type(message) is NotificationDispatch
            and self._completed is not None
            and message.method == CompleteElicitationNotification.METHOD
        )

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Answer the form in a task of its own, or note the completion."""
        if not self.accepts(message):
            return Unhandled(message)
        if type(message) is RequestDispatch:
            cx.spawn(self._answer_form, message)
            return None
        try:
            note = message.parse(CompleteElicitationNotification)
        except AcpError:
            return None  # malformed: nothing to complete
        if self._completed is not None:
            self._completed(note.elicitation_id)
        return None

    async def _answer_form(self, dispatch: RequestDispatch) -> None:
        try:
            request = dispatch.parse(CreateElicitationRequest)
            answer = await self._answer(request)
        except RequestError as error:
            dispatch.responder.respond_with_error(error)
            return
        except AcpError as error:  # the connection ended while answering: nobody to answer
            _log.debug("A form outside a session was not answered: %s", error)
            return
        dispatch.responder.respond(answer)
