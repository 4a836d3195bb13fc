"""How :class:`~acpio.client.AgentClient` answers a form (``elicitation/create``) and records it.

:func:`answer_form` answers one by the client's :class:`~acpio.client.FormPolicy`: ``-32602``
when the client did not advertise its mode (no policy, or a URL elicitation), ``cancel`` once the
turn is being cancelled, and ``cancel`` with the reason recorded when the answer does not fit the
form. A session's forms are answered by :class:`~acpio.driver.requests.SessionRequests` (recorded
in the turn's result); the forms an agent asks outside a session (scoped to one of its requests,
during authentication for instance) by :func:`request_scoped_forms` (recorded in
:attr:`AgentClient.forms_outside_sessions <acpio.client.AgentClient.forms_outside_sessions>`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal, cast

from acpio.client.forms import FormAnswerError, FormPolicy
from acpio.driver.result import FormAsk
from acpio.errors import AcpError, InvalidParams
from acpio.oneshot.client_methods import unless_cancelled
from acpio.oneshot.scoped_elicitations import RequestScopedElicitations
from acpio.schema import CreateElicitationRequest, CreateElicitationResponse

__all__ = ["answer_form", "request_scoped_forms"]

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
    except AcpError:  # a refusal to send to the agent, or the connection ended
        raise
    except Exception as exc:  # the user's callback failed: the agent still gets an answer
        _log.exception(
            "The forms callback failed on the form %r; the agent was answered cancel", request.message
        )
        answer, error = None, f"The forms callback raised {exc!r}; the agent was answered cancel"
    if answer is None:
        answer = CreateElicitationResponse(action="cancel")
    schema = request.requested_schema
    ask = FormAsk(
        request.message,
        schema.to_wire() if schema is not None else {},
        cast('Literal["accept", "decline", "cancel"]', answer.action),  # the only ones a FormPolicy gives
        dict(answer.content) if answer.content is not None else None,
        request.tool_call_id,
        error,
    )
    return answer, ask


def request_scoped_forms(policy: FormPolicy, asked: list[FormAsk]) -> RequestScopedElicitations:
    """The dynamic handler answering the forms an agent asks outside a session, each recorded in ``asked``."""

    async def answer(request: CreateElicitationRequest) -> CreateElicitationResponse:
        response, ask = await answer_form(policy, request)
        asked.append(ask)
        return response

    return RequestScopedElicitations(answer)
