"""The ``session/update`` writer of a :class:`~acpio.app.Turn` on a v2 connection.

A turn's verbs build the version-neutral update (the v1 model) and hand it to its writer: the v1
writer (:class:`~acpio.app.tool_calls.SessionUpdates`) sends it as it is, :class:`V2Updates` sends
its v2 shape (:class:`~acpio.app.v2_shapes.V2Shapes`) and keeps the neutral one for the history
(and the store, through ``record``). What only v2 has (``state_update``, agent terminals) goes out
with :meth:`V2Updates.send_v2`, and stays out of the neutral history.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import orjson

from acpio import schema as acp
from acpio.app.tool_calls import SessionUpdates
from acpio.app.update_templates import Template, kept_text
from acpio.app.v2_shapes import V2Shapes, keep_message_id
from acpio.capabilities import ClientFeatures
from acpio.errors import NotInProtocolVersion
from acpio.jsonrpc import Connection, RawJson
from acpio.jsonrpc.messages import encode_value

__all__ = ["Recorder", "SessionState", "V2ClientFeatures", "V2Updates", "state_update"]

_UPDATE: Final = "session/update"
#: What to send on v2 instead of an update it does not have, by the v1 model's name.
_INSTEAD: Final = {
    "CurrentModeUpdate": "v2 has no modes: turn.set_mode() sends the 'mode' option's config_option_update",
}

#: The foreground states of a v2 session (``state_update``).
SessionState: TypeAlias = Literal["running", "idle", "requires_action"]
#: ``record(session_id, params)``: keep a neutral ``session/update`` (the JSON of its params, as v1
#: sends them) in the session's history (a store).
Recorder: TypeAlias = Callable[[str, bytes], None]


class V2ClientFeatures(ClientFeatures):
    """What a v2 client advertised, in v1's terms (``turn.client`` reads both alike).

    v2 makes boolean config options, notices and compaction baseline; elicitation keeps its shape;
    files and terminals do not exist.
    """

    @classmethod
    def from_capabilities(cls, capabilities: object) -> V2ClientFeatures:
        """The features of a v2 ``initialize`` request's ``capabilities``."""
        caps = capabilities if isinstance(capabilities, dict) else {}
        features: dict[str, Any] = {
            "session": {"configOptions": {"boolean": {}}, "notices": {}, "compaction": {}}
        }
        for name in ("elicitation", "auth"):
            if isinstance(caps.get(name), dict):
                features[name] = caps[name]
        return cls(features)


def state_update(state: SessionState, stop_reason: str | None = None) -> dict[str, Any]:
    """The v2 ``state_update`` object (``stopReason`` on ``idle`` only)."""
    update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
    if stop_reason is not None:
        update["stopReason"] = stop_reason
    return update


class V2Updates(SessionUpdates):
    """Writes a turn's updates as v2 has them; keeps (and records) their neutral form."""

    version = 2

    def __init__(self, cx: Connection, session_id: str, cwd: Path, record: Recorder | None = None) -> None:
        super().__init__(cx, session_id, cwd)
        self._shapes = V2Shapes()
        self._record = record

    def _post_model(self, update: acp.SessionUpdate) -> None:
        neutral = acp.SessionNotification(session_id=self.session_id, update=update).to_wire()
        shaped = self._shapes.convert(neutral["update"])
        if shaped is None:
            raise NotInProtocolVersion(
                f"the {neutral['update'].get('sessionUpdate')} update",
                2,
                _INSTEAD.get(type(update).__name__, ""),
            )
        self.sent.append(update)
        if self._record is not None:
            message_id = shaped.get("messageId")
            if isinstance(message_id, str):
                keep_message_id(neutral["update"], message_id)
            self._record(self.session_id, encode_value(neutral))
        self.post_v2(shaped)

    def _post_template(self, template: Template) -> None:
        """Send a template's v2 object and record its neutral one, as :meth:`_post_model` does a model's."""
        try:
            neutral, shaped = template.update_json(), template.v2_json()
        except TypeError:  # a value the template does not write: the model, as the verb built it
            self._post_model(template.model())
            return
        self._shapes.end_message()
        self._send(template.kept(), neutral, shaped)

    def _post_text(self, kind: str, text: str, opening: bytes) -> None:
        """A text chunk with its message's id: in ``messageId`` on the wire, in ``_meta`` in the history."""
        message_id = orjson.dumps(self._shapes.message_id(kind))
        neutral = b"".join((opening, b',"_meta":{"acpio":{"messageId":', message_id, b"}}}"))
        shaped = b"".join((opening, b',"messageId":', message_id, b"}"))
        self._send(kept_text(kind, text), neutral, shaped)

    def _send(self, kept: Template | str, neutral: bytes, shaped: bytes) -> None:
        """Keep ``kept``, record the ``neutral`` update object and send the ``shaped`` one."""
        self.sent.append(kept)
        if self._record is not None:
            self._record(self.session_id, self.params_head + neutral + b"}")
        self.cx.send_notification(_UPDATE, RawJson(self.params_head + shaped + b"}", self))

    def post_v2(self, update: dict[str, Any]) -> None:
        """Send a v2 update object as it is, without waiting (not kept in the neutral history)."""
        self.cx.send_notification(_UPDATE, {"sessionId": self.session_id, "update": update})

    async def send_v2(self, update: dict[str, Any]) -> None:
        """Send a v2 update object as it is, then wait while the client is behind."""
        self.post_v2(update)
        await self.cx.drain()

    def message_id(self, kind: str) -> str:
        """The ``messageId`` the next chunk of ``kind`` (``"user_message_chunk"``...) goes out with."""
        return self._shapes.message_id(kind)
