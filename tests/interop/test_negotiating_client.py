"""acpio's negotiating client (``cx.initialize()``: offer v2, accept v1) against the TypeScript SDK 2.4.0.

* its v1 agent (``peers/ts/agent.mjs``): the full v1 turn, fs and terminal included, exactly as a v1 client
  runs it: the offer carries the v1 fields, so the agent sees the client's capabilities;
* its ``/experimental/v2`` agent (``peers/ts/agent_v2.mjs``): a v2 turn read to its idle state, with the
  permission's subject, a structured diff, an agent-owned terminal and a plan;
* its ``AgentProtocolRouter`` configured v1-only, v2-only and both (``agent_v2.mjs --router``);
* ``acpio prompt`` (negotiating by default) showing the v2 turn live, and ``--protocol 2`` refusing v1.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from acpio.roles import Client
from acpio.schema import InitializeResponse, v2
from acpio.session import DiffView, PlanEntryView, SessionConnection, TerminalRef
from acpio.transports import AcpAgent

from ._recording_client import RecordingClient
from ._support import (
    PEER_PROMPT,
    PEER_WAIT,
    PEERS,
    TS_AGENT,
    acpio_testy_command,
    check_peer_agent_turn,
    context,
    run_program,
)
from .test_prompt_cli import acpio_prompt

TS_AGENT_V2 = PEERS / "ts" / "agent_v2.mjs"
TIMEOUT = 30


async def test_the_negotiating_client_runs_the_typescript_v1_agents_full_turn(
    node: str, workdir: Path
) -> None:
    summary = await RecordingClient(workdir, negotiate=True).run(
        [node, str(TS_AGENT)], [PEER_PROMPT], PEER_WAIT
    )

    check_peer_agent_turn(summary, workdir, "ts-peer-agent")
    assert summary["initialize"]["protocolVersion"] == 1, context(summary)


async def _v2_turn(argv: list[str], workdir: Path) -> tuple[object, str, SessionConnection, object]:
    async def main(cx: SessionConnection) -> tuple[object, str, SessionConnection, object]:
        async with asyncio.timeout(TIMEOUT):
            answer = await cx.initialize()
            async with cx.build_session(workdir).start_session() as session:
                session.send_prompt("hi there")
                text = await session.read_to_string(permissions="allow")
                return answer, text, cx, session

    return await Client.builder().connect_with(AcpAgent(argv), main)


async def test_the_negotiating_client_completes_a_turn_with_the_typescript_v2_agent(
    node: str, workdir: Path
) -> None:
    answer, text, cx, session = await _v2_turn([node, str(TS_AGENT_V2)], workdir)

    assert isinstance(answer, v2.InitializeResponse)
    assert answer.info.name == "ts-peer-agent-v2"
    assert answer.meta == {"clientName": "acpio"}  # the agent read the v2 info of the offer
    assert cx.protocol_version == 2
    assert text == "hi there done"
    view = session.view  # type: ignore[attr-defined]
    assert session.stop_reason == "end_turn"  # type: ignore[attr-defined]
    assert [(m.role, m.text) for m in view.messages] == [
        ("user", "hi there"),
        ("thought", "thinking"),
        ("agent", "hi there done"),
    ]
    edit = view.tool_calls["edit-1"]
    assert (edit.title, edit.kind, edit.status) == ("Edit notes.txt", "edit", "completed")
    (diff,) = edit.content
    assert isinstance(diff, DiffView)
    assert [(c.operation, c.path) for c in diff.changes] == [("modify", str(workdir / "notes.txt"))]
    assert diff.patch is not None
    assert "+new" in diff.patch
    run = view.tool_calls["run-1"]
    assert (run.status, run.content) == ("completed", [TerminalRef("term-1")])
    terminal = view.terminals["term-1"]
    assert (terminal.command, terminal.cwd) == ("echo hello world", str(workdir))
    assert (bytes(terminal.output), terminal.exit_code) == (b"hello world\n", 0)
    assert view.plans == {
        "p1": (
            PlanEntryView("edit the file", "high", "in_progress"),
            PlanEntryView("run the command", "medium", "pending"),
        )
    }


@pytest.mark.parametrize("routes", ["v2", "both"])
async def test_the_typescript_router_serving_v2_gives_a_v2_turn(
    node: str, workdir: Path, routes: str
) -> None:
    answer, text, cx, _ = await _v2_turn([node, str(TS_AGENT_V2), "--router", routes], workdir)

    assert isinstance(answer, v2.InitializeResponse)
    assert (cx.protocol_version, text) == (2, "hi there done")


async def test_the_typescript_router_serving_v1_only_falls_back_to_v1(node: str, workdir: Path) -> None:
    answer, text, cx, session = await _v2_turn([node, str(TS_AGENT_V2), "--router", "v1"], workdir)

    assert isinstance(answer, InitializeResponse)
    assert answer.protocol_version == 1
    assert cx.protocol_version == 1
    # The router rewrote the v2 offer for its v1 agent from the v2 fields: no client fs for it.
    assert text == "v1 agent: hi there (fs: no)"
    assert session.stop_reason == "end_turn"  # type: ignore[attr-defined]


async def test_a_v2_only_client_refuses_the_typescript_v1_agent(node: str, workdir: Path) -> None:
    from acpio.capabilities import UnsupportedProtocolVersion

    async def main(cx: SessionConnection) -> None:
        async with asyncio.timeout(TIMEOUT):
            await cx.initialize()

    with pytest.raises(UnsupportedProtocolVersion, match="protocol version 1"):
        await Client.builder(protocol=2).connect_with(AcpAgent([node, str(TS_AGENT)]), main)


def test_acpio_prompt_renders_the_typescript_v2_agents_turn_live(node: str, workdir: Path) -> None:
    done = run_program(acpio_prompt([node, str(TS_AGENT_V2)], workdir, "--allow", "--no-color", "hi there"))

    why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, why
    notes = str(workdir / "notes.txt")
    assert done.stdout.splitlines() == [
        "[working]",
        "(thinking) thinking",
        "hi there",
        "Plan:",
        "  [>] edit the file (high priority)",
        "  [ ] run the command",
        "[pending] Edit notes.txt (edit)",
        "[waiting for you]",
        "[permission] Edit notes.txt?: Allow once (allow-once)",
        "[working]",
        "[completed] Edit notes.txt (edit)",
        f"    diff --git a{notes} b{notes}",
        f"    --- a{notes}",
        f"    +++ b{notes}",
        "    @@ -1 +1 @@",
        "    -old",
        "    +new",
        f"    $ echo hello world  (in {workdir})",
        "[in progress] echo hello world (execute)",
        "    hello world",
        "    [exit status 0]",
        "[completed] echo hello world (execute)",
        " done",
        "[stop reason: end_turn]",
    ], why


def test_acpio_prompt_protocol_2_refuses_a_v1_agent(node: str, workdir: Path) -> None:
    done = run_program(acpio_prompt([node, str(TS_AGENT)], workdir, "--protocol", "2", "--deny", "hi"))

    why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 4, why
    assert "speaks ACP protocol version 1, but this client speaks only 2" in done.stderr, why


async def test_acpio_prompt_ctrl_c_cancels_a_running_v2_tool_call_then_the_turn_goes_on(
    workdir: Path,
) -> None:
    """On v2 the first Ctrl-C sends ``tool_call/cancel`` for the running tool call (testy's ``work``)."""
    script = "work 30 Long job\nrun echo after the tool call"
    argv = acpio_prompt([*acpio_testy_command(), "--protocol", "2"], workdir, "--allow", "--no-color", script)
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        while "[in progress] Long job" not in lines:
            line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
            assert line, f"acpio prompt ended before the tool call ran: {lines}"
            lines.append(line.decode().rstrip("\n"))
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(TIMEOUT):
            rest, errors = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    out = [*lines, *rest.decode().splitlines()]
    why = f"exit {process.returncode}\nstdout:\n" + "\n".join(out) + f"\nstderr:\n{errors.decode()}"
    assert process.returncode == 0, why  # the turn went on to its end
    assert "cancelling Long job (tool_call/cancel; Ctrl-C again cancels the turn)" in errors.decode(), why
    assert "[cancelled] Long job" in out, why
    assert "    after the tool call" in out, why  # the agent's terminal, after the cancelled call
    assert out[-1] == "[stop reason: end_turn]", why
