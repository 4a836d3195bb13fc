"""``acpio conductor --debug DIR``, stderr lines in the trace, a modified ``initialize`` from an
instantiator, and a stop during start-up that does not wait for slow components."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from acpio import schema as acp
from acpio.conductor import Chain, ConductorError, Instantiation, MemorySink, Named
from acpio.conductor.components import resolve

from ._support import (
    ARROW,
    PYTHON,
    ROOT,
    TIMEOUT,
    RawComponent,
    answer_initialize,
    prompt_text,
    raw_client,
    run_client,
)

NOISY = f"{PYTHON} {Path(__file__).resolve().parent / 'noisy_agent.py'}"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


async def start_conductor(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "acpio",
        "conductor",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
    )


async def send(process: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()


async def answer(process: asyncio.subprocess.Process, request_id: int) -> dict[str, Any]:
    assert process.stdout is not None
    async with asyncio.timeout(TIMEOUT):
        while True:
            frame = json.loads(await process.stdout.readline())
            if frame.get("id") == request_id and "method" not in frame:
                return frame  # type: ignore[no-any-return]


async def test_debug_dir_has_one_line_log_per_component_and_the_trace_has_their_stderr(
    tmp_path: Path,
) -> None:
    debug, trace = tmp_path / "debug", tmp_path / "run.jsons"
    process = await start_conductor("--debug", str(debug), "--trace", str(trace), "agent", ARROW, NOISY)
    try:
        await send(process, INITIALIZE)
        assert (await answer(process, 1))["result"]["protocolVersion"] == 1
        new = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
        await send(process, new)
        assert "sessionId" in (await answer(process, 2))["result"]
    finally:
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(TIMEOUT):
            await process.wait()
    assert process.returncode == 0
    assert sorted(p.name for p in debug.iterdir()) == ["0-client.log", "1-proxy0.log", "2-agent.log"]
    client = (debug / "0-client.log").read_text().splitlines()
    proxy = (debug / "1-proxy0.log").read_text().splitlines()
    agent = (debug / "2-agent.log").read_text().splitlines()
    assert client[0] == "# Client: the conductor's client"
    assert proxy[0] == f"# Proxy(0): {ARROW}"
    assert agent[0] == f"# Agent: {NOISY}"

    def entries(lines: list[str], mark: str) -> list[str]:
        found = []
        for line in lines[1:]:
            elapsed, arrow, text = line.split(" ", 2)
            assert elapsed.startswith("+"), line
            assert elapsed.endswith("ms"), line
            if arrow == mark:
                found.append(text)
        return found

    # Each line as it crossed: the client's request, the proxy's initialize, the agent's answer.
    assert json.loads(entries(client, "←")[0]) == INITIALIZE
    assert json.loads(entries(client, "→")[0])["id"] == 1
    assert json.loads(entries(proxy, "→")[0])["method"] == "proxy/initialize"
    assert json.loads(entries(agent, "→")[0])["method"] == "initialize"
    assert "protocolVersion" in json.loads(entries(agent, "←")[0])["result"]
    assert entries(agent, "!") == ["noisy agent starting"]
    assert entries(client, "!") == []
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    stderr = [e for e in events if e["type"] == "stderr"]
    assert [(e["from"], e["to"], e["line"]) for e in stderr] == [("Agent", "Agent", "noisy agent starting")]


async def test_an_instantiator_may_send_a_modified_initialize_down_the_chain() -> None:
    agent = RawComponent("agent")
    seen: list[acp.InitializeRequest] = []

    def instantiate(initialize: acp.InitializeRequest) -> Instantiation:
        seen.append(initialize)
        changed = initialize.model_copy(
            update={"client_info": acp.Implementation(name="rewritten", version="2")}
        )
        return Instantiation([agent], changed)

    sink = MemorySink()
    chain = Chain.agent("conductor", instantiate).trace_to(sink)
    async with raw_client(chain) as client:
        client.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}})
        me = await agent.wait_peer()
        received = await me.message_for("initialize")
        assert received["params"]["clientInfo"] == {"name": "rewritten", "version": "2"}
        me.respond(received["id"], {"protocolVersion": 1, "agentInfo": {"name": "a", "version": "1"}})
        assert (await client.response_to(1))["result"]["agentInfo"]["name"] == "a"
    assert seen[0].client_info is not None
    assert seen[0].client_info.name == "editor"  # the instantiator saw the client's own
    traced = [e for e in sink.events if e["type"] == "request"]
    assert traced[0]["params"]["clientInfo"]["name"] == "rewritten"  # the trace shows what was sent


async def test_an_instantiation_without_initialize_forwards_the_clients_and_a_bad_one_is_refused() -> None:
    agent = RawComponent("agent")
    async with raw_client(Chain.agent("conductor", lambda init: Instantiation([agent]))) as client:
        client.request("initialize", {"protocolVersion": 1, "_meta": {"k": 1}})
        await answer_initialize(agent)
        assert (await client.response_to(1))["result"] == {"protocolVersion": 1}
    bad: Any = {"protocolVersion": 1}

    async def refused() -> None:
        async with raw_client(Chain.agent("conductor", lambda init: Instantiation([agent], bad))) as client:
            client.request("initialize", {"protocolVersion": 1})
            error = (await client.response_to(1))["error"]
            assert "not an InitializeRequest" in error["message"]

    with pytest.raises(ConductorError, match="could not choose its components"):
        await refused()


async def test_ctrl_c_while_a_component_is_slow_to_start_ends_the_conductor_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "slow.pid"
    slow = f"{NOISY} 60 {pid_file}"  # sleeps a minute before it reads anything, ignoring SIGTERM
    process = await start_conductor("agent", ARROW, slow)
    try:
        await send(process, INITIALIZE)
        async with asyncio.timeout(TIMEOUT):
            while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        slow_pid = int(pid_file.read_text())
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(TIMEOUT):
            await process.wait()
        took = time.monotonic() - started
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    assert process.returncode == 130
    # The graceful end would take 3 s (2 s for stdin, 1 s after SIGTERM, which it ignores); well under
    # a second on an idle machine (0.3 s measured), with room for a loaded one.
    assert took < 2.5, f"the conductor took {took:.2f} s to stop"
    try:
        os.kill(slow_pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the slow component (pid {slow_pid}) is still running")


async def test_a_run_cancelled_during_start_up_kills_its_components_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "slow.pid"
    chain = Chain.agent("conductor", [f"{NOISY} 60 {pid_file}"])
    async with raw_client(chain) as client:
        client.request("initialize", {"protocolVersion": 1})
        async with asyncio.timeout(TIMEOUT):
            while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        started = time.monotonic()
    took = time.monotonic() - started  # the client closed; the run ended and closed its component
    assert took < 2.5, f"the run took {took:.2f} s to end"


async def test_a_traced_chain_records_the_stderr_of_components_given_as_commands() -> None:
    sink = MemorySink()
    chain = Chain.agent("conductor", [NOISY]).trace_to(sink)

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "hi")

    assert await run_client(chain, main) == "hi"
    stderr = [e for e in sink.events if e["type"] == "stderr"]
    assert [(e["from"], e["line"]) for e in stderr] == [("Agent", "noisy agent starting")]


def test_the_stderr_of_a_command_is_watched_only_for_a_run_that_records_it() -> None:
    # Untraced, nothing watches the process's lines: a debug callback would have each frame decoded.
    assert resolve(NOISY).lines is None
    assert resolve(NOISY, stderr=True).lines is not None
    assert resolve(Named("n", NOISY), stderr=True).lines is not None
