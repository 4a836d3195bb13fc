"""Sending ``session/prompt`` in the session's ACP version, its answer queued for the session's reader."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acpio.errors import AcpError
from acpio.jsonrpc import Connection
from acpio.schema import ContentBlock, PromptRequest, PromptResponse
from acpio.session.messages import PromptAccepted, QueueItem, TurnEnded
from acpio.session.peers import agent_peer

if TYPE_CHECKING:
    from acpio.jsonrpc import SentRequest
    from acpio.schema import v2


def send_prompt_request(
    cx: Connection,
    session_id: str,
    blocks: list[ContentBlock],
    meta: dict[str, Any] | None,
    protocol_version: int,
    deliver: Callable[[QueueItem], None],
) -> None:
    """Send the prompt; ``deliver`` gets its answer, or the error the agent answered.

    On v1 the answer ends the turn (a :class:`TurnEnded`); on v2 it only accepts the prompt (a
    :class:`PromptAccepted`: the turn ends at the idle state that follows). The content blocks are
    sent as their wire form, which both versions share for text, images, audio and resources.
    """
    if protocol_version == 2:
        from acpio.schema import v2

        wire: dict[str, Any] = {"sessionId": session_id, "prompt": [block.to_wire() for block in blocks]}
        if meta is not None:
            wire["_meta"] = meta
        sent_v2: SentRequest[v2.PromptResponse] = cx.send_request_to(
            agent_peer(cx), v2.PromptRequest.model_validate(wire)
        )

        async def accepted(result: v2.PromptResponse | AcpError) -> None:
            deliver(PromptAccepted(result) if isinstance(result, v2.PromptResponse) else result)

        sent_v2.on_receiving_result(accepted)
        return
    request = PromptRequest(session_id=session_id, prompt=blocks)
    if meta is not None:
        request.meta = meta
    sent: SentRequest[PromptResponse] = cx.send_request_to(agent_peer(cx), request)

    async def answered(result: PromptResponse | AcpError) -> None:
        deliver(TurnEnded(result) if isinstance(result, PromptResponse) else result)

    sent.on_receiving_result(answered)
