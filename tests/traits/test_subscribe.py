"""``subscribe()``: every message, with its direction, in the order each side saw it."""

from __future__ import annotations

import asyncio

from acpio.schema import InitializeRequest, NewSessionRequest, PromptRequest, TextContent
from acpio.traits import StreamDirection, StreamMessage, Subscription

from ._support import connected

IN, OUT = StreamDirection.INCOMING, StreamDirection.OUTGOING


async def collect(subscription: Subscription) -> list[StreamMessage]:
    return [message async for message in subscription]


def summary(messages: list[StreamMessage]) -> list[tuple[StreamDirection, str, str]]:
    """(direction, kind, method or the method of the request answered) for each message."""
    methods: dict[object, str] = {}
    out = []
    for m in messages:
        if m.kind == "request":
            methods[m.id] = m.method or ""
        out.append((m.direction, m.kind, m.method or methods.get(m.id, "?")))
    return out


async def test_both_sides_see_every_message_in_order_and_iteration_ends_at_close() -> None:
    async with connected() as (agent_side, client_side):
        client_seen = asyncio.create_task(collect(client_side.subscribe()))
        agent_seen = asyncio.create_task(collect(agent_side.subscribe()))
        await client_side.initialize(InitializeRequest(protocol_version=1))
        sid = (await client_side.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        prompt = PromptRequest(session_id=sid, prompt=[TextContent(text="echo a b")])
        await client_side.prompt(prompt)
    client_view = summary(await client_seen)
    agent_view = summary(await agent_seen)
    assert client_view == [
        (OUT, "request", "initialize"),
        (IN, "response", "initialize"),
        (OUT, "request", "session/new"),
        (IN, "response", "session/new"),
        (OUT, "request", "session/prompt"),
        (IN, "notification", "session/update"),
        (IN, "notification", "session/update"),
        (IN, "response", "session/prompt"),
    ]
    flipped = {IN: OUT, OUT: IN}
    assert agent_view == [(flipped[d], kind, method) for d, kind, method in client_view]
    updates = [
        m.params["update"]["content"]["text"] for m in await client_seen if m.method == "session/update"
    ]
    assert updates == ["a", "b"]


async def test_a_closed_subscription_stops_and_a_late_one_is_empty() -> None:
    async with connected() as (_, client_side):
        with client_side.subscribe() as early:
            await client_side.initialize(InitializeRequest(protocol_version=1))
        assert early.ended
        assert [m.direction for m in await collect(early)] == [OUT, IN]
        idle = client_side.subscribe()
    assert idle.ended
    assert await collect(idle) == []
    assert await collect(client_side.subscribe()) == []
