"""One AgentApp serving both versions on one in-process endpoint, driven by acpio's own typed client.

``Client.builder(protocol=1)`` and ``protocol=2`` (and the default, negotiating) get the same text,
the same tool call and the same stop reason from the same prompt function, through the client's
version-neutral view of the turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from acpio import AgentApp, Client, StopReasonName, Turn
from acpio.session import SessionConnection


def counting_app() -> AgentApp:
    app = AgentApp("counter", protocols=(1, 2))

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        n = len(turn.text.split())
        async with turn.tool_call("Count the words", kind="think") as call:
            await call.update(text=f"{n} words")
            allowed = await turn.ask_permission(call, allow="Tell me", deny="Keep it")
        await turn.say(f"v{turn.protocol_version}: ")
        await turn.say(f"{n} words" if allowed else "a secret")
        return "end_turn"

    return app


@pytest.mark.parametrize("protocol", [1, 2, "negotiate"])
async def test_the_same_prompt_function_answers_each_version(
    tmp_path: Path, protocol: Literal[1, 2, "negotiate"]
) -> None:
    app = counting_app()

    async def main(cx: SessionConnection) -> tuple[int | None, str, str, list[str]]:
        await cx.initialize()
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("count these four words")
            text = await session.read_to_string(permissions="allow")
            calls = [f"{c.title}:{c.status}" for c in session.view.tool_calls.values()]
            assert (session.view.state, session.view.stop_reason) == ("idle", "end_turn")
            return cx.protocol_version, text, str(session.stop_reason), calls

    version, text, stop, calls = await Client.builder(protocol=protocol).connect_with(app.component(), main)
    expected = 1 if protocol == 1 else 2
    assert version == expected
    assert text == f"v{expected}: 4 words"
    assert stop == "end_turn"
    assert calls == ["Count the words:completed"]
