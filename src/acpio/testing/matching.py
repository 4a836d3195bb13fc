"""Tolerant comparison of a recorded message with a live one: what a replay forgives, and what it reports.

Two runs of the same conversation never agree byte for byte. :class:`Tolerance` says what may
differ:

* **identifiers** the agent or client makes up (``sessionId``, ``toolCallId``, ``terminalId``,
  ``messageId``...): a recorded value stands for whatever the live run used in its place, as long
  as it is the same one every time (a *binding*, kept in :class:`Bindings`);
* **timestamps** (ISO 8601 strings): any one matches any other;
* **ignored fields**, by name, anywhere (none by default);
* JSON-RPC **request ids**, which a replay maps itself.

:func:`kind_of` is what makes two messages candidates for each other (sender, method, the kind of a
``session/update``, the method a response answers): among the agent's messages between two of the
client's, those of different kinds may come in any order, those of one kind in the recorded order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["BOUND_FIELDS", "Bindings", "Tolerance", "kind_of"]

#: Fields whose values each run makes up: compared through :class:`Bindings`.
BOUND_FIELDS: Final = frozenset(
    {"sessionId", "toolCallId", "terminalId", "messageId", "elicitationId", "planId", "requestId"}
)

_TIMESTAMP: Final = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")

#: How many differences of one message are reported.
MAX_DIFFERENCES: Final = 5


class Bindings:
    """The identifiers of the recording and of the live run that stand for each other, both ways."""

    def __init__(self) -> None:
        self.live: dict[str, str] = {}
        """Recorded value -> live value."""
        self.recorded: dict[str, str] = {}
        """Live value -> recorded value."""

    def check(self, recorded: str, live: str) -> bool:
        """Whether ``live`` may stand for ``recorded``; binds them when neither is bound yet."""
        known = self.live.get(recorded)
        if known is not None:
            return known == live
        if live in self.recorded:
            return False
        self.live[recorded] = live
        self.recorded[live] = recorded
        return True


@dataclass(frozen=True)
class Tolerance:
    """What a replay forgives when it compares a recorded message with a live one (module docstring)."""

    bound_fields: frozenset[str] = BOUND_FIELDS
    ignored_fields: frozenset[str] = frozenset()
    timestamps: bool = True
    reorder: bool = True
    """Whether the agent's messages of different kinds may come in another order than recorded."""
    bindings: Bindings = field(default_factory=Bindings, compare=False)
    """The identifiers bound so far (each replay starts from a copy with fresh ones)."""

    def differences(self, recorded: Any, live: Any) -> list[str]:
        """Where ``live`` departs from ``recorded`` (the JSON-RPC ``id`` left out): ``path: was -> is``."""
        out: list[str] = []
        if isinstance(recorded, dict) and isinstance(live, dict):
            recorded = {k: v for k, v in recorded.items() if k != "id"}
            live = {k: v for k, v in live.items() if k != "id"}
        self._compare(recorded, live, "", None, out)
        return out[:MAX_DIFFERENCES]

    def _compare(self, recorded: Any, live: Any, path: str, key: str | None, out: list[str]) -> None:
        if len(out) >= MAX_DIFFERENCES:
            return
        if isinstance(recorded, dict) and isinstance(live, dict):
            for name in [*recorded, *(k for k in live if k not in recorded)]:
                if name in self.ignored_fields:
                    continue
                where = f"{path}.{name}" if path else name
                if name not in live:
                    out.append(f"{where}: {_shown(recorded[name])} -> (absent)")
                elif name not in recorded:
                    out.append(f"{where}: (absent) -> {_shown(live[name])}")
                else:
                    self._compare(recorded[name], live[name], where, name, out)
            return
        if isinstance(recorded, list) and isinstance(live, list):
            for index, (a, b) in enumerate(zip(recorded, live, strict=False)):
                self._compare(a, b, f"{path}[{index}]", key, out)
            if len(recorded) != len(live):
                out.append(f"{path}: {len(recorded)} items -> {len(live)} items")
            return
        if isinstance(recorded, str) and isinstance(live, str):
            if key in self.bound_fields:
                if not self.bindings.check(recorded, live):
                    out.append(f"{path}: {_shown(recorded)} -> {_shown(live)} (another identifier)")
                return
            if self.timestamps and _TIMESTAMP.match(recorded) and _TIMESTAMP.match(live):
                return
        if recorded != live or type(recorded) is not type(live):
            out.append(f"{path or '(message)'}: {_shown(recorded)} -> {_shown(live)}")

    def to_live(self, value: Any, key: str | None = None) -> Any:
        """``value`` (recorded) with its bound identifiers replaced by the live run's."""
        return _mapped(value, key, self.bound_fields, self.bindings.live)

    def to_recorded(self, value: Any, key: str | None = None) -> Any:
        """``value`` (live) with its bound identifiers replaced by the recording's, for showing."""
        return _mapped(value, key, self.bound_fields, self.bindings.recorded)


def _mapped(value: Any, key: str | None, fields: frozenset[str], table: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value) if key in fields else value
    if isinstance(value, list):
        return [_mapped(item, key, fields, table) for item in value]
    if isinstance(value, dict):
        return {k: _mapped(v, k, fields, table) for k, v in value.items()}
    return value


def _shown(value: Any) -> str:
    import orjson

    text = orjson.dumps(value).decode()
    return text if len(text) <= 80 else text[:79] + "…"


def kind_of(sender: str, message: Mapping[str, Any], answered: str | None = None) -> tuple[str, ...]:
    """What a message is, for pairing: ``(sender, method[, update kind])``, or ``(sender, "answer", method)``.

    ``answered`` is the method of the request a response answers, when known.
    """
    method = message.get("method")
    if isinstance(method, str):
        params = message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str):
            return (sender, method, update["sessionUpdate"])
        return (sender, method)
    return (sender, "answer", answered or "")
