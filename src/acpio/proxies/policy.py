"""The policy proxy: a conductor component answering the agent's permission requests by a policy.

:func:`policy_proxy` builds a proxy that sits anywhere in a chain (``acpio conductor agent
"acpio proxy policy policy.toml" "my-agent"``), so the policy guards any client, an editor
included, in front of any agent:

* a ``session/request_permission`` (v1) the policy decides (``allow`` or ``deny``, or an ``ask``
  a grant of this session covers) is answered by the proxy itself: the client never sees it;
* one the policy asks about goes on to the client; its answer goes back to the agent and is
  recorded (an ``allow_always`` answer becomes a grant for the rest of the session);
* the tool call a request is about is merged with the agent's earlier ``tool_call`` and updates
  of it (kind, locations, ``rawInput``, diffs), and paths are resolved in each session's ``cwd``;
* every decision is written as one line, ``acpio-policy {JSON}``, on the proxy's stderr (which a
  conductor's ``--trace`` records) and given to ``on_decision``.

ACP v2 permission requests pass through to the client untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from acpio import schema as acp
from acpio.client.policy import RulePolicy
from acpio.client.policy_audit import PolicyDecision
from acpio.jsonrpc import Builder, Connection, Forward
from acpio.roles import Agent, Client, Proxy, ProxySessionMessages

__all__ = ["audit_line", "policy_proxy"]

_ENDED = frozenset({acp.ToolCallStatus.COMPLETED, acp.ToolCallStatus.FAILED})


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
    app = Proxy.builder(name=name)

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

    @app.on_request(peer=Agent)
    async def permission(request: acp.RequestPermissionRequest, responder: Any, cx: Connection) -> None:
        key = (request.session_id, request.tool_call.tool_call_id)
        earlier = calls.get(key)
        if earlier is not None:
            merged = _merged(earlier, request.tool_call.to_wire())
            request = request.model_copy(update={"tool_call": merged})
        evaluation = policy.evaluate(request)
        if evaluation.action != "ask":
            responder.respond(acp.RequestPermissionResponse(outcome=policy.settle(request, evaluation)))
            return
        sent = cx.send_request_to(Client, request)
        sent.forward_cancellation_from(responder)

        async def answered(result: Any) -> None:
            if isinstance(result, acp.RequestPermissionResponse):
                given = result.outcome
                if not isinstance(given, acp.SelectedPermissionOutcome | acp.CancelledPermissionOutcome):
                    given = acp.CancelledPermissionOutcome()  # an outcome of a later schema: no answer
                outcome = policy.answered(request, evaluation, given)
                responder.respond(acp.RequestPermissionResponse(outcome=outcome))
            else:
                responder.respond_with_error(result)

        sent.on_receiving_result(answered)

    @app.on_request(peer=Client)
    async def new_session(request: acp.NewSessionRequest, responder: Any, cx: Connection) -> None:
        sent = cx.send_request_to(Agent, request)
        sent.forward_cancellation_from(responder)

        async def answered(result: Any) -> None:
            if isinstance(result, acp.NewSessionResponse):
                policy.set_root(result.session_id, request.cwd)
                cx.add_dynamic_handler(ProxySessionMessages(result.session_id)).run_indefinitely()
                responder.respond(result)
            else:
                responder.respond_with_error(result)

        sent.on_receiving_result(answered)

    @app.on_request(peer=Client)
    async def load_session(request: acp.LoadSessionRequest, responder: Any, cx: Connection) -> Forward:
        policy.set_root(request.session_id, request.cwd)
        return Forward(request)

    return app


def _merged(earlier: acp.ToolCallUpdate | None, wire: dict[str, Any]) -> acp.ToolCallUpdate:
    """``earlier`` with the fields ``wire`` (a tool call or its update, as JSON) sets replaced."""
    wire = {key: value for key, value in wire.items() if key != "sessionUpdate" and value is not None}
    if earlier is None:
        return acp.ToolCallUpdate.model_validate(wire)
    return acp.ToolCallUpdate.model_validate({**earlier.to_wire(), **wire})
