"""The conductor's connections to its components for one run: opened in order, watched, closed.

Each component gets a :class:`Link`: its lane, its name, and once opened its transport, the
connection to it and the task serving that connection. :class:`ComponentLinks` opens them in order
when the chain starts. A :class:`~acpio.transports.Tap` on each link reports the component's end
before its connection does; a component that ends while the chain runs breaks the
chain, which :class:`ComponentLinks` reports, once, with a :class:`ConductorError` that says which
component ended and how (exit status, end of stderr). :meth:`ComponentLinks.close` ends them all;
:meth:`ComponentLinks.kill` first, when the run is stopped before the chain was initialized (nothing
is lost: a component still starting is killed at once instead of being given its grace periods).
The same tap feeds the debug log, and the stderr lines of a component started from a command go to
the trace and the debug log. Each link's transport is a :class:`~acpio.conductor.batches.Gathering`,
so batches stay batches, under a :class:`~acpio.conductor.relay.Relay`, so notifications the
conductor does not need to read pass as bytes; the relay shows the trace the other frames, where
it finds the responses.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Final

from acpio.errors import TransportError
from acpio.jsonrpc import Builder, Connection, Handler, Role, open_transport
from acpio.roles import Client, Conductor, ProxyMethods
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.tap import Direction, Tap, TapObserver

from .batches import BatchScope, Gathering
from .components import Member
from .debuglog import DebugLog
from .errors import ConductorError
from .relay import RawNotification, Relay
from .tracing import ChainTrace

__all__ = ["CLOSE_LIMIT", "ComponentLinks", "Link"]

_log = logging.getLogger("acpio.conductor")

#: Seconds to wait for the components to end when the conductor closes (processes have their own limits).
CLOSE_LIMIT: Final = 15.0


class Link:
    """The conductor's connection to one component."""

    __slots__ = ("cx", "ended", "index", "is_agent", "lane", "member", "methods", "out", "task", "transport")

    def __init__(self, index: int, lane: str, member: Member, is_agent: bool) -> None:
        self.index = index
        self.lane = lane
        self.member = member
        self.is_agent = is_agent
        #: The proxy-chain method names this proxy uses, once known (from what it sent, or from its
        #: refusal of ``proxy/initialize``); until then the current names are sent.
        self.methods: ProxyMethods | None = None
        self.transport: Transport | None = None
        self.cx: Connection | None = None
        #: What the conductor sends to the component on, past the connection too (:mod:`.relay`).
        self.out: Gathering | None = None
        self.task: asyncio.Task[None] | None = None
        self.ended = False

    @property
    def name(self) -> str:
        """The component's name, as shown in traces and errors."""
        return self.member.name

    @property
    def kind(self) -> str:
        """``"agent"`` or ``"proxy"``."""
        return "agent" if self.is_agent else "proxy"


class ComponentLinks:
    """The links of one run, indexed like the components (see the module docstring).

    ``on_broken(failure)`` is called when a component ends while the chain runs (not once
    :meth:`close` has begun), at most once per component.
    """

    def __init__(
        self,
        conductor: str,
        trace: ChainTrace | None,
        on_broken: Callable[[ConductorError], None],
        *,
        scope: BatchScope,
        debug: DebugLog | None = None,
    ) -> None:
        self._conductor = conductor
        self._trace = trace
        self._on_broken = on_broken
        self._scope = scope
        self._debug = debug
        self._links: list[Link] = []
        self._closing = False

    def __getitem__(self, index: int) -> Link:
        return self._links[index]

    def __len__(self) -> int:
        return len(self._links)

    def __iter__(self) -> Iterator[Link]:
        return iter(self._links)

    async def open(
        self,
        members: Sequence[Member],
        lanes: Sequence[str],
        *,
        agent_mode: bool,
        handler_for: Callable[[int], Handler],
        pass_on_for: Callable[[int], Callable[[RawNotification], Gathering | None]],
    ) -> None:
        """Open a link to each of ``members``, in order, served by ``handler_for(index)``.

        What a component sends is first offered to ``pass_on_for(index)`` (see :class:`Relay`).

        In agent mode the last member is the agent. Raises :class:`ConductorError` naming the
        first component that could not be started.
        """
        last = len(members) - 1
        self._links = [
            Link(i, lanes[i], member, agent_mode and i == last) for i, member in enumerate(members)
        ]
        if self._trace is not None:
            names = [("Client", "client"), *((link.lane, link.name) for link in self._links)]
            if not agent_mode:
                names.append(("Successor", "successor"))
            self._trace.lanes(names)
        if self._debug is not None:
            for link in self._links:
                self._debug.open_lane(link.index + 1, link.lane, link.name)
        for link in self._links:
            try:
                await self._start(link, handler_for(link.index), pass_on_for(link.index))
            except Exception as exc:
                raise ConductorError(
                    f"Cannot start the {link.kind} {link.name!r} ({link.lane}): {exc}",
                    lane=link.lane,
                    component=link.name,
                ) from exc

    async def _start(
        self, link: Link, handler: Handler, pass_on: Callable[[RawNotification], Gathering | None]
    ) -> None:
        transport = await open_transport(link.member.component)
        link.transport = transport
        role: Role = Client(unstable=True) if link.is_agent else Conductor()
        builder = Builder(role, name=f"{self._conductor} -> {link.lane} {link.name}")
        builder.with_handler(handler)
        ready: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

        async def main(cx: Connection) -> None:
            ready.set_result(cx)
            await cx.wait_closed()

        # The tap reports the component's end before its connection does: the requests still
        # waiting are answered with the component's failure, not with a closed connection.
        tap = Tap(
            transport,
            self._observer(link),
            on_input_end=functools.partial(self.ended, link.index),
        )
        relay = link.member.lines
        if relay is not None:
            relay.target = self._stderr_target(link.lane)
        link.out = Gathering(tap, self._scope)
        watch = None if self._trace is None else self._trace.responses_on(link.index)
        link.task = asyncio.get_running_loop().create_task(
            self._serve(link, builder, Relay(link.out, pass_on, watch), main),
            name=f"conductor {self._conductor} link {link.lane}",
        )
        await asyncio.wait((ready, link.task), return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            raise ConductorError(f"its connection ended as soon as it was opened ({link.name!r})")
        link.cx = ready.result()

    def _observer(self, link: Link) -> TapObserver:
        return _ignore if self._debug is None else self._debug.observer(link.lane)

    def _stderr_target(self, lane: str) -> Callable[[str], None] | None:
        trace, debug = self._trace, self._debug
        if trace is None and debug is None:
            return None

        def line(text: str) -> None:
            if trace is not None:
                trace.stderr(lane, text)
            if debug is not None:
                debug.stderr(lane, text)

        return line

    async def _serve(self, link: Link, builder: Builder, transport: Transport, main: Any) -> None:
        error: BaseException | None = None
        try:
            await builder.connect_with(transport, main)
        except Exception as exc:
            _log.debug("The link to %s %r ended with an error", link.lane, link.name, exc_info=exc)
            error = exc
        finally:
            self.ended(link.index, error)

    def ended(self, index: int, error: BaseException | None) -> None:
        """Component ``index`` ended its connection: unless the links are closing, the chain is broken."""
        link = self._links[index]
        if link.ended:
            return
        link.ended = True
        if self._closing:
            return
        failure = self._ended_error(link, error)
        _log.debug("Conductor %r: %s", self._conductor, failure)
        self._on_broken(failure)

    def _ended_error(self, link: Link, error: BaseException | None) -> ConductorError:
        transport = link.transport
        returncode: int | None = getattr(transport, "returncode", None)
        stderr = error.stderr_tail if isinstance(error, TransportError) else None
        if stderr is None:
            stderr = getattr(transport, "stderr_tail", None)
        if isinstance(returncode, int):
            what = _describe_exit(returncode)
        elif error is not None:
            what = f"failed ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
        else:
            what = "closed its connection"
        return ConductorError(
            f"The {link.kind} {link.name!r} ({link.lane}) {what}; the conductor {self._conductor!r} "
            "cannot go on without it and is shutting down",
            lane=link.lane,
            component=link.name,
            exit_code=returncode if isinstance(returncode, int) else None,
            stderr_tail=stderr if isinstance(stderr, str) else None,
        )

    def kill(self) -> None:
        """Kill the components that can be killed (processes: SIGKILL to their group) at once.

        For a run stopped during start-up: :meth:`close` then only reaps them.
        """
        self._closing = True
        for link in self._links:
            kill = getattr(link.transport, "kill", None)
            if callable(kill):
                kill()

    async def close(self) -> None:
        """Close every component connection (ending subprocesses) and wait for them to end."""
        self._closing = True
        for link in self._links:
            if link.member.lines is not None:
                link.member.lines.target = None
        for link in self._links:
            if link.cx is not None:
                link.cx.close()
            elif link.transport is not None and (link.task is None or link.task.done()):
                await _quietly(link.transport.aclose())
        tasks = [link.task for link in self._links if link.task is not None]
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=CLOSE_LIMIT)
            for task in stuck:
                task.cancel()
            if stuck:
                await asyncio.wait(stuck)


def _ignore(direction: Direction, frame: bytes | OversizedFrame) -> None:
    """The observer of a link that is not traced."""


async def _quietly(closing: Awaitable[None]) -> None:
    try:
        await closing
    except Exception as exc:
        _log.debug("Closing a component failed", exc_info=exc)


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with exit code {returncode}"
