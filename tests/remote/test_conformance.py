"""The HTTP and WebSocket transports, both ends of each, against acpio.testing.check_transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from acpio.remote import RemoteServer
from acpio.testing import TRANSPORT_PROPERTIES, TransportPair, check_transport

from ._support import http_pair, listening, ws_pair

PairMaker = Callable[..., Awaitable[TransportPair]]


def factory(server: RemoteServer, make: PairMaker, client_end: bool):  # type: ignore[no-untyped-def]
    @asynccontextmanager
    async def pair() -> AsyncIterator[TransportPair]:
        made = await make(server, client_end=client_end)
        try:
            yield made
        finally:
            await made.end.aclose()
            await made.peer.aclose()

    return pair


@pytest.mark.parametrize("prop", TRANSPORT_PROPERTIES)
@pytest.mark.parametrize(
    ("make", "client_end"),
    [(ws_pair, False), (ws_pair, True), (http_pair, False), (http_pair, True)],
    ids=["websocket-server", "websocket-client", "http-server", "http-client"],
)
async def test_conformance(prop: str, make: PairMaker, client_end: bool) -> None:
    async with listening() as server:
        # An HTTP POST per message: fewer frames keep the run short; the properties stay the same.
        frames = 300 if make is http_pair else 2000
        await check_transport(factory(server, make, client_end), properties=[prop], frames=frames)
