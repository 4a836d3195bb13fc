"""Base classes of the generated ACP models, and the typed-message convention the engine relies on.

Every model is an :class:`AcpModel`: fields are snake_case attributes with camelCase wire aliases,
either name is accepted on construction, unknown fields are kept and written back, and
:meth:`AcpModel.to_wire` gives the JSON value to send (unset fields omitted).

A *typed message* is a class with ``METHOD`` (the wire method name); a typed request also has
``RESPONSE`` (the model its result parses into). The generated params models are typed messages
(``PromptRequest.METHOD == "session/prompt"``, ``PromptRequest.RESPONSE is PromptResponse``), and
extension messages declared by users follow the same convention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, RootModel

__all__ = ["AcpJson", "AcpModel", "AcpNotification", "AcpRequest", "AcpResponse", "MethodSpec"]


class AcpModel(BaseModel):
    """Base of every ACP model: snake_case attributes, camelCase on the wire, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        use_enum_values=False,
        protected_namespaces=(),
        # Build each model's validator on first use: importing 270 models stays cheap.
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send: wire names, unset fields omitted, unknown fields kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class AcpJson(RootModel[Any]):
    """Any JSON value, kept exactly as received (extension payloads, the inner result of ``mcp/message``).

    ``value.root`` is the decoded JSON; :meth:`to_wire` gives it back unchanged.
    """

    model_config = ConfigDict(defer_build=True)

    METHOD: ClassVar[str]

    def to_wire(self) -> Any:
        """The JSON value, unchanged."""
        return self.root


class AcpRequest(AcpModel):
    """Params of a request: ``METHOD`` is its wire method, ``RESPONSE`` the model of its result."""

    METHOD: ClassVar[str]
    RESPONSE: ClassVar[type[AcpModel] | type[AcpJson]]


class AcpNotification(AcpModel):
    """Params of a notification: ``METHOD`` is its wire method."""

    METHOD: ClassVar[str]


class AcpResponse(AcpModel):
    """Result of a request. ``METHOD`` names the request it answers."""

    METHOD: ClassVar[str]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One row of the method table: everything acpio knows about an ACP method.

    ``direction`` is who sends it: ``"client_to_agent"``, ``"agent_to_client"`` or ``"both"``.
    ``capability`` names the capability that must be advertised before the method may be used,
    as a path from ``A`` (the agent's ``agentCapabilities``) or ``C`` (the client's
    ``clientCapabilities``), for example ``"A.loadSession"``; ``None`` when the method is baseline.
    """

    method: str
    direction: Literal["client_to_agent", "agent_to_client", "both"]
    kind: Literal["request", "notification"]
    params: type[AcpModel | AcpJson]
    result: type[AcpModel | AcpJson] | None
    stable: bool
    capability: str | None
