"""When a turn ends: on ACP v1 at the answer to ``session/prompt``, on v2 at the idle state after it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from acpio.errors import InvalidParams
from acpio.session.messages import SessionMessage, TurnEnded
from acpio.session.turn_view import StateChanged

if TYPE_CHECKING:
    from acpio.schema import v2
    from acpio.session.turn_view import TurnEvent, TurnView

_log = logging.getLogger("acpio.session")


class TurnEnd:
    """A session's watch for the end of its turn.

    On v2 the answer to ``session/prompt`` only accepts the prompt; the turn ends with an idle
    ``state_update``. The two may come in either order (an agent may send the idle state before its
    answer is read), so the turn ends once both were read: :meth:`take_end` then gives the
    :class:`~acpio.session.TurnEnded`. An idle state while no prompt is waiting (background work
    ending between turns) ends nothing. On v1 the answer itself is the end and nothing is kept here.
    """

    __slots__ = ("_accepted", "_ending", "_idle", "_prompting", "_stop_reason")

    def __init__(self) -> None:
        self._prompting = False
        self._accepted: v2.PromptResponse | None = None
        self._idle = False
        self._stop_reason: str | None = None
        self._ending: TurnEnded | None = None

    def start(self, view: TurnView) -> None:
        """A prompt was sent."""
        view.start_turn()
        self._prompting = True
        self._accepted = None
        self._idle = False
        self._stop_reason = None

    def accepted(self, response: v2.PromptResponse) -> None:
        """The agent accepted the prompt (v2)."""
        self._accepted = response
        self._check()

    def read(self, view: TurnView, message: SessionMessage) -> None:
        """Apply a ``session/update`` read to ``view`` (:attr:`SessionMessage.event` says how).

        An update that does not match the schema is skipped with a warning (its ``event`` stays
        ``None``); an idle state may end the turn.
        """
        try:
            message.event = view.apply(message)
        except InvalidParams as exc:
            _log.warning("Skipping a malformed session/update (%s): %s", message.dispatch.session_id, exc)
            return
        self._saw(message.event)

    def _saw(self, event: TurnEvent | None) -> None:
        if self._prompting and isinstance(event, StateChanged) and event.state == "idle":
            self._idle = True
            self._stop_reason = event.stop_reason
            self._check()

    def failed(self) -> None:
        """The prompt was refused (an error answer): no turn to end."""
        self._prompting = False

    def take_end(self) -> TurnEnded | None:
        """The end of the turn, once, when both the acceptance and the idle state were read."""
        ending, self._ending = self._ending, None
        return ending

    def _check(self) -> None:
        if self._prompting and self._idle and self._accepted is not None:
            self._prompting = False
            self._ending = TurnEnded(None, stop_reason=self._stop_reason, accepted=self._accepted)
