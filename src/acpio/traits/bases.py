"""The two traits of the trait-style API: :class:`AgentTrait` and :class:`ClientTrait`.

Each trait has one ``async def`` per protocol method its side *receives*, taking the typed params
model and returning the typed result. The same class serves both ends of a call, as in the Rust
SDK, where ``ClientSideConnection`` implements the ``Agent`` trait:

* subclass :class:`AgentTrait` and override the methods your agent implements; serve it with
  :class:`~acpio.traits.AgentSideConnection`. A method you do not override answers ``-32601
  Method not found`` (a notification you do not override is ignored);
* :class:`~acpio.traits.ClientSideConnection` *is* an :class:`AgentTrait` whose methods send the call to
  the agent at the other end: ``await conn.prompt(PromptRequest(...))`` gives a ``PromptResponse``.

And the mirror: :class:`ClientTrait` for an editor, served by ``ClientSideConnection``, called through
``AgentSideConnection``.

Extension methods keep the convention of the Rust SDK and of the official Python SDK: the wire
method ``_vendor/x`` reaches ``ext_method("vendor/x", params)`` (the leading underscore is
dropped), and ``ext_method("vendor/x", params)`` on a connection sends ``_vendor/x``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from acpio.errors import MethodNotFound
from acpio.schema import (
    ArchiveSessionRequest,
    ArchiveSessionResponse,
    AuthenticateRequest,
    AuthenticateResponse,
    AuthStatusRequest,
    AuthStatusResponse,
    AuthStatusUpdateNotification,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DisableProviderRequest,
    DisableProviderResponse,
    ForkSessionRequest,
    ForkSessionResponse,
    InitializeRequest,
    InitializeResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ListProvidersRequest,
    ListProvidersResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutRequest,
    LogoutResponse,
    MessageMcpNotification,
    MessageMcpRequest,
    MessageMcpResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionNotification,
    SessionStatusRequest,
    SessionStatusResponse,
    SetProviderRequest,
    SetProviderResponse,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
    SetSessionTitleRequest,
    SetSessionTitleResponse,
    TerminalOutputRequest,
    TerminalOutputResponse,
    UnarchiveSessionRequest,
    UnarchiveSessionResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.schema.base import AcpNotification, AcpRequest

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue
    from acpio.traits.connection import AgentSideConnection, ClientSideConnection

__all__ = ["AgentTrait", "ClientTrait", "Peer"]

R = TypeVar("R")


class Peer:
    """What a trait method does when nobody overrides it: refuse a request, ignore a notification.

    The connections override these four hooks to send the call to the peer instead.
    """

    __slots__ = ()

    async def _request(self, params: AcpRequest[Any], result: type[R]) -> R:
        raise MethodNotFound(params.METHOD)

    async def _notify(self, params: AcpNotification) -> None:
        return None

    async def _ext_request(self, method: str, params: dict[str, Any]) -> JsonValue:
        raise MethodNotFound("_" + method)

    async def _ext_notify(self, method: str, params: dict[str, Any]) -> None:
        return None


class AgentTrait(Peer):
    """The agent side of ACP: one async method per method a client sends to an agent.

    Subclass it, override what your agent implements, and serve it with
    :class:`~acpio.traits.AgentSideConnection`; the connection gives the agent the client's methods
    (``session_update``, ``request_permission``, ``read_text_file``...). Requests run in their own
    task, so a long :meth:`prompt` can await the client and still see :meth:`cancel`.
    Notifications run in arrival order, one at a time. Raise a :class:`~acpio.RequestError`
    subclass to answer with that error; any other exception answers ``-32603``.

    Methods marked *unstable* follow the unstable schema and may change.
    """

    __slots__ = ()

    def on_connect(self, conn: AgentSideConnection) -> None:
        """Called once by :class:`~acpio.traits.AgentSideConnection` with the connection to the client.

        Keep ``conn`` to call the client. The default does nothing; an agent built by a factory
        (``AgentSideConnection(lambda conn: MyAgent(conn), ...)``) already has it.
        """

    async def initialize(self, params: InitializeRequest) -> InitializeResponse:
        """``initialize``: negotiate the protocol version and exchange capabilities.

        Answer with the version :func:`acpio.versions.select_version` gives for the client's
        (``select_version(params.protocol_version, (1,))`` for a v1 agent: always 1).
        """
        return await self._request(params, InitializeResponse)

    async def authenticate(self, params: AuthenticateRequest) -> AuthenticateResponse:
        """``authenticate``: authenticate with one of the methods advertised at ``initialize``."""
        return await self._request(params, AuthenticateResponse)

    async def new_session(self, params: NewSessionRequest) -> NewSessionResponse:
        """``session/new``: create a session in ``params.cwd``, with the given MCP servers."""
        return await self._request(params, NewSessionResponse)

    async def load_session(self, params: LoadSessionRequest) -> LoadSessionResponse:
        """``session/load``: replay a previous session's history as ``session/update`` notifications.

        Needs the ``loadSession`` capability.
        """
        return await self._request(params, LoadSessionResponse)

    async def list_sessions(self, params: ListSessionsRequest) -> ListSessionsResponse:
        """``session/list``: list existing sessions (``sessionCapabilities.list``)."""
        return await self._request(params, ListSessionsResponse)

    async def resume_session(self, params: ResumeSessionRequest) -> ResumeSessionResponse:
        """``session/resume``: resume a session without replaying it (``sessionCapabilities.resume``)."""
        return await self._request(params, ResumeSessionResponse)

    async def close_session(self, params: CloseSessionRequest) -> CloseSessionResponse:
        """``session/close``: end a session and free its resources (``sessionCapabilities.close``)."""
        return await self._request(params, CloseSessionResponse)

    async def delete_session(self, params: DeleteSessionRequest) -> DeleteSessionResponse:
        """``session/delete``: delete a stored session (``sessionCapabilities.delete``)."""
        return await self._request(params, DeleteSessionResponse)

    async def fork_session(self, params: ForkSessionRequest) -> ForkSessionResponse:
        """``session/fork`` (unstable): a new session from the context of an existing one."""
        return await self._request(params, ForkSessionResponse)

    async def set_session_mode(self, params: SetSessionModeRequest) -> SetSessionModeResponse:
        """``session/set_mode``: switch the session to one of the modes it advertised."""
        return await self._request(params, SetSessionModeResponse)

    async def set_session_config_option(
        self, params: SetSessionConfigOptionRequest
    ) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: set one of the session's configuration options.

        The official SDK calls this ``set_config_option``.
        """
        return await self._request(params, SetSessionConfigOptionResponse)

    async def prompt(self, params: PromptRequest) -> PromptResponse:
        """``session/prompt``: run one prompt turn; return its stop reason when the turn ends.

        Stream progress with ``session_update`` on the connection meanwhile. When the client sends
        ``session/cancel`` (see :meth:`cancel`), finish quickly with ``StopReason.CANCELLED``.
        """
        return await self._request(params, PromptResponse)

    async def cancel(self, params: CancelNotification) -> None:
        """``session/cancel`` (notification): the client cancels the session's running prompt turn.

        It runs while :meth:`prompt` is still running (in its own task): set a flag or an event that
        the prompt turn watches, for example an ``asyncio.Event`` per session.
        """
        await self._notify(params)

    async def logout(self, params: LogoutRequest) -> LogoutResponse:
        """``logout``: end the authenticated state (``auth.logout``)."""
        return await self._request(params, LogoutResponse)

    async def list_providers(self, params: ListProvidersRequest) -> ListProvidersResponse:
        """``providers/list`` (unstable): the model providers the agent can use."""
        return await self._request(params, ListProvidersResponse)

    async def set_provider(self, params: SetProviderRequest) -> SetProviderResponse:
        """``providers/set`` (unstable): configure a model provider."""
        return await self._request(params, SetProviderResponse)

    async def disable_provider(self, params: DisableProviderRequest) -> DisableProviderResponse:
        """``providers/disable`` (unstable): disable a model provider."""
        return await self._request(params, DisableProviderResponse)

    async def auth_status(self, params: AuthStatusRequest) -> AuthStatusResponse:
        """``auth/status`` (unstable): whether the agent is authenticated, and as whom (``auth.status``)."""
        return await self._request(params, AuthStatusResponse)

    async def session_status(self, params: SessionStatusRequest) -> SessionStatusResponse:
        """``session/status`` (unstable): a session's status, without side effects."""
        return await self._request(params, SessionStatusResponse)

    async def archive_session(self, params: ArchiveSessionRequest) -> ArchiveSessionResponse:
        """``session/archive`` (unstable): hide a session from ``session/list`` by default."""
        return await self._request(params, ArchiveSessionResponse)

    async def unarchive_session(self, params: UnarchiveSessionRequest) -> UnarchiveSessionResponse:
        """``session/unarchive`` (unstable): bring an archived session back."""
        return await self._request(params, UnarchiveSessionResponse)

    async def set_session_title(self, params: SetSessionTitleRequest) -> SetSessionTitleResponse:
        """``session/set_title`` (unstable): the client sets a session's title."""
        return await self._request(params, SetSessionTitleResponse)

    async def mcp_message(self, params: MessageMcpRequest) -> MessageMcpResponse:
        """``mcp/message`` (unstable): an MCP request over ACP, to an MCP server the agent hosts."""
        return await self._request(params, MessageMcpResponse)

    async def mcp_message_notification(self, params: MessageMcpNotification) -> None:
        """``mcp/message`` (unstable notification): an MCP notification over ACP."""
        await self._notify(params)

    async def ext_method(self, method: str, params: dict[str, Any]) -> JsonValue:
        """An extension request: the wire method ``_<method>`` (``method`` has no leading underscore).

        Return any JSON value. The default answers ``-32601``.
        """
        return await self._ext_request(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """An extension notification: the wire method ``_<method>``. The default ignores it."""
        await self._ext_notify(method, params)


class ClientTrait(Peer):
    """The client (editor) side of ACP: one async method per method an agent sends to a client.

    Subclass it, override what your client implements, and serve it with
    :class:`~acpio.traits.ClientSideConnection`, which gives the client the agent's methods
    (``initialize``, ``new_session``, ``prompt``...). Notifications (:meth:`session_update`) run in
    arrival order, each before the next message is read, so every update of a prompt turn has
    been handled when ``prompt()`` returns; they must not await a response from the agent.
    Requests run in their own task. A request you do not override answers ``-32601``.
    """

    __slots__ = ()

    def on_connect(self, conn: ClientSideConnection) -> None:
        """Called once by :class:`~acpio.traits.ClientSideConnection` with the connection to the agent.

        The default does nothing.
        """

    async def session_update(self, params: SessionNotification) -> None:
        """``session/update`` (notification): progress of a session (message chunks, tool calls, plans...)."""
        await self._notify(params)

    async def request_permission(self, params: RequestPermissionRequest) -> RequestPermissionResponse:
        """``session/request_permission``: ask the user to allow a tool call; answer with the outcome."""
        return await self._request(params, RequestPermissionResponse)

    async def read_text_file(self, params: ReadTextFileRequest) -> ReadTextFileResponse:
        """``fs/read_text_file``: a text file's content, as the editor sees it (``fs.readTextFile``)."""
        return await self._request(params, ReadTextFileResponse)

    async def write_text_file(self, params: WriteTextFileRequest) -> WriteTextFileResponse:
        """``fs/write_text_file``: write a text file (``fs.writeTextFile``)."""
        return await self._request(params, WriteTextFileResponse)

    async def create_terminal(self, params: CreateTerminalRequest) -> CreateTerminalResponse:
        """``terminal/create``: start a command in a new terminal; answer with its id (``terminal``)."""
        return await self._request(params, CreateTerminalResponse)

    async def terminal_output(self, params: TerminalOutputRequest) -> TerminalOutputResponse:
        """``terminal/output``: the terminal's output so far, and its exit status if it ended."""
        return await self._request(params, TerminalOutputResponse)

    async def wait_for_terminal_exit(self, params: WaitForTerminalExitRequest) -> WaitForTerminalExitResponse:
        """``terminal/wait_for_exit``: wait until the terminal's command ends; its exit status."""
        return await self._request(params, WaitForTerminalExitResponse)

    async def kill_terminal(self, params: KillTerminalRequest) -> KillTerminalResponse:
        """``terminal/kill``: kill the terminal's command, keeping the terminal."""
        return await self._request(params, KillTerminalResponse)

    async def release_terminal(self, params: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """``terminal/release``: kill the command if it runs and free the terminal."""
        return await self._request(params, ReleaseTerminalResponse)

    async def create_elicitation(self, params: CreateElicitationRequest) -> CreateElicitationResponse:
        """``elicitation/create``: ask the user for structured input (``elicitation``)."""
        return await self._request(params, CreateElicitationResponse)

    async def complete_elicitation(self, params: CompleteElicitationNotification) -> None:
        """``elicitation/complete`` (notification): a URL-mode elicitation finished."""
        await self._notify(params)

    async def auth_status_update(self, params: AuthStatusUpdateNotification) -> None:
        """``auth/status_update`` (unstable notification): the agent's authentication status changed."""
        await self._notify(params)

    async def mcp_message(self, params: MessageMcpRequest) -> MessageMcpResponse:
        """``mcp/message`` (unstable): an MCP request over ACP, to an MCP server the client hosts."""
        return await self._request(params, MessageMcpResponse)

    async def mcp_message_notification(self, params: MessageMcpNotification) -> None:
        """``mcp/message`` (unstable notification): an MCP notification over ACP."""
        await self._notify(params)

    async def ext_method(self, method: str, params: dict[str, Any]) -> JsonValue:
        """An extension request: the wire method ``_<method>`` (``method`` has no leading underscore).

        Return any JSON value. The default answers ``-32601``.
        """
        return await self._ext_request(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """An extension notification: the wire method ``_<method>``. The default ignores it."""
        await self._ext_notify(method, params)
