"""What an implementation does not define: requests answer -32601, notifications are ignored."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import MethodNotFound
from acpio.schema import (
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    RequestPermissionRequest,
    SessionNotification,
    ToolCallUpdate,
)
from acpio.traits import (
    AGENT_METHODS,
    CLIENT_METHODS,
    AgentSideConnection,
    AgentTrait,
    ClientSideConnection,
    ClientTrait,
)
from acpio.traits.table import TraitMethod

from ._support import connected, raw_peer_of

SIDES = [
    pytest.param(lambda end: AgentSideConnection(AgentTrait(), end), AGENT_METHODS, id="agent"),
    pytest.param(lambda end: ClientSideConnection(ClientTrait(), end), CLIENT_METHODS, id="client"),
]


def requests(methods: tuple[TraitMethod, ...]) -> list[str]:
    return [m.method for m in methods if m.kind == "request"]


def notifications(methods: tuple[TraitMethod, ...]) -> list[str]:
    return [m.method for m in methods if m.kind == "notification"]


def assert_method_not_found(answer: dict[str, Any], method: str) -> None:
    assert "result" not in answer, f"{method} got a result: {answer}"
    assert answer["error"]["code"] == -32601, answer
    assert answer["error"]["data"] == method


@pytest.mark.parametrize(("make", "methods"), SIDES)
async def test_every_request_the_implementation_does_not_define_answers_method_not_found(
    make: Any, methods: tuple[TraitMethod, ...]
) -> None:
    async with raw_peer_of(make) as peer:
        for method in [*requests(methods), "session/bogus", "_vendor/unknown"]:
            assert_method_not_found(await peer.request(method, {}), method)


@pytest.mark.parametrize(("make", "methods"), SIDES)
async def test_notifications_the_implementation_does_not_define_are_ignored(
    make: Any, methods: tuple[TraitMethod, ...]
) -> None:
    async with raw_peer_of(make) as peer:
        for method in [*notifications(methods), "bogus/notification", "_vendor/note"]:
            peer.send({"method": method, "params": {}})
        # Nothing answered the notifications: the next frame answers this request.
        assert_method_not_found(await peer.request("session/bogus"), "session/bogus")


async def test_a_partial_implementation_answers_what_it_defines_and_refuses_the_rest() -> None:
    class OnlyInitialize(AgentTrait):
        async def initialize(self, params: InitializeRequest) -> InitializeResponse:
            return InitializeResponse(protocol_version=1)

    async with connected(agent=OnlyInitialize()) as (_, client_side):
        assert (await client_side.initialize(InitializeRequest(protocol_version=1))).protocol_version == 1
        with pytest.raises(MethodNotFound) as caught:
            await client_side.list_sessions(ListSessionsRequest())
        assert caught.value.data == "session/list"


async def test_the_agent_calling_an_unimplemented_client_method_gets_method_not_found() -> None:
    seen: list[BaseException] = []

    class Asker(AgentTrait):
        def __init__(self, client: AgentSideConnection) -> None:
            self.client = client

        async def list_sessions(self, params: ListSessionsRequest) -> Any:
            request = RequestPermissionRequest(
                session_id="s", tool_call=ToolCallUpdate(tool_call_id="c"), options=[]
            )
            try:
                await self.client.request_permission(request)
            except MethodNotFound as exc:
                seen.append(exc)
            raise MethodNotFound("session/list")

    class Silent(ClientTrait):
        async def session_update(self, params: SessionNotification) -> None:
            pass

    async with connected(agent=Asker, client=Silent()) as (_, client_side):
        with pytest.raises(MethodNotFound):
            await client_side.list_sessions(ListSessionsRequest())
    assert len(seen) == 1
    assert seen[0].data == "session/request_permission"


async def test_invalid_params_of_an_implemented_request_answer_invalid_params() -> None:
    class OnlyInitialize(AgentTrait):
        async def initialize(self, params: InitializeRequest) -> InitializeResponse:
            return InitializeResponse(protocol_version=1)

    async with raw_peer_of(lambda end: AgentSideConnection(OnlyInitialize(), end)) as peer:
        answer = await peer.request("initialize", {"protocolVersion": "not a number"})
        assert answer["error"]["code"] == -32602


def test_a_class_that_cannot_take_the_connection_is_a_clear_error() -> None:
    class NoArgs(AgentTrait):
        pass

    with pytest.raises(TypeError, match=r"pass an instance \(NoArgs\(\)\)"):
        AgentSideConnection(NoArgs, object())
