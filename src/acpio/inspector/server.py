"""The inspector's web page: Starlette on uvicorn, on a loopback address, behind a random token.

:class:`InspectorServer` serves

``GET /?token=T``
    The page (``page/inspector.html`` and its plain JavaScript modules under ``/static/``). The token
    is set as a cookie (HttpOnly, SameSite=Strict), which every other address asks for.
``GET /viewer`` and ``GET /events``
    The trace viewer of ``acpio trace view`` (``acpio/trace/viewer.html``), unchanged, and the run's
    frames in the answers its ``/events`` polling expects: the page embeds it for the sequence.
``WS /ws``
    The live feed: the run's messages (:mod:`acpio.inspector.record`), history first; and the page's
    commands (:mod:`acpio.inspector.commands`).

Requests whose ``Host`` is not the server's loopback address (a DNS-rebinding page) are refused, and
so are WebSocket connections from another origin.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson

from acpio.inspector.commands import run_command
from acpio.inspector.connection import InspectedConnection
from acpio.inspector.record import Inspection

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.datastructures import Headers
    from starlette.requests import HTTPConnection, Request
    from starlette.responses import Response
    from starlette.websockets import WebSocket

__all__ = ["InspectorServer"]

_COOKIE = "acpio_inspect"
_PAGE_POLICY = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; frame-src 'self'; base-uri 'none'; form-action 'none'"
)
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html; charset=utf-8"}


class InspectorServer:
    """Serves the page for ``inspection`` (and drives ``connection``, when there is one) on ``host``.

    ``host`` must be a loopback address; ``port=0`` picks a free port. Use it as an async context
    manager: :attr:`url` (with the token) is known inside the block.
    """

    def __init__(
        self,
        inspection: Inspection,
        connection: InspectedConnection | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError(
                f"{host} is not a loopback address: the inspector shows and drives the agent, so it "
                "only listens on this machine (127.0.0.1, ::1 or localhost)"
            )
        self.inspection = inspection
        self.connection = connection
        self.token = secrets.token_urlsafe(24)
        self._host = "127.0.0.1" if host == "localhost" else host
        self._port = port
        self._server: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    @property
    def url(self) -> str:
        """The page's address, token included: what to open in a browser."""
        return f"{self.origin}/?token={self.token}"

    async def __aenter__(self) -> InspectorServer:
        try:
            import uvicorn
        except ImportError as exc:
            raise ImportError(
                "acpio inspect needs the inspect extra (uvicorn, starlette): pip install 'acpio[inspect]'"
            ) from exc
        config = uvicorn.Config(
            self._app(),
            host=self._host,
            port=self._port,
            log_level="warning",
            lifespan="off",
            ws="websockets-sansio",
        )
        server = uvicorn.Server(config)
        config.load()
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup()
        except SystemExit:
            server.should_exit = True
        if server.should_exit:
            raise OSError(f"cannot serve the inspector on {self._host}:{self._port}: the port is in use")
        self._port = server.servers[0].sockets[0].getsockname()[1]
        self._server = server
        self._serving = asyncio.create_task(server.main_loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.should_exit = True
        if self._serving is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        await server.shutdown()

    # --- the ASGI app -------------------------------------------------------------------------

    def _app(self) -> Starlette:
        from starlette.applications import Starlette
        from starlette.routing import Route, WebSocketRoute

        return Starlette(
            routes=[
                Route("/", self._index),
                Route("/viewer", self._viewer),
                Route("/events", self._events),
                Route("/static/{name}", self._static),
                WebSocketRoute("/ws", self._feed),
            ]
        )

    def _allowed_host(self, headers: Headers) -> bool:
        host = headers.get("host", "")
        port = f":{self._port}"
        return host in (f"{self._host}{port}", f"[{self._host}]{port}", f"localhost{port}")

    def _authorized(self, request: HTTPConnection) -> bool:
        if not self._allowed_host(request.headers):
            return False
        # Cookies do not tell ports apart: each inspector on this machine has a cookie of its own.
        given = (request.cookies.get(f"{_COOKIE}_{self._port}", ""), request.query_params.get("token", ""))
        return any(secrets.compare_digest(value, self.token) for value in given)

    def _refuse(self) -> Response:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse(
            "forbidden: open the address acpio inspect printed (it carries the page's token)\n",
            status_code=403,
        )

    async def _index(self, request: Request) -> Response:
        from starlette.responses import Response

        if not self._authorized(request):
            return self._refuse()
        page = resources.files("acpio.inspector").joinpath("page", "inspector.html").read_bytes()
        response = Response(page, media_type="text/html; charset=utf-8", headers=_headers())
        response.set_cookie(f"{_COOKIE}_{self._port}", self.token, httponly=True, samesite="strict")
        return response

    async def _viewer(self, request: Request) -> Response:
        from starlette.responses import Response

        if not self._authorized(request):
            return self._refuse()
        page = resources.files("acpio.trace").joinpath("viewer.html").read_bytes()
        return Response(page, media_type="text/html; charset=utf-8", headers=_headers())

    async def _static(self, request: Request) -> Response:
        from starlette.responses import PlainTextResponse, Response

        if not self._authorized(request):
            return self._refuse()
        name = request.path_params["name"]
        suffix = name[name.rfind(".") :] if "." in name else ""
        entry = resources.files("acpio.inspector").joinpath("page", name)
        if "/" in name or suffix not in _TYPES or not entry.is_file():
            return PlainTextResponse(f"not found: {name}\n", status_code=404)
        return Response(entry.read_bytes(), media_type=_TYPES[suffix], headers=_headers())

    async def _events(self, request: Request) -> Response:
        from starlette.responses import Response

        if not self._authorized(request):
            return self._refuse()
        query = request.query_params
        try:
            start = max(0, int(query.get("start") or query.get("since") or 0))
            limit = max(0, min(5000, int(query.get("limit") or 1000)))
        except ValueError:
            start, limit = 0, 1000
        frames = self.inspection.frames
        start = min(start, len(frames))
        window = frames[start : start + limit]
        size = sum(len(frame.event) + 1 for frame in frames)
        head = orjson.dumps(
            {
                "file": self.inspection.info.get("capture", "live"),
                "epoch": 0,
                "start": start,
                "next": start + len(window),
                "total": len(frames),
                "size": size,
                "scanned": size,
                "complete": True,
                "lanes": self.inspection.lanes(),
            }
        )
        body = head[:-1] + b',"events":[' + b",".join(frame.event for frame in window) + b"]}"
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def _feed(self, websocket: WebSocket) -> None:
        from starlette.websockets import WebSocketDisconnect

        origin = websocket.headers.get("origin")
        if not self._authorized(websocket) or (origin is not None and origin != self.origin):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        # Together, with no await between: each frame is in the history or in the queue, once.
        history = [self._hello(), *self.inspection.history()]
        queue = self.inspection.subscribe()
        sender = asyncio.create_task(self._push(websocket, history, queue))
        try:
            while True:
                text = await websocket.receive_text()
                reply = await run_command(self.inspection, self.connection, text)
                if reply is not None:
                    await websocket.send_text(reply.decode())
        except WebSocketDisconnect:
            pass
        finally:
            self.inspection.unsubscribe(queue)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender

    def _hello(self) -> bytes:
        connection = self.connection
        live: dict[str, Any] = {"live": connection is not None}
        if connection is not None:
            live["proxy"] = connection.proxy
            live["paused"] = connection.paused
            if connection.answers is not None:
                live["policies"] = connection.answers.policies.to_json()
                live["root"] = str(connection.answers.root)
        return orjson.dumps({"kind": "hello", "info": self.inspection.info, **live})

    async def _push(
        self, websocket: WebSocket, history: list[bytes], queue: asyncio.Queue[bytes | None]
    ) -> None:
        for earlier in history:
            await websocket.send_text(earlier.decode())
        while (message := await queue.get()) is not None:
            await websocket.send_text(message.decode())
        await websocket.close(code=1013)


def _headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": _PAGE_POLICY,
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }
