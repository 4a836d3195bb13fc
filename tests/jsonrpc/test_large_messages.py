"""The dispatch loop holds no message once handled: a large one is not kept while the next is awaited."""

from __future__ import annotations

import asyncio
import tracemalloc

from acpio.jsonrpc import Dispatch, UntypedRole

from ._support import serving


async def test_a_handled_large_notification_is_not_kept_while_the_loop_waits_for_the_next() -> None:
    app = UntypedRole.builder()
    handled = asyncio.Event()
    sizes: list[int] = []

    @app.on_dispatch
    async def big(message: Dispatch, cx: object) -> None:
        sizes.append(len(message.params["text"]))
        handled.set()

    text = "x" * 20_000_000
    tracemalloc.start()
    try:
        async with serving(app) as peer:
            before, _ = tracemalloc.get_traced_memory()
            peer.send({"jsonrpc": "2.0", "method": "big", "params": {"text": text}})
            async with asyncio.timeout(10):
                await handled.wait()
            for _ in range(3):  # the loop goes back to waiting for the next frame
                await asyncio.sleep(0)
            held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sizes == [20_000_000]
    # neither the frame (20 MB of bytes) nor its decoded params (a 20 MB str) are still referenced
    assert held - before < 5_000_000, f"{held - before:,} bytes still held after the message was handled"
