"""``acpio serve`` behind a real load balancer: HAProxy in front of three servers on one PostgreSQL store.

Real processes and sockets: HAProxy with the documented configuration (``examples/deploy/haproxy.cfg``,
see ``_balancer.py``), three ``acpio serve -- acpio testy --store postgresql://...`` on loopback
ports, a throwaway PostgreSQL cluster (``tests/store/_postgres.py``), and acpio's remote clients.
Skipped, with the reason, without HAProxy or PostgreSQL. Each test starts its own three servers and
HAProxy (a test may kill or drain one), so each takes several seconds: they are marked slow.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.errors import AcpError, RequestError, ResourceNotFound
from acpio.remote import ReconnectingTransport, RemoteAgent
from acpio.session import (
    AttachedRequestResolved,
    RequestPermissionMessage,
    control_session,
    observe_session,
    route_cookies,
)

from ._balancer import MISSING, ROOT, Balancer, balancer, free_port, haproxy_path, load_postgres

_postgres = load_postgres()


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[Any]:
    with _postgres.cluster() as running:
        yield running


@pytest.fixture
def store(pg_cluster: Any) -> str:
    """A fresh database of the throwaway cluster (skips without PostgreSQL or HAProxy)."""
    if haproxy_path() is None:
        pytest.skip(MISSING)
    if isinstance(pg_cluster, str):
        pytest.skip(pg_cluster)
    url: str = pg_cluster.new_database()
    return url


@pytest.fixture
async def lb(tmp_path: Path, store: str) -> AsyncIterator[Balancer]:
    async with balancer(tmp_path, store) as running:
        yield running


def lease_owner(store: str, session_id: str) -> str | None:
    """Who holds the session's lease in the database (a store's owner id), ``None``: nobody."""
    import psycopg

    with psycopg.connect(store) as db:
        row = db.execute(
            "SELECT owner FROM acpio_session_leases WHERE session_id = %s", (session_id,)
        ).fetchone()
    return None if row is None else str(row[0])


async def one_turn(agent: RemoteAgent, prompt: str) -> str:
    """initialize, session/new, one prompt: what the agent said."""

    async def main(cx: SessionConnection) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt(prompt)
            return await session.read_to_string()

    return await asyncio.wait_for(Client.builder().connect_with(agent, main), 60)


async def until_not_ready(address: str) -> None:
    """Wait until the backend at ``address`` answers ``/readyz`` 503 (it drains)."""
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"http://{address}/readyz")).status_code == 503:
                    return
            await asyncio.sleep(0.05)
    raise AssertionError(f"the backend at {address} never said it drains")


async def history(url: str, session_id: str) -> str:
    """What the agent said in the session, as ``session/load`` replays it from the store."""

    async def main(cx: SessionConnection) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session_load(session_id, Path("/tmp")).start_session() as session:
            said = []
            for message in session.history:
                note = message.notification
                if note is not None and isinstance(note.update, acp.AgentMessageChunk):
                    said.append(message.text or "")
            return "".join(said)

    return await asyncio.wait_for(Client.builder().connect_with(RemoteAgent(url), main), 60)


class Kept:
    """A reconnecting :class:`RemoteAgent` whose transport the test keeps, to see it reconnect."""

    def __init__(self, agent: RemoteAgent) -> None:
        self.agent = agent
        self.transport: ReconnectingTransport | None = None

    async def open(self) -> ReconnectingTransport:
        transport = await self.agent.open()
        assert isinstance(transport, ReconnectingTransport)
        self.transport = transport
        return transport

    async def reconnected(self) -> None:
        assert self.transport is not None
        for _ in range(300):
            if self.transport.reconnects:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the client did not reconnect within 15 s")


@pytest.mark.slow
async def test_http_and_websocket_clients_reach_the_agent_through_the_balancer(lb: Balancer) -> None:
    landed: list[str] = []
    for _ in range(3):  # new HTTP clients, round robin over the ready backends
        agent = RemoteAgent(lb.url)
        assert await one_turn(agent, "echo over http") == "over http\n"
        landed.append(agent.cookies["acpio-server"])
    assert sorted(landed) == ["a", "b", "c"]
    websocket = RemoteAgent(lb.ws_url)
    assert await one_turn(websocket, "echo over a websocket") == "over a websocket\n"
    assert websocket.cookies["acpio-server"] in lb.backends  # the upgrade got the cookie too
    assert await one_turn(RemoteAgent(lb.tcp_url), "echo over tcp") == "over tcp\n"


@pytest.mark.slow
async def test_streamable_http_needs_the_affinity_cookie_a_websocket_does_not(
    tmp_path: Path, store: str
) -> None:
    """Without the cookie each request of an HTTP connection may go to another backend, which knows it not."""

    def no_affinity(config: str) -> str:
        config = re.sub(r"\n *(cookie acpio-server|option persist)[^\n]*", "", config)
        return re.sub(r" cookie [abc]\n", "\n", config)

    async with balancer(tmp_path, store, edit=no_affinity) as lb:
        with pytest.raises(AcpError, match="Unknown Acp-Connection-Id"):
            await one_turn(RemoteAgent(lb.url), "echo lost")
        # a WebSocket is one TCP connection: it stays on its backend with or without the cookie
        assert await one_turn(RemoteAgent(lb.ws_url), "echo kept") == "kept\n"


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_backend_killed_mid_turn_the_next_prompt_continues_on_another_from_the_store(
    lb: Balancer, store: str, scheme: str
) -> None:
    agent = RemoteAgent(f"{scheme}://127.0.0.1:{lb.port}", reconnect=True)
    seen: dict[str, Any] = {}

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            seen["session"] = session.session_id
            session.send_prompt("echo before")
            assert await session.read_to_string() == "before\n"
            victim = lb.backends[agent.cookies["acpio-server"]]
            seen["victim"], seen["owner"] = victim.name, lease_owner(store, session.session_id)
            session.send_prompt("echo working\nsleep 30")
            await session.read_update()  # the turn is under way
            victim.kill()
            with pytest.raises(RequestError) as lost:
                await session.read_to_string()
            seen["lost"] = str(lost.value)
            session.send_prompt("echo after")
            seen["after"] = await session.read_to_string()
            seen["now"] = agent.cookies["acpio-server"]
            seen["new owner"] = lease_owner(store, session.session_id)

    await asyncio.wait_for(Client.builder().connect_with(agent, main), 150)
    assert seen["after"] == "after\n"
    assert seen["now"] != seen["victim"]
    assert "broke" in seen["lost"] or "lost" in seen["lost"], seen["lost"]
    assert seen["owner"] is not None
    assert seen["new owner"] not in (None, seen["owner"])  # the dead backend's lease was taken over
    told = await history(lb.url, seen["session"])
    assert told.startswith("before\n")  # nothing of the finished turns is lost
    assert told.endswith("after\n")


@pytest.mark.slow
async def test_a_drained_backend_finishes_its_running_turn_and_new_clients_go_elsewhere(
    tmp_path: Path, store: str
) -> None:
    # a drain timeout no loaded test machine reaches: the turn must end by itself
    async with balancer(tmp_path, store, server_options=("--drain-timeout", "120")) as lb:
        agent = RemoteAgent(lb.url, reconnect=True)
        kept = Kept(agent)
        seen: dict[str, Any] = {}

        async def main(cx: SessionConnection) -> None:
            await cx.send_request(acp.InitializeRequest(protocol_version=1))
            async with cx.build_session(Path("/tmp")).start_session() as session:
                # the permission is asked, and answered by a POST, after the drain began
                session.send_prompt("echo start\nsleep 1.5\npermission Deploy?\necho end")
                await session.read_update()
                drained = seen["drained"] = lb.backends[agent.cookies["acpio-server"]]
                drained.process.terminate()  # SIGTERM: a deploy
                # HAProxy learns of the drain at its next health check (every second). A client that
                # comes in between is retried on another backend (retry-on 503), but under load the
                # suite saw one refused all the same: docs/deploy.md tells clients to connect again.
                await until_not_ready(drained.address)
                await asyncio.sleep(2.5)
                others = [RemoteAgent(lb.url) for _ in range(3)]
                said = await asyncio.gather(*(one_turn(other, "echo elsewhere") for other in others))
                assert said == ["elsewhere\n"] * 3
                seen["others"] = {other.cookies["acpio-server"] for other in others}
                seen["turn"] = await session.read_to_string(permissions="allow")
                # then the drained backend ends the connection: the client reconnects elsewhere
                await kept.reconnected()
                session.send_prompt("echo next")
                seen["next"] = await session.read_to_string()
                seen["now"] = agent.cookies["acpio-server"]

        await asyncio.wait_for(Client.builder().connect_with(kept, main), 150)
        drained = seen["drained"]
        assert await asyncio.wait_for(drained.process.wait(), 30) == 0
    assert seen["turn"].endswith("end\n")  # the running turn finished on the drained backend
    assert drained.name not in seen["others"]  # new clients went elsewhere
    assert seen["next"] == "next\n"
    assert seen["now"] != drained.name


@pytest.mark.slow
async def test_200_concurrent_sessions_across_the_three_backends(lb: Balancer, store: str) -> None:
    """12 clients (one agent process each) hold 200 sessions between them, all prompted at once."""
    clients, sessions = 12, 200
    landed: list[str] = []
    open_leases: list[int] = []

    async def client(number: int, count: int, all_open: asyncio.Barrier) -> list[str]:
        agent = RemoteAgent(lb.ws_url)

        async def main(cx: SessionConnection) -> list[str]:
            await cx.send_request(acp.InitializeRequest(protocol_version=1))

            async def one(index: int) -> str:
                async with cx.build_session(Path("/tmp")).start_session() as session:
                    await all_open.wait()
                    if number == 0 and index == 0:
                        open_leases.append(count_leases(store))
                    session.send_prompt(f"echo client {number} session {index}")
                    return await session.read_to_string()

            return await asyncio.gather(*(one(index) for index in range(count)))

        said = await Client.builder().connect_with(agent, main)
        landed.append(agent.cookies["acpio-server"])
        return said

    counts = [sessions // clients + (1 if n < sessions % clients else 0) for n in range(clients)]
    barrier = asyncio.Barrier(sessions)
    said = await asyncio.wait_for(
        asyncio.gather(*(client(n, count, barrier) for n, count in enumerate(counts))), 240
    )
    for number, answers in enumerate(said):
        assert answers == [f"client {number} session {index}\n" for index in range(counts[number])]
    assert sum(map(len, said)) == sessions
    assert sorted(set(landed)) == ["a", "b", "c"]  # spread over the three
    assert open_leases == [sessions]  # every session open at once, each leased to its backend


def count_leases(store: str) -> int:
    import psycopg

    with psycopg.connect(store) as db:
        row = db.execute("SELECT count(*) FROM acpio_session_leases").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
async def test_the_deployment_example_runs_as_written(store: str) -> None:
    """``python examples/deploy/run.py STORE`` (docs/deploy.md): the launcher and haproxy.cfg as shipped."""
    port, tcp_port = free_port(), free_port()
    launcher = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "examples" / "deploy" / "run.py"), store,
        "--port", str(port), "--tcp-port", str(tcp_port),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert launcher.stdout is not None
        lines = [(await asyncio.wait_for(launcher.stdout.readline(), 60)).decode() for _ in range(4)]
        assert [line.split(":")[0] for line in lines[:3]] == ["backend a", "backend b", "backend c"]
        assert lines[3] == (
            f"balancing on http://127.0.0.1:{port} (ws:// too), "
            f"WebSocket over TCP on ws://127.0.0.1:{tcp_port}\n"
        )
        await wait_ready(f"http://127.0.0.1:{port}")
        for url in (f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", f"ws://127.0.0.1:{tcp_port}"):
            assert await one_turn(RemoteAgent(url), "echo deployed") == "deployed\n"
    finally:
        if launcher.returncode is None:
            launcher.terminate()
    assert await asyncio.wait_for(launcher.wait(), 60) == 0


async def wait_ready(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{url}/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise AssertionError(f"{url} was not ready within 10 s")


def test_docs_deploy_shows_the_configuration_the_example_runs() -> None:
    page = (ROOT / "docs" / "deploy.md").read_text()
    shown = page.split("```haproxy\n", 1)[1].split("```", 1)[0]
    assert shown == (ROOT / "examples" / "deploy" / "haproxy.cfg").read_text()


#: Served in each backend (``acpio serve --app``): says "begun", waits for the file ``gate`` in the
#: session's directory, asks a permission, says the answer.
ATTACH_APP = """
import asyncio
import os
from pathlib import Path

from acpio.app import AgentApp, Turn

app = AgentApp("gated", unstable=True, store=os.environ["ACPIO_TEST_STORE"])


@app.prompt
async def prompt(turn: Turn) -> None:
    await turn.say("begun ")
    while not (Path(turn.cwd) / "gate").exists():
        await asyncio.sleep(0.02)
    async with turn.tool_call("Delete build/", kind="delete") as call:
        allowed = await turn.ask_permission(call)
    await turn.say("allowed " if allowed else "denied ")
"""


async def attach_through(
    url: str, session_id: str, role: str, work: Any
) -> tuple[Any, dict[str, str] | None]:
    """Attach through the balancer, again with the cookie of a route it is refused with: what `work` gives."""

    async def main(cx: SessionConnection) -> tuple[bool, Any]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        try:
            attached = await (control_session if role == "controller" else observe_session)(cx, session_id)
        except ResourceNotFound as exc:
            return False, exc
        return True, await work(attached)

    done, found = await Client.builder().connect_with(RemoteAgent(url), main)
    if done:
        return found, None
    assert "with the cookie acpio-server=" in found.message  # it says what to do
    route = route_cookies(found)
    assert route is not None
    done, result = await Client.builder().connect_with(RemoteAgent(url, cookies=httpx.Cookies(route)), main)
    assert done
    return result, route


@pytest.mark.slow
async def test_attach_through_the_balancer_reaches_the_backend_running_the_turn(
    tmp_path: Path, store: str
) -> None:
    (tmp_path / "attach_app.py").write_text(ATTACH_APP)
    async with balancer(tmp_path, store, app="attach_app:app") as lb:
        owner_agent = RemoteAgent(lb.ws_url)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        ready: list[str] = []
        both_ready = asyncio.Event()

        def attached(role: str) -> None:
            ready.append(role)
            if len(ready) == 3:
                both_ready.set()

        async def owner(cx: SessionConnection) -> tuple[str, list[Any]]:
            await cx.send_request(acp.InitializeRequest(protocol_version=1))
            async with cx.build_session(tmp_path).start_session() as session:
                session.send_prompt("go")
                assert (await session.read_update()).text == "begun "  # type: ignore[union-attr]
                opened.set_result(session.session_id)
                await both_ready.wait()
                (tmp_path / "gate").touch()
                seen: list[Any] = []
                async for message in session:  # the owner answers nothing: the controller does
                    if message.method == AttachedRequestResolved.METHOD:
                        seen.append(AttachedRequestResolved.model_validate(message.dispatch.params))
                    elif message.text is not None:
                        seen.append(message.text)
                return str(session.stop_reason), seen

        async def observer(watched: Any) -> tuple[list[str], list[str], str | None]:
            replay = [n.update.content.text for n in watched.replay if hasattr(n.update, "content")]
            attached("observer")
            updates, ended = await watched.read_turn()
            live = [n.update.content.text for n in updates if isinstance(n.update, acp.AgentMessageChunk)]
            return replay, live, ended.stop_reason

        async def controller(controlled: Any) -> tuple[str, str | None]:
            attached("controller")
            while not isinstance(item := await controlled.read(), RequestPermissionMessage):
                pass
            item.respond(
                acp.RequestPermissionResponse(outcome=acp.SelectedPermissionOutcome(option_id="allow"))
            )
            items, ended = await controlled.read_turn()
            said = [
                i.update.content.text
                for i in items
                if isinstance(getattr(i, "update", None), acp.AgentMessageChunk)
            ]
            return "".join(said), ended.stop_reason

        async with asyncio.timeout(60):
            owning = asyncio.ensure_future(Client.builder().connect_with(owner_agent, owner))
            session_id = await opened
            holder = owner_agent.cookies.get("acpio-server")
            assert holder in ("a", "b", "c")  # whichever backend HAProxy picked first runs the turn
            # and a third client, acpio prompt --attach, which follows the route by itself
            command = asyncio.create_subprocess_exec(
                sys.executable, "-m", "acpio", "prompt", "--agent", lb.ws_url, "--attach", session_id,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            watching = attach_through(lb.ws_url, session_id, "observer", observer)
            controlling = attach_through(lb.ws_url, session_id, "controller", controller)
            cli = await command
            try:
                assert cli.stdout is not None
                while b"--- end of history ---" not in await asyncio.wait_for(cli.stdout.readline(), 30):
                    pass
                attached("acpio prompt")
                (
                    (seen_by_observer, observer_route),
                    (seen_by_controller, controller_route),
                ) = await asyncio.gather(watching, controlling)
                stop_reason, owner_saw = await owning
                shown, errors = await asyncio.wait_for(cli.communicate(), 30)
            finally:
                if cli.returncode is None:
                    cli.kill()
            assert cli.returncode == 0, errors
            assert shown.decode().split()[-4:] == ["allowed", "[stop", "reason:", "end_turn]"]
        # the two attaches landed on the holder, at least one of them redirected there by the route
        routes = [route for route in (observer_route, controller_route) if route is not None]
        assert routes, "HAProxy's round robin sent both new clients to the holder: nothing was routed"
        assert all(route == {"acpio-server": holder} for route in routes)
        replay, live, observer_stop = seen_by_observer
        assert replay == ["go", "begun "]
        assert (live, observer_stop) == (["allowed "], "end_turn")
        assert seen_by_controller == ("allowed ", "end_turn")
        # the controller answered first: the owner was told, then saw the turn go on
        assert stop_reason == "end_turn"
        resolved = [item for item in owner_saw if isinstance(item, AttachedRequestResolved)]
        assert [r.result for r in resolved] == [{"outcome": {"outcome": "selected", "optionId": "allow"}}]
        assert owner_saw[-1] == "allowed "
