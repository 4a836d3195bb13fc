"""A permission question of either ACP version in v1's shape, for what decides v1 questions.

A permission policy (:class:`~acpio.client.RulePolicy`, a callback...) reads v1's
``session/request_permission``: a ``toolCall``. ACP v2 asks with a ``title`` and a ``subject``
(a tool call, or a command and its directory) instead. Everything that decides v2 questions by a
v1 policy (:class:`~acpio.client.AgentClient`, the policy proxy) goes through these functions,
so that each judges a v2 question the same way:

* :func:`v1_permission_request`: a v2 request in v1's shape (what
  :meth:`RequestPermissionV2Message.as_v1 <acpio.session.RequestPermissionV2Message.as_v1>` gives);
* :func:`permission_question`: a request of either version in v1's shape, its tool call merged
  into the session's :class:`~acpio.session.TurnView` and the request given what the view knows
  and the request left out (its ``kind``, title, locations, raw input). A v2 command subject is
  a question about running the command: titled ``TITLE: $ COMMAND in CWD``, of kind ``execute``
  (unless the tool call it names says otherwise), its ``rawInput`` ``{"command", "cwd"}``, which
  a rule policy reads as the command's argv and directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpio.schema import RequestPermissionRequest, ToolCallUpdate
from acpio.session.turn_view import ToolCallView

if TYPE_CHECKING:
    from acpio.schema import v2
    from acpio.session.turn_view import TurnView

__all__ = ["permission_question", "v1_permission_request"]


def v1_permission_request(request: v2.RequestPermissionRequest) -> RequestPermissionRequest:
    """The v2 ``request`` in v1's shape: ``toolCall`` is the subject's tool call, titled by the request.

    For a command subject (or none), a tool call named by the subject's ``toolCallId`` (else
    ``""``) with the request's title. Options are the same.
    """
    subject = request.subject
    tool_call: dict[str, Any] = {
        "toolCallId": getattr(subject, "tool_call_id", None) or "",
        "title": request.title,
    }
    inner = getattr(subject, "tool_call", None)
    if inner is not None:
        tool_call = {"title": request.title, **inner.to_wire()}
    return RequestPermissionRequest.model_validate(
        {
            "sessionId": request.session_id,
            "toolCall": tool_call,
            "options": [option.to_wire() for option in request.options],
        }
    )


def permission_question(
    request: RequestPermissionRequest | v2.RequestPermissionRequest, view: TurnView
) -> tuple[RequestPermissionRequest, ToolCallView]:
    """``request`` in v1's shape, filled from ``view``, and the merged view of the call it is about.

    The request's tool call is merged into ``view`` first (a v2 command's tool call, when the
    subject names one the view knows, gets the command as its raw input); see the module docstring.
    """
    if isinstance(request, RequestPermissionRequest):
        asked, call = request, view.apply_permission_request(request.tool_call)
    else:
        asked, call = _v2_question(request, view)
    return _filled(asked, call), call


def _v2_question(
    request: v2.RequestPermissionRequest, view: TurnView
) -> tuple[RequestPermissionRequest, ToolCallView]:
    """A v2 question in v1's shape, and the call it is about (a command's made up for it)."""
    asked = v1_permission_request(request)
    subject = request.subject
    inner = getattr(subject, "tool_call", None)
    if inner is not None:
        return asked, view.apply_permission_request(inner)
    command = getattr(subject, "command", None)
    title = request.title
    if isinstance(command, str):
        title = f"{title}: $ {command} in {getattr(subject, 'cwd', '')}"
        asked.tool_call.title = title
    call_id = asked.tool_call.tool_call_id
    known = view.tool_calls.get(call_id) if call_id else None
    call = known if known is not None else ToolCallView(call_id, title=title, kind="execute")
    if isinstance(command, str):
        call.raw_input = {"command": command, "cwd": getattr(subject, "cwd", None)}
    return asked, call


def _filled(request: RequestPermissionRequest, call: ToolCallView) -> RequestPermissionRequest:
    """``request`` with what it left out of its tool call taken from the merged view ``call``."""
    asked = request.tool_call
    wire = asked.to_wire()
    if asked.kind is None and call.kind is not None:
        wire["kind"] = call.kind
    if asked.title is None and call.title is not None:
        wire["title"] = call.title
    if asked.raw_input is None and call.raw_input is not None:
        wire["rawInput"] = call.raw_input
    if asked.locations is None and call.locations:
        wire["locations"] = [{"path": path} for path in call.locations]
    if wire == asked.to_wire():
        return request
    return request.model_copy(update={"tool_call": ToolCallUpdate.model_validate(wire)})
