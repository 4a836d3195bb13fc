"""A graph's ``interrupt()`` asked of the user: a permission for an approval, else a form.

* An approval, in LangChain's human-in-the-loop shape (``{"action_requests": [{"name", "args",
  "description"}], ...}``): each action is shown as its tool call and asked as a permission
  (allow once / reject once); the graph resumes with ``{"decisions": [{"type": "approve"} |
  {"type": "reject", "message": ...}]}``.
* An interrupt with a ``response_schema`` (``interrupt(value, response_schema=Model)``): a form
  of that schema (``elicitation/create``); the graph resumes with what the user filled in.
* Any other value (a question as text, a mapping with a ``message``): a form of one text field;
  the graph resumes with the text the user typed.

A declined or cancelled form resumes the graph with ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langgraph.types import Interrupt, interrupt
from pydantic import ValidationError

from acpio.app import Turn
from acpio.app.update_templates import given
from acpio.errors import InternalError
from acpio.frameworks.langgraph.stream import GraphStream, ToolCallState
from acpio.schema import (
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationSchema,
    PermissionOption,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    ToolCallUpdate,
    v2,
)

__all__ = ["answer_interrupt", "approve", "is_approval"]

_ANSWER = "answer"
_ALLOW = "allow"


def approve(name: str, args: Mapping[str, Any], *, description: str | None = None) -> bool:
    """In a graph's node or tool: ask the user to allow the call of ``name`` with ``args``; whether they did.

    An ``interrupt()`` in LangChain's human-in-the-loop shape: served by
    :func:`~acpio.frameworks.langgraph.graph_app`, the user is asked a permission on that tool
    call (shown with its diff when the tool is an edit); other LangGraph clients see the same
    approval request as LangChain's middleware sends.
    """
    action: dict[str, Any] = {"name": name, "args": dict(args)}
    if description is not None:
        action["description"] = description
    answer = interrupt({"action_requests": [action]})
    decisions = answer.get("decisions") if isinstance(answer, Mapping) else None
    first = decisions[0] if isinstance(decisions, list) and decisions else None
    return isinstance(first, Mapping) and first.get("type") == "approve"


def is_approval(value: Any) -> bool:
    """Whether an interrupt's value asks to approve tool calls (LangChain's human-in-the-loop shape)."""
    return isinstance(value, Mapping) and isinstance(value.get("action_requests"), list)


async def answer_interrupt(turn: Turn, stream: GraphStream, interrupt: Interrupt[Any]) -> Any:
    """Ask the user what ``interrupt`` asks; the value to resume the graph with."""
    if is_approval(interrupt.value):
        return {
            "decisions": [
                await _approve(turn, stream, action) for action in interrupt.value["action_requests"]
            ]
        }
    return await _form(turn, interrupt)


async def _approve(turn: Turn, stream: GraphStream, action: Any) -> dict[str, str]:
    name = str(action.get("name", "tool")) if isinstance(action, Mapping) else "tool"
    args = action.get("args") if isinstance(action, Mapping) else None
    call = await stream.call_for(name, args if isinstance(args, Mapping) else {})
    description = action.get("description") if isinstance(action, Mapping) else None
    title = description if isinstance(description, str) else None
    if turn.protocol_version == 2:
        allowed = await _allowed_v2(turn, stream, call, title)
    else:
        request = RequestPermissionRequest(
            session_id=turn.session_id,
            tool_call=ToolCallUpdate(tool_call_id=call.acp_id, **given(title=title)),
            options=[
                PermissionOption(option_id=_ALLOW, name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = (await turn.cx.send_request(request)).outcome
        allowed = isinstance(outcome, SelectedPermissionOutcome) and outcome.option_id == _ALLOW
    if allowed:
        return {"type": "approve"}
    return {"type": "reject", "message": f"The user rejected the call of {name}."}


async def _allowed_v2(turn: Turn, stream: GraphStream, call: ToolCallState, title: str | None) -> bool:
    """v2's permission request on ``call`` (a title, the call as subject): whether allow was chosen."""
    shown = title or stream.projections.view(call.name, call.args or {}, turn.cwd).title
    request = v2.RequestPermissionRequest(
        session_id=turn.session_id,
        title=shown,
        subject=v2.ToolCallPermissionSubject(
            tool_call=v2.ToolCallUpdate(tool_call_id=call.acp_id, title=shown)
        ),
        options=[
            v2.PermissionOption(option_id=_ALLOW, name="Allow", kind="allow_once"),
            v2.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ],
    )
    async with turn.waiting_for_user():
        outcome = (await turn.cx.send_request(request)).outcome
    return isinstance(outcome, v2.SelectedPermissionOutcome) and outcome.option_id == _ALLOW


async def _form(turn: Turn, interrupt: Interrupt[Any]) -> Any:
    value = interrupt.value
    if not turn.client.elicitation_form:
        raise InternalError(
            {"interrupt": _message(value), "needs": "clientCapabilities.elicitation.form"},
            message=f"The graph asks {_message(value)!r} (an interrupt), and this client cannot show forms "
            "(it does not advertise elicitation.form): use a client that does (AgentClient(forms=...), "
            "acpio prompt --answer NAME=VALUE), or answer the graph another "
            "way (an approval is asked as a permission)",
        )
    schema = interrupt.response_schema if isinstance(interrupt.response_schema, dict) else None
    message = _message(value)
    if schema is None:
        schema = {
            "type": "object",
            "properties": {_ANSWER: {"type": "string", "title": message}},
            "required": [_ANSWER],
        }
    try:
        requested = ElicitationSchema.model_validate(schema)
    except ValidationError as exc:
        raise ValueError(
            f"The graph's interrupt {message!r} has a response_schema ACP cannot ask as a form (an object "
            f"of strings, numbers, booleans and choices): {exc.errors()[0]['msg']}"
        ) from None
    request = CreateElicitationRequest(
        session_id=turn.session_id, mode="form", message=message, requested_schema=requested
    )
    async with turn.waiting_for_user():  # on v2 the session requires_action until the answer
        answer: CreateElicitationResponse = await turn.cx.send_request(request)
    if str(answer.action) != "accept":
        return None
    content = dict(answer.content or {})
    return content if interrupt.response_schema is not None else content.get(_ANSWER)


def _message(value: Any) -> str:
    """What the interrupt asks, as text: the value itself, its ``message`` or ``question``, or its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("message", "question", "description"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(value, default=str)
