"""How far one conductor run got: its chain up, closing, or broken by the failure it keeps.

The run (:mod:`acpio.conductor.chain`) is the only writer; its
:class:`~acpio.conductor.delivery.Delivery` reads it to tell whether notifications may still pass
as bytes.
"""

from __future__ import annotations

from .errors import ConductorError

__all__ = ["RunState"]


class RunState:
    """Where one conductor run is; it only moves forward (see the module docstring)."""

    __slots__ = ("closing", "failure", "instantiated")

    def __init__(self) -> None:
        #: Whether the chain is up: the components chosen and opened after the first ``initialize``.
        self.instantiated = False
        #: Whether the run began to close (its connections stop reading).
        self.closing = False
        #: What broke the run (the first failure: the chain did not start, or a component ended).
        self.failure: ConductorError | None = None

    def __repr__(self) -> str:
        return f"RunState(instantiated={self.instantiated}, closing={self.closing}, failure={self.failure!r})"

    def fail(self, failure: ConductorError) -> None:
        """The run broke with ``failure``, unless it broke before (the first failure is the one kept)."""
        if self.failure is None:
            self.failure = failure
