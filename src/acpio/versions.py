"""Which ACP protocol version an agent answers ``initialize`` with: :func:`select_version`.

The client puts the newest version it speaks in ``initialize.protocolVersion``; the agent answers
with one it speaks. The rules are those of the official TypeScript SDK's ``AgentProtocolRouter``
and of the Rust SDK, so that a client sees the same answer from any of them:

====================  =========================  ==========================================
agent speaks          client asks for            answer
====================  =========================  ==========================================
1 only                anything                   1 (v1's rule: "the latest it supports")
1 and 2               2 or newer                 2
1 and 2               1                          1
1 and 2               0                          -32022
2 only                2 or newer                 2
2 only                1 or 0                     -32022
====================  =========================  ==========================================

In general: the newest supported version at or below the requested one, and
:class:`UnsupportedProtocolVersionError` (``-32022``, data ``{"requested", "supported"}``) when
there is none, except that an agent speaking only v1 answers v1 to every request (what v1 agents
have always done). A version is an integer from 0 to 65535 (:func:`requested_version` reads it
from the request's params).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from acpio.errors import InvalidParams, UnsupportedProtocolVersionError

__all__ = ["MAX_PROTOCOL_VERSION", "UnsupportedProtocolVersionError", "requested_version", "select_version"]

#: The largest protocol version ACP allows (a ``uint16``).
MAX_PROTOCOL_VERSION: Final = 0xFFFF


def select_version(requested: int, supported: Sequence[int]) -> int:
    """The version an agent speaking ``supported`` answers to a client that asked for ``requested``.

    The newest of ``supported`` at or below ``requested``; an agent speaking only v1 answers 1
    whatever was asked. Raises :class:`UnsupportedProtocolVersionError` when none fits (answer the
    ``initialize`` with it: the client may try again) and ``ValueError`` for an empty ``supported``.
    """
    if not supported:
        raise ValueError("select_version() needs at least one supported protocol version")
    if all(v == 1 for v in supported):
        return 1
    best = -1
    for version in supported:
        if best < version <= requested:
            best = version
    if best < 0:
        raise UnsupportedProtocolVersionError.for_versions(requested, set(supported))
    return best


def requested_version(params: object) -> int:
    """The ``protocolVersion`` of ``initialize`` params (a JSON object), checked.

    Raises :class:`~acpio.InvalidParams` (``-32602``) when the params are not an object or the
    version is missing, not an integer, or outside 0..65535.
    """
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if type(version) is not int or not 0 <= version <= MAX_PROTOCOL_VERSION:
        raise InvalidParams(
            {"protocolVersion": version},
            message="initialize.protocolVersion must be an ACP protocol version: an integer from 0 to 65535",
        )
    return version
