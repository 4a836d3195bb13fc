"""The session builder: a setup request being prepared, started blocking or from a handler."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar

from typing_extensions import TypeVar as DefaultTypeVar

from acpio.capabilities import fill_required_fields
from acpio.errors import AcpError, ConnectionClosed, DeadlockError
from acpio.jsonrpc import UNSET, Connection, DynamicHandlerRegistration
from acpio.schema import (
    ForkSessionRequest,
    ForkSessionResponse,
    LoadSessionRequest,
    NewSessionRequest,
    NewSessionResponse,
    ResumeSessionRequest,
)
from acpio.session.active import ActiveSession, SessionSetupRequest, SessionSetupResponse
from acpio.session.mcp import McpServerRegistry
from acpio.session.negotiation import typed_mcp_servers
from acpio.session.peers import agent_peer, client_peer
from acpio.session.routing import Routing, SessionRouter, protocol_version

if TYPE_CHECKING:
    from acpio.jsonrpc import Responder, SentRequest

_log = logging.getLogger("acpio.session")

T = TypeVar("T")

#: The setup request a :class:`SessionBuilder` sends (``SessionBuilder`` alone: ``session/new``).
RequestT = DefaultTypeVar("RequestT", bound=SessionSetupRequest, default=NewSessionRequest)


def attach_session(
    cx: Connection,
    response: SessionSetupResponse,
    mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
    *,
    session_id: str | None = None,
) -> ActiveSession:
    """Start reading the session that ``response`` (the agent's answer to a setup request) describes.

    Low level: :meth:`SessionBuilder.start_session` does this for you. The answers to
    ``session/load`` and ``session/resume`` do not name their session: pass ``session_id``. Call it
    inside the dispatch loop (a response callback) for the session to see the very next message;
    from elsewhere its handler starts at the loop's next turn, and the client role's queue keeps
    what came between. ``mcp_registrations`` are the session's MCP handlers, removed with it.
    """
    return ActiveSession(cx, response, mcp_registrations, session_id=session_id)


# --- the builder ----------------------------------------------------------------------------------

_SETUP_METHODS: Final[dict[type[Any], str]] = {
    NewSessionRequest: NewSessionRequest.METHOD,
    LoadSessionRequest: LoadSessionRequest.METHOD,
    ResumeSessionRequest: ResumeSessionRequest.METHOD,
    ForkSessionRequest: ForkSessionRequest.METHOD,
}


class SessionStart:
    """What :meth:`SessionBuilder.start_session` returns: await it, or use it with ``async with``.

    ``session = await builder.start_session()`` gives the :class:`ActiveSession`;
    ``async with builder.start_session() as session:`` also closes it at the end of the block.
    """

    __slots__ = ("_builder", "_session")

    def __init__(self, builder: SessionBuilder[Any]) -> None:
        self._builder = builder
        self._session: ActiveSession | None = None

    def __await__(self) -> Generator[Any, None, ActiveSession]:
        return self._builder._start().__await__()

    async def __aenter__(self) -> ActiveSession:
        self._session = await self._builder._start()
        return self._session

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            self._session.close()


_OnAnswer: TypeAlias = Callable[["SessionSetupResponse | AcpError", "Routing | None"], Awaitable[None]]


class SessionBuilder(Generic[RequestT]):
    """A session-setup request being prepared; start it with one of the ``start``/``on`` methods.

    Generic over the request it sends: ``SessionBuilder[NewSessionRequest]`` (``SessionBuilder``
    alone) from :func:`build_session`, :func:`build_session_cwd`; ``LoadSessionRequest`` from
    :func:`build_session_load`; ``ResumeSessionRequest`` from :func:`build_session_resume`;
    ``ForkSessionRequest`` from :func:`build_session_fork`; any of them from
    :func:`build_session_from`. Every kind starts the same way and gives an
    :class:`ActiveSession`. :attr:`request` may be changed before starting (its ``mcp_servers`` is
    always a list, so ``mcpServers`` is always sent). A builder starts one session.
    """

    def __init__(self, cx: Connection, request: RequestT) -> None:
        if type(request) not in _SETUP_METHODS:
            raise TypeError(
                f"SessionBuilder takes a NewSessionRequest, LoadSessionRequest, ResumeSessionRequest or "
                f"ForkSessionRequest; got {type(request).__name__}"
            )
        request = fill_required_fields(_SETUP_METHODS[type(request)], request)
        self._cx = cx
        #: The setup request's params that will be sent.
        self.request: RequestT = request
        self._mcp: list[DynamicHandlerRegistration] = []
        self._used = False

    def __repr__(self) -> str:
        request = self.request
        named = f" session_id={request.session_id!r}" if not isinstance(request, NewSessionRequest) else ""
        return (
            f"<SessionBuilder {self.method}{named} cwd={request.cwd!r} "
            f"mcp_servers={len(request.mcp_servers or ())}>"
        )

    @property
    def method(self) -> str:
        """The setup method this builder sends: ``session/new``, ``session/load``..."""
        return _SETUP_METHODS[type(self.request)]

    def with_mcp_server(self, registry: McpServerRegistry) -> SessionBuilder[RequestT]:
        """Offer the agent the MCP servers of ``registry`` in this session; returns the builder.

        The registry declares its servers in the request and starts serving them now, so they are
        ready while the agent sets the session up. They stop when the session ends or is refused.
        Works alike for every setup method (see :class:`McpServerRegistry`).
        """
        self._check_unused()
        attach = getattr(registry, "attach", None)
        if not callable(attach):
            raise TypeError(
                f"with_mcp_server() takes an MCP server registry (with attach(request, cx)); got "
                f"{registry!r}. Wrap plain server declarations in McpServerList([...])."
            )
        request = self.request
        if isinstance(request, NewSessionRequest):
            self._mcp.extend(registry.attach(request, self._cx))
            return self
        declared = NewSessionRequest(cwd=request.cwd, mcp_servers=[])
        self._mcp.extend(registry.attach(declared, self._cx))
        servers = request.mcp_servers
        if servers is None:  # set to None after the builder was made
            servers = request.mcp_servers = []
        servers.extend(declared.mcp_servers)
        return self

    # --- blocking -------------------------------------------------------------------------------

    def start_session(self) -> SessionStart:
        """Send the setup request and give the :class:`ActiveSession` once the agent answered.

        Await the result, or use it with ``async with`` (the session is closed at the end). For
        ``session/load``, the replayed conversation is in the session's :attr:`~ActiveSession.history`
        when it is handed over. Raises the agent's error (a :class:`~acpio.RequestError`) if it
        refuses the session, :class:`~acpio.ConnectionClosed` if the connection ends first, and
        :class:`~acpio.DeadlockError` inside a handler (use :meth:`on_session_start` there).
        """
        return SessionStart(self)

    async def run_until(self, callback: Callable[[ActiveSession], Awaitable[T]]) -> T:
        """Start the session, run ``await callback(session)``, close the session; return its result.

        For a session scoped to one piece of work: its MCP servers stop when the callback returns,
        and it cannot be handed to proxy mode. Errors as for :meth:`start_session`.
        """
        session = await self._start(scoped=True)
        async with session:
            return await callback(session)

    async def start_session_proxy(self, responder: Responder[Any]) -> str:
        """Start the session, answer the client's request through ``responder``, then forward.

        For a proxy that handles the client's setup request (to add MCP servers, say) and then
        lets the session's traffic through: see :meth:`ActiveSession.proxy_remaining_messages`.
        A loaded session's history is forwarded to the client first, in order, then the answer.
        Returns the session id. If the agent refuses, the client gets the error and so does the
        caller.
        """
        try:
            session = await self._start()
        except AcpError as exc:
            responder.respond_with_error(exc)
            raise
        client = client_peer(self._cx)
        for message in session.history:  # session/load: the client's replay precedes the answer
            self._cx.send_proxied_message_to(client, message.dispatch)
        responder.respond(session.response())
        session.proxy_remaining_messages()
        return session.session_id

    async def _start(self, *, scoped: bool = False) -> ActiveSession:
        self._check_unused()
        cx = self._cx
        if cx.in_dispatch_loop():
            raise DeadlockError(
                "start_session(), run_until() and start_session_proxy() wait for the agent's answer, "
                "which only this handler's own dispatch loop can read. Inside a handler use "
                "on_session_start(callback) or on_proxy_session_start(responder, callback), or move "
                "the call into cx.spawn(...)."
            )
        self._used = True
        abandoned = False
        attached: asyncio.Future[ActiveSession] = asyncio.get_running_loop().create_future()

        async def on_answer(result: SessionSetupResponse | AcpError, routing: Routing | None) -> None:
            # Runs in the dispatch loop, before the message after the response.
            if isinstance(result, AcpError):
                return  # the awaiting side raises the error itself
            if abandoned:
                if routing is not None:
                    routing.discard(f"Nobody reads session {routing.router.session_id!r} any more")
                self._remove_mcp()
                _log.info("A session was set up, but its caller stopped waiting for it: %r", result)
                return
            attached.set_result(self._attach(result, routing, scoped=scoped))

        sent = self._send(on_answer)
        try:
            try:
                await sent
            except AcpError as exc:
                if not isinstance(exc, ConnectionClosed | DeadlockError):
                    exc.add_note(f"(the agent refused {self._describe()}; -32000 means: authenticate first)")
                raise
            if not attached.done():
                # The response callback is queued in the dispatch loop; it runs before the next message.
                await _wait_or_closed(cx, attached)
        except BaseException:
            abandoned = True
            if attached.done() and not attached.cancelled():
                attached.result().close()
            raise
        return attached.result()

    # --- non-blocking (for handlers) ------------------------------------------------------------

    def on_session_start(self, callback: Callable[[ActiveSession], Awaitable[object]]) -> None:
        """Send the setup request and return at once; run ``callback(session)`` in a task once it exists.

        Safe inside handlers. The session's handler is in place before the message after the
        response (for ``session/load`` and ``/resume``, before the request is sent), and the session
        is closed when the callback returns (unless it handed the session to proxy mode). If the
        agent refuses the session, or the callback raises, the connection fails with that error, as
        a spawned task's failure does; to handle a refusal yourself, run :meth:`run_until` in
        ``cx.spawn(...)`` and catch the error there.
        """
        self._check_unused()
        self._used = True
        cx = self._cx

        async def on_answer(result: SessionSetupResponse | AcpError, routing: Routing | None) -> None:
            if isinstance(result, AcpError):
                result.add_note(f"(the agent refused {self.method} started by on_session_start())")
                raise result
            session = self._attach(result, routing)

            async def run() -> None:
                async with session:
                    await callback(session)

            cx.spawn(run)

        self._send(on_answer)

    def on_proxy_session_start(
        self,
        responder: Responder[Any],
        callback: Callable[[str], Coroutine[object, object, object]] | None = None,
    ) -> None:
        """For a proxy: forward the setup request, answer the client, route the session to it.

        Returns at once (safe inside handlers). When the agent answers, the dispatch loop answers
        the client through ``responder`` and installs the handler that forwards the session's
        messages to the client, before reading the next message (for ``session/load`` and
        ``/resume`` that handler is installed before the request is sent, so a load's replay
        reaches the client live, before the answer); then ``callback(session_id)`` runs in a task. A
        refusal is passed to the client (the callback does not run). If the client cancels its
        request, the cancellation is passed on to the agent.
        """
        self._check_unused()
        self._used = True
        cx = self._cx
        client = client_peer(cx)

        async def on_answer(result: SessionSetupResponse | AcpError, routing: Routing | None) -> None:
            if isinstance(result, AcpError):
                responder.respond_with_error(result)
                return
            for registration in self._mcp:
                registration.run_indefinitely()
            responder.respond(result)
            if routing is None:
                router = SessionRouter(cx, self._session_id(result), None, "forward", client)
                registration = cx.add_dynamic_handler(router)
            else:
                registration = routing.registration
            registration.run_indefinitely()
            if callback is not None:
                cx.spawn(callback, self._session_id(result))

        self._send(on_answer, client=client).forward_cancellation_from(responder)

    # --- internals ------------------------------------------------------------------------------

    def _send(self, on_answer: _OnAnswer, *, client: Any = UNSET) -> SentRequest[SessionSetupResponse]:
        """Send the request, the one start path of every kind and style.

        ``session/load`` and ``/resume`` name their session: its handler is installed first (queueing
        it, or forwarding it to ``client``), so nothing the agent sends for it is parked or lost. A
        refusal removes that handler and the MCP servers before ``on_answer`` sees the error.
        """
        cx = self._cx
        request = self.request
        peer = agent_peer(cx)  # a wrong kind of connection fails before anything is installed
        routing: Routing | None = None
        if isinstance(request, LoadSessionRequest | ResumeSessionRequest):
            routing = Routing(
                cx, request.session_id, history=isinstance(request, LoadSessionRequest), client=client
            )
        if protocol_version(cx) == 2:
            request = typed_mcp_servers(request)
        try:
            sent: SentRequest[SessionSetupResponse] = cx.send_request_to(peer, request)
        except BaseException:
            if routing is not None:
                routing.discard(f"{self.method} was not sent")
            self._remove_mcp()
            raise

        async def on_result(result: SessionSetupResponse | AcpError) -> None:
            if isinstance(result, AcpError):
                if routing is not None:
                    routing.discard(f"The agent refused {self._describe()}")
                self._remove_mcp()
            await on_answer(result, routing)

        sent.on_receiving_result(on_result)
        return sent

    def _attach(
        self, result: SessionSetupResponse, routing: Routing | None, *, scoped: bool = False
    ) -> ActiveSession:
        return ActiveSession(
            self._cx, result, self._mcp, session_id=self._session_id(result), _routing=routing, _scoped=scoped
        )

    def _session_id(self, result: SessionSetupResponse) -> str:
        """The session set up: named by the answer (new, fork) or by the request (load, resume)."""
        if isinstance(result, NewSessionResponse | ForkSessionResponse):
            return result.session_id
        request = self.request
        assert not isinstance(request, NewSessionRequest)
        return request.session_id

    def _describe(self) -> str:
        request = self.request
        if isinstance(request, NewSessionRequest):
            return f"{self.method} for cwd {request.cwd!r}"
        return f"{self.method} of session {request.session_id!r} in cwd {request.cwd!r}"

    def _remove_mcp(self) -> None:
        for registration in self._mcp:
            registration.remove()

    def _check_unused(self) -> None:
        if self._used:
            raise RuntimeError(
                "This SessionBuilder already started its session; make another builder "
                "(build_session(cx, cwd), build_session_load(cx, session_id, cwd)...) for another one."
            )


async def _wait_or_closed(cx: Connection, future: asyncio.Future[Any]) -> None:
    """Wait for ``future``; raise ``ConnectionClosed`` if the connection ends first."""
    closed = asyncio.ensure_future(cx.wait_closed())
    try:
        await asyncio.wait((future, closed), return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
    if not future.done():
        raise ConnectionClosed(f"Connection {cx.name!r} closed before the session was attached")


# --- entry points ---------------------------------------------------------------------------------
