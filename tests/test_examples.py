"""Every example in examples/ runs and prints what its docstring promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_jsonrpc_hello_answers_the_typed_request() -> None:
    assert run("jsonrpc_hello.py") == "Hello, Ada!\n"


def test_builder_style_client_drives_the_builder_style_echo_agent() -> None:
    assert run("client.py") == "Hello, agent!\nend_turn\n"


def test_unstable_methods_are_opt_in_on_both_sides() -> None:
    assert run("unstable_fork.py") == (
        "forked: s1-fork\n"
        "not sent: session/fork is unstable and this client did not turn unstable methods on\n"
        "the agent answered -32601 Method not found: session/fork\n"
    )


def test_a_driver_that_answers_permissions_and_files_is_short() -> None:
    # The new user wrote 103 lines for this driver; AgentClient's version must stay under 50.
    source = (EXAMPLES / "drive_agent.py").read_text()
    assert len(source.splitlines()) < 50
    assert run("drive_agent.py") == (
        "permission: allow-once\n"
        "Done.\n"
        "tool call: Write notes.txt (edit, completed)\n"
        "tool call: Publish the notes (edit, completed)\n"
        "stop reason: end_turn\n"
    )
