"""Text-stream transforms with lookahead: redaction (and translation) that work across chunk boundaries.

An agent streams its text in chunks cut anywhere: a secret ``sk-abc123456789`` may come as
``sk-`` | ``abc123`` | ``456789``. A transform that sees one chunk at a time cannot recognise it.
A :class:`LookaheadStream` holds back the end of what it was fed while that end may still grow
into a match, and releases it once it cannot (or at :meth:`~LookaheadStream.flush`: the end of
the turn, or another kind of update coming).

* :class:`TextTransform` is the protocol a proxy's per-session hook takes: ``feed(text)`` returns
  what may go out now, ``flush()`` the rest;
* :class:`LookaheadStream` makes one from two functions: ``apply`` (the transform of released
  text) and ``hold_from`` (where the part that must wait starts);
* :class:`Redactor` replaces what its regular expressions match; :meth:`Redactor.stream` is its
  :class:`LookaheadStream`, :meth:`Redactor.redact` applies it to a whole text.

What a :class:`Redactor` holds back: a match that reaches the end of the text so far (it may go
on), and a tail that is the start of a pattern's literal prefix or starts with it (``sk``,
``sk-abc``), up to ``window`` characters. A pattern with no literal prefix (``[0-9]{16}``) holds the
last ``window`` characters back: give patterns a fixed start when you can.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final, Protocol

__all__ = ["REDACTED", "LookaheadStream", "Redactor", "TextTransform"]

#: What a :class:`Redactor` writes in place of a match by default.
REDACTED: Final = "[REDACTED]"
_SPECIAL: Final = frozenset(".^$*+?{}[]()|")


class TextTransform(Protocol):
    """A stateful transform of one text stream."""

    def feed(self, text: str) -> str:
        """Take the next piece of the stream; return the transformed text that may go out now."""
        ...

    def flush(self) -> str:
        """The stream ends (or pauses): return the transformed rest, holding nothing back."""
        ...


class LookaheadStream:
    """A :class:`TextTransform` that holds back a tail which may still grow into a match.

    ``hold_from(text)`` gives the index in ``text`` (what is held plus the new piece) where the
    part to hold back starts (``len(text)``: nothing); ``apply`` transforms what is released. The
    cut must fall where ``apply`` of the two parts equals ``apply`` of the whole.
    """

    def __init__(self, apply: Callable[[str], str], hold_from: Callable[[str], int]) -> None:
        self._apply = apply
        self._hold_from = hold_from
        self._held = ""

    def __repr__(self) -> str:
        return f"<LookaheadStream holding {len(self._held)} characters>"

    @property
    def held(self) -> str:
        """The text held back, untransformed."""
        return self._held

    def feed(self, text: str) -> str:
        """The transformed text that may go out once ``text`` is added."""
        buffer = self._held + text
        cut = max(0, min(len(buffer), self._hold_from(buffer)))
        self._held = buffer[cut:]
        return self._apply(buffer[:cut]) if cut else ""

    def flush(self) -> str:
        """The transformed text held back; nothing is held afterwards."""
        rest, self._held = self._held, ""
        return self._apply(rest) if rest else ""


class Redactor:
    """Replaces what any of ``patterns`` matches with ``replacement``, in whole texts or in streams.

    ``patterns`` are regular expressions (strings or compiled); ``window`` bounds how much text a
    stream holds back for a possible match that has not completed (see the module docstring).
    """

    def __init__(
        self,
        patterns: Iterable[str | re.Pattern[str]],
        *,
        replacement: str = REDACTED,
        window: int = 64,
    ) -> None:
        self.patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        if not self.patterns:
            raise ValueError("Redactor needs at least one pattern")
        if window < 1:
            raise ValueError(f"Redactor window={window}: give a number of characters, 1 or more")
        self.replacement = replacement
        self.window = window
        self._prefixes = tuple(_literal_prefix(pattern) for pattern in self.patterns)
        self._folds = tuple(bool(pattern.flags & re.IGNORECASE) for pattern in self.patterns)

    def __repr__(self) -> str:
        return f"Redactor({[p.pattern for p in self.patterns]!r})"

    def redact(self, text: str) -> str:
        """``text`` with every match replaced."""
        for pattern in self.patterns:
            text = pattern.sub(self.replacement, text)
        return text

    def stream(self) -> LookaheadStream:
        """A fresh stream transform (one per session and message) redacting across chunks."""
        return LookaheadStream(self.redact, self.hold_from)

    def hold_from(self, text: str) -> int:
        """Where the tail of ``text`` that may still grow into a match starts (``len(text)``: none)."""
        end = len(text)
        cut = end
        for pattern, prefix, fold in zip(self.patterns, self._prefixes, self._folds, strict=True):
            for match in pattern.finditer(text):
                if match.end() == end and match.end() > match.start():
                    cut = min(cut, match.start())
            if not prefix:
                cut = min(cut, end - self.window + 1)
                continue
            low = max(0, end - self.window)
            folded = _fold(text[low:]) if fold else text[low:]  # index i of it is text's low + i
            start = folded.find(prefix[0])
            while start != -1 and low + start < cut:
                tail = folded[start:]
                if prefix.startswith(tail) or tail.startswith(prefix):
                    complete = pattern.match(text, low + start)
                    if complete is None or complete.end() == end:
                        cut = low + start
                        break
                start = folded.find(prefix[0], start + 1)
        return self._outside_matches(text, max(0, cut))

    def _outside_matches(self, text: str, cut: int) -> int:
        """``cut`` moved back to the start of any match it would split."""
        moved = True
        while moved:
            moved = False
            for pattern in self.patterns:
                for match in pattern.finditer(text):
                    if match.start() < cut < match.end():
                        cut, moved = match.start(), True
        return cut


def _fold(text: str) -> str:
    """``text`` case-folded character by character, keeping its length (``ß`` stays, not ``ss``)."""
    return "".join(folded if len(folded := char.casefold()) == 1 else char for char in text)


def _literal_prefix(pattern: re.Pattern[str]) -> str:
    """The text every match of ``pattern`` starts with, as far as a simple reading tells (maybe ``""``)."""
    source = pattern.pattern
    if pattern.flags & re.VERBOSE or "|" in source:
        return ""
    prefix: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            escaped = source[index + 1 : index + 2]
            if not escaped or escaped.isalnum():
                break  # \d, \w, \b...: a class or an assertion
            literal, step = escaped, 2
        elif char in _SPECIAL:
            break
        else:
            literal, step = char, 1
        after = source[index + step : index + step + 1]
        if after in ("*", "?", "{"):
            break  # optional or counted: not sure to be there
        prefix.append(literal)
        if after == "+":
            break
        index += step
    text = "".join(prefix)
    return _fold(text) if pattern.flags & re.IGNORECASE else text
