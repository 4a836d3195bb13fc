"""What a session reads: the agent's updates and requests, typed, and the end of a turn; what a prompt is."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeAlias, TypeVar, cast

from acpio.jsonrpc import NotificationDispatch, RequestDispatch
from acpio.schema import (
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
from acpio.session.permission_question import v1_permission_request

if TYPE_CHECKING:
    from acpio.client.permissions import Outcome
    from acpio.jsonrpc import Responder
    from acpio.schema import v2
    from acpio.session.turn_view import TurnEvent

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

    __slots__ = ("_notification", "_notification_v2", "_parsed", "dispatch", "event", "protocol_version")

    def __init__(self, dispatch: RequestDispatch | NotificationDispatch, protocol_version: int = 1) -> None:
        self.dispatch = dispatch
        #: The ACP version of the connection it came on: its updates are parsed with that version's models.
        self.protocol_version = protocol_version
        #: What it changed in the session's :class:`~acpio.session.turn_view.TurnView` (text added, a
        #: tool call updated, the state...), the same for both versions; set when the session reads
        #: it (on v1 once ``session.view`` was asked for), ``None`` for requests and for updates the
        #: view does not show.
        self.event: TurnEvent | None = None
        self._parsed = False
        self._notification: SessionNotification | None = None
        self._notification_v2: v2.UpdateSessionNotification | None = None

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
        """The parsed ``session/update`` notification of an ACP v1 session; ``None`` for other methods.

        ``None`` on a v2 session too: read :attr:`notification_v2` there (or :attr:`event`, the same
        for both). Raises :class:`~acpio.InvalidParams` if the agent sent an update that does not
        match the schema.
        """
        self._parse()
        return self._notification

    @property
    def notification_v2(self) -> v2.UpdateSessionNotification | None:
        """The parsed ``session/update`` notification of an ACP v2 session; ``None`` elsewhere."""
        self._parse()
        return self._notification_v2

    @property
    def update(self) -> SessionUpdate | None:
        """The update of a v1 ``session/update`` (``AgentMessageChunk``, ``ToolCall``...); else ``None``."""
        notification = self.notification
        return notification.update if notification is not None else None

    @property
    def update_v2(self) -> v2.SessionUpdate | None:
        """The update of a v2 ``session/update`` (a state, a ``ToolCallUpdate``...); else ``None``."""
        notification = self.notification_v2
        return notification.update if notification is not None else None

    @property
    def text(self) -> str | None:
        """The text of an ``agent_message_chunk`` carrying text content (either version); else ``None``."""
        from acpio.session.turn_view import text_chunk

        dispatch = self.dispatch
        if type(dispatch) is NotificationDispatch and dispatch.method == UPDATE_METHOD:
            chunk = text_chunk(dispatch.params, self.protocol_version)
            if chunk is not None:  # the common case, read without building the models
                return chunk[2] if chunk[0] == "agent" else None
        update: object = self.update_v2 if self.protocol_version == 2 else self.update
        if getattr(update, "session_update", None) != "agent_message_chunk":
            return None
        content = getattr(update, "content", None)
        text = getattr(content, "text", None) if getattr(content, "type", None) == "text" else None
        return text if isinstance(text, str) else None

    def _parse(self) -> None:
        if self._parsed:
            return
        if self.dispatch.method == UPDATE_METHOD and type(self.dispatch) is NotificationDispatch:
            if self.protocol_version == 2:
                from acpio.schema import v2

                self._notification_v2 = self.dispatch.parse(v2.UpdateSessionNotification)
            else:
                self._notification = self.dispatch.parse(SessionNotification)
        self._parsed = True


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

    def __init__(self, dispatch: RequestDispatch, protocol_version: int = 1) -> None:
        super().__init__(dispatch, protocol_version)
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


class RequestPermissionV2Message(
    AgentRequestMessage["v2.RequestPermissionRequest", "v2.RequestPermissionResponse"]
):
    """ACP v2 ``session/request_permission``: a ``title``, an optional ``description`` and ``subject``.

    The subject is the tool call (``{"type": "tool_call", "toolCall": ...}``) or the command
    (``{"type": "command", "command", "cwd"}``) asked about. Answer as on v1, with the option
    chosen or the ``cancelled`` outcome.
    """

    __slots__ = ()

    @property
    def request(self) -> v2.RequestPermissionRequest:
        """The typed v2 request; raises :class:`~acpio.InvalidParams` if the params do not match it."""
        if self._request is None:
            from acpio.schema import v2

            self._request = self.dispatch.parse(v2.RequestPermissionRequest)
        return self._request

    def as_v1(self) -> RequestPermissionRequest:
        """The request in v1's shape, for what decides v1 requests (permission policies, callbacks).

        ``toolCall`` is the subject's tool call; for a command (or no subject) a tool call named
        by the subject's ``toolCallId`` (else ``""``) with the request's title. Options are the same
        (:func:`~acpio.session.permission_question.v1_permission_request`).
        """
        return v1_permission_request(self.request)

    def respond_outcome(self, outcome: Outcome) -> None:
        """Answer with ``outcome`` (the v1 outcome types: the wire is the same on v2)."""
        self.respond(v2_permission_answer(outcome))


def v2_permission_answer(outcome: Outcome) -> v2.RequestPermissionResponse:
    """The v2 answer to a permission question decided with v1's outcome types (the wire is the same)."""
    from acpio.schema import v2

    return v2.RequestPermissionResponse.model_validate(RequestPermissionResponse(outcome=outcome).to_wire())


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


def session_message(
    dispatch: RequestDispatch | NotificationDispatch, protocol_version: int = 1
) -> SessionMessage:
    """The item a session reads: typed for the requests ACP defines, plain for the rest.

    On a v2 session, ``session/request_permission`` is a :class:`RequestPermissionV2Message`; the
    v1-only client methods (``fs/*``, ``terminal/*``) are plain messages there.
    """
    if type(dispatch) is RequestDispatch:
        if protocol_version == 2:
            if dispatch.method == RequestPermissionRequest.METHOD:
                return RequestPermissionV2Message(dispatch, 2)
            return SessionMessage(dispatch, 2)
        kind = _REQUEST_MESSAGES.get(dispatch.method)
        if kind is not None:
            return kind(dispatch)
    return SessionMessage(dispatch, protocol_version)


class TurnEnded:
    """The end of a prompt turn, read after every update the agent sent during it.

    On ACP v1 the agent answered ``session/prompt``: :attr:`response` is that answer. On v2 the
    answer only accepted the prompt (:attr:`accepted`, with the user message's id); the turn ended
    with an idle ``state_update``, whose stop reason :attr:`stop_reason` gives.
    """

    __slots__ = ("_stop_reason", "accepted", "response")

    def __init__(
        self,
        response: PromptResponse | None,
        *,
        stop_reason: StopReason | str | None = None,
        accepted: v2.PromptResponse | None = None,
    ) -> None:
        #: The v1 answer to ``session/prompt``; ``None`` on v2.
        self.response = response
        #: The v2 answer to ``session/prompt`` (it names the user message); ``None`` on v1.
        self.accepted = accepted
        self._stop_reason = stop_reason

    def __repr__(self) -> str:
        return f"TurnEnded(stop_reason={self.stop_reason!r})"

    @property
    def stop_reason(self) -> StopReason | str | None:
        """Why the turn ended (``end_turn``, ``cancelled``...; an unknown value is kept as a string).

        ``None`` only on v2, when the idle ``state_update`` gave no stop reason.
        """
        return self.response.stop_reason if self.response is not None else self._stop_reason


class PromptAccepted:
    """In a v2 session's queue: the agent accepted a prompt (the turn goes on until an idle state)."""

    __slots__ = ("response",)

    def __init__(self, response: v2.PromptResponse) -> None:
        self.response = response


QueueItem: TypeAlias = "SessionMessage | TurnEnded | PromptAccepted | BaseException"


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
