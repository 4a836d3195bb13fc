"""What one prompt run by the pool gave: :class:`SupervisedTurn`, a :class:`~acpio.client.TurnResult` plus."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from acpio.driver.result import TurnResult
from acpio.pool.events import PoolEvent

__all__ = ["SupervisedTurn"]


@dataclass(frozen=True, slots=True)
class SupervisedTurn(TurnResult):
    """A :class:`~acpio.client.TurnResult`, plus the pool slot that ran it and every step the pool took.

    A turn the pool gave up on (past its timeout, or cancelled by the caller, and not ended by the
    agent within the grace period) has ``stop_reason`` ``cancelled`` and its :attr:`events` say
    what followed (the kill, the new process, the session resumed); its text and tool calls are
    what came before. A turn whose agent died has ``error``, the agent's ``stderr_tail`` and a
    :class:`~acpio.pool.ProcessDied` among its events.
    """

    #: The pool slot (the process) that ran the turn; ``-1`` for a prompt that never became a turn.
    slot: int = -1
    #: The steps the pool took for the turn, in order.
    events: tuple[PoolEvent, ...] = ()
    #: The caller's tag for the prompt (``acpio batch``'s ``id``), if it gave one.
    prompt_id: str | None = None

    @classmethod
    def of(
        cls, result: TurnResult, *, slot: int, events: tuple[PoolEvent, ...], prompt_id: str | None = None
    ) -> SupervisedTurn:
        """``result`` with the pool's part added."""
        fields = {field.name: getattr(result, field.name) for field in dataclasses.fields(TurnResult)}
        return cls(**fields, slot=slot, events=events, prompt_id=prompt_id)

    @classmethod
    def not_run(cls, prompt_id: str | None, error: str, duration: float) -> SupervisedTurn:
        """The result of a prompt that never became a turn: its session could not be set up."""
        return cls(
            session_id="",
            stop_reason=None,
            text="",
            thoughts="",
            tool_calls=(),
            files_written=(),
            terminals=(),
            permissions=(),
            plan=(),
            usage=None,
            duration=duration,
            error=error,
            prompt_id=prompt_id,
        )

    def with_context(self, earlier: list[PoolEvent], prompt_id: str | None) -> SupervisedTurn:
        """The same result, ``earlier`` steps (taken before the turn started) first, tagged ``prompt_id``."""
        return dataclasses.replace(self, events=(*earlier, *self.events), prompt_id=prompt_id)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`TurnResult.to_dict`, each event tagged with its class name under ``event``."""
        data = TurnResult.to_dict(self)
        data["events"] = [{"event": type(e).__name__, **dataclasses.asdict(e)} for e in self.events]
        return data

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON (non-ASCII text kept as it is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
