"""One prompt turn read for the pool: it ends on its own, or the watchdog stops reading it.

:class:`TurnRun` reads the turn in a task of its own, answering the agent's requests as the pool
was told, so that the watchdog can race its end against a timeout and a caller's cancel, and
still give the caller what came before when it gives up on the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from acpio.errors import AcpError, RequestError
from acpio.pool.events import PoolEvent
from acpio.pool.result import SupervisedTurn
from acpio.session import ActiveSession, PromptContent
from acpio.session.answers import TurnAnswers

__all__ = ["TurnRun"]


class TurnRun:
    """The turn of one prompt in ``session``, read by :attr:`reading` (a task) until its end."""

    def __init__(self, session: ActiveSession, prompt: PromptContent, answers: TurnAnswers) -> None:
        self._session = session
        self._answers = answers
        self._view = session.view
        self._already = self._view.text
        self.started = time.monotonic()
        session.send_prompt(prompt)
        #: Completes when the turn ended (the agent's stop reason read); raises what ended it otherwise.
        self.reading: asyncio.Task[None] = asyncio.get_running_loop().create_task(
            self._read(), name=f"acpio pool: turn of {session.session_id}"
        )

    async def _read(self) -> None:
        async for message in self._session:
            if message.is_request:
                await self._answers.answer(message)

    def send_cancel(self) -> None:
        """Send ``session/cancel`` (pending permission requests are answered ``cancelled``)."""
        with contextlib.suppress(AcpError):
            self._session.cancel()

    async def stop_reading(self) -> None:
        """Give up on the turn: stop reading it (the process is killed next)."""
        if not self.reading.done():
            self.reading.cancel()
        with contextlib.suppress(BaseException):
            await self.reading

    def result(
        self,
        *,
        events: list[PoolEvent],
        slot: int,
        stop_reason: str | None = None,
        error: str | None = None,
        stderr_tail: str | None = None,
        ended_at: float | None = None,
    ) -> SupervisedTurn:
        """What the turn gave: the agent's stop reason unless ``stop_reason`` overrides it; its error.

        ``error`` overrides the reading's failure as the error; ``ended_at`` (``time.monotonic()``)
        is when the turn ended for the caller, now by default.
        """
        error_code: int | None = None
        if stop_reason is None and error is None and self.reading.done() and not self.reading.cancelled():
            failure = self.reading.exception()
            if failure is None and self._session.stop_reason is not None:
                stop_reason = str(getattr(self._session.stop_reason, "value", self._session.stop_reason))
            elif failure is not None:
                error = str(failure) or type(failure).__name__
                if isinstance(failure, RequestError):
                    error_code = failure.code
        text = self._view.text
        return SupervisedTurn(
            session_id=self._session.session_id,
            slot=slot,
            stop_reason=stop_reason,
            text=text[len(self._already) :] if text.startswith(self._already) else text,
            tool_calls=tuple(self._view.tool_calls.values()),
            duration=(time.monotonic() if ended_at is None else ended_at) - self.started,
            error=error,
            error_code=error_code,
            stderr_tail=stderr_tail,
            events=tuple(events),
        )
