"""The trace viewer's web server: one page and the trace's events, on a loopback address only.

:class:`TraceViewer` serves two things over HTTP (standard library ``http.server``, one thread per request):

``GET /``
    The viewer page (``viewer.html``, self-contained: no external scripts, styles or fonts).
``GET /events?start=N&limit=L&epoch=E``
    A window of the trace: up to ``L`` events (default 1000, at most 5000, and about 8 MB) from event
    number ``N`` on (``since`` is another name for ``start``; both default to 0), as a JSON object::

        {"file": "trace.jsons", "epoch": 0, "start": 0, "next": 12, "total": 12, "size": 5321,
         "scanned": 5321, "complete": true, "lanes": {...}, "events": [...]}

    ``events`` are the events as written in the file, never encoded again (blank, unparsable and unknown
    lines are not events; an over-long or too deeply nested line is a placeholder saying why, see
    :mod:`acpio.trace.index`); ``next`` is the ``start`` of the following window. ``total`` counts the
    events found so far in the file of ``size`` bytes, of which ``scanned`` are indexed (``complete`` once
    the index has caught up); ``lanes`` is the trace's ``lanes`` event, whatever the window. ``limit=0``
    asks for these counts only. The file is indexed once, in the background, without being held in
    memory; each request first reads what it gained, so a trace still being written is followed.
    ``epoch`` counts how many times the file started over (a conductor truncates it when it starts): when
    the client's ``epoch`` is not the current one, or ``start`` is past the end, the answer restarts at
    ``start`` 0 and the client should drop what it has. A file that cannot be read answers 503 with
    ``{"error": "..."}``.

Anything else is 404. The trace holds prompts, file contents and tool output, and the server has no
authentication, so it listens on loopback addresses only and refuses requests whose ``Host`` header
names another host (which is what a DNS-rebinding web page would send).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from socketserver import TCPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from acpio.trace.index import TraceIndex

__all__ = ["TraceViewer"]

#: ``/events`` answers this many events when the request does not say, and never more than the maximum.
_DEFAULT_LIMIT = 1000
_MAX_LIMIT = 5000
#: An answer stops adding events past this many bytes (it always has at least one).
_MAX_ANSWER_BYTES = 8 << 20
#: How long an ``/events`` request reads what the file gained before answering (the rest is read by the
#: background scanner); how long the scanner holds on at a time; how often it looks for more once done.
_REQUEST_SLICE = 0.05
_SCAN_SLICE = 0.05
_FOLLOW_EVERY = 0.25

# Served with the page: it may run its own inline script and style and fetch from this server, nothing else.
_PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"
)


def _loopback(host: str) -> tuple[socket.AddressFamily, str]:
    """The address family and address to bind for ``host``; ``ValueError`` unless it is a loopback address."""
    if host.lower() == "localhost":
        return socket.AF_INET, "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise ValueError(
            f"{host!r} is not an IP address: give a loopback address such as 127.0.0.1, ::1 or localhost"
        ) from None
    if not address.is_loopback:
        raise ValueError(
            f"{host} is not a loopback address: the viewer serves the trace without authentication, so it "
            "only listens on this machine (127.0.0.1, ::1 or localhost)"
        )
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    return family, str(address)


class _Scanner:
    """Indexes the trace in a background thread: all of it at first, then what is added, as it is added."""

    def __init__(self, index: TraceIndex) -> None:
        self.index = index
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="acpio-trace-index", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping.set()
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                caught_up = self.index.refresh(_SCAN_SLICE)
            except OSError:
                caught_up = True  # no file (yet, or any more): look again later
            if caught_up:
                self._stopping.wait(_FOLLOW_EVERY)


class _Handler(BaseHTTPRequestHandler):
    """Answers one request of the viewer (the server object carries the page and the event log)."""

    server: _Server
    # HTTP/1.0: one request per connection, so no kept-alive connection outlives close().
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        """Serve ``/``, ``/events`` or a 404."""
        if not self._host_allowed():
            self._send(HTTPStatus.FORBIDDEN, b"forbidden: this viewer answers only to its loopback address\n")
            return
        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            self._send(
                HTTPStatus.OK,
                self.server.page,
                "text/html; charset=utf-8",
                {"Content-Security-Policy": _PAGE_POLICY},
            )
        elif url.path == "/events":
            self._events(parse_qs(url.query))
        else:
            self._send(HTTPStatus.NOT_FOUND, f"not found: {url.path} (the viewer is at /)\n".encode())

    def _events(self, query: dict[str, list[str]]) -> None:
        try:
            start = int((query.get("start") or query.get("since") or ["0"])[-1])
            limit = int(query.get("limit", [str(_DEFAULT_LIMIT)])[-1])
            epoch = int(query["epoch"][-1]) if "epoch" in query else None
            if start < 0 or limit < 0:
                raise ValueError(start)
        except ValueError:
            self._send(
                HTTPStatus.BAD_REQUEST, b"start (or since), limit and epoch must be non-negative integers\n"
            )
            return
        index = self.server.index
        try:
            index.refresh(_REQUEST_SLICE)
            if (epoch is not None and epoch != index.epoch) or start > index.total:
                start = 0  # the file started over (or the client is ahead of it): from the beginning
            window = index.window(start, min(limit, _MAX_LIMIT), _MAX_ANSWER_BYTES)
        except OSError as error:
            message = f"cannot read the trace file {self.server.file_name}: {error.strerror or error}"
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, orjson.dumps({"error": message}), "application/json")
            return
        head = orjson.dumps(
            {
                "file": self.server.file_name,
                "epoch": window.epoch,
                "start": window.start,
                "next": window.next,
                "total": window.total,
                "size": window.size,
                "scanned": window.scanned,
                "complete": window.caught_up,
            }
        )
        lanes = window.lanes if window.lanes is not None else b"null"
        body = b"".join((head[:-1], b',"lanes":', lanes, b',"events":[', b",".join(window.events), b"]}"))
        self._send(HTTPStatus.OK, body, "application/json")

    def _host_allowed(self) -> bool:
        host = self.headers.get("Host")
        return host is None or host.lower() in self.server.allowed_hosts

    def _send(
        self,
        status: HTTPStatus,
        body: bytes,
        content_type: str = "text/plain; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep quiet: the viewer polls twice a second, a line per request would drown the terminal."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    page: bytes
    index: TraceIndex
    file_name: str
    allowed_hosts: frozenset[str]

    def __init__(self, family: socket.AddressFamily, address: tuple[str, int]) -> None:
        self.address_family = family
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s reverse DNS lookup of the address (slow where DNS is broken)."""
        TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])


class TraceViewer:
    """Serves the viewer for the trace file at ``path`` on ``host`` (a loopback address) and ``port``.

    The socket is bound when the viewer is created (``port=0``, the default, picks a free port; see
    :attr:`url`). Run it with :meth:`serve_forever` (blocking; Ctrl-C raises ``KeyboardInterrupt`` as
    usual) or in a background thread with :meth:`start`, and stop it with :meth:`close` or by leaving a
    ``with`` block::

        with TraceViewer("trace.jsons").start() as viewer:
            print(viewer.url)

    The file need not exist yet or hold anything: the page fills as lines arrive. Raises ``ValueError``
    for a host that is not a loopback address and ``OSError`` when the port cannot be bound.
    """

    def __init__(self, path: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 0) -> None:
        family, address = _loopback(host)
        self._server = _Server(family, (address, port))
        self._server.page = resources.files("acpio.trace").joinpath("viewer.html").read_bytes()
        self._server.index = TraceIndex(path)
        self._server.file_name = os.path.basename(self._server.index.path)
        self._scanner = _Scanner(self._server.index)
        self._port: int = self._server.server_address[1]
        netloc = f"[{address}]" if family == socket.AF_INET6 else address
        names = [netloc, "localhost"] if address in ("127.0.0.1", "::1") else [netloc]
        self._server.allowed_hosts = frozenset(f"{name}:{self._port}" for name in names)
        self._url = f"http://{netloc}:{self._port}"
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Where the page is served: ``http://127.0.0.1:PORT`` (no trailing slash)."""
        return self._url

    @property
    def port(self) -> int:
        """The port the viewer listens on (the one chosen, when created with ``port=0``)."""
        return self._port

    def serve_forever(self) -> None:
        """Answer requests until :meth:`close` is called from another thread (or ``KeyboardInterrupt``)."""
        self._scanner.start()
        try:
            self._server.serve_forever(poll_interval=0.5)
        finally:
            self._scanner.stop()

    def start(self) -> TraceViewer:
        """Serve in a background (daemon) thread; returns the viewer, to chain in a ``with`` statement."""
        if self._thread is not None:
            raise RuntimeError("the trace viewer is already serving")
        self._scanner.start()
        # A short poll interval: close() waits up to one interval for the thread to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name=f"acpio-trace-viewer-{self._port}"
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving (waiting for the background thread, if any) and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._scanner.stop()
        self._server.server_close()

    def __enter__(self) -> TraceViewer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
