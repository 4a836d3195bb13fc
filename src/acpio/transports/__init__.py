"""Transports move frames (one JSON text per message) between a connection and its peer.

Every transport implements :class:`Transport`; a :class:`Component` (such as :class:`AcpAgent`)
is something that, once opened, gives one. Pick by where the peer is:

* :class:`Channel` — in the same process (``Channel.duplex()`` makes a connected pair);
* :class:`Stdio` — the client that started this process, on stdin/stdout;
* :class:`AcpAgent` — an agent or proxy program to start as a child process;
* :class:`ByteStreams` — an asyncio stream pair (a socket, a pipe);
* :class:`Lines` — anything else that can read and write bytes.

A :class:`Tap` wraps any of them to watch the frames it moves, each with its :class:`Direction`.

A server accepts one transport per peer from a :class:`Listener` (:class:`ChannelListener` in
process); :meth:`acpio.jsonrpc.Builder.serve` serves them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports
from acpio.transports.base import Component, OversizedFrame, Transport
from acpio.transports.channel import Channel

if TYPE_CHECKING:
    from acpio.transports.commands import AgentCommand
    from acpio.transports.lines import DEFAULT_MAX_LINE, LineSplitter
    from acpio.transports.listener import ChannelListener, Listener
    from acpio.transports.stdio import Stdio
    from acpio.transports.streams import ByteStreams, Lines
    from acpio.transports.subprocess import AcpAgent, AgentProcess
    from acpio.transports.tap import Direction, Tap, TapObserver

__all__ = [
    "DEFAULT_MAX_LINE",
    "AcpAgent",
    "AgentCommand",
    "AgentProcess",
    "ByteStreams",
    "Channel",
    "ChannelListener",
    "Component",
    "Direction",
    "LineSplitter",
    "Lines",
    "Listener",
    "OversizedFrame",
    "Stdio",
    "Tap",
    "TapObserver",
    "Transport",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
