"""Running the peer programs and checking the summaries they print.

Every client in these tests (``peers/ts/client.mjs``, ``peers/official_py/client.py`` and acpio's own
:class:`~tests.interop._recording_client.RecordingClient`) records one JSON summary of a run (described in
``peers/README.md``). The checks here read that summary, so one check serves every client, and every failure
message carries the run's context: the agent's stderr, the SDK's complaints, the fatal error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "peers"
TS_AGENT = PEERS / "ts" / "agent.mjs"
TS_CLIENT = PEERS / "ts" / "client.mjs"
PY_AGENT = PEERS / "official_py" / "agent.py"
PY_CLIENT = PEERS / "official_py" / "client.py"

#: Bound on one peer run (the runs take about a second; the bound is for a stuck peer).
RUN_TIMEOUT = 90.0

#: The text of ``input.txt`` in every work directory.
INPUT_TEXT = "interop input\nsecond line\n"

#: The prompt for the peer agents' full turn (``peers/ts/agent.mjs``, ``peers/official_py/agent.py``).
PEER_PROMPT = "hello from the interop test"
#: The prompt the peer agents wait on until they are cancelled.
PEER_WAIT = "wait"

#: What ``acpio testy`` writes in the full turn (``\n`` is testy's newline escape).
TESTY_WRITTEN = "FROM TESTY\nSECOND LINE"
#: The full turn as a testy script: streamed text, a permission, a file read and write, a terminal command.
TESTY_SCRIPT = "\n".join(
    [
        "echo hello from the interop test",
        "permission Copy the input",
        "read input.txt",
        "write output.txt " + TESTY_WRITTEN.replace("\n", "\\n"),
        "run echo terminal works",
    ]
)
#: A testy script that streams one chunk and then sleeps until it is cancelled.
TESTY_WAIT = "echo waiting for cancel\nsleep 30"


def acpio_testy_command() -> list[str]:
    """``acpio testy`` run with this interpreter."""
    return [sys.executable, "-m", "acpio", "testy"]


# --- running peers -----------------------------------------------------------------------------------------


def run_program(
    argv: list[str],
    *,
    timeout: float = RUN_TIMEOUT,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a program to its end, bounded; a timeout is a test failure that shows what it printed."""
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise AssertionError(
            f"{argv[:3]}... did not finish within {timeout} s\n"
            f"stdout: {_tail(error.stdout)}\nstderr: {_tail(error.stderr)}"
        ) from None


def run_client(argv: list[str], *, timeout: float = RUN_TIMEOUT) -> dict[str, Any]:
    """Run a peer client (``client.mjs`` / ``client.py``) and return its JSON summary."""
    done = run_program(argv, timeout=timeout)
    try:
        summary: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"the peer client printed no JSON summary (exit {done.returncode})\n"
            f"stdout: {_tail(done.stdout)}\nstderr: {_tail(done.stderr)}"
        ) from None
    summary["clientStderr"] = done.stderr[-8192:]
    return summary


def client_argv(
    client: list[str],
    workdir: Path,
    agent: list[str],
    *,
    prompts: list[str],
    cancel_prompt: str | None,
    permission: str = "allow",
) -> list[str]:
    """The command line of a peer client (both take the same options)."""
    argv = [*client, "--cwd", str(workdir), "--permission", permission, "--timeout", "30"]
    for prompt in prompts:
        argv += ["--prompt", prompt]
    if cancel_prompt is not None:
        argv += ["--cancel-prompt", cancel_prompt]
    return [*argv, "--", *agent]


def _tail(text: str | bytes | None, size: int = 4000) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text[-size:]


# --- reading a summary -------------------------------------------------------------------------------------


def context(summary: dict[str, Any]) -> str:
    """What to show when a check fails: who ran, what went wrong, the stderr tails."""
    parts = [
        f"client: {summary.get('client')}",
        f"fatal: {summary.get('fatal')}",
        f"sdkErrors: {summary.get('sdkErrors')}",
        f"agentExit: {summary.get('agentExit')}",
        f"turns: {json.dumps(summary.get('turns'))[:3000]}",
        f"agent stderr: {_tail(summary.get('agentStderr'))}",
    ]
    if summary.get("clientStderr"):
        parts.append(f"client stderr: {_tail(summary.get('clientStderr'))}")
    return "\n".join(parts)


def message_text(turn: dict[str, Any]) -> str:
    """The text of a turn's ``agent_message_chunk`` updates, joined."""
    return "".join(
        update["content"].get("text", "")
        for update in turn["updates"]
        if update.get("sessionUpdate") == "agent_message_chunk"
    )


def updates_of(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """A turn's updates of one ``sessionUpdate`` kind."""
    return [update for update in turn["updates"] if update.get("sessionUpdate") == kind]


def tool_call(turn: dict[str, Any], tool_call_id: str) -> dict[str, Any]:
    """A tool call as the client would show it: its ``tool_call`` with every ``tool_call_update`` applied."""
    state: dict[str, Any] = {}
    for update in turn["updates"]:
        if update.get("toolCallId") == tool_call_id:
            state.update({key: value for key, value in update.items() if key != "sessionUpdate"})
    return state


def requests_of(summary: dict[str, Any], method: str) -> list[dict[str, Any]]:
    """The agent's requests of one method, in order."""
    return [request for request in summary["requests"] if request["method"] == method]


def check_run_clean(summary: dict[str, Any]) -> None:
    """The run got to its end, and no SDK complained about a message."""
    assert summary["fatal"] is None, context(summary)
    assert summary["sdkErrors"] == [], context(summary)
    assert summary["initialize"]["protocolVersion"] == 1, context(summary)
    assert isinstance(summary["newSession"]["sessionId"], str), context(summary)


def check_cancelled_turn(summary: dict[str, Any], first_text: str) -> None:
    """The last turn streamed ``first_text``, was cancelled by the client and ended ``cancelled``."""
    turn = summary["turns"][-1]
    assert turn["cancelled"], context(summary)
    assert turn["error"] is None, context(summary)
    assert turn["stopReason"] == "cancelled", context(summary)
    assert message_text(turn).startswith(first_text), context(summary)


# --- the peer agents' full turn ----------------------------------------------------------------------------


def check_peer_agent_turn(
    summary: dict[str, Any], workdir: Path, agent_name: str, *, process: bool = True
) -> None:
    """What every client must see of the peer agents' full turn (``peers/README.md``), and its effects.

    The effects: ``output.txt`` written in the work directory, ``echo`` run in a terminal.
    ``process=False``: the agent was a server, not the client's child process (no exit to check).
    """
    check_run_clean(summary)
    why = context(summary)
    assert summary["initialize"]["agentInfo"]["name"] == agent_name, why
    turn = summary["turns"][0]
    assert (turn["error"], turn["stopReason"]) == (None, "end_turn"), why
    terminal_said = "terminal works"
    closing = f"done: read {len(INPUT_TEXT)} chars, wrote output.txt, terminal said: {terminal_said} (exit 0)"
    assert message_text(turn) == PEER_PROMPT + closing, why
    chunks = [update["content"]["text"] for update in updates_of(turn, "agent_message_chunk")]
    assert chunks[:5] == ["hello ", "from ", "the ", "interop ", "test"], why

    methods = [request["method"] for request in summary["requests"]]
    assert methods == [
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ], why
    (permission,) = requests_of(summary, "session/request_permission")
    assert permission["params"]["toolCall"]["toolCallId"] == "edit-1", why
    assert [option["kind"] for option in permission["params"]["options"]] == ["allow_once", "reject_once"], (
        why
    )
    assert permission["answer"] == {"outcome": "selected", "optionId": "allow-once"}, why
    (read,) = requests_of(summary, "fs/read_text_file")
    assert read["params"]["path"] == str(workdir / "input.txt"), why
    (write,) = requests_of(summary, "fs/write_text_file")
    assert write["params"] == {
        "sessionId": summary["newSession"]["sessionId"],
        "path": str(workdir / "output.txt"),
        "content": INPUT_TEXT.upper(),
    }, why
    assert (workdir / "output.txt").read_text() == INPUT_TEXT.upper(), why
    (create,) = requests_of(summary, "terminal/create")
    assert (create["params"]["command"], create["params"]["args"]) == ("echo", ["terminal", "works"]), why
    (terminal,) = summary["terminals"]
    assert (terminal["exitStatus"]["exitCode"], terminal["output"]) == (0, "terminal works\n"), why

    edit = tool_call(turn, "edit-1")
    assert (edit["kind"], edit["status"]) == ("edit", "completed"), why
    (diff,) = edit["content"]
    assert (diff["type"], diff["newText"]) == ("diff", INPUT_TEXT.upper()), why
    assert (diff["path"], diff.get("oldText")) == (str(workdir / "output.txt"), None), why
    run = tool_call(turn, "run-1")
    assert (run["kind"], run["status"]) == ("execute", "completed"), why
    assert run["content"] == [{"type": "content", "content": {"type": "text", "text": terminal_said}}], why

    check_cancelled_turn(summary, "waiting for cancel")
    if process:
        assert summary["agentExit"] == {"code": 0, "signal": None}, why


# --- acpio testy's full turn -------------------------------------------------------------------------------


def check_testy_turn(summary: dict[str, Any], workdir: Path, *, process: bool = True) -> None:
    """What every client must see of ``acpio testy`` running :data:`TESTY_SCRIPT`, and its effects on disk.

    ``process=False``: testy was not the client's child process (a remote agent), so it has no exit to check.
    """
    check_run_clean(summary)
    why = context(summary)
    turn = summary["turns"][0]
    assert (turn["error"], turn["stopReason"]) == (None, "end_turn"), why
    text = message_text(turn)
    assert text.startswith("hello from the interop test\n"), why
    chunks = [update["content"]["text"] for update in updates_of(turn, "agent_message_chunk")]
    assert chunks[:5] == ["hello ", "from ", "the ", "interop ", "test"], why
    assert "permission: allow-once" in text, why
    assert "terminal works" in text, why
    assert "exit status 0" in text, why

    (permission,) = requests_of(summary, "session/request_permission")
    assert permission["params"]["toolCall"]["kind"] == "edit", why
    options = {option["optionId"]: option["kind"] for option in permission["params"]["options"]}
    assert options == {
        "allow-once": "allow_once",
        "allow-always": "allow_always",
        "reject-once": "reject_once",
    }, why
    assert permission["answer"] == {"outcome": "selected", "optionId": "allow-once"}, why

    reads = [request["params"]["path"] for request in requests_of(summary, "fs/read_text_file")]
    assert reads[0] == str(workdir / "input.txt"), why
    (write,) = requests_of(summary, "fs/write_text_file")
    assert write["params"]["path"] == str(workdir / "output.txt"), why
    assert write["params"]["content"] == TESTY_WRITTEN, why
    assert (workdir / "output.txt").read_text() == TESTY_WRITTEN, why

    calls = {update["toolCallId"]: update["kind"] for update in updates_of(turn, "tool_call")}
    kinds = sorted(calls.values())
    assert (kinds.count("read"), kinds.count("execute")) == (1, 1), why
    assert kinds.count("edit") >= 1, why
    read_call = next(tool_call(turn, call_id) for call_id, kind in calls.items() if kind == "read")
    assert read_call["status"] == "completed", why
    assert read_call["locations"][0]["path"] == str(workdir / "input.txt"), why
    assert INPUT_TEXT in json.dumps(read_call["content"], ensure_ascii=False).replace("\\n", "\n"), why
    edit_calls = [tool_call(turn, call_id) for call_id, kind in calls.items() if kind == "edit"]
    write_call = next(
        call for call in edit_calls if any(item.get("type") == "diff" for item in call.get("content") or [])
    )
    assert write_call["status"] == "completed", why
    (diff,) = [item for item in write_call["content"] if item["type"] == "diff"]
    assert (diff["path"], diff["newText"]) == (str(workdir / "output.txt"), TESTY_WRITTEN), why
    assert diff.get("oldText") is None, why
    run_call = next(tool_call(turn, call_id) for call_id, kind in calls.items() if kind == "execute")
    assert run_call["status"] == "completed", why

    (create,) = requests_of(summary, "terminal/create")
    assert (create["params"]["command"], create["params"]["args"]) == ("echo", ["terminal", "works"]), why
    terminal_methods = [
        request["method"] for request in summary["requests"] if request["method"].startswith("terminal/")
    ]
    assert terminal_methods == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ], why
    (terminal,) = summary["terminals"]
    assert (terminal["exitStatus"]["exitCode"], terminal["output"]) == (0, "terminal works\n"), why

    check_cancelled_turn(summary, "waiting ")
    if process:
        assert summary["agentExit"] == {"code": 0, "signal": None}, why
