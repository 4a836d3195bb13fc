"""The error that stops a conductor: :class:`ConductorError`."""

from __future__ import annotations

from typing import Any

from acpio.errors import AcpError, InternalError, RequestError

__all__ = ["ConductorError"]


class ConductorError(AcpError):
    """The conductor could not go on: a component could not be started, or ended while the chain ran.

    Raised by :meth:`Chain.serve` once the conductor has shut down; the requests that were waiting
    were answered with :meth:`to_request_error`. ``lane`` and ``component`` say which component
    (``"Proxy(0)"``, ``"python proxy.py"``), ``stderr_tail`` holds the end of its stderr when it is
    a subprocess. Fix or replace that component.
    """

    def __init__(
        self,
        message: str,
        *,
        lane: str | None = None,
        component: str | None = None,
        exit_code: int | None = None,
        stderr_tail: str | None = None,
    ) -> None:
        self.message = message
        self.lane = lane
        self.component = component
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        text = message if not stderr_tail else f"{message}\n--- its stderr (last lines) ---\n{stderr_tail}"
        super().__init__(text)

    def to_request_error(self) -> RequestError:
        """The error for the requests this failure leaves unanswered: ``-32603``, details in ``data``."""
        data: dict[str, Any] = {}
        if self.lane is not None:
            data["lane"] = self.lane
        if self.component is not None:
            data["component"] = self.component
        if self.exit_code is not None:
            data["exitCode"] = self.exit_code
        if self.stderr_tail is not None:
            data["stderr"] = self.stderr_tail
        return InternalError(data or None, message=self.message)
