"""Session setup (spec-conformance.md §E): new, load, resume, close, cwd, roots, MCP servers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from acpio.capabilities import CapabilityNotAdvertised
from acpio.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    CloseSessionRequest,
    EnvVariable,
    InitializeRequest,
    LoadSessionRequest,
    LoadSessionResponse,
    McpCapabilities,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    ResumeSessionRequest,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionResumeCapabilities,
    UserMessageChunk,
)
from acpio.session import McpServerList
from acpio.traits import ClientSideConnection
from acpio.transports import Channel

from ._support import (
    HISTORY,
    TIMEOUT,
    RecordingClient,
    ScriptAgent,
    builder_client,
    compat_agent,
    compat_pair,
)

INIT = InitializeRequest(protocol_version=1)
EVERYTHING = AgentCapabilities(
    load_session=True,
    mcp_capabilities=McpCapabilities(http=True, sse=True),
    session_capabilities=SessionCapabilities(
        resume=SessionResumeCapabilities(),
        close=SessionCloseCapabilities(),
        additional_directories=SessionAdditionalDirectoriesCapabilities(),
    ),
)
STDIO = McpServerStdio(
    name="tools", command="/usr/bin/tools", args=[], env=[EnvVariable(name="A", value="1")]
)
HTTP = McpServerHttp(name="web", url="https://mcp.example", headers=[])
SSE = McpServerSse(name="sse", url="https://mcp.example/sse", headers=[])


def load(cwd: str = "/work") -> LoadSessionRequest:
    return LoadSessionRequest(session_id="old", cwd=cwd, mcp_servers=[])


def resume() -> ResumeSessionRequest:
    return ResumeSessionRequest(session_id="old", cwd="/work", mcp_servers=[])


def close() -> CloseSessionRequest:
    return CloseSessionRequest(session_id="old")


# --- session/new -------------------------------------------------------------------------------


async def test_builder_session_new_sends_an_absolute_cwd_and_an_empty_mcp_servers_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 64, 85: build_session makes a relative cwd absolute; mcpServers is always on the wire.
    monkeypatch.chdir(tmp_path)
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("sub").start_session() as session:
            assert session.session_id == "s-1"
        params = tap.sent_request("session/new")["params"]
        assert params == {"cwd": str(tmp_path / "sub"), "mcpServers": []}


async def test_compat_session_new_sends_mcp_servers_even_when_empty() -> None:
    async with compat_pair() as (_, client, tap):
        await client.initialize(INIT)
        await client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert tap.sent_request("session/new")["params"] == {"cwd": "/work", "mcpServers": []}


def test_session_setup_requests_require_their_fields() -> None:
    # 64, 68: cwd and mcpServers (and sessionId for load) are required by the models.
    with pytest.raises(ValidationError):
        NewSessionRequest.model_validate({"cwd": "/work"})
    with pytest.raises(ValidationError):
        LoadSessionRequest.model_validate({"sessionId": "s", "cwd": "/work"})
    with pytest.raises(ValidationError):
        LoadSessionRequest.model_validate({"mcpServers": [], "cwd": "/work"})
    assert load().to_wire() == {"sessionId": "old", "cwd": "/work", "mcpServers": []}


async def test_relative_paths_are_refused_before_anything_is_sent() -> None:
    # 83, 85, 93, 175: typed requests with a relative cwd, additional directory or stdio command.
    bad: list[NewSessionRequest | LoadSessionRequest] = [
        NewSessionRequest(cwd="work", mcp_servers=[]),
        NewSessionRequest(cwd="/work", mcp_servers=[], additional_directories=["lib"]),
        NewSessionRequest(
            cwd="/work", mcp_servers=[McpServerStdio(name="t", command="tools", args=[], env=[])]
        ),
        load("work"),
    ]
    async with builder_client(ScriptAgent(EVERYTHING)) as (cx, tap):
        await cx.send_request(INIT)
        for request in bad:
            with pytest.raises(ValueError, match="absolute"):
                cx.send_request(request)
        assert tap.sent_methods() == ["initialize"]
    async with compat_pair(compat_agent(EVERYTHING), require_capabilities=False) as (_, client, tap):
        await client.initialize(INIT)
        for request in bad:
            call = (
                client.load_session(request)
                if isinstance(request, LoadSessionRequest)
                else client.new_session(request)
            )
            with pytest.raises(ValueError, match="absolute"):
                await call
        assert tap.sent_methods() == ["initialize"]


# --- capabilities gate optional methods and parameters ------------------------------------------


async def test_builder_refuses_load_resume_close_the_agent_did_not_advertise() -> None:
    # 66, 67, 73, 74, 78, 79.
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        for request, capability in [
            (load(), "agentCapabilities.loadSession"),
            (resume(), "agentCapabilities.sessionCapabilities.resume"),
            (close(), "agentCapabilities.sessionCapabilities.close"),
        ]:
            with pytest.raises(CapabilityNotAdvertised, match=capability.replace(".", r"\.")):
                cx.send_request(request)
        assert tap.sent_methods() == ["initialize"]


async def test_builder_sends_load_resume_close_when_advertised() -> None:
    async with builder_client(ScriptAgent(EVERYTHING)) as (cx, tap):
        await cx.send_request(INIT)
        for request in (load(), resume(), close()):
            await cx.send_request(request)
        assert tap.sent_methods() == ["initialize", "session/load", "session/resume", "session/close"]


async def test_compat_refuses_load_resume_close_the_agent_did_not_advertise() -> None:
    async with compat_pair() as (_, client, tap):
        await client.initialize(INIT)
        with pytest.raises(CapabilityNotAdvertised, match=r"loadSession"):
            await client.load_session(load())
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.resume"):
            await client.resume_session(resume())
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.close"):
            await client.close_session(close())
        assert tap.sent_methods() == ["initialize"]


async def test_mcp_transports_and_additional_directories_need_their_capabilities() -> None:
    # 82, 91: http/sse servers and additionalDirectories only when advertised; stdio always.
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        for server, flag in [(HTTP, "http"), (SSE, "sse")]:
            builder = cx.build_session("/work").with_mcp_server(McpServerList([server]))
            with pytest.raises(CapabilityNotAdvertised, match=rf"mcpCapabilities\.{flag}"):
                await builder.start_session()
        builder = cx.build_session("/work")
        builder.request.additional_directories = ["/lib"]
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.additionalDirectories"):
            await builder.start_session()
        async with cx.build_session("/work").with_mcp_server(McpServerList([STDIO])).start_session():
            pass
        assert tap.sent_methods() == ["initialize", "session/new"]
        # 93: env is an array of {name, value}, not a map.
        assert tap.sent_request("session/new")["params"]["mcpServers"] == [
            {"name": "tools", "command": "/usr/bin/tools", "args": [], "env": [{"name": "A", "value": "1"}]}
        ]
    async with compat_pair() as (_, client, tap):
        await client.initialize(INIT)
        with pytest.raises(CapabilityNotAdvertised, match=r"mcpCapabilities\.http"):
            await client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[HTTP]))
        with pytest.raises(CapabilityNotAdvertised, match=r"additionalDirectories"):
            await client.new_session(
                NewSessionRequest(cwd="/work", mcp_servers=[], additional_directories=["/l"])
            )
        assert tap.sent_methods() == ["initialize"]
    async with builder_client(ScriptAgent(EVERYTHING)) as (cx, tap):
        await cx.send_request(INIT)
        builder = cx.build_session("/work").with_mcp_server(McpServerList([HTTP, SSE]))
        builder.request.additional_directories = ["/lib"]
        async with builder.start_session():
            pass
        params = tap.sent_request("session/new")["params"]
        assert [s["type"] for s in params["mcpServers"]] == ["http", "sse"]
        assert params["additionalDirectories"] == ["/lib"]


def test_stdio_mcp_servers_require_env() -> None:
    # 89, 232: the schema requires env (send []).
    with pytest.raises(ValidationError):
        McpServerStdio.model_validate({"name": "t", "command": "/t", "args": []})
    assert "type" not in STDIO.to_wire()


async def test_resume_sends_mcp_servers_even_when_not_given() -> None:
    # 75, 232: the schema leaves mcpServers optional on session/resume, the prose says send it;
    # a request built without it goes out with mcpServers: [] in both styles, and the caller's
    # request is left as it was.
    request = ResumeSessionRequest(session_id="old", cwd="/work")
    agent = ScriptAgent(EVERYTHING)
    async with builder_client(agent) as (cx, tap):
        await cx.send_request(INIT)
        await cx.send_request(request)
        assert tap.sent_request("session/resume")["params"] == {
            "sessionId": "old",
            "cwd": "/work",
            "mcpServers": [],
        }
    received = agent.received[-1]
    assert isinstance(received, ResumeSessionRequest)
    assert received.mcp_servers == []
    async with compat_pair(compat_agent(EVERYTHING)) as (_, client, tap):
        await client.initialize(INIT)
        await client.resume_session(request)
        assert tap.sent_request("session/resume")["params"]["mcpServers"] == []
    assert request.mcp_servers is None
    # Servers that were given are sent as they are.
    async with builder_client(ScriptAgent(EVERYTHING)) as (cx, tap):
        await cx.send_request(INIT)
        await cx.send_request(ResumeSessionRequest(session_id="old", cwd="/work", mcp_servers=[STDIO]))
        assert [s["name"] for s in tap.sent_request("session/resume")["params"]["mcpServers"]] == ["tools"]


# --- load: replay before the answer ------------------------------------------------------------


async def test_builder_load_replay_reaches_the_session_in_order_before_the_answer() -> None:
    # 70, 71: replayed updates precede the load response on the wire and are not lost.
    async with builder_client(ScriptAgent(EVERYTHING)) as (cx, tap):
        await cx.send_request(INIT)
        response = await cx.send_request(load())
        assert type(response) is LoadSessionResponse
        wire = [m.get("method", "response") for m in tap.received]
        assert wire[-3:] == ["session/update", "session/update", "response"]
        async with cx.attach_session(NewSessionResponse(session_id="old")) as session:
            async with asyncio.timeout(TIMEOUT):
                first, second = await session.read_update(), await session.read_update()
        assert isinstance(first.update, UserMessageChunk)  # type: ignore[union-attr]
        assert isinstance(second.update, AgentMessageChunk)  # type: ignore[union-attr]
        assert [first.update.content.text, second.update.content.text] == [t for _, t in HISTORY]  # type: ignore[union-attr]


async def test_compat_load_replay_is_handled_before_load_session_returns() -> None:
    client = RecordingClient()
    async with compat_pair(compat_agent(EVERYTHING), client) as (_, agent, _tap):
        await agent.initialize(INIT)
        await agent.load_session(load())
        assert client.updates == [("old", text) for _, text in HISTORY]


async def test_a_null_load_result_is_read_as_empty_and_modes_are_read() -> None:
    # 77, 227: LoadSessionResponse carries modes/configOptions; null is accepted as {}.
    assert (
        LoadSessionResponse.model_validate(
            {"modes": {"currentModeId": "a", "availableModes": [{"id": "a", "name": "A"}]}}
        ).modes
        is not None
    )
    ours, theirs = Channel.duplex()
    async with asyncio.timeout(TIMEOUT), ClientSideConnection(RecordingClient(), ours) as client:
        call = asyncio.create_task(client.load_session(load()))
        request = orjson.loads(await theirs.receive())  # type: ignore[arg-type]
        theirs.send(orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": None}))
        assert await call == LoadSessionResponse()
        await theirs.aclose()
