"""A conductor chain carries an ACP v2 session end to end: proxies, ``Forward``, MCP-over-ACP, traces.

A raw v2 client (:mod:`tests.agents._testy_v2_support`) drives a chain whose agent is
``acpio testy --protocol 2`` in a real subprocess: through the example arrow proxy (v1 and v2
handlers: it quotes v2 text, and everything it does not touch arrives whole), through the MCP
bridge (which advertises ``acp`` in v2's object-shaped capabilities), and with a trace whose
viewer rows say what v2 did.
"""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acpio.conductor import Chain, ComponentSpec
from acpio.jsonrpc import Builder
from acpio.trace import read_trace
from acpio.trace.show import build_rows
from acpio.transports import Channel
from tests.agents._testy_v2_support import TIMEOUT, V2Peer
from tests.conductor._support import arrow_proxy

TESTY_V2 = f"{sys.executable} -m acpio testy --protocol 2"


@asynccontextmanager
async def v2_chain(
    *proxies: Builder | str, trace: Path | None = None, agent: ComponentSpec = TESTY_V2
) -> AsyncIterator[V2Peer]:
    """A conductor over ``proxies`` and ``agent`` (testy v2's process); a raw v2 client on its client end."""
    chain = Chain("conductor", "agent", [*proxies, agent])
    if trace is not None:
        chain.trace_to(trace)
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    peer = V2Peer(theirs, timeout=TIMEOUT)
    try:
        yield peer
    finally:
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await served


def cancel_work(peer: V2Peer, session: str) -> Any:
    """An ``on_message`` that cancels the first cancellable tool call (``tool_call/cancel``)."""

    def on_message(message: dict[str, Any]) -> None:
        update = message.get("params", {}).get("update", {})
        if update.get("capabilities") == {"cancel": {}} and update.get("sessionUpdate") == "tool_call_update":
            peer.request("tool_call/cancel", {"sessionId": session, "toolCallId": update["toolCallId"]})

    return on_message


SCRIPT = "echo hi there\nwrite made.txt made\\n\nrun echo out\nwork 30 a long task\necho done"


async def test_a_v2_session_goes_through_a_proxy_whole_and_the_proxy_quotes_v2_text(tmp_path: Path) -> None:
    async with v2_chain(arrow_proxy()) as peer:
        answer = await peer.initialize()
        session = await peer.new_session(str(tmp_path))
        turn = await peer.turn(session, SCRIPT, on_message=cancel_work(peer, session))
    assert answer["protocolVersion"] == 2
    assert answer["capabilities"]["session"]["mcp"] == {"stdio": {}, "http": {}}
    assert turn.text() == "> hi there\n> out\n> exit status 0\n> work: a long task was cancelled\n> done\n"
    assert {chunk["messageId"] for chunk in turn.of("agent_message_chunk")} == {"agent-1"}
    diff = next(u["content"][0] for u in turn.of("tool_call_update") if u.get("status") == "completed")
    assert diff["type"] == "diff"  # v2's structured diff, not dropped by a v1 reading of the update
    assert diff["changes"] == [{"operation": "add", "path": str(tmp_path / "made.txt"), "fileType": "text"}]
    assert diff["patch"]["text"].endswith("+made\n")
    terminal = turn.of("terminal_update")
    assert terminal[0]["command"] == "echo out"
    assert terminal[-1]["exitStatus"] == {"exitCode": 0}
    assert base64.b64decode(turn.of("terminal_output_chunk")[0]["data"]) == b"out\n"
    cancelled = [u for u in turn.of("tool_call_update") if u.get("status") == "cancelled"]
    assert [u["toolCallId"] for u in cancelled] == ["tool-3"]  # tool_call/cancel crossed the proxy
    assert [u["state"] for u in turn.of("state_update")] == ["running", "idle"]


async def test_the_mcp_bridge_advertises_acp_in_v2_capabilities_and_rewrites_acp_servers(
    tmp_path: Path,
) -> None:
    bridge = f"{sys.executable} -m acpio.mcp.bridge"
    async with v2_chain(bridge) as peer:
        answer = await peer.initialize()
        created = await peer.call(
            "session/new",
            {"cwd": str(tmp_path), "mcpServers": [{"type": "acp", "name": "notes", "serverId": "notes-1"}]},
        )
    assert answer["capabilities"]["session"]["mcp"] == {"stdio": {}, "http": {}, "acp": {}}
    # testy v2 refuses acp servers (it does not advertise them): the bridge made it an http one.
    assert created["result"]["sessionId"].startswith("testy-")


async def test_a_v2_trace_records_the_version_and_shows_v2_updates(tmp_path: Path) -> None:
    trace = tmp_path / "v2.jsons"
    async with v2_chain(arrow_proxy(), trace=trace) as peer:
        await peer.initialize()
        session = await peer.new_session(str(tmp_path))
        await peer.turn(session, SCRIPT, on_message=cancel_work(peer, session))
    labels = [(row.from_lane, row.to_lane, row.method, row.label) for row in build_rows(read_trace(trace))]
    assert ("Agent", "Proxy(0)", "initialize", f"protocol v2 acpio-testy {_testy_version()}") in labels
    assert ("Proxy(0)", "Client", "session/prompt", "accepted user-0") in labels
    edge = {label for source, target, _, label in labels if target == "Client"}
    assert {"state_update running", "state_update idle end_turn"} <= edge
    assert "tool_call_update a long task cancelled" in edge  # the title, from the call's first report
    assert 'terminal_update terminal-1 $ echo out "out\\n" exit 0' in edge  # with its output snapshot
    assert 'terminal_output_chunk terminal-1 $ echo out "out\\n"' in edge
    assert ("Client", "Proxy(0)", "tool_call/cancel", "tool-3 a long task") in labels


def _testy_version() -> str:
    from acpio import __version__

    return __version__
