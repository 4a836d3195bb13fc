"""One typed :class:`Usage` per turn, read from whichever place the agent reports it in.

ACP has standard places for usage, and agents that predate them report it in their own ways:

* ``usage_update`` session updates (v1 and v2): the tokens in the context (``used``) out of the
  window (``size``), and the session's cumulative ``cost``;
* ``PromptResponse.usage`` (v1, unstable) and the ``usage`` of v2's idle ``state_update``: the
  turn's tokens (input, output, thought, cache reads and writes, total);
* private dialects, read only for what the standard places left unset (:data:`DIALECTS`):
  gemini-cli's and codex-acp's ``_meta.quota``, kimi-cli's ``StatusUpdate`` payload.

:class:`UsageMeter` reads them from the wire (the JSON objects as they came), so a frame of any
agent can be fed to it as recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

__all__ = [
    "DIALECTS",
    "Usage",
    "UsageMeter",
    "kimi_status",
    "quota_meta",
    "standard_tokens",
    "standard_usage_update",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """What a turn cost, as far as the agent said; ``None`` for what it did not report.

    Token counts are the turn's (ACP's ``PromptResponse.usage``: not the session's running total).
    ``context_used`` and ``context_size`` are the tokens in the context window and its size at the
    end of the turn; ``cost`` (in ``currency``: ``"USD"``, or a unit such as ``"credits"``) is the
    session's cumulative cost, as ``usage_update`` reports it. ``sources`` names where the numbers
    came from, in the order they were read: ``usage_update``, ``prompt_response.usage``,
    ``state_update.usage`` (v2), or a private dialect (``gemini-cli:_meta.quota``,
    ``codex-acp:_meta.quota``, ``kimi-cli:StatusUpdate``).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None
    total_tokens: int | None = None
    context_used: int | None = None
    context_size: int | None = None
    cost: float | None = None
    currency: str | None = None
    sources: tuple[str, ...] = ()


_TOKEN_FIELDS: Final = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "thoughtTokens": "thought_tokens",
    "cachedReadTokens": "cached_read_tokens",
    "cachedWriteTokens": "cached_write_tokens",
    "totalTokens": "total_tokens",
}

#: What a reader found: :class:`Usage` field names and their values.
Reading: TypeAlias = dict[str, Any]


def _count(value: object) -> int | None:
    """A token count: a non-negative integer (a float with no fraction is taken); else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _object(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _counts(source: Mapping[str, Any] | None, names: Mapping[str, str]) -> Reading:
    """The counts ``source`` has under the wire ``names``, as :class:`Usage` fields."""
    if source is None:
        return {}
    found: Reading = {}
    for wire, name in names.items():
        count = _count(source.get(wire))
        if count is not None:
            found[name] = count
    return found


def standard_tokens(usage: object) -> Reading:
    """ACP's ``Usage`` object (``PromptResponse.usage``, v2's idle state): the turn's token counts."""
    return _counts(_object(usage), _TOKEN_FIELDS)


def standard_usage_update(update: Mapping[str, Any]) -> Reading:
    """A ``usage_update``: the context window and the cumulative cost."""
    found = _counts(update, {"used": "context_used", "size": "context_size"})
    cost = _object(update.get("cost"))
    if cost is not None:
        amount = cost.get("amount")
        if isinstance(amount, int | float) and not isinstance(amount, bool):
            found["cost"] = float(amount)
            currency = cost.get("currency")
            if isinstance(currency, str):
                found["currency"] = currency
    return found


# --- private dialects ------------------------------------------------------------------------------

#: ``_meta.quota.token_count`` keys: gemini-cli writes snake_case, codex-acp camelCase (its
#: ``inputTokens`` leaves out the cached ones, its ``outputTokens`` includes the reasoning ones).
_QUOTA_KEYS: Final = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cachedInputTokens": "cached_read_tokens",
    "reasoningOutputTokens": "thought_tokens",
    "totalTokens": "total_tokens",
}

#: kimi-cli's ``StatusUpdate.token_usage``: ``input_other`` is the input not read from the cache.
_KIMI_KEYS: Final = {
    "input_other": "input_tokens",
    "output": "output_tokens",
    "input_cache_read": "cached_read_tokens",
    "input_cache_creation": "cached_write_tokens",
}


def _meta(frame: Mapping[str, Any]) -> Mapping[str, Any]:
    return _object(frame.get("_meta")) or {}


def quota_meta(frame: Mapping[str, Any]) -> tuple[str, Reading] | None:
    """``_meta.quota.token_count`` of a ``session/prompt`` result: gemini-cli's and codex-acp's figures.

    gemini-cli answers every prompt with ``{"quota": {"token_count": {"input_tokens",
    "output_tokens"}, "model_usage": [...]}}`` and sends no standard usage (gemini-cli#29389);
    codex-acp's adapter sends the same key, camelCase, beside its standard ``usage`` (codex-acp#10,
    #353: its ``TokenCount``).
    """
    quota = _object(_meta(frame).get("quota"))
    token_count = _object(quota.get("token_count")) if quota is not None else None
    reading = _counts(token_count, _QUOTA_KEYS)
    if token_count is None or not reading:
        return None
    return ("codex-acp" if "inputTokens" in token_count else "gemini-cli") + ":_meta.quota", reading


def kimi_status(frame: Mapping[str, Any]) -> tuple[str, Reading] | None:
    """kimi-cli's ``StatusUpdate`` payload, found as an entry of a frame's ``_meta``.

    kimi-cli computes it each step (``context_tokens``, ``max_context_tokens``, ``token_usage``
    with ``input_other``, ``output``, ``input_cache_read``, ``input_cache_creation``) but its ACP
    server drops it (kimi-cli#2394; still so in kimi-cli 1.49.0); an adapter that forwards it
    puts it in ``_meta``, which is read here. The total is the sum of the four counts.
    """
    for value in _meta(frame).values():
        status = _object(value)
        token_usage = _object(status.get("token_usage")) if status is not None else None
        if status is None or token_usage is None or "input_other" not in token_usage:
            continue
        reading = _counts(token_usage, _KIMI_KEYS)
        if len(reading) == len(_KIMI_KEYS):
            reading["total_tokens"] = sum(reading.values())
        reading.update(
            _counts(status, {"context_tokens": "context_used", "max_context_tokens": "context_size"})
        )
        return "kimi-cli:StatusUpdate", reading
    return None


#: The private dialects, read from a ``session/prompt`` result and from each ``session/update``'s
#: update: each gives its source's name and :class:`Usage` fields, used only where the standard
#: places left a field unset. copilot-cli needs none: since 1.0.78 it fills the standard places
#: (copilot-cli#4174; its changelog: "Expose token usage in ACP prompt results and live
#: usage_update notifications"), and before that it sent nothing.
DIALECTS: Final[tuple[Callable[[Mapping[str, Any]], tuple[str, Reading] | None], ...]] = (
    quota_meta,
    kimi_status,
)


class UsageMeter:
    """Reads one turn's usage from the agent's frames; :attr:`usage` is what it found so far.

    Feed it each ``session/update``'s ``update`` object (:meth:`read_update`) and the result of
    ``session/prompt`` (:meth:`read_prompt_result`), as JSON. A standard place always wins over a
    dialect, whichever came first; a later standard value replaces an earlier one (a second
    ``usage_update`` is the newer figure).
    """

    __slots__ = ("_dialect", "_sources", "_standard")

    def __init__(self) -> None:
        self._standard: Reading = {}
        self._dialect: Reading = {}
        self._sources: list[str] = []

    @property
    def usage(self) -> Usage | None:
        """The turn's usage so far; ``None`` while the agent reported none."""
        if not self._sources:
            return None
        merged = {**self._dialect, **self._standard}
        return Usage(**merged, sources=tuple(self._sources))

    def read_update(self, update: object) -> bool:
        """Read a ``session/update``'s ``update``; whether it said anything about usage."""
        wire = _object(update)
        if wire is None:
            return False
        found = False
        kind = wire.get("sessionUpdate")
        if kind == "usage_update":
            found = self._standard_found("usage_update", standard_usage_update(wire))
        elif kind == "state_update" and wire.get("state") == "idle":
            found = self._standard_found("state_update.usage", standard_tokens(wire.get("usage")))
        return self._dialects_found(wire) or found

    def read_prompt_result(self, result: object) -> bool:
        """Read the result of ``session/prompt`` (v1): its ``usage``, and the dialects of its ``_meta``."""
        wire = _object(result)
        if wire is None:
            return False
        found = self._standard_found("prompt_response.usage", standard_tokens(wire.get("usage")))
        return self._dialects_found(wire) or found

    def _dialects_found(self, frame: Mapping[str, Any]) -> bool:
        if "_meta" not in frame:
            return False
        found = False
        for read in DIALECTS:
            named = read(frame)
            if named is not None:
                source, reading = named
                self._dialect.update(reading)
                if source not in self._sources:
                    self._sources.append(source)
                found = True
        return found

    def _standard_found(self, source: str, reading: Reading) -> bool:
        if not reading:
            return False
        self._standard.update(reading)
        if source not in self._sources:
            self._sources.append(source)
        return True
