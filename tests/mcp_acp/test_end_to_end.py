"""End to end: testy's `mcp` command calls a tool an acpio client or proxy serves, through real connections.

The seed's pattern is the second test: a proxy intercepts `session/new`, builds the session from the
client's request with `with_mcp_server(...)`, hands it to proxy mode, and testy behind the conductor
calls the tool; the client knows nothing of MCP.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acpio.agents.testy import TestyOptions, testy_agent
from acpio.conductor import Chain
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.mcp import McpServer
from acpio.roles import Client, Proxy
from acpio.schema import InitializeRequest, NewSessionRequest, NewSessionResponse
from acpio.session import SessionMessage, TurnEnded, build_session, build_session_from
from acpio.transports import Channel

from ._support import TIMEOUT, notes_server

SCRIPT = 'mcp notes add {"a": 2, "b": 40}\nmcp notes fail\nmcp nowhere add'


async def _tool_call_texts(
    cx: Connection, cwd: Path, builder_extra: Any = None
) -> list[tuple[str, list[str]]]:
    """Initialize, open a session (with ``builder_extra``'s servers), run SCRIPT; each tool call's end."""
    await cx.send_request(InitializeRequest(protocol_version=1))
    builder = build_session(cx, cwd)
    if builder_extra is not None:
        builder = builder.with_mcp_server(builder_extra)
    ended: list[tuple[str, list[str]]] = []
    async with await builder.start_session() as session:
        session.send_prompt(SCRIPT)
        while True:
            message = await session.read_update()
            if isinstance(message, TurnEnded):
                break
            assert isinstance(message, SessionMessage)
            update = message.dispatch.params["update"]  # type: ignore[index,call-overload]
            if update["sessionUpdate"] == "tool_call_update" and update.get("status") in (
                "completed",
                "failed",
            ):
                texts = [block["content"]["text"] for block in update.get("content", [])]
                ended.append((update["status"], texts))
    return ended


def _check(ended: list[tuple[str, list[str]]]) -> None:
    assert ended[0] == ("completed", ["tools: add, fail, slow", "42"])
    assert ended[1][0] == "failed"  # the tool raised: an MCP result with isError
    assert ended[2][0] == "failed"
    assert "No MCP server named 'nowhere'" in ended[2][1][0]


async def _run(chain_or_agent: Any, main: Any) -> Any:
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain_or_agent.serve(ours))
    try:
        async with asyncio.timeout(TIMEOUT):
            return await Client.builder(unstable=True).connect_with(theirs, main)
    finally:
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await served


async def test_testy_calls_a_tool_its_client_serves(tmp_path: Path) -> None:
    async def main(cx: Connection) -> Any:
        return await _tool_call_texts(cx, tmp_path, McpServer(notes_server()))

    _check(await _run(testy_agent(TestyOptions(mcp_acp=True)), main))


def _tools_proxy() -> Builder:
    """The seed's pattern: a proxy gives every new session the notes server, then steps aside."""
    app = Proxy.builder(name="notes-proxy", unstable=True)

    @app.on_request(peer=Client)
    async def new_session(
        req: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection
    ) -> None:
        builder = build_session_from(cx, req).with_mcp_server(McpServer(notes_server()))
        cx.spawn(builder.start_session_proxy(responder))

    return app


async def test_a_proxy_gives_testy_a_tool_through_the_conductor(tmp_path: Path) -> None:
    chain = Chain.agent("conductor", [_tools_proxy(), testy_agent(TestyOptions(mcp_acp=True))])

    async def main(cx: Connection) -> Any:
        return await _tool_call_texts(cx, tmp_path)

    _check(await _run(chain, main))


async def test_a_proxy_attaches_one_server_to_every_session_of_its_connection(tmp_path: Path) -> None:
    proxy = Proxy.builder(name="notes-everywhere", unstable=True)
    McpServer(notes_server()).attach_to_proxy(proxy)
    chain = Chain.agent("conductor", [proxy, testy_agent(TestyOptions(mcp_acp=True))])

    async def main(cx: Connection) -> Any:
        first = await _tool_call_texts(cx, tmp_path)
        return first, await _tool_call_texts_again(cx, tmp_path)

    first, second = await _run(chain, main)
    _check(first)
    _check(second)


async def _tool_call_texts_again(cx: Connection, cwd: Path) -> list[tuple[str, list[str]]]:
    """SCRIPT in a second session of the same connection (no second initialize)."""
    ended: list[tuple[str, list[str]]] = []
    async with await build_session(cx, cwd).start_session() as session:
        session.send_prompt(SCRIPT)
        while isinstance(message := await session.read_update(), SessionMessage):
            update = message.dispatch.params["update"]  # type: ignore[index,call-overload]
            if update["sessionUpdate"] == "tool_call_update" and update.get("status") in (
                "completed",
                "failed",
            ):
                ended.append(
                    (update["status"], [block["content"]["text"] for block in update.get("content", [])])
                )
    return ended
