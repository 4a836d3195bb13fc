"""Helpers shared by the oneshot tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

#: Seconds any single wait of these tests may take before it fails (generous: the machine may be busy).
TIMEOUT = 30


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds; fail (``TimeoutError``) after :data:`TIMEOUT` seconds."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            if condition():
                return
            await asyncio.sleep(0.02)
