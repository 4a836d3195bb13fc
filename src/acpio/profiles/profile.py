"""An editor profile read from its data file: :class:`EditorProfile`, :func:`load_profile`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final, Literal, cast

__all__ = ["PROFILE_NAMES", "Behaviour", "EditorProfile", "load_profile"]

#: The profiles shipped with acpio, by the name ``acpio prompt --as`` takes.
PROFILE_NAMES: Final = ("zed", "jetbrains", "codecompanion")

#: What the editor does with the thing a behaviour is about: ``drop`` it silently, ``hang`` on it
#: (the chat never finishes), ``refuse`` it, or ``accept`` it (a behaviour worth knowing that works).
Effect = Literal["drop", "hang", "refuse", "accept"]


@dataclass(frozen=True)
class Behaviour:
    """One documented behaviour of an editor: an id the guard and the check know, and its sources."""

    #: ``early-session-update``, ``absolute-command``, ``no-terminal``, ``load-replay``.
    id: str
    effect: Effect
    #: What the editor does, in a sentence or two.
    summary: str
    #: The public issues, pull requests or documents that show it.
    sources: tuple[str, ...]


@dataclass(frozen=True)
class EditorProfile:
    """What an editor advertises in ``initialize`` and how it behaves (see the package docstring)."""

    #: The profile's name (``zed``), as ``acpio prompt --as`` takes it.
    profile: str
    #: The editor's name for people (``Zed``).
    name: str
    #: Bumped when the data changes meaning; a test pins it.
    profile_version: int
    #: Which editor versions the data describes.
    observed: str
    #: The ``initialize`` params the editor sends (its version, capabilities and ``clientInfo``).
    initialize: dict[str, Any]
    #: Where the ``initialize`` params come from.
    initialize_sources: tuple[str, ...]
    behaviours: tuple[Behaviour, ...]

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The ``clientCapabilities`` the editor advertises (wire names)."""
        return cast(dict[str, Any], self.initialize.get("clientCapabilities") or {})

    @property
    def client_info(self) -> dict[str, Any]:
        """The ``clientInfo`` the editor sends (``name``, ``version``)."""
        return cast(dict[str, Any], self.initialize.get("clientInfo") or {})

    def behaviour(self, behaviour_id: str) -> Behaviour | None:
        """The behaviour ``behaviour_id`` of this editor, ``None`` when none is documented."""
        return next((b for b in self.behaviours if b.id == behaviour_id), None)

    def advertises(self, method: str) -> bool:
        """Whether this editor advertised what an agent needs to send the request ``method``."""
        capabilities = self.client_capabilities
        fs = capabilities.get("fs") or {}
        if method == "fs/read_text_file":
            return fs.get("readTextFile") is True
        if method == "fs/write_text_file":
            return fs.get("writeTextFile") is True
        if method.startswith("terminal/"):
            return capabilities.get("terminal") is True
        if method == "elicitation/create":
            return bool(capabilities.get("elicitation"))
        return True


@cache
def load_profile(name: str) -> EditorProfile:
    """The profile ``name`` (one of :data:`PROFILE_NAMES`), read from its data file in this package.

    Raises :class:`ValueError` naming the known profiles when there is no such profile.
    """
    if name not in PROFILE_NAMES:
        raise ValueError(f"no editor profile {name!r}: acpio knows {', '.join(PROFILE_NAMES)}")
    data = json.loads(resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8"))
    return EditorProfile(
        profile=data["profile"],
        name=data["name"],
        profile_version=data["profileVersion"],
        observed=data["observed"],
        initialize=data["initialize"],
        initialize_sources=tuple(data["sources"]["initialize"]),
        behaviours=tuple(
            Behaviour(b["id"], b["effect"], b["summary"], tuple(b["sources"])) for b in data["behaviours"]
        ),
    )
