"""What one prompt run by the pool gave: :class:`SupervisedTurn`."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from acpio.pool.events import PoolEvent
from acpio.session import ToolCallView

__all__ = ["SupervisedTurn"]


@dataclass(frozen=True, slots=True)
class SupervisedTurn:
    """A turn run by the pool: what the agent gave, and every step the pool took for it (:attr:`events`).

    A turn the pool gave up on (past its timeout, or cancelled by the caller, and not ended by the
    agent within the grace period) has ``stop_reason`` ``cancelled`` and its events say what
    followed (the kill, the new process, the session resumed). A turn whose agent died has
    ``stop_reason`` ``None``, ``error`` and the agent's ``stderr_tail``.
    """

    session_id: str
    #: The pool slot (the process) that ran the turn.
    slot: int
    #: ``end_turn``, ``cancelled``...; ``None`` when the turn failed (:attr:`error`).
    stop_reason: str | None
    #: The agent's message text of the turn (what came before the end, for a turn given up on).
    text: str
    #: The tool calls the turn touched, each with every update merged.
    tool_calls: tuple[ToolCallView, ...]
    #: Seconds from sending the prompt to the end of the turn for the caller.
    duration: float
    error: str | None = None
    #: The JSON-RPC code of the agent's error answer, if it answered the prompt with one.
    error_code: int | None = None
    #: The end of the agent's stderr, when its process ended during the turn.
    stderr_tail: str | None = None
    #: The steps the pool took during the turn, in order.
    events: tuple[PoolEvent, ...] = ()
    #: The caller's tag for the prompt (``acpio batch``'s ``id``), if it gave one.
    prompt_id: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the turn ended normally: no error, and stop reason ``end_turn``."""
        return self.error is None and self.stop_reason == "end_turn"

    @classmethod
    def not_run(cls, prompt_id: str | None, error: str, duration: float) -> SupervisedTurn:
        """The result of a prompt that never became a turn: its session could not be set up."""
        return cls("", -1, None, "", (), duration, error=error, prompt_id=prompt_id)

    def with_context(self, earlier: list[PoolEvent], prompt_id: str | None) -> SupervisedTurn:
        """The same result, ``earlier`` steps (taken before the turn started) first, tagged ``prompt_id``."""
        return dataclasses.replace(self, events=(*earlier, *self.events), prompt_id=prompt_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (snake_case keys); each event is tagged with its class name under ``event``."""
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        data["tool_calls"] = [dataclasses.asdict(call) for call in self.tool_calls]
        data["events"] = [{"event": type(e).__name__, **dataclasses.asdict(e)} for e in self.events]
        data["ok"] = self.ok
        return data

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)
