"""The engine loads pydantic on first use: a JSON-RPC peer whose handlers take raw messages never imports it.

Checked in a fresh interpreter serving a client on stdio: importing pydantic costs a process about
as much as the rest of its start-up. (``acpio.schema``'s package and method table load without
it too: an ``AgentApp`` answering its handshake, ``tests/app/test_app_startup.py``.)
"""

from __future__ import annotations

from pathlib import Path

from .._stdio_script import answer_on_stdio

AGENT = """
import sys
from acpio.jsonrpc import Connection, Dispatch, RequestDispatch, Unhandled, UntypedRole
from acpio.transports import Stdio
import acpio

app = UntypedRole.builder(name="raw")
ANSWERS = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "s1"}}


@app.on_dispatch
async def answer(message: Dispatch, cx: Connection) -> Unhandled | None:
    if isinstance(message, RequestDispatch) and message.method in ANSWERS:
        message.responder.respond(ANSWERS[message.method])
        return None
    return Unhandled(message)


acpio.run(app.serve(Stdio()))
print(sorted(m for m in ("pydantic", "pydantic_core", "acpio.schema") if m in sys.modules), file=sys.stderr)
"""


def test_a_peer_with_raw_handlers_answers_without_importing_pydantic(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    answers, loaded = answer_on_stdio(
        script,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": "s1", "prompt": []},
            },
        ],
    )
    assert answers == [
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {"code": -32601, "message": "Method not found", "data": "session/prompt"},
        },
    ]
    assert loaded == "[]"
