"""Deprecated: the trait-style API is :mod:`acpio.traits` now.

``acpio.compat`` still imports (with a ``DeprecationWarning``) and keeps its old names:
``Agent`` is :class:`acpio.traits.AgentTrait` and ``Client`` is :class:`acpio.traits.ClientTrait`.
It goes away in the release after the next one.
"""

import warnings

from acpio.traits import (
    AGENT_METHODS,
    CLIENT_METHODS,
    AgentSideConnection,
    AgentTrait,
    ClientSideConnection,
    ClientTrait,
    StreamDirection,
    StreamMessage,
    Subscription,
    TraitMethod,
)

warnings.warn(
    "acpio.compat is now acpio.traits, and its Agent and Client classes are AgentTrait and "
    "ClientTrait: import them from acpio.traits (acpio.compat goes away in the release after next)",
    DeprecationWarning,
    stacklevel=2,
)

#: Deprecated name of :class:`acpio.traits.AgentTrait`.
Agent = AgentTrait
#: Deprecated name of :class:`acpio.traits.ClientTrait`.
Client = ClientTrait

__all__ = [
    "AGENT_METHODS",
    "CLIENT_METHODS",
    "Agent",
    "AgentSideConnection",
    "Client",
    "ClientSideConnection",
    "StreamDirection",
    "StreamMessage",
    "Subscription",
    "TraitMethod",
]
