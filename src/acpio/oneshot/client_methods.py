"""Serving the agent's requests to a client by method: :class:`ClientMethods`, and :func:`decided`.

``acpio prompt`` (:class:`~acpio.oneshot.answers.RequestAnswers`) and
:class:`~acpio.client.AgentClient` (:class:`~acpio.driver.requests.SessionRequests`) answer the
agent the same way: each method has a handler that returns the result; a request that takes long
(waiting for a command's exit) is served in a task so that it holds up nothing else; a
:class:`~acpio.errors.RequestError` a handler raises is the answer, any other exception is logged
and answered ``-32603``. The ``terminal/*`` handlers run commands through
:class:`~acpio.oneshot.terminals.Terminals`. A permission question of a turn is decided by
:func:`decided`: ``cancelled`` once the turn is being cancelled, even while it is being decided.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeAlias, TypeVar

from acpio.client.permissions import Outcome
from acpio.errors import RequestError
from acpio.jsonrpc import Connection, RequestDispatch
from acpio.oneshot.terminals import Terminals
from acpio.schema import (
    CancelledPermissionOutcome,
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
)
from acpio.schema.base import AcpModel

__all__ = ["ClientMethods", "Serve", "decided", "unless_cancelled"]

#: Answers one request: its result (a :class:`~acpio.errors.RequestError` raised is the answer).
Serve: TypeAlias = Callable[[RequestDispatch], Awaitable[AcpModel]]
_T = TypeVar("_T")


class ClientMethods:
    """The handlers of the agent's requests, by method, and the serving of each request with them.

    ``unknown(method)`` is the error answering a method without a handler; ``failure(method, exc)``
    the one answering a handler's unexpected exception (logged to ``log`` with its traceback);
    ``refused(dispatch, error)``, if given, is told of every error answered (after it was sent).
    """

    def __init__(
        self,
        *,
        unknown: Callable[[str], RequestError],
        failure: Callable[[str, Exception], RequestError],
        log: logging.Logger,
        refused: Callable[[RequestDispatch, RequestError], None] | None = None,
    ) -> None:
        self._unknown = unknown
        self._failure = failure
        self._log = log
        self._refused = refused
        #: Handlers run as their request comes, in order: the next request waits for the answer.
        self.inline: dict[str, Serve] = {}
        #: Handlers run in a task of the connection (they may take long: a command's exit).
        self.spawned: dict[str, Serve] = {}

    def serve_terminals(
        self,
        terminals: Terminals,
        *,
        created: Callable[[CreateTerminalRequest, CreateTerminalResponse], None] | None = None,
    ) -> None:
        """Answer ``terminal/*`` with ``terminals``; ``created`` is told of each terminal started."""

        async def create(dispatch: RequestDispatch) -> AcpModel:
            request: CreateTerminalRequest = dispatch.parse(CreateTerminalRequest)
            response = await terminals.create(request)
            if created is not None:
                created(request, response)
            return response

        async def output(dispatch: RequestDispatch) -> AcpModel:
            return terminals.output(dispatch.parse(TerminalOutputRequest))

        async def wait_for_exit(dispatch: RequestDispatch) -> AcpModel:
            return await terminals.wait_for_exit(dispatch.parse(WaitForTerminalExitRequest))

        async def kill(dispatch: RequestDispatch) -> AcpModel:
            return await terminals.kill(dispatch.parse(KillTerminalRequest))

        async def release(dispatch: RequestDispatch) -> AcpModel:
            return await terminals.release(dispatch.parse(ReleaseTerminalRequest))

        self.inline[CreateTerminalRequest.METHOD] = create
        self.inline[TerminalOutputRequest.METHOD] = output
        self.spawned[WaitForTerminalExitRequest.METHOD] = wait_for_exit
        self.spawned[KillTerminalRequest.METHOD] = kill
        self.spawned[ReleaseTerminalRequest.METHOD] = release

    async def answer(self, dispatch: RequestDispatch, connection: Connection) -> None:
        """Answer one request: inline, or in a task of ``connection``; ``unknown`` without a handler."""
        serve = self.inline.get(dispatch.method)
        if serve is not None:
            await self.serve(dispatch, serve)
            return
        serve = self.spawned.get(dispatch.method)
        if serve is not None:
            connection.spawn(self.serve, dispatch, serve)
            return
        self._refuse(dispatch, self._unknown(dispatch.method))

    async def serve(self, dispatch: RequestDispatch, serve: Serve) -> None:
        """Answer ``dispatch`` with what ``serve`` returns, or with the error it raised."""
        try:
            result = await serve(dispatch)
        except RequestError as exc:
            self._refuse(dispatch, exc)
        except Exception as exc:
            self._log.exception("Answering %s failed", dispatch.method)
            self._refuse(dispatch, self._failure(dispatch.method, exc))
        else:
            dispatch.responder.respond(result)

    def _refuse(self, dispatch: RequestDispatch, error: RequestError) -> None:
        dispatch.responder.respond_with_error(error)
        if self._refused is not None:
            self._refused(dispatch, error)


async def decided(cancelled: asyncio.Event, deciding: Coroutine[Any, Any, Outcome]) -> Outcome:
    """The outcome ``deciding`` gives; ``cancelled`` once ``cancelled`` is set, before or while it decides."""
    if cancelled.is_set():
        deciding.close()
        return CancelledPermissionOutcome()
    outcome = await unless_cancelled(cancelled, deciding)
    return CancelledPermissionOutcome() if outcome is None else outcome


async def unless_cancelled(cancelled: asyncio.Event, work: Coroutine[Any, Any, _T]) -> _T | None:
    """What ``work`` returns, or ``None`` once ``cancelled`` is set (``work`` is cancelled then).

    A turn's answer to the agent (a policy deciding, a person asked) must not outlive the turn's
    cancellation: the connection has already answered the request ``cancelled``.
    """
    doing = asyncio.ensure_future(work)
    waiting = asyncio.ensure_future(cancelled.wait())
    try:
        await asyncio.wait((doing, waiting), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (doing, waiting):
            task.cancel()
        await asyncio.gather(doing, waiting, return_exceptions=True)
    if cancelled.is_set() or doing.cancelled():
        return None
    return doing.result()
