"""Unstable methods in the trait style: off unless ``use_unstable_protocol=True`` (the official SDK's flag).

Without it an unstable method the implementation defines answers ``-32601`` (a warning says so when
the connection is made), and calling one raises :class:`UnstableMethodNotEnabled` before anything
is written. The builder-style behaviour is tested in ``tests/roles/test_unstable.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from acpio import MethodNotFound, UnstableMethodNotEnabled
from acpio import schema as acp
from acpio.testing import WirePeer
from acpio.traits import AgentSideConnection, AgentTrait, ClientSideConnection, ClientTrait
from acpio.transports.channel import Channel

TIMEOUT = 5
FORK = {"sessionId": "s1", "cwd": "/tmp"}


def _method_not_found(answer: dict[str, Any], request_id: int, method: str) -> None:
    assert answer == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32601, "message": "Method not found", "data": method},
    }


class Forker(AgentTrait):
    async def fork_session(self, params: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        return acp.ForkSessionResponse(session_id="compat-fork")


@asynccontextmanager
async def _compat_agent(**options: Any) -> AsyncIterator[WirePeer]:
    ours, theirs = Channel.duplex()
    async with AgentSideConnection(Forker(), ours, **options):
        yield WirePeer(theirs, timeout=TIMEOUT)
        await theirs.aclose()


async def test_compat_an_implemented_unstable_method_answers_method_not_found_without_the_flag(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="acpio.traits"):
        async with _compat_agent() as client:
            client.request("session/fork", FORK, request_id=1)
            _method_not_found(await client.recv(), 1, "session/fork")
    assert "Forker defines fork_session()" in caplog.text
    assert "use_unstable_protocol=True" in caplog.text


async def test_compat_use_unstable_protocol_turns_them_on() -> None:
    async with _compat_agent(use_unstable_protocol=True) as client:
        client.request("session/fork", FORK, request_id=1)
        assert (await client.recv())["result"] == {"sessionId": "compat-fork"}


@pytest.mark.parametrize("flag", [False, True])
async def test_compat_calling_an_unstable_method(flag: bool) -> None:
    ours, theirs = Channel.duplex()
    agent = WirePeer(theirs, timeout=TIMEOUT)
    async with ClientSideConnection(ClientTrait(), ours, use_unstable_protocol=flag) as conn:
        if not flag:
            with pytest.raises(UnstableMethodNotEnabled, match="use_unstable_protocol=True"):
                await conn.fork_session(acp.ForkSessionRequest.model_validate(FORK))
            await conn.ext_notification("vendor/marker", {})
            assert (await agent.recv())["method"] == "_vendor/marker"  # nothing was written before it
        else:
            call = asyncio.create_task(conn.fork_session(acp.ForkSessionRequest.model_validate(FORK)))
            request = await agent.recv()
            # ACP requires mcpServers, which the schema leaves optional: it is sent, empty.
            assert (request["method"], request["params"]) == ("session/fork", {**FORK, "mcpServers": []})
            agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s2"}})
            assert (await call).session_id == "s2"
        await agent.close()


async def test_compat_an_unflagged_agent_answers_the_flagged_client_method_not_found() -> None:
    ours, theirs = Channel.duplex()
    async with (
        AgentSideConnection(Forker(), ours),
        ClientSideConnection(ClientTrait(), theirs, use_unstable_protocol=True) as conn,
    ):
        with pytest.raises(MethodNotFound):
            await conn.fork_session(acp.ForkSessionRequest.model_validate(FORK))
