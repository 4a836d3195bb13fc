"""What a session reads: the agent's updates and requests, typed, and the end of a turn; what a prompt is."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeAlias, TypeVar, cast

from acpio.jsonrpc import NotificationDispatch, RequestDispatch
from acpio.schema import (
    AgentMessageChunk,
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    SessionUpdate,
    StopReason,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

if TYPE_CHECKING:
    from acpio.jsonrpc import Responder

#: What :meth:`ActiveSession.send_prompt` takes: text, one content block, or several.
PromptContent: TypeAlias = str | ContentBlock | Iterable[ContentBlock]

UPDATE_METHOD = SessionNotification.METHOD


class SessionMessage:
    """A message from the agent for this session: a ``session/update`` notification, or a request.

    :attr:`dispatch` is the message itself. A request that no builder handler claimed must be
    answered: the ones ACP defines (``session/request_permission``, ``fs/read_text_file``...) come
    as an :class:`AgentRequestMessage` subclass, typed and answerable in place
    (``message.respond(...)``); others (extension methods) through ``message.dispatch.responder``.
    :attr:`notification`, :attr:`update` and :attr:`text` parse a ``session/update`` on first use.
    """

    __slots__ = ("_notification", "_parsed", "dispatch")

    def __init__(self, dispatch: RequestDispatch | NotificationDispatch) -> None:
        self.dispatch = dispatch
        self._parsed = False
        self._notification: SessionNotification | None = None

    def __repr__(self) -> str:
        return f"SessionMessage({self.dispatch!r})"

    @property
    def method(self) -> str:
        """The wire method, for example ``"session/update"``."""
        return self.dispatch.method

    @property
    def is_request(self) -> bool:
        """Whether the agent waits for an answer (through ``dispatch.responder``)."""
        return type(self.dispatch) is RequestDispatch

    @property
    def notification(self) -> SessionNotification | None:
        """The parsed ``session/update`` notification; ``None`` for other methods.

        Raises :class:`~acpio.InvalidParams` if the agent sent an update that does not match the schema.
        """
        if not self._parsed:
            if self.dispatch.method == UPDATE_METHOD and type(self.dispatch) is NotificationDispatch:
                self._notification = self.dispatch.parse(SessionNotification)
            self._parsed = True
        return self._notification

    @property
    def update(self) -> SessionUpdate | None:
        """The update of a ``session/update`` (``AgentMessageChunk``, ``ToolCall``...); else ``None``."""
        notification = self.notification
        return notification.update if notification is not None else None

    @property
    def text(self) -> str | None:
        """The text of an ``agent_message_chunk`` carrying text content; ``None`` for anything else."""
        update = self.update
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent):
            return update.content.text
        return None


_ReqT = TypeVar("_ReqT")
_RespT = TypeVar("_RespT")


class AgentRequestMessage(SessionMessage, Generic[_ReqT, _RespT]):
    """A request the agent sent for this session, typed and answered in place.

    :attr:`request` is the typed request (parsed on first use); :meth:`respond` takes the request's
    response type, so a type checker checks the answer. One subclass per request ACP lets an agent
    send a client; narrow with ``isinstance``::

        item = await session.read_update()
        if isinstance(item, ReadTextFileMessage):
            item.respond(ReadTextFileResponse(content=read_the_file(item.request.path)))
        elif isinstance(item, RequestPermissionMessage):
            item.respond(RequestPermissionResponse(outcome=CancelledPermissionOutcome()))

    The agent waits for the answer, so every request read must be answered (an error will do).
    The first answer wins; later ones are ignored, as is an answer to a permission request the
    connection already answered ``cancelled`` (see :meth:`ActiveSession.cancel`).
    """

    __slots__ = ("_request",)

    #: The typed request class (``ReadTextFileRequest``...).
    REQUEST: ClassVar[type[Any]]

    def __init__(self, dispatch: RequestDispatch) -> None:
        super().__init__(dispatch)
        self._request: _ReqT | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dispatch!r})"

    @property
    def request(self) -> _ReqT:
        """The typed request; raises :class:`~acpio.InvalidParams` if the agent's params do not match it.

        Answer such a request with that error: ``message.respond_with_error(exc)``.
        """
        if self._request is None:
            self._request = cast(_ReqT, self.dispatch.parse(type(self).REQUEST))
        return self._request

    @property
    def responder(self) -> Responder[_RespT]:
        """The responder that answers the request (what :meth:`respond` uses)."""
        return cast(RequestDispatch, self.dispatch).responder

    @property
    def answered(self) -> bool:
        """Whether the request has been answered (by this message, or ``cancelled`` by the connection)."""
        return self.responder.done

    @property
    def cancelled(self) -> bool:
        """Whether the answer is no longer wanted: the agent cancelled the request, or the client the turn."""
        return self.responder.cancelled

    def respond(self, response: _RespT) -> None:
        """Answer the agent with ``response`` (the request's response type)."""
        self.responder.respond(response)

    def respond_with_error(self, error: BaseException) -> None:
        """Answer the agent with ``error``; anything but a :class:`~acpio.RequestError` goes as ``-32603``."""
        self.responder.respond_with_error(error)


class RequestPermissionMessage(AgentRequestMessage[RequestPermissionRequest, RequestPermissionResponse]):
    """``session/request_permission``: answer with the option chosen, or the ``cancelled`` outcome."""

    __slots__ = ()
    REQUEST = RequestPermissionRequest


class ReadTextFileMessage(AgentRequestMessage[ReadTextFileRequest, ReadTextFileResponse]):
    """``fs/read_text_file`` (only if the client advertised ``fs.readTextFile``): answer with the text."""

    __slots__ = ()
    REQUEST = ReadTextFileRequest


class WriteTextFileMessage(AgentRequestMessage[WriteTextFileRequest, WriteTextFileResponse]):
    """``fs/write_text_file`` (only if the client advertised ``fs.writeTextFile``): write, then answer."""

    __slots__ = ()
    REQUEST = WriteTextFileRequest


class CreateTerminalMessage(AgentRequestMessage[CreateTerminalRequest, CreateTerminalResponse]):
    """``terminal/create`` (only if the client advertised ``terminal``): start a command, answer its id."""

    __slots__ = ()
    REQUEST = CreateTerminalRequest


class TerminalOutputMessage(AgentRequestMessage[TerminalOutputRequest, TerminalOutputResponse]):
    """``terminal/output``: answer with what the command wrote so far (and its exit status, if it ended)."""

    __slots__ = ()
    REQUEST = TerminalOutputRequest


class WaitForTerminalExitMessage(
    AgentRequestMessage[WaitForTerminalExitRequest, WaitForTerminalExitResponse]
):
    """``terminal/wait_for_exit``: answer once the command ended, with its exit status."""

    __slots__ = ()
    REQUEST = WaitForTerminalExitRequest


class KillTerminalMessage(AgentRequestMessage[KillTerminalRequest, KillTerminalResponse]):
    """``terminal/kill``: kill the command, keep the terminal."""

    __slots__ = ()
    REQUEST = KillTerminalRequest


class ReleaseTerminalMessage(AgentRequestMessage[ReleaseTerminalRequest, ReleaseTerminalResponse]):
    """``terminal/release``: kill the command if it still runs, forget the terminal."""

    __slots__ = ()
    REQUEST = ReleaseTerminalRequest


class CreateElicitationMessage(AgentRequestMessage[CreateElicitationRequest, CreateElicitationResponse]):
    """``elicitation/create`` (only if the client advertised ``elicitation``): ask the user, answer."""

    __slots__ = ()
    REQUEST = CreateElicitationRequest


_REQUEST_MESSAGES: Final[dict[str, type[AgentRequestMessage[Any, Any]]]] = {
    kind.REQUEST.METHOD: kind
    for kind in (
        RequestPermissionMessage,
        ReadTextFileMessage,
        WriteTextFileMessage,
        CreateTerminalMessage,
        TerminalOutputMessage,
        WaitForTerminalExitMessage,
        KillTerminalMessage,
        ReleaseTerminalMessage,
        CreateElicitationMessage,
    )
}


def session_message(dispatch: RequestDispatch | NotificationDispatch) -> SessionMessage:
    """The item a session reads: typed for the requests ACP defines, plain for the rest."""
    if type(dispatch) is RequestDispatch:
        kind = _REQUEST_MESSAGES.get(dispatch.method)
        if kind is not None:
            return kind(dispatch)
    return SessionMessage(dispatch)


class TurnEnded:
    """The end of a prompt turn: the agent answered ``session/prompt``.

    It is read after every update the agent sent during the turn.
    """

    __slots__ = ("response",)

    def __init__(self, response: PromptResponse) -> None:
        self.response = response

    def __repr__(self) -> str:
        return f"TurnEnded(stop_reason={self.stop_reason!r})"

    @property
    def stop_reason(self) -> StopReason | str:
        """Why the turn ended (``end_turn``, ``cancelled``...; an unknown value is kept as a string)."""
        return self.response.stop_reason


QueueItem: TypeAlias = "SessionMessage | TurnEnded | BaseException"


def content_blocks(prompt: PromptContent) -> list[ContentBlock]:
    """The content blocks of a prompt given as text, one block or several; ``TypeError`` for anything else."""
    if isinstance(prompt, str):
        return [TextContent(text=prompt)]
    if hasattr(prompt, "model_dump"):  # one content block model
        return [cast(ContentBlock, prompt)]
    blocks = list(prompt)
    for block in blocks:
        if not hasattr(block, "model_dump"):
            raise TypeError(
                f"send_prompt() takes text, a content block or an iterable of content blocks; got "
                f"{block!r} in the iterable. Wrap text as TextContent(text=...)."
            )
    return blocks
