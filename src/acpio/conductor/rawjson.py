"""The JSON text of one member of a frame, found without decoding it.

orjson decodes values nested up to 1024 levels but encodes at most 254. The conductor forwards the
params it received, and re-encoding them is what normally sends them on; for params nested deeper
than the encoder goes, it copies their text out of the frame they arrived in instead
(:func:`member_text`), byte for byte, and splices it into the frame it sends (``orjson.Fragment``).

The scanner only walks the frame's outer object and skips over values by matching brackets outside
strings; it assumes the frame is valid JSON (it was decoded before).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ["member_span", "member_text"]

_SPACE = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(rb"[^,}\] \t\r\n]+")
# What matters when skipping a container: strings (which may hold brackets) and brackets.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)

_QUOTE, _OPEN_OBJECT, _OPEN_ARRAY = ord('"'), ord("{"), ord("[")


def _skip_space(data: bytes, at: int, end: int) -> int:
    match = _SPACE.match(data, at, end)
    return match.end() if match else at


def _value_end(data: bytes, at: int, end: int) -> int | None:
    """Where the JSON value starting at ``at`` ends (exclusive); ``None`` if not before ``end``."""
    if at >= end:
        return None
    first = data[at]
    if first == _QUOTE:
        match = _STRING.match(data, at, end)
        return match.end() if match else None
    if first in (_OPEN_OBJECT, _OPEN_ARRAY):
        depth = 0
        for token in _TOKEN.finditer(data, at, end):
            char = data[token.start()]
            if char == _QUOTE:
                continue
            if char in (_OPEN_OBJECT, _OPEN_ARRAY):
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return token.end()
        return None
    match = _SCALAR.match(data, at, end)
    return match.end() if match else None


def member_span(data: bytes, key: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """The span of the value of ``key`` in the JSON object ``data[start:end]``, or ``None``.

    ``None`` when that text is not an object or has no ``key``. As a decoder keeps the last of
    duplicate keys, so does this.
    """
    stop = len(data) if end is None else end
    at = _skip_space(data, start, stop)
    if at >= stop or data[at] != _OPEN_OBJECT:
        return None
    wanted = key.encode()
    found: tuple[int, int] | None = None
    at = _skip_space(data, at + 1, stop)
    if at < stop and data[at] == ord("}"):
        return None
    while at < stop:
        name = _STRING.match(data, at, stop)
        if name is None:
            return None
        text = name.group()[1:-1]
        at = _skip_space(data, name.end(), stop)
        if at >= stop or data[at] != ord(":"):
            return None
        at = _skip_space(data, at + 1, stop)
        value_end = _value_end(data, at, stop)
        if value_end is None:
            return None
        if text == wanted or (b"\\" in text and orjson.loads(name.group()) == key):
            found = (at, value_end)
        at = _skip_space(data, value_end, stop)
        if at >= stop:
            return None
        if data[at] == ord("}"):
            return found
        if data[at] != ord(","):
            return None
        at = _skip_space(data, at + 1, stop)
    return None


def member_text(frame: bytes, path: Sequence[str], expected: Any) -> bytes | None:
    """The text of the member at ``path`` (keys, outer object first) of ``frame``, if it holds ``expected``.

    ``expected`` is the value that member was decoded to: the text is returned only when it decodes
    to the same value (or, for a value too deep to compare, the same kind of value with the same
    keys or length), so a frame that is not the message's own is never copied from. ``None`` when
    the member is missing, or is not ``expected``.
    """
    start, end = 0, len(frame)
    for key in path:
        span = member_span(frame, key, start, end)
        if span is None:
            return None
        start, end = span
    text = frame[start:end]
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    try:
        same = bool(value == expected)
    except RecursionError:
        same = type(value) is type(expected) and (
            value.keys() == expected.keys() if type(value) is dict else len(value) == len(expected)
        )
    return text if same else None
