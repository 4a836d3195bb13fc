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

import importlib
from typing import TYPE_CHECKING, Any

from acpio.transports.base import Component, OversizedFrame, Transport
from acpio.transports.channel import Channel

if TYPE_CHECKING:
    from acpio.transports.commands import AgentCommand
    from acpio.transports.lines import DEFAULT_MAX_LINE, LineSplitter
    from acpio.transports.listener import ChannelListener, Listener
    from acpio.transports.stdio import Stdio
    from acpio.transports.streams import ByteStreams, DebugCallback, LineDirection, Lines
    from acpio.transports.subprocess import AcpAgent, AgentProcess
    from acpio.transports.tap import Direction, Tap, TapObserver

#: Names loaded on first use, so that the engine (which needs only the base and the channel)
#: does not import subprocess and stdio machinery.
_LAZY = {
    "AgentCommand": "commands",
    "DEFAULT_MAX_LINE": "lines",
    "LineSplitter": "lines",
    "ChannelListener": "listener",
    "Listener": "listener",
    "Stdio": "stdio",
    "ByteStreams": "streams",
    "DebugCallback": "streams",
    "LineDirection": "streams",
    "Lines": "streams",
    "AcpAgent": "subprocess",
    "AgentProcess": "subprocess",
    "Direction": "tap",
    "Tap": "tap",
    "TapObserver": "tap",
}

__all__ = [
    "DEFAULT_MAX_LINE",
    "AcpAgent",
    "AgentCommand",
    "AgentProcess",
    "ByteStreams",
    "Channel",
    "ChannelListener",
    "Component",
    "DebugCallback",
    "Direction",
    "LineDirection",
    "LineSplitter",
    "Lines",
    "Listener",
    "OversizedFrame",
    "Stdio",
    "Tap",
    "TapObserver",
    "Transport",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acpio.transports' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"acpio.transports.{module}"), name)
    globals()[name] = value
    return value
