"""Extension methods: ``_vendor/x`` on the wire is ``ext_method("vendor/x", ...)`` in the traits."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import MethodNotFound
from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
from acpio.schema import ReadTextFileRequest
from acpio.traits import StreamDirection

from ._support import TurnAgent, TurnClient, connected


class Pong(ExtensionResponse):
    pong: dict[str, Any]


class Ping(ExtensionRequest, method="_test/ping", response=Pong):
    count: int


class Note(ExtensionNotification, method="_test/note"):
    text: str


async def test_an_ext_request_reaches_ext_method_without_its_underscore() -> None:
    async with connected() as (_, client_side):
        with client_side.subscribe() as seen:
            answer = await client_side.ext_method("test/ping", {"n": 1})
        assert answer == {"pong": {"n": 1}}
        sent = seen.get_nowait()
        assert sent is not None
        assert sent.direction is StreamDirection.OUTGOING
        assert sent.method == "_test/ping"


async def test_a_typed_extension_request_is_answered_by_ext_method() -> None:
    async with connected() as (_, client_side):
        pong = await client_side.connection.send_request(Ping(count=3))
        assert type(pong) is Pong
        assert pong.pong == {"count": 3}


async def test_an_ext_request_the_peer_does_not_handle_answers_method_not_found() -> None:
    async with connected() as (agent_side, client_side):
        with pytest.raises(MethodNotFound) as caught:
            await client_side.ext_method("test/missing", {})
        assert caught.value.data == "_test/missing"
        with pytest.raises(MethodNotFound):  # TurnClient keeps the default ext_method
            await agent_side.ext_method("test/ping", {})


async def test_ext_notifications_both_ways() -> None:
    client = TurnClient()
    async with connected(client=client) as (agent_side, client_side):
        await client_side.ext_notification("test/note", {"text": "to the agent"})
        client_side.connection.send_notification(Note(text="typed"))
        await agent_side.ext_notification("test/note", {"text": "to the client"})
        # Notifications are handled in order before the next message: once a later request is
        # answered, each side has handled them.
        await client_side.ext_method("test/ping", {})
        await agent_side.read_text_file(ReadTextFileRequest(session_id="s", path="/work/a.txt"))
        agent = agent_side.agent
        assert isinstance(agent, TurnAgent)
        assert agent.ext_notes == [("test/note", {"text": "to the agent"}), ("test/note", {"text": "typed"})]
        assert client.ext_notes == [("test/note", {"text": "to the client"})]
