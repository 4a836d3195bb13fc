"""What a :class:`~acpio.app.Turn` shows beside the conversation: forms, notices, usage, title, compaction.

:class:`TurnBeside` is the base of :class:`~acpio.app.Turn` that holds those verbs; the turn gives it
its connection, session, client features and update writer.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal, TypeVar

from acpio import schema as acp
from acpio.app.client_requests import elicit_form, elicit_url
from acpio.app.first_answer import Askers
from acpio.app.forms import Elicited
from acpio.app.tool_calls import ActiveToolCall, SessionUpdates
from acpio.app.update_templates import MESSAGE, UsageTemplate, given
from acpio.app.updates_v2 import V2Updates, state_update
from acpio.capabilities import CapabilityNotAdvertised, ClientFeatures
from acpio.jsonrpc import Connection

__all__ = ["TurnBeside"]

T = TypeVar("T")


class TurnBeside:
    """The verbs of a turn that are not its reply: elicitation, notices, usage, title, compaction."""

    #: The connection to the client.
    cx: Connection
    #: The session this turn belongs to.
    session_id: str
    #: What the client advertised at ``initialize``.
    client: ClientFeatures
    #: Whether the client asked to cancel this turn.
    cancel_requested: bool
    _updates: SessionUpdates
    _said: list[str]
    _askers: Askers

    @property
    def protocol_version(self) -> int:
        """The ACP version of the turn's connection (1 or 2): what its verbs write."""
        return self._updates.version

    async def update(self, update: acp.SessionUpdate) -> None:
        """Send one ``session/update`` for this session, then wait while the client is behind.

        ``update`` is the v1 model, as the session's history keeps it; on v2 it goes out in its v2
        shape (message ids, ``tool_call_update`` upserts, ``plan_update``...).
        """
        await self._updates.send(update)

    async def say(self, text: str) -> None:
        """Stream ``text`` to the user (an ``agent_message_chunk``; on v2 with its message's id)."""
        self._said.append(text)
        await self._updates.send_text(MESSAGE, text)

    @asynccontextmanager
    async def waiting_for_user(self) -> AsyncIterator[None]:
        """On v2: ``state_update`` ``requires_action`` while the block waits on the user, then ``running``."""
        updates = self._updates
        if not isinstance(updates, V2Updates):
            yield
            return
        await updates.send_v2(state_update("requires_action"))
        try:
            yield
        finally:
            if not self.cx.closed and not self.cancel_requested:
                updates.post_v2(state_update("running"))

    async def elicit(self, message: str, form: type[T], *, call: ActiveToolCall | None = None) -> Elicited[T]:
        """Ask the user to fill ``form`` (a dataclass, see :mod:`acpio.app.forms`); their answer.

        ``answer.value`` is the filled form when they accepted, ``None`` when they declined or
        cancelled. With ``call``, the question is tied to that tool call. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client offers no form
        elicitation (do without, or fail the work), and :class:`~acpio.app.forms.FormError` when an
        accepted answer does not fit the form.
        """
        async with self.waiting_for_user():
            return await elicit_form(self._askers, self.client, self.session_id, message, form, call)

    async def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None, call: ActiveToolCall | None = None
    ) -> Elicited[None]:
        """Ask the user to open ``url`` (a login, a payment: what a form must not ask); their answer.

        ``accept`` means they agreed to open it, not that they finished there: once the work at the
        URL is done, call :meth:`complete_elicitation` with ``answer.elicitation_id``. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client offers no URL elicitation.
        """
        async with self.waiting_for_user():
            return await elicit_url(
                self._askers, self.client, self.session_id, message, url, elicitation_id, call
            )

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client the work behind an accepted URL elicitation is done (``elicitation/complete``)."""
        self.cx.send_notification(acp.CompleteElicitationNotification(elicitation_id=elicitation_id))
        await self.cx.drain()

    async def notice(
        self,
        title: str,
        *,
        severity: Literal["info", "warning", "error"] = "info",
        description: str | None = None,
    ) -> None:
        """Tell the user something that is not part of the conversation (a ``notice`` update).

        On v1 only clients that advertise ``session.notices`` take notices; to others the same words
        are said as a message (``say``), so the user still reads them. On v2 every client takes them.
        """
        if self._updates.version == 2 or self.client.has("session.notices"):
            await self.update(acp.Notice(severity=severity, title=title, **given(description=description)))
            return
        detail = f": {description}" if description else ""
        await self.say(f"{severity}: {title}{detail}\n")

    async def report_usage(
        self, used: int, size: int, *, cost: float | None = None, currency: str = "USD"
    ) -> None:
        """How full the context window is (``usage_update``): ``used`` of ``size`` tokens; the cost so far."""
        await self._updates.send_template(UsageTemplate(used, size, cost, currency))

    async def set_title(self, title: str | None) -> None:
        """Give the session a title (``session_info_update``; ``None`` clears it)."""
        await self.update(acp.SessionInfoUpdate(title=title))

    async def compact(self, summary: str | Sequence[str], *, compaction_id: str | None = None) -> str:
        """Report a context compaction: ``in_progress``, its summary chunk by chunk, then ``completed``.

        ``summary`` is the text the conversation was compacted to (one chunk), or its chunks. Returns the
        compaction's id. On v1 raises :class:`~acpio.capabilities.CapabilityNotAdvertised` unless the
        client advertised ``session.compaction`` (v2 has no such marker).
        """
        if self._updates.version == 1 and not self.client.has("session.compaction"):
            raise CapabilityNotAdvertised(
                acp.SessionNotification.METHOD, "C.session.compaction", what="a compaction update"
            )
        compaction_id = compaction_id or f"compaction_{uuid.uuid4().hex[:16]}"
        await self.update(acp.CompactionUpdate(compaction_id=compaction_id, status="in_progress"))
        for chunk in [summary] if isinstance(summary, str) else summary:
            await self.update(
                acp.CompactionSummaryChunk(compaction_id=compaction_id, content=acp.TextContent(text=chunk))
            )
        await self.update(acp.CompactionUpdate(compaction_id=compaction_id, status="completed"))
        return compaction_id
