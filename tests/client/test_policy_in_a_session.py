"""read_to_string(permissions=RulePolicy) hands the policy the session's merged view of the tool call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio import AgentApp, Client, StopReasonName, Turn
from acpio import schema as acp
from acpio.client import Rule, RulePolicy


async def test_a_kind_rule_sees_the_kind_the_agent_gave_only_in_its_tool_call(tmp_path: Path) -> None:
    agent = AgentApp("editor", version="1.0")

    @agent.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        # AgentApp's request repeats the id and title only: the kind is in the earlier tool_call
        async with turn.tool_call("Edit notes", kind="edit") as call:
            await turn.say("allowed" if await turn.ask_permission(call) else "refused")
        return "end_turn"

    policy = RulePolicy([Rule("allow", kind=("edit",))], default="deny", root=tmp_path)

    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("go")
            return await session.read_to_string(permissions=policy)

    assert await Client.builder().connect_with(agent.component(), main) == "allowed"
    decision = policy.decisions[-1]
    assert (decision.subject.kind, decision.subject.inferred, decision.rule) == ("edit", None, "rule 1")
