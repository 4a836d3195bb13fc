"""A scripted HTTP server on a loopback port: routes answer from queues of replies; requests are recorded.

The model providers' wire servers (``openai_wire``, ``anthropic_wire``) are this server with the routes
and reply builders of one provider's API. A reply is a plain JSON answer (:class:`Json`), or a stream of
server-sent events (:class:`Sse`) that may pause between events and may stay open until the client goes
away (``hold=True``), which is how a test sees that a cancelled call closed its HTTP stream.

The server is uvicorn running a small ASGI app in the test's event loop, on port 0.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn

Scope = dict[str, Any]
Message = dict[str, Any]


@dataclass
class Recorded:
    """One request the server got: method, path, query string, headers (lower-case names) and JSON body."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@dataclass
class Json:
    """A JSON answer with a status and headers (an error answer is one of these)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


@dataclass
class Sse:
    """A ``text/event-stream`` answer: ``(event name or None, data)`` pairs, in order.

    ``delay`` seconds pass before each event after the first. With ``hold``, the stream stays open after
    the last event until the client closes it. ``closed`` is set when the client closed the stream before
    its end (or, held, at all): a test awaits it to see that cancelling a call hung up promptly.
    """

    events: list[tuple[str | None, str]]
    delay: float = 0.0
    hold: bool = False
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def encoded(self, index: int) -> bytes:
        """Event ``index`` as sent: an ``event:`` line if it has a name, one ``data:`` line, a blank line."""
        name, data = self.events[index]
        head = f"event: {name}\n" if name is not None else ""
        return f"{head}data: {data}\n\n".encode()


Reply = Json | Sse
#: A route's default: one reply for every request, or a function of the request that makes its reply.
Default = Reply | Callable[[Recorded], Reply]


class ScriptedServer:
    """An HTTP server whose routes answer scripted replies in order; an async context manager.

    ``routes`` maps ``"METHOD /path"`` to a default reply, given when the route's queue is empty (or a
    function of the request that makes each reply; ``None``: no default, and an unscripted request is
    answered 500 with a body that says so, which fails the test with the reason). :meth:`reply` queues
    replies for a route; :attr:`requests` lists every request got.
    """

    def __init__(self, routes: Mapping[str, Default | None]) -> None:
        self._defaults = dict(routes)
        self._queues: dict[str, deque[Reply]] = {route: deque() for route in routes}
        self.requests: list[Recorded] = []
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def reply(self, route: str, *replies: Reply) -> None:
        """Queue ``replies`` for ``route`` (``"POST /v1/messages"``), answered one per request in order."""
        if route not in self._queues:
            raise KeyError(f"no route {route!r}: the server has {sorted(self._queues)}")
        self._queues[route].extend(replies)

    def pending(self, route: str) -> int:
        """How many scripted replies of ``route`` are still unused."""
        return len(self._queues[route])

    def got(self, route: str) -> list[Recorded]:
        """The requests of ``route`` the server got, in order."""
        method, _, path = route.partition(" ")
        return [r for r in self.requests if r.method == method and r.path == path]

    async def __aenter__(self) -> ScriptedServer:
        config = uvicorn.Config(
            self._app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", interface="asgi3"
        )
        server = self._server = uvicorn.Server(config)
        config.load()
        server.lifespan = config.lifespan_class(config)
        await server.startup()
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self._task = asyncio.ensure_future(server.main_loop())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        server, task = self._server, self._task
        if server is None or task is None:
            return
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
        await server.shutdown()
        self._server = self._task = None

    # -- the ASGI app -----------------------------------------------------------------------------------

    async def _app(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = json.loads(raw) if raw else None
        method, path = scope["method"], scope["path"]
        self.requests.append(Recorded(method, path, scope["query_string"].decode(), headers, body))
        route = f"{method} {path}"
        reply = self._next(route)
        if isinstance(reply, Json):
            await _send_json(send, reply)
        else:
            await _send_sse(receive, send, reply)

    def _next(self, route: str) -> Reply:
        queue = self._queues.get(route)
        if queue:
            return queue.popleft()
        default = self._defaults.get(route)
        if callable(default):
            return default(self.requests[-1])
        if default is not None:
            return default
        said = "no scripted reply left" if queue is not None else "no such route"
        return Json(500, {"error": {"message": f"wire server: {said} for {route}", "type": "test_error"}})


async def _send_json(send: Any, reply: Json) -> None:
    body = json.dumps(reply.body).encode()
    headers = _header_list({"content-type": "application/json", **reply.headers})
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_sse(receive: Any, send: Any, reply: Sse) -> None:
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        headers = _header_list(
            {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        )
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for index in range(len(reply.events)):
            if index and reply.delay and await _gone_within(gone, reply.delay):
                reply.closed.set()
                return
            if gone.done():
                reply.closed.set()
                return
            await send({"type": "http.response.body", "body": reply.encoded(index), "more_body": True})
        if reply.hold:
            await gone
            reply.closed.set()
            return
        await send({"type": "http.response.body", "body": b""})
    finally:
        gone.cancel()


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _gone_within(gone: asyncio.Future[None], seconds: float) -> bool:
    done, _ = await asyncio.wait([gone], timeout=seconds)
    return bool(done)


def _header_list(headers: Mapping[str, str]) -> Iterable[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
