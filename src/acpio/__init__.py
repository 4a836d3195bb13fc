"""acpio: the Python toolkit for the Agent Client Protocol (ACP).

What handlers and mains name is here, so an agent, a client or a proxy imports from ``acpio``
and ``acpio.schema`` (the protocol's models). ``import acpio`` is cheap: the models and the engine
load on first use. The public names are listed in ``__all__``; each is documented where it is
defined.
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
    from acpio.app import AgentApp, Ask, StopReasonName, Turn
    from acpio.capabilities import (
        AgentFeatures,
        CapabilityNotAdvertised,
        ClientFeatures,
        UnsupportedProtocolVersion,
        negotiate_version,
    )
    from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
    from acpio.jsonrpc import (
        Builder,
        Connection,
        Dispatch,
        Forward,
        NotificationDispatch,
        RequestDispatch,
        Responder,
        ResponseDispatch,
        SentRequest,
        Unhandled,
        UntypedMessage,
    )
    from acpio.roles import Agent, Client, Conductor, Proxy, UnstableMethodNotEnabled, UntypedRole
    from acpio.running import run
    from acpio.session import (
        ActiveSession,
        AgentRequestMessage,
        CreateElicitationMessage,
        CreateTerminalMessage,
        KillTerminalMessage,
        ReadTextFileMessage,
        ReleaseTerminalMessage,
        RequestPermissionMessage,
        SessionBuilder,
        SessionConnection,
        SessionMessage,
        TerminalOutputMessage,
        TurnEnded,
        WaitForTerminalExitMessage,
        WriteTextFileMessage,
    )
    from acpio.traits import AgentSideConnection, AgentTrait, ClientSideConnection, ClientTrait
    from acpio.transports import AcpAgent, ByteStreams, Channel, ChannelListener, Stdio, Tap
    from acpio.updates import text_update, thought_update, user_text_update

__version__ = "0.1.0"

#: Public names loaded on first access, with the module that defines them.
_LAZY: dict[str, str] = {
    "ActiveSession": "acpio.session",
    "AgentApp": "acpio.app",
    "Ask": "acpio.app",
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
    "Builder": "acpio.jsonrpc",
    "Connection": "acpio.jsonrpc",
    "Dispatch": "acpio.jsonrpc",
    "Forward": "acpio.jsonrpc",
    "NotificationDispatch": "acpio.jsonrpc",
    "RequestDispatch": "acpio.jsonrpc",
    "Responder": "acpio.jsonrpc",
    "ResponseDispatch": "acpio.jsonrpc",
    "SentRequest": "acpio.jsonrpc",
    "Unhandled": "acpio.jsonrpc",
    "UntypedMessage": "acpio.jsonrpc",
    "AcpAgent": "acpio.transports",
    "ByteStreams": "acpio.transports",
    "Channel": "acpio.transports",
    "ChannelListener": "acpio.transports",
    "Stdio": "acpio.transports",
    "run": "acpio.running",
    "Tap": "acpio.transports",
    "negotiate_version": "acpio.capabilities",
    "AgentRequestMessage": "acpio.session",
    "CreateElicitationMessage": "acpio.session",
    "CreateTerminalMessage": "acpio.session",
    "KillTerminalMessage": "acpio.session",
    "ReadTextFileMessage": "acpio.session",
    "ReleaseTerminalMessage": "acpio.session",
    "RequestPermissionMessage": "acpio.session",
    "SessionMessage": "acpio.session",
    "TerminalOutputMessage": "acpio.session",
    "TurnEnded": "acpio.session",
    "WaitForTerminalExitMessage": "acpio.session",
    "WriteTextFileMessage": "acpio.session",
    "text_update": "acpio.updates",
    "thought_update": "acpio.updates",
    "user_text_update": "acpio.updates",
    "schema": "acpio.schema",
    "testing": "acpio.testing",
}

__all__ = [
    "AcpAgent",
    "AcpError",
    "ActiveSession",
    "Agent",
    "AgentApp",
    "AgentFeatures",
    "AgentRequestMessage",
    "AgentSideConnection",
    "AgentTrait",
    "Ask",
    "AuthRequired",
    "Builder",
    "ByteStreams",
    "CapabilityNotAdvertised",
    "Channel",
    "ChannelListener",
    "Client",
    "ClientFeatures",
    "ClientSideConnection",
    "ClientTrait",
    "Conductor",
    "Connection",
    "ConnectionClosed",
    "CreateElicitationMessage",
    "CreateTerminalMessage",
    "DeadlockError",
    "Dispatch",
    "ExtensionNotification",
    "ExtensionRequest",
    "ExtensionResponse",
    "Forward",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "KillTerminalMessage",
    "MethodNotFound",
    "NotificationDispatch",
    "ParseError",
    "Proxy",
    "ReadTextFileMessage",
    "ReleaseTerminalMessage",
    "RequestCancelled",
    "RequestDispatch",
    "RequestError",
    "RequestPermissionMessage",
    "ResourceNotFound",
    "Responder",
    "ResponseDispatch",
    "SentRequest",
    "SessionBuilder",
    "SessionConnection",
    "SessionMessage",
    "Stdio",
    "StopReasonName",
    "Tap",
    "TerminalOutputMessage",
    "TransportError",
    "Turn",
    "TurnEnded",
    "Unhandled",
    "UnstableMethodNotEnabled",
    "UnsupportedProtocolVersion",
    "UntypedMessage",
    "UntypedRole",
    "WaitForTerminalExitMessage",
    "WriteTextFileMessage",
    "__version__",
    "negotiate_version",
    "run",
    "schema",
    "testing",
    "text_update",
    "thought_update",
    "user_text_update",
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
