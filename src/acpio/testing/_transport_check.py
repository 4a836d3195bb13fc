"""The transport conformance check behind :func:`acpio.testing.check_transport`.

A transport is handed over as a factory of connected pairs: ``end`` (the transport under test) and
``peer`` (whatever talks to it: another end of the same kind, or a stream the test holds). Every
property gets a fresh pair, so a failure in one does not spoil the next; every wait is bounded, so
a transport that hangs fails with a message instead of hanging the test run.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports.base import OversizedFrame, SendsThrough, Transport

__all__ = ["TRANSPORT_PROPERTIES", "PairFactory", "TransportPair", "TransportReport", "check_transport"]

T = TypeVar("T")

TRANSPORT_PROPERTIES: Final = (
    "order",
    "batching",
    "eof",
    "close_delivers",
    "close_both_ways",
    "after_close",
    "peer_death",
    "oversized",
    "drain",
    "backpressure",
)
"""What :func:`check_transport` checks, in the order it checks them (see its docstring)."""

#: Near-limit frames are at most this long, and ``oversized`` is skipped for a larger ``max_line``.
LARGE_FRAME_LIMIT: Final = 4 * 1024 * 1024
#: Frames sent in the ``batching`` burst, and the most writes they may cost.
BATCH_FRAMES: Final = 2000
BATCH_MAX_WRITES: Final = BATCH_FRAMES // 100
#: ``backpressure``: bytes queued per step, how long ``drain()`` must stay pending to count as held
#: back, and how much may be queued to a reader that reads nothing before that counts as a failure.
STALL_STEP: Final = 1024 * 1024
STALL_WINDOW: Final = 0.1
STALL_LIMIT: Final = 64 * 1024 * 1024
#: ``peer_death``: frames still received after the peer died, and bytes sent to it, before giving up.
DEAD_PEER_FRAMES: Final = 100_000
DEAD_PEER_BYTES: Final = 64 * 1024 * 1024

NON_ASCII: Final = "héllo wörld — 日本語 🎉 \u2028 \u2029 \x85 ŝ".encode()
"""Raw UTF-8 (U+2028, U+2029 and NEL included), which no line splitter may cut."""


@dataclass
class TransportPair:
    """Two connected ends for :func:`check_transport`.

    ``end`` is the transport under test; ``peer`` is connected to it (what ``end`` sends, ``peer``
    receives, and the reverse). ``kill_peer()`` (a function or a coroutine function), if given,
    makes the peer's side disappear abruptly: abort its socket or pipes without a clean close, kill
    the process. Without it the ``peer_death`` property is skipped.
    """

    end: Transport
    peer: Transport
    kill_peer: Callable[[], object] | None = None


PairSource: TypeAlias = TransportPair | tuple[Transport, Transport]
PairFactory: TypeAlias = Callable[[], Awaitable[PairSource] | AbstractAsyncContextManager[PairSource]]
"""``make_pair()``: a coroutine returning a pair, or an async context manager yielding one."""


@dataclass(frozen=True)
class TransportReport:
    """What :func:`check_transport` found: the properties that held and those it skipped (and why)."""

    name: str
    passed: tuple[str, ...]
    skipped: Mapping[str, str] = field(default_factory=dict)


class _Skip(Exception):
    """A property that does not apply to this transport."""


class _Failure(AssertionError):
    """A property that does not hold."""


class _Misuse(TypeError):
    """``make_pair`` gave something the check cannot use: a mistake in the test, not the transport."""


async def check_transport(
    make_pair: PairFactory,
    *,
    name: str | None = None,
    properties: Iterable[str] | None = None,
    close_reaches_peer: bool = True,
    backpressure: bool = True,
    frames: int = 10_000,
    wait_timeout: float = 10.0,
) -> TransportReport:
    """Check that a transport behaves as :class:`~acpio.transports.Transport` says; raise if not.

    ``make_pair()`` makes two connected ends, ``end`` (under test) and ``peer``: an async function
    returning a :class:`TransportPair` or an ``(end, peer)`` tuple, or a function returning an async
    context manager that yields one (to release what the pair holds: sockets, processes, file
    descriptors). Each property gets a fresh pair; both ends are closed after it.

    The properties (:data:`TRANSPORT_PROPERTIES`; ``properties`` selects some):

    * ``order``: ``frames`` frames sent in one burst, each way at once, arrive in order and
      unchanged, non-ASCII ones and ones exactly as long as the receiver's ``max_line`` included
      (an end that :class:`~acpio.transports.base.SendsThrough` sends every other frame through its
      ``frame_sink``, as a connection does);
    * ``batching``: a burst of 2000 sends costs at most 20 writes (``end.statistics()["writes"]``;
      skipped for a transport without ``statistics()``);
    * ``eof``: once the peer closes, ``end.receive()`` returns the frames sent before, then ``None``,
      and ``None`` again;
    * ``close_delivers``: ``end.aclose()`` delivers the frames queued before it, then the peer's
      ``receive()`` returns ``None``;
    * ``close_both_ways``: ``end.aclose()`` closes its input too: a peer's ``drain()`` held back by
      the end not reading finishes, and the peer's later ``send()`` and ``drain()`` fail with
      ``ConnectionClosed`` or ``TransportError`` instead of piling up unread;
    * ``after_close``: ``end.send()`` after ``end.aclose()`` raises :class:`~acpio.ConnectionClosed`,
      and so does ``end.frame_sink.send()`` when the end has one; a second ``aclose()`` is harmless;
    * ``peer_death``: once the peer is gone abruptly (``TransportPair.kill_peer``; skipped without
      it), ``end.receive()`` returns ``None`` or raises :class:`~acpio.TransportError`, and sending
      then draining fails with ``TransportError`` or ``ConnectionClosed``, without hanging;
    * ``oversized``: a line longer than ``end.max_line`` arrives as an
      :class:`~acpio.transports.OversizedFrame` (its size, the start of the line) and the next
      frames still arrive (skipped when ``end`` has no ``max_line`` attribute, or one over 4 MiB:
      build the ends with a small ``max_line``);
    * ``drain``: ``drain()`` returns with nothing queued, and once queued frames are written;
    * ``backpressure``: while the peer reads nothing, ``drain()`` stops returning after a bounded
      amount of data (64 MiB at most), and returns once the peer reads again.

    Flags, for what a transport legitimately cannot do:

    * ``close_reaches_peer=False``: ``end.aclose()`` flushes but leaves the underlying streams open
      (``Stdio`` gives stdin and stdout back to the process: the peer sees the end when the process
      exits); skips ``close_both_ways`` and the end of input in ``close_delivers``;
    * ``backpressure=False``: skip ``backpressure`` (a transport whose writes never wait).

    Every wait is bounded by ``wait_timeout`` seconds. All selected properties are checked; then an
    ``AssertionError`` naming the transport (``name``, by default the end's class) and each
    property that failed is raised. Otherwise the returned :class:`TransportReport` lists what
    passed and what was skipped, with the reason.
    """
    selected = TRANSPORT_PROPERTIES if properties is None else tuple(properties)
    unknown = [p for p in selected if p not in TRANSPORT_PROPERTIES]
    if unknown:
        raise ValueError(f"Unknown transport properties {unknown}; known: {', '.join(TRANSPORT_PROPERTIES)}")
    if frames < 10:
        raise ValueError(f"frames must be at least 10, got {frames}")
    context = _Context(
        make_pair,
        name,
        close_reaches_peer=close_reaches_peer,
        backpressure=backpressure,
        frames=frames,
        timeout=wait_timeout,
    )
    passed: list[str] = []
    skipped: dict[str, str] = {}
    failures: list[tuple[str, Exception]] = []
    for prop in selected:
        try:
            await _CHECKS[prop](context)
        except _Skip as skip:
            skipped[prop] = str(skip)
        except AssertionError as exc:
            failures.append((prop, exc))
        except _Misuse:
            raise
        except Exception as exc:
            failure = _Failure(f"unexpected {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            failures.append((prop, failure))
        else:
            passed.append(prop)
    name = context.name or "transport"
    if failures:
        lines = "\n".join(f"  {prop}: {exc}" for prop, exc in failures)
        raise AssertionError(
            f"{name} fails {len(failures)} of the {len(selected)} transport properties checked:\n{lines}"
        ) from failures[0][1]
    return TransportReport(name, tuple(passed), skipped)


class _Context:
    """What every property check shares: the pair factory, the flags, and the bound on every wait."""

    def __init__(
        self,
        make_pair: PairFactory,
        name: str | None,
        *,
        close_reaches_peer: bool,
        backpressure: bool,
        frames: int,
        timeout: float,
    ) -> None:
        self.make_pair = make_pair
        #: The transport's name in the failure message; the end's class once a pair was made.
        self.name = name
        self.close_reaches_peer = close_reaches_peer
        self.backpressure = backpressure
        self.frames = frames
        self.timeout = timeout

    async def within(self, awaitable: Awaitable[T], what: str) -> T:
        """Await ``awaitable``; fail with ``what`` if it takes longer than the timeout."""
        try:
            async with asyncio.timeout(self.timeout) as deadline:
                return await awaitable
        except TimeoutError:
            if deadline.expired():
                raise _Failure(f"{what} did not finish within {self.timeout:g} s") from None
            raise

    @asynccontextmanager
    async def pair(self) -> AsyncIterator[TransportPair]:
        """A fresh pair, both ends closed (within the timeout) and its resources released after use."""
        async with AsyncExitStack() as stack:
            made = self.make_pair()
            source: object
            if isinstance(made, AbstractAsyncContextManager):
                source = await self.within(stack.enter_async_context(made), "make_pair()")
            elif inspect.isawaitable(made):
                source = await self.within(made, "make_pair()")
            else:
                raise _Misuse(
                    f"make_pair() returned {made!r}: expected an awaitable or an async context manager"
                )
            pair = _as_pair(source)
            if self.name is None:
                self.name = type(pair.end).__name__
            try:
                yield pair
            except BaseException:
                with contextlib.suppress(Exception):
                    await self.close_both(pair)
                raise
            await self.close_both(pair)

    async def close_both(self, pair: TransportPair) -> None:
        await self.within(pair.end.aclose(), "end.aclose()")
        await self.within(pair.peer.aclose(), "peer.aclose()")

    async def receive_frames(
        self, transport: Transport, count: int, who: str
    ) -> list[bytes | OversizedFrame]:
        """Receive ``count`` frames; fail if input ends first or it takes longer than the timeout."""
        got: list[bytes | OversizedFrame] = []
        try:
            async with asyncio.timeout(self.timeout):
                while len(got) < count:
                    frame = await transport.receive()
                    if frame is None:
                        raise _Failure(
                            f"{who}.receive() returned None (end of input) after {len(got)} of {count} frames"
                        )
                    got.append(frame)
        except TimeoutError:
            raise _Failure(
                f"{who}.receive() of {count} frames did not finish within {self.timeout:g} s: "
                f"{len(got)} arrived"
            ) from None
        return got


# -- the properties --------------------------------------------------------------------------------


async def _check_order(ctx: _Context) -> None:
    """``order``: bursts each way at once arrive in order and unchanged, near-limit and non-ASCII ones too."""
    async with ctx.pair() as pair:
        out = _burst(ctx.frames, b"end", _near_limit(pair.peer))
        back = _burst(ctx.frames, b"peer", _near_limit(pair.end))

        async def transfer(sender: Transport, receiver: Transport, frames: list[bytes], way: str) -> None:
            who = "peer" if receiver is pair.peer else "end"
            # A connection sends through the frame sink: what it queues must arrive as send()'s does.
            sends = (
                (sender.send, sender.frame_sink.send) if isinstance(sender, SendsThrough) else (sender.send,)
            )
            receiving = asyncio.ensure_future(ctx.receive_frames(receiver, len(frames), who))
            try:
                for index, frame in enumerate(frames):  # one burst: no await between sends
                    sends[index % len(sends)](frame)
                await ctx.within(sender.drain(), f"{way}: drain() after a burst of {len(frames)}")
                got = await receiving
            finally:
                await _cancel(receiving)
            _compare(frames, got, way)

        await _together(
            transfer(pair.end, pair.peer, out, "end -> peer"),
            transfer(pair.peer, pair.end, back, "peer -> end"),
        )


async def _check_batching(ctx: _Context) -> None:
    """``batching``: a burst of sends is joined into few writes."""
    async with ctx.pair() as pair:
        end = pair.end
        statistics = getattr(end, "statistics", None)
        if not callable(statistics) or "writes" not in statistics():
            raise _Skip("the transport has no statistics()['writes'] to count writes with")
        frames = _burst(BATCH_FRAMES, b"batch", None)
        before = statistics()["writes"]
        receiving = asyncio.ensure_future(ctx.receive_frames(pair.peer, len(frames), "peer"))
        try:
            for frame in frames:
                end.send(frame)
            await ctx.within(end.drain(), "end.drain() after the burst")
            got = await receiving
        finally:
            await _cancel(receiving)
        writes = statistics()["writes"] - before
        _compare(frames, got, "end -> peer")
        if writes > BATCH_MAX_WRITES:
            raise _Failure(
                f"{len(frames)} sends before yielding cost {writes} writes, more than "
                f"{BATCH_MAX_WRITES}: send() should queue and one writer join what is queued into a write"
            )


async def _check_eof(ctx: _Context) -> None:
    """``eof``: once the peer closes, the end receives what was sent before, then ``None`` for good."""
    async with ctx.pair() as pair:
        end, peer = pair.end, pair.peer
        first = [b'{"eof":%d}' % i for i in range(2)]
        for frame in first:
            peer.send(frame)
        _compare(first, await ctx.receive_frames(end, len(first), "end"), "peer -> end")
        # end already waits for input when the last frames and the end of input come.
        waiting = asyncio.ensure_future(ctx.receive_frames(end, 3, "end"))
        try:
            await asyncio.sleep(0.01)
            last = [b'{"eof":%d}' % i for i in range(2, 5)]
            for frame in last:
                peer.send(frame)
            await ctx.within(peer.aclose(), "peer.aclose()")
            got = await waiting
        finally:
            await _cancel(waiting)
        _compare(last, got, "peer -> end (sent just before peer.aclose())")
        await _expect_end_of_input(ctx, end, "end", "the peer closed")


async def _check_close_delivers(ctx: _Context) -> None:
    """``close_delivers``: ``aclose()`` delivers what was queued, then the peer's input ends."""
    async with ctx.pair() as pair:
        sent = [b'{"last":%d}' % i for i in range(3)]
        for frame in sent:
            pair.end.send(frame)
        await ctx.within(pair.end.aclose(), "end.aclose() with 3 frames queued")
        got = await ctx.receive_frames(pair.peer, len(sent), "peer")
        _compare(sent, got, "end -> peer (queued before aclose)")
        if ctx.close_reaches_peer:
            await _expect_end_of_input(ctx, pair.peer, "peer", "end.aclose()")


async def _check_close_both_ways(ctx: _Context) -> None:
    """``close_both_ways``: ``aclose()`` closes the input too: the peer's sends fail, not pile up."""
    if not ctx.close_reaches_peer:
        raise _Skip("close_reaches_peer=False: aclose() leaves the underlying streams open")
    async with ctx.pair() as pair:
        end, peer = pair.end, pair.peer
        draining: asyncio.Future[None] | None = None
        try:
            if ctx.backpressure:
                _, draining = await _fill_until_held(peer, _near_limit(end))
            await ctx.within(end.aclose(), "end.aclose() while the peer waits in drain()")
            if draining is not None:
                what = "the peer's drain(), held back by the end, once the end closed"
                try:
                    await ctx.within(draining, what)
                except (TransportError, ConnectionClosed) as exc:
                    _require_message(exc, what)
                except _Failure:
                    raise
                except Exception as exc:
                    raise _Failure(f"{what} raised {type(exc).__name__}: {exc}") from exc
        finally:
            await _cancel(draining)
        await _expect_sends_to_fail(ctx, peer, _near_limit(end), "the peer", "the end closed")


async def _check_after_close(ctx: _Context) -> None:
    """``after_close``: ``send()`` after ``aclose()`` raises ConnectionClosed; a second close is harmless."""
    async with ctx.pair() as pair:
        end = pair.end
        await ctx.within(end.aclose(), "end.aclose()")
        try:
            await ctx.within(end.aclose(), "a second end.aclose()")
        except _Failure:
            raise
        except Exception as exc:
            raise _Failure(f"a second aclose() raised {type(exc).__name__}: {exc}") from exc
        _expect_closed(end.send, "send()")
        if isinstance(end, SendsThrough):
            _expect_closed(end.frame_sink.send, "frame_sink.send()")


def _expect_closed(send: Callable[[bytes], None], what: str) -> None:
    """``send`` after ``aclose()`` raises :class:`~acpio.ConnectionClosed` with a message."""
    try:
        send(b'{"after":"close"}')
    except ConnectionClosed as exc:
        if not str(exc):
            raise _Failure(f"{what} after aclose() raised ConnectionClosed without a message") from None
    except Exception as exc:
        raise _Failure(
            f"{what} after aclose() raised {type(exc).__name__}: {exc}, not acpio.ConnectionClosed"
        ) from exc
    else:
        raise _Failure(f"{what} after aclose() did not raise acpio.ConnectionClosed")


async def _check_peer_death(ctx: _Context) -> None:
    """``peer_death``: once the peer dies, receiving ends and sending fails, without hanging."""
    async with ctx.pair() as pair:
        if pair.kill_peer is None:
            raise _Skip("the pair has no kill_peer to make the peer disappear abruptly")
        end, peer = pair.end, pair.peer
        # Both ways work before the peer dies.
        end.send(b'{"hello":"peer"}')
        peer.send(b'{"hello":"end"}')
        _compare([b'{"hello":"peer"}'], await ctx.receive_frames(peer, 1, "peer"), "end -> peer")
        _compare([b'{"hello":"end"}'], await ctx.receive_frames(end, 1, "end"), "peer -> end")
        # The peer dies while end waits for input and, with backpressure, while drain() waits.
        receiving = asyncio.ensure_future(end.receive())
        draining: asyncio.Future[None] | None = None
        try:
            if ctx.backpressure:
                _, draining = await _fill_until_held(end, _near_limit(peer))
            killed = pair.kill_peer()
            if inspect.isawaitable(killed):
                await ctx.within(killed, "kill_peer()")
            await _expect_receive_to_end(ctx, end, receiving)
            if draining is not None:
                await _expect_send_failure(ctx, draining, "a drain() waiting when the peer died")
        finally:
            await _cancel(receiving)
            await _cancel(draining)
        await _expect_sends_to_fail(ctx, end, _near_limit(peer), "end", "the peer died")


async def _check_oversized(ctx: _Context) -> None:
    """``oversized``: a line over ``max_line`` arrives as an OversizedFrame; the next ones still arrive."""
    async with ctx.pair() as pair:
        max_line = getattr(pair.end, "max_line", None)
        if not isinstance(max_line, int):
            raise _Skip("the end has no max_line: it has no line length limit")
        if max_line > LARGE_FRAME_LIMIT:
            raise _Skip(
                f"max_line is {max_line} bytes; build the ends with a max_line of at most "
                f"{LARGE_FRAME_LIMIT} to check it"
            )
        just_over = _sized(b"over", max_line + 1)
        far_over = _sized(b"far", 3 * max_line + 1001)
        sent = [b'{"before":1}', just_over, b'{"between":1}', far_over, b'{"after":1}']
        for frame in sent:
            pair.peer.send(frame)
        got = await ctx.receive_frames(pair.end, len(sent), "end")
        for index in (0, 2, 4):
            _compare([sent[index]], [got[index]], f"peer -> end, frame {index} around oversized lines")
        for index in (1, 3):
            line, marker = sent[index], got[index]
            what = f"a line of {len(line)} bytes (max_line {max_line})"
            if not isinstance(marker, OversizedFrame):
                raise _Failure(f"{what} arrived as {_show(marker)}, not as an OversizedFrame")
            if marker.size != len(line):
                raise _Failure(f"{what} arrived as an OversizedFrame of size {marker.size}")
            head = marker.head
            if not head or not line.startswith(head) or len(head) >= len(line):
                raise _Failure(f"{what} arrived with a head that is not a short start of it: {_show(head)}")


async def _check_drain(ctx: _Context) -> None:
    """``drain``: ``drain()`` returns with nothing queued, and once queued frames are written."""
    async with ctx.pair() as pair:
        end = pair.end
        await ctx.within(end.drain(), "end.drain() with nothing queued")
        frames = _burst(100, b"drain", None)
        receiving = asyncio.ensure_future(ctx.receive_frames(pair.peer, len(frames), "peer"))
        try:
            for frame in frames:
                end.send(frame)
            await ctx.within(end.drain(), "end.drain() with 100 frames queued and the peer reading")
            statistics = getattr(end, "statistics", None)
            if callable(statistics) and statistics().get("queued"):
                raise _Failure(f"drain() returned with {statistics()['queued']} bytes still queued")
            got = await receiving
        finally:
            await _cancel(receiving)
        _compare(frames, got, "end -> peer")
        await ctx.within(end.drain(), "end.drain() once everything was written")


async def _check_backpressure(ctx: _Context) -> None:
    """``backpressure``: ``drain()`` holds back a sender whose peer reads nothing, until it reads."""
    if not ctx.backpressure:
        raise _Skip("backpressure=False: the transport's writes never wait for the peer")
    async with ctx.pair() as pair:
        drained: asyncio.Future[None] | None = None
        receiving: asyncio.Future[list[bytes | OversizedFrame]] | None = None
        try:
            sent, drained = await _fill_until_held(pair.end, _near_limit(pair.peer))
            if drained is None:
                queued = sum(map(len, sent))
                raise _Failure(
                    f"drain() kept returning while the peer read nothing ({queued} bytes sent): "
                    "a sender that awaits drain() is never slowed down to its reader's pace"
                )
            receiving = asyncio.ensure_future(ctx.receive_frames(pair.peer, len(sent), "peer"))
            await ctx.within(drained, "end.drain() once the peer reads again")
            got = await receiving
        finally:
            await _cancel(receiving)
            await _cancel(drained)
        _compare(sent, got, "end -> peer (held back, then read)")


_CHECKS: Final[Mapping[str, Callable[[_Context], Awaitable[None]]]] = {
    "order": _check_order,
    "batching": _check_batching,
    "eof": _check_eof,
    "close_delivers": _check_close_delivers,
    "close_both_ways": _check_close_both_ways,
    "after_close": _check_after_close,
    "peer_death": _check_peer_death,
    "oversized": _check_oversized,
    "drain": _check_drain,
    "backpressure": _check_backpressure,
}
"""The check of each of :data:`TRANSPORT_PROPERTIES`."""


# -- what the properties expect --------------------------------------------------------------------


async def _expect_end_of_input(ctx: _Context, transport: Transport, who: str, after: str) -> None:
    """``transport.receive()`` returns ``None`` three times in a row: its input ended for good."""
    for attempt in ("", " again", " a third time"):
        frame = await ctx.within(transport.receive(), f"{who}.receive() after {after}")
        if frame is not None:
            raise _Failure(
                f"after {after} and the frames sent before, {who}.receive(){attempt} returned "
                f"{_show(frame)} instead of None (end of input)"
            )


async def _expect_sends_to_fail(ctx: _Context, sender: Transport, limit: int, who: str, after: str) -> None:
    """``send()`` and ``drain()`` fail (ConnectionClosed, TransportError) before long, and never hang."""
    chunk = _sized(b"void", min(65536, limit))
    sent = 0
    while sent <= DEAD_PEER_BYTES:
        try:
            sender.send(chunk)
        except Exception as exc:
            await _expect_send_failure(ctx, _failed(exc), f"{who}'s send() after {after}")
            return
        sent += len(chunk)
        drained = asyncio.ensure_future(sender.drain())
        try:
            await ctx.within(asyncio.wait({drained}), f"{who}'s drain() after {after}")
        finally:
            await _cancel(drained)
        if drained.exception() is not None:
            await _expect_send_failure(ctx, drained, f"{who}'s drain() after {after}")
            return
    raise _Failure(
        f"{who}'s send() and drain() after {after} kept succeeding for {sent} bytes: "
        "nobody reads them; a write failure must reach drain() as acpio.TransportError"
    )


async def _expect_receive_to_end(
    ctx: _Context, end: Transport, pending: asyncio.Future[bytes | OversizedFrame | None]
) -> None:
    """``end``'s input ends (None or TransportError) after the peer died; frames in flight first."""
    what = "end.receive() after the peer died"
    for _ in range(DEAD_PEER_FRAMES):
        try:
            frame = await ctx.within(pending, what)
        except TransportError as exc:
            _require_message(exc, what)
            return
        except _Failure:
            raise
        except Exception as exc:
            raise _Failure(
                f"{what} raised {type(exc).__name__}: {exc}; expected None or acpio.TransportError"
            ) from exc
        if frame is None:
            return
        pending = asyncio.ensure_future(end.receive())
    raise _Failure(f"end.receive() still returned frames after {DEAD_PEER_FRAMES} from a dead peer")


async def _expect_send_failure(ctx: _Context, outcome: asyncio.Future[None], what: str) -> None:
    """``outcome`` (a drain, or a failed send) fails with a clear acpio error, within the timeout."""
    try:
        await ctx.within(outcome, what)
    except (TransportError, ConnectionClosed) as exc:
        _require_message(exc, what)
        return
    except _Failure:
        raise
    except Exception as exc:
        raise _Failure(
            f"{what} raised {type(exc).__name__}: {exc}; expected acpio.TransportError "
            "(from drain) or acpio.ConnectionClosed (from send)"
        ) from exc
    raise _Failure(f"{what} returned normally, though the peer died before reading what was sent")


async def _fill_until_held(end: Transport, limit: int) -> tuple[list[bytes], asyncio.Future[None] | None]:
    """Send while the peer reads nothing until ``drain()`` stays pending: the frames and that drain.

    The drain is ``None`` if it still returned after :data:`STALL_LIMIT` bytes.
    """
    size = min(64 * 1024, limit)
    sent: list[bytes] = []
    while sum(map(len, sent)) <= STALL_LIMIT:
        for _ in range(max(1, STALL_STEP // size)):
            frame = _sized(b"%d" % len(sent), size)
            end.send(frame)
            sent.append(frame)
        drained = asyncio.ensure_future(end.drain())
        done, _ = await asyncio.wait({drained}, timeout=STALL_WINDOW)
        if not done:
            return sent, drained  # held back: the peer reads nothing
        drained.result()
    return sent, None


# -- frames and comparisons ------------------------------------------------------------------------


def _as_pair(source: object) -> TransportPair:
    if isinstance(source, TransportPair):
        pair = source
    elif isinstance(source, tuple) and len(source) == 2:
        pair = TransportPair(source[0], source[1])
    else:
        raise _Misuse(f"make_pair() gave {source!r}: expected a TransportPair or an (end, peer) tuple")
    for role, transport in (("end", pair.end), ("peer", pair.peer)):
        if not isinstance(transport, Transport):
            raise _Failure(
                f"the {role} {transport!r} does not implement the Transport protocol "
                "(receive, send, drain, aclose)"
            )
    return pair


def _near_limit(receiver: Transport) -> int:
    """The size of the large frames a receiver must take whole: its ``max_line``, within reason."""
    max_line = getattr(receiver, "max_line", None)
    if isinstance(max_line, int):
        return min(max_line, LARGE_FRAME_LIMIT)
    return 256 * 1024


def _sized(tag: bytes, size: int) -> bytes:
    """A JSON text of exactly ``size`` bytes (at least 12), starting with ``tag``."""
    start = b'{"t":"' + tag + b'","p":"'
    if size < len(start) + 2:
        return (b"x" * size)[:size]
    return start + b"p" * (size - len(start) - 2) + b'"}'


def _burst(count: int, tag: bytes, large: int | None) -> list[bytes]:
    """``count`` frames numbered in order, some non-ASCII and, given ``large``, three that long."""
    frames = []
    for i in range(count):
        if i % 100 == 7:
            frames.append(b'{"from":"%s","i":%d,"text":"%s"}' % (tag, i, NON_ASCII))
        else:
            frames.append(b'{"jsonrpc":"2.0","method":"n","params":{"from":"%s","i":%d}}' % (tag, i))
    if large is not None:
        for i in (1, count // 2, count - 1):
            frames[i] = _sized(b"%s-%d" % (tag, i), large)
    return frames


def _show(frame: object) -> str:
    if isinstance(frame, bytes) and len(frame) > 80:
        return f"{frame[:60]!r}… ({len(frame)} bytes)"
    return repr(frame)


def _compare(sent: Sequence[bytes], got: Sequence[bytes | OversizedFrame], way: str) -> None:
    for index, (expected, actual) in enumerate(zip(sent, got, strict=False)):
        if expected != actual:
            where = f"frame {index} of {len(sent)}"
            if actual in sent:
                raise _Failure(f"{way}: {where} is out of order: got {_show(actual)}, sent {_show(expected)}")
            raise _Failure(f"{way}: {where} changed: sent {_show(expected)}, received {_show(actual)}")
    if len(got) != len(sent):
        raise _Failure(f"{way}: sent {len(sent)} frames, received {len(got)}")


def _require_message(exc: BaseException, what: str) -> None:
    if not str(exc).strip():
        raise _Failure(f"{what} raised {type(exc).__name__} without a message saying what went wrong")


# -- tasks -----------------------------------------------------------------------------------------


async def _cancel(task: asyncio.Future[Any] | None) -> None:
    """Cancel ``task`` if it still runs and wait for it to end, ignoring how it ended."""
    if task is None:
        return
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning


def _failed(exc: BaseException) -> asyncio.Future[None]:
    """A future that already failed with ``exc``."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.set_exception(exc)
    return future


async def _together(*coroutines: Coroutine[Any, Any, None]) -> None:
    """Run coroutines concurrently; the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            await _cancel(task)
