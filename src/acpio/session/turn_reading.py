"""How a session reads its turns: the items of its queue, its :class:`TurnView`, the end of each turn.

On ACP v1 a turn ends at the answer to ``session/prompt``. On v2 that answer only accepts the
prompt, and the turn ends with an idle ``state_update``; the two may come in either order (an agent
may send the idle state before its answer is read), so the turn ends once both were read. An idle
state while no prompt is waiting (background work ending between turns) ends nothing, nor does
one read before the acceptance unless the agent reported foreground work (``running``,
``requires_action``) since the prompt was sent: that one is a snapshot the agent sent before it
took the prompt up (background work reported while idle), not the end of this turn. After a
cancel, any idle state counts: it is how the agent confirms the cancel, started or not.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from acpio.errors import InvalidParams
from acpio.session.messages import PromptAccepted, QueueItem, SessionMessage, TurnEnded
from acpio.session.turn_view import StateChanged, TurnView

if TYPE_CHECKING:
    from acpio.schema import v2

_log = logging.getLogger("acpio.session")


class TurnReader:
    """A session's reading of its queue: the view of its turns, and when each turn ends.

    On v2 every update read is applied to the view (the idle state ends the turn). On v1 the view
    is kept from the first time it is asked for (:meth:`kept_view`: ``session.view``,
    ``read_to_string``), so that reading a turn without it costs what it always did (no parse).
    """

    __slots__ = (
        "_accepted",
        "_agent_state",
        "_busy",
        "_cancelled",
        "_ending",
        "_idle",
        "_keeping",
        "_prompting",
        "_stop_reason",
        "_view",
    )

    def __init__(self, protocol_version: int) -> None:
        self._view = TurnView()
        self._keeping = protocol_version == 2
        self._prompting = False
        self._accepted: v2.PromptResponse | None = None
        self._idle = False
        #: The state the agent last reported (the view's says ``running`` from the prompt on).
        self._agent_state = "idle"
        #: Foreground work was reported since the prompt was sent (or was going on then).
        self._busy = False
        #: The client cancelled the turn.
        self._cancelled = False
        self._stop_reason: str | None = None
        self._ending: TurnEnded | None = None

    def kept_view(self) -> TurnView:
        """The view, kept up to date from now on (on v2 it always is)."""
        self._keeping = True
        return self._view

    def start(self) -> None:
        """A prompt was sent."""
        self._busy = self._agent_state != "idle"
        self._cancelled = False
        self._view.start_turn()
        self._prompting = True
        self._accepted = None
        self._idle = False
        self._stop_reason = None

    def cancel(self) -> None:
        """The client cancelled the turn: the next idle state ends it."""
        self._cancelled = True

    def take_end(self) -> TurnEnded | None:
        """The end of a v2 turn, once, when both the acceptance and the idle state were read."""
        ending, self._ending = self._ending, None
        return ending

    def read(self, item: QueueItem) -> SessionMessage | TurnEnded | None:
        """What the reader gets of a queued item: ``None`` for a v2 acceptance (the turn goes on).

        Raises the error the agent answered the prompt with. A ``session/update`` is applied to
        the view (when kept; :attr:`SessionMessage.event` says how); one that does not match the
        schema is skipped with a warning, its ``event`` left ``None``.
        """
        if isinstance(item, BaseException):
            self._prompting = False  # refused: no turn to end
            raise item
        if isinstance(item, PromptAccepted):
            self._accepted = item.response
            self._check()
            return None
        if isinstance(item, TurnEnded):
            if item.response is not None:  # v1: the answer ends the turn
                self._view.end_turn(str(item.response.stop_reason))
            return item
        if self._keeping and not item.is_request:
            try:
                item.event = self._view.apply(item)
            except InvalidParams as exc:
                _log.warning("Skipping a malformed session/update (%s): %s", item.dispatch.session_id, exc)
                return item
            event = item.event
            if isinstance(event, StateChanged):
                self._agent_state = event.state
                if self._prompting:
                    self._read_state(event)
        return item

    def _read_state(self, event: StateChanged) -> None:
        if event.state != "idle":
            self._busy = True
        elif self._busy or self._cancelled or self._accepted is not None:
            self._idle = True
            self._stop_reason = event.stop_reason
            self._check()

    def _check(self) -> None:
        if self._prompting and self._idle and self._accepted is not None:
            self._prompting = False
            self._ending = TurnEnded(None, stop_reason=self._stop_reason, accepted=self._accepted)
