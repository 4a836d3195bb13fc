"""The ACP v1 protocol types, generated from the official JSON schema, and the method table.

Every ``$defs`` entry of ``schema.unstable.json`` is here under its schema name
(``SessionNotification``, ``ContentBlock``...), plus the union variants named by their tag
(``AgentMessageChunk``, ``UserMessageChunk``...). ``UNSTABLE_TYPES`` names those only in the
unstable schema. :data:`METHODS` describes every method: direction, params and result models,
stability and the capability that gates it.

Models accept snake_case or camelCase names, keep unknown fields, and serialize with
:meth:`AcpModel.to_wire`. See ``docs/schema.md``.
"""

from acpio.schema._models import *  # noqa: F403
from acpio.schema._models import __all__ as _model_names
from acpio.schema.base import AcpJson, AcpModel, AcpNotification, AcpRequest, AcpResponse, MethodSpec
from acpio.schema.methods import METHODS, NOTIFICATIONS, REQUESTS

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
