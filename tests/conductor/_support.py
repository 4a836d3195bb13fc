"""Helpers for the conductor tests: run a chain, drive it from a client, record component links."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import orjson

from acpio import Client, Proxy
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.errors import MethodNotFound
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    Unhandled,
    UntypedMessage,
    UntypedRole,
    open_transport,
)
from acpio.testing import WirePeer
from acpio.transports import Channel, OversizedFrame, Transport

T = TypeVar("T")

#: Every wait in these tests is bounded by this many seconds.
TIMEOUT = 20.0
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
ARROW = f"{PYTHON} {ROOT / 'examples' / 'arrow_proxy.py'}"
LOGGING = f"{PYTHON} {ROOT / 'examples' / 'logging_proxy.py'}"
SCRIPTED_AGENT = f"{PYTHON} {HERE / 'scripted_agent.py'}"
CRASH_PROXY = f"{PYTHON} {HERE / 'crash_proxy.py'}"


def load_example(name: str) -> Any:
    """Import ``examples/<name>.py`` as a module (its builder is then usable in-process)."""
    spec = importlib.util.spec_from_file_location(f"acpio_example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arrow_proxy() -> Builder:
    """The example arrow proxy, in-process."""
    return load_example("arrow_proxy").app  # type: ignore[no-any-return]


async def run_client(chain: Chain, main: Callable[[Any], Awaitable[T]], client: Builder | None = None) -> T:
    """Serve ``chain``, run ``main(cx)`` on a client connected to it, close; raise what ``serve`` raised."""
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    try:
        async with asyncio.timeout(TIMEOUT):
            result = await (client if client is not None else Client.builder()).connect_with(theirs, main)
    finally:
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await served
    return result


async def prompt_text(cx: Any, text: str, *, meta: dict[str, Any] | None = None) -> str:
    """Initialize, open a session and send one prompt; the text the agent streamed back."""
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    async with cx.build_session(Path.cwd()).start_session() as session:
        session.send_prompt(text, meta=meta)
        return await session.read_to_string()  # type: ignore[no-any-return]


def recording_proxy(log: list[tuple[str, Any]], name: str = "recording-proxy") -> Builder:
    """A pass-through proxy that records ``(method, params)`` of what it receives from either side."""
    app = Proxy.builder(name=name)

    @app.on_dispatch
    async def record(message: Dispatch, cx: Connection) -> Unhandled:
        if not isinstance(message, ResponseDispatch):
            log.append((message.method, message.params))
        return Unhandled(message)

    return app


class Recorded:
    """A component whose link to the conductor is recorded, decoded: ``to`` (what the conductor sent
    it) and ``came`` (what it sent the conductor)."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name
        self.to: list[Any] = []
        self.came: list[Any] = []

    async def open(self) -> Transport:
        return _Recording(await open_transport(self.inner), self)

    def frames_to(self, method: str) -> list[Any]:
        return [m for m in self.to if isinstance(m, dict) and m.get("method") == method]

    def frames_from(self, method: str) -> list[Any]:
        return [m for m in self.came if isinstance(m, dict) and m.get("method") == method]


class _Recording:
    def __init__(self, inner: Transport, record: Recorded) -> None:
        self.inner = inner
        self.record = record

    async def receive(self) -> bytes | OversizedFrame | None:
        frame = await self.inner.receive()
        if isinstance(frame, bytes):
            self.record.came.append(orjson.loads(frame))
        return frame

    def send(self, frame: bytes) -> None:
        self.record.to.append(orjson.loads(frame))
        self.inner.send(frame)

    async def drain(self) -> None:
        await self.inner.drain()

    async def aclose(self) -> None:
        await self.inner.aclose()


class RawComponent:
    """A component played by the test itself through a :class:`WirePeer` (for exact wire checks).

    ``peer`` exists once the conductor opened the component (``await opened.wait()``).
    """

    def __init__(self, name: str = "raw") -> None:
        self.name = name
        self.peer: WirePeer | None = None
        self.opened = asyncio.Event()

    async def open(self) -> Transport:
        ours, theirs = Channel.duplex()
        self.peer = Peer(ours, timeout=TIMEOUT)
        self.opened.set()
        return theirs

    async def wait_peer(self) -> Peer:
        async with asyncio.timeout(TIMEOUT):
            await self.opened.wait()
        assert self.peer is not None
        return self.peer


@asynccontextmanager
async def raw_client(chain: Chain) -> AsyncIterator[Peer]:
    """Serve ``chain`` with the test as its raw client; on exit close and wait for the end of the run."""
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    peer = Peer(theirs, timeout=TIMEOUT)
    try:
        yield peer
    finally:
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await served


#: The raw peer of these tests: acpio.testing's, with its request/response helpers.
Peer = WirePeer


def successor(method: str, params: Any = None) -> dict[str, Any]:
    """The params of a ``proxy/successor`` (or ``_proxy/successor``) envelope for ``method``/``params``."""
    envelope: dict[str, Any] = {"method": method}
    if params is not None:
        envelope["params"] = params
    return envelope


class LegacyProxy:
    """A pass-through proxy as acpio built them before the rename (and as the Rust SDK's still are).

    It knows only ``_proxy/initialize`` and ``_proxy/successor``: ``_proxy/initialize`` goes to its
    successor as ``initialize`` in a ``_proxy/successor`` request; envelopes from the conductor are
    unwrapped and sent on plainly (to the predecessor); anything else from the predecessor is
    wrapped in ``_proxy/successor``: with ``refuse_unknown=False`` that includes a ``proxy/initialize``
    it does not know (the default proxy forwarding of both old SDKs), with ``refuse_unknown=True``
    that one is answered ``-32601``. Cancellation is re-issued plainly, hop by hop.
    ``initialized_with`` lists the initialize methods it received.
    """

    def __init__(self, *, refuse_unknown: bool = False) -> None:
        self.refuse_unknown = refuse_unknown
        self.initialized_with: list[str] = []

    def builder(self, name: str = "legacy-proxy") -> Builder:
        app = UntypedRole.builder(name=name)

        @app.on_dispatch
        async def route(message: Dispatch, cx: Connection) -> Unhandled | None:
            if isinstance(message, ResponseDispatch):
                return Unhandled(message)
            if message.method == CANCEL_METHOD:
                return None  # applied to the request it names; forwarded requests re-issue it
            if message.method in ("_proxy/initialize", "proxy/initialize"):
                self.initialized_with.append(message.method)
            if message.method == "_proxy/initialize" and isinstance(message, RequestDispatch):
                envelope = successor("initialize", message.params)
                sent = cx.send_request(UntypedMessage("_proxy/successor", envelope))
                sent.forward_response_to(message.responder)
                return None
            if message.method == "_proxy/successor" and isinstance(message.params, dict):
                inner = message.params  # from the successor: on to the predecessor, plainly
                cx.send_proxied_message(_retarget(message, inner["method"], inner.get("params")))
                return None
            if self.refuse_unknown and message.method == "proxy/initialize":
                raise MethodNotFound(message.method)
            wrapped = successor(message.method, message.params)
            cx.send_proxied_message(_retarget(message, "_proxy/successor", wrapped))
            return None

        return app


def _retarget(message: Dispatch, method: str, params: Any) -> Dispatch:
    if isinstance(message, RequestDispatch):
        return RequestDispatch(method, params, message.id, message.responder)
    return NotificationDispatch(method, params)


# --- raw frames -----------------------------------------------------------------------------------


def nested(depth: int) -> bytes:
    """JSON text nested ``depth`` levels deep, written as orjson would not write it (spaces, an
    escape, an exponent), so that only a copy of the text, not a new encoding, is byte-equal."""
    text = '{"leaf": "caf\\u00e9", "n": 1.50E+3}'
    for level in range(depth - 1):
        text = f'{{"a": {text}}}' if level % 2 else f"[{text}, 0]"
    return text.encode()


def request_frame(request_id: int, method: str, params: bytes) -> bytes:
    head = b'{"jsonrpc": "2.0", "id": %d, "method": "%s"' % (request_id, method.encode())
    return head + b', "params": ' + params + b"}"


def notification_frame(method: str, params: bytes) -> bytes:
    return b'{"jsonrpc": "2.0", "method": "%s", "params": %s}' % (method.encode(), params)


async def answer_initialize(agent: RawComponent) -> Peer:
    """The test plays the agent: answer its ``initialize``; its peer."""
    me = await agent.wait_peer()
    initialize = await me.message_for("initialize")
    me.respond(initialize["id"], {"protocolVersion": 1})
    return me


@asynccontextmanager
async def initialized_raw_chain() -> AsyncIterator[tuple[Peer, Peer]]:
    """A conductor in agent mode before a raw agent, initialized: the test's client and agent peers."""
    agent = RawComponent("agent")
    async with raw_client(Chain.agent("conductor", [agent])) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id="init")
        me = await answer_initialize(agent)
        await client.response_to("init")
        yield client, me
