"""AgentClient drives the reference agent (``acpio agent --offline``) as a process, over ACP v1 and v2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acpio.client import AgentClient, Outcome
from acpio.client.permissions import pick_option
from acpio.schema import CancelledPermissionOutcome, RequestPermissionRequest, SelectedPermissionOutcome

PROMPT = "read notes.txt\nedit notes.txt: - buy milk => - buy milk\\n- try acpio\nrun echo hi"


class ByKind:
    """Allows edits and commands by the tool call's kind, refuses anything else; records the kinds seen."""

    def __init__(self) -> None:
        self.kinds: list[str | None] = []

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        kind = request.tool_call.kind
        self.kinds.append(None if kind is None else str(kind))
        wanted = ("allow_once",) if kind in ("edit", "execute") else ("reject_once",)
        option = pick_option(request.options, wanted)
        return (
            SelectedPermissionOutcome(option_id=option.option_id) if option else CancelledPermissionOutcome()
        )


@pytest.mark.parametrize("protocol", [1, 2])
async def test_the_reference_agent_edits_and_runs_under_a_kind_policy(tmp_path: Path, protocol: int) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("# Notes\n- buy milk\n")
    command = [
        sys.executable,
        "-m",
        "acpio",
        "agent",
        "--offline",
        "--store",
        "memory:",
        "--protocol",
        str(protocol),
    ]
    policy = ByKind()
    async with AgentClient(command, cwd=project, permissions=policy, env={"HOME": str(tmp_path)}) as client:
        session = await client.new_session()
        result = await session.prompt(PROMPT)

    assert result.ok, (result.error, result.stderr_tail)
    # The agent asks about its edit with the call's id and title only: the kind is the tool_call's.
    assert policy.kinds[:2] == ["edit", "execute"]
    assert (project / "notes.txt").read_text() == "# Notes\n- buy milk\n- try acpio\n"
    assert [call.kind for call in result.tool_calls] == ["read", "edit", "execute"]
    assert all(call.status == "completed" for call in result.tool_calls)
    [write] = result.files_written
    assert write.path == str(project / "notes.txt")
    assert "+- try acpio" in (write.patch or "")
    assert write.written_by == ("client" if protocol == 1 else "agent")
    [run] = result.terminals
    assert run.output == "hi\n"
    assert run.exit_code == 0
    assert run.owner == ("client" if protocol == 1 else "agent")
    assert result.usage is not None
    assert result.usage.context_size
