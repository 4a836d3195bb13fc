"""Sessions across real processes: acpio testy --store, acpio prompt --session, SIGKILL mid-turn, two workers.

Each agent here is a process of its own (``python -m acpio testy --store URL``, or a small agent
served by :func:`acpio.store.serve_sessions`), so what is checked is what a restarted agent finds.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

TIMEOUT = 60


class Agent:
    """An agent process spoken to in JSON lines on its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    @classmethod
    async def start(cls, *argv: str) -> Agent:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        agent = cls(process)
        await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        return agent

    def send(self, method: str, params: Any) -> int:
        assert self.process.stdin is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(orjson.dumps(message) + b"\n")
        return self.next_id

    async def read(self) -> Any:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT)
        assert line, "the agent closed its output"
        return orjson.loads(line)

    async def call(self, method: str, params: Any, seen: list[Any] | None = None) -> Any:
        request_id = self.send(method, params)
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                return message
            if seen is not None:
                seen.append(message)

    async def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), TIMEOUT)


def agent_argv(url: str) -> list[str]:
    return [sys.executable, "-m", "acpio", "testy", "--store", url]


def agent_text(updates: list[Any]) -> str:
    return "".join(
        m["params"]["update"]["content"]["text"]
        for m in updates
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_sigkill_mid_turn_loses_nothing_already_sent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    first = await Agent.start(*agent_argv(url))
    sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]["sessionId"]
    first.send(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream 3000\nsleep 60"}]}
    )
    received = 0
    while received < 1000:  # killed in the middle of the turn, long before its answer
        message = await first.read()
        if message.get("method") == "session/update":
            received += 1
    first.process.kill()
    # Read its output to the end: asyncio's wait() also waits for the pipes, and a reader paused on
    # a full buffer (the agent streamed faster than we read) never sees the end of the pipe.
    await asyncio.wait_for(first.process.communicate(), TIMEOUT)

    second = await Agent.start(*agent_argv(url))
    replay: list[Any] = []
    loaded = await second.call(
        "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}, replay
    )
    assert loaded["result"]["modes"]["currentModeId"] == "chat"
    user, *agent = replay
    assert user["params"]["update"]["content"]["text"] == "stream 3000\nsleep 60"
    # Every update the client received was stored before the kill (at most the one being written is lost).
    assert agent_text(agent).count(".") >= received - 1
    await second.stop()


async def test_a_corrupt_database_is_named_and_testy_keeps_serving(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"\x00garbage" * 1000)
    agent = await Agent.start(*agent_argv(f"sqlite:///{path}"))
    answer = await agent.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert answer["error"]["code"] == -32603
    assert str(path) in orjson.dumps(answer["error"]).decode()
    again = await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert again["result"]["protocolVersion"] == 1
    await agent.stop()


def test_acpio_prompt_continues_a_testy_session_across_processes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    agent = shlex.join(agent_argv(url))

    def prompt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acpio", "prompt", "--agent", agent, *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    first = prompt("remember the milk")
    assert first.returncode == 0, first.stderr
    assert "session testy-1 (continue it with --session testy-1)" in first.stderr
    second = prompt("--session", "testy-1", "and the bread")
    assert second.returncode == 0, second.stderr
    assert "remember the milk" in second.stdout  # the replayed history
    assert second.stdout.rstrip().endswith("and the bread\n[stop reason: end_turn]".rstrip())
    third = prompt("a new one")
    assert "session testy-2" in third.stderr  # ids are not reused across processes


def test_in_memory_testy_offers_no_session_hint(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--agent", shlex.join(agent_argv("memory:")), "hi"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "acpio: session testy-1 (it ends with the agent's process)\n"


WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from acpio import Agent
    from acpio.store import open_store, serve_sessions
    from acpio.transports import Stdio

    async def main() -> None:
        async with open_store(sys.argv[1]) as store:
            app = Agent.builder(name="worker", unstable=True)
            serve_sessions(app, store)
            await app.serve(Stdio())

    asyncio.run(main())
    """
)


async def test_two_workers_on_one_postgresql_database(pg_url: str, tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    one = await Agent.start(sys.executable, str(worker), pg_url)
    two = await Agent.start(sys.executable, str(worker), pg_url)
    sid = (await one.call("session/new", {"cwd": "/w", "mcpServers": []}))["result"]["sessionId"]
    assert (await one.call("session/status", {"sessionId": sid}))["result"] == {"status": "open"}
    assert (await two.call("session/status", {"sessionId": sid}))["result"] == {"status": "saved"}
    listed = (await two.call("session/list", {}))["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [sid]
    # The client moves to the other worker: it loads the session there, which takes the lease over.
    loaded = await two.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
    assert loaded["result"] == {}
    assert (await two.call("session/status", {"sessionId": sid}))["result"] == {"status": "open"}
    assert (await one.call("session/status", {"sessionId": sid}))["result"] == {"status": "saved"}
    await one.stop()  # ending the old owner does not end the new owner's lease
    assert (await two.call("session/status", {"sessionId": sid}))["result"] == {"status": "open"}
    await two.stop()


@pytest.mark.skipif(sys.platform != "linux", reason="checks a Linux process")
def test_testy_refuses_an_unknown_store_url(tmp_path: Path) -> None:
    done = subprocess.run(
        [*agent_argv("mysql://nope")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--store: Cannot open the session store 'mysql://nope'" in done.stderr
