"""What an ``AgentApp`` agent loads before it answers ``initialize`` and ``session/new``.

Counted in a fresh interpreter (the test process has loaded everything long ago): a process that
serves one client on stdio, as an editor starts it. Importing pydantic costs a process about as
much as the rest of its start-up, and creating a model class about half a millisecond: an app whose
handshake answers the library fills in writes them from the raw params (``acpio.app.handshake``)
and loads neither, nor the client side (``acpio.session``, ``acpio.client``). Nor does a plain
text prompt whose turn streams with ``say`` (``acpio.app.raw_turn``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .._stdio_script import answer_on_stdio, answer_to, initialize_and_new_session

AGENT = """
import json, sys, uuid
from acpio.app import AgentApp, StopReasonName, Turn

uuid.uuid4 = lambda: uuid.UUID(int=1)  # the session's id, for the set_mode frame written beforehand
app = AgentApp("startup", version="1.0", title="Start-up", mcp=True)
app.mode("ask", "Ask", description="Asks first")
app.mode("code", "Code")
app.select_option("model", "Model", {"small": "Small", "big": "Big"}, default="big", category="model")
app.command("review", "Review the changes", hint="a path")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    for word in turn.text.split():
        await turn.say(word)
    return "max_tokens" if turn.command is None else "refusal"


app.run()
pydantic = "pydantic" in sys.modules
models = sys.modules.get("acpio.schema._models")
loaded = sorted(m for m in ("acpio.session", "acpio.client", "acpio.app.observers") if m in sys.modules)
created = sorted(models._lazy.created()) if models is not None else []
print(json.dumps({"pydantic": pydantic, "created": created, "loaded": loaded}), file=sys.stderr)
"""
SESSION_ID = f"sess_{1:032x}"


def test_an_app_answers_its_handshake_without_importing_pydantic(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    set_mode = {"sessionId": SESSION_ID, "modeId": "code"}
    frames = [
        *initialize_and_new_session(tmp_path),
        {"jsonrpc": "2.0", "id": 3, "method": "session/set_mode", "params": set_mode},
    ]
    answers, report = answer_on_stdio(script, frames)
    assert answers[0] == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"promptCapabilities": {}, "mcpCapabilities": {"http": True, "acp": True}},
            "agentInfo": {"name": "startup", "title": "Start-up", "version": "1.0"},
        },
    }
    modes = [{"id": "ask", "name": "Ask", "description": "Asks first"}, {"id": "code", "name": "Code"}]
    choices = [{"value": "small", "name": "Small"}, {"value": "big", "name": "Big"}]
    option = {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "big"}
    assert answers[1:] == [
        {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {
                "sessionId": SESSION_ID,
                "modes": {"currentModeId": "ask", "availableModes": modes},
                "configOptions": [{**option, "options": choices}],
            },
        },
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": SESSION_ID,
                "update": {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": [
                        {"name": "review", "description": "Review the changes", "input": {"hint": "a path"}}
                    ],
                },
            },
        },
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ]
    found = json.loads(report)
    # the answers are written from the raw params: no model class, not even pydantic, is loaded
    assert found == {"pydantic": False, "created": [], "loaded": []}


def test_an_app_streams_a_plain_prompt_without_importing_pydantic(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    blocks = [{"type": "text", "text": "stream two"}, {"type": "text", "text": "words"}]
    frames = [
        *initialize_and_new_session(tmp_path),
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": SESSION_ID, "prompt": blocks},
        },
        # no turn of that session runs: nothing happens, and nothing is loaded for it
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess_other"}},
    ]
    answers, report = answer_on_stdio(script, frames, until=answer_to(3))
    updates = [a["params"]["update"] for a in answers if a.get("method") == "session/update"]
    said = updates[1:]  # after the commands
    assert said == [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word}}
        for word in ("stream", "two", "words")
    ]
    assert answers[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "max_tokens"}}
    assert json.loads(report) == {"pydantic": False, "created": [], "loaded": []}


V2_AGENT = """
import json, sys, uuid
from acpio.app import AgentApp, StopReasonName, Turn

uuid.uuid4 = lambda: uuid.UUID(int=1)  # the session's id, for the prompt frame written beforehand
app = AgentApp("startup", version="1.0", protocols=PROTOCOLS)


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    await turn.say(turn.text)
    return "end_turn"


app.run()
v1 = sys.modules.get("acpio.schema._models")
created = sorted(v1._lazy.created()) if v1 is not None else []
print(json.dumps({"pydantic": "pydantic" in sys.modules, "v1 created": created}), file=sys.stderr)
"""


@pytest.mark.parametrize("protocols", [(2,), (1, 2)])
def test_an_app_serving_a_v2_client_imports_no_pydantic_and_creates_no_v1_model(
    tmp_path: Path, protocols: tuple[int, ...]
) -> None:
    """Nor pydantic, up to the end of a plain text turn: the router takes a plain ``initialize``
    without the models, v2's answers are JSON, and so is the turn of a text prompt.

    Its sessions live in a store; the store's v1 handlers are for v1 clients, and none came.

    Importing and registering them (an app serving both versions made its v1 builder before any
    client came) created 116 v1 model names: with the router's typed check, half such an app's
    start-up.
    """
    script = tmp_path / "agent.py"
    script.write_text(V2_AGENT.replace("PROTOCOLS", repr(protocols)))
    initialize = {"protocolVersion": 2, "info": {"name": "editor", "version": "1"}, "capabilities": {}}
    prompt = {"sessionId": SESSION_ID, "prompt": [{"type": "text", "text": "hello"}]}
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path)}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt},
    ]
    answers, report = answer_on_stdio(script, frames, until=_idle)
    assert answers[0]["result"]["protocolVersion"] == 2
    assert answers[1]["result"]["sessionId"] == SESSION_ID
    updates = [a["params"]["update"] for a in answers if a.get("method") == "session/update"]
    assert [u["sessionUpdate"] for u in updates] == [
        "user_message",
        "state_update",
        "agent_message_chunk",
        "state_update",
    ]
    assert updates[2]["content"] == {"type": "text", "text": "hello"}
    assert updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    assert json.loads(report) == {"pydantic": False, "v1 created": []}


def _idle(line: dict[str, Any]) -> bool:
    return line.get("params", {}).get("update", {}).get("state") == "idle"


STORED_AGENT = """
import json, sys
from acpio.app import AgentApp, StopReasonName, Turn

app = AgentApp("startup", store="memory:")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    return "end_turn"


app.run()
print(json.dumps({"pydantic": "pydantic" in sys.modules}), file=sys.stderr)
"""


def test_an_app_with_a_store_answers_its_handshake_without_importing_pydantic(tmp_path: Path) -> None:
    """The store's capabilities and its new session's answer are written as JSON, and its other
    handlers made on their methods' first messages."""
    script = tmp_path / "agent.py"
    script.write_text(STORED_AGENT)
    answers, report = answer_on_stdio(script, initialize_and_new_session(tmp_path))
    capabilities = answers[0]["result"]["agentCapabilities"]
    assert capabilities["sessionCapabilities"] == {"list": {}, "delete": {}, "resume": {}, "close": {}}
    assert answers[1]["result"]["sessionId"].startswith("sess_")
    assert json.loads(report) == {"pydantic": False}
