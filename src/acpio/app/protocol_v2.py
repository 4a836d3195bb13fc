"""How an :class:`~acpio.app.AgentApp` speaks ACP v2: its handlers, beside those of :mod:`acpio.app.protocol`.

The sessions, the store, the hooks and the settings are the v1 :class:`~acpio.app.protocol.AppProtocol`'s
(one app, one set of sessions, whatever version each client speaks); :class:`AppProtocolV2` answers
the v2 methods with them:

* ``initialize`` with ``info``, ``capabilities`` (objects: ``{}`` = supported) and the auth methods
  (``methodId``, ``type``); ``auth/login`` and ``auth/logout``;
* ``session/new``, ``session/resume`` (with ``replayFrom: {"type": "start"}`` the stored history is
  replayed as upserts: one ``user_message``/``agent_message`` per message), ``session/list``,
  ``session/close``, ``session/delete``, all from the app's store (an in-memory one when the app was
  given none: v2's baseline asks for list, resume and close);
* ``session/set_config_option``, the app's modes being the option ``mode`` (``category: "mode"``);
* ``session/prompt``: answered at once with the ``messageId`` of the user's message (echoed as
  ``user_message``), then ``state_update`` ``running``, the turn, ``idle`` with its ``stopReason``
  (``error`` with the error when the prompt function failed); ``session/cancel`` ends it ``cancelled``
  after every update it sent; ``terminal/cancel`` kills an agent terminal.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from acpio import schema as acp
from acpio.app.agent_terminals import AgentTerminals
from acpio.app.app_session import AppSession, PromptFunction
from acpio.app.protocol import AppProtocol, turn_answer
from acpio.app.raw_turn import plain_prompt, user_chunk
from acpio.app.turn import Turn
from acpio.app.updates_v2 import V2ClientFeatures, V2Updates, state_update
from acpio.app.v2_shapes import MODE_CONFIG_ID, V2Shapes, keep_message_id, new_message_id, replayed
from acpio.errors import InternalError, InvalidParams, InvalidRequest, MethodNotFound, RequestError
from acpio.jsonrpc import Connection, Dispatch, NotificationDispatch, RequestDispatch, Unhandled
from acpio.jsonrpc.messages import encode_value
from acpio.jsonrpc.typed import parse_params
from acpio.versions import requested_version, select_version

if TYPE_CHECKING:
    from acpio.store import StoredSessions

__all__ = ["AppProtocolV2", "AuthFunction", "AuthMethodV2"]

_log = logging.getLogger("acpio.app")

#: The ACP version this module speaks.
VERSION: Final = 2
_UPDATE: Final = "session/update"

#: ``await fn(method_id)`` for ``auth/login``: raise a :class:`~acpio.RequestError` to refuse.
AuthFunction: TypeAlias = Callable[[str], Awaitable[None]]
#: A v2 auth method as the ``initialize`` answer lists it (``methodId``, ``name``, ``type``...).
AuthMethodV2: TypeAlias = dict[str, Any]
_Handler: TypeAlias = Callable[[dict[str, Any], Connection], Awaitable[Any]]


def _text(params: dict[str, Any], name: str, method: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise InvalidParams({name: value}, message=f"{method}: {name} must be a string")
    return value


def _absolute(params: dict[str, Any], method: str) -> str:
    cwd = _text(params, "cwd", method)
    if not Path(cwd).is_absolute():
        raise InvalidParams({"cwd": cwd}, message=f"{method}: cwd must be an absolute path, not {cwd!r}")
    return cwd


def _failed(error: RequestError) -> dict[str, Any]:
    """The idle ``state_update`` of a turn that failed: ``stopReason: "error"`` with the error object."""
    failure: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        failure["data"] = error.data
    return {**state_update("idle", "error"), "error": failure}


class AppProtocolV2:
    """The v2 handlers of an app, on the sessions of its v1 :class:`~acpio.app.protocol.AppProtocol`."""

    def __init__(self, core: AppProtocol, stored: StoredSessions) -> None:
        self._core = core
        self._app = core.definition
        self._menu = core.definition.menu
        self._stored = stored
        #: Auth methods to announce (``methodId``, ``name``, ``type``...) and the login function.
        self.auth_methods: list[AuthMethodV2] = []
        self.login: AuthFunction | None = None
        self._terminals: dict[str, AgentTerminals] = {}
        self._requests: dict[str, _Handler] = {
            "initialize": self._initialize,
            "auth/login": self._login,
            "auth/logout": self._logout,
            "session/new": self._new,
            "session/resume": self._resume,
            "session/list": self._list,
            "session/close": self._close,
            "session/delete": self._delete,
            "session/set_config_option": self._set_option,
            "session/prompt": self._prompt,
            "terminal/cancel": self._cancel_terminal,
        }

    def __repr__(self) -> str:
        return f"<AppProtocolV2 {self._app.name!r}>"

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Answer the v2 methods of the app; pass on the rest (``-32601`` from the role)."""
        if isinstance(message, NotificationDispatch):
            if message.method == "session/cancel" and isinstance(message.params, dict):
                self._cancel(message.params, cx)
                return None
            return Unhandled(message)
        handler = self._requests.get(message.method)
        if handler is None or not isinstance(message, RequestDispatch):
            return Unhandled(message)
        params = message.params if isinstance(message.params, dict) else {}
        try:
            result = await handler(params, cx)
        except RequestError as error:
            message.responder.respond_with_error(error)
        except Exception as error:
            _log.exception("%s failed in %r", message.method, self._app.name)
            message.responder.respond_with_error(
                InternalError.for_exception(error, details=self._app.error_details)
            )
        else:
            message.responder.respond(result)
        return None

    # --- initialize and auth --------------------------------------------------------------------------

    async def _initialize(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        select_version(requested_version(params), (VERSION,))  # -32022 below v2 (served alone)
        self._core.v2_clients[cx] = V2ClientFeatures.from_capabilities(params.get("capabilities"))
        prompt = self._app.prompt_wire()  # v1's promptCapabilities: offered here in v2's shape
        session: dict[str, Any] = {"delete": {}, "additionalDirectories": {}}
        offered: dict[str, Any] = {k: {} for k in ("image", "audio", "embeddedContext") if prompt.get(k)}
        if offered:
            session["prompt"] = offered
        if self._app.mcp:
            session["mcp"] = {"http": {}}
        answer: dict[str, Any] = {
            "protocolVersion": VERSION,
            "info": self._app.info_wire(),
            "capabilities": {"session": session},
        }
        if self.auth_methods:
            answer["authMethods"] = list(self.auth_methods)
        return answer

    async def _login(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        method_id = _text(params, "methodId", "auth/login")
        known = [m.get("methodId") for m in self.auth_methods]
        if self.login is None or method_id not in known:
            raise InvalidParams({"methodId": method_id, "authMethods": known}, message="Unknown auth method")
        await self.login(method_id)
        return {}

    async def _logout(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        if not self.auth_methods:
            raise MethodNotFound("auth/logout")
        return {}

    # --- sessions ---------------------------------------------------------------------------------------

    def _setup(self, session_id: str) -> dict[str, Any]:
        """The ``configOptions`` of a setup answer on v2 (the modes as the ``mode`` option)."""
        session = self._core.sessions[session_id]
        options = self._menu.options_state(session.settings, True)
        update = V2Shapes().convert(
            {"sessionUpdate": "config_option_update", "configOptions": [o.to_wire() for o in options]}
        )
        return {"configOptions": update["configOptions"]} if options and update is not None else {}

    async def _new(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        cwd = _absolute(params, "session/new")
        record = await self._stored.store.create(
            cwd,
            additional_directories=params.get("additionalDirectories") or (),
            mcp_servers=params.get("mcpServers") or (),
        )
        await self._stored.opened(record, "session/new", cx)
        return {"sessionId": record.session_id, **self._setup(record.session_id)}

    async def _resume(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        session_id = _text(params, "sessionId", "session/resume")
        replay = params.get("replayFrom")
        if replay is not None and (not isinstance(replay, dict) or replay.get("type") != "start"):
            raise InvalidParams(
                {"replayFrom": replay},
                message="session/resume: the only replay cursor served is {'type': 'start'}",
            )
        record = await self._stored.reopen(
            "session/resume",
            session_id,
            _absolute(params, "session/resume"),
            params.get("mcpServers"),
            params.get("additionalDirectories"),
        )
        if replay is not None:
            history = [orjson.loads(body) async for body in self._stored.store.history(session_id)]
            for update in replayed(h["update"] for h in history if isinstance(h.get("update"), dict)):
                cx.send_notification(_UPDATE, {"sessionId": session_id, "update": update})
            await cx.drain()
        await self._stored.opened(record, "session/resume", cx)
        return self._setup(session_id)

    async def _list(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        cwd = params.get("cwd")
        if cwd is not None:
            cwd = _absolute(params, "session/list")
        cursor = params.get("cursor")
        page = await self._stored.store.list(cwd=cwd, cursor=cursor if isinstance(cursor, str) else None)
        sessions = []
        for record in page.sessions:
            info: dict[str, Any] = {
                "sessionId": record.session_id,
                "cwd": record.cwd,
                "updatedAt": record.updated_at,
            }
            if record.additional_directories:
                info["additionalDirectories"] = list(record.additional_directories)
            if record.title is not None:
                info["title"] = record.title
            sessions.append(info)
        answer: dict[str, Any] = {"sessions": sessions}
        if page.next_cursor is not None:
            answer["nextCursor"] = page.next_cursor
        return answer

    async def _close(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        session_id = _text(params, "sessionId", "session/close")
        await self._stored.store.require(session_id)
        await self._stored.shut(session_id)
        return {}

    async def _delete(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        session_id = _text(params, "sessionId", "session/delete")
        await self._stored.shut(session_id)
        await self._stored.store.delete(session_id)
        return {}

    async def _set_option(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        session = self._core.open_session(cx, _text(params, "sessionId", "session/set_config_option"))
        config_id = _text(params, "configId", "session/set_config_option")
        is_mode = config_id == MODE_CONFIG_ID and bool(self._menu.modes_of(session.settings))
        await self._core.change_setting(
            session, None if is_mode else config_id, params.get("value"), asked=True
        )
        return self._setup(session.id)

    # --- turns ------------------------------------------------------------------------------------------

    async def _prompt(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        plain = plain_prompt(params)  # text blocks: the models are built if the prompt function reads them
        blocks: Sequence[acp.ContentBlock]
        if plain is not None:
            session_id, blocks = plain
            said = plain[1].wire()
        else:  # the content blocks, in the turn's (v1) types; -32602 for what does not fit
            request = parse_params(acp.PromptRequest, "session/prompt", params)
            session_id, blocks = request.session_id, list(request.prompt)
            said = [block.to_wire() for block in blocks]
        session = self._core.open_session(cx, session_id)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": session.id},
                message="A turn is already running in this session: wait for its idle state_update, "
                "or send session/cancel",
            )
        assert self._app.prompt is not None  # AgentApp.builder() refuses an app without one
        updates = V2Updates(cx, session.id, session.cwd, self._core.record)
        terminals = self._terminals.setdefault(session.id, AgentTerminals())
        turn = Turn(
            cx,
            session.id,
            session.cwd,
            blocks,
            self._core.client_features(cx),
            session.settings,
            self._menu,
            session.history,
            session.mcp_servers,
            change=functools.partial(self._core.change_setting, session, asked=False),
            updates=updates,
            terminals=terminals,
        )
        message_id = new_message_id()
        for content in said:  # the neutral history: what the user said, for a later replay
            update = user_chunk(content)
            keep_message_id(update, message_id)  # a replay gives it back under its id
            self._core.record(session.id, encode_value({"sessionId": session.id, "update": update}))
        updates.post_v2({"sessionUpdate": "user_message", "messageId": message_id, "content": said})
        updates.post_v2(state_update("running"))
        session.current = turn
        session.turn = cx.spawn(self._run_turn(self._app.prompt, turn, session, updates))
        return {"messageId": message_id}

    async def _run_turn(
        self, fn: PromptFunction, turn: Turn, session: AppSession, updates: V2Updates
    ) -> None:
        idle: dict[str, Any] | None = None  # none when the connection is ending, not the turn
        try:
            self._core.begun.add(session.id)
            if turn.cancel_requested:  # session/cancel came before the task began: end it as cancelled
                raise asyncio.CancelledError
            stop = await fn(turn)
            answer = turn_answer(stop, turn, self._core.definition.name, plain=True)
            if isinstance(answer, RequestError):
                idle = _failed(answer)
            elif isinstance(answer, dict):  # a known reason: no model
                idle = state_update("idle", answer["stopReason"])
            else:
                idle = state_update("idle", str(answer.stop_reason))
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise
            idle = state_update("idle", "cancelled")
        except RequestError as error:
            idle = _failed(error)
        except Exception as error:
            _log.exception("The prompt function of %r failed", self._app.name)
            idle = _failed(InternalError.for_exception(error, details=self._app.error_details))
        finally:
            session.history.append(turn.exchange())
            session.turn = session.current = None
            self._core.begun.discard(session.id)
            if idle is not None and not updates.cx.closed:  # after every update the turn sent
                updates.post_v2(idle)

    def _cancel(self, params: dict[str, Any], cx: Connection) -> None:
        session = self._core.sessions.get(str(params.get("sessionId")))
        if session is None or session.cx is not cx or session.turn is None:
            return
        self._core.cancel_turn(session)

    async def _cancel_terminal(self, params: dict[str, Any], cx: Connection) -> dict[str, Any]:
        session = self._core.open_session(cx, _text(params, "sessionId", "terminal/cancel"))
        terminal_id = _text(params, "terminalId", "terminal/cancel")
        terminals = self._terminals.get(session.id)
        if terminals is None or not terminals.cancel(terminal_id):
            raise InvalidParams(
                {"terminalId": terminal_id}, message="terminal/cancel: no command runs in that terminal"
            )
        return {}
