"""The warning of an editor profile: :class:`AcpSpecificationWarning`."""

from __future__ import annotations

__all__ = ["AcpSpecificationWarning"]


class AcpSpecificationWarning(UserWarning):
    """An agent sent what its client did not advertise, or what that client is known to drop.

    Issued by :class:`acpio.profiles.ProfileGuard` (``acpio prompt --as zed``, ``acpio check``):
    the message names the editor, what arrived and the public source of the editor's behaviour.
    Fix the agent (send only what the client advertised; answer ``session/new`` before any update
    of the session); turn it into an error in tests with ``-W error::acpio.AcpSpecificationWarning``.
    A warning, not an :class:`~acpio.AcpError`: the message still reaches the client.
    """
