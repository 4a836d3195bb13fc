"""Any stdio agent over HTTP and WebSocket: :class:`Gateway` runs an agent process per remote connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from acpio.errors import AcpError, InvalidRequest
from acpio.jsonrpc.messages import encode_error, head_request_id, line_head
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.commands import AgentCommand
from acpio.transports.listener import Listener
from acpio.transports.subprocess import AcpAgent

__all__ = ["Gateway"]

_log = logging.getLogger("acpio.remote.gateway")

#: Bytes relayed between two ``drain()`` calls: the relay keeps pace with the slower side.
_DRAIN_EVERY = 256 * 1024


class Gateway:
    """Serves each connection a :class:`~acpio.transports.Listener` accepts with a new agent process.

    ``command`` is an argv list or an :class:`~acpio.transports.AgentCommand`. Messages are relayed
    unchanged both ways. The agent's stderr is logged (logger ``acpio.remote.gateway``, one record
    per line); when either side ends, the other is ended too: the process group of the agent when
    the remote client leaves, the remote connection when the agent exits. Pass it to
    :class:`~acpio.remote.RemoteServer` (``acpio serve -- COMMAND`` does)::

        async with RemoteServer(Gateway(["npx", "my-agent"]), port=8000) as server: ...
    """

    def __init__(self, command: Sequence[str] | AgentCommand) -> None:
        self.command = command if isinstance(command, AgentCommand) else AgentCommand.parse(list(command))

    async def serve(self, target: Listener) -> None:
        """Relay every connection ``target`` accepts to an agent process of its own, until it closes."""
        running: set[asyncio.Task[None]] = set()
        try:
            while (remote := await target.accept()) is not None:
                task = asyncio.ensure_future(self._relay(remote))
                running.add(task)
                task.add_done_callback(running.discard)
        finally:
            for task in list(running):
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _relay(self, remote: Transport) -> None:
        name = self.command.display()

        def stderr(line: str) -> None:
            _log.info("%s: %s", name, line)

        agent: Transport | None = None
        try:
            agent = await AcpAgent(self.command, stderr=stderr).open()
            pumps = [
                asyncio.ensure_future(_pump(remote, agent, "the client")),
                asyncio.ensure_future(_pump(agent, remote, "the agent")),
            ]
            # The first side to end ends the connection: the other pump stops with its transport.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
        except AcpError as exc:
            _log.warning("Relaying to %s failed: %s", name, exc)
        finally:
            with contextlib.suppress(AcpError, OSError):
                await remote.aclose()
            if agent is not None:
                with contextlib.suppress(AcpError, OSError):
                    await agent.aclose()


async def _pump(source: Transport, sink: Transport, who: str) -> None:
    unflushed = 0
    while (frame := await source.receive()) is not None:
        if isinstance(frame, OversizedFrame):
            # Answered as a connection answers it, so that the sender's request fails, not hangs.
            _log.warning("Dropped a message of %d bytes from %s: over the size limit", frame.size, who)
            data = {"reason": "message too large", "size": frame.size, "line": line_head(frame.head)}
            answer = InvalidRequest(data, message="Message too large")
            source.send(encode_error(head_request_id(frame.head), answer))
            continue
        sink.send(frame)
        unflushed += len(frame)
        if unflushed > _DRAIN_EVERY:
            unflushed = 0
            await sink.drain()
    await sink.drain()
