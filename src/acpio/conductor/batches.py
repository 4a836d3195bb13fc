"""Keeping JSON-RPC batches whole through the conductor: :class:`BatchScope` and :class:`Gathering`.

The engine dispatches the entries of a received batch one by one, and the conductor forwards each
on its own. So that a batch stays a batch on the next hop, every transport of a run is wrapped in
a :class:`Gathering`: when one of them receives an array, the task that reads it (that connection's
dispatch loop, which forwards inline) opens a scope, and what it sends meanwhile on the other
transports of the run is held; when that task comes back for the next frame, the batch was
dispatched, and the frames held for each transport go out as one array. A frame held that is itself
an array (the answers to a batch that came on that transport, completed by the answers this batch
brought) is spliced in, never nested.

What goes back on the transport the array came from is sent as it is: the engine itself gathers the
answers to a batch's entries into one array, and answers an array it refuses whole (``[]``, a line
that is not JSON, a batch over the cap) with one error object, which must stay one object.

Only frames sent by the dispatching task are held: what other connections send meanwhile goes
out at once, as it would without a batch.
"""

from __future__ import annotations

import asyncio
import contextlib

from acpio.errors import AcpError, ConnectionClosed
from acpio.jsonrpc import Connection
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["BatchScope", "Gathering"]


#: The first bytes a batch's line can start with (``[``, or blanks before it).
_MAYBE_BATCH = frozenset((b"[", b" ", b"\t", b"\r"))


def is_batch(frame: bytes) -> bool:
    """Whether ``frame`` is a JSON array (its first non-blank byte is ``[``)."""
    first = frame[:1]
    if first == b"[":
        return True
    return first.isspace() and frame.lstrip()[:1] == b"["


class _Held:
    """What one task dispatching a batch sends on the other transports, held per transport."""

    __slots__ = ("frames", "source")

    def __init__(self, source: Gathering) -> None:
        self.source = source
        self.frames: dict[Gathering, list[bytes]] = {}


class BatchScope:
    """The batches being dispatched in one run: per dispatching task, the frames held per transport."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[asyncio.Task[object], _Held] = {}

    def begin(self, task: asyncio.Task[object] | None, source: Gathering) -> None:
        """``task`` is about to dispatch a batch received on ``source``: hold what it sends elsewhere."""
        if task is not None and task not in self._held:
            self._held[task] = _Held(source)

    def end(self, task: asyncio.Task[object] | None) -> None:
        """``task`` dispatched its batch: send what it held, one array per transport."""
        if not self._held or task is None:
            return
        held = self._held.pop(task, None)
        if held is not None:
            for transport, frames in held.frames.items():
                transport.release(frames)

    def hold(self, transport: Gathering, frame: bytes) -> bool:
        """Keep ``frame`` for ``transport`` if the current task is dispatching a batch from elsewhere."""
        if not self._held:
            return False
        held = self._held.get(asyncio.current_task())  # type: ignore[arg-type]
        if held is None or transport is held.source:
            return False
        held.frames.setdefault(transport, []).append(frame)
        return True


class Gathering:
    """``inner``, whose frames sent while a batch is dispatched are sent as one array (see the module).

    It also counts what a :class:`~acpio.conductor.relay.Relay` sends on it past the connection
    (:meth:`forward`), so that the relay waits as ``Connection.drain`` would (:attr:`due`).
    """

    __slots__ = ("_forwarded", "_inner", "_scope")

    def __init__(self, inner: Transport, scope: BatchScope) -> None:
        self._inner = inner
        self._scope = scope
        self._forwarded = 0

    def __repr__(self) -> str:
        return f"Gathering({self._inner!r})"

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame; reading again means the previous one (a batch, maybe) was dispatched."""
        scope = self._scope
        if scope._held:  # (the common case, no batch anywhere, costs this one test)
            scope.end(asyncio.current_task())
        frame = await self._inner.receive()
        if type(frame) is bytes and frame[:1] in _MAYBE_BATCH and is_batch(frame):
            scope.begin(asyncio.current_task(), self)
        return frame

    def send(self, frame: bytes) -> None:
        """Send ``frame``, or hold it while the sending task dispatches a batch."""
        scope = self._scope
        if not scope._held or not scope.hold(self, frame):
            self._inner.send(frame)

    def forward(self, frame: bytes) -> None:
        """:meth:`send` for a frame passed on past the connection, counted toward :attr:`due`."""
        self.send(frame)
        self._forwarded += len(frame)

    @property
    def due(self) -> bool:
        """Whether :meth:`forward` sent ``Connection.HIGH_WATER`` bytes since :meth:`drain_forwarded`."""
        return self._forwarded >= Connection.HIGH_WATER

    async def drain_forwarded(self) -> None:
        """Wait until the inner transport wrote what it was given (if it can no more, do not wait)."""
        self._forwarded = 0
        with contextlib.suppress(AcpError):
            await self._inner.drain()

    def release(self, frames: list[bytes]) -> None:
        """Send ``frames`` (held during one batch) as one array; dropped if the transport closed."""
        if len(frames) == 1 and frames[0][:1] == b"[":
            joined = frames[0]
        else:
            joined = b"[" + b",".join(f[1:-1] if f[:1] == b"[" else f for f in frames) + b"]"
        with contextlib.suppress(ConnectionClosed):
            self._inner.send(joined)

    async def drain(self) -> None:
        """Wait until the inner transport wrote what it was given."""
        await self._inner.drain()

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()
