"""The conductor: one ACP endpoint upstream, a chain of proxies (and, in agent mode, an agent) downstream.

::

    conductor = Chain.agent("conductor", [Proxy.builder(), "python proxy.py", "python agent.py"])
    await conductor.serve(Stdio())                      # or: Client.builder().connect_with(conductor, main)

**Modes.** In *agent mode* the conductor acts as an agent toward its client and owns proxies followed
by a final agent. In *proxy mode* it acts as a proxy toward its own conductor and owns proxies only:
the last proxy's successor is the conductor's own successor, so conductors nest.

**Lazy start.** Components are opened (processes spawned, builders started) when the first
``initialize`` arrives, and an instantiator may choose them from it (and return, in an
:class:`~acpio.conductor.Instantiation`, the ``initialize`` to send down the chain instead). The first
message must be ``initialize`` (``proxy/initialize`` or ``_proxy/initialize`` in proxy mode);
anything else is answered ``-32600``. A run stopped before the chain answered that ``initialize``
(Ctrl-C while a component is slow to start) kills its components at once instead of giving each
its grace periods: nothing was under way.

**Routing.** The conductor owns one connection per component; components never talk to each other
directly. With ``n`` proxies, the client's messages go to proxy 0; what proxy ``i`` sends in a
``proxy/successor`` envelope goes, unwrapped, to proxy ``i + 1`` (the last proxy's to the agent as
plain ACP, or in proxy mode up to the conductor's successor, wrapped); what a component sends
plainly goes to its predecessor, wrapped in ``proxy/successor`` when that is a proxy. ``initialize``
reaches proxies as ``proxy/initialize`` and the agent as ``initialize``; a proxy that sends
``proxy/initialize`` downstream is answered ``-32600``. The envelope's ``_meta`` belongs to its hop
and is never copied into the unwrapped message.

**Older proxies.** A proxy built before the rename speaks ``_proxy/initialize`` and
``_proxy/successor``. The conductor keeps, per proxy link, the names that proxy uses (unknown at
first, then the current ones): a proxy that sends ``_proxy/successor`` is from then on sent
``_proxy/successor`` too. ``initialize`` goes to a proxy as ``proxy/initialize`` first; if the proxy
answers ``-32601``, or it answers with an error after it used ``_proxy/successor`` (an older proxy
passes a method it does not know on to its successor, which the conductor answers ``-32601``), the
request is sent again as ``_proxy/initialize`` and that answer goes back upstream.

* Messages are forwarded raw (never validated into models), from each connection's dispatch loop,
  so order is kept end to end and unknown fields and ``_meta`` survive. A notification written the
  usual way (``{"jsonrpc":"2.0","method":...,"params":...}``, plain or in an envelope) is not even
  decoded into the engine: it is checked and passed on as bytes, spliced into the next hop's frame,
  before the connection reads on (:mod:`acpio.conductor.relay`).
* **A batch stays a batch.** What a connection receives in one JSON-RPC array goes on to the next
  hop as one array (with that hop's ids), and the answers come back as one array
  (:mod:`acpio.conductor.batches`).
* **Bad input is answered at the first hop.** A line that is not JSON, an entry that is no JSON-RPC
  message (``17`` in a batch), a malformed envelope: the conductor's connection that receives it
  answers (``-32700``, ``-32600``) and nothing goes on. The Rust conductor relays such frames
  unchanged; acpio does not, because each hop has its own ids (an answer from further down could
  not be matched with anything the client sent) and because the error then names the hop that got
  it. Valid entries of the same batch are forwarded (as a batch) and answered in the same array.
  Methods the conductor does not know, and params it does not check, are no bad input: they pass.
* Each request is forwarded as a new request on the next hop, with that hop's own id; its answer
  goes back to the original request. ``$/cancel_request`` is never forwarded: cancelling a request
  cancels the request it was forwarded as, hop by hop.
* A component that ends while the chain runs breaks it: every request from upstream still waiting
  is answered with an error naming the component (with its exit status and the end of its stderr
  for a subprocess), then the conductor closes its components and :meth:`Chain.serve` raises
  :class:`ConductorError`. The same happens if a component cannot be started.

**Tracing.** :meth:`Chain.trace_to` records every logical message between the lanes (see
:mod:`acpio.conductor.tracing`), and the stderr lines of the components started from commands.
:meth:`Chain.debug_to` writes each line that crosses each link, per component
(:mod:`acpio.conductor.debuglog`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from acpio.errors import AcpError, InvalidRequest, RequestError
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    RequestDispatch,
    ResponseDispatch,
    Role,
    Target,
    open_transport,
)
from acpio.roles import PROXY_INITIALIZE_METHOD, Agent, Proxy, proxy_methods_of
from acpio.roles import SuccessorEnvelope as Envelope
from acpio.transports.base import Transport
from acpio.transports.channel import Channel, ServedChannel
from acpio.transports.tap import Tap

from .batches import BatchScope, Gathering
from .components import ComponentSpec, Instantiation, Instantiator, Member, resolve
from .debuglog import DebugLog
from .delivery import CLIENT, INITIALIZE, INITIALIZE_METHODS, UPSTREAM, Delivery
from .errors import ConductorError
from .inflight import InFlight
from .legacy import initialize_downstream
from .links import CLOSE_LIMIT, ComponentLinks
from .relay import Relay
from .run_state import RunState
from .tracing import CallbackSink, ChainTrace, FileSink, TraceSink, TraceWriter

if TYPE_CHECKING:
    from acpio.jsonrpc import Responder

__all__ = ["Chain", "ConductorError", "Mode"]

_log = logging.getLogger("acpio.conductor")

#: ``"agent"``: proxies then a final agent; ``"proxy"``: proxies whose successor is the conductor's own.
Mode = Literal["agent", "proxy"]

#: What :meth:`Chain.trace_to` takes: a file path, a :class:`TraceSink`, or a function of each event.
TraceTarget: TypeAlias = str | os.PathLike[str] | TraceSink | Callable[[dict[str, object]], object]


class Chain:
    """A conductor: serves one upstream connection and routes it through its components.

    Make one with :meth:`agent` or :meth:`proxy`; serve it with :meth:`serve`, or pass it wherever a
    component is accepted (it has :meth:`open`), including to another conductor. Each serve opens
    its components anew. See the module docstring for what it does.
    """

    def __init__(self, name: str, mode: Mode, components: Sequence[ComponentSpec] | Instantiator) -> None:
        if mode not in ("agent", "proxy"):
            raise ValueError(f"A conductor's mode is 'agent' or 'proxy', not {mode!r}")
        if isinstance(components, str) or not (isinstance(components, Sequence) or callable(components)):
            raise TypeError(
                "A conductor takes a list of components, or an instantiator (a function of the "
                f"InitializeRequest that returns the list); got {components!r}"
            )
        if isinstance(components, Sequence):
            components = list(components)
            _check_count(mode, len(components))
            for component in components:
                resolve(component)  # fail now, not at the first initialize, on a bad component
        self.name = name
        self.mode: Mode = mode
        self._components = components
        self._trace_target: TraceTarget | None = None
        self._debug_directory: str | os.PathLike[str] | None = None
        #: Runs served in-process by :meth:`open`, kept referenced until they end.
        self._opened: set[asyncio.Task[None]] = set()

    @classmethod
    def agent(cls, name: str, components: Sequence[ComponentSpec] | Instantiator) -> Chain:
        """An agent-mode conductor: ``components`` are proxies followed by the final agent (at least one)."""
        return cls(name, "agent", components)

    @classmethod
    def proxy(cls, name: str, components: Sequence[ComponentSpec] | Instantiator) -> Chain:
        """A proxy-mode conductor: ``components`` are proxies; the last one's successor is the conductor's."""
        return cls(name, "proxy", components)

    def __repr__(self) -> str:
        what = (
            f"{len(self._components)} components"
            if isinstance(self._components, list)
            else "components from an instantiator"
        )
        return f"<Chain {self.name!r} {self.mode} mode, {what}>"

    def trace_to(self, target: TraceTarget | None) -> Chain:
        """Record a trace of each run; returns the conductor.

        ``target`` is a path (the file is truncated when a run starts), a :class:`TraceSink` (such
        as :class:`~acpio.conductor.MemorySink`; it is closed when the run ends), a function called
        with each event (a dict), or ``None`` to stop tracing.
        """
        if not (target is None or isinstance(target, str | os.PathLike | TraceSink) or callable(target)):
            raise TypeError(
                f"trace_to() takes a path, a TraceSink, a function of each event, or None; got {target!r}"
            )
        self._trace_target = target
        return self

    def debug_to(self, directory: str | os.PathLike[str] | None) -> Chain:
        """Write a line log per component of each run in ``directory`` (``None``: stop); returns self.

        One file per lane (``0-client.log``, ``1-proxy0.log``, ``2-agent.log``...), truncated when a run
        starts, with every line sent to, received from and written on the stderr of that component
        (see :mod:`acpio.conductor.debuglog`). The directory is created when a run starts.
        """
        if not (directory is None or isinstance(directory, str | os.PathLike)):
            raise TypeError(f"debug_to() takes a directory path or None; got {directory!r}")
        self._debug_directory = directory
        return self

    async def serve(self, target: Target) -> None:
        """Serve the upstream connection on ``target`` (a transport or component) until it ends.

        Returns when the upstream input ended and the components were closed. Raises
        :class:`ConductorError` if a component could not be started or ended on its own (the waiting
        requests were answered with an error first), ``OSError`` if the trace file or the debug
        directory cannot be opened.
        """
        trace = self._new_trace()
        try:
            debug = None if self._debug_directory is None else DebugLog(self._debug_directory)
        except BaseException:
            if trace is not None:
                trace.writer.close()
            raise
        run = _Run(self, trace, debug)
        try:
            transport = await open_transport(target)
            # The conductor forwards: unstable methods pass through it, the components decide.
            role: Role = Agent(unstable=True) if self.mode == "agent" else Proxy(unstable=True)
            builder = Builder(role, name=self.name).with_handler(_FromUpstream(run))
            upstream = transport
            if debug is not None:
                debug.open_lane(0, "Client", "the conductor's client" if self.mode == "agent" else "upstream")
                upstream = Tap(transport, debug.observer("Client"))
            delivery = run.delivery
            delivery.up_out = Gathering(upstream, run.scope)
            # Responses from upstream are picked out of its frames for the trace.
            watch = None if trace is None else trace.responses_on(UPSTREAM)
            await builder.serve(Relay(delivery.up_out, functools.partial(delivery.pass_on, CLIENT), watch))
        finally:
            await run.close()
        if run.state.failure is not None:
            raise run.state.failure

    async def open(self) -> Transport:
        """Serve this conductor in-process; return the transport that talks to it (the Component protocol).

        Closing that transport ends the run, and waits until the conductor has closed its own
        components (so a nested conductor's processes are gone when the outer one is done).
        """
        ours, theirs = Channel.duplex()
        task = asyncio.get_running_loop().create_task(
            self._serve_in_background(ours), name=f"conductor {self.name}"
        )
        self._opened.add(task)
        task.add_done_callback(self._opened.discard)
        return ServedChannel(theirs, task, close_timeout=CLOSE_LIMIT)

    async def _serve_in_background(self, transport: Transport) -> None:
        try:
            await self.serve(transport)
        except ConductorError as exc:
            _log.warning("Conductor %r stopped: %s", self.name, exc)
        except Exception:
            _log.exception("Conductor %r failed", self.name)

    def _new_trace(self) -> ChainTrace | None:
        target = self._trace_target
        if target is None:
            return None
        sink: TraceSink
        if isinstance(target, str | os.PathLike):
            sink = FileSink(target)
        elif isinstance(target, TraceSink):
            sink = target
        else:
            sink = CallbackSink(target)
        return ChainTrace(TraceWriter(sink))

    async def _choose(self, request: RequestDispatch) -> tuple[list[Member], Any]:
        """The components for this run and the ``initialize`` params to send them (``None``: the client's).

        The fixed list, or the instantiator's answer to ``request``.
        """
        components = self._components
        if isinstance(components, list):
            return [resolve(component, stderr=self._watches_stderr) for component in components], None
        from acpio.schema import InitializeRequest

        initialize = request.parse(InitializeRequest)
        chosen = components(initialize)
        if inspect.isawaitable(chosen):
            chosen = await chosen
        params: Any = None
        if isinstance(chosen, Instantiation):
            if chosen.initialize is not None:
                if not isinstance(chosen.initialize, InitializeRequest):
                    raise TypeError(
                        f"The instantiator's Instantiation.initialize is {chosen.initialize!r}, "
                        "not an InitializeRequest (or None to forward the client's)"
                    )
                params = chosen.initialize.to_wire()
            chosen = chosen.components
        if isinstance(chosen, str) or not isinstance(chosen, Sequence):
            raise TypeError(
                f"The instantiator returned {chosen!r}, not a list of components (or an Instantiation)"
            )
        _check_count(self.mode, len(chosen))
        return [resolve(component, stderr=self._watches_stderr) for component in chosen], params

    @property
    def _watches_stderr(self) -> bool:
        """Whether a run records its components' stderr lines (it traces, or writes a debug log)."""
        return self._trace_target is not None or self._debug_directory is not None


def _check_count(mode: Mode, count: int) -> None:
    if mode == "agent" and count == 0:
        raise ValueError(
            "An agent-mode conductor needs at least one component: the agent (proxies go before it)"
        )


# --- one run ---------------------------------------------------------------------------------------


class _FromUpstream:
    """The handler of the upstream connection: everything goes into the chain."""

    __slots__ = ("run",)

    def __init__(self, run: _Run) -> None:
        self.run = run

    def accepts(self, message: Dispatch) -> bool:
        return type(message) is not ResponseDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> None:
        await _drained(await self.run.from_upstream(message, cx))


class _FromComponent:
    """The handler of the connection to component ``index``."""

    __slots__ = ("index", "run")

    def __init__(self, run: _Run, index: int) -> None:
        self.run = run
        self.index = index

    def accepts(self, message: Dispatch) -> bool:
        return type(message) is not ResponseDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> None:
        await _drained(self.run.from_component(self.index, message))


async def _drained(target: Connection | None) -> None:
    """Backpressure: wait while ``target`` (where a notification just went) has not read its backlog.

    This link's dispatch loop, and so its reading, waits meanwhile: a stalled client slows the
    agent's stream down instead of the conductor queueing it. A target that went away is not
    waited for (its end is reported elsewhere).
    """
    if target is not None:
        with contextlib.suppress(AcpError):
            await target.drain()


class _Run:
    """One conductor run: its lazy start, the routing of what each side sends, and its end.

    It reads each message from upstream and from the components, acts on those for the conductor
    (initialization, cancellation, ``proxy/successor`` envelopes) and hands the rest to its
    :class:`~acpio.conductor.delivery.Delivery`, naming the lane it goes to.
    """

    def __init__(self, chain: Chain, trace: ChainTrace | None, debug: DebugLog | None) -> None:
        self.chain = chain
        self.agent_mode = chain.mode == "agent"
        self.trace = trace
        self.debug = debug
        self.scope = BatchScope()
        self.init_method = INITIALIZE if self.agent_mode else PROXY_INITIALIZE_METHOD
        self.links = ComponentLinks(chain.name, trace, self._broken, scope=self.scope, debug=debug)
        self.in_flight = InFlight()
        #: How far the run got (this run is its only writer).
        self.state = RunState()
        #: Where each lane is reached, and the sending there.
        self.delivery = Delivery(self.agent_mode, self.links, trace, self.in_flight, self.state)
        #: The responder of the ``initialize`` that started the chain: answered once it is up.
        self.starting: Responder[Any] | None = None
        #: The params sent down the chain for that ``initialize`` when an instantiator replaced them.
        self.initialize_params: Any = None

    # --- starting -------------------------------------------------------------------------------

    async def _instantiate(self, request: RequestDispatch) -> bool:
        """Choose and open the components; on failure answer ``request`` and stop the conductor."""
        self.starting = request.responder
        try:
            members, self.initialize_params = await self.chain._choose(request)
        except RequestError as exc:
            self._fail_start(
                request, exc, ConductorError(f"The conductor {self.chain.name!r} refused to start: {exc}")
            )
            return False
        except Exception as exc:
            error = ConductorError(
                f"The conductor {self.chain.name!r} could not choose its components: {exc}"
            )
            self._fail_start(request, error.to_request_error(), error)
            return False
        delivery = self.delivery
        delivery.count = len(members) - 1 if self.agent_mode else len(members)
        delivery.lanes = [
            *(f"Proxy({i})" for i in range(delivery.count)),
            "Agent" if self.agent_mode else "Successor",
        ]
        try:
            await self.links.open(
                members,
                delivery.lanes,
                agent_mode=self.agent_mode,
                handler_for=functools.partial(_FromComponent, self),
                pass_on_for=lambda index: functools.partial(delivery.pass_on, index),
            )
        except ConductorError as error:
            self._fail_start(request, error.to_request_error(), error)
            return False
        self.state.instantiated = True
        return True

    def _fail_start(self, request: RequestDispatch, answer: RequestError, error: ConductorError) -> None:
        request.responder.respond_with_error(answer)
        self.state.fail(error)
        if self.delivery.up is not None:
            self.delivery.up.close()

    # --- routing --------------------------------------------------------------------------------

    async def from_upstream(self, message: Dispatch, cx: Connection) -> Connection | None:
        """Route a request or notification from the client (or, in proxy mode, from the successor).

        Returns the connection a notification went out on (to be drained), else ``None``.
        """
        delivery = self.delivery
        delivery.up = cx
        from_successor = not self.agent_mode and message.is_from(Agent)
        method = message.method
        if method == CANCEL_METHOD:
            if from_successor:  # a cancellation wrapped by our own conductor: for a request of this link
                self.in_flight.cancel(UPSTREAM, message.params)
            return None  # a plain one was applied by the connection to the request it names
        request = message if type(message) is RequestDispatch else None
        if request is not None:
            self.in_flight.remember(request.responder)
            if self.state.failure is not None:
                request.responder.respond_with_error(self.state.failure.to_request_error())
                return None
        if not from_successor and method in INITIALIZE_METHODS:
            # (In proxy mode the upstream Proxy role hands `_proxy/initialize` on as `proxy/initialize`.)
            if method != self.init_method:
                self._refuse_initialize(request, method)
                return None
            method = INITIALIZE
        if not self.state.instantiated:
            if request is None or from_successor or method != INITIALIZE:
                self._refuse_initialize(request, method)
                return None
            if not await self._instantiate(request):
                return None
            if self.initialize_params is not None:
                return delivery.deliver(CLIENT, 0, message, method, self.initialize_params)
        count = delivery.count
        source = count if from_successor else CLIENT
        target = count - 1 if from_successor else 0
        return delivery.deliver(source, target, message, method, message.params)

    def _refuse_initialize(self, request: RequestDispatch | None, method: str) -> None:
        if request is None:
            _log.warning(
                "Conductor %r: ignoring a notification before `%s`", self.chain.name, self.init_method
            )
            return
        if self.state.instantiated:
            message = (
                f"this conductor runs in {self.chain.mode} mode: initialize it with `{self.init_method}`, "
                f"not `{method}`"
            )
            request.responder.respond_with_error(InvalidRequest(message))
        else:
            request.responder.respond_with_error(InvalidRequest(f"expected `{self.init_method}` request"))

    def from_component(self, index: int, message: Dispatch) -> Connection | None:
        """Route a request or notification from component ``index``; as :meth:`from_upstream`."""
        request = message if type(message) is RequestDispatch else None
        method = message.method
        if method == CANCEL_METHOD:
            return None  # applied by the connection to the request it names; re-issued hop by hop
        if request is not None and self.state.failure is not None:
            request.responder.respond_with_error(self.state.failure.to_request_error())
            return None
        delivery = self.delivery
        names = proxy_methods_of(method) if index < delivery.count else None
        if names is not None and method == names.successor:
            self.links[index].methods = names  # from now on the proxy gets the names it uses
            envelope = Envelope.from_params(message.params)
            if envelope is None:
                reason = (
                    f"malformed `{method}` envelope: its params need a string `method` and, "
                    "optionally, `params` (an object or an array)"
                )
                if request is not None:
                    request.responder.respond_with_error(InvalidRequest(reason))
                else:
                    _log.warning("%s sent a %s", delivery.lanes[index], reason)
                return None
            if envelope.method == CANCEL_METHOD:  # the legacy way to cancel a wrapped request
                self.in_flight.cancel(index, envelope.params)
                return None
            inner = proxy_methods_of(envelope.method)
            if inner is not None and envelope.method == inner.initialize:
                if request is not None:
                    request.responder.respond_with_error(initialize_downstream(names, envelope.method))
                return None
            # The envelope's own `_meta` stays on this hop: only the inner message goes on.
            return delivery.deliver(index, index + 1, message, envelope.method, envelope.params)
        return delivery.deliver(index, index - 1, message, method, message.params)

    # --- ending ---------------------------------------------------------------------------------

    def _broken(self, failure: ConductorError) -> None:
        """A component ended while the chain ran: answer every request still waiting, close upstream."""
        self.state.fail(failure)
        self.in_flight.answer_all(failure.to_request_error())
        if self.delivery.up is not None:
            self.delivery.up.close()

    async def close(self) -> None:
        """Close every component connection (ending subprocesses), the trace and the debug log.

        Stopped before the chain answered the ``initialize`` that started it, the components are
        killed first: a component slow to start would otherwise hold the stop for its grace periods.
        """
        self.state.closing = True
        if self.starting is not None and not self.starting.done:
            self.links.kill()
        await self.links.close()
        if self.trace is not None:
            self.trace.writer.close()
        if self.debug is not None:
            self.debug.close()
