"""The peer state (acpio.peer.PeerState): one record of initialize, one check, in both styles."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import pytest

from acpio import MethodNotFound
from acpio.capabilities import CapabilityNotAdvertised, UnsupportedProtocolVersion, checks_params
from acpio.errors import NotInProtocolVersion
from acpio.jsonrpc import Connection
from acpio.peer import PeerState
from acpio.roles import Client
from acpio.schema import (
    NOTIFICATIONS,
    REQUESTS,
    AgentCapabilities,
    CloseSessionRequest,
    ForkSessionRequest,
    ImageContent,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    MethodSpec,
    NewSessionRequest,
    PromptRequest,
    ReadTextFileRequest,
    SetSessionModeRequest,
    TextContent,
    v2,
)
from acpio.testing import WirePeer
from acpio.traits import ClientSideConnection, ClientTrait
from acpio.transports import Channel

from ._support import TIMEOUT, ScriptAgent, builder_client, compat_pair

INIT = InitializeRequest(protocol_version=1)


def new() -> NewSessionRequest:
    return NewSessionRequest(cwd="/work", mcp_servers=[])


def load() -> LoadSessionRequest:
    return LoadSessionRequest(session_id="old", cwd="/work", mcp_servers=[])


async def test_a_session_request_before_initialize_is_refused_alike_in_both_styles() -> None:
    async with builder_client(ScriptAgent()) as (cx, tap):
        with pytest.raises(RuntimeError, match="session/new was sent before initialize") as builder:
            cx.send_request(new())
        assert tap.sent == []
    async with compat_pair() as (_, client, tap):
        with pytest.raises(RuntimeError, match="session/new was sent before initialize") as compat:
            await client.new_session(new())
        assert tap.sent == []
    assert str(builder.value) == str(compat.value)


async def test_an_unadvertised_method_is_refused_alike_in_both_styles() -> None:
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        with pytest.raises(CapabilityNotAdvertised, match=r"loadSession") as builder:
            cx.send_request(load())
        assert tap.sent_methods() == ["initialize"]
    async with compat_pair() as (_, client, tap):
        await client.initialize(INIT)
        with pytest.raises(CapabilityNotAdvertised, match=r"loadSession") as compat:
            await client.load_session(load())
        assert tap.sent_methods() == ["initialize"]
    assert str(builder.value) == str(compat.value)


async def test_the_trait_style_client_records_initialize_in_its_connection_once() -> None:
    async with compat_pair(require_capabilities=False) as (_, client, tap):
        await client.initialize(INIT)
        cx = client.connection
        assert client.peer_state is cx.peer_state
        assert client.agent_features is cx.agent_features is not None
        assert cx.protocol_version == 1
        # Typed requests sent on the connection directly are checked against the same record.
        with pytest.raises(CapabilityNotAdvertised, match=r"loadSession"):
            cx.send_request(load())
        assert tap.sent_methods() == ["initialize"]


async def test_an_answer_nobody_read_yet_is_recorded_when_the_state_is_read() -> None:
    # A handler reacting to the message after the answer may run before the awaiting task resumes.
    async with builder_client(ScriptAgent(AgentCapabilities(load_session=True))) as (cx, _):
        sent = cx.send_request(INIT)
        with pytest.raises(MethodNotFound):  # answered after initialize, which is settled by now
            await cx.send_request("_vendor/ping", {})
        assert sent.done
        features = cx.agent_features
        assert features is not None
        assert features.load_session
        assert (await sent).protocol_version == 1


def test_an_unsupported_version_records_nothing() -> None:
    state = PeerState("agent")
    with pytest.raises(UnsupportedProtocolVersion):
        state.record_response(InitializeResponse(protocol_version=9))
    assert state.agent_features is None
    assert state.protocol_version is None
    state.record_response(InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities()))
    assert state.protocol_version == 1
    assert state.agent_features is not None


def test_a_client_that_did_not_initialize_advertised_nothing() -> None:
    state = PeerState("client")
    read = ReadTextFileRequest(session_id="s", path="/a")
    with pytest.raises(CapabilityNotAdvertised, match=r"fs\.readTextFile"):
        state.check("fs/read_text_file", read)
    assert state.check("fs/read_text_file", read, require_capabilities=False) is read
    state.record_request(
        InitializeRequest.model_validate(
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}
        )
    )
    assert state.check("fs/read_text_file", read) is read


def test_resume_and_fork_are_sent_with_mcp_servers() -> None:
    state = PeerState("agent")
    fork = ForkSessionRequest(session_id="s", cwd="/work")
    checked = state.check("session/fork", fork)
    assert checked.mcp_servers == []
    assert fork.mcp_servers is None  # the caller's request is left as it was


async def test_compat_fork_session_sends_an_empty_mcp_servers_list() -> None:
    ours, theirs = Channel.duplex()
    agent = WirePeer(theirs, timeout=TIMEOUT)
    async with ClientSideConnection(ClientTrait(), ours, use_unstable_protocol=True) as conn:
        call = asyncio.create_task(conn.fork_session(ForkSessionRequest(session_id="s1", cwd="/work")))
        request = await agent.recv()
        assert request["params"] == {"sessionId": "s1", "cwd": "/work", "mcpServers": []}
        agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s2"}})
        assert (await call).session_id == "s2"
        await agent.close()


# --- checks remembered: a method whose params are not read is checked once per state ---------------

CLOSE = CloseSessionRequest(session_id="s")
READ = ReadTextFileRequest(session_id="s", path="/a")


def _answer(capabilities: dict[str, object]) -> InitializeResponse:
    return InitializeResponse.model_validate({"protocolVersion": 1, "agentCapabilities": capabilities})


def _client_params(capabilities: dict[str, object]) -> dict[str, object]:
    return {"protocolVersion": 1, "clientCapabilities": capabilities}


def test_a_check_that_passed_is_made_again_once_the_agent_answers_again() -> None:
    state = PeerState("agent")
    state.record_response(_answer({"sessionCapabilities": {"close": {}}}))
    assert state.check("session/close", CLOSE) is CLOSE
    assert state.check("session/close", CLOSE) is CLOSE
    state.record_response(_answer({}))
    with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.close"):
        state.check("session/close", CLOSE)


def test_a_check_of_the_client_is_made_again_after_each_record_of_it() -> None:
    state = PeerState("client")
    state.record_client_params(_client_params({"fs": {"readTextFile": True}}))
    assert state.check("fs/read_text_file", READ) is READ
    assert state.check("fs/read_text_file", READ) is READ
    state.record_client_params(_client_params({}))
    with pytest.raises(CapabilityNotAdvertised, match=r"fs\.readTextFile"):
        state.check("fs/read_text_file", READ)
    state.record_client_params(_client_params({"fs": {"readTextFile": True}}))
    assert state.check("fs/read_text_file", READ) is READ
    state.record_answer(2)  # v2 has no fs/* methods
    with pytest.raises(NotInProtocolVersion):
        state.check("fs/read_text_file", READ)
    state.record_request(InitializeRequest.model_validate(_client_params({"fs": {"readTextFile": True}})))
    assert state.check("fs/read_text_file", READ) is READ
    state.record_request(InitializeRequest.model_validate(_client_params({})))
    with pytest.raises(CapabilityNotAdvertised, match=r"fs\.readTextFile"):
        state.check("fs/read_text_file", READ)


def test_a_check_passed_with_looser_options_does_not_pass_a_stricter_one() -> None:
    state = PeerState("client")
    assert state.check("fs/read_text_file", READ, require_capabilities=False) is READ
    with pytest.raises(CapabilityNotAdvertised, match=r"fs\.readTextFile"):
        state.check("fs/read_text_file", READ)
    agent = PeerState("agent")
    mode = SetSessionModeRequest(session_id="s", mode_id="m")
    assert agent.check("session/set_mode", mode) is mode
    with pytest.raises(RuntimeError, match="before initialize was answered"):
        agent.check("session/set_mode", mode, initialize_first="session")


def test_the_methods_whose_params_are_read_are_checked_each_time() -> None:
    state = PeerState("agent")
    state.record_response(_answer({}))
    text = PromptRequest(session_id="s", prompt=[TextContent(text="hi")])
    assert state.check("session/prompt", text) is text
    image = PromptRequest(session_id="s", prompt=[ImageContent(data="aGk=", mime_type="image/png")])
    with pytest.raises(CapabilityNotAdvertised, match=r"promptCapabilities\.image"):
        state.check("session/prompt", image)
    assert state.check("session/new", new()) is not None
    with pytest.raises(ValueError, match="relative path"):
        state.check("session/new", NewSessionRequest(cwd="work", mcp_servers=[]))
    fork = ForkSessionRequest(session_id="s", cwd="/work")
    for _ in range(2):  # filled in each time, the caller's request left as it was
        assert state.check("session/fork", fork, require_capabilities=False).mcp_servers == []
    assert fork.mcp_servers is None


async def test_a_check_remembered_before_initialize_is_made_again_once_its_answer_arrived() -> None:
    async with builder_client(ScriptAgent()) as (cx, _):  # the agent advertises no session/close
        sent = cx.send_request(INIT)
        assert cx.peer_state.check("session/close", CLOSE) is CLOSE  # nothing advertised yet: not refused
        with pytest.raises(MethodNotFound):  # answered after initialize, which is settled by now
            await cx.send_request("_vendor/ping", {})
        assert sent.done  # and nobody read its answer yet
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.close"):
            cx.peer_state.check("session/close", CLOSE)


async def test_a_typed_request_sent_before_is_checked_against_the_latest_answer() -> None:
    ours, theirs = Channel.duplex()
    agent = WirePeer(theirs, timeout=TIMEOUT)

    async def answer(result: dict[str, object]) -> dict[str, object]:
        request = await agent.recv()
        agent.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        return request

    async def main(cx: Connection) -> None:
        with_close = {"protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"close": {}}}}
        answering = asyncio.create_task(answer(with_close))
        await cx.send_request(INIT)
        await answering
        for _ in range(2):  # the second is sent as the first was, from what was remembered
            answering = asyncio.create_task(answer({}))
            await cx.send_request(CLOSE)
            assert (await answering)["method"] == "session/close"
        answering = asyncio.create_task(answer({"protocolVersion": 1, "agentCapabilities": {}}))
        await cx.send_request(INIT)  # initialized again: the agent no longer closes sessions
        await answering
        with pytest.raises(CapabilityNotAdvertised, match=r"sessionCapabilities\.close"):
            cx.send_request(CLOSE)
        await agent.close()

    async with asyncio.timeout(TIMEOUT):
        await Client.builder(name="client").connect_with(ours, main)


class _Spy:
    """Params that note every attribute a check reads from them (and hold nothing: each reads ``None``)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def __getattr__(self, name: str) -> None:
        self.read.append(name)


def _everything(side: str, tables: tuple[Mapping[str, MethodSpec], ...]) -> dict[str, Any]:
    """Capabilities with every one a method of ``tables`` needs on ``side`` (``"A"``, ``"C"``) turned on."""
    capabilities: dict[str, Any] = {}
    for table in tables:
        for spec in table.values():
            if spec.capability is not None and spec.capability.startswith(f"{side}."):
                *parents, leaf = spec.capability[2:].split(".")
                node = capabilities
                for parent in parents:
                    node = node.setdefault(parent, {})
                node.setdefault(leaf, {})
    return capabilities


def _states() -> list[PeerState]:
    """Agents and clients of each version that advertised everything: no check fails on a capability."""
    v1_tables, v2_tables = (REQUESTS, NOTIFICATIONS), (v2.REQUESTS, v2.NOTIFICATIONS)
    v1_agent = {**_everything("A", v1_tables), "loadSession": True, "mcpCapabilities": {"acp": True}}
    agent = PeerState("agent")
    agent.record_response(_answer(v1_agent))
    agent_v2 = PeerState("agent")
    agent_v2.record_request(
        v2.InitializeRequest(protocol_version=2, info=v2.Implementation(name="c", version="1"))
    )
    agent_v2.record_response(
        v2.InitializeResponse.model_validate(
            {
                "protocolVersion": 2,
                "info": {"name": "a", "version": "1"},
                "capabilities": _everything("A", v2_tables),
            }
        )
    )
    client = PeerState("client")
    client.record_client_params(_client_params({**_everything("C", v1_tables), "terminal": True}))
    client_v2 = PeerState("client")
    client_v2.record_client_params({"protocolVersion": 2, "capabilities": _everything("C", v2_tables)})
    client_v2.record_answer(2)
    return [agent, agent_v2, client, client_v2]


def test_only_the_methods_whose_params_a_check_reads_are_checked_each_time() -> None:
    """A check added for a method's params, anywhere on the send path, must register the method:
    PeerState remembers the passed checks of every other method, and would skip it after once."""
    methods = {"_vendor/ping"}
    for table in (REQUESTS, NOTIFICATIONS, v2.REQUESTS, v2.NOTIFICATIONS):
        methods |= set(table)
    read: set[str] = set()
    for state in _states():
        for method in sorted(methods):
            for require_capabilities in (True, False):
                spy = _Spy()
                with contextlib.suppress(Exception):  # a check may fail on what it read
                    state.check(method, spy, require_capabilities=require_capabilities)
                if spy.read:
                    read.add(method)
    assert read == {method for method in methods if checks_params(method)}
    assert read >= {"session/new", "session/prompt", "session/fork"}  # the spy sees the checks' reads
