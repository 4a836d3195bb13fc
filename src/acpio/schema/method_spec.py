"""The row of a method table, :class:`MethodSpec`: importing it imports no pydantic.

The method tables (``acpio.schema.METHODS``, ``acpio.schema.v2.METHODS``) are read by processes
that never build a model (an agent answering its handshake from the raw params), so the row's
class lives apart from the models' bases in :mod:`acpio.schema.base`, which re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from acpio.schema.base import AcpJson, AcpModel

__all__ = ["MethodSpec"]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One row of the method table: everything acpio knows about an ACP method.

    ``direction`` is who sends it: ``"client_to_agent"``, ``"agent_to_client"``, ``"both"``, or
    ``"proxy"`` for the proxy-chain methods a conductor and its proxies exchange.
    ``capability`` names the capability that must be advertised before the method may be used,
    as a path from ``A`` (the agent's ``agentCapabilities``) or ``C`` (the client's
    ``clientCapabilities``), for example ``"A.loadSession"``; ``None`` when the method is baseline.
    """

    method: str
    direction: Literal["client_to_agent", "agent_to_client", "both", "proxy"]
    kind: Literal["request", "notification"]
    params: type[AcpModel | AcpJson]
    result: type[AcpModel | AcpJson] | None
    stable: bool
    capability: str | None
