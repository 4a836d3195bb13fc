"""A small ACP agent written for one test: its turn is a few lines of Python the test gives.

``agent_script(tmp_path, body)`` writes the agent into ``tmp_path`` and returns its command. The
body runs as the turn, with ``cx`` (the connection), ``say(cx, text)`` (an agent message chunk),
``update(cx, {...})`` (any session update), ``cancelled`` (an event set by ``session/cancel``),
``asyncio``, ``sys``, ``Path``, ``acp`` (the schema) and ``RequestError`` at hand; raising a
``RequestError`` answers the prompt with it, otherwise the turn ends with ``end_turn``. The
session id is ``s-1``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

#: An agent built on acpio's Agent builder; the body of its turn is pasted in at ``%s``.
AGENT_TEMPLATE = """
import asyncio, sys
from pathlib import Path
from acpio import Agent
from acpio import schema as acp
from acpio.errors import RequestError
from acpio.transports import Stdio

app = Agent.builder(name="scripted")
cancelled = asyncio.Event()

@app.on_request
async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
    return acp.InitializeResponse(protocol_version=1)

@app.on_request
async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id="s-1")

@app.on_notification
async def cancel(note: acp.CancelNotification) -> None:
    cancelled.set()

def update(cx, params):
    cx.send_notification(acp.SessionNotification.model_validate({"sessionId": "s-1", "update": params}))

def say(cx, text):
    update(cx, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

@app.on_request
async def prompt(req: acp.PromptRequest, responder, cx) -> None:
    async def turn() -> None:
        try:
%s
        except RequestError as exc:
            responder.respond_with_error(exc)
            return
        responder.respond(acp.PromptResponse(stop_reason=acp.StopReason.END_TURN))
    cx.spawn(turn)

asyncio.run(app.serve(Stdio()))
"""


def agent_script(tmp_path: Path, body: str) -> str:
    """The command of an agent whose turn runs ``body`` (Python, at the turn's indentation)."""
    path = tmp_path / "agent.py"
    indented = "\n".join("            " + line for line in body.strip().splitlines())
    path.write_text(AGENT_TEMPLATE % indented)
    return shlex.join([sys.executable, str(path)])
