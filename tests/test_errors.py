"""The exception tree: what users catch, what they read, what goes on the wire."""

from __future__ import annotations

import pytest

from acpio import errors
from acpio.errors import (
    AcpError,
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    TransportError,
    error_from_wire,
)


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
