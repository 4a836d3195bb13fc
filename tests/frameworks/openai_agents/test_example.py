"""examples/openai_agents_agent.py in real processes under ``acpio prompt``: a diff, an approval, then
the session loaded by a new agent process from SQLite with its history, and Ctrl-C ending ``cancelled``.

The agent's model is the SDK's default client, pointed at the wire server by ``OPENAI_BASE_URL``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from .responses_wire import FunctionCall, ResponsesWire, response_stream

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openai_agents_agent.py"
AGENT = f"{sys.executable} {EXAMPLE}"
#: The agent imports the Agents SDK, which takes seconds on a loaded machine.
WAIT = 90


def environment(wire: ResponsesWire) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": wire.base_url,
        "OPENAI_API_KEY": "sk-wire",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }


def spawn(wire: ResponsesWire, cwd: Path, *args: str) -> Any:
    command = [sys.executable, "-m", "acpio", "prompt", "--init-timeout", str(WAIT), "--agent", AGENT, *args]
    return asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=environment(wire),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # Ctrl-C goes to acpio prompt alone, as a terminal's would
    )


async def read_until(stream: asyncio.StreamReader, marker: str) -> str:
    """What ``stream`` gives up to and including ``marker``."""
    got = await asyncio.wait_for(stream.readuntil(marker.encode()), WAIT)
    return got.decode()


@pytest.mark.slow  # two agent processes, each importing the Agents SDK
@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_a_diff_an_approval_a_new_process_loading_the_session_and_ctrl_c(
    wire: ResponsesWire, tmp_path: Path, protocol: str
) -> None:
    (tmp_path / "todo.txt").write_text("old\n")
    note = json.dumps({"path": "notes.md", "content": "- buy milk\n"})
    held = response_stream(text="You asked", hold=True)
    wire.respond(
        response_stream(text="Noting.", calls=[FunctionCall("call_w", "write_file", note)]),
        response_stream(calls=[FunctionCall("call_d", "delete_file", json.dumps({"path": "todo.txt"}))]),
        response_stream(text="Noted, and todo.txt is gone."),
        held,
    )
    first = await spawn(wire, tmp_path, "--protocol", protocol, "--allow", "Note: buy milk; delete todo.txt")
    raw_out, raw_err = await asyncio.wait_for(first.communicate(), WAIT)
    out, err = raw_out.decode(), raw_err.decode()
    assert first.returncode == 0, err
    diff = f"    --- /dev/null\n    +++ {tmp_path / 'notes.md'}\n    @@ -0,0 +1 @@\n    +- buy milk\n"
    if protocol == "1":
        assert f"[completed] Edit notes.md (edit)\n{diff}" in out
        assert "[permission] Delete todo.txt: Allow (allow)\n[completed] Delete todo.txt (delete)" in out
        assert out.endswith(
            "Noted, and todo.txt is gone.\n[usage: 39 of 128000 tokens]\n[stop reason: end_turn]\n"
        )
    else:  # v2: the diff as a git patch, the session's states; acpio prompt does not show v2 usage
        assert "[completed] Edit notes.md (edit)\n    diff --git " in out
        assert f"    new file mode 100644\n{diff}" in out
        assert "[waiting for you]\n[permission] Delete todo.txt: Allow (allow)\n[working]\n" in out
        assert "[completed] Delete todo.txt (delete)" in out
        assert out.endswith("Noted, and todo.txt is gone.\n[stop reason: end_turn]\n")
    assert (tmp_path / "notes.md").read_text() == "- buy milk\n"
    assert not (tmp_path / "todo.txt").exists()
    found = re.search(r"session (sess_\w+)", err)
    assert found is not None, err

    second = await spawn(wire, tmp_path, "--protocol", protocol, "--session", found[1], "What did I ask?")
    try:
        assert second.stdout is not None
        if protocol == "1":  # session/load replays the history; on v2 acpio prompt resumes it without
            replay = await read_until(second.stdout, "--- end of history ---\n")
            assert "you> Note: buy milk; delete todo.txt\nNoting." in replay
            assert "[completed] Edit notes.md (edit)" in replay
        await read_until(second.stdout, "You asked")  # the model's call is under way: Ctrl-C
        second.send_signal(signal.SIGINT)
        rest, raw_err = await asyncio.wait_for(second.communicate(), WAIT)
        assert second.returncode == 130, raw_err.decode()
        assert rest.decode().rstrip().endswith("[stop reason: cancelled]")
        await asyncio.wait_for(held.closed.wait(), WAIT)  # the agent hung up its model call
    finally:
        if second.returncode is None:
            os.killpg(second.pid, signal.SIGKILL)
            await second.wait()
    model_saw = wire.requests_made[-1].body["input"]
    assert [item.get("role") or item["type"] for item in model_saw] == [
        "user",
        "assistant",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]
    assert model_saw[3] == {"type": "function_call_output", "call_id": "call_w", "output": "Wrote notes.md"}


def test_the_docs_show_the_example_as_it_is() -> None:
    page = EXAMPLE.parents[1] / "docs" / "frameworks" / "openai-agents.md"
    shown = page.read_text().split("```python\n", 1)[1].split("```\n", 1)[0]
    assert shown == EXAMPLE.read_text().split('"""', 2)[2].lstrip("\n")
