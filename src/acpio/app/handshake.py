"""How an :class:`~acpio.app.AgentApp` answers its handshake without building a model.

An app's ``initialize``, ``session/new`` and ``session/set_mode`` answers are what the library
fills in from the app's declarations. When the params are plainly well-formed (the keys the
schema names, in their wire spelling, with values of the schema's types) and the app has
nothing that needs the typed values, :class:`Handshake` reads the raw params and answers with the
JSON the models would write: the same bytes, and pydantic is not imported. Anything else goes
to the typed handler, as before (the same answers, the same ``-32602`` for bad params):

* ``initialize``: typed when the app has an :meth:`~acpio.app.AgentApp.on_initialize` hook
  (it takes the models) or is ``unstable`` (attaching adds its ``_meta``); or when
  ``protocolVersion`` is not an integer in 0..65535. Both answers advertise the capabilities
  written once as JSON (:meth:`Handshake.capabilities_wire`, with a store's from
  :meth:`~acpio.store.StoredSessions.agent_capabilities_wire`): the typed one reads its models from it.
* ``session/new`` (through the store's :meth:`~acpio.store.StoredSessions.open_new`, for an
  app with one): typed unless the params hold only ``cwd`` (a
  string), ``mcpServers`` (empty or ``null``: servers are kept as their models write them),
  ``additionalDirectories`` (strings or ``null``) and ``_meta``. The answer is written without
  models unless an :meth:`~acpio.app.AgentApp.on_open` hook offered the session modes or choices
  of its own (see :meth:`~acpio.app.menu.Menu.setup_wire`).
* ``session/set_mode``: typed unless the params hold only the strings ``sessionId`` and
  ``modeId`` (and ``_meta``).

:class:`AppHandler` is how the app's protocol handlers are registered: each takes one method,
and creates its typed handler (and so the message class) on the first message the raw answer
does not take.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpio import schema as acp
from acpio.app.app_session import AppSession
from acpio.app.raw_turn import plain_params
from acpio.errors import InvalidParams
from acpio.jsonrpc import (
    Connection,
    Dispatch,
    NotificationDispatch,
    NotificationHandler,
    RequestDispatch,
    RequestHandler,
    Responder,
    Unhandled,
)
from acpio.jsonrpc.handlers import speaks
from acpio.versions import select_version

if TYPE_CHECKING:
    from acpio.app.protocol import AppProtocol
    from acpio.jsonrpc import JsonValue
    from acpio.schema import (
        InitializeRequest,
        InitializeResponse,
        NewSessionRequest,
        NewSessionResponse,
        SetSessionModeRequest,
        SetSessionModeResponse,
    )

__all__ = ["AppHandler", "Handshake", "RawAnswer", "RawNotice"]

#: Answers a request from its raw params (``True``), or leaves it to the typed handler (``False``).
RawAnswer = Callable[["JsonValue", Responder[Any], Connection], Awaitable[bool]]
#: Takes a notification from its raw params (``True``), or leaves it to the typed handler (``False``).
RawNotice = Callable[["JsonValue", Connection], Awaitable[bool]]

_NEW_SESSION_KEYS = frozenset({"cwd", "mcpServers", "additionalDirectories", "_meta"})
_SET_MODE_KEYS = frozenset({"sessionId", "modeId", "_meta"})
_UINT16_MAX = 65535


class AppHandler:
    """The app's handler of one method: its raw answer first, else its typed function.

    ``fn`` is called as a :class:`~acpio.jsonrpc.RequestHandler` (or, with ``notification``, a
    :class:`~acpio.jsonrpc.NotificationHandler`) of the method's v1 params class, read from the
    method table and created on the first message that needs it. ``raw`` answers a request first,
    ``raw_notice`` takes a notification first. ``method`` is what the connection counts as handled
    (:attr:`~acpio.jsonrpc.Connection.handler_methods`).
    """

    __slots__ = ("_dispatch", "_fn", "_notification", "_raw", "_raw_notice", "_typed", "method")

    def __init__(
        self,
        method: str,
        fn: Callable[..., Awaitable[object]],
        raw: RawAnswer | None = None,
        *,
        notification: bool = False,
        raw_notice: RawNotice | None = None,
    ) -> None:
        self.method = method
        self._fn = fn
        self._raw = raw
        self._raw_notice = raw_notice
        self._notification = notification
        self._dispatch = NotificationDispatch if notification else RequestDispatch
        self._typed: RequestHandler | NotificationHandler | None = None

    def __repr__(self) -> str:
        return f"AppHandler({self.method!r}, {getattr(self._fn, '__name__', self._fn)!r})"

    def accepts(self, message: Dispatch) -> bool:
        """Messages of this handler's method and kind."""
        return message.method == self.method and type(message) is self._dispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Answer from the raw params when the raw answer takes them, else through the typed handler."""
        raw = self._raw is not None or self._raw_notice is not None
        if raw and speaks(cx, 1) and await self._take_raw(message, cx):
            return None
        typed = self._typed
        if typed is None:
            table = acp.NOTIFICATIONS if self._notification else acp.REQUESTS
            kind = NotificationHandler if self._notification else RequestHandler
            typed = self._typed = kind(table[self.method].params, self._fn)
        return await typed.handle(message, cx)

    async def _take_raw(self, message: Dispatch, cx: Connection) -> bool:
        if self._raw_notice is not None:
            return await self._raw_notice(message.params, cx)
        assert self._raw is not None
        assert isinstance(message, RequestDispatch)
        return await self._raw(message.params, message.responder, cx)


class Handshake:
    """The ``initialize``, ``session/new`` and ``session/set_mode`` answers of an app (see the module)."""

    def __init__(self, protocol: AppProtocol) -> None:
        self._protocol = protocol
        self._app = protocol.definition
        self._capabilities: dict[str, Any] | None = None

    def capabilities_wire(self) -> dict[str, Any]:
        """The ``agentCapabilities`` the app advertises, as JSON in the models' field order (made once).

        What the app declared and, with a store, its capabilities
        (:meth:`~acpio.store.StoredSessions.agent_capabilities_wire`); both answers are written from it.
        """
        if self._capabilities is None:
            capabilities: dict[str, Any] = {"promptCapabilities": self._app.prompt_wire()}
            if self._app.mcp:
                capabilities["mcpCapabilities"] = {"http": True, "acp": True}
            stored = self._protocol.stored
            if stored is not None:
                capabilities = stored.agent_capabilities_wire(capabilities)
            self._capabilities = capabilities
        return self._capabilities

    async def raw_initialize(self, params: JsonValue, responder: Responder[Any], cx: Connection) -> bool:
        """Answer ``initialize`` without models, when nothing needs them."""
        if self._app.on_initialize or self._protocol.observers is not None:
            return False
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        if type(version) is not int or not 0 <= version <= _UINT16_MAX:
            return False
        responder.respond(
            {
                "protocolVersion": select_version(version, (1,)),
                "agentCapabilities": self.capabilities_wire(),
                "agentInfo": self._app.info_wire(),
            }
        )
        return True

    async def initialize(self, request: InitializeRequest, cx: Connection) -> InitializeResponse:
        """Answer ``initialize`` with models: the hooks get them, attaching adds to them."""
        # a copy: a hook may change the models in place, and the JSON is every connection's
        capabilities = acp.AgentCapabilities.model_validate(copy.deepcopy(self.capabilities_wire()))
        if self._protocol.observers is not None:  # acpio's extension, named like the store's hint
            meta = dict(capabilities.meta or {})
            from acpio.session.attach import ATTACH_ROLES

            meta["acpio"] = {**meta.get("acpio", {}), "attach": {"roles": list(ATTACH_ROLES)}}
            capabilities.meta = meta
        answer = acp.InitializeResponse(
            protocol_version=select_version(request.protocol_version, (1,)),
            agent_capabilities=capabilities,
            agent_info=self._app.info,
        )
        for hook in self._app.on_initialize:
            answer = await hook(request, answer) or answer
        return answer

    async def raw_new_session(self, params: JsonValue, responder: Responder[Any], cx: Connection) -> bool:
        """Open a session from ``session/new``'s raw params, when they are plainly well-formed."""
        plain = _plain_new_session(params)
        if plain is None:
            return False
        await self._open_new(responder, cx, plain[0], (), plain[1], raw=True)
        return True

    async def raw_stored_new(self, params: JsonValue, responder: Responder[Any], cx: Connection) -> bool:
        """Open a stored session from ``session/new``'s raw params, when they are plainly well-formed."""
        plain = _plain_new_session(params)
        if plain is None:
            return False
        assert self._protocol.stored is not None  # registered for an app with a store
        record, setup = await self._protocol.stored.open_new(*plain, cx)
        # the app's on_open hook gives its setup as JSON, or (the hooks offered their own) as models
        responder.respond(_new_session_answer(record.session_id, setup.wire, setup.fields))
        return True

    async def new_session(
        self, request: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection
    ) -> None:
        """Open a session from a typed ``session/new`` (its MCP servers kept as their models write them)."""
        servers = tuple(server.to_wire() for server in request.mcp_servers or ())
        directories = request.additional_directories or ()
        await self._open_new(responder, cx, request.cwd, servers, directories, raw=False)

    async def _open_new(
        self,
        responder: Responder[Any],
        cx: Connection,
        cwd: str,
        mcp_servers: tuple[Mapping[str, Any], ...],
        directories: Iterable[str],
        *,
        raw: bool,
    ) -> None:
        """Open a session (an app without a store), answer, then offer the commands.

        With ``raw`` the answer is written without models when the menu can (:meth:`Menu.setup_wire`).
        """
        path = Path(cwd)
        if not path.is_absolute():
            raise InvalidParams({"cwd": cwd, "reason": "cwd must be an absolute path"})
        protocol, menu = self._protocol, self._app.menu
        session_id = f"sess_{uuid.uuid4().hex}"
        client = protocol.client_features(cx)
        settings = menu.settings(client)
        session = AppSession(
            cx, session_id, path, settings, client, menu, mcp_servers, tuple(Path(d) for d in directories)
        )
        for hook in self._app.on_open:
            await hook(session)
        protocol.sessions[session_id] = session
        wire = menu.setup_wire(settings) if raw else None
        responder.respond(_new_session_answer(session_id, wire, lambda: menu.setup(settings)))
        protocol.offer_commands(cx, session_id)  # after the answer: the client knows the session by then

    async def raw_set_mode(self, params: JsonValue, responder: Responder[Any], cx: Connection) -> bool:
        """Set a session's mode from ``session/set_mode``'s raw params, when they are two strings."""
        if not plain_params(params, _SET_MODE_KEYS):
            return False
        session_id, mode_id = params.get("sessionId"), params.get("modeId")
        if type(session_id) is not str or type(mode_id) is not str:
            return False
        await self._set_mode(cx, session_id, mode_id)
        responder.respond({})  # SetSessionModeResponse()
        return True

    async def set_mode(self, request: SetSessionModeRequest, cx: Connection) -> SetSessionModeResponse:
        """Set a session's mode from a typed ``session/set_mode``."""
        await self._set_mode(cx, request.session_id, request.mode_id)
        return acp.SetSessionModeResponse()

    async def _set_mode(self, cx: Connection, session_id: str, mode_id: str) -> None:
        protocol = self._protocol
        await protocol.change_setting(protocol.open_session(cx, session_id), None, mode_id, asked=True)


def _new_session_answer(
    session_id: str, wire: Mapping[str, Any] | None, fields: Callable[[], Mapping[str, Any]]
) -> dict[str, Any] | NewSessionResponse:
    """``session/new``'s answer, with or without a store: ``sessionId`` and the setup's ``wire`` JSON.

    The model of the setup's ``fields()`` when there is no JSON: on the typed path, or when the
    ``on_open`` hooks offered the session modes or choices of its own (:meth:`Menu.setup_wire`).
    """
    if wire is not None:
        return {"sessionId": session_id, **wire}
    return acp.NewSessionResponse(session_id=session_id, **fields())


def _plain_new_session(params: JsonValue) -> tuple[str, list[str]] | None:
    """The ``cwd`` and ``additionalDirectories`` of plainly well-formed ``session/new`` params, else ``None``.

    Plain: only those keys, ``mcpServers`` (empty or ``null``: servers are kept as their models
    write them) and ``_meta``, with values of the schema's types.
    """
    if not plain_params(params, _NEW_SESSION_KEYS) or type(params.get("cwd")) is not str:
        return None
    if params.get("mcpServers", 0) not in ([], None):  # required
        return None
    directories = params.get("additionalDirectories")
    if directories is not None and (
        type(directories) is not list or any(type(d) is not str for d in directories)
    ):
        return None
    return params["cwd"], directories or []
