"""A client's ``initialize`` that offers ACP v2 and accepts a v1 answer on the same connection.

What :meth:`SessionConnection.initialize <acpio.session.SessionConnection.initialize>` sends and
how it reads the answer, by the connection's :data:`ProtocolChoice` (``Client.builder(protocol=...)``):

* ``"negotiate"`` (the default): ``protocolVersion: 2`` with both shapes of the client's
  description, v2's ``info``/``capabilities`` and v1's ``clientInfo``/``clientCapabilities``. A v2
  agent reads the first pair (unknown fields are ignored), a plain v1 agent the second and answers
  ``protocolVersion: 1`` (v1's rule: "the latest version it supports"), so it sees the client's
  file-system and terminal capabilities exactly as from a v1 client. The answer's version decides
  the connection's. An agent answering ``-32022`` with 1 among its supported versions is asked
  again with the v1 request, on the same connection.
* ``2``: the v2 request only; a v1 answer closes the connection and raises
  :class:`~acpio.capabilities.UnsupportedProtocolVersion`.
* ``1``: the v1 request only, exactly as ``cx.send_request(InitializeRequest(...))``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, cast

from acpio.errors import RequestError

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue
    from acpio.schema import InitializeRequest, InitializeResponse, v2
    from acpio.session.active import SessionSetupRequest
    from acpio.session.connection import SessionConnection

__all__ = [
    "AnyInitializeRequest",
    "AnyInitializeResponse",
    "ProtocolChoice",
    "negotiate",
    "offered_params",
    "v1_params",
]

#: Which ACP version a client's connection speaks: ``1``, ``2``, or ``"negotiate"`` (offer v2, accept v1).
ProtocolChoice: TypeAlias = Literal[1, 2, "negotiate"]
#: What :meth:`SessionConnection.initialize` takes: the request of either version.
AnyInitializeRequest: TypeAlias = "InitializeRequest | v2.InitializeRequest"
#: What it gives: the answer, typed by the version the agent answered with.
AnyInitializeResponse: TypeAlias = "InitializeResponse | v2.InitializeResponse"

_SetupT = TypeVar("_SetupT", bound="SessionSetupRequest")

#: ``-32022``: the agent speaks no version at or below the one asked for (ACP v2).
UNSUPPORTED_VERSION_CODE: Final = -32022


def offered_params(request: AnyInitializeRequest, protocol: ProtocolChoice) -> dict[str, Any]:
    """The ``initialize`` params sent for ``request`` on a connection speaking ``protocol``."""
    from acpio.schema import InitializeRequest

    if isinstance(request, InitializeRequest):
        v1: dict[str, Any] = request.to_wire()
        if protocol == 1:
            return v1
        v2_wire = {"protocolVersion": 2, **_v2_shape(v1)}
        return v2_wire if protocol == 2 else {**v1, **v2_wire}
    wire: dict[str, Any] = request.to_wire()
    if protocol == 1:
        raise ValueError(
            "This connection speaks ACP v1 (Client.builder(protocol=1)) and cannot send a v2 "
            "InitializeRequest: send acpio.schema.InitializeRequest, or build the client with "
            'protocol="negotiate"'
        )
    wire["protocolVersion"] = 2
    return wire if protocol == 2 else {**_v1_shape(wire), **wire}


def typed_mcp_servers(request: _SetupT) -> _SetupT:
    """``request`` (a session-setup request) with ``"type": "stdio"`` on each MCP server lacking a type.

    v1 declares a stdio server by leaving ``type`` out; v2 requires it. The v1 models keep the
    field, so the request stays the same class.
    """
    servers = request.mcp_servers
    if not servers or all("type" in server.to_wire() for server in servers):
        return request
    wire = request.to_wire()
    wire["mcpServers"] = [{"type": "stdio", **server} for server in wire["mcpServers"]]
    return cast(_SetupT, type(request).model_validate(wire))  # the class of request


def v1_params(params: dict[str, Any]) -> dict[str, Any]:
    """The v1 request of a negotiating offer (asked again after ``-32022``): its v1 fields, version 1."""
    v1 = {key: value for key, value in params.items() if key not in ("info", "capabilities")}
    v1["protocolVersion"] = 1
    return v1


def falls_back_to_v1(error: RequestError) -> bool:
    """Whether ``error`` (the answer to a v2 offer) is ``-32022`` naming 1 among the agent's versions."""
    if error.code != UNSUPPORTED_VERSION_CODE or not isinstance(error.data, dict):
        return False
    supported = error.data.get("supported")
    return isinstance(supported, list) and 1 in supported


def answered_version(result: JsonValue) -> int | None:
    """The ``protocolVersion`` of an ``initialize`` answer; ``None`` if it has none."""
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if type(version) is int else None


def _v2_shape(v1: dict[str, Any]) -> dict[str, Any]:
    """The v2 ``info`` and ``capabilities`` of a v1 request's wire params."""
    from acpio import __version__

    info = v1.get("clientInfo") or {"name": "acpio", "version": __version__}
    old = v1.get("clientCapabilities") or {}
    capabilities: dict[str, Any] = {}
    auth = old.get("auth")
    if isinstance(auth, dict) and auth.get("terminal") is True:
        capabilities["auth"] = {"terminal": {}}
    if isinstance(old.get("elicitation"), dict):
        capabilities["elicitation"] = old["elicitation"]
    if old.get("_meta") is not None:
        capabilities["_meta"] = old["_meta"]
    shape: dict[str, Any] = {"info": info, "capabilities": capabilities}
    if v1.get("_meta") is not None:
        shape["_meta"] = v1["_meta"]
    return shape


def _v1_shape(v2: dict[str, Any]) -> dict[str, Any]:
    """The v1 ``clientInfo`` and ``clientCapabilities`` of a v2 request's wire params.

    v2 has no client file-system or terminal methods, so the v1 agent is told the client serves
    neither (as the TypeScript SDK's router converts a v2 request for a v1 agent).
    """
    new = v2.get("capabilities") or {}
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    auth = new.get("auth")
    if isinstance(auth, dict) and auth.get("terminal") is not None:
        capabilities["auth"] = {"terminal": True}
    if isinstance(new.get("elicitation"), dict):
        capabilities["elicitation"] = new["elicitation"]
    return {"clientInfo": v2["info"], "clientCapabilities": capabilities}


def _v2_response(cx: SessionConnection, result: JsonValue) -> v2.InitializeResponse:
    """``result`` (an answer saying ``protocolVersion: 2``) as a v2 ``InitializeResponse``.

    Raises ``ParseError`` (as any typed request whose result does not match) and closes ``cx``
    when it is none: the connection has no version both sides agree on.
    """
    from pydantic import ValidationError

    from acpio.errors import ParseError
    from acpio.jsonrpc.typed import validation_errors
    from acpio.schema import v2

    try:
        return v2.InitializeResponse.model_validate(result)
    except ValidationError as exc:
        cx.close()
        error = ParseError(
            {"method": "initialize", "errors": validation_errors(exc), "json": result},
            message="The result of 'initialize' does not match InitializeResponse",
        )
        error.add_note(
            "The agent answered protocolVersion 2 but not with an ACP v2 InitializeResponse (see the "
            "errors in .data); the connection is closed. Report it to the agent's authors, or build "
            "the client with protocol=1 to speak v1 to it."
        )
        raise error from exc


async def negotiate(cx: SessionConnection, request: AnyInitializeRequest | None) -> AnyInitializeResponse:
    """:meth:`SessionConnection.initialize`: offer, read the answer's version, record it on ``cx``."""
    from acpio import __version__
    from acpio.capabilities import UnsupportedProtocolVersion
    from acpio.schema import Implementation, InitializeRequest, InitializeResponse
    from acpio.schema import v2 as schema_v2
    from acpio.session.peers import agent_peer

    protocol = cx.protocol
    if request is None:
        request = InitializeRequest(
            protocol_version=1, client_info=Implementation(name="acpio", version=__version__)
        )
    if protocol == 1 and isinstance(request, InitializeRequest):
        return await cx.send_request_to(agent_peer(cx), request)  # v1 as it always was
    params = offered_params(request, protocol)
    try:
        result = await cx.send_request_to(agent_peer(cx), "initialize", params)
    except RequestError as exc:
        if protocol == "negotiate" and falls_back_to_v1(exc):
            return await cx.send_request_to(
                agent_peer(cx), InitializeRequest.model_validate(v1_params(params))
            )
        raise
    version = answered_version(result)
    if version == 1 and protocol == "negotiate":
        response_v1 = InitializeResponse.model_validate(result)
        cx.peer_state.record_request(InitializeRequest.model_validate(v1_params(params)))
        cx.peer_state.record_response(response_v1)
        return response_v1
    if version == 2:
        response_v2 = _v2_response(cx, result)
        cx.peer_state.record_request(schema_v2.InitializeRequest.model_validate(params))
        cx.peer_state.record_response(response_v2)
        return response_v2
    cx.close()
    asked = "2" if protocol == 2 else "2 (or 1)"
    error = UnsupportedProtocolVersion(
        version if version is not None else 0, (2,) if protocol == 2 else (1, 2)
    )
    error.add_note(
        f"This client asked for ACP {asked} and the agent answered protocolVersion {version!r}; the "
        "connection is closed."
        + (' Build the client with protocol="negotiate" to accept a v1 agent.' if protocol == 2 else "")
    )
    raise error
