"""The policy proxy: a conductor component answering the agent's permission requests by a policy.

:func:`policy_proxy` builds a proxy that sits anywhere in a chain (``acpio conductor agent
"acpio proxy policy policy.toml" "my-agent"``), so the policy guards any client, an editor
included, in front of any agent:

* a ``session/request_permission`` the policy decides (``allow`` or ``deny``, or an ``ask`` a
  grant of this session covers) is answered by the proxy itself: the client never sees it;
* one the policy asks about goes on to the client; its answer goes back to the agent and is
  recorded (an ``allow_always`` answer becomes a grant for the rest of the session);
* the tool call a request is about is merged with the agent's earlier ``tool_call`` and updates
  of it (kind, locations, ``rawInput``, diffs), and paths are resolved in each session's ``cwd``
  (from ``session/new``, ``session/load`` or ``session/resume``);
* every decision is written as one line, ``acpio-policy {JSON}``, on the proxy's stderr (which a
  conductor's ``--trace`` records) and given to ``on_decision``.

Both ACP versions. A v2 request (a ``title`` and a ``subject``: a tool call, or a command and its
directory) is decided in v1's shape, as :class:`~acpio.client.AgentClient` decides it
(:func:`~acpio.session.permission_question.permission_question`: a command subject is a call of
kind ``execute`` whose ``rawInput`` is the command and its ``cwd``, so rules about commands apply);
what it asks goes on to the client as the agent sent it, and the answer goes back in v2's shape.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from acpio import schema as acp
from acpio.client.permissions import Outcome
from acpio.client.policy import RulePolicy
from acpio.client.policy_audit import PolicyDecision
from acpio.errors import AcpError
from acpio.jsonrpc import Builder, Connection, Forward, Responder, SentRequest
from acpio.roles import Agent, Client, Proxy, ProxySessionMessages
from acpio.schema import v2
from acpio.session.messages import v2_permission_answer
from acpio.session.permission_question import permission_question
from acpio.session.turn_view import ToolCallView, TurnView

__all__ = ["audit_line", "policy_proxy"]

_ENDED = frozenset({acp.ToolCallStatus.COMPLETED, acp.ToolCallStatus.FAILED})
_ENDED_V2 = frozenset({v2.ToolCallStatus.COMPLETED, v2.ToolCallStatus.FAILED, v2.ToolCallStatus.CANCELLED})
_Answer = Callable[[Outcome], acp.RequestPermissionResponse | v2.RequestPermissionResponse]


def audit_line(decision: PolicyDecision) -> str:
    """The line the policy proxy writes for ``decision``: ``acpio-policy`` and its JSON."""
    return "acpio-policy " + orjson.dumps(decision.to_json()).decode()


def policy_proxy(
    policy: RulePolicy,
    *,
    name: str = "policy",
    on_decision: Callable[[PolicyDecision], None] | None = None,
) -> Builder[Any]:
    """A proxy answering permission requests by ``policy`` and forwarding what it asks to the client.

    Each decision goes to ``on_decision``; by default it is written on stderr (:func:`audit_line`).
    """
    policy.on_decision = on_decision or (
        lambda decision: print(audit_line(decision), file=sys.stderr, flush=True)
    )
    calls: dict[tuple[str, str], acp.ToolCallUpdate] = {}
    views: dict[str, TurnView] = {}  # v2: each session's tool calls, as AgentClient keeps them
    app = Proxy.builder(name=name)

    def decide(
        asked: acp.RequestPermissionRequest,
        forwarded: acp.RequestPermissionRequest | v2.RequestPermissionRequest,
        responder: Responder[Any],
        answer: _Answer,
        cx: Connection,
        call: ToolCallView | None = None,
    ) -> None:
        """Answer by the policy, or forward ``forwarded`` to the client and record its answer."""
        evaluation = policy.evaluate(asked, call)
        if evaluation.action != "ask":
            responder.respond(answer(policy.settle(asked, evaluation)))
            return
        sent: SentRequest[Any] = cx.send_request_to(Client, forwarded)
        sent.forward_cancellation_from(responder)

        async def answered(
            result: acp.RequestPermissionResponse | v2.RequestPermissionResponse | AcpError,
        ) -> None:
            if isinstance(result, AcpError):
                responder.respond_with_error(result)
            else:
                responder.respond(answer(policy.answered(asked, evaluation, _outcome(result))))

        sent.on_receiving_result(answered)

    @app.on_notification(peer=Agent)
    async def tool_calls(notification: acp.SessionNotification, cx: Connection) -> Forward:
        update = notification.update
        if isinstance(update, acp.ToolCall | acp.ToolCallUpdate):
            key = (notification.session_id, update.tool_call_id)
            if update.status in _ENDED:  # nothing is asked about a finished call: forget it
                calls.pop(key, None)
            else:
                calls[key] = _merged(calls.get(key), update.to_wire())
        return Forward(notification)

    @app.on_notification(peer=Agent)
    async def tool_calls_v2(notification: v2.UpdateSessionNotification, cx: Connection) -> Forward:
        update = notification.update
        if isinstance(update, v2.ToolCallUpdate | v2.ToolCallContentChunk):
            view = views.setdefault(notification.session_id, TurnView())
            if isinstance(update, v2.ToolCallUpdate) and update.status in _ENDED_V2:
                view.tool_calls.pop(update.tool_call_id, None)
            else:
                view.apply_update_v2(update)
        return Forward(notification)

    @app.on_request(peer=Agent)
    async def permission(
        request: acp.RequestPermissionRequest,
        responder: Responder[acp.RequestPermissionResponse],
        cx: Connection,
    ) -> None:
        key = (request.session_id, request.tool_call.tool_call_id)
        earlier = calls.get(key)
        if earlier is not None:
            merged = _merged(earlier, request.tool_call.to_wire())
            request = request.model_copy(update={"tool_call": merged})
        decide(
            request, request, responder, lambda outcome: acp.RequestPermissionResponse(outcome=outcome), cx
        )

    @app.on_request(peer=Agent)
    async def permission_v2(
        request: v2.RequestPermissionRequest,
        responder: Responder[v2.RequestPermissionResponse],
        cx: Connection,
    ) -> None:
        asked, call = permission_question(request, views.setdefault(request.session_id, TurnView()))
        decide(asked, request, responder, v2_permission_answer, cx, call)

    @app.on_request(peer=Client)
    async def new_session(
        request: acp.NewSessionRequest, responder: Responder[acp.NewSessionResponse], cx: Connection
    ) -> None:
        _root_from_answer(policy, request, responder, cx)

    @app.on_request(peer=Client)
    async def new_session_v2(
        request: v2.NewSessionRequest, responder: Responder[v2.NewSessionResponse], cx: Connection
    ) -> None:
        _root_from_answer(policy, request, responder, cx)

    @app.on_request(peer=Client)
    async def load_session(
        request: acp.LoadSessionRequest, responder: Responder[acp.LoadSessionResponse], cx: Connection
    ) -> Forward:
        policy.set_root(request.session_id, request.cwd)
        return Forward(request)

    @app.on_request(peer=Client)
    async def resume_session(
        request: acp.ResumeSessionRequest, responder: Responder[acp.ResumeSessionResponse], cx: Connection
    ) -> Forward:
        policy.set_root(request.session_id, request.cwd)
        return Forward(request)

    @app.on_request(peer=Client)
    async def resume_session_v2(
        request: v2.ResumeSessionRequest, responder: Responder[v2.ResumeSessionResponse], cx: Connection
    ) -> Forward:
        policy.set_root(request.session_id, request.cwd)
        return Forward(request)

    return app


def _root_from_answer(
    policy: RulePolicy,
    request: acp.NewSessionRequest | v2.NewSessionRequest,
    responder: Responder[Any],
    cx: Connection,
) -> None:
    """Send ``session/new`` on; once the agent names the session, resolve its paths in ``cwd``."""
    sent: SentRequest[Any] = cx.send_request_to(Agent, request)
    sent.forward_cancellation_from(responder)

    async def answered(result: acp.NewSessionResponse | v2.NewSessionResponse | AcpError) -> None:
        if isinstance(result, AcpError):
            responder.respond_with_error(result)
            return
        policy.set_root(result.session_id, request.cwd)
        cx.add_dynamic_handler(ProxySessionMessages(result.session_id)).run_indefinitely()
        responder.respond(result)

    sent.on_receiving_result(answered)


def _outcome(result: acp.RequestPermissionResponse | v2.RequestPermissionResponse) -> Outcome:
    """The client's answer as v1's outcome types (the wire is the same); an unknown one is no answer."""
    given = acp.RequestPermissionResponse.model_validate(result.to_wire()).outcome
    if isinstance(given, acp.SelectedPermissionOutcome | acp.CancelledPermissionOutcome):
        return given
    return acp.CancelledPermissionOutcome()  # an outcome of a later schema: no answer


def _merged(earlier: acp.ToolCallUpdate | None, wire: dict[str, Any]) -> acp.ToolCallUpdate:
    """``earlier`` with the fields ``wire`` (a tool call or its update, as JSON) sets replaced."""
    wire = {key: value for key, value in wire.items() if key != "sessionUpdate" and value is not None}
    if earlier is None:
        return acp.ToolCallUpdate.model_validate(wire)
    return acp.ToolCallUpdate.model_validate({**earlier.to_wire(), **wire})
