"""Waiting for a running count to reach a mark: the drains of the transports (private helper).

A transport counts what it has delivered (frames received by the peer, bytes written); a drain
waits until that count reaches what had been queued when it was called. Waiters are kept in call
order, so the marks only grow and waking is a walk from the front.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

#: The drains waiting: (the count each waits for, its future), in call order.
Waiters = deque[tuple[int, asyncio.Future[None]]]


async def wait_for_count(waiters: Waiters, mark: int) -> None:
    """Wait until :func:`wake_reached` is called with a count of at least ``mark`` (or :func:`wake_all`).

    A cancelled wait leaves no waiter behind.
    """
    entry = (mark, asyncio.get_running_loop().create_future())
    waiters.append(entry)
    try:
        await entry[1]
    finally:
        if not entry[1].done():
            with contextlib.suppress(ValueError):
                waiters.remove(entry)


def wake_reached(waiters: Waiters, count: int) -> None:
    """Wake the waits whose mark ``count`` has reached."""
    while waiters and waiters[0][0] <= count:
        future = waiters.popleft()[1]
        if not future.done():
            future.set_result(None)


def wake_all(waiters: Waiters) -> None:
    """Wake every wait (the transport closed, or its writes failed)."""
    while waiters:
        future = waiters.popleft()[1]
        if not future.done():
            future.set_result(None)
