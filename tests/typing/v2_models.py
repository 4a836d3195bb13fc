"""User code on the v2 models that the type checkers must accept (not run)."""

from typing import Any, assert_type

from pydantic import MISSING

from acpio.jsonrpc import Connection
from acpio.schema import v2


def build_a_turn() -> list[dict[str, Any]]:
    init = v2.InitializeRequest(
        protocol_version=2,
        info=v2.Implementation(name="editor", version="1.0"),
        capabilities=v2.ClientCapabilities(elicitation=v2.ElicitationCapabilities()),
    )
    assert_type(init.protocol_version, int)
    prompt = v2.PromptRequest(session_id="s", prompt=[v2.TextContent(text="hello")])
    updates: list[v2.SessionUpdate] = [
        v2.RunningStateUpdate(),
        v2.AgentMessageChunk(message_id="m", content=v2.TextContent(text="hi")),
        v2.ToolCallUpdate(tool_call_id="t", title="Read", kind=v2.ToolKind.READ, status=None),
        v2.IdleStateUpdate(stop_reason="end_turn"),
    ]
    notes = [v2.UpdateSessionNotification(session_id="s", update=u) for u in updates]
    return [init.to_wire(), prompt.to_wire(), *(n.to_wire() for n in notes)]


def read_an_update(note: v2.UpdateSessionNotification) -> str:
    update = note.update
    if isinstance(update, v2.ToolCallUpdate):
        title = update.title
        if title is MISSING:
            return "unchanged"
        if title is None:
            return "cleared"
        return title
    if isinstance(update, v2.IdleStateUpdate):
        return update.stop_reason or ""
    if isinstance(update, v2.UnknownSessionUpdate):
        return update.session_update
    return type(update).__name__


def method_rows() -> list[tuple[str, str | None]]:
    row = v2.REQUESTS["session/prompt"]
    assert_type(row, v2.MethodSpec)
    return [(m.method, m.capability) for m in v2.METHODS]


async def send_typed(cx: Connection, request_id: v2.RequestId) -> None:
    answer = await cx.send_request(v2.PromptRequest(session_id="s", prompt=[v2.TextContent(text="x")]))
    assert_type(answer, v2.PromptResponse)
    assert_type(answer.message_id, str)
    assert_type(request_id, int | str)
