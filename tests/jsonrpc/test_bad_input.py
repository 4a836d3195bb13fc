"""Bad input never ends a connection: every bad line is answered (or ignored) and the next request works.

Runs over a real line transport (``acpio.transports.streams.Lines``) fed raw bytes, so invalid
UTF-8, blank lines and over-long lines reach the engine the way they would from a pipe.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpio.errors import RequestError
from acpio.jsonrpc import Builder
from acpio.transports.streams import Lines

from ._support import TIMEOUT, Echo, EchoResult, echo_builder

MAX_LINE = 4096


class Boom(Echo):
    METHOD = "boom"


class Refuse(Echo):
    METHOD = "refuse"


def _server(*, error_details: bool = True) -> Builder:
    app = echo_builder()
    app.error_details = error_details

    @app.on_request
    async def boom(req: Boom) -> EchoResult:
        raise KeyError("secret internal detail")

    @app.on_request
    async def refuse(req: Refuse) -> EchoResult:
        raise RequestError(-32042, "Refused", {"why": "policy"})

    return app


class ByteWire:
    """Raw bytes into a connection's line transport, response lines out."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[bytes] = asyncio.Queue()
        self.outgoing = bytearray()
        self.wrote = asyncio.Event()
        self.transport = Lines(self.incoming.get, self._write, max_line=MAX_LINE, label="wire")

    async def _write(self, data: bytes) -> None:
        self.outgoing += data
        self.wrote.set()

    def feed(self, data: bytes) -> None:
        self.incoming.put_nowait(data)

    async def line(self) -> Any:
        async with asyncio.timeout(TIMEOUT):
            while b"\n" not in self.outgoing:
                self.wrote.clear()
                await self.wrote.wait()
        line, _, rest = bytes(self.outgoing).partition(b"\n")
        self.outgoing[:] = rest
        return orjson.loads(line)

    async def request(self, request_id: Any, method: str, params: Any) -> Any:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.feed(orjson.dumps(message) + b"\n")
        return await self.line()


@asynccontextmanager
async def wire(builder: Builder | None = None) -> AsyncIterator[ByteWire]:
    w = ByteWire()
    task = asyncio.create_task((builder or _server()).serve(w.transport))
    try:
        yield w
    finally:
        w.feed(b"")  # end of input
        async with asyncio.timeout(TIMEOUT):
            await task  # a clean end: the connection never failed


def _err(code: int) -> dict[str, Any]:
    return {"id": None, "code": code}


CASES: list[tuple[str, bytes, dict[str, Any] | None]] = [
    ("invalid JSON", b"{not json", _err(-32700)),
    ("truncated object", b'{"jsonrpc":"2.0","id":1,"method":"echo"', _err(-32700)),
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', _err(-32700)),
    ("lone surrogate escape", b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', _err(-32700)),
    ("scalar", b"17", _err(-32600)),
    ("string", b'"hello"', _err(-32600)),
    ("null", b"null", _err(-32600)),
    ("true", b"true", _err(-32600)),
    ("empty object", b"{}", _err(-32600)),
    ("method not a string", b'{"jsonrpc":"2.0","id":1,"method":1}', _err(-32600)),
    ("object id", b'{"jsonrpc":"2.0","id":{},"method":"echo"}', _err(-32600)),
    ("boolean id", b'{"jsonrpc":"2.0","id":false,"method":"echo"}', _err(-32600)),
    ("scalar params", b'{"jsonrpc":"2.0","id":1,"method":"echo","params":5}', _err(-32600)),
    ("no jsonrpc member", b'{"id":1,"method":"echo"}', _err(-32600)),
    ("method with result", b'{"jsonrpc":"2.0","id":1,"method":"echo","result":1}', _err(-32600)),
    ("empty batch", b"[]", _err(-32600)),
    ("unknown method", b'{"jsonrpc":"2.0","id":"u","method":"no/such"}', {"id": "u", "code": -32601}),
    (
        "bad params",
        b'{"jsonrpc":"2.0","id":2,"method":"hello","params":{"name":3}}',
        {"id": 2, "code": -32602},
    ),
    (
        "array params for a model",
        b'{"jsonrpc":"2.0","id":3,"method":"hello","params":[1]}',
        {"id": 3, "code": -32602},
    ),
    ("handler crash", b'{"jsonrpc":"2.0","id":4,"method":"boom","params":{}}', {"id": 4, "code": -32603}),
    ("handler refusal", b'{"jsonrpc":"2.0","id":5,"method":"refuse","params":{}}', {"id": 5, "code": -32042}),
    ("blank line", b"", None),
    ("spaces", b"   \t ", None),
    ("malformed response", b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}', None),
    ("response to unknown id", b'{"jsonrpc":"2.0","id":987,"result":{}}', None),
    ("error answering nothing", b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}', None),
    ("unknown notification", b'{"jsonrpc":"2.0","method":"no/such"}', None),
    ("notification with bad params", b'{"jsonrpc":"2.0","method":"echo","params":"x"}', _err(-32600)),
    ("vendor notification", b'{"jsonrpc":"2.0","method":"_x.ai/whatever","params":{}}', None),
]


@pytest.mark.parametrize(("line", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
async def test_bad_line_is_answered_and_the_next_request_still_works(
    line: bytes, expected: dict[str, Any] | None
) -> None:
    async with wire() as w:
        w.feed(line + b"\n")
        reply = await w.request("after", "echo", {"value": "still alive"})
        if expected is not None:
            assert reply["jsonrpc"] == "2.0"
            assert reply["id"] == expected["id"]
            assert reply["error"]["code"] == expected["code"]
            reply = await w.line()
        assert reply == {"jsonrpc": "2.0", "id": "after", "result": {"value": "still alive"}}


async def test_parse_error_carries_the_start_of_the_line() -> None:
    async with wire() as w:
        w.feed(b"{oops " + b"y" * 3000 + b"\n")
        reply = await w.line()
        assert reply["error"]["message"] == "Parse error"
        assert reply["error"]["data"]["line"].startswith("{oops yyy")
        assert len(reply["error"]["data"]["line"]) < 1000


async def test_handler_crash_is_answered_with_its_message_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with wire() as w:
        reply = await w.request(1, "boom", {})
    assert reply["error"] == {
        "code": -32603,
        "message": "Internal error",
        "data": {"details": "'secret internal detail'", "type": "KeyError"},
    }
    assert any("boom" in r.getMessage() and r.exc_info for r in caplog.records if r.name == "acpio.jsonrpc")


async def test_error_details_false_answers_a_handler_crash_with_a_safe_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with wire(_server(error_details=False)) as w:
        reply = await w.request(1, "boom", {})
    assert reply["error"] == {"code": -32603, "message": "Internal error"}
    assert "secret internal detail" not in orjson.dumps(reply).decode()
    assert any("boom" in r.getMessage() and r.exc_info for r in caplog.records if r.name == "acpio.jsonrpc")


async def test_unknown_method_names_the_method_and_bad_params_list_the_errors() -> None:
    async with wire() as w:
        unknown = await w.request(1, "no/such", {})
        bad = await w.request(2, "hello", {"name": 3})
    assert unknown["error"] == {"code": -32601, "message": "Method not found", "data": "no/such"}
    assert bad["error"]["code"] == -32602
    assert bad["error"]["data"]["errors"][0]["loc"] == ["name"]


async def test_line_over_the_maximum_is_answered_and_skipped() -> None:
    async with wire() as w:
        huge = orjson.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"value": "x" * MAX_LINE * 4}}
        )
        for start in range(0, len(huge), 1000):  # arrives in pieces, never held whole
            w.feed(huge[start : start + 1000])
        w.feed(b"\n")
        error = await w.line()
        assert error["id"] == 1  # the line starts with its id: the request fails instead of waiting
        assert error["error"]["code"] == -32600
        assert error["error"]["data"]["size"] >= MAX_LINE
        assert error["error"]["data"]["line"].startswith('{"jsonrpc"')
        assert (await w.request(2, "echo", {"value": "ok"}))["result"] == {"value": "ok"}


async def test_request_split_across_reads_and_several_per_read() -> None:
    async with wire() as w:
        one = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"value": 1}}) + b"\n"
        two = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"value": 2}}) + b"\n"
        w.feed(one[:10])
        w.feed(one[10:] + two + b"\n\n")
        assert (await w.line())["id"] == 1
        assert (await w.line())["id"] == 2


# --- property: garbage never ends the connection -------------------------------------------------

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)
_envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
_near_misses = st.dictionaries(_envelope_keys, _json_values | st.just("2.0") | st.just("echo"), max_size=6)
_garbage = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" ")),
    _json_values.map(orjson.dumps),
    _near_misses.map(orjson.dumps),
    st.lists(_near_misses, max_size=3).map(orjson.dumps),
)
_stream = st.lists(st.one_of(st.tuples(st.just("garbage"), _garbage), st.just(("valid", b""))), max_size=25)


async def _run_stream(items: list[tuple[str, bytes]]) -> None:
    async with wire() as w:
        expected: list[str] = []
        for kind, payload in items:
            if kind == "garbage":
                w.feed(payload + b"\n")
            else:
                request_id = f"valid-{len(expected)}"
                expected.append(request_id)
                message = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "echo",
                    "params": {"value": request_id},
                }
                w.feed(orjson.dumps(message) + b"\n")
        w.feed(b'{"jsonrpc":"2.0","id":"final","method":"echo","params":{"value":"final"}}\n')
        answered: dict[Any, Any] = {}
        while "final" not in answered:
            reply = await w.line()
            for entry in reply if isinstance(reply, list) else [reply]:
                answered.setdefault(entry.get("id"), entry)
        for request_id in expected:
            assert answered[request_id] == {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"value": request_id},
            }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=_stream)
def test_garbage_interleaved_with_requests_never_ends_the_connection(items: list[tuple[str, bytes]]) -> None:
    asyncio.run(_run_stream(items))
