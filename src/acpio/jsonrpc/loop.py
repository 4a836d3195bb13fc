"""The dispatch loop: one task reads a connection's frames and offers each message to the chain inline.

There is no task per message: a handler runs to completion before the next message is
dispatched, so handlers see messages in order. A burst of frames costs no coroutine per frame
beyond the handlers': a frame the transport already holds is taken with ``receive_nowait()``,
and the chain's :class:`~acpio.jsonrpc.dispatch_lock.DispatchLock` with a plain call when free.
Reading never stops while requests are pending: their responses are read by this same loop.
Between two messages the loop runs the response callbacks made ready (``on_receiving_result``)
and puts handlers added meanwhile in the chain.

A response that arrives alone while the loop waits for input, with nothing received before it
still to dispatch, is settled by the transport's input callback (``take_lone_frames``) instead of
waking this task: the awaiting task is woken once, not twice. It then cannot overtake anything.

What a frame decodes to becomes a dispatch, a settled request or an answer in
:class:`~acpio.jsonrpc.incoming.IncomingMessages`: bad input never ends the loop. The end of input
calls ``on_end``; a read error calls ``on_error``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from acpio.jsonrpc.chain import HandlerChain
from acpio.jsonrpc.dispatch import NotificationDispatch
from acpio.jsonrpc.dispatch_lock import DispatchLock
from acpio.jsonrpc.incoming import IncomingMessages
from acpio.jsonrpc.lifecycle import Lifecycle, Phase
from acpio.jsonrpc.messages import (
    CANCEL_METHOD,
    Notification,
    Request,
    Response,
    decode,
    decode_response,
    notification_head,
    params_from,
)
from acpio.jsonrpc.outbox import Outbox
from acpio.jsonrpc.responses import Outcome
from acpio.jsonrpc.role import Role
from acpio.jsonrpc.tracing import MessageTracer
from acpio.transports.base import BufferedFrames, LoneFrames, OversizedFrame, Transport

__all__ = ["DispatchLoop"]

_Callback = Callable[[Outcome], Awaitable[None]]

#: How many methods the loop looks at to cut their notifications' params out (:meth:`DispatchLoop._learn`).
_LEARNED_METHODS = 32


class DispatchLoop:
    """Reads one connection's input and dispatches it (see the module docstring).

    ``spawn`` runs work beside the connection; ``on_end`` is awaited at a clean end of input and
    ``on_error`` called with a read error or a failed response callback.
    """

    __slots__ = (
        "_chain",
        "_dispatcher",
        "_heads",
        "_incoming",
        "_life",
        "_lock",
        "_on_end",
        "_on_error",
        "_ready",
        "_spawn",
        "_tracer",
        "_transport",
        "_tried",
        "outbox",
        "reader",
    )

    def __init__(
        self,
        transport: Transport,
        role: Role,
        life: Lifecycle,
        chain: HandlerChain,
        *,
        spawn: Callable[..., asyncio.Task[object]],
        on_end: Callable[[], Awaitable[None]],
        on_error: Callable[[BaseException], None],
        tracer: MessageTracer | None = None,
    ) -> None:
        self._transport = transport
        self._tracer = tracer
        self._life = life
        self._chain = chain
        self._spawn = spawn
        self._on_end = on_end
        self._on_error = on_error
        #: The frame heads of the builder's handlers' methods, and of the methods of notifications
        #: received since (see :meth:`_learn`): their params are cut out of the frame and decoded
        #: alone (:func:`~acpio.jsonrpc.messages.params_from`).
        self._heads = tuple(
            (head, len(head), method)
            for method in chain.handler_methods
            if method != CANCEL_METHOD and (head := notification_head(method)) is not None
        )
        #: The methods whose head was looked for (their frames are cut, or are not written so).
        self._tried = {method for _, _, method in self._heads}
        self.outbox = Outbox(
            transport,
            role,
            life,
            in_dispatch_loop=self.in_dispatch_loop,
            run_response_callback=self.run_response_callback,
            tracer=tracer,
        )
        #: What each decoded message becomes (a dispatch offered to the chain, or an answer).
        self._incoming = IncomingMessages(
            role, life, chain, self.outbox, between=self._work_between, tracer=tracer
        )
        self._ready: list[tuple[_Callback, Outcome]] = []
        self._lock = DispatchLock()
        self.reader: asyncio.Task[None] | None = None
        #: The task running the chain right now (the loop, or a dynamic-handler activation).
        self._dispatcher: asyncio.Task[Any] | None = None
        chain.after_each = self._run_ready

    def start(self, name: str) -> None:
        """Start reading in a task of its own."""
        self.reader = asyncio.get_running_loop().create_task(self._read(), name=f"acpio dispatch loop {name}")
        # Not when traced: the tracer records each message received, inside the loop.
        if self._tracer is None and isinstance(self._transport, LoneFrames):
            self._transport.take_lone_frames(self._settle_lone)

    def in_dispatch_loop(self) -> bool:
        """Whether the current task runs the chain (awaiting a response there would deadlock)."""
        current = asyncio.current_task()
        return current is not None and (current is self._dispatcher or current is self.reader)

    def run_response_callback(self, callback: _Callback, outcome: Outcome) -> None:
        """Run a response callback: inside the dispatch loop before the next message, else as a task."""
        if asyncio.current_task() is self._dispatcher:
            self._ready.append((callback, outcome))
        elif self._life.phase is not Phase.FINISHED:
            self._spawn(callback, outcome)

    def handlers_added(self) -> None:
        """Handlers were added: activate them now if no message is being dispatched."""
        if asyncio.current_task() is not self._dispatcher and self._life.phase is not Phase.FINISHED:
            self._spawn(self._activate_outside)

    async def _activate_outside(self) -> None:
        await self._lock.acquire()
        self._dispatcher = asyncio.current_task()
        try:
            await self._between_messages()
        finally:
            self._dispatcher = None
            self._lock.release()

    async def _run_ready(self) -> None:
        while self._ready:
            callback, outcome = self._ready.pop(0)
            try:
                await callback(outcome)
            except Exception as exc:
                exc.add_note(f"(raised by a response callback on connection {self._life.name!r})")
                self._on_error(exc)

    async def _between_messages(self) -> None:
        chain = self._chain
        while self._ready or chain.has_new:
            await self._run_ready()
            await chain.activate_new()

    def _work_between(self) -> Awaitable[None] | None:
        """What to await before the next message when response callbacks or new handlers wait; else ``None``.

        (``_read`` makes the same check inline, once per frame.)
        """
        if self._ready or self._chain.has_new:
            return self._between_messages()
        return None

    # --- reading ----------------------------------------------------------------------------------

    async def _read(self) -> None:
        transport = self._transport
        receive = transport.receive
        # A frame already held is taken with a plain call: no coroutine per frame of a burst.
        nowait = transport.receive_nowait if isinstance(transport, BufferedFrames) else None
        lock = self._lock
        me = asyncio.current_task()
        life = self._life
        chain = self._chain
        heads = self._heads
        incoming = self._incoming
        offer = incoming.offer
        notification = incoming.notification
        request = incoming.request
        response = incoming.response
        route = incoming.route
        counterpart = incoming.counterpart
        open_ = Phase.OPEN
        try:
            while life.phase is open_:
                frame = None if nowait is None else nowait()
                if frame is None:
                    frame = await receive()
                    if frame is None:
                        break
                if not lock.try_acquire():
                    await lock.acquire()
                self._dispatcher = me
                try:
                    # One message per frame is the common case: dispatched here, one call deep. A
                    # notification of a method in the heads (see _learn) has its params cut out.
                    dispatch: NotificationDispatch | None = None
                    if heads and type(frame) is bytes:
                        for head, start, method in heads:
                            if frame.startswith(head):
                                try:
                                    params = params_from(frame, start)
                                except ValueError:
                                    break  # decoded whole below, which answers what is wrong
                                dispatch = (
                                    NotificationDispatch(method, params, counterpart)
                                    if route is None
                                    else notification(Notification(method, params))
                                )
                                break
                    if dispatch is not None:
                        await offer(dispatch)
                    else:
                        decoded = frame if isinstance(frame, OversizedFrame) else decode(frame)
                        if type(decoded) is Notification:
                            if len(self._tried) < _LEARNED_METHODS and type(frame) is bytes:
                                heads = self._learn(frame, decoded.method)
                            await offer(notification(decoded))
                        elif type(decoded) is Request:
                            await offer(request(decoded, None))
                        elif type(decoded) is Response:
                            await response(decoded)
                        elif decoded is not None:
                            await incoming.other(decoded)
                    if self._ready or chain.has_new:
                        await self._between_messages()
                finally:
                    self._dispatcher = None
                    lock.release()
                # Not held while the next frame is awaited: a large message would be kept twice.
                frame = decoded = dispatch = params = None
            else:
                return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._on_error(exc)
            return
        await self._on_end()

    def _learn(self, frame: bytes, method: str) -> tuple[tuple[bytes, int, str], ...]:
        """The heads, with ``method``'s when its notification ``frame`` (decoded whole) starts with it.

        A peer that writes one notification of a method the usual way writes the next ones so too
        (a session's stream of ``session/update``): those are cut out as the builder's methods are.
        Each method is looked at once, and at most :data:`_LEARNED_METHODS` of them.
        """
        if method not in self._tried:
            self._tried.add(method)
            head = notification_head(method)
            if method != CANCEL_METHOD and head is not None and frame.startswith(head):
                self._heads = (*self._heads, (head, len(head), method))
        return self._heads

    def _settle_lone(self, frame: bytes) -> bool:
        """Settle a response the transport read alone while the loop waits for input; ``True`` if it did.

        The transport offers a frame only when nothing it received before is pending. Left to the
        loop, to be read in order: anything but a response to one of our requests; any frame while
        a message is being dispatched (the lock is held: by the loop, or by handlers being
        activated), while response callbacks or new handlers wait, or once the connection stopped
        reading; a response that handlers intercept, or whose consumer is a callback
        (``on_receiving_result``), which runs inside the loop before its next message.
        """
        # A request or a notification is not decoded twice. (find, not `in`: see Lines.send; not
        # partition either, which copies the frame when it finds the key.)
        if (
            frame.find(b'"method"') >= 0
            or self._lock.locked()
            or self._ready
            or self._chain.has_new
            or self._chain.intercepts_responses
            or not self._life.is_open
        ):
            return False
        response = decode_response(frame)
        if response is None:
            return False
        return self.outbox.settle_awaited(*response)
