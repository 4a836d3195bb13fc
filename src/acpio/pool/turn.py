"""One prompt turn read for the pool: it ends on its own, or the watchdog stops reading it.

:class:`TurnRun` reads an :class:`~acpio.client.AgentSession`'s turn (its
:class:`~acpio.client.TurnStream`) in a task of its own, so that the watchdog can race the turn's
end against a timeout and a caller's cancel, and still give the caller what came before when it
gives up on the turn.
"""

from __future__ import annotations

import asyncio
import contextlib

from acpio.driver.client import AgentSession
from acpio.driver.result import TurnResult
from acpio.session import PromptContent

__all__ = ["TurnRun"]


class TurnRun:
    """The turn of one prompt in ``session``, read by :attr:`reading` (a task) until its end."""

    def __init__(self, session: AgentSession, prompt: PromptContent) -> None:
        self._stream = session.stream(prompt)
        #: Completes with the turn's result when it ended (normally, with the agent's error, or
        #: because the connection ended: see :attr:`TurnResult.error`).
        self.reading: asyncio.Task[TurnResult] = asyncio.get_running_loop().create_task(
            self._stream.result(), name=f"acpio pool: turn of {session.session_id}"
        )

    def send_cancel(self) -> None:
        """Send ``session/cancel`` (pending permission requests are answered ``cancelled``)."""
        self._stream.cancel()

    async def stop_reading(self) -> None:
        """Give up on the turn: stop reading it (the process is killed next)."""
        if not self.reading.done():
            self.reading.cancel()
        with contextlib.suppress(BaseException):
            await self.reading

    def abandon(self) -> TurnResult:
        """End the turn given up on (after :meth:`stop_reading`): stop reason ``cancelled``, what was read.

        The text, tool calls, permissions asked, files written, commands run and usage that came
        before (:meth:`TurnStream.abandon <acpio.client.TurnStream.abandon>`).
        """
        return self._stream.abandon("cancelled")
