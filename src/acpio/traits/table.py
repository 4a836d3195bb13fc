"""The wire method <-> Python method table of the trait-style API, read off the trait classes.

The trait classes (:class:`~acpio.traits.AgentTrait`, :class:`~acpio.traits.ClientTrait`) are the only place
the methods are listed: each protocol method is an ``async def`` whose one parameter is annotated
with the params model of a wire method (``async def prompt(self, params: PromptRequest) ->
PromptResponse``). :func:`trait_methods` reads those annotations once, and the connections
dispatch incoming messages with the result. The params model gives the wire method (its
``METHOD``); ``acpio.schema.METHODS`` gives the same models, and the test suite checks that every
method of the table has its trait method with the same params and result types.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Literal

from acpio.schema.base import AcpNotification, AcpRequest

__all__ = ["TraitMethod", "trait_methods"]

#: Trait members that are not protocol methods (extension hooks and the connection hook).
_NOT_WIRE = frozenset({"ext_method", "ext_notification", "on_connect"})


@dataclass(frozen=True, slots=True)
class TraitMethod:
    """One protocol method of a trait: the Python ``name`` that handles the wire ``method``.

    ``kind`` is ``"request"`` or ``"notification"``; ``params`` is the params model and ``result``
    the result model (``None`` for a notification).
    """

    name: str
    method: str
    kind: Literal["request", "notification"]
    params: type[Any]
    result: type[Any] | None


def trait_methods(cls: type) -> tuple[TraitMethod, ...]:
    """The protocol methods ``cls`` declares itself, in definition order.

    Every public ``async def`` of ``cls`` except the extension hooks must take one params model
    (an ``AcpRequest`` or ``AcpNotification`` subclass); anything else is a ``TypeError``, so a
    mistake in a trait class fails at import time.
    """
    found: list[TraitMethod] = []
    for name, member in vars(cls).items():
        if name.startswith("_") or name in _NOT_WIRE or not inspect.iscoroutinefunction(member):
            continue
        hints = typing.get_type_hints(member)
        parameters = [p for p in inspect.signature(member).parameters if p != "self"]
        params = hints.get(parameters[0]) if len(parameters) == 1 else None
        if isinstance(params, type) and issubclass(params, AcpRequest):
            found.append(TraitMethod(name, params.METHOD, "request", params, hints.get("return")))
        elif isinstance(params, type) and issubclass(params, AcpNotification):
            found.append(TraitMethod(name, params.METHOD, "notification", params, None))
        else:
            raise TypeError(
                f"{cls.__name__}.{name} is not a protocol method: it must take one parameter "
                "annotated with a request or notification model of acpio.schema"
            )
    return tuple(found)
