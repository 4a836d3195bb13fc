"""Editor profiles: what Zed, JetBrains IDEs and CodeCompanion.nvim advertise, and how they behave.

Each profile is a versioned JSON file in this package (``zed.json``, ``jetbrains.json``,
``codecompanion.json``): the ``initialize`` request the editor sends (its client capabilities and
``clientInfo``) and its known behaviours, each with the public issue or document it comes from.
:func:`load_profile` reads one; :class:`ProfileGuard` watches a connection as that editor would
and issues :class:`AcpSpecificationWarning` (also ``acpio.AcpSpecificationWarning``) when the
agent sends what the editor did not advertise or would drop. ``acpio prompt --as zed`` and
``acpio check`` use them::

    profile = load_profile("zed")
    guard = ProfileGuard(profile)
    transport = GuardedTransport(await AcpAgent("my-agent").open(), guard)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.profiles.guard import GuardedTransport, ProfileGuard
    from acpio.profiles.profile import PROFILE_NAMES, Behaviour, EditorProfile, load_profile
    from acpio.profiles.warning import AcpSpecificationWarning

__all__ = [
    "PROFILE_NAMES",
    "AcpSpecificationWarning",
    "Behaviour",
    "EditorProfile",
    "GuardedTransport",
    "ProfileGuard",
    "load_profile",
]

__getattr__, __dir__ = lazy_exports(globals())
