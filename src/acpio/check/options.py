"""What ``acpio check`` is asked to do: :class:`CheckOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from acpio.profiles.profile import PROFILE_NAMES

__all__ = ["CheckOptions", "ProtocolChoice"]

#: ``--protocol``: the v1 requirements, the v2 ones, or both (two connections).
ProtocolChoice = Literal["1", "2", "both"]


@dataclass(frozen=True)
class CheckOptions:
    """The prompts the check sends, its time limits and which requirements it runs."""

    protocol: ProtocolChoice = "1"
    #: A prompt the agent answers: the prompt lifecycle, the history that session/load replays.
    prompt: str = "Hello! What can you do?"
    #: A prompt that keeps the agent busy until it is cancelled (``acpio testy``: ``sleep 60``).
    busy_prompt: str = "sleep 60"
    #: A prompt under which the agent asks permission (``acpio testy``: ``permission ...``).
    permission_prompt: str = "permission May I edit the project?"
    #: Seconds any one answer may take (each check gives a verdict after it, never a hang).
    timeout: float = 10.0
    #: Seconds the agent has to answer ``initialize`` (starting an interpreter takes time).
    start_timeout: float = 30.0
    #: The editor profiles whose initialize and behaviour are checked (``EDITOR-*``).
    editors: tuple[str, ...] = PROFILE_NAMES
    #: How many connections (each a process of the agent) run at the same time.
    parallel: int = 2
