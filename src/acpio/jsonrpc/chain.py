"""The handler chain of a connection: who is offered an incoming message, and what nobody claims.

A message is offered to the builder's handlers (registration order), then to the dynamic handlers
(added at run time with :meth:`~acpio.jsonrpc.Connection.add_dynamic_handler`), then to the role's
default handler. A message for a method the role disabled walks the role's disabled chain instead.
What nobody claims falls back: ``-32601 Method not found`` for a request, delivery to the waiting
caller for a response, nothing for a notification. A message declined with ``retry=True`` is
parked (:mod:`~acpio.jsonrpc.parked_messages`) and offered again to each dynamic handler added later.

A dynamic handler whose ``session_scope`` attribute is a string declares that it takes only
requests and notifications whose params carry that ``sessionId`` (a session's router). The chain
indexes those by session: a message is offered to the scoped handlers of its own session only, so
that its cost does not grow with the number of sessions open on the connection, and responses skip
them. Order is kept: a message meets its session's handlers and the unscoped dynamic handlers in
the order they were added.

While a handler runs for a request, the chain records that request in a context variable: a task
spawned then (``cx.spawn``; asyncio copies the context into each new task, so tasks those tasks
spawn too) belongs to the request (:meth:`HandlerChain.request_in_context`). A handler or such a
task that raises answers its request (:meth:`HandlerChain.error_for`) instead of failing the
connection.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from acpio.errors import InternalError, MethodNotFound, RequestError
from acpio.jsonrpc.dispatch import (
    Dispatch,
    Forward,
    Handler,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    Unhandled,
    passed_on,
)
from acpio.jsonrpc.parked_messages import ParkedMessages
from acpio.jsonrpc.role import Role

if TYPE_CHECKING:
    from acpio.jsonrpc.connection import Connection
    from acpio.jsonrpc.responses import Responder

__all__ = ["DynamicHandlerRegistration", "HandlerChain", "fallback", "unowned_context"]

_log = logging.getLogger("acpio.jsonrpc")

#: A chain link: the handler's ``accepts`` (or ``None``: it sees everything) and its ``handle``.
_Link = tuple[Callable[[Dispatch], bool] | None, Callable[[Dispatch, Any], Awaitable[Unhandled | None]]]

#: The request a handler is running for, with the chain running it (tasks spawned in this context
#: belong to that request). The chain is kept so that a connection served from inside another
#: connection's handler does not take the outer request for one of its own.
_running: contextvars.ContextVar[tuple[HandlerChain, Responder[Any]] | None] = contextvars.ContextVar(
    "acpio_running_request", default=None
)


def unowned_context() -> contextvars.Context:
    """A copy of the current context in which no request handler is running.

    A task started in it (and every task it starts) belongs to no request, whatever was running
    when it was made: its failure fails the connection.
    """
    context = contextvars.copy_context()
    context.run(_running.set, None)
    return context


def _link(handler: Handler) -> _Link:
    return (getattr(handler, "accepts", None), handler.handle)


def session_scope(handler: object) -> str | None:
    """The ``sessionId`` a handler is limited to (its ``session_scope`` string), or ``None``."""
    scope = getattr(handler, "session_scope", None)
    return scope if type(scope) is str else None


class DynamicHandlerRegistration:
    """A handler added to a running connection with :meth:`Connection.add_dynamic_handler`.

    It stays in the chain until :meth:`remove` is called or the ``with`` block it was used in ends.
    :meth:`run_indefinitely` keeps it for the connection's lifetime (``remove`` then does nothing).
    """

    __slots__ = ("_accepts", "_active", "_chain", "_kept", "handler", "order", "scope")

    def __init__(self, chain: HandlerChain, handler: Handler) -> None:
        self._chain = chain
        self.handler = handler
        self._accepts: Callable[[Dispatch], bool] | None = getattr(handler, "accepts", None)
        self._active = True
        self._kept = False
        #: The one ``sessionId`` whose messages the handler takes (``None``: any message).
        self.scope = session_scope(handler)
        #: Its place among the dynamic handlers (set when it joins the chain).
        self.order = 0

    @property
    def active(self) -> bool:
        """Whether the handler is still in the chain (or about to be)."""
        return self._active

    def remove(self) -> None:
        """Take the handler out of the chain; it declines every message from now on.

        A handler with a ``removed()`` method is told, so it can stop the work it started (an MCP
        server over ACP cancels the calls it is still serving).
        """
        if self._kept or not self._active:
            return
        self._active = False
        self._chain.remove(self)
        removed: Callable[[], object] | None = getattr(self.handler, "removed", None)
        if removed is not None:
            removed()

    def run_indefinitely(self) -> None:
        """Keep the handler for the connection's lifetime: later :meth:`remove` calls do nothing."""
        self._kept = True

    def __enter__(self) -> DynamicHandlerRegistration:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def accepts(self, message: Dispatch) -> bool:
        """Whether the handler is still registered and accepts ``message`` (its own ``accepts``)."""
        if not self._active:
            return False
        accepts = self._accepts
        return accepts is None or accepts(message)

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Offer ``message`` to the handler while it is registered and accepts it."""
        if not self.accepts(message):
            return Unhandled(message)
        return await self.handler.handle(message, cx)

    def link(self) -> _Link:
        """Its chain link: the checks of :meth:`accepts` first, then the handler itself."""
        return (self.accepts, self.handler.handle)


class HandlerChain:
    """The handlers of one connection, in order, and the offering of each message to them.

    It keeps the builder's, the dynamic and the role's default handlers, indexed by session for the
    scoped ones; the messages declined with ``retry=True`` wait in its :class:`ParkedMessages` and
    are offered again to each dynamic handler that joins. ``cx`` is the connection handlers are
    called with; ``after_each`` runs after each parked message is replayed to a new handler (the
    response callbacks it made ready).
    """

    __slots__ = (
        "_builder_links",
        "_cx",
        "_default_links",
        "_disabled",
        "_disabled_links",
        "_dynamic",
        "_joined",
        "_links",
        "_new",
        "_parked",
        "_role",
        "_scoped",
        "_scoped_links",
        "_unscoped",
        "after_each",
        "handler_methods",
        "has_new",
        "intercepts_responses",
    )

    def __init__(self, role: Role, handlers: Iterable[Handler], cx: Connection) -> None:
        self._role = role
        self._cx = cx
        handlers = tuple(handlers)
        self._builder_links = tuple(_link(h) for h in handlers)
        #: The methods the builder's handlers say they take (a string ``method`` attribute, as
        #: the typed handlers have); untyped handlers may take more.
        self.handler_methods = frozenset(
            method for h in handlers if isinstance(method := getattr(h, "method", None), str)
        )
        default = role.default_handler()
        self._default_links = (_link(default),) if default is not None else ()
        #: Methods the role does not speak: kept from the handlers when received.
        self._disabled = role.disabled_methods()
        disabled = role.disabled_handler()
        self._disabled_links = (_link(disabled),) if disabled is not None else ()
        #: The dynamic handlers in the chain, in the order they joined it (a dict: removal is O(1)).
        self._dynamic: dict[DynamicHandlerRegistration, None] = {}
        #: The scoped ones by session, and each session's whole chain (built when first needed).
        self._scoped: dict[str, dict[DynamicHandlerRegistration, None]] = {}
        self._scoped_links: dict[str, tuple[_Link, ...]] = {}
        self._unscoped: tuple[DynamicHandlerRegistration, ...] = ()
        #: Numbers the dynamic handlers as they join (their ``order``).
        self._joined = itertools.count()
        #: Added, not yet in the chain: activated by the dispatch loop between two messages.
        self._new: list[DynamicHandlerRegistration] = []
        #: Whether handlers were added and wait for :meth:`activate_new` (read for every message).
        self.has_new = False
        self._links: tuple[_Link, ...] = ()
        #: Whether a handler may see responses (one without ``accepts``): else they skip the chain.
        self.intercepts_responses = False
        self._parked = ParkedMessages(role, cx)
        self.after_each: Callable[[], Awaitable[None]] | None = None
        self._relink()

    def statistics(self) -> dict[str, int]:
        """Parked messages and dynamic handlers."""
        return {"retry_queue": len(self._parked), "dynamic_handlers": len(self._dynamic)}

    # --- dynamic handlers -------------------------------------------------------------------------

    def add(self, handler: Handler) -> DynamicHandlerRegistration:
        """Register ``handler``; it joins the chain at the next :meth:`activate_new`."""
        registration = DynamicHandlerRegistration(self, handler)
        self._new.append(registration)
        self.has_new = True
        return registration

    def remove(self, registration: DynamicHandlerRegistration) -> None:
        """Take ``registration`` out of the chain (or out of the handlers waiting to join)."""
        if registration in self._dynamic:
            del self._dynamic[registration]
            scope = registration.scope
            if scope is not None:
                scoped = self._scoped[scope]
                del scoped[registration]
                if not scoped:
                    del self._scoped[scope]
            self._relink(scope)
        elif registration in self._new:
            self._new.remove(registration)
            self.has_new = bool(self._new)

    def _relink(self, scope: str | None = None) -> None:
        """The links after the dynamic handlers changed (``scope``: only that session's changed)."""
        if scope is not None:
            self._scoped_links.pop(scope, None)  # the unscoped chain is the same
            return
        self._scoped_links.clear()
        self._unscoped = tuple(r for r in self._dynamic if r.scope is None)
        links = self._builder_links + tuple(r.link() for r in self._unscoped) + self._default_links
        self._links = links
        # a handler with its own ``accepts`` (a typed one, a dynamic one as a builder's) sees no responses
        self.intercepts_responses = any(
            getattr(r.handler, "accepts", None) is None for r in self._unscoped
        ) or any(a is None for a, _ in self._builder_links + self._default_links)

    def _session_links(self, session_id: str) -> tuple[_Link, ...]:
        """The chain of a message of ``session_id``: its scoped handlers among the unscoped ones."""
        links = self._scoped_links.get(session_id)
        if links is None:
            dynamic = [*self._scoped[session_id]]
            if self._unscoped:  # both kinds: in the order they joined the chain
                dynamic = sorted([*self._unscoped, *dynamic], key=lambda r: r.order)
            links = self._builder_links + tuple(r.link() for r in dynamic) + self._default_links
            self._scoped_links[session_id] = links
        return links

    async def activate_new(self) -> None:
        """Put the added handlers in the chain, each first offered the parked messages, in order."""
        while self._new:
            registration = self._new.pop(0)
            self.has_new = bool(self._new)
            if not registration.active:
                continue
            registration.order = next(self._joined)
            self._dynamic[registration] = None
            scope = registration.scope
            if scope is not None:
                self._scoped.setdefault(scope, {})[registration] = None
            self._relink(scope)
            if self._parked:
                await self._replay(registration)

    async def _replay(self, registration: DynamicHandlerRegistration) -> None:
        """Offer the parked messages to the handler that just joined, in order."""
        cx = self._cx

        async def offer(message: Dispatch) -> Dispatch | None:
            token = None
            if type(message) is RequestDispatch:
                assert isinstance(message, RequestDispatch)
                token = _running.set((self, message.responder))
            try:
                result = await registration.handle(message, cx)
            except Exception as exc:
                self.handler_failed(message, exc)
                return None
            finally:
                if token is not None:
                    _running.reset(token)
            return None if result is None else passed_on(message, result)

        await self._parked.replay(offer, self.after_each, fallback)

    # --- offering ---------------------------------------------------------------------------------

    async def offer(self, message: Dispatch) -> None:
        """Walk ``message`` through the chain; the fallback takes what nobody claims."""
        links = self._links
        if message.method in self._disabled:
            links = self._disabled_links
        elif self._scoped and (type(message) is NotificationDispatch or type(message) is RequestDispatch):
            params = message.params  # message.session_id, inline: this runs for every message
            session_id = params.get("sessionId") if type(params) is dict else None
            if type(session_id) is str:
                scoped = self._scoped_links.get(session_id)
                if scoped is not None:
                    links = scoped
                elif session_id in self._scoped:
                    links = self._session_links(session_id)
        retry = False
        cx = self._cx
        token = None
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            token = _running.set((self, message.responder))
        try:
            for accepts, handle in links:
                if accepts is not None and not accepts(message):
                    continue
                try:
                    result = await handle(message, cx)
                except Exception as exc:
                    self.handler_failed(message, exc)
                    return
                if result is None:
                    return
                if result.retry:
                    retry = True
                if result.message is not message:
                    message = passed_on(message, result)
                if type(result) is Forward:
                    await self._forward(message)
                    return
        finally:
            if token is not None:
                _running.reset(token)
        if retry:
            self._parked.park(message)
            return
        fallback(message)

    def request_in_context(self) -> Responder[Any] | None:
        """The responder of the request one of this chain's handlers is running for, if any.

        Read in the current context: inside a handler for a request, and inside the tasks spawned
        from one (asyncio copies the context into a new task).
        """
        running = _running.get()
        if running is None or running[0] is not self:
            return None
        return running[1]

    def error_for(self, exc: Exception) -> RequestError:
        """The answer to a request whose handler (or a task it spawned) raised ``exc``.

        A :class:`~acpio.RequestError` as it is; anything else ``-32603`` with the exception's
        message in ``data`` unless the connection hides it (``cx.error_details``; see
        :meth:`~acpio.InternalError.for_exception`).
        """
        if isinstance(exc, RequestError):
            return exc
        return InternalError.for_exception(exc, details=self._cx.error_details)

    async def _forward(self, message: Dispatch) -> None:
        """A handler returned :class:`Forward`: the role's default handler takes ``message`` now."""
        cx = self._cx
        for accepts, handle in self._default_links:
            if accepts is None or accepts(message):
                try:
                    if await handle(message, cx) is None:
                        return
                except Exception as exc:
                    self.handler_failed(message, exc)
                    return
        role = type(self._role).__name__
        error = TypeError(
            f"A handler returned Forward({message.method!r}), but a {role} connection has no default "
            "handler that forwards: Forward is for proxies (Proxy.builder()); return Unhandled(...) "
            "to pass the message to the next handler instead"
        )
        self.handler_failed(message, error)

    def handler_failed(self, message: Dispatch, exc: Exception) -> None:
        """A handler raised: answer the request with :meth:`error_for`, or log."""
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            if isinstance(exc, RequestError):
                _log.debug("Handler for %r answered with %s", message.method, exc)
            else:
                _log.error("Handler for request %r failed", message.method, exc_info=exc)
            message.responder.respond_with_error(self.error_for(exc))
        elif type(message) is ResponseDispatch:
            assert isinstance(message, ResponseDispatch)
            message.router.respond_with_error(exc)
        elif isinstance(exc, RequestError):
            _log.warning("Notification %r rejected: %s", message.method, exc)
        else:
            _log.exception("Handler for notification %r failed", message.method, exc_info=exc)

    def release_parked(self) -> None:
        """The input ended: parked messages no handler will ever claim get the normal fallback."""
        for message in self._parked.release():
            fallback(message)


def fallback(message: Dispatch) -> None:
    """What happens to a message nobody claims: -32601, delivery to the caller, or nothing."""
    kind = type(message)
    if kind is RequestDispatch:
        assert isinstance(message, RequestDispatch)
        message.responder.respond_with_error(MethodNotFound(message.method))
    elif kind is ResponseDispatch:
        assert isinstance(message, ResponseDispatch)
        router = message.router
        if message.error is not None:
            router.respond_with_error(message.error)
        else:
            router.respond(message.result)
    else:
        _log.debug("No handler for notification %r", message.method)
