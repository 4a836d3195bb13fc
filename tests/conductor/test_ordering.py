"""Streams through a chain lose and reorder nothing."""

from __future__ import annotations

from typing import Any

from acpio import Proxy
from acpio import schema as acp
from acpio.conductor import Chain, MemorySink
from acpio.session import TurnEnded

from ._support import run_client
from .scripted_agent import ScriptedAgent

TOTAL = 10_000


async def stream(cx: Any, count: int) -> tuple[list[str], Any]:
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    texts: list[str] = []
    async with cx.build_session("/").start_session() as session:
        session.send_prompt(f"stream {count}")
        while not isinstance(item := await session.read_update(), TurnEnded):
            texts.append(item.text)
        return texts, item.stop_reason


async def test_ten_thousand_updates_through_three_proxies_arrive_complete_and_in_order() -> None:
    chain = Chain.agent(
        "conductor", [Proxy.builder(), Proxy.builder(), Proxy.builder(), ScriptedAgent().builder()]
    )

    async def main(cx: Any) -> tuple[list[str], Any]:
        return await stream(cx, TOTAL)

    texts, stop = await run_client(chain, main)
    assert len(texts) == TOTAL
    assert texts == [str(i) for i in range(TOTAL)]
    assert stop == "end_turn"


async def test_the_trace_of_a_stream_records_every_update_on_every_hop_in_order() -> None:
    sink = MemorySink()
    count = 500
    chain = Chain.agent("conductor", [Proxy.builder(), Proxy.builder(), ScriptedAgent().builder()]).trace_to(
        sink
    )

    async def main(cx: Any) -> tuple[list[str], Any]:
        return await stream(cx, count)

    texts, _ = await run_client(chain, main)
    assert texts == [str(i) for i in range(count)]
    hops = [("Agent", "Proxy(1)"), ("Proxy(1)", "Proxy(0)"), ("Proxy(0)", "Client")]
    for source, target in hops:
        seen = [
            e["params"]["update"]["content"]["text"]
            for e in sink.events
            if e["type"] == "notification" and (e["from"], e["to"]) == (source, target)
        ]
        assert seen == texts, (source, target)
