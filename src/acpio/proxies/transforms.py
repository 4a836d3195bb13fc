"""A per-session text-stream hook for proxies: the agent's text through a transform with lookahead.

:func:`transform_agent_text` adds handlers to a ``Proxy.builder()``: each agent message or
thought chunk's text goes through a :class:`~acpio.redaction.TextTransform` of its own (one per
session, kind and message id), so a transform that holds back a tail (a
:class:`~acpio.redaction.Redactor`'s stream) sees the text whole across chunk boundaries. What
it holds back is sent, as one more chunk, before any other update of the session, before any
request of the agent naming the session (a ``session/request_permission``, an elicitation, an
``fs/*`` or ``terminal/*`` request: the client reads the text before the question that followed
it) and before the answer to ``session/prompt`` (the end of the turn on ACP v1; on v2 the turn
ends with a state update, which flushes too). A chunk whose text is all held back is not sent.

The hook sees the agent's requests first only if it is added before the handlers that answer or
forward them: call it on the builder before adding those.

Both ACP versions: v1 ``session/update`` chunks and v2 ``agent_message_chunk``/``agent_thought_chunk``
updates (a v2 whole-message update is transformed whole).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from acpio import schema as acp
from acpio.errors import AcpError
from acpio.jsonrpc import Builder, Connection, Dispatch, Forward, RequestDispatch, Responder, Unhandled
from acpio.redaction import Redactor, TextTransform
from acpio.roles import Agent, Client, Proxy
from acpio.schema import v2

__all__ = ["redacting_proxy", "transform_agent_text"]

_V1_CHUNKS: Final = (acp.AgentMessageChunk, acp.AgentThoughtChunk)
_V2_CHUNKS: Final = (v2.AgentMessageChunk, v2.AgentThoughtChunk)
_V2_WHOLE: Final = (v2.AgentMessage, v2.AgentThought)
_Key = tuple[str, str, str | None]
#: A chunk notification of either version (the last of a stream is kept to carry its flushed tail).
_Chunk = acp.SessionNotification | v2.UpdateSessionNotification


class _Streams:
    """The transforms of the open text streams, and the last chunk of each (to send what is flushed in)."""

    def __init__(self, make: Callable[[], TextTransform]) -> None:
        self.make = make
        self.open: dict[_Key, tuple[TextTransform, _Chunk]] = {}

    def feed(self, key: _Key, text: str, notification: _Chunk) -> str:
        stream = self.open[key][0] if key in self.open else self.make()
        self.open[key] = (stream, notification.model_copy(deep=True))
        return stream.feed(text)

    def pass_chunk(
        self,
        notification: _Chunk,
        content: acp.TextContent | v2.TextContent,
        kind: str,
        message_id: str | None,
    ) -> Forward | None:
        """Feed a text chunk to its stream: the chunk with what comes out, or ``None`` if all is held back."""
        text = self.feed((notification.session_id, kind, message_id), content.text, notification)
        if not text:
            return None
        content.text = text
        return Forward(notification)

    def flush(self, session_id: str, cx: Connection) -> None:
        """Send what the streams of ``session_id`` hold, each as a chunk like its last one."""
        for key in [key for key in self.open if key[0] == session_id]:
            stream, last = self.open.pop(key)
            rest = stream.flush()
            content = getattr(last.update, "content", None)
            if rest and isinstance(content, acp.TextContent | v2.TextContent):  # only text chunks are fed
                content.text = rest
                cx.send_notification_to(Client, last)


def transform_agent_text(app: Builder[Any], make: Callable[[], TextTransform]) -> None:
    """Pass the agent's text chunks through ``make()``'s transforms, one per stream (module docstring)."""
    streams = _Streams(make)

    @app.on_notification(peer=Agent)
    async def chunk_v1(notification: acp.SessionNotification, cx: Connection) -> Forward | None:
        update, session = notification.update, notification.session_id
        if isinstance(update, _V1_CHUNKS) and isinstance(update.content, acp.TextContent):
            return streams.pass_chunk(notification, update.content, update.session_update, update.message_id)
        streams.flush(session, cx)
        return Forward(notification)

    @app.on_notification(peer=Agent)
    async def chunk_v2(notification: v2.UpdateSessionNotification, cx: Connection) -> Forward | None:
        update, session = notification.update, notification.session_id
        if isinstance(update, _V2_CHUNKS) and isinstance(update.content, v2.TextContent):
            return streams.pass_chunk(notification, update.content, update.session_update, update.message_id)
        streams.flush(session, cx)
        if isinstance(update, _V2_WHOLE):
            for block in update.content if isinstance(update.content, list) else ():
                if isinstance(block, v2.TextContent):
                    whole = make()
                    block.text = whole.feed(block.text) + whole.flush()
        return Forward(notification)

    @app.on_dispatch(peer=Agent)
    async def flush_before_request(message: Dispatch, cx: Connection) -> Unhandled:
        session = message.session_id if type(message) is RequestDispatch else None
        if session is not None:  # the client reads the session's text before the agent's question
            streams.flush(session, cx)
        return Unhandled(message)

    @app.on_request(peer=Client)
    async def prompt_v1(
        request: acp.PromptRequest, responder: Responder[acp.PromptResponse], cx: Connection
    ) -> None:
        sent = cx.send_request_to(Agent, request)
        sent.forward_cancellation_from(responder)

        async def answered(result: acp.PromptResponse | AcpError) -> None:
            streams.flush(request.session_id, cx)  # the turn ends: nothing stays held back
            if isinstance(result, acp.PromptResponse):
                responder.respond(result)
            else:
                responder.respond_with_error(result)

        sent.on_receiving_result(answered)


def redacting_proxy(
    patterns: list[str], *, replacement: str = "[REDACTED]", name: str = "redact"
) -> Builder[Any]:
    """A proxy replacing what ``patterns`` (regular expressions) match in the agent's text."""
    redactor = Redactor(patterns, replacement=replacement)
    app = Proxy.builder(name=name)
    transform_agent_text(app, redactor.stream)
    return app
