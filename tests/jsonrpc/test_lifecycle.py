"""``cx.phase``: the one value a connection's life is kept in, moving forward only."""

from __future__ import annotations

import asyncio

import pytest

from acpio.errors import ConnectionClosed
from acpio.jsonrpc import Connection, Phase, UntypedRole
from acpio.jsonrpc.lifecycle import Lifecycle
from acpio.transports import Channel

TIMEOUT = 10


async def test_end_of_input_then_finished() -> None:
    ours, theirs = Channel.duplex()
    seen: list[Phase] = []

    async def main(cx: Connection) -> None:
        seen.append(cx.phase)
        pending = cx.send_request("never/answered")
        await theirs.aclose()
        await cx.wait_closed()
        seen.append(cx.phase)
        with pytest.raises(ConnectionClosed, match="closed by the peer"):
            await pending

    cx_box: list[Connection] = []

    async def keep(cx: Connection) -> None:
        cx_box.append(cx)
        await main(cx)

    await asyncio.wait_for(UntypedRole.builder().connect_with(ours, keep), TIMEOUT)
    assert seen == [Phase.OPEN, Phase.INPUT_ENDED]
    assert cx_box[0].phase is Phase.FINISHED


async def test_a_request_after_the_peer_closed_says_that_the_peer_closed() -> None:
    ours, theirs = Channel.duplex()

    async def main(cx: Connection) -> None:
        await theirs.aclose()  # an agent that exits at once: gone before the first request
        await cx.wait_closed()
        with pytest.raises(ConnectionClosed) as caught:
            await cx.send_request("late")
        assert str(caught.value) == "Connection closed by the peer before a response to 'late' arrived"

    await asyncio.wait_for(UntypedRole.builder().connect_with(ours, main), TIMEOUT)


async def test_close_then_a_failure_keeps_the_failure() -> None:
    ours, _theirs = Channel.duplex()

    async def main(cx: Connection) -> None:
        cx.close()
        assert cx.phase is Phase.CLOSING
        cx.close()  # twice: nothing more
        assert cx.phase is Phase.CLOSING

        async def broken() -> None:
            raise ValueError("boom")

        cx.spawn(broken)  # fails the connection, though it was closing: connect_with raises it
        await asyncio.Event().wait()

    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(UntypedRole.builder().connect_with(ours, main), TIMEOUT)


async def test_phases_only_move_forward() -> None:
    failed: list[str] = []
    life = Lifecycle("x", lambda make: failed.append(str(make("m"))))
    assert life.enter(Phase.CLOSING)
    assert not life.enter(Phase.INPUT_ENDED)  # behind: refused
    assert life.enter(Phase.FAILED, RuntimeError("late"))
    assert life.phase is Phase.FAILED
    assert not life.enter(Phase.FAILED, RuntimeError("again"))  # the first failure stays
    assert str(life.failure) == "late"
    assert failed == [
        "Connection 'x' closed before a response to 'm' arrived",
        "Connection 'x' failed (late) before a response to 'm' arrived",
    ]
