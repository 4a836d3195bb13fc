"""What a load balancer asks a server: ``/healthz`` (is it alive) and ``/readyz`` (may it take clients).

* ``GET /healthz`` answers ``200 ok`` while the server's event loop runs: a balancer or supervisor
  that gets no answer restarts the process.
* ``GET /readyz`` answers ``200 ready`` when the server takes new connections: not draining, not
  full, and every :class:`ReadinessCheck` passes (the session store answers, say). Otherwise
  ``503`` and why, in a line of text (``not ready: draining``). A balancer sends no new client to a
  server that is not ready.

Both take ``HEAD`` too, and need no bearer token (a balancer checks without credentials): they
tell only whether the server is up, and which check fails, not its error (that is logged).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from acpio.remote.connections import Connections, Send

__all__ = ["HEALTH_PATHS", "ReadinessCheck", "serve_health"]

_log = logging.getLogger("acpio.remote")

#: The paths answered here (under the root path the listener is mounted at).
HEALTH_PATHS = frozenset({"/healthz", "/readyz"})


@dataclass(frozen=True, slots=True)
class ReadinessCheck:
    """Something the server needs to take sessions: ``/readyz`` fails while ``check()`` raises or hangs.

    ``name`` says what failed in ``/readyz``'s answer (``the session store``); ``check`` is a
    coroutine function that returns when all is well and raises (its message logged) when not;
    it fails when it takes more than ``timeout`` seconds.
    """

    name: str
    check: Callable[[], Awaitable[object]]
    timeout: float = 2.0


class Readiness:
    """Runs the checks for ``/readyz`` and logs each change between ready and not."""

    def __init__(self, checks: Sequence[ReadinessCheck]) -> None:
        self.checks = tuple(checks)
        self._failing: str | None = None

    async def failing(self) -> str | None:
        """The name of the first check that fails now, ``None`` when all pass (run concurrently)."""
        results = await asyncio.gather(*(self._run(check) for check in self.checks))
        failed = next((check.name for check, ok in zip(self.checks, results, strict=True) if not ok), None)
        if failed is None and self._failing is not None:
            _log.warning("Ready again: %s answers", self._failing)
        self._failing = failed
        return failed

    async def _run(self, check: ReadinessCheck) -> bool:
        try:
            await asyncio.wait_for(check.check(), check.timeout)
        except TimeoutError:
            self._log_failure(check, f"no answer within {check.timeout:g} s")
            return False
        except Exception as exc:  # whatever the check raises means "not ready"
            self._log_failure(check, str(exc))
            return False
        return True

    def _log_failure(self, check: ReadinessCheck, why: str) -> None:
        if self._failing != check.name:
            _log.warning("Not ready: %s fails: %s", check.name, why)


async def serve_health(
    path: str, method: str, connections: Connections, readiness: Readiness, send: Send
) -> None:
    """Answer ``/healthz`` or ``/readyz`` (``path`` relative to the listener's root)."""
    if method not in ("GET", "HEAD"):
        await _answer(send, 405, "Method not allowed: GET or HEAD", head=False)
        return
    head = method == "HEAD"
    if path == "/healthz":
        await _answer(send, 200, "ok", head=head)
        return
    reason: str | None
    if connections.draining:
        reason = "draining"
    elif connections.full():
        reason = "full"
    else:
        failed = await readiness.failing()
        reason = None if failed is None else f"{failed} fails"
    if reason is None:
        await _answer(send, 200, "ready", head=head)
    else:
        await _answer(send, 503, f"not ready: {reason}", head=head)


async def _answer(send: Send, status: int, text: str, *, head: bool) -> None:
    body = f"{text}\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
