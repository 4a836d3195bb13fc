"""How :meth:`~acpio.session.ActiveSession.read_to_string` answers the agent's requests of a turn."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, cast

from acpio.acp_connection import AcpConnection
from acpio.capabilities import ClientFeatures
from acpio.client.files import ConfinedFiles
from acpio.client.permissions import PermissionChoice, PermissionPolicy, decide_permission, permission_policy
from acpio.errors import InternalError, MethodNotFound, RequestCancelled, RequestError
from acpio.jsonrpc import Connection, RequestDispatch
from acpio.schema import RequestPermissionResponse
from acpio.session.messages import (
    AgentRequestMessage,
    ReadTextFileMessage,
    RequestPermissionMessage,
    RequestPermissionV2Message,
    SessionMessage,
    WriteTextFileMessage,
)

if TYPE_CHECKING:
    from acpio.session.turn_view import TurnView

_log = logging.getLogger("acpio.session")


class TurnAnswers:
    """How :meth:`ActiveSession.read_to_string` answers the agent's requests: as told, else ``-32601``."""

    __slots__ = ("advertised", "files", "policy", "view")

    def __init__(
        self,
        cx: Connection,
        permissions: PermissionChoice | None,
        files: str | os.PathLike[str] | ConfinedFiles | None,
        view: TurnView | None = None,
    ) -> None:
        #: The session's view: the tool call a permission request is about, merged, for the policy.
        self.view = view
        self.policy: PermissionPolicy | None = (
            permission_policy(permissions) if permissions is not None else None
        )
        if files is not None and not isinstance(files, ConfinedFiles):
            files = ConfinedFiles(files, set_by="read_to_string(files=...)")
        self.files = files
        #: What this client advertised at ``initialize``; ``None``: not known, so nothing was.
        self.advertised: ClientFeatures | None = cx.client_features if isinstance(cx, AcpConnection) else None

    async def answer(self, message: SessionMessage) -> None:
        """Answer one request of the turn."""
        try:
            if self.policy is not None and isinstance(
                message, RequestPermissionMessage | RequestPermissionV2Message
            ):
                await self._permission(message, self.policy)
                return
            if isinstance(message, ReadTextFileMessage | WriteTextFileMessage) and self.files is not None:
                await self._file(message, self.files)
                return
        except RequestError as exc:  # the agent's params did not validate, or the file was refused
            cast(RequestDispatch, message.dispatch).responder.respond_with_error(exc)
            return
        _decline(message, _how_to_answer(message))

    async def _permission(
        self, message: RequestPermissionMessage | RequestPermissionV2Message, policy: PermissionPolicy
    ) -> None:
        if message.answered:  # answered cancelled: the client cancelled the turn
            return
        request = message.request if isinstance(message, RequestPermissionMessage) else message.as_v1()
        try:
            call = self.view.tool_calls.get(request.tool_call.tool_call_id) if self.view is not None else None
            outcome = await message.responder.run_until_cancelled(decide_permission(policy, request, call))
        except RequestCancelled as exc:  # the turn was cancelled (that answer stands), or the agent gave up
            message.respond_with_error(exc)
            return
        except RequestError:  # the callback's answer to the agent: sent by answer()
            raise
        except Exception as exc:
            message.respond_with_error(
                InternalError(message=f"The client failed to decide the permission request: {exc}")
            )
            raise
        if isinstance(message, RequestPermissionMessage):
            message.respond(RequestPermissionResponse(outcome=outcome))
        else:
            message.respond_outcome(outcome)

    async def _file(self, message: ReadTextFileMessage | WriteTextFileMessage, files: ConfinedFiles) -> None:
        reading = isinstance(message, ReadTextFileMessage)
        capability = "fs.readTextFile" if reading else "fs.writeTextFile"
        advertised = self.advertised
        if advertised is None or not (advertised.read_text_file if reading else advertised.write_text_file):
            _decline(
                message,
                f"this client did not advertise {capability} in its initialize request, so the agent "
                "must not call it; to let read_to_string(files=...) answer it, send InitializeRequest("
                "client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, "
                "write_text_file=True))) from this connection",
            )
            return
        # In a thread, so that reading or writing a big file does not stop the event loop.
        if isinstance(message, ReadTextFileMessage):
            message.respond(await asyncio.to_thread(files.read, message.request))
        else:
            message.respond(await asyncio.to_thread(files.write, message.request))


def _how_to_answer(message: SessionMessage) -> str:
    """What to do for read_to_string() (or the reader) to answer ``message``'s request."""
    method = message.method
    item = type(message).__name__
    read_it = (
        f"or read the turn with read_update() and answer the {item} with item.respond(...)"
        if isinstance(message, AgentRequestMessage)
        else "or read the turn with read_update() and answer it through item.dispatch.responder"
    )
    if isinstance(message, RequestPermissionMessage | RequestPermissionV2Message):
        return (
            "read_to_string() answers it when given permissions='allow', 'deny' or an async callback; "
            + read_it
        )
    if isinstance(message, ReadTextFileMessage | WriteTextFileMessage):
        return (
            "read_to_string() answers it when given files=ROOT, the directory the agent may read and "
            f"write in; {read_it}"
        )
    return f"read_to_string() does not answer {method}: register a handler for it on the builder, {read_it}"


def _decline(message: SessionMessage, how: str) -> None:
    """Refuse the agent's request ``-32601``, saying in ``data`` how to have it answered."""
    dispatch = message.dispatch
    assert isinstance(dispatch, RequestDispatch)
    _log.warning("read_to_string() answered %r with -32601: %s", dispatch.method, how)
    dispatch.responder.respond_with_error(MethodNotFound(f"{dispatch.method}: {how}"))
