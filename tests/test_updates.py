"""acpio.text_update and its siblings: one call, the wire form of the three nested models."""

from __future__ import annotations

from acpio import text_update, thought_update, user_text_update


def test_each_builds_the_session_update_it_names() -> None:
    assert text_update("s1", "Hi").to_wire() == {
        "sessionId": "s1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}},
    }
    assert thought_update("s1", "hm").to_wire()["update"]["sessionUpdate"] == "agent_thought_chunk"
    assert user_text_update("s1", "yo").to_wire()["update"] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "yo"},
    }
