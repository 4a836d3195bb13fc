"""How an :class:`~acpio.app.AgentApp` speaks ACP: the handlers its builder serves, and its open sessions.

:class:`AgentApp` holds what the user declared (an :class:`AppDefinition`: the prompt function, the
hooks, the menu); :class:`AppProtocol` answers the protocol with it: ``initialize``, the session
setups (by itself, or through a store's :class:`~acpio.store.StoredSessions`), each
``session/prompt`` as a :class:`~acpio.app.Turn` in a task of its own, ``session/cancel``, and the
session's mode and option changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args
from weakref import WeakKeyDictionary

from acpio import schema as acp
from acpio.acp_connection import AcpConnection
from acpio.app.app_session import (
    AppSession,
    PromptFunction,
    StopReasonName,
)
from acpio.app.definition import AppDefinition
from acpio.app.handshake import AppHandler, Handshake
from acpio.app.history import read_history
from acpio.app.raw_turn import PlainTurns, RawPrompt, user_chunks
from acpio.app.turn import Turn
from acpio.app.v2_shapes import V2Shapes
from acpio.capabilities import ClientFeatures
from acpio.errors import (
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    RequestError,
    ResourceNotFound,
)
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.otel.activity import start_prompt_turn

if TYPE_CHECKING:
    from acpio.app.observers import SessionObservers
    from acpio.schema import (
        CancelNotification,
        PromptRequest,
        PromptResponse,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        StopReason,
    )
    from acpio.store import SessionRecord, SessionSetup, SessionStore, StoredSessions

__all__ = ["AppDefinition", "AppProtocol", "turn_answer"]

_STOP_REASONS = frozenset(get_args(StopReasonName))

_log = logging.getLogger("acpio.app")


def _stored_sessions() -> type[StoredSessions]:
    # an app without a store serves its sessions itself: the store's handlers load with a store
    from acpio.store.serve import StoredSessions

    return StoredSessions


def _observers() -> type[SessionObservers]:
    # attaching is unstable: its module (and the client-side session code it needs) loads only for
    # an app that serves it
    from acpio.app.observers import SessionObservers

    return SessionObservers


class AppProtocol:
    """The handlers that serve an app's :class:`AppDefinition`, and the sessions open on it."""

    def __init__(self, definition: AppDefinition, store: SessionStore | None) -> None:
        self._app = definition
        #: What the app declared.
        self.definition = definition
        self._menu = definition.menu
        #: The open sessions, by id (ids are unique across connections).
        self.sessions: dict[str, AppSession] = {}
        #: The sessions whose turn's task has begun (a task cancelled before that runs none of its code).
        self.begun: set[str] = set()
        #: The connections that speak v2, with what their client advertised (in v1's terms).
        self.v2_clients: WeakKeyDictionary[Connection, ClientFeatures] = WeakKeyDictionary()
        #: The session methods served from the store, when there is one.
        self.stored = (
            _stored_sessions()(
                store,
                on_open=self._opened,
                on_close=self._closed,
                unstable=definition.unstable,
                successor=self._successor if definition.unstable else None,
            )
            if store is not None
            else None
        )
        #: The clients attached to sessions of other connections (unstable: ``_acpio/session/attach``).
        self.observers = (
            _observers()(
                self.sessions.get, self.client_features, store.route_of if store is not None else None
            )
            if definition.unstable
            else None
        )

    def register(self, app: Builder[AcpConnection]) -> None:
        """Serve the app's protocol on ``app``, an ``Agent`` builder."""
        handshake = Handshake(self)
        app.with_handler(AppHandler("initialize", handshake.initialize, handshake.raw_initialize))
        if self.stored is not None:  # each handler, and its models, made on its method's first message
            for method, handler in self.stored.handlers().items():
                raw = handshake.raw_stored_new if method == "session/new" else None
                app.with_handler(AppHandler(method, handler, raw))
            self.stored.register_upkeep(app)
        else:
            app.with_handler(AppHandler("session/new", handshake.new_session, handshake.raw_new_session))
            app.on_close(self._connection_closed)
        plain = None  # attaching needs a prompt's models
        if self.observers is None:
            plain = PlainTurns(self._start_turn, self._cancel_session)
        app.with_handler(AppHandler("session/prompt", self._prompted, plain.prompt if plain else None))
        cancel = plain.cancel if plain else None
        app.with_handler(AppHandler("session/cancel", self._cancel, notification=True, raw_notice=cancel))
        if self._menu.has_modes:
            app.with_handler(AppHandler("session/set_mode", handshake.set_mode, handshake.raw_set_mode))
        if self._menu.options:
            app.with_handler(AppHandler("session/set_config_option", self._set_option))
        if self.observers is not None:
            self.observers.register(app)
        for handler in self._app.handlers:
            app.on_request(handler)

    def client_features(self, cx: Connection) -> ClientFeatures:
        """What the client advertised at ``initialize``, as its connection recorded it (nothing before)."""
        v2 = self.v2_clients.get(cx)
        if v2 is not None:
            return v2
        recorded = cx.client_features if isinstance(cx, AcpConnection) else None
        return recorded or ClientFeatures({})

    def record(self, session_id: str, params: bytes) -> None:
        """Keep a v2 turn's neutral ``session/update`` params in the session's stored history.

        The history is v1's shape whatever the version: a v1 ``session/load`` replays it as it is,
        a v2 ``session/resume`` converts it.
        """
        if self.stored is not None and self.stored.is_open(session_id):
            self.stored.store.append_soon(session_id, params)

    def send_options(self, session: AppSession) -> None:
        """Send ``config_option_update`` with every option to ``session``, in its client's version."""
        cx = session.cx
        v2 = cx in self.v2_clients
        update = acp.ConfigOptionUpdate(config_options=self._menu.options_state(session.settings, v2))
        if v2:
            shaped = V2Shapes().convert(update.to_wire())
            cx.send_notification("session/update", {"sessionId": session.id, "update": shaped})
        else:
            cx.send_notification(acp.SessionNotification(session_id=session.id, update=update))

    def offer_commands(self, cx: Connection, session_id: str) -> None:
        """Send the app's commands to a session (``available_commands_update``, in the client's version)."""
        if self._menu.commands and not cx.closed:
            commands = self._menu.commands_wire()  # the model's JSON, without the model
            update = V2Shapes().convert(commands) if cx in self.v2_clients else commands
            with contextlib.suppress(ConnectionClosed):  # the client left right after the answer
                cx.send_notification("session/update", {"sessionId": session_id, "update": update})

    async def _opened(self, record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        """A stored session was set up on ``cx`` (new, load or resume): its settings as stored."""
        client = self.client_features(cx)
        settings = self._menu.restored(client, record.mode, record.config)
        session = AppSession(
            cx,
            record.session_id,
            Path(record.cwd),
            settings,
            client,
            self._menu,
            record.mcp_servers,
            tuple(Path(d) for d in record.additional_directories),
            method,
            record.mode,
            dict(record.config),
        )
        assert self.stored is not None
        replayed = None  # the command list a session/load replay ends with
        if method != "session/new":
            stored = await read_history(self.stored.store.history(record.session_id))
            session.history, replayed = stored.exchanges, stored.commands
        try:
            for hook in self._app.on_open:
                await hook(session)
        except BaseException:
            if method == "session/new":  # refused: nothing of it stays
                await self.stored.store.delete(record.session_id)
            raise
        self.sessions[record.session_id] = session
        await self._store_settings(session)  # what the hooks chose is what a later load restores
        if method == "session/load":
            # the spec: a load replays, then answers, and nothing of the session follows unasked; the
            # list goes out (and into the history) only when the replay did not end with it
            if replayed != self._menu.commands_update():
                self.offer_commands(cx, record.session_id)
        else:  # the answer is sent when this returns; the commands go out right after it
            asyncio.get_running_loop().call_soon(self.offer_commands, cx, record.session_id)
        from acpio.store.open_sessions import SessionSetup

        wire = self._menu.setup_wire(settings)
        return SessionSetup(wire=wire) if wire is not None else SessionSetup(**self._menu.setup(settings))

    async def _closed(self, session_id: str) -> None:
        """A stored session closes (closed, deleted, loaded elsewhere, its connection ended)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        if session.turn is not None:
            task = session.turn
            self.cancel_turn(session)
            await asyncio.gather(task, return_exceptions=True)
        if self.observers is not None:
            self.observers.closed(session_id)
        for hook in self._app.on_close:
            await hook(session)

    async def _connection_closed(self, cx: Connection) -> None:
        """The end of a connection closes its sessions (without a store: with one, the store does).

        A session with a controller attached is handed over to it instead (:meth:`_successor`).
        """
        for session in [s for s in self.sessions.values() if s.cx is cx]:
            if self._successor(session.id, cx) is None:
                await self._closed(session.id)

    def _successor(self, session_id: str, cx: Connection) -> Connection | None:
        """The session's own client (``cx``) left: the controller attached first owns it now, if any.

        The running turn ends ``cancelled``: it was asking the client that left (its files and
        terminals on v1), and the new owner did not start it.
        """
        session = self.sessions.get(session_id)
        heir = self.observers.heir(session_id) if self.observers is not None and session is not None else None
        if session is not None and heir is not None:
            session.cx, session.client = heir, self.client_features(heir)
            self.cancel_turn(session)
        return heir

    def open_session(self, cx: Connection, session_id: str, *, control: bool = False) -> AppSession:
        """The session ``session_id`` open on ``cx``; ``-32002`` when there is none.

        With ``control`` (a prompt, a cancel), a client attached as a controller gets it too.
        """
        session = self.sessions.get(session_id)
        if self.observers is not None and self.observers.attached(cx, session_id, control=control):
            assert session is not None  # attached clients are forgotten when the session closes
            return session
        if session is None or session.cx is not cx:
            raise ResourceNotFound({"sessionId": session_id}, message="Unknown session")
        return session

    async def _set_option(
        self, request: SetSessionConfigOptionRequest, cx: Connection
    ) -> SetSessionConfigOptionResponse:
        session = self.open_session(cx, request.session_id)
        await self.change_setting(session, request.config_id, request.value, asked=True)
        return acp.SetSessionConfigOptionResponse(config_options=self._menu.options_state(session.settings))

    async def change_setting(
        self, session: AppSession, config_id: str | None, value: Any, *, asked: bool
    ) -> None:
        """Set the session's mode (``config_id`` ``None``) or a config option, and keep it in the store.

        The one way a session's settings change: the client's ``session/set_mode`` and
        ``session/set_config_option`` (``asked``: the :meth:`~acpio.app.AgentApp.on_change` hooks
        run), and a turn's :meth:`~acpio.app.Turn.set_mode` and :meth:`~acpio.app.Turn.set_option`.
        """
        self._menu.change(session.settings, config_id, value)
        if asked:
            for hook in self._app.on_change:
                await hook(session, config_id)
        if self.stored is not None:
            await self._store_settings(session)

    async def _store_settings(self, session: AppSession) -> None:
        """Keep the session's mode and option values in the store (those that changed)."""
        assert self.stored is not None
        record = await self.stored.store.require(session.id)
        if record.mode != session.settings.mode:
            await self.stored.store.set_mode(session.id, session.settings.mode)
        for option_id, value in session.settings.options.items():
            if record.config.get(option_id) != value:
                await self.stored.store.set_config(session.id, option_id, value)

    async def _prompted(
        self, request: PromptRequest, responder: Responder[PromptResponse], cx: Connection
    ) -> None:
        self._start_turn(request.session_id, request.prompt, responder, cx)

    def _start_turn(
        self,
        session_id: str,
        prompt: Sequence[acp.ContentBlock],
        responder: Responder[Any],
        cx: Connection,
    ) -> None:
        """Start the turn of a prompt: typed (models), or plain (a :class:`RawPrompt`, read when needed)."""
        session = self.open_session(cx, session_id, control=True)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": session_id},
                message="A turn is already running in this session: await its answer, or send session/cancel",
            )
        assert self._app.prompt is not None  # AgentApp.builder() refuses an app without one
        owner = session.cx  # the turn uses the owner's client (its files, terminals), whoever prompted
        observers = self.observers
        turn = Turn(
            owner,
            session_id,
            session.cwd,
            prompt,
            self.client_features(owner),
            session.settings,
            self._menu,
            session.history,
            session.mcp_servers,
            change=functools.partial(self.change_setting, session, asked=False),
            askers=observers.askers(session.id, owner) if observers is not None else None,
        )
        if self.stored is not None:  # what the user said, for session/load to replay
            for chunk in user_chunks(session_id, prompt):
                self.stored.store.append_soon(session_id, chunk)
        session.current = turn
        if self.observers is not None:
            self.observers.prompted(session_id, prompt, cx)
        plain = isinstance(prompt, RawPrompt)  # its answer is written without models when it can be
        session.turn = owner.spawn(self._run_turn(self._app.prompt, turn, session, responder, plain))

    async def _run_turn(
        self, fn: PromptFunction, turn: Turn, session: AppSession, responder: Responder[Any], plain: bool
    ) -> None:
        answer: PromptResponse | dict[str, Any] | RequestError | None = None
        span = start_prompt_turn(session.id, self._app.name)
        try:
            self.begun.add(session.id)
            if turn.cancel_requested:  # session/cancel came before the task began: end it as cancelled
                raise asyncio.CancelledError
            stop = await fn(turn)
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise  # the connection is ending, not the turn
            answer = turn_answer(None, turn, self._app.name, plain=plain)
        except RequestError as error:
            answer = error
        except Exception as error:
            _log.exception("The prompt function of %r failed", self._app.name)
            answer = InternalError.for_exception(error, details=self._app.error_details)
        else:
            answer = turn_answer(stop, turn, self._app.name, plain=plain)
        finally:
            session.history.append(turn.exchange())
            session.turn = session.current = None
            self.begun.discard(session.id)
            if span is not None:  # ended before the answer, which ends the session/prompt span
                span.end(answer if isinstance(answer, RequestError) else None)
            if answer is not None:
                responder.respond_with_result(answer)
            if self.observers is not None:
                assert not isinstance(answer, dict)  # a turn with observers is typed: never plain
                self.observers.turn_answered(session.id, answer)

    async def _cancel(self, notification: CancelNotification, cx: Connection) -> None:
        await self._cancel_session(notification.session_id, cx)

    async def _cancel_session(self, session_id: str, cx: Connection) -> None:
        with contextlib.suppress(RequestError):  # a notification gets no error: not its session, nothing
            session = self.open_session(cx, session_id, control=True)
            if session.turn is not None and session.current is not None:
                self.cancel_turn(session)

    def cancel_turn(self, session: AppSession) -> None:
        """End the session's turn as cancelled: a task that has not begun sees the flag when it does."""
        if session.current is not None:
            session.current.cancel_requested = True
        if session.turn is not None and session.id in self.begun:
            session.turn.cancel()


def stop_answer(stop: StopReason | str | None, turn: Turn, app_name: str) -> PromptResponse | RequestError:
    """What a prompt function returned, as the turn's answer (an error for a value that is no reason)."""
    if turn.cancel_requested:
        return acp.PromptResponse(stop_reason=acp.StopReason.CANCELLED)  # the spec: a cancelled turn says so
    try:
        return acp.PromptResponse(stop_reason=acp.StopReason(stop or acp.StopReason.END_TURN))
    except ValueError:
        known = ", ".join(repr(r.value) for r in acp.StopReason)
        _log.error(
            "The prompt function of %r returned %r, not a stop reason (%s)",
            app_name,
            stop,
            known,
        )
        return InternalError({"details": f"the prompt function returned {stop!r}, not one of {known}"})


def turn_answer(
    stop: StopReason | str | None, turn: Turn, app_name: str, *, plain: bool
) -> PromptResponse | dict[str, Any] | RequestError:
    """The answer to the turn's ``session/prompt``: :func:`stop_answer`'s, or its JSON for a plain turn.

    A plain turn (``acpio.app.raw_turn``) that was cancelled, or ended with a known stop reason (or
    ``None``: ``end_turn``), is answered without models, with the JSON they write.
    """
    if plain:
        if turn.cancel_requested:
            return {"stopReason": "cancelled"}
        if stop is None or (type(stop) is str and stop in _STOP_REASONS):
            return {"stopReason": stop or "end_turn"}
    return stop_answer(stop, turn, app_name)
