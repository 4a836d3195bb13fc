"""How an :class:`~acpio.app.AgentApp` takes a plain ``session/prompt`` without building a model.

Most prompts are text: ``{"sessionId": ..., "prompt": [{"type": "text", "text": ...}, ...]}``.
When the params are exactly that (each block holds only those two keys; ``_meta`` an object, if
any) and the app has nothing that needs the typed values (no store, no attaching: see
``acpio.app.handshake``), the turn starts from the raw params: :func:`plain_prompt` reads them into
a :class:`RawPrompt`, whose models are built when user code first reads them
(:attr:`~acpio.app.Turn.prompt`, :attr:`~acpio.app.Exchange.prompt`), while
:attr:`~acpio.app.Turn.text` reads the raw text; the turn's answer is written as the models
would (:func:`~acpio.app.protocol.plain_stop_answer`). Anything else takes the typed path, with
its answers and errors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

from acpio import schema as acp

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue

__all__ = ["RawPrompt", "plain_prompt"]

_PROMPT_KEYS = frozenset({"sessionId", "prompt", "_meta"})
_TEXT_BLOCK_KEYS = {"type", "text"}


class RawPrompt(Sequence["acp.ContentBlock"]):  # quoted: the base would create the class at import
    """A prompt of text blocks, kept as their texts: the models are built on first read, once."""

    __slots__ = ("_models", "texts")

    def __init__(self, texts: Sequence[str]) -> None:
        #: The text of each block, in order.
        self.texts = tuple(texts)
        self._models: tuple[acp.ContentBlock, ...] | None = None

    def models(self) -> tuple[acp.ContentBlock, ...]:
        """The blocks as the typed path validates them (built on the first call)."""
        if self._models is None:
            blocks = [{"type": "text", "text": text} for text in self.texts]
            self._models = tuple(acp.PromptRequest.model_validate({"sessionId": "", "prompt": blocks}).prompt)
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
    if type(params) is not dict or not params.keys() <= _PROMPT_KEYS:
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
