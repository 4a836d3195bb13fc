"""The high-level agent: :class:`AgentApp`, a decorator and a typed function per prompt.

The app answers what every agent must (``initialize``, ``session/new``, ``session/cancel``) and
runs each ``session/prompt`` as a :class:`~acpio.app.Turn` in a task of its own. It is built on an
``Agent`` builder, not beside it: :meth:`AgentApp.builder` gives that builder, to serve the app in
any way a builder is served or to add handlers of one's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from acpio import running
from acpio.acp_connection import AcpConnection
from acpio.app.app_session import (
    AppSession,
    ChangeFunction,
    CloseFunction,
    InitializeFunction,
    OpenFunction,
    PromptFunction,
    StopReasonName,
)
from acpio.app.definition import AppDefinition
from acpio.app.protocol import AppProtocol
from acpio.jsonrpc import Builder
from acpio.roles import Agent
from acpio.store import SessionStore, open_store
from acpio.transports.base import Component, Transport
from acpio.transports.listener import Listener
from acpio.transports.stdio import Stdio

if TYPE_CHECKING:
    from acpio.app.protocol_v2 import AppProtocolV2, AuthFunction
    from acpio.schema import Implementation, PromptCapabilities
    from acpio.version_router import VersionRouter

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

    ``protocols`` says which ACP versions the app serves: ``(1,)`` (the default), ``(1, 2)`` (each
    client gets the version it asks for, chosen at ``initialize`` by a
    :class:`~acpio.VersionRouter`) or ``(2,)``. The same prompt function serves them all: a
    :class:`~acpio.app.Turn` writes what the client's version has (see ``docs/v2.md``). v2's
    baseline includes ``session/list``, ``resume`` and ``close``: an app serving v2 without a
    ``store`` keeps its sessions in an in-memory one (``"memory:"``), for both versions.
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
        protocols: Sequence[Literal[1, 2]] = (1,),
    ) -> None:
        if not protocols or any(p not in (1, 2) for p in protocols):
            raise ValueError(
                f"protocols is one or both of the ACP versions 1 and 2, not {tuple(protocols)!r}"
            )
        #: The ACP versions the app serves.
        self.protocols: tuple[Literal[1, 2], ...] = tuple(sorted(set(protocols)))
        if 2 in self.protocols and store is None:
            store = "memory:"
        self._app = AppDefinition(name, version, title, prompt_capabilities, error_details, mcp, unstable)
        self._menu = self._app.menu
        self._protocol = AppProtocol(self._app, open_store(store) if isinstance(store, str) else store)
        stored = self._protocol.stored
        self._v2: AppProtocolV2 | None = None
        if stored is not None and 2 in self.protocols:
            from acpio.app.protocol_v2 import AppProtocolV2  # a v1-only app loads none of v2's code

            self._v2 = AppProtocolV2(self._protocol, stored)

    @property
    def info(self) -> Implementation:
        """The ``agentInfo`` the app answers ``initialize`` with."""
        return self._app.info

    def __repr__(self) -> str:
        return f"<AgentApp {self._app.name!r}>"

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
        if self._app.prompt is not None:
            raise ValueError(f"{self!r} already has a prompt function: register one only")
        self._app.prompt = fn
        return fn

    def on_initialize(self, fn: InitializeFunction) -> InitializeFunction:
        """Register a hook that completes the ``initialize`` answer (a decorator: :data:`InitializeFunction`).

        The answer it gets already has the negotiated version, ``agentInfo`` and the capabilities
        the app serves; the hook adds what only the agent knows (``authMethods``, prompt
        capabilities computed at run time, more MCP transports...). v1 only: a v2 client's
        ``initialize`` is answered without it (auth methods on v2: :meth:`on_login`).
        """
        self._app.on_initialize.append(fn)
        return fn

    def on_open(self, fn: OpenFunction) -> OpenFunction:
        """Register a hook run when a session is opened, before the setup answer (a decorator).

        It gets the :class:`AppSession`: it may give the session its own modes and choices
        (:meth:`AppSession.offer_modes`, :meth:`AppSession.offer_choices`), start per-session work,
        or raise a :class:`~acpio.RequestError` to refuse the session (a refused ``session/new``
        leaves nothing in the store).
        """
        self._app.on_open.append(fn)
        return fn

    def on_close(self, fn: CloseFunction) -> CloseFunction:
        """Register a hook run when a session closes, after its turn was cancelled (a decorator)."""
        self._app.on_close.append(fn)
        return fn

    def on_change(self, fn: ChangeFunction) -> ChangeFunction:
        """Register a hook run when the client sets a config option or the mode (a decorator).

        It runs after the new value is applied and before the answer, which lists every option as
        the hook left them: a mode that brings its own model sets the model option here. A turn's
        :meth:`~acpio.app.Turn.set_mode` and :meth:`~acpio.app.Turn.set_option` run no hook: the
        turn sets what goes with its change itself. Either way the values are saved after it.
        """
        self._app.on_change.append(fn)
        return fn

    def on_login(
        self, method_id: str, name: str, *, description: str | None = None
    ) -> Callable[[AuthFunction], AuthFunction]:
        """Register the login of an auth method (a decorator on ``async def login(method_id: str)``).

        On v2 the ``initialize`` answer lists it (``methodId``, ``type: "agent"``) and the app serves
        ``auth/login`` (the function runs; a :class:`~acpio.RequestError` it raises refuses) and
        ``auth/logout``. On v1 list it and serve ``authenticate`` yourself (:meth:`on_initialize`,
        :meth:`on_request`), as before.
        """
        v2 = self._v2
        if v2 is None:
            raise ValueError(f"{self!r} does not serve ACP v2: on_login is v2's auth/login")

        def register(fn: AuthFunction) -> AuthFunction:
            method: dict[str, Any] = {"methodId": method_id, "name": name, "type": "agent"}
            if description is not None:
                method["description"] = description
            v2.auth_methods.append(method)
            v2.login = fn
            return fn

        return register

    def on_request(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Serve one more request type with a typed handler, as ``Builder.on_request`` takes it (a decorator).

        The message type comes from the first parameter's annotation: ``async def authenticate(req:
        AuthenticateRequest, cx: Connection) -> AuthenticateResponse``. Served to v1 clients (the
        types are v1's).
        """
        self._app.handlers.append(fn)
        return fn

    @property
    def store(self) -> SessionStore | None:
        """Where the app keeps its sessions (``None``: it keeps none)."""
        stored = self._protocol.stored
        return stored.store if stored is not None else None

    @property
    def sessions(self) -> list[AppSession]:
        """The sessions open now, on every connection."""
        return list(self._protocol.sessions.values())

    async def refresh_options(self, session: AppSession | None = None) -> None:
        """Send ``config_option_update`` with every option to one open session, or to each.

        After changing what sessions are offered (:meth:`AppSession.offer_choices`) outside a turn.
        """
        for target in [session] if session is not None else self.sessions:
            if not target.cx.closed:
                self._protocol.send_options(target)
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

    def builder(self, protocol: Literal[1, 2] | None = None) -> Builder[AcpConnection]:
        """A new ``Agent`` builder that serves this app on one ACP version (default: the app's lowest).

        Add handlers to it, or serve it yourself; :meth:`component` serves every version of the
        app on one endpoint. Raises ``RuntimeError`` when no prompt function is registered (the app
        could answer no prompt), ``ValueError`` for a version the app does not serve.
        """
        version = self.protocols[0] if protocol is None else protocol
        self._check_servable(version)
        # mcp/message (MCP over ACP) is an unstable method
        app = Agent.builder(name=self._app.name, unstable=self._app.mcp or self._app.unstable)
        if version == 1:
            self._protocol.register(app)
            return app
        # both made by __init__ when the app serves v2
        assert self._v2 is not None
        assert self._protocol.stored is not None
        app.with_handler(self._v2)
        app.on_close(self._protocol.stored.connection_closed)
        app.with_spawned(self._protocol.stored.watch)
        return app

    def component(self) -> Builder[AcpConnection] | VersionRouter:
        """What serves the app: on v1 alone its builder, else a :class:`~acpio.VersionRouter` of its versions.

        v2 alone is routed too: the router answers what comes before ``initialize`` (a batch, a
        request too early) and a v1 ``initialize`` (``-32022``) as v2 requires.
        """
        if self.protocols == (1,):
            return self.builder()
        from acpio.version_router import VersionRouter

        for version in self.protocols:
            self._check_servable(version)
        return VersionRouter({version: _BuiltWhenRouted(self, version) for version in self.protocols})

    def _check_servable(self, version: int) -> None:
        """Raise what :meth:`builder` raises for ``version``, without building anything."""
        if self._app.prompt is None:
            raise RuntimeError(
                f"{self!r} has no prompt function: decorate one with @app.prompt before serving the app"
            )
        if version not in self.protocols:
            raise ValueError(
                f"{self!r} serves ACP {self.protocols}, not {version}: AgentApp(..., protocols=...)"
            )
        if version == 2:
            self._menu.check_v2()

    async def serve(self, target: Transport | Listener | Component) -> None:
        """Serve one client on ``target`` until it closes the connection; or every client of a listener.

        ``target`` is a transport or component (one client), or a
        :class:`~acpio.transports.listener.Listener` (each client it accepts, until it closes).
        """
        await self.component().serve(target)

    async def open(self) -> Transport:
        """Serve the app in-process; the transport talks to it (a client builder can connect to the app)."""
        return await self.component().open()

    def run(self) -> None:
        """Serve one client on this process's stdin and stdout (how editors start an agent).

        The event loop is :func:`acpio.run`'s: uvloop when installed (``acpio[fast]``).
        """
        running.run(self.serve(Stdio()))


class _BuiltWhenRouted:
    """One version's builder of an app behind its router, made when the first client of that version comes.

    A builder registers its version's typed handlers, and so creates their model classes: an app
    serving v1 and v2 would create v1's for a v2 client, and v2's for a v1 client.
    """

    __slots__ = ("_app", "_builder", "_version")

    def __init__(self, app: AgentApp, version: Literal[1, 2]) -> None:
        self._app = app
        self._version: Literal[1, 2] = version
        self._builder: Builder[AcpConnection] | None = None

    def serve(self, target: Transport) -> Awaitable[None]:
        """Serve one routed connection with the version's builder (made now if it is the first)."""
        builder = self._builder
        if builder is None:
            builder = self._builder = self._app.builder(self._version)
        return builder.serve(target)
