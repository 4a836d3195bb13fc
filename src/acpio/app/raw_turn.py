"""How an :class:`~acpio.app.AgentApp` takes a plain ``session/prompt`` without building a model.

Most prompts are text: ``{"sessionId": ..., "prompt": [{"type": "text", "text": ...}, ...]}``. When
the params are exactly that (each block holds only those two keys; ``_meta`` an object, if any) and
the app has nothing that needs the typed values (no attaching: see ``acpio.app.handshake``), the
turn starts from the raw params: :func:`plain_prompt` reads them into a :class:`RawPrompt`, whose
models are built when user code first reads them (:attr:`~acpio.app.Turn.prompt`,
:attr:`~acpio.app.Exchange.prompt`), while :attr:`~acpio.app.Turn.text` reads the raw text; the
turn's answer is written as the models would (:func:`~acpio.app.protocol.turn_answer`). A
``session/cancel`` whose params hold only the string ``sessionId`` (and ``_meta``) is taken raw too.
:class:`PlainTurns` is how the app registers both; a store keeps what the user said as its models
would (:func:`user_chunks`). Anything else takes the typed path, with its answers and errors. On ACP
v2 (``acpio.app.protocol_v2``) a plain prompt starts its turn the same way, whatever the app has:
the user's message is recorded and echoed as JSON, and the turn's end is a ``state_update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, overload

from acpio import schema as acp
from acpio.jsonrpc.messages import encode_value

if TYPE_CHECKING:
    from acpio.jsonrpc import Connection, JsonValue, Responder

__all__ = ["PlainTurns", "RawPrompt", "plain_params", "plain_prompt", "user_chunk", "user_chunks"]

#: Starts a turn: ``start(session_id, prompt, responder, cx)`` (raises the typed path's errors).
StartTurn: TypeAlias = "Callable[[str, Sequence[acp.ContentBlock], Responder[Any], Connection], None]"
#: Cancels a session's turn, if it has one: ``await cancel(session_id, cx)``.
CancelTurn: TypeAlias = "Callable[[str, Connection], Awaitable[None]]"

_CANCEL_KEYS = frozenset({"sessionId", "_meta"})
_PROMPT_KEYS = frozenset({"sessionId", "prompt", "_meta"})
_TEXT_BLOCK_KEYS = {"type", "text"}


class RawPrompt(Sequence["acp.ContentBlock"]):  # quoted: the base would create the class at import
    """A prompt of text blocks, kept as their texts: the models are built on first read, once."""

    __slots__ = ("_models", "texts")

    def __init__(self, texts: Sequence[str]) -> None:
        #: The text of each block, in order.
        self.texts = tuple(texts)
        self._models: tuple[acp.ContentBlock, ...] | None = None

    def wire(self) -> list[dict[str, Any]]:
        """The blocks as JSON, as their models write them: ``{"type": "text", "text": ...}`` each."""
        return [{"type": "text", "text": text} for text in self.texts]

    def models(self) -> tuple[acp.ContentBlock, ...]:
        """The blocks as the typed path validates them (built on the first call)."""
        if self._models is None:
            params = {"sessionId": "", "prompt": self.wire()}
            self._models = tuple(acp.PromptRequest.model_validate(params).prompt)
        return self._models

    def __len__(self) -> int:
        return len(self.texts)

    def __iter__(self) -> Iterator[acp.ContentBlock]:
        return iter(self.models())

    @overload
    def __getitem__(self, index: int) -> acp.ContentBlock: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[acp.ContentBlock]: ...
    def __getitem__(self, index: int | slice) -> acp.ContentBlock | Sequence[acp.ContentBlock]:
        return self.models()[index]


def plain_prompt(params: JsonValue) -> tuple[str, RawPrompt] | None:
    """The session id and the text blocks of plainly well-formed ``session/prompt`` params, else ``None``."""
    if not plain_params(params, _PROMPT_KEYS):
        return None
    session_id, blocks, meta = params.get("sessionId"), params.get("prompt"), params.get("_meta", {})
    if type(session_id) is not str or type(blocks) is not list or not blocks or type(meta) is not dict:
        return None
    texts: list[str] = []
    for block in blocks:
        if type(block) is not dict or block.keys() != _TEXT_BLOCK_KEYS or block["type"] != "text":
            return None
        text = block["text"]
        if type(text) is not str:
            return None
        texts.append(text)
    return session_id, RawPrompt(texts)


class PlainTurns:
    """An app's ``session/prompt`` and ``session/cancel``, taken from their raw params when plain.

    Registered as the raw answers of the app's handlers (:class:`~acpio.app.handshake.AppHandler`)
    when it has nothing that needs the models; what they do not take goes to the typed handlers.
    """

    __slots__ = ("_cancel", "_start")

    def __init__(self, start: StartTurn, cancel: CancelTurn) -> None:
        self._start = start
        self._cancel = cancel

    async def prompt(self, params: JsonValue, responder: Responder[Any], cx: Connection) -> bool:
        """Start a turn from ``session/prompt``'s raw params, when they are a plain text prompt."""
        plain = plain_prompt(params)
        if plain is None:
            return False
        self._start(*plain, responder, cx)
        return True

    async def cancel(self, params: JsonValue, cx: Connection) -> bool:
        """Cancel from ``session/cancel``'s raw params, when they hold only the string ``sessionId``."""
        session_id = params.get("sessionId") if plain_params(params, _CANCEL_KEYS) else None
        if type(session_id) is not str:
            return False
        await self._cancel(session_id, cx)
        return True


def plain_params(params: JsonValue, keys: frozenset[str]) -> TypeGuard[dict[str, Any]]:
    """Whether ``params`` is an object whose keys are among ``keys`` (wire spellings only)."""
    return type(params) is dict and params.keys() <= keys


def user_chunk(content: dict[str, Any]) -> dict[str, Any]:
    """v1's ``UserMessageChunk`` of a block's JSON ``content``, as its model writes it."""
    return {"content": content, "sessionUpdate": "user_message_chunk"}


def user_chunks(session_id: str, prompt: Sequence[acp.ContentBlock]) -> list[bytes]:
    """What the user said, as a store keeps it: each block's v1 ``session/update`` params.

    A plain prompt's as the JSON its ``UserMessageChunk`` models write (their text-chunk template
    writes the same bytes), without building them.
    """
    if isinstance(prompt, RawPrompt):
        chunks = [user_chunk(block) for block in prompt.wire()]
        return [encode_value({"sessionId": session_id, "update": chunk}) for chunk in chunks]
    notes = (
        acp.SessionNotification(session_id=session_id, update=acp.UserMessageChunk(content=b)) for b in prompt
    )
    return [encode_value(note) for note in notes]
