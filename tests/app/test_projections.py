"""The projection registry: a tool's name and arguments shown as a diff, a read, a command, a search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.app.projections import (
    Edit,
    Execute,
    Fetch,
    Move,
    Projection,
    Projections,
    Read,
    Search,
    Titled,
    default_projections,
)
from acpio.testing import serving

from ._wire import open_session, send_prompt

TIMEOUT = 10


def test_an_edit_with_the_whole_text_is_a_diff_against_the_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("old\n")
    projections = Projections()
    projections.declare("save_note", Edit(path="filename", text="body"))
    view = projections.view("save_note", {"filename": "notes.md", "body": "new\n"}, tmp_path)
    assert (view.title, view.kind) == ("Edit notes.md", "edit")
    assert view.locations == (tmp_path / "notes.md",)
    assert view.diff == (tmp_path / "notes.md", "old\n", "new\n")


def test_a_new_file_has_no_old_text_and_a_replace_edit_applies_to_the_file(tmp_path: Path) -> None:
    projections = Projections()
    assert projections.view("write_file", '{"file_path": "a.py", "content": "x = 1\\n"}', tmp_path).diff == (
        tmp_path / "a.py",
        None,
        "x = 1\n",
    )
    (tmp_path / "b.py").write_text("a = 1\na = 1\n")
    once = projections.view("edit_file", {"path": "b.py", "old_string": "a", "new_string": "b"}, tmp_path)
    assert once.diff == (tmp_path / "b.py", "a = 1\na = 1\n", "b = 1\na = 1\n")
    every = {"path": "b.py", "old_string": "a", "new_string": "b", "replace_all": True}
    assert projections.view("edit_file", every, tmp_path).diff == (
        tmp_path / "b.py",
        "a = 1\na = 1\n",
        "b = 1\nb = 1\n",
    )
    missing = projections.view("edit_file", {"path": "b.py", "old_string": "zz", "new_string": "y"}, tmp_path)
    assert (missing.kind, missing.diff) == ("edit", None)


def test_a_path_outside_the_session_root_is_neither_read_nor_located(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("do not read me")
    view = Projections().view("edit_file", {"path": "../secret.txt", "content": "x"}, root)
    assert (view.title, view.kind, view.locations, view.diff) == ("Edit ../secret.txt", "edit", (), None)


def test_reads_commands_fetches_searches_moves_and_titles(tmp_path: Path) -> None:
    projections = Projections(defaults=False)
    projections.declare("cat", Read(path="file"))
    projections.declare("sh", Execute(command="script"))
    projections.declare("get", Fetch())
    projections.declare("find", Search())
    projections.declare("mv", Move())
    projections.declare("plan", Titled("Plan {goal}", "think"))
    assert projections.view("cat", {"file": "a.txt"}, tmp_path).locations == (tmp_path / "a.txt",)
    run = projections.view("sh", {"script": ["make", "make test"]}, tmp_path)
    assert (run.title, run.kind, run.command) == ("Run `make; make test`", "execute", "make; make test")
    assert (
        projections.view("get", {"url": "https://example.org"}, tmp_path).title == "Fetch https://example.org"
    )
    assert projections.view("find", {"pattern": "TODO"}, tmp_path).kind == "search"
    move = projections.view("mv", {"source": "a", "destination": "b"}, tmp_path)
    assert (move.title, move.locations) == ("Move a to b", (tmp_path / "a", tmp_path / "b"))
    assert projections.view("plan", {"goal": "ship"}, tmp_path).title == "Plan ship"
    assert projections.view("plan", {}, tmp_path).title == "plan"  # the argument is missing
    unknown = projections.view("lookup", "not json", tmp_path)
    assert (unknown.title, unknown.kind) == ("lookup", "other")


def test_the_defaults_cover_the_frameworks_tools_and_a_declaration_must_be_a_projection() -> None:
    defaults = default_projections()
    for name, kind in [
        ("web_search", Search),
        ("file_search", Search),
        ("code_interpreter", Execute),
        ("local_shell", Execute),
        ("shell", Execute),
        ("terminal", Execute),
        ("read_file", Read),
        ("write_file", Edit),
        ("edit_file", Edit),
        ("requests_get", Fetch),
        ("tavily_search", Search),
    ]:
        assert isinstance(defaults[name], kind), name
    assert "web_search" in Projections()
    assert "web_search" not in Projections(defaults=False)
    with pytest.raises(TypeError, match="takes a Projection"):
        Projections().declare("x", "edit")  # type: ignore[arg-type]
    assert Projection().output("text") == "text"


def projected_app(projections: Projections) -> AgentApp:
    """A hand-written app whose 'model' asks for a file edit and a command, shown by the registry."""
    app = AgentApp("projected")

    @app.prompt
    async def answer(turn: Turn) -> StopReasonName:
        arguments = {"filename": "notes.md", "body": "# Notes\n- try acpio\n"}
        async with projections.tool_call(turn, "save_note", arguments, meta={"tool": "save_note"}) as call:
            (turn.cwd / "notes.md").write_text(arguments["body"])
            await projections.show_output(call, "save_note", "saved")
        async with projections.tool_call(turn, "bash", {"command": "ls"}) as call:
            await projections.show_output(call, "bash", "notes.md\n")
        return "end_turn"

    return app


async def test_an_agent_app_shows_its_tools_through_the_registry(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n")
    projections = Projections()
    projections.declare("save_note", Edit(path="filename", text="body"))
    async with serving(projected_app(projections).builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, {})
        seen: list[Any] = []
        assert (await peer.response_to(send_prompt(peer, session, "go"), seen))["result"] == {
            "stopReason": "end_turn"
        }
    updates = [m["params"]["update"] for m in seen]
    edit, diff, done, run, ran = updates
    assert edit["sessionUpdate"] == "tool_call"
    assert (edit["title"], edit["kind"], edit["status"]) == ("Edit notes.md", "edit", "pending")
    assert edit["locations"] == [{"path": str(tmp_path / "notes.md")}]
    assert edit["rawInput"] == {"filename": "notes.md", "body": "# Notes\n- try acpio\n"}
    assert edit["_meta"] == {"tool": "save_note"}
    assert diff["content"] == [
        {
            "type": "diff",
            "path": str(tmp_path / "notes.md"),
            "oldText": "# Notes\n",
            "newText": "# Notes\n- try acpio\n",
        }
    ]
    assert (done["status"], done["rawOutput"], "content" in done) == ("completed", "saved", False)
    assert (run["title"], run["kind"]) == ("Run `ls`", "execute")
    assert ran["status"] == "completed"
    assert ran["content"] == [
        {"type": "content", "content": {"type": "text", "text": "```console\nnotes.md\n```"}}
    ]
