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
from the request's params). :func:`v1_initialize_params` is how a v1 agent reads a v2 client's
``initialize``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from acpio.errors import InvalidParams, UnsupportedProtocolVersionError

__all__ = [
    "MAX_PROTOCOL_VERSION",
    "UnsupportedProtocolVersionError",
    "is_implementation",
    "is_v2_shaped",
    "requested_version",
    "select_version",
    "v1_initialize_params",
]

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


def v1_initialize_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params of a v2-shaped ``initialize``, as a v1 agent reads them.

    ``info`` becomes ``clientInfo`` (left out when it is no ``{name, version}`` object: v1 makes it
    optional); ``capabilities`` becomes the v1 ``clientCapabilities`` a v2 client has: no ``fs``
    nor ``terminal`` methods, ``auth.terminal`` and ``elicitation`` as advertised, boolean config
    options (baseline in v2) on. ``_meta`` is kept.
    """
    capabilities = params.get("capabilities")
    caps = capabilities if isinstance(capabilities, dict) else {}
    auth = caps.get("auth")
    auth_caps = auth if isinstance(auth, dict) else {}
    v1_auth: dict[str, Any] = {"terminal": auth_caps.get("terminal") is not None}
    if auth_caps.get("_meta") is not None:
        v1_auth["_meta"] = auth_caps["_meta"]
    client: dict[str, Any] = {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "session": {"configOptions": {"boolean": {}}},
        "auth": v1_auth,
    }
    for key in ("elicitation", "_meta"):
        if caps.get(key) is not None:
            client[key] = caps[key]
    converted: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": client}
    info = params.get("info")
    if is_implementation(info):
        converted["clientInfo"] = info
    if params.get("_meta") is not None:
        converted["_meta"] = params["_meta"]
    return converted


def is_v2_shaped(params: Mapping[str, Any]) -> bool:
    """Whether ``initialize`` params are written in v2's shape (``info``, ``capabilities``).

    Read from the fields when they tell (v1's are ``clientInfo`` and ``clientCapabilities``),
    else from the version asked for (2 or more): a v1 client may ask for a newer version in v1's
    shape, and keeps its capabilities.
    """
    if "clientCapabilities" in params or "clientInfo" in params:
        return False
    if "capabilities" in params or "info" in params:
        return True
    requested = params.get("protocolVersion")
    return type(requested) is int and requested >= 2


def is_implementation(info: object) -> bool:
    """Whether ``info`` is an ``Implementation`` object: a ``name`` and a ``version``, both strings."""
    return (
        isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
    )
