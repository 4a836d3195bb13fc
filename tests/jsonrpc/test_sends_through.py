"""A transport that sends through another object (``SendsThrough``): the connection calls that one."""

from __future__ import annotations

import asyncio

from acpio.jsonrpc import Connection, UntypedRole
from acpio.transports.base import FrameSink, OversizedFrame, SendsThrough, Transport, sink_of

from ._support import TIMEOUT


class Recorder:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)


class Forwarding:
    """A transport whose own send() forwards to its ``frame_sink``; it counts the calls that reach it."""

    def __init__(self, sink: Recorder) -> None:
        self._sink = sink
        self.own_sends = 0

    @property
    def frame_sink(self) -> FrameSink:
        return self._sink

    async def receive(self) -> bytes | OversizedFrame | None:
        return None

    def send(self, frame: bytes) -> None:
        self.own_sends += 1
        self._sink.send(frame)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_the_connection_sends_to_the_sink_without_the_transports_own_send() -> None:
    recorder = Recorder()
    transport = Forwarding(recorder)
    assert isinstance(transport, Transport)
    assert isinstance(transport, SendsThrough)

    async def main(cx: Connection) -> None:
        cx.send_notification("note", {"text": "one"})
        cx.send_notification("note", {"text": "two"})

    async with asyncio.timeout(TIMEOUT):
        await UntypedRole.builder().connect_with(transport, main)
    assert recorder.frames == [
        b'{"jsonrpc":"2.0","method":"note","params":{"text":"one"}}',
        b'{"jsonrpc":"2.0","method":"note","params":{"text":"two"}}',
    ]
    assert transport.own_sends == 0


class Framing:
    """A transport whose own send() frames for the wire; ``sink`` is only a name it happens to use."""

    def __init__(self) -> None:
        self.sink = Recorder()  # e.g. where it logs: not where its frames go
        self.wire: list[bytes] = []

    async def receive(self) -> bytes | OversizedFrame | None:
        return None

    def send(self, frame: bytes) -> None:
        self.wire.append(frame + b"\n")

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_an_attribute_named_sink_does_not_bypass_the_transports_send() -> None:
    transport = Framing()
    assert not isinstance(transport, SendsThrough)
    assert sink_of(transport) is transport

    async def main(cx: Connection) -> None:
        cx.send_notification("note", {"text": "one"})

    async with asyncio.timeout(TIMEOUT):
        await UntypedRole.builder().connect_with(transport, main)
    assert transport.wire == [b'{"jsonrpc":"2.0","method":"note","params":{"text":"one"}}\n']
    assert transport.sink.frames == []
