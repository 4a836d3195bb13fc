"""acpio: the Python toolkit for the Agent Client Protocol (ACP).

``import acpio`` is cheap: the protocol models (``acpio.schema``) and the engine load on first use.
The public names are listed in ``__all__``; each is documented where it is defined.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acpio.errors import (
    AcpError,
    AuthRequired,
    ConnectionClosed,
    DeadlockError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    RequestError,
    ResourceNotFound,
    TransportError,
)

if TYPE_CHECKING:
    from acpio import schema, testing
    from acpio.app import AgentApp, StopReasonName, Turn
    from acpio.capabilities import (
        AgentFeatures,
        CapabilityNotAdvertised,
        ClientFeatures,
        UnsupportedProtocolVersion,
    )
    from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
    from acpio.roles import Agent, Client, Conductor, Proxy, UnstableMethodNotEnabled, UntypedRole
    from acpio.session import ActiveSession, SessionBuilder, SessionConnection
    from acpio.traits import AgentSideConnection, AgentTrait, ClientSideConnection, ClientTrait

__version__ = "0.1.0"

#: Public names loaded on first access, with the module that defines them.
_LAZY: dict[str, str] = {
    "ActiveSession": "acpio.session",
    "AgentApp": "acpio.app",
    "StopReasonName": "acpio.app",
    "Turn": "acpio.app",
    "AgentSideConnection": "acpio.traits",
    "AgentTrait": "acpio.traits",
    "ClientSideConnection": "acpio.traits",
    "ClientTrait": "acpio.traits",
    "SessionBuilder": "acpio.session",
    "SessionConnection": "acpio.session",
    "Agent": "acpio.roles",
    "Client": "acpio.roles",
    "Conductor": "acpio.roles",
    "Proxy": "acpio.roles",
    "UnstableMethodNotEnabled": "acpio.roles",
    "UntypedRole": "acpio.roles",
    "AgentFeatures": "acpio.capabilities",
    "CapabilityNotAdvertised": "acpio.capabilities",
    "ClientFeatures": "acpio.capabilities",
    "ExtensionNotification": "acpio.extensions",
    "ExtensionRequest": "acpio.extensions",
    "ExtensionResponse": "acpio.extensions",
    "UnsupportedProtocolVersion": "acpio.capabilities",
    "schema": "acpio.schema",
    "testing": "acpio.testing",
}

__all__ = [
    "AcpError",
    "ActiveSession",
    "Agent",
    "AgentApp",
    "AgentFeatures",
    "AgentSideConnection",
    "AgentTrait",
    "AuthRequired",
    "CapabilityNotAdvertised",
    "Client",
    "ClientFeatures",
    "ClientSideConnection",
    "ClientTrait",
    "Conductor",
    "ConnectionClosed",
    "DeadlockError",
    "ExtensionNotification",
    "ExtensionRequest",
    "ExtensionResponse",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "ParseError",
    "Proxy",
    "RequestCancelled",
    "RequestError",
    "ResourceNotFound",
    "SessionBuilder",
    "SessionConnection",
    "StopReasonName",
    "TransportError",
    "Turn",
    "UnstableMethodNotEnabled",
    "UnsupportedProtocolVersion",
    "UntypedRole",
    "__version__",
    "schema",
    "testing",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acpio' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if module.rsplit(".", 1)[-1] == name else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
