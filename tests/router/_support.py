"""Components that record what the router hands them, and answer each request with it."""

from __future__ import annotations

from typing import Any

from acpio import Dispatch, RequestDispatch, UntypedRole
from acpio.jsonrpc import Builder


class Recorder:
    """A component for one version: records each message it reads, answers requests with them."""

    def __init__(self, version: int) -> None:
        self.version = version
        #: (method, params) of every request and notification read, in order.
        self.seen: list[tuple[str, Any]] = []
        self.connections = 0
        self.builder: Builder = UntypedRole.builder(name=f"v{version}")
        self.builder.on_dispatch(self._record)

    async def _record(self, message: Dispatch) -> None:
        self.seen.append((message.method, message.params))
        if isinstance(message, RequestDispatch):
            result: dict[str, Any] = {"servedBy": self.version, "method": message.method}
            if message.method == "initialize":
                result["protocolVersion"] = self.version
            message.responder.respond(result)

    async def serve(self, target: Any) -> None:
        self.connections += 1
        await self.builder.serve(target)
