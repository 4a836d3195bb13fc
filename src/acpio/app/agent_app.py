"""The high-level agent: :class:`AgentApp`, a decorator and a typed function per prompt.

The app answers what every agent must (``initialize``, ``session/new``, ``session/cancel``) and
runs each ``session/prompt`` as a :class:`~acpio.app.Turn` in a task of its own. It is built on an
``Agent`` builder, not beside it: :meth:`AgentApp.builder` gives that builder, to serve the app in
any way a builder is served or to add handlers of one's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from acpio import running
from acpio.app.history import Exchange, read_history
from acpio.app.menu import Menu, OptionValue, SessionSettings
from acpio.app.turn import Turn
from acpio.capabilities import ClientFeatures, negotiate_version
from acpio.errors import (
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    RequestError,
    ResourceNotFound,
)
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.jsonrpc.messages import encode_value
from acpio.roles import Agent
from acpio.schema import (
    AgentCapabilities,
    CancelNotification,
    ConfigOptionUpdate,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    McpCapabilities,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    SessionMode,
    SessionNotification,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
    StopReason,
    UserMessageChunk,
)
from acpio.session import SessionConnection
from acpio.store import SessionRecord, SessionSetup, SessionStore, StoredSessions, open_store
from acpio.transports.base import Component, Transport
from acpio.transports.listener import Listener
from acpio.transports.stdio import Stdio

__all__ = [
    "AgentApp",
    "AppSession",
    "ChangeFunction",
    "CloseFunction",
    "InitializeFunction",
    "OpenFunction",
    "PromptFunction",
    "StopReasonName",
]

_log = logging.getLogger("acpio.app")

#: The stop reasons of a turn (``StopReason``), as strings.
StopReasonName: TypeAlias = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
#: A prompt function: takes the :class:`~acpio.app.Turn`, returns why the turn stopped (``None``:
#: ``end_turn``).
PromptFunction: TypeAlias = Callable[[Turn], Awaitable[StopReason | StopReasonName | None]]


@dataclass
class AppSession:
    """A session open on one connection, as :meth:`AgentApp.on_open` and :attr:`AgentApp.sessions` give it."""

    #: The connection to the client it is open on.
    cx: Connection
    #: The session's id.
    id: str
    #: Its working directory.
    cwd: Path
    #: Its current mode and config option values (and what it is offered: see :meth:`offer_choices`).
    settings: SessionSettings
    #: What the client advertised at ``initialize``.
    client: ClientFeatures
    menu: Menu
    #: The MCP servers the client declared for the session, as JSON objects.
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    #: The other directories the client gave the session (``additionalDirectories``).
    additional_directories: tuple[Path, ...] = ()
    #: How it was opened: ``session/new``, ``session/load``, ``session/resume`` or ``session/fork``.
    method: str = "session/new"
    #: The mode and option values the store kept for it (a loaded or resumed session), even those
    #: the app's own choices do not include: :meth:`offer_modes` and :meth:`offer_choices` restore
    #: them when the session is first offered them.
    restored_mode: str | None = None
    restored_options: dict[str, Any] = field(default_factory=dict[str, Any])
    turn: asyncio.Task[None] | None = None
    current: Turn | None = None
    history: list[Exchange] = field(default_factory=list)
    #: Whether the turn's task has begun to run (a task cancelled before that never runs its code).
    _turn_started: bool = field(default=False, init=False, repr=False)

    def offer_modes(self, modes: list[SessionMode], current: str | None = None) -> None:
        """Offer this session ``modes`` instead of the app's; its mode becomes ``current``.

        ``current`` defaults to the session's mode when it is one of ``modes``, else the first.
        """
        if not modes:
            raise ValueError("offer_modes needs at least one mode")
        ids = [m.id for m in modes]
        chosen = current
        if chosen is None:
            chosen = self.restored_mode if self.restored_mode in ids else self.settings.mode
        self.restored_mode = None
        self.settings.modes = list(modes)
        self.settings.mode = chosen if chosen in ids else ids[0]

    def offer_choices(self, option_id: str, choices: Mapping[str, str], current: str | None = None) -> None:
        """Offer this session other ``choices`` (value -> label) for the select option ``option_id``.

        The value is the stored one when the session was loaded with a value among ``choices`` (the
        first offer only), else it stays when it is still a choice, else it becomes ``current``
        (default: the first choice). The client hears of it with the setup answer, or
        :meth:`AgentApp.refresh_options`.
        """
        if self.menu.choices_of(self.settings, option_id) is None:
            raise ValueError(f"{option_id!r} is not a select option of the app")
        if not choices:
            raise ValueError(f"offer_choices({option_id!r}) needs at least one choice")
        self.settings.choices[option_id] = dict(choices)
        value = self.restored_options.pop(option_id, None)
        if isinstance(value, str) and value in choices:
            self.settings.options[option_id] = value
        elif self.settings.options.get(option_id) not in choices:
            self.settings.options[option_id] = (
                current if current is not None and current in choices else next(iter(choices))
            )

    def value(self, option_id: str) -> OptionValue:
        """The current value of the config option ``option_id``."""
        return self.settings.options[option_id]


#: ``await fn(request, answer)`` before ``initialize`` is answered: it may change ``answer`` (auth
#: methods, capabilities) or return another one.
InitializeFunction: TypeAlias = Callable[
    [InitializeRequest, InitializeResponse], Awaitable[InitializeResponse | None]
]
#: ``await fn(session)`` when a session is opened, before the answer: it may offer the session its
#: own modes and choices, or raise a :class:`~acpio.RequestError` to refuse it.
OpenFunction: TypeAlias = Callable[[AppSession], Awaitable[None]]
#: ``await fn(session)`` when a session closes (closed, deleted, loaded elsewhere, connection ended).
CloseFunction: TypeAlias = Callable[[AppSession], Awaitable[None]]
#: ``await fn(session, config_id)`` after the client changed a config option (``config_id``) or the
#: mode (``None``), before the answer: it may change other settings to match.
ChangeFunction: TypeAlias = Callable[[AppSession, str | None], Awaitable[None]]


class AgentApp:
    """An ACP agent made of a prompt function.

    For example::

        app = AgentApp("wordcount", version="1.0")

        @app.prompt
        async def prompt(turn: Turn) -> StopReasonName:
            await turn.say(f"Your prompt has {len(turn.text.split())} words.")
            return "end_turn"

        app.run()

    ``initialize`` is answered with the app's name and version and what it supports; each
    ``session/new`` gets a unique id; each ``session/prompt`` runs the prompt function in a task
    of its own, and ``session/cancel`` cancels it (the turn ends ``cancelled``). What a prompt
    function raises answers its ``session/prompt`` and the agent goes on: a
    :class:`~acpio.RequestError` (one it raises to refuse the prompt, or a client's error answer it
    lets out) with that error's own code, message and data; any other exception with ``-32603``,
    logged (the message in ``data`` unless ``error_details=False``). ``prompt_capabilities`` says
    which content the prompt may carry besides text (images, audio, embedded resources).

    With a ``store`` (a :class:`~acpio.store.SessionStore`, or its URL: ``"sqlite:////absolute/path"``,
    ``"postgresql://..."``, ``"memory:"``) sessions outlive the process: the app also serves
    ``session/load`` (the history replayed, the user's prompts included), ``session/resume``,
    ``session/list``, ``session/close`` and ``session/delete`` from it, advertises them, keeps each
    session's mode and option values (those a turn sets too), and a turn's
    :attr:`~acpio.app.Turn.history` includes the turns of earlier processes.

    ``unstable=True`` turns on the methods the schema marks unstable: handlers of them may be
    added (:meth:`on_request`), and a store also serves ``session/fork``, ``archive``,
    ``unarchive``, ``status`` and ``set_title``.
    """

    def __init__(
        self,
        name: str,
        *,
        version: str = "0.1.0",
        title: str | None = None,
        prompt_capabilities: PromptCapabilities | None = None,
        error_details: bool = True,
        store: SessionStore | str | None = None,
        mcp: bool = False,
        unstable: bool = False,
    ) -> None:
        #: The ``agentInfo`` the app answers ``initialize`` with.
        self.info = (
            Implementation(name=name, version=version)
            if title is None
            else Implementation(name=name, version=version, title=title)
        )
        self._prompt_capabilities = prompt_capabilities or PromptCapabilities()
        self._error_details = error_details
        self._mcp = mcp
        self._unstable = unstable
        self._prompt: PromptFunction | None = None
        self._on_initialize: list[InitializeFunction] = []
        self._on_open: list[OpenFunction] = []
        self._on_close: list[CloseFunction] = []
        self._on_change: list[ChangeFunction] = []
        self._handlers: list[Callable[..., Any]] = []
        #: What each client advertised at ``initialize``.
        #: The open sessions, by id (ids are unique across connections).
        self._sessions: dict[str, AppSession] = {}
        self._menu = Menu()
        if isinstance(store, str):
            store = open_store(store)
        #: The session methods served from the store, when there is one.
        self._stored = (
            StoredSessions(store, on_open=self._opened, on_close=self._closed, unstable=unstable)
            if store is not None
            else None
        )

    def __repr__(self) -> str:
        return f"<AgentApp {self.info.name!r}>"

    def prompt(self, fn: PromptFunction) -> PromptFunction:
        """Register the prompt function (a decorator on an ``async def`` taking a ``Turn``).

        It returns why the turn stopped: a ``StopReasonName`` such as ``"end_turn"``, a
        :class:`~acpio.schema.StopReason`, or ``None`` for ``end_turn``. A
        :class:`~acpio.RequestError` it raises (``InvalidParams`` for a prompt it cannot take) or
        lets out (a client's error answer) answers the prompt as it is; any other exception answers
        ``-32603``.
        """
        if not asyncio.iscoroutinefunction(fn):
            raise TypeError(
                f"@app.prompt takes an async function: 'async def {getattr(fn, '__name__', 'prompt')}"
                "(turn: Turn) -> StopReasonName'"
            )
        if self._prompt is not None:
            raise ValueError(f"{self!r} already has a prompt function: register one only")
        self._prompt = fn
        return fn

    def on_initialize(self, fn: InitializeFunction) -> InitializeFunction:
        """Register a hook that completes the ``initialize`` answer (a decorator: :data:`InitializeFunction`).

        The answer it gets already has the negotiated version, ``agentInfo`` and the capabilities
        the app serves; the hook adds what only the agent knows (``authMethods``, prompt
        capabilities computed at run time, more MCP transports...).
        """
        self._on_initialize.append(fn)
        return fn

    def on_open(self, fn: OpenFunction) -> OpenFunction:
        """Register a hook run when a session is opened, before the setup answer (a decorator).

        It gets the :class:`AppSession`: it may give the session its own modes and choices
        (:meth:`AppSession.offer_modes`, :meth:`AppSession.offer_choices`), start per-session work,
        or raise a :class:`~acpio.RequestError` to refuse the session (a refused ``session/new``
        leaves nothing in the store).
        """
        self._on_open.append(fn)
        return fn

    def on_close(self, fn: CloseFunction) -> CloseFunction:
        """Register a hook run when a session closes, after its turn was cancelled (a decorator)."""
        self._on_close.append(fn)
        return fn

    def on_change(self, fn: ChangeFunction) -> ChangeFunction:
        """Register a hook run when the client sets a config option or the mode (a decorator).

        It runs after the new value is applied and before the answer, which lists every option as
        the hook left them: a mode that brings its own model sets the model option here. A turn's
        :meth:`~acpio.app.Turn.set_mode` and :meth:`~acpio.app.Turn.set_option` run no hook: the
        turn sets what goes with its change itself. Either way the values are saved after it.
        """
        self._on_change.append(fn)
        return fn

    def on_request(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Serve one more request type with a typed handler, as ``Builder.on_request`` takes it (a decorator).

        The message type comes from the first parameter's annotation: ``async def authenticate(req:
        AuthenticateRequest, cx: Connection) -> AuthenticateResponse``.
        """
        self._handlers.append(fn)
        return fn

    @property
    def sessions(self) -> list[AppSession]:
        """The sessions open now, on every connection."""
        return list(self._sessions.values())

    async def refresh_options(self, session: AppSession | None = None) -> None:
        """Send ``config_option_update`` with every option to one open session, or to each.

        After changing what sessions are offered (:meth:`AppSession.offer_choices`) outside a turn.
        """
        for target in [session] if session is not None else self.sessions:
            if target.cx.closed:
                continue
            options = self._menu.options_state(target.settings)
            update = ConfigOptionUpdate(config_options=options)
            target.cx.send_notification(SessionNotification(session_id=target.id, update=update))
            await target.cx.drain()

    # --- what the user can choose -----------------------------------------------------------------

    def command(self, name: str, description: str, *, hint: str | None = None) -> None:
        """Offer the slash command ``/name`` (sent as ``available_commands_update`` to each session).

        The list goes out right after the answer to ``session/new`` (and ``session/resume``,
        ``session/fork``); for ``session/load`` before the answer, after the replay, unless the
        replay already ended with it. ``hint`` describes the text expected after the name. A prompt
        that starts with the command gives the turn :attr:`~acpio.app.Turn.command`.
        """
        self._menu.add_command(name, description, hint)

    def mode(self, mode_id: str, name: str, *, description: str | None = None) -> None:
        """Offer the session mode ``mode_id`` (the first one offered is each session's starting mode)."""
        self._menu.add_mode(mode_id, name, description)

    def select_option(
        self,
        option_id: str,
        name: str,
        choices: Mapping[str, str],
        *,
        default: str,
        description: str | None = None,
        category: str | None = None,
    ) -> None:
        """Offer a config option whose value is one of ``choices`` (value -> label), ``default`` first.

        ``category`` is a hint for the client's UI (``"model"``, ``"mode"``, ``"thought_level"``...).
        """
        self._menu.add_select(option_id, name, choices, default, description, category)

    def boolean_option(
        self, option_id: str, name: str, *, default: bool, description: str | None = None
    ) -> None:
        """Offer an on/off config option (only to clients that advertise boolean config options)."""
        self._menu.add_boolean(option_id, name, default, description)

    # --- serving ----------------------------------------------------------------------------------

    def builder(self) -> Builder[Connection]:
        """A new ``Agent`` builder that serves this app (add handlers to it, or serve it yourself).

        Raises ``RuntimeError`` when no prompt function is registered: the app could answer no prompt.
        """
        if self._prompt is None:
            raise RuntimeError(
                f"{self!r} has no prompt function: decorate one with @app.prompt before serving the app"
            )
        # mcp/message (MCP over ACP) is an unstable method
        app = Agent.builder(name=self.info.name, unstable=self._mcp or self._unstable)
        app.on_request(InitializeRequest, self._initialize)
        if self._stored is not None:
            self._stored.register(app)
        else:
            app.on_request(NewSessionRequest, self._new_session)
            app.on_close(self._connection_closed)
        app.on_request(PromptRequest, self._start_turn)
        app.on_notification(CancelNotification, self._cancel)
        if self._menu.modes:
            app.on_request(SetSessionModeRequest, self._set_mode)
        if self._menu.options:
            app.on_request(SetSessionConfigOptionRequest, self._set_option)
        for handler in self._handlers:
            app.on_request(handler)
        return app

    async def serve(self, target: Transport | Listener | Component) -> None:
        """Serve one client on ``target`` until it closes the connection; or every client of a listener.

        ``target`` is a transport or component (one client), or a
        :class:`~acpio.transports.listener.Listener` (each client it accepts, until it closes).
        """
        await self.builder().serve(target)

    async def open(self) -> Transport:
        """Serve the app in-process; the transport talks to it (a client builder can connect to the app)."""
        return await self.builder().open()

    def run(self) -> None:
        """Serve one client on this process's stdin and stdout (how editors start an agent).

        The event loop is :func:`acpio.run`'s: uvloop when installed (``acpio[fast]``).
        """
        running.run(self.serve(Stdio()))

    # --- the protocol -----------------------------------------------------------------------------

    @staticmethod
    def _client_features(cx: Connection) -> ClientFeatures:
        """What the client advertised at ``initialize``, as its connection recorded it (nothing before)."""
        recorded = cx.client_features if isinstance(cx, SessionConnection) else None
        return recorded or ClientFeatures({})

    async def _initialize(self, request: InitializeRequest, cx: Connection) -> InitializeResponse:
        capabilities = AgentCapabilities(prompt_capabilities=self._prompt_capabilities)
        if self._mcp:
            capabilities.mcp_capabilities = McpCapabilities(acp=True, http=True)
        if self._stored is not None:
            capabilities = self._stored.agent_capabilities(capabilities)
        answer = InitializeResponse(
            protocol_version=negotiate_version(request.protocol_version),
            agent_capabilities=capabilities,
            agent_info=self.info,
        )
        for hook in self._on_initialize:
            answer = await hook(request, answer) or answer
        return answer

    async def _new_session(
        self, request: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection
    ) -> None:
        cwd = Path(request.cwd)
        if not cwd.is_absolute():
            raise InvalidParams({"cwd": request.cwd, "reason": "cwd must be an absolute path"})
        session_id = f"sess_{uuid.uuid4().hex}"
        client = self._client_features(cx)
        session = AppSession(
            cx,
            session_id,
            cwd,
            self._menu.settings(client),
            client,
            self._menu,
            tuple(server.to_wire() for server in request.mcp_servers or ()),
            tuple(Path(d) for d in request.additional_directories or ()),
        )
        for hook in self._on_open:
            await hook(session)
        self._sessions[session_id] = session
        setup = self._menu.setup(session.settings)
        responder.respond(NewSessionResponse(session_id=session_id, **setup))
        self._offer_commands(cx, session_id)  # after the answer: the client knows the session by then

    def _offer_commands(self, cx: Connection, session_id: str) -> None:
        if self._menu.commands and not cx.closed:
            update = SessionNotification(session_id=session_id, update=self._menu.commands_update())
            with contextlib.suppress(ConnectionClosed):  # the client left right after the answer
                cx.send_notification(update)

    async def _opened(self, record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        """A stored session was set up on ``cx`` (new, load or resume): its settings as stored."""
        client = self._client_features(cx)
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
        assert self._stored is not None
        replayed = None  # the command list a session/load replay ends with
        if method != "session/new":
            stored = await read_history(self._stored.store.history(record.session_id))
            session.history, replayed = stored.exchanges, stored.commands
        try:
            for hook in self._on_open:
                await hook(session)
        except BaseException:
            if method == "session/new":  # refused: nothing of it stays
                await self._stored.store.delete(record.session_id)
            raise
        self._sessions[record.session_id] = session
        await self._store_settings(session)  # what the hooks chose is what a later load restores
        if method == "session/load":
            # the spec: a load replays, then answers, and nothing of the session follows unasked; the
            # list goes out (and into the history) only when the replay did not end with it
            if replayed != self._menu.commands_update():
                self._offer_commands(cx, record.session_id)
        else:  # the answer is sent when this returns; the commands go out right after it
            asyncio.get_running_loop().call_soon(self._offer_commands, cx, record.session_id)
        return SessionSetup(**self._menu.setup(settings))

    async def _closed(self, session_id: str) -> None:
        """A stored session closes (closed, deleted, loaded elsewhere, its connection ended)."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        if session.turn is not None:
            task = session.turn
            self._cancel_turn(session)
            await asyncio.gather(task, return_exceptions=True)
        for hook in self._on_close:
            await hook(session)

    async def _connection_closed(self, cx: Connection) -> None:
        """The end of a connection closes its sessions (without a store: with one, the store does)."""
        for session in [s for s in self._sessions.values() if s.cx is cx]:
            await self._closed(session.id)

    def _session(self, cx: Connection, session_id: str) -> AppSession:
        session = self._sessions.get(session_id)
        if session is None or session.cx is not cx:
            raise ResourceNotFound({"sessionId": session_id}, message="Unknown session")
        return session

    async def _set_mode(self, request: SetSessionModeRequest, cx: Connection) -> SetSessionModeResponse:
        session = self._session(cx, request.session_id)
        await self._change(session, None, request.mode_id, asked=True)
        return SetSessionModeResponse()

    async def _set_option(
        self, request: SetSessionConfigOptionRequest, cx: Connection
    ) -> SetSessionConfigOptionResponse:
        session = self._session(cx, request.session_id)
        await self._change(session, request.config_id, request.value, asked=True)
        return SetSessionConfigOptionResponse(config_options=self._menu.options_state(session.settings))

    async def _change(self, session: AppSession, config_id: str | None, value: Any, *, asked: bool) -> None:
        """Set the session's mode (``config_id`` ``None``) or a config option, and keep it in the store.

        The one way a session's settings change: the client's ``session/set_mode`` and
        ``session/set_config_option`` (``asked``: the :meth:`on_change` hooks run), and a turn's
        :meth:`~acpio.app.Turn.set_mode` and :meth:`~acpio.app.Turn.set_option`.
        """
        self._menu.change(session.settings, config_id, value)
        if asked:
            for hook in self._on_change:
                await hook(session, config_id)
        if self._stored is not None:
            await self._store_settings(session)

    async def _store_settings(self, session: AppSession) -> None:
        """Keep the session's mode and option values in the store (those that changed)."""
        assert self._stored is not None
        record = await self._stored.store.require(session.id)
        if record.mode != session.settings.mode:
            await self._stored.store.set_mode(session.id, session.settings.mode)
        for option_id, value in session.settings.options.items():
            if record.config.get(option_id) != value:
                await self._stored.store.set_config(session.id, option_id, value)

    async def _start_turn(
        self, request: PromptRequest, responder: Responder[PromptResponse], cx: Connection
    ) -> None:
        session = self._session(cx, request.session_id)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": request.session_id},
                message="A turn is already running in this session: await its answer, or send session/cancel",
            )
        assert self._prompt is not None  # builder() refuses an app without one
        turn = Turn(
            cx,
            request.session_id,
            session.cwd,
            list(request.prompt),
            self._client_features(cx),
            session.settings,
            self._menu,
            session.history,
            session.mcp_servers,
            change=functools.partial(self._change, session, asked=False),
        )
        if self._stored is not None:  # what the user said, for session/load to replay
            for block in request.prompt:
                update = SessionNotification(
                    session_id=request.session_id, update=UserMessageChunk(content=block)
                )
                self._stored.store.append_soon(request.session_id, encode_value(update))
        session.current = turn
        session.turn = cx.spawn(self._run_turn(self._prompt, turn, session, responder))

    async def _run_turn(
        self, fn: PromptFunction, turn: Turn, session: AppSession, responder: Responder[PromptResponse]
    ) -> None:
        try:
            session._turn_started = True
            if turn.cancel_requested:  # session/cancel came before the task began: end it as cancelled
                raise asyncio.CancelledError
            stop = await fn(turn)
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise  # the connection is ending, not the turn
            responder.respond(PromptResponse(stop_reason=StopReason.CANCELLED))
        except RequestError as error:
            responder.respond_with_error(error)
        except Exception as error:
            _log.exception("The prompt function of %r failed", self.info.name)
            responder.respond_with_error(InternalError.for_exception(error, details=self._error_details))
        else:
            responder.respond_with_result(self._stop_reason(stop, turn))
        finally:
            session.history.append(turn.exchange())
            session.turn = session.current = None
            session._turn_started = False

    def _stop_reason(self, stop: StopReason | str | None, turn: Turn) -> PromptResponse | RequestError:
        if turn.cancel_requested:
            return PromptResponse(stop_reason=StopReason.CANCELLED)  # the spec: a cancelled turn says so
        try:
            return PromptResponse(stop_reason=StopReason(stop or StopReason.END_TURN))
        except ValueError:
            known = ", ".join(repr(r.value) for r in StopReason)
            _log.error(
                "The prompt function of %r returned %r, not a stop reason (%s)", self.info.name, stop, known
            )
            return InternalError({"details": f"the prompt function returned {stop!r}, not one of {known}"})

    async def _cancel(self, notification: CancelNotification, cx: Connection) -> None:
        session = self._sessions.get(notification.session_id)
        if session is None or session.cx is not cx or session.turn is None or session.current is None:
            return
        self._cancel_turn(session)

    @staticmethod
    def _cancel_turn(session: AppSession) -> None:
        """End the session's turn as cancelled: a task that has not begun sees the flag when it does."""
        if session.current is not None:
            session.current.cancel_requested = True
        if session.turn is not None and session._turn_started:
            session.turn.cancel()
