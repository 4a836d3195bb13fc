"""The ACP v1 protocol types, generated from the official JSON schema, and the method table.

Every ``$defs`` entry of ``schema.unstable.json`` is here under its schema name
(``SessionNotification``, ``ContentBlock``...), plus the union variants named by their tag
(``AgentMessageChunk``, ``UserMessageChunk``...). ``UNSTABLE_TYPES`` names those only in the
unstable schema. :data:`METHODS` describes every method: direction, params and result models,
stability and the capability that gates it.

Models accept snake_case or camelCase names, keep unknown fields, and serialize with
:meth:`AcpModel.to_wire`. See ``docs/schema.md``.

A model class is created the first time it is used (read here, imported, or needed by another
class being created): an agent creates the few dozen it needs, not all 220.
"""

from typing import TYPE_CHECKING

from acpio.schema._names import NAMES as _model_names
from acpio.schema.method_spec import MethodSpec
from acpio.schema.methods import METHODS, NOTIFICATIONS, REQUESTS

if TYPE_CHECKING:
    from acpio.schema._models import *  # noqa: F403
    from acpio.schema.base import AcpJson, AcpModel, AcpNotification, AcpRequest, AcpResponse

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
        globals(), {"acpio.schema.base": _BASES, "acpio.schema._models": _model_names}, __all__
    )
