"""What an ``AgentApp`` agent loads before it answers ``initialize`` and ``session/new``.

Counted in a fresh interpreter (the test process has loaded everything long ago): a process that
serves one client on stdio, as an editor starts it. Creating a model class costs about half a
millisecond; the app should create the classes of the messages it reads and answers, not those of
the updates a turn may send later or of the client side (``acpio.session``, ``acpio.client``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .._stdio_script import answer_on_stdio, initialize_and_new_session

AGENT = """
import json, sys
from acpio.app import AgentApp, StopReasonName, Turn

app = AgentApp("startup", version="1.0")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    await turn.say("hi")
    return "end_turn"


app.run()
import acpio.schema._models as models
loaded = sorted(m for m in ("acpio.session", "acpio.client", "acpio.app.observers") if m in sys.modules)
print(json.dumps({"created": sorted(models._lazy.created()), "loaded": loaded}), file=sys.stderr)
"""


def test_an_app_answering_initialize_and_session_new_creates_only_what_those_need(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    answers, report = answer_on_stdio(script, initialize_and_new_session(tmp_path))
    assert answers[0] == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"promptCapabilities": {}},
            "agentInfo": {"name": "startup", "version": "1.0"},
        },
    }
    assert answers[1]["id"] == 2
    assert answers[1]["result"]["sessionId"].startswith("sess_")
    found = json.loads(report)
    # the client side of a session, and attaching (unstable, off here), are not loaded
    assert found["loaded"] == []
    created = set(found["created"])
    # a turn's updates are created by the first turn that sends one, not at start-up
    assert not created & {"SessionNotification", "SessionUpdate", "ToolCall", "RequestPermissionRequest"}
    # the closures of InitializeRequest/Response, NewSessionRequest/Response, PromptRequest/Response
    # and CancelNotification: 72 today, of the 181 the app created at import before
    assert len(created) <= 80, sorted(created)
