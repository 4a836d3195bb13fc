"""Connection behaviours beyond one turn: capability checks, a connection used as an implementation."""

from __future__ import annotations

import asyncio

import pytest

from acpio.capabilities import CapabilityNotAdvertised
from acpio.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    InitializeRequest,
    ListSessionsRequest,
    NewSessionRequest,
    PromptRequest,
    ReadTextFileRequest,
    StopReason,
    TextContent,
    WriteTextFileRequest,
)
from acpio.traits import AgentSideConnection, ClientSideConnection
from acpio.transports import Channel

from ._support import TIMEOUT, TurnAgent, TurnClient


async def test_require_capabilities_refuses_what_the_peer_did_not_advertise() -> None:
    ours, theirs = Channel.duplex()
    agent_side = AgentSideConnection(TurnAgent, theirs, require_capabilities=True)
    client_side = ClientSideConnection(TurnClient(), ours, require_capabilities=True)
    async with asyncio.timeout(TIMEOUT), agent_side, client_side:
        read_only = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
        await client_side.initialize(InitializeRequest(protocol_version=1, client_capabilities=read_only))
        assert (
            await agent_side.read_text_file(ReadTextFileRequest(session_id="s", path="/work/a.txt"))
        ).content
        with pytest.raises(CapabilityNotAdvertised, match=r"fs\.writeTextFile"):
            await agent_side.write_text_file(WriteTextFileRequest(session_id="s", path="/x", content=""))
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.list"):
            await client_side.list_sessions(ListSessionsRequest())
        await client_side.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))  # baseline: allowed


async def test_a_client_side_connection_serves_as_an_agent_a_two_line_proxy() -> None:
    # client -> [AgentSideConnection serving a ClientSideConnection] -> TurnAgent
    client = TurnClient()
    upstream, client_end = Channel.duplex()
    downstream, agent_end = Channel.duplex()
    proxy = AgentSideConnection(lambda up: ClientSideConnection(up, downstream), upstream)
    assert isinstance(proxy.agent, ClientSideConnection)
    async with (
        asyncio.timeout(TIMEOUT),
        AgentSideConnection(TurnAgent, agent_end),
        proxy.agent,
        proxy,
        ClientSideConnection(client, client_end) as client_side,
    ):
        await client_side.initialize(InitializeRequest(protocol_version=1))
        sid = (await client_side.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        prompt = PromptRequest(session_id=sid, prompt=[TextContent(text="tools /work/a.txt")])
        done = await client_side.prompt(prompt)
        assert done.stop_reason == StopReason.END_TURN
        assert client.files["/work/a.txt"] == "HELLO"
        assert client.updates == [(sid, "permission:allow"), (sid, "terminal:hi:0")]
        assert await client_side.ext_method("test/ping", {"via": "proxy"}) == {"pong": {"via": "proxy"}}
