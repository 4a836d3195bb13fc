"""A trait method that raises answers its request only: -32603 with its message, and the agent goes on."""

from __future__ import annotations

from typing import Any

from acpio import schema as acp
from acpio.traits import AgentSideConnection, AgentTrait

from ._support import raw_peer_of

PROMPT = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}


class Fragile(AgentTrait):
    """Its first prompt raises; the next ones end their turn."""

    def __init__(self) -> None:
        self.turns = 0

    async def prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        self.turns += 1
        if self.turns == 1:
            raise RuntimeError("the model went away")
        return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)


async def test_a_prompt_that_raises_answers_internal_error_with_its_message_and_the_next_succeeds() -> None:
    async with raw_peer_of(lambda end: AgentSideConnection(Fragile(), end)) as peer:
        failed = await peer.request("session/prompt", PROMPT)
        assert failed["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "the model went away", "type": "RuntimeError"},
        }
        second = await peer.request("session/prompt", PROMPT)
        assert second["result"] == {"stopReason": "end_turn"}


async def test_error_details_false_hides_the_message() -> None:
    def make(end: Any) -> AgentSideConnection:
        return AgentSideConnection(Fragile(), end, error_details=False)

    async with raw_peer_of(make) as peer:
        failed = await peer.request("session/prompt", PROMPT)
        assert failed["error"] == {"code": -32603, "message": "Internal error"}
        assert (await peer.request("session/prompt", PROMPT))["result"] == {"stopReason": "end_turn"}
