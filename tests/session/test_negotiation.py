"""The client's ``initialize``: offer v2, accept a v1 answer on the same connection; v1 and v2-only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acpio.capabilities import UnsupportedProtocolVersion
from acpio.errors import ParseError
from acpio.jsonrpc import Builder
from acpio.roles import Agent, Client
from acpio.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    StopReason,
    v2,
)
from acpio.session import SessionConnection, build_session
from tests.router.router_agent import router

from ._support import TIMEOUT, chunk, prompt_text, wire_connection

V1_REQUEST = InitializeRequest(
    protocol_version=1,
    client_info=Implementation(name="editor", version="3.0"),
    client_capabilities=ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=False)
    ),
)


class V1Agent:
    """A plain acpio v1 agent (builder style) recording the ``initialize`` it was sent."""

    def __init__(self) -> None:
        self.initialize: InitializeRequest | None = None

    def builder(self) -> Builder[Any]:
        app = Agent.builder(name="v1-agent")

        @app.on_request
        async def initialize(req: InitializeRequest) -> InitializeResponse:
            self.initialize = req
            return InitializeResponse(protocol_version=1)  # the latest it speaks, whatever was asked

        @app.on_request
        async def new_session(req: NewSessionRequest) -> NewSessionResponse:
            return NewSessionResponse(session_id="s1")

        @app.on_request
        async def prompt(req: PromptRequest, cx: SessionConnection) -> PromptResponse:
            cx.send_notification(chunk(req.session_id, f"v1: {prompt_text(req)}"))
            return PromptResponse(stop_reason=StopReason.END_TURN)

        return app


async def test_negotiating_against_a_v1_agent_is_v1_with_the_clients_capabilities(tmp_path: Path) -> None:
    agent = V1Agent()

    async def main(cx: SessionConnection) -> tuple[object, str, int | None]:
        async with asyncio.timeout(TIMEOUT):
            answer = await cx.initialize(V1_REQUEST)
            async with build_session(cx, tmp_path).start_session() as session:
                session.send_prompt("hello")
                text = await session.read_to_string()
                assert session.stop_reason == StopReason.END_TURN
        return answer, text, cx.protocol_version

    answer, text, version = await Client.builder().connect_with(agent.builder(), main)
    assert isinstance(answer, InitializeResponse)
    assert answer.protocol_version == 1
    assert (text, version) == ("v1: hello", 1)
    # The v1 agent read the v1 fields of the offer: it saw what a v1 client would have sent.
    assert agent.initialize is not None
    assert agent.initialize.protocol_version == 2
    assert agent.initialize.client_info == V1_REQUEST.client_info
    assert agent.initialize.client_capabilities == V1_REQUEST.client_capabilities


async def test_the_offer_carries_both_shapes_and_a_v2_answer_makes_a_v2_connection() -> None:
    async with wire_connection(Client.builder()) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize(V1_REQUEST))
        request = await peer.expect("initialize")
        assert request["params"] == {
            "protocolVersion": 2,
            "info": {"name": "editor", "version": "3.0"},
            "capabilities": {},
            "clientInfo": {"name": "editor", "version": "3.0"},
            "clientCapabilities": V1_REQUEST.client_capabilities.to_wire(),  # type: ignore[union-attr]
        }
        peer.respond(
            request, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": {}}
        )
        async with asyncio.timeout(TIMEOUT):
            answer = await answering
        assert isinstance(answer, v2.InitializeResponse)
        assert answer.info.name == "a"
        assert cx.protocol_version == 2


async def test_a_v2_request_offers_v1_fields_that_serve_no_client_methods() -> None:
    async with wire_connection(Client.builder()) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        request_v2 = v2.InitializeRequest(protocol_version=2, info=v2.Implementation(name="ed", version="1"))
        answering = asyncio.ensure_future(cx.initialize(request_v2))
        request = await peer.expect("initialize")
        params = request["params"]
        assert (params["protocolVersion"], params["info"], params["clientInfo"]) == (
            2,
            params["info"],
            params["info"],
        )
        assert params["clientCapabilities"] == {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "terminal": False,
        }
        peer.respond(request, {"protocolVersion": 1, "agentCapabilities": {}})
        async with asyncio.timeout(TIMEOUT):
            answer = await answering
        assert isinstance(answer, InitializeResponse)
        assert cx.protocol_version == 1


async def test_protocol_1_sends_the_v1_request_as_written() -> None:
    async with wire_connection(Client.builder(protocol=1)) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize(V1_REQUEST))
        request = await peer.expect("initialize")
        assert request["params"] == V1_REQUEST.to_wire()
        peer.respond(request, {"protocolVersion": 1})
        async with asyncio.timeout(TIMEOUT):
            assert await answering == InitializeResponse(protocol_version=1)
        with pytest.raises(ValueError, match="protocol=1"):
            await cx.initialize(
                v2.InitializeRequest(protocol_version=2, info=v2.Implementation(name="e", version="1"))
            )


async def test_a_v2_only_client_refuses_a_v1_agent_and_closes() -> None:
    async with wire_connection(Client.builder(protocol=2)) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize(V1_REQUEST))
        request = await peer.expect("initialize")
        assert "clientCapabilities" not in request["params"]
        assert request["params"]["protocolVersion"] == 2
        peer.respond(request, {"protocolVersion": 1})
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            async with asyncio.timeout(TIMEOUT):
                await answering
        assert 'protocol="negotiate"' in "\n".join(raised.value.__notes__)
        async with asyncio.timeout(TIMEOUT):
            await cx.wait_closed()


async def test_an_agent_refusing_v2_with_32022_is_asked_again_in_v1_on_the_same_connection() -> None:
    async with wire_connection(Client.builder()) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize(V1_REQUEST))
        offer = await peer.expect("initialize")
        error = {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"requested": 2, "supported": [1]},
        }
        peer.send({"jsonrpc": "2.0", "id": offer["id"], "error": error})
        retry = await peer.expect("initialize")
        assert retry["params"] == V1_REQUEST.to_wire()
        peer.respond(retry, {"protocolVersion": 1})
        async with asyncio.timeout(TIMEOUT):
            assert await answering == InitializeResponse(protocol_version=1)
        assert cx.protocol_version == 1


def test_protocol_must_be_1_2_or_negotiate() -> None:
    with pytest.raises(ValueError, match='1, 2 or "negotiate"'):
        Client.builder(protocol="3")  # type: ignore[arg-type]
    assert repr(Client(protocol=2)) == "Client(protocol=2)"


@pytest.mark.parametrize(
    ("only", "expected"), [(None, 2), (1, 1), (2, 2)], ids=["both", "v1-only", "v2-only"]
)
async def test_negotiating_with_acpios_version_router(
    tmp_path: Path, only: int | None, expected: int
) -> None:
    """acpio's router in front of the echo examples: a turn in the version it picks, the same client code."""

    async def main(cx: SessionConnection) -> tuple[int | None, str]:
        async with asyncio.timeout(TIMEOUT):
            await cx.initialize(V1_REQUEST)
            async with build_session(cx, tmp_path).start_session() as session:
                session.send_prompt("echo me")
                return cx.protocol_version, await session.read_to_string()

    version, text = await Client.builder().connect_with(router(only), main)
    assert version == expected
    assert text.strip() == "echo me"


@pytest.mark.parametrize(
    "answer", [{"protocolVersion": 2}, {"protocolVersion": 2, "info": "x", "capabilities": {}}]
)
async def test_a_v2_answer_that_is_no_v2_initialize_response_is_a_clear_parse_error(
    answer: dict[str, Any],
) -> None:
    async with wire_connection(Client.builder()) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize(V1_REQUEST))
        peer.respond(await peer.expect("initialize"), answer)
        with pytest.raises(ParseError, match="does not match InitializeResponse") as raised:
            async with asyncio.timeout(TIMEOUT):
                await answering
        note = "\n".join(raised.value.__notes__)
        assert "ACP v2 InitializeResponse" in note
        assert "connection is closed" in note
        assert cx.protocol_version is None
        async with asyncio.timeout(TIMEOUT):
            await cx.wait_closed()
