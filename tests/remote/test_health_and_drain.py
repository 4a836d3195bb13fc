"""``/healthz`` and ``/readyz`` for load balancers, and a drain that lets running turns finish.

In one process: a :class:`RemoteServer` serving the test agent, real sockets, httpx and the acpio
clients. The same behind HAProxy, with ``acpio serve`` processes: ``test_balancer.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.agents.testy import testy_agent
from acpio.errors import ConnectionClosed, TransportError
from acpio.remote import HttpTransport, ReadinessCheck, RemoteAgent, RemoteServer


async def test_healthz_and_readyz_answer_without_the_token_the_endpoint_needs() -> None:
    async with RemoteServer(testy_agent(), port=0, token="s3cret") as server, httpx.AsyncClient() as http:
        healthz = await http.get(f"{server.url}/healthz")
        readyz = await http.get(f"{server.url}/readyz")
        head = await http.head(f"{server.url}/readyz")
        endpoint = await http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        posted = await http.post(f"{server.url}/readyz")
    assert (healthz.status_code, healthz.text) == (200, "ok\n")
    assert (readyz.status_code, readyz.text) == (200, "ready\n")
    assert (head.status_code, head.content) == (200, b"")
    assert readyz.headers["cache-control"] == "no-store"
    assert endpoint.status_code == 401  # the ACP endpoint still needs it
    assert posted.status_code == 405


async def test_readyz_fails_while_a_check_fails_or_hangs_and_names_it_not_its_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = {"store": "up"}

    async def store() -> None:
        if state["store"] == "down":
            raise OSError("connection refused by db.internal:5432")
        if state["store"] == "hanging":
            await asyncio.sleep(10)

    checks = [ReadinessCheck("the session store", store, timeout=0.2)]
    server = RemoteServer(testy_agent(), port=0, ready_checks=checks)
    async with server, httpx.AsyncClient() as http:
        answers = []
        for now in ("up", "down", "hanging", "up"):
            state["store"] = now
            answer = await http.get(f"{server.url}/readyz")
            answers.append((answer.status_code, answer.text))
        healthz = await http.get(f"{server.url}/healthz")
    assert answers == [
        (200, "ready\n"),
        (503, "not ready: the session store fails\n"),
        (503, "not ready: the session store fails\n"),
        (200, "ready\n"),
    ]
    assert healthz.status_code == 200  # alive all along
    assert "connection refused by db.internal:5432" in caplog.text  # the reason is logged, not answered


async def _turn_then(cx: SessionConnection, prompt: str, during: asyncio.Future[None]) -> str:
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    async with cx.build_session(Path("/tmp")).start_session() as session:
        session.send_prompt(prompt)
        await session.read_update()  # the turn is under way
        during.set_result(None)
        return await session.read_to_string()


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_drain_lets_the_running_turn_finish_refuses_new_connections_and_closes_the_idle(
    scheme: str,
) -> None:
    async with RemoteServer(testy_agent(), port=0) as server, httpx.AsyncClient() as http:
        url = server.url.replace("http", scheme, 1)
        idle = await websockets.connect(url.replace("http", "ws", 1))
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        turn = asyncio.ensure_future(
            Client.builder().connect_with(
                RemoteAgent(url), lambda cx: _turn_then(cx, "echo one\nsleep 1\necho two", started)
            )
        )
        await started
        closing = asyncio.ensure_future(server.close(drain_timeout=10))
        await asyncio.sleep(0.1)
        assert server.listener.draining
        readyz = await http.get(f"{server.url}/readyz")
        refused = await http.post(
            server.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        )
        with pytest.raises(websockets.InvalidStatus) as ws_refused:
            await websockets.connect(url.replace("http", "ws", 1))
        await asyncio.wait_for(idle.wait_closed(), 5)  # no turn on it: closed at once
        assert not turn.done()
        said = await asyncio.wait_for(turn, 10)
        assert await asyncio.wait_for(closing, 10) is True  # every turn finished in time
    assert said.endswith("two\n")  # said after the drain began: the turn ran to its end
    assert (readyz.status_code, readyz.text) == (503, "not ready: draining\n")
    assert refused.status_code == 503
    assert "draining" in refused.text
    assert ws_refused.value.response.status_code == 503
    assert idle.close_code == 1001
    assert idle.close_reason.startswith("the server is draining")


async def test_a_drain_cuts_the_turns_still_running_at_its_timeout() -> None:
    async with RemoteServer(testy_agent(), port=0) as server:
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        turn = asyncio.ensure_future(
            Client.builder().connect_with(
                RemoteAgent(server.url.replace("http", "ws", 1)),
                lambda cx: _turn_then(cx, "echo one\nsleep 30", started),
            )
        )
        await started
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await server.close(drain_timeout=0.5) is False
        assert loop.time() - began < 5
    with pytest.raises(ConnectionClosed, match="before a response to 'session/prompt' arrived"):
        await asyncio.wait_for(turn, 5)


async def test_acpio_serve_is_not_ready_while_its_store_cannot_be_reached(tmp_path: Path) -> None:
    """``--check-store``: a real PostgreSQL store on a port where no server listens, then a SQLite file."""
    pytest.importorskip("psycopg")
    acpio = [sys.executable, "-m", "acpio"]
    answers = []
    for store in (
        "postgresql://acpio@127.0.0.1:1/sessions?connect_timeout=1",
        f"sqlite:///{tmp_path / 's.db'}",
    ):
        process = await asyncio.create_subprocess_exec(
            *acpio, "serve", "--port", "0", "--check-store", store, "--", *acpio, "testy",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        url = line.split()[2].decode()
        async with httpx.AsyncClient() as http:
            readyz, healthz = await http.get(f"{url}/readyz"), await http.get(f"{url}/healthz")
        answers.append((readyz.status_code, readyz.text, healthz.status_code))
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0
        if store.startswith("postgresql"):
            assert "Not ready: the session store fails: The PostgreSQL session database cannot be used" in (
                err.decode()
            )
    assert answers == [(503, "not ready: the session store fails\n", 200), (200, "ready\n", 200)]


def test_acpio_serve_refuses_a_negative_drain_timeout() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "serve", "--drain-timeout", "-1", "--", "acpio", "testy"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "--drain-timeout is a number of seconds, 0 or more" in done.stderr


async def test_a_request_posted_after_the_drain_closed_its_connection_is_kept_to_send_again() -> None:
    """The server refuses it unseen (``404``): :attr:`HttpTransport.undelivered` has it for a reconnection."""
    listing = b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}'
    async with RemoteServer(testy_agent(), port=0) as server:
        client = HttpTransport(server.url)
        client.send(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}')
        assert b'"result"' in (await asyncio.wait_for(client.receive(), 10) or b"")
        client.send(listing % 1)
        assert b'"sessions"' in (await asyncio.wait_for(client.receive(), 10) or b"")  # the stream is open
        server.listener.drain()  # no turn runs on it: the connection ends now
        assert await asyncio.wait_for(client.receive(), 10) is None
        client.send(listing % 2)
        with contextlib.suppress(TransportError):
            await asyncio.wait_for(client.drain(), 10)
        assert client.undelivered == [listing % 2]
        await client.aclose()
