"""The SDK's tool items as names and arguments, the apply_patch projection, and the stop reasons."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acpio.app.projections import Projections
from acpio.frameworks.openai_agents import openai_agent_app
from acpio.frameworks.openai_agents.items import ApplyPatch, describe, runs_remotely
from acpio.testing import serving

from ._support import NO_TRACES, TIMEOUT, coder, open_session, send_prompt
from .responses_wire import FunctionCall, ResponsesWire, response_stream


def test_each_kind_of_tool_item_has_a_name_and_arguments_the_projections_know() -> None:
    shell = {
        "type": "shell_call",
        "call_id": "c1",
        "action": {"commands": ["ls", "pwd"]},
        "status": "completed",
    }
    assert describe(shell) == ("shell", {"commands": ["ls", "pwd"]})
    local = {"type": "local_shell_call", "call_id": "c2", "action": {"type": "exec", "command": ["make"]}}
    assert describe(local) == ("local_shell", {"command": ["make"]})
    code = {"type": "code_interpreter_call", "id": "ci", "code": "print(1)", "container_id": "x"}
    assert describe(code) == ("code_interpreter", {"code": "print(1)", "container_id": "x"})
    function = {"type": "function_call", "call_id": "c3", "name": "grep", "arguments": '{"pattern": "TODO"}'}
    assert describe(function) == ("grep", {"pattern": "TODO"})
    assert runs_remotely(code)
    assert not runs_remotely(function)
    assert not runs_remotely(shell)
    views = Projections()
    assert views.view(*describe(shell), Path("/")).title == "Run `ls; pwd`"
    assert views.view(*describe(code), Path("/")).kind == "execute"


def test_an_apply_patch_operation_is_shown_as_the_files_diff(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    update = {"type": "update_file", "path": "a.py", "diff": "@@\n x = 1\n-y = 2\n+y = 3\n"}
    view = ApplyPatch().view("apply_patch", update, tmp_path)
    assert (view.title, view.kind) == ("Edit a.py", "edit")
    assert view.diff == (tmp_path / "a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n")
    create = ApplyPatch().view(
        "apply_patch", {"type": "create_file", "path": "b.py", "diff": "+z = 0\n"}, tmp_path
    )
    assert create.diff == (tmp_path / "b.py", None, "z = 0")  # as the SDK's apply_diff makes it
    delete = ApplyPatch().view("apply_patch", {"type": "delete_file", "path": "a.py"}, tmp_path)
    assert (delete.kind, delete.locations) == ("delete", (tmp_path / "a.py",))


async def test_too_many_model_calls_end_the_turn_max_turn_requests(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    arguments = json.dumps({"path": str(tmp_path / "x.txt"), "content": "x"})
    wire.respond(response_stream(calls=[FunctionCall("call_1", "write_file", arguments)]))
    app = openai_agent_app(coder(wire), run_config=NO_TRACES, max_turns=1)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        answer: dict[str, Any] = await peer.response_to(send_prompt(peer, session, "write"))
    assert answer["result"] == {"stopReason": "max_turn_requests"}
    assert len(wire.requests_made) == 1


def test_without_the_sdk_the_adapter_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "agents" else found(name, *a)
    )
    monkeypatch.delitem(sys.modules, "acpio.frameworks.openai_agents")
    with pytest.raises(ImportError, match=r"pip install 'acpio\[openai-agents\]'"):
        importlib.import_module("acpio.frameworks.openai_agents")
