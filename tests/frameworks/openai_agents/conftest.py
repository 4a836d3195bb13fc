"""The wire server each test of the adapter talks to."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .responses_wire import ResponsesWire


@pytest.fixture
async def wire() -> AsyncIterator[ResponsesWire]:
    async with ResponsesWire() as server:
        yield server
