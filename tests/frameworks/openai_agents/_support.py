"""What the adapter's tests share: a Responses wire server, an agent on it, the editor's side of ACP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import Agent, OpenAIResponsesModel, RunConfig, function_tool
from openai import AsyncOpenAI

from acpio.testing import WirePeer

from .responses_wire import ResponsesWire

TIMEOUT = 10
#: No trace is sent to OpenAI from the tests.
NO_TRACES = RunConfig(tracing_disabled=True)


def model_on(wire: ResponsesWire) -> OpenAIResponsesModel:
    """The SDK's Responses model, its client the real ``openai`` one pointed at the wire server."""
    client = AsyncOpenAI(base_url=wire.base_url, api_key="sk-wire", max_retries=0)
    return OpenAIResponsesModel("gpt-4.1", openai_client=client)


@function_tool
def write_file(path: str, content: str) -> str:
    """Write ``content`` to the file ``path`` (relative to the working directory)."""
    Path(path).write_text(content)
    return f"Wrote {len(content)} characters to {path}"


def coder(
    wire: ResponsesWire, *tools: Any, handoffs: list[Any] | None = None, name: str = "coder"
) -> Agent[Any]:
    """An agent on the wire server with ``tools`` (default: ``write_file``)."""
    return Agent(
        name=name,
        instructions="You edit files.",
        model=model_on(wire),
        tools=list(tools) or [write_file],
        handoffs=handoffs or [],
    )


async def open_session(
    peer: WirePeer, cwd: Path, capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Initialize and open a session in ``cwd``; the ``session/new`` result."""
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
    await peer.response_to(1)
    new = peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    result: dict[str, Any] = (await peer.response_to(new))["result"]
    return result


def send_prompt(peer: WirePeer, session_id: str, text: str) -> Any:
    """Send a ``session/prompt`` of ``text``; its request id."""
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def updates_of(seen: list[Any]) -> list[dict[str, Any]]:
    """The ``session/update`` updates among frames."""
    return [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
