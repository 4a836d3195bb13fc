"""``acpio conductor`` as a program: driven by an acpio client, nested, traced, failing clearly."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acpio import Client, RequestError
from acpio import schema as acp
from acpio.transports import AcpAgent

from ._support import ARROW, CRASH_PROXY, PYTHON, ROOT, SCRIPTED_AGENT, TIMEOUT, prompt_text

CONDUCTOR = [PYTHON, "-m", "acpio", "conductor"]


def acpio(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "acpio", *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT
    )


async def greet_through(argv: list[str]) -> tuple[str, AcpAgent]:
    conductor = AcpAgent(argv, cwd=ROOT)

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "greet")

    return await Client.builder().connect_with(conductor, main), conductor


async def test_the_conductor_runs_an_arrow_proxy_in_front_of_an_agent() -> None:
    text, conductor = await greet_through([*CONDUCTOR, "agent", ARROW, SCRIPTED_AGENT])
    assert text == "> Hello, world!"
    assert conductor.returncode == 0  # the client closed stdin: a clean end


async def test_a_conductor_in_proxy_mode_nests_inside_another() -> None:
    inner = shlex.join([*CONDUCTOR, "proxy", ARROW, f"{PYTHON} examples/arrow_proxy.py"])
    text, _ = await greet_through([*CONDUCTOR, "agent", inner, SCRIPTED_AGENT])
    assert text == "> > Hello, world!"


async def test_trace_writes_the_lanes_and_the_messages(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsons"
    text, _ = await greet_through([*CONDUCTOR, "--trace", str(trace), "agent", ARROW, SCRIPTED_AGENT])
    assert text == "> Hello, world!"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["lanes"] == [
        {"lane": "Client", "name": "client"},
        {"lane": "Proxy(0)", "name": ARROW},
        {"lane": "Agent", "name": SCRIPTED_AGENT},
    ]
    hops = {(e["from"], e["to"], e["type"], e["method"]) for e in events[1:]}
    assert ("Proxy(0)", "Agent", "request", "session/prompt") in hops
    assert ("Proxy(0)", "Client", "notification", "session/update") in hops


async def test_options_may_also_follow_the_mode(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsons"
    text, _ = await greet_through([*CONDUCTOR, "agent", "--trace", str(trace), SCRIPTED_AGENT])
    assert text == "Hello, world!"
    assert trace.read_text().startswith('{"type":"lanes"')


async def test_a_proxy_that_dies_mid_turn_fails_the_prompt_and_the_conductor_exits_1() -> None:
    conductor = AcpAgent([*CONDUCTOR, "agent", CRASH_PROXY, SCRIPTED_AGENT], cwd=ROOT)
    errors: list[RequestError] = []

    async def main(cx: Any) -> None:
        with pytest.raises(RequestError) as caught:
            await prompt_text(cx, "sleep 60")
        errors.append(caught.value)

    await Client.builder().connect_with(conductor, main)
    [error] = errors
    assert error.message.startswith(f"The proxy {CRASH_PROXY!r} (Proxy(0)) exited with exit code 3")
    assert conductor.returncode == 1
    assert conductor.process is not None
    stderr = conductor.process.stderr_tail or ""
    assert f"acpio: error: The proxy {CRASH_PROXY!r} (Proxy(0)) exited with exit code 3" in stderr
    assert "giving up in the middle of the turn" in stderr
    assert "Traceback" not in stderr


def test_end_of_input_before_anything_exits_0() -> None:
    done = acpio("conductor", "agent", SCRIPTED_AGENT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent"], "`acpio conductor agent` needs at least one COMPONENT: the agent command"),
        (["proxy"], "`acpio conductor proxy` needs at least one COMPONENT: a proxy command"),
        (["agent", "python 'agent.py"], 'cannot read the component "python \'agent.py"'),
        (["agent", "A=1"], "names no program to run"),
        (
            ["--trace", "/no/such/dir/t.jsons", "agent", "x"],
            "cannot write the trace file '/no/such/dir/t.jsons'",
        ),
        (["--mcp-bridge", "proxy", "x"], "--mcp-bridge runs the bridge just before the agent"),
    ],
)
def test_mistakes_are_one_line_on_stderr(args: list[str], message: str) -> None:
    done = acpio("conductor", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("acpio: error: ")
    assert message in done.stderr


@pytest.mark.parametrize("args", [[], ["agent"], ["proxy"]])
def test_help(args: list[str]) -> None:
    done = acpio("conductor", *args, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: acpio conductor")
    assert "COMPONENT" in done.stdout or "MODE" in done.stdout


def has_testy() -> bool:
    return acpio("testy", "--help").returncode == 0


async def chunks_from(argv: list[str], text: str) -> list[str]:
    async def main(cx: Any) -> list[str]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(ROOT).start_session() as session:
            session.send_prompt(text)
            return [message.text async for message in session if message.text is not None]

    return await Client.builder().connect_with(AcpAgent(argv, cwd=ROOT), main)


async def test_the_arrow_proxy_in_front_of_acpio_testy() -> None:
    if not has_testy():
        pytest.skip("`acpio testy` is not available in this tree")
    testy = f"{PYTHON} -m acpio testy"
    plain = await chunks_from([PYTHON, "-m", "acpio", "testy"], "echo hello world")
    arrowed = await chunks_from([*CONDUCTOR, "agent", ARROW, testy], "echo hello world")
    assert "hello" in "".join(plain)
    assert len(plain) > 2  # streamed word by word: the quote marks lines, not chunks
    assert "".join(arrowed) == "> " + "".join(plain)


@pytest.mark.parametrize("args", [["--mcp-brige", "agent", "x"], ["agent", "--mcp-brige", "x"]])
def test_a_mistyped_option_gets_the_usage_of_its_mode_and_a_suggestion(args: list[str]) -> None:
    done = acpio("conductor", *args)
    assert done.returncode == 2
    usage, error = done.stderr.split("\n", 1)[0], done.stderr.strip().splitlines()[-1]
    prog = "acpio conductor" if args[0] != "agent" else "acpio conductor agent"
    assert usage.startswith(f"usage: {prog} [-h]")
    assert error == f"{prog}: error: unrecognized arguments: --mcp-brige (did you mean --mcp-bridge?)"
