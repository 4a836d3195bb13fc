"""The exception tree: what users catch, what they read, what goes on the wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio import errors
from acpio.errors import (
    AcpError,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    TransportError,
    error_from_wire,
)
from acpio.jsonrpc import Connection, UntypedRole
from acpio.testing import WirePeer
from acpio.transports import Channel


def test_every_error_is_an_acp_error() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, AcpError), name


def test_str_gives_code_message_and_data() -> None:
    assert str(MethodNotFound("session/foo")) == "-32601 Method not found: session/foo"
    assert str(RequestError(-32050, "Quota exceeded")) == "-32050 Quota exceeded"
    assert (
        repr(InvalidParams({"x": 1})) == "InvalidParams(code=-32602, message='Invalid params', data={'x': 1})"
    )


def test_str_shows_structured_data_as_json_not_as_a_python_repr() -> None:
    err = InvalidParams({"details": {"path": "café.txt", "exists": False, "size": None}, "n": [1]})
    assert str(err) == (
        '-32602 Invalid params: {"details": {"path": "café.txt", "exists": false, "size": null}, "n": [1]}'
    )
    assert str(RequestError(-32050, "Quota exceeded", [1, "two"])) == '-32050 Quota exceeded: [1, "two"]'
    assert str(RequestError(-32050, "Quota exceeded", 0)) == "-32050 Quota exceeded: 0"
    # Data JSON cannot hold (put there by hand) falls back to its repr rather than failing.
    thing = object()
    assert str(InternalError({"thing": thing})) == f"-32603 Internal error: {{'thing': {thing!r}}}"


async def test_an_error_answer_from_the_peer_reads_as_it_came_on_the_wire() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    data = {"details": "naïve", "lines": [3, 4]}

    async def main(cx: Connection) -> Any:
        sent = cx.send_request("_vendor/lint", {})
        request = await peer.recv()
        error = {"code": -32602, "message": "Bad", "data": data}
        peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        with pytest.raises(InvalidParams) as raised:
            async with asyncio.timeout(5):
                await sent
        return raised.value

    err = await UntypedRole.builder().connect_with(ours, main)
    assert err.data == data
    assert str(err) == '-32602 Bad: {"details": "naïve", "lines": [3, 4]}'


def test_to_wire_omits_data_when_unset() -> None:
    assert RequestCancelled().to_wire() == {"code": -32800, "message": "Request cancelled"}
    assert MethodNotFound("m").to_wire() == {"code": -32601, "message": "Method not found", "data": "m"}


@pytest.mark.parametrize(
    ("wire", "cls"),
    [
        ({"code": -32601, "message": "nope", "data": "x"}, MethodNotFound),
        ({"code": -32800, "message": "stop"}, RequestCancelled),
        ({"code": 42, "message": "custom"}, RequestError),
    ],
)
def test_error_from_wire_picks_the_class_and_keeps_the_text(wire: dict[str, object], cls: type) -> None:
    err = error_from_wire(wire)
    assert type(err) is cls
    assert err.code == wire["code"]
    assert err.message == wire["message"]
    assert err.data == wire.get("data")


@pytest.mark.parametrize(
    "wire", [None, "boom", {"code": "x", "message": "m"}, {"code": True, "message": "m"}]
)
def test_malformed_error_objects_do_not_crash(wire: object) -> None:
    err = error_from_wire(wire)
    assert isinstance(err, RequestError)
    assert "Malformed" in err.message
    assert err.data == wire


def test_connection_closed_names_the_pending_method() -> None:
    assert "'session/prompt'" in str(ConnectionClosed(method="session/prompt"))


def test_transport_error_carries_the_stderr_tail() -> None:
    err = TransportError("agent exited with code 3", stderr_tail="panic: no key")
    assert err.stderr_tail == "panic: no key"
    assert "panic: no key" in str(err)
