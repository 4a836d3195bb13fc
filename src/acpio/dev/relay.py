"""The relay of ``acpio dev``: frames passed between a client and an agent process restarted on change.

Frames go through as they came, except where a session id must be rewritten (a session reopened
as a new one). The relay reads just enough of them to keep what a restart needs: the client's
``initialize`` params, the sessions it opened, the requests in flight each way. On a restart the
client's frames wait; the new process gets the ``initialize`` again and each session reopened
(:func:`~acpio.dev.sessions.reopen_method`), with the relay's own request ids (``acpio-dev/N``)
whose answers stay with it. The client's requests still unanswered by the old process get an
error, and what the client answers to the old process's requests is dropped. A process that exits
by itself (a syntax error just saved) waits for the next change; meanwhile requests are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections.abc import Callable
from typing import Any

import orjson

from acpio.dev.sessions import OPENERS, OpenSessions, reopen_method
from acpio.dev.watch import FileWatcher
from acpio.errors import AcpError, RequestError, error_from_wire
from acpio.jsonrpc.messages import JsonValue, RequestId
from acpio.transports import AcpAgent, AgentCommand, OversizedFrame, Transport

__all__ = ["DevRelay"]

#: How long a new process may take to answer the replayed ``initialize`` and each reopening.
_REPLAY_TIMEOUT = 30.0
_RESTARTED = -32603


def _stderr(line: str) -> None:
    print(f"acpio dev: {line}", file=sys.stderr, flush=True)


class DevRelay:
    """Serves ``upstream`` (the client) with the agent ``command``, restarted when ``watcher`` sees a change.

    ``log`` gets one line per event (a restart, a session reopened, the agent exiting); stderr by default.
    """

    def __init__(
        self,
        command: AgentCommand,
        upstream: Transport,
        watcher: FileWatcher,
        *,
        log: Callable[[str], None] = _stderr,
    ) -> None:
        self._command = command
        self._up = upstream
        self._watcher = watcher
        self._log = log
        self._agent: Transport | None = None
        self._pump: asyncio.Task[None] | None = None
        self._initialize: JsonValue = None
        self._initialized: dict[str, Any] = {}
        self.sessions = OpenSessions()
        #: The client's requests the agent has not answered: method and params, by id.
        self._client_pending: dict[RequestId, tuple[str, JsonValue]] = {}
        #: The ids of the agent's requests the client has not answered.
        self._agent_pending: set[RequestId] = set()
        self._own: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        #: Sessions being reopened with session/load: the agent's replay of them is not passed on.
        self._replaying: set[str] = set()
        self._gate = asyncio.Lock()
        #: How many agent processes were started.
        self.starts = 0

    def __repr__(self) -> str:
        return f"<DevRelay {self._command.display()!r} starts={self.starts}>"

    async def run(self) -> None:
        """Relay until the client closes its end; then stop the agent."""
        await self._start()
        watching = asyncio.get_running_loop().create_task(self._watch(), name="acpio dev watcher")
        try:
            await self._from_client()
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
            await self._stop()

    # --- processes --------------------------------------------------------------------------------

    async def _start(self) -> None:
        self.starts += 1
        agent = await AcpAgent(self._command).open()
        self._agent = agent
        self._pump = asyncio.get_running_loop().create_task(self._from_agent(agent), name="acpio dev agent")

    async def _stop(self) -> None:
        agent, pump, self._agent, self._pump = self._agent, self._pump, None, None
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        if agent is not None:
            await agent.aclose()
        self._fail_pending("The agent restarted (acpio dev) before answering: send the request again")

    def _fail_pending(self, message: str) -> None:
        for request_id in self._client_pending:
            self._to_client(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": _RESTARTED, "message": message}}
            )
        self._client_pending.clear()
        self._agent_pending.clear()
        for future in self._own.values():
            if not future.done():
                future.set_exception(RequestError(_RESTARTED, message))
        self._own.clear()

    async def _watch(self) -> None:
        while True:
            changed = await self._watcher.wait_changed()
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            self._log(f"{shown} changed: restarting the agent")
            async with self._gate:
                await self._stop()
                try:
                    await self._start()
                    await self._replay()
                except (AcpError, OSError, TimeoutError) as exc:
                    self._log(f"the restarted agent failed ({exc}); waiting for the next change")

    async def _replay(self) -> None:
        """Initialize the new process as the client did, and reopen the client's sessions in it."""
        if self._initialize is None:
            return
        self._initialized = await self._call("initialize", self._initialize)
        method = reopen_method(self._initialized)
        for client_id, setup in list(self.sessions.setups.items()):
            params = dict(setup)
            if method != "session/new":
                params["sessionId"] = self.sessions.agent_id(client_id)
                self._replaying.add(params["sessionId"])
            try:
                result = await self._call(method, params)
            except RequestError as exc:
                self._log(f"session {client_id}: {method} failed ({exc}); opening a new session in its place")
                method_used, result = "session/new", await self._call("session/new", setup)
            else:
                method_used = method
            finally:
                self._replaying.discard(str(params.get("sessionId")))
            agent_id = result.get("sessionId") if method_used == "session/new" else params["sessionId"]
            if isinstance(agent_id, str):
                self.sessions.reopened_as(client_id, agent_id)
            self._log(f"session {client_id}: reopened with {method_used}")

    async def _call(self, method: str, params: JsonValue) -> dict[str, Any]:
        request_id = f"acpio-dev/{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._own[request_id] = future
        self._to_agent({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        async with asyncio.timeout(_REPLAY_TIMEOUT):
            return await future

    # --- the client's frames ----------------------------------------------------------------------

    async def _from_client(self) -> None:
        while True:
            frame = await self._up.receive()
            if frame is None:
                return
            if isinstance(frame, OversizedFrame):
                self._log(f"dropped a message of {frame.size} bytes from the client: over the line limit")
                continue
            async with self._gate:
                self._client_frame(frame)

    def _client_frame(self, frame: bytes) -> None:
        message = _decode(frame)
        if message is None:  # a batch, or not JSON: the agent answers it as it is
            self._send_agent(frame)
            return
        method, request_id = message.get("method"), message.get("id")
        if not isinstance(method, str):  # an answer to one of the agent's requests
            if request_id not in self._agent_pending:
                return  # it answers a process that was restarted since
            self._agent_pending.discard(request_id)
        elif "id" in message:
            if self._agent is None:
                self._to_client(_refusal(request_id))
                return
            params = message.get("params")
            if method == "initialize":
                self._initialize = params
            self._client_pending[request_id] = (method, params)
        if self.sessions.to_agent(message):
            frame = orjson.dumps(message)
        self._send_agent(frame)

    def _send_agent(self, frame: bytes) -> None:
        if self._agent is not None:
            with contextlib.suppress(AcpError):
                self._agent.send(frame)

    def _to_agent(self, message: dict[str, Any]) -> None:
        self._send_agent(orjson.dumps(message))

    # --- the agent's frames -----------------------------------------------------------------------

    async def _from_agent(self, agent: Transport) -> None:
        while True:
            frame = await agent.receive()
            if frame is None:
                break
            if not isinstance(frame, OversizedFrame):
                self._agent_frame(frame)
        if self._agent is agent:  # it exited by itself
            self._agent = None
            self._log("the agent exited: fix it and save, acpio dev restarts it")
            self._fail_pending("The agent exited (acpio dev restarts it when its files change)")

    def _agent_frame(self, frame: bytes) -> None:
        message = _decode(frame)
        if message is None:
            self._to_client_frame(frame)
            return
        method, request_id = message.get("method"), message.get("id")
        if not isinstance(method, str):
            if isinstance(request_id, str) and request_id in self._own:
                self._settle_own(self._own.pop(request_id), message)
                return
            asked = self._client_pending.pop(request_id, None)
            if asked is not None and "result" in message:
                if asked[0] == "initialize" and isinstance(message["result"], dict):
                    self._initialized = message["result"]
                elif asked[0] in OPENERS or asked[0] == "session/close":
                    self.sessions.answered(asked[0], asked[1], message["result"])
        elif "id" in message:
            self._agent_pending.add(request_id)
        elif self._replaying and _session_of(message) in self._replaying:
            return  # the client shows this history already
        if self.sessions.to_client(message):
            frame = orjson.dumps(message)
        self._to_client_frame(frame)

    @staticmethod
    def _settle_own(future: asyncio.Future[dict[str, Any]], message: dict[str, Any]) -> None:
        if future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(error_from_wire(error))
        else:
            result = message.get("result")
            future.set_result(result if isinstance(result, dict) else {})

    def _to_client(self, message: dict[str, Any]) -> None:
        self._to_client_frame(orjson.dumps(message))

    def _to_client_frame(self, frame: bytes) -> None:
        with contextlib.suppress(AcpError):
            self._up.send(frame)


def _decode(frame: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _session_of(message: dict[str, Any]) -> object:
    params = message.get("params")
    return params.get("sessionId") if isinstance(params, dict) else None


def _refusal(request_id: object) -> dict[str, Any]:
    message = "The agent is not running (it exited): fix it and save, acpio dev restarts it"
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": _RESTARTED, "message": message}}
