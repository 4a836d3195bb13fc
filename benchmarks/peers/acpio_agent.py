"""The benchmark agent on acpio, in the builder style: typed handlers that take the generated models.

It answers ``initialize``, ``session/new`` and ``session/set_mode`` (``{}``, for any mode), and a
``session/prompt`` whose first text block reads ``stream N`` with N ``agent_message_chunk`` updates, each a
fresh typed :class:`~acpio.schema.SessionNotification` followed by ``await cx.drain()`` (the documented way
to stream: the agent waits whenever its peer has more than 256 KiB unread, as the other SDKs' agents await
each send), before its ``end_turn`` answer; ``stream N B`` makes each update's text B characters long.
It runs on asyncio's event loop, as the floor does; ``acpio_uvloop_agent.py`` runs it on uvloop
(``acpio[fast]``). Each ``session/new`` gets a fresh id (``bench-1``, ``bench-2``...). Run by a client
over stdio: ``python benchmarks/peers/acpio_agent.py``; ``--listen PORT`` serves it over WebSocket and
Streamable HTTP instead (``benchmarks/remote.py``).
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

import acpio
from acpio import Agent
from acpio import schema as acp
from acpio.jsonrpc import Connection
from acpio.running import EVENT_LOOP_VARIABLE
from acpio.transports import Stdio
from acpio.versions import select_version

STREAM_PREFIX = "stream "

app = Agent.builder(name="bench-agent")
session_numbers = itertools.count(1)


@app.on_request
async def initialize(req: acp.InitializeRequest, responder: Any, cx: Connection) -> acp.InitializeResponse:
    return acp.InitializeResponse(protocol_version=select_version(req.protocol_version, (1,)))


@app.on_request
async def new_session(req: acp.NewSessionRequest, responder: Any, cx: Connection) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id=f"bench-{next(session_numbers)}")


@app.on_request
async def set_mode(
    req: acp.SetSessionModeRequest, responder: Any, cx: Connection
) -> acp.SetSessionModeResponse:
    return acp.SetSessionModeResponse()


@app.on_request
async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> acp.PromptResponse:
    count, size = requested_updates(req)
    text = "x" * size if size else "chunk"
    for _ in range(count):
        chunk = acp.AgentMessageChunk(content=acp.TextContent(text=text))
        cx.send_notification(acp.SessionNotification(session_id=req.session_id, update=chunk))
        await cx.drain()  # backpressure: returns at once until 256 KiB are unread, then waits
    return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)


def requested_updates(req: acp.PromptRequest) -> tuple[int, int]:
    """N and B from a first text block ``stream N`` or ``stream N B``; (0, 0) for any other prompt.

    B (``benchmarks/scale.py``) is the length of each update's text; 0 or none: ``"chunk"``.
    """
    first = req.prompt[0] if req.prompt else None
    if isinstance(first, acp.TextContent) and first.text.startswith(STREAM_PREFIX):
        count, _, size = first.text.removeprefix(STREAM_PREFIX).partition(" ")
        return int(count), int(size or 0)
    return 0, 0


async def listen(port: int) -> None:
    """Serve over WebSocket and Streamable HTTP on 127.0.0.1:``port`` (``benchmarks/remote.py``)."""
    from acpio.remote import Limits, RemoteServer

    limits = Limits(idle_timeout=3600, max_connections=5000)
    async with RemoteServer(app, port=port, limits=limits, uvicorn={"backlog": 4096}) as server:
        print(f"listening on {server.url}", flush=True)
        await server.wait_closed()


def run_agent(loop: str) -> None:
    """The agent's main, on the event loop ``loop`` (``asyncio`` or ``uvloop``: see :func:`acpio.run`)."""
    os.environ[EVENT_LOOP_VARIABLE] = loop
    if sys.argv[1:2] == ["--listen"]:
        acpio.run(listen(int(sys.argv[2])))
    else:
        acpio.run(app.serve(Stdio()))


if __name__ == "__main__":
    run_agent("asyncio")
