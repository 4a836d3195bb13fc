"""The ACP v2 protocol types, generated from the v2 JSON schema, and the v2 method table.

Every ``$defs`` entry of v2's ``schema.unstable.json`` is here under its schema name
(``InitializeRequest``, ``UpdateSessionNotification``, ``PromptRequest``...), plus the union
variants named by their tag (``AgentMessageChunk``, ``UserMessageChunk``...). ``UNSTABLE_TYPES``
names those only in the unstable schema. :data:`METHODS` describes every v2 method: direction,
params and result models, stability and the capability that gates it (a path such as
``"A.session.fork"``: in v2 every capability is an object, ``{}`` meaning supported).

The models follow the rules of :mod:`acpio.schema` (v1): snake_case or camelCase names, unknown
fields kept, unknown enum values and union variants kept, patch fields ``MISSING`` when omitted.
Nothing here is imported by ``import acpio`` or ``import acpio.schema``. See ``docs/schema.md``.
"""

from typing import TYPE_CHECKING

from acpio.schema.method_spec import MethodSpec
from acpio.schema.v2._names import NAMES as _model_names
from acpio.schema.v2.methods import METHODS, NOTIFICATIONS, REQUESTS

if TYPE_CHECKING:
    from acpio.schema.base import AcpJson, AcpModel, AcpNotification, AcpRequest, AcpResponse
    from acpio.schema.v2._models import *  # noqa: F403

#: The models' bases, read from ``acpio.schema.base`` (which imports pydantic) when first used.
_BASES = ("AcpJson", "AcpModel", "AcpNotification", "AcpRequest", "AcpResponse")

__all__ = [
    "METHODS",
    "NOTIFICATIONS",
    "REQUESTS",
    "AcpJson",
    "AcpModel",
    "AcpNotification",
    "AcpRequest",
    "AcpResponse",
    "MethodSpec",
    *_model_names,
]

if not TYPE_CHECKING:
    from acpio.schema._lazy import forward_module

    __getattr__, __dir__ = forward_module(
        globals(), {"acpio.schema.base": _BASES, "acpio.schema.v2._models": _model_names}, __all__
    )
