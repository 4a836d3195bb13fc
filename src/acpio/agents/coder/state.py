"""What the reference agent keeps per open session, and the models a session is offered."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from acpio.agents.coder.catalogue import Catalogue
from acpio.agents.coder.settings import ModeSpec, Settings
from acpio.agents.coder.tools import McpServers

__all__ = ["SessionState", "model_choices"]


@dataclass
class SessionState:
    """What the agent keeps per open session beside the app's settings."""

    settings: Settings
    catalogue: Catalogue
    modes: dict[str, ModeSpec]
    #: The directories the session's files may be in: its cwd and its additional directories.
    roots: list[Path]
    mcp: McpServers | None = None
    #: Whether the session has a title (given by this agent or by the client): none is given again.
    titled: bool = False


def model_choices(state: SessionState) -> dict[str, str]:
    """The ``model`` option's choices: every available model, and each mode's list of models run in turn."""
    choices = {m.qualified_id: f"{m.label} ({m.provider})" for m in state.catalogue.models}
    for mode in state.settings.modes:  # a mode may run several models in turn
        if (
            mode.model
            and "," in mode.model
            and all(state.catalogue.find(p.strip()) for p in mode.model.split(","))
        ):
            choices[mode.model] = " + ".join(p.strip() for p in mode.model.split(","))
    return choices or {"none": "No model available"}
