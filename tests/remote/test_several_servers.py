"""Two gateways share sessions through PostgreSQL: a client whose server dies goes on on the other.

Real processes: ``acpio serve -- acpio testy --store postgresql://...`` twice, on a throwaway cluster
(``tests/store/_postgres.py``; skipped without PostgreSQL). The client is a bare WebSocket speaking
JSON-RPC, so what is checked is what crosses the wire.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.errors import RequestError
from acpio.remote import RemoteAgent

ACPIO = [sys.executable, "-m", "acpio"]


def _load_postgres() -> Any:
    """tests/store/_postgres.py, the store tests' throwaway cluster (another test package)."""
    path = Path(__file__).resolve().parents[1] / "store" / "_postgres.py"
    spec = importlib.util.spec_from_file_location("acpio_tests_store_postgres", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_postgres = _load_postgres()


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[Any]:
    with _postgres.cluster() as running:
        yield running


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    if isinstance(pg_cluster, str):
        pytest.skip(pg_cluster)
    url: str = pg_cluster.new_database()
    return url


@asynccontextmanager
async def server(store: str, port: int = 0) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    process = await asyncio.create_subprocess_exec(
        *ACPIO, "serve", "--port", str(port), "--", *ACPIO, "testy", "--store", store,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.startswith(b"listening on "), line
        yield line.split()[2].decode().replace("http", "ws", 1), process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 15)


class Wire:
    """JSON-RPC over one WebSocket: requests answered in order, notifications kept."""

    def __init__(self, socket: websockets.ClientConnection) -> None:
        self.socket = socket
        self.next_id = 0
        self.updates: list[dict[str, Any]] = []

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.socket.send(
            orjson.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        )
        while True:
            message = orjson.loads(await asyncio.wait_for(self.socket.recv(), 30))
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
            elif message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


async def test_a_session_continues_on_another_server_when_its_server_dies(pg_url: str) -> None:
    async with server(pg_url) as (first_url, first), server(pg_url) as (second_url, _):
        async with websockets.connect(first_url) as socket:
            wire = Wire(socket)
            await wire.call("initialize", {"protocolVersion": 1})
            session = (await wire.call("session/new", {"cwd": "/tmp", "mcpServers": []}))["sessionId"]
            assert (
                await wire.call(
                    "session/prompt",
                    {"sessionId": session, "prompt": [{"type": "text", "text": "echo before"}]},
                )
            )["stopReason"] == "end_turn"
            first.kill()  # the server the client used dies, without a goodbye
            with pytest.raises(websockets.ConnectionClosed):
                await wire.call("session/prompt", {"sessionId": session, "prompt": []})

        async with websockets.connect(second_url) as socket:
            wire = Wire(socket)
            await wire.call("initialize", {"protocolVersion": 1})
            await wire.call("session/load", {"sessionId": session, "cwd": "/tmp", "mcpServers": []})
            assert said(wire.updates).startswith("before"), wire.updates  # the history, replayed
            wire.updates.clear()
            answer = await wire.call(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "echo after"}]}
            )
            assert answer["stopReason"] == "end_turn"
            assert said(wire.updates) == "after\n"


def port_of(url: str) -> int:
    """The port a server bound on port 0 (no port probed beforehand, which another process could take)."""
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_the_client_reconnects_and_resumes_by_itself(pg_url: str, scheme: str) -> None:
    """The server dies, another takes its address and store: the same client code goes on."""
    said_after: list[str] = []

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt("echo before")
            assert await session.read_to_string() == "before\n"
            first.kill()
            await first.wait()
            async with server(pg_url, port):
                session.send_prompt("echo after")
                said_after.append(await session.read_to_string())

    async with server(pg_url) as (url, first):
        port = port_of(url)
        agent = RemoteAgent(f"{scheme}://127.0.0.1:{port}", reconnect=True)
        await asyncio.wait_for(Client.builder().connect_with(agent, main), 60)
    assert said_after == ["after\n"]


async def test_a_request_in_flight_when_the_server_dies_fails_instead_of_hanging(pg_url: str) -> None:
    outcome: list[str] = []

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt("echo working\nsleep 30")
            await session.read_update()  # the turn is under way
            first.kill()
            async with server(pg_url, port):
                with pytest.raises(RequestError) as lost:
                    await session.read_to_string()
                outcome.append(str(lost.value))
                session.send_prompt("echo after")
                outcome.append(await session.read_to_string())

    async with server(pg_url) as (url, first):
        port = port_of(url)
        agent = RemoteAgent(f"ws://127.0.0.1:{port}", reconnect=True)
        await asyncio.wait_for(Client.builder().connect_with(agent, main), 60)
    assert "request lost" in outcome[0]
    assert outcome[1] == "after\n"
