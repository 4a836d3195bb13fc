"""Clients written with the official SDKs drive ``acpio testy`` (issue 6 §1 pairings 1-2, issue 5 §5).

The TypeScript SDK client (``peers/ts/client.mjs``) and the official Python SDK client
(``peers/official_py/client.py``) each spawn ``python -m acpio testy`` and run:

* the full turn as a testy script (streamed text, a permission, a file read and write, a terminal command)
  and a turn cancelled with ``session/cancel``;
* every other kind of update testy sends, a scripted JSON-RPC error and a plain echo; the other SDK must
  accept every message acpio wrote (its validators complain on stderr, which the clients collect as
  ``sdkErrors``);
* a turn cancelled while testy asks for permission;
* (TypeScript) a turn cancelled with ``$/cancel_request``; (official Python) a ``null`` write result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import (
    PY_CLIENT,
    TESTY_SCRIPT,
    TESTY_WAIT,
    TS_CLIENT,
    acpio_testy_command,
    check_cancelled_turn,
    check_run_clean,
    check_testy_turn,
    client_argv,
    context,
    message_text,
    requests_of,
    run_client,
    updates_of,
)

#: Every kind of update testy sends besides message chunks and tool calls, and an extension notification.
SURFACE_SCRIPT = "\n".join(
    [
        "think weighing the options",
        "plan read the input; write the output; run a command",
        "progress 1",
        "tool Look around",
        "mode plan",
        "title Interop session",
        "commands",
        "usage",
        'notify _acpio.interop/ping {"n": 1}',
        "echo surface done",
    ]
)
FAIL_SCRIPT = "fail -32042 scripted failure"
PLAIN_PROMPT = "just some words  here"


def peer_client(request: pytest.FixtureRequest, which: str) -> list[str]:
    """The argv prefix of the TypeScript (``ts``) or official Python (``py``) peer client."""
    if which == "ts":
        return [request.getfixturevalue("node"), str(TS_CLIENT)]
    return [request.getfixturevalue("official_python"), str(PY_CLIENT)]


CLIENTS = pytest.mark.parametrize(
    "which", ["ts", "py"], ids=["typescript-sdk-client", "official-python-client"]
)


@CLIENTS
def test_peer_client_runs_the_full_turn_on_testy(
    request: pytest.FixtureRequest, which: str, workdir: Path
) -> None:
    argv = client_argv(
        peer_client(request, which),
        workdir,
        acpio_testy_command(),
        prompts=[TESTY_SCRIPT],
        cancel_prompt=TESTY_WAIT,
    )
    summary = run_client(argv)

    check_testy_turn(summary, workdir)
    assert summary["newSession"]["sessionId"] == "testy-1", context(summary)


@CLIENTS
def test_peer_client_accepts_every_testy_update(
    request: pytest.FixtureRequest, which: str, workdir: Path
) -> None:
    argv = client_argv(
        peer_client(request, which),
        workdir,
        acpio_testy_command(),
        prompts=[SURFACE_SCRIPT, FAIL_SCRIPT, PLAIN_PROMPT],
        cancel_prompt=None,
    )
    summary = run_client(argv)

    check_run_clean(summary)
    why = context(summary)
    surface, failed, plain = summary["turns"]
    assert (surface["error"], surface["stopReason"]) == (None, "end_turn"), why
    kinds = {update["sessionUpdate"] for update in surface["updates"]}
    assert kinds >= {
        "agent_thought_chunk",
        "plan",
        "tool_call",
        "tool_call_update",
        "current_mode_update",
        "session_info_update",
        "available_commands_update",
        "usage_update",
        "agent_message_chunk",
    }, why
    (thought,) = updates_of(surface, "agent_thought_chunk")
    assert thought["content"] == {"type": "text", "text": "weighing the options"}, why
    first_plan, progress = updates_of(surface, "plan")
    assert [entry["content"] for entry in first_plan["entries"]] == [
        "read the input",
        "write the output",
        "run a command",
    ], why
    assert [entry["status"] for entry in progress["entries"]] == ["completed", "in_progress", "pending"], why
    (mode,) = updates_of(surface, "current_mode_update")
    assert mode["currentModeId"] == "plan", why
    (info,) = updates_of(surface, "session_info_update")
    assert info["title"] == "Interop session", why
    (commands,) = updates_of(surface, "available_commands_update")
    assert "echo" in {command["name"] for command in commands["availableCommands"]}, why
    assert message_text(surface).endswith("surface done\n"), why
    assert summary["notifications"] == [{"method": "_acpio.interop/ping", "params": {"n": 1}}], why

    assert failed["stopReason"] is None, why
    assert (failed["error"]["code"], failed["error"]["message"]) == (-32042, "scripted failure"), why

    assert (plain["error"], plain["stopReason"]) == (None, "end_turn"), why
    assert message_text(plain) == PLAIN_PROMPT, why
    assert summary["agentExit"] == {"code": 0, "signal": None}, why


@CLIENTS
def test_peer_client_cancels_testy_around_a_permission_request(
    request: pytest.FixtureRequest, which: str, workdir: Path
) -> None:
    # The client cancels at the first chunk; testy is then about to ask permission, or already waiting for
    # the answer (the client answers `cancelled`, as the spec asks). Either way the turn ends `cancelled`
    # and nothing after the permission runs.
    script = "echo about to ask\npermission Overwrite the output\nwrite output.txt must not be written"
    argv = client_argv(
        peer_client(request, which), workdir, acpio_testy_command(), prompts=[], cancel_prompt=script
    )
    summary = run_client(argv)
    if which == "py":
        # testy cascades the cancel to a pending permission request with `$/cancel_request`, as the spec's
        # cancellation flow shows. The official Python SDK (0.12.1) does not implement that notification and
        # logs "Unhandled error while handling notification method=$/cancel_request: ... Method not found":
        # harmless (a notification gets no answer), so that one complaint is allowed here.
        summary["sdkErrors"] = [
            error for error in summary["sdkErrors"] if "method=$/cancel_request" not in error
        ]

    check_run_clean(summary)
    why = context(summary)
    check_cancelled_turn(summary, "about ")
    for permission in requests_of(summary, "session/request_permission"):
        assert permission["answer"] == {"outcome": "cancelled"}, why
    assert requests_of(summary, "fs/write_text_file") == [], why
    assert not (workdir / "output.txt").exists(), why
    assert summary["agentExit"] == {"code": 0, "signal": None}, why


def test_typescript_client_cancels_a_testy_prompt_with_cancel_request(node: str, workdir: Path) -> None:
    # The TypeScript SDK cancels a request with `$/cancel_request` when its cancellationSignal aborts. The
    # spec lets the agent answer with a result (here: stop reason `cancelled`) or a -32800 error.
    argv = client_argv(
        [node, str(TS_CLIENT), "--cancel-with", "request"],
        workdir,
        acpio_testy_command(),
        prompts=[],
        cancel_prompt=TESTY_WAIT,
    )
    summary = run_client(argv)

    check_run_clean(summary)
    why = context(summary)
    (turn,) = summary["turns"]
    assert turn["cancelWith"] == "request", why
    assert turn["stopReason"] == "cancelled" or (turn["error"] or {}).get("code") == -32800, why
    assert message_text(turn).startswith("waiting "), why
    assert summary["agentExit"] == {"code": 0, "signal": None}, why


def test_testy_accepts_a_null_result_to_a_file_write(official_python: str, workdir: Path) -> None:
    argv = client_argv(
        [official_python, str(PY_CLIENT), "--write-returns-none"],
        workdir,
        acpio_testy_command(),
        prompts=["write output.txt written anyway"],
        cancel_prompt=None,
    )
    summary = run_client(argv)

    check_run_clean(summary)
    why = context(summary)
    (turn,) = summary["turns"]
    assert (turn["error"], turn["stopReason"]) == (None, "end_turn"), why
    assert (workdir / "output.txt").read_text() == "written anyway", why
    (call,) = updates_of(turn, "tool_call")
    final = [update for update in turn["updates"] if update.get("toolCallId") == call["toolCallId"]][-1]
    assert final["status"] == "completed", why
