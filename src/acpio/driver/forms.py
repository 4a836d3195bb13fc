"""How :class:`~acpio.client.AgentClient` answers a form (``elicitation/create``) and records it.

:func:`answer_form` answers one by the client's :class:`~acpio.client.FormPolicy`: ``-32602``
when the client did not advertise its mode (no policy, or a URL elicitation), ``cancel`` once the
turn is being cancelled, and ``cancel`` with the reason recorded when the answer does not fit the
form. A session's forms are answered by :class:`~acpio.driver.requests.SessionRequests` (recorded
in the turn's result); the forms an agent asks outside a session (scoped to one of its requests,
during authentication for instance) by :class:`RequestScopedForms` (recorded in
:attr:`AgentClient.forms_outside_sessions <acpio.client.AgentClient.forms_outside_sessions>`).
"""

from __future__ import annotations

import asyncio
import logging

from acpio.client.forms import FormAnswerError, FormPolicy
from acpio.driver.result import FormAsk
from acpio.errors import AcpError, InvalidParams, RequestError
from acpio.jsonrpc import Connection, Dispatch, RequestDispatch, Unhandled
from acpio.oneshot.client_methods import unless_cancelled
from acpio.schema import CreateElicitationRequest, CreateElicitationResponse

__all__ = ["RequestScopedForms", "answer_form"]

_log = logging.getLogger("acpio.driver")


async def answer_form(
    policy: FormPolicy | None, request: CreateElicitationRequest, cancelled: asyncio.Event | None = None
) -> tuple[CreateElicitationResponse, FormAsk]:
    """The answer to ``request`` and its record; ``cancel`` once ``cancelled`` is set.

    Raises :class:`~acpio.errors.InvalidParams` for a mode the client did not advertise.
    """
    if policy is None or request.mode != "form":
        why = "AgentClient answers forms only"
        if policy is None:
            why = "pass AgentClient(forms=...) to answer forms"
        raise InvalidParams(
            {"mode": request.mode},
            message=f"This client did not advertise {request.mode} elicitations in its capabilities ({why})",
        )
    error: str | None = None
    answering = policy.answer(request)
    try:
        answer = await (unless_cancelled(cancelled, answering) if cancelled is not None else answering)
    except FormAnswerError as exc:
        _log.warning("%s", exc)
        answer, error = None, str(exc)
    if answer is None:
        answer = CreateElicitationResponse(action="cancel")
    schema = request.requested_schema
    ask = FormAsk(
        request.message,
        schema.to_wire() if schema is not None else {},
        str(answer.action),
        dict(answer.content) if answer.content is not None else None,
        request.tool_call_id,
        error,
    )
    return answer, ask


class RequestScopedForms:
    """A dynamic handler answering the forms an agent asks outside a session, each recorded in ``asked``."""

    def __init__(self, policy: FormPolicy, asked: list[FormAsk]) -> None:
        self._policy = policy
        self._asked = asked

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Claim an ``elicitation/create`` without a session id; leave the rest."""
        if (
            type(message) is RequestDispatch
            and message.method == CreateElicitationRequest.METHOD
            and message.session_id is None
        ):
            cx.spawn(self._answer, message)
            return None
        return Unhandled(message)

    async def _answer(self, dispatch: RequestDispatch) -> None:
        try:
            request = dispatch.parse(CreateElicitationRequest)
            answer, ask = await answer_form(self._policy, request)
        except RequestError as error:
            dispatch.responder.respond_with_error(error)
            return
        except AcpError as error:  # the connection ended while answering: nobody to answer
            _log.debug("A form outside a session was not answered: %s", error)
            return
        self._asked.append(ask)
        dispatch.responder.respond(answer)
