"""acpio: the Python toolkit for the Agent Client Protocol (ACP).

What handlers and mains name is here, so an agent, a client or a proxy imports from ``acpio``
and ``acpio.schema`` (the protocol's models). ``import acpio`` is cheap: the models and the engine
load on first use. The public names are listed in ``__all__``; each is documented where it is
defined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports
from acpio.errors import (
    AcpError,
    AuthRequired,
    ConnectionClosed,
    DeadlockError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    NotInProtocolVersion,
    ParseError,
    RequestCancelled,
    RequestError,
    ResourceNotFound,
    TransportError,
    UnsupportedProtocolVersionError,
)

if TYPE_CHECKING:
    from acpio import schema, testing
    from acpio.acp_connection import AcpConnection
    from acpio.app import AgentApp, Ask, StopReasonName, Turn
    from acpio.capabilities import (
        AgentFeatures,
        CapabilityNotAdvertised,
        ClientFeatures,
        UnsupportedProtocolVersion,
    )
    from acpio.client import AgentClient, AgentSession, Rule, RulePolicy, TurnResult, TurnStream, load_policy
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
    from acpio.pool import AgentPool, PoolEvent, SupervisedTurn
    from acpio.profiles import AcpSpecificationWarning
    from acpio.proxies import transform_agent_text
    from acpio.redaction import Redactor
    from acpio.roles import Agent, Client, Conductor, Proxy, UnstableMethodNotEnabled, UntypedRole
    from acpio.running import run
    from acpio.session import (
        ActiveSession,
        AgentRequestMessage,
        AttachedRequestResolved,
        AttachedTurnEnded,
        ControlledSession,
        CreateElicitationMessage,
        CreateTerminalMessage,
        KillTerminalMessage,
        ObservedSession,
        ReadTextFileMessage,
        ReleaseTerminalMessage,
        RequestPermissionMessage,
        SessionBuilder,
        SessionConnection,
        SessionEnded,
        SessionMessage,
        TerminalOutputMessage,
        TurnEnded,
        WaitForTerminalExitMessage,
        WriteTextFileMessage,
        control_session,
        observe_session,
    )
    from acpio.traits import AgentSideConnection, AgentTrait, ClientSideConnection, ClientTrait
    from acpio.transports import AcpAgent, ByteStreams, Channel, ChannelListener, Stdio, Tap
    from acpio.updates import text_update, thought_update, user_text_update
    from acpio.version_router import VersionRouter
    from acpio.versions import select_version

__version__ = "0.1.0"

__all__ = [
    "AcpAgent",
    "AcpConnection",
    "AcpError",
    "AcpSpecificationWarning",
    "ActiveSession",
    "Agent",
    "AgentApp",
    "AgentClient",
    "AgentFeatures",
    "AgentPool",
    "AgentRequestMessage",
    "AgentSession",
    "AgentSideConnection",
    "AgentTrait",
    "Ask",
    "AttachedRequestResolved",
    "AttachedTurnEnded",
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
    "ControlledSession",
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
    "NotInProtocolVersion",
    "NotificationDispatch",
    "ObservedSession",
    "ParseError",
    "PoolEvent",
    "Proxy",
    "ReadTextFileMessage",
    "Redactor",
    "ReleaseTerminalMessage",
    "RequestCancelled",
    "RequestDispatch",
    "RequestError",
    "RequestPermissionMessage",
    "ResourceNotFound",
    "Responder",
    "ResponseDispatch",
    "Rule",
    "RulePolicy",
    "SentRequest",
    "SessionBuilder",
    "SessionConnection",
    "SessionEnded",
    "SessionMessage",
    "Stdio",
    "StopReasonName",
    "SupervisedTurn",
    "Tap",
    "TerminalOutputMessage",
    "TransportError",
    "Turn",
    "TurnEnded",
    "TurnResult",
    "TurnStream",
    "Unhandled",
    "UnstableMethodNotEnabled",
    "UnsupportedProtocolVersion",
    "UnsupportedProtocolVersionError",
    "UntypedMessage",
    "UntypedRole",
    "VersionRouter",
    "WaitForTerminalExitMessage",
    "WriteTextFileMessage",
    "__version__",
    "control_session",
    "load_policy",
    "observe_session",
    "run",
    "schema",
    "select_version",
    "testing",
    "text_update",
    "thought_update",
    "transform_agent_text",
    "user_text_update",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
