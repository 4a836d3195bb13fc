"""Envelope decoding and frame building: pure functions, no event loop."""

from __future__ import annotations

import orjson
import pytest
from pydantic import BaseModel

from acpio.errors import InvalidRequest, MethodNotFound, ParseError, RequestCancelled
from acpio.jsonrpc import messages as m


def test_request_notification_and_response_are_classified_by_keys() -> None:
    assert m.decode(b'{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}}') == m.Request("a", {"x": 1}, 1)
    assert m.decode(b'{"method":"a","jsonrpc":"2.0"}') == m.Notification("a", None)
    assert m.decode(b'{"jsonrpc":"2.0","id":"r","result":{"ok":true}}') == m.Response("r", {"ok": True}, None)


def test_keys_in_any_order_and_array_params() -> None:
    decoded = m.decode(b'{"params":[1,2],"method":"a","id":"x","jsonrpc":"2.0"}')
    assert decoded == m.Request("a", [1, 2], "x")


def test_request_id_keeps_its_json_type() -> None:
    int_id = m.decode(b'{"jsonrpc":"2.0","id":7,"method":"a"}')
    str_id = m.decode(b'{"jsonrpc":"2.0","id":"7","method":"a"}')
    assert isinstance(int_id, m.Request)
    assert type(int_id.id) is int
    assert isinstance(str_id, m.Request)
    assert type(str_id.id) is str
    assert orjson.loads(m.encode_result(int_id.id, None))["id"] == 7
    assert orjson.loads(m.encode_result(str_id.id, None))["id"] == "7"


def test_error_response_becomes_the_matching_error_class() -> None:
    decoded = m.decode(
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":"x"}}'
    )
    assert isinstance(decoded, m.Response)
    assert isinstance(decoded.error, MethodNotFound)
    assert decoded.error.data == "x"


@pytest.mark.parametrize(
    "params",
    [b"1", b'"text"', b"true"],
)
def test_scalar_params_are_an_invalid_request(params: bytes) -> None:
    decoded = m.decode(b'{"jsonrpc":"2.0","id":1,"method":"a","params":' + params + b"}")
    assert isinstance(decoded, m.Invalid)
    assert decoded.answer
    assert isinstance(decoded.error, InvalidRequest)


def test_scalar_result_is_fine() -> None:
    assert m.decode(b'{"jsonrpc":"2.0","id":1,"result":1}') == m.Response(1, 1, None)
    assert orjson.loads(m.encode_result(1, 1)) == {"jsonrpc": "2.0", "id": 1, "result": 1}


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"a","result":1}',  # method + result
        b'{"jsonrpc":"2.0","method":"a","error":{"code":1,"message":"x"}}',  # notification + error
        b'{"jsonrpc":"2.0","id":true,"method":"a"}',  # boolean id
        b'{"jsonrpc":"2.0","id":1.5,"method":"a"}',  # fractional id
        b'{"jsonrpc":"2.0","id":1,"method":5}',  # method not a string
        b'{"id":1,"method":"a"}',  # no jsonrpc member
        b'{"jsonrpc":"1.0","id":1,"method":"a"}',  # wrong version
        b'{"jsonrpc":"2.0","id":1}',  # neither call nor response
        b"17",
        b"null",
        b'"text"',
    ],
)
def test_call_shaped_garbage_is_answered_with_invalid_request(frame: bytes) -> None:
    decoded = m.decode(frame)
    assert isinstance(decoded, m.Invalid)
    assert decoded.answer
    assert isinstance(decoded.error, InvalidRequest)


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}',  # result + error
        b'{"jsonrpc":"2.0","result":1}',  # no id
        b'{"result":1,"id":1}',  # no jsonrpc member
    ],
)
def test_malformed_response_shaped_input_is_ignored_not_answered(frame: bytes) -> None:
    decoded = m.decode(frame)
    assert isinstance(decoded, m.Invalid)
    assert not decoded.answer


def test_invalid_json_is_a_parse_error_with_the_start_of_the_line() -> None:
    decoded = m.decode(b"{not json")
    assert isinstance(decoded, m.Invalid)
    assert isinstance(decoded.error, ParseError)
    assert decoded.error.data == {"line": "{not json"}


def test_invalid_utf8_is_a_parse_error() -> None:
    decoded = m.decode(b'{"jsonrpc":"2.0","method":"\xff\xfe"}')
    assert isinstance(decoded, m.Invalid)
    assert isinstance(decoded.error, ParseError)
    assert decoded.error.data["line"].startswith('{"jsonrpc"')


def test_long_bad_line_is_cut_in_the_error() -> None:
    decoded = m.decode(b"x" * 100_000)
    assert isinstance(decoded, m.Invalid)
    assert len(decoded.error.data["line"]) == m.HEAD_CHARS


def test_blank_frames_are_skipped() -> None:
    assert m.decode(b"") is None
    assert m.decode(b"   \t") is None


def test_empty_batch_is_one_invalid_request() -> None:
    decoded = m.decode(b"[]")
    assert isinstance(decoded, m.Invalid)
    assert isinstance(decoded.error, InvalidRequest)


def test_batch_entries_are_decoded_independently_in_order() -> None:
    decoded = m.decode(b'[{"jsonrpc":"2.0","id":1,"method":"a"},17,{"jsonrpc":"2.0","method":"n"}]')
    assert isinstance(decoded, m.Batch)
    first, second, third = decoded.entries
    assert first == m.Request("a", None, 1)
    assert isinstance(second, m.Invalid)
    assert second.answer
    assert third == m.Notification("n", None)


def test_unclosed_array_is_a_parse_error() -> None:
    decoded = m.decode(b"[")
    assert isinstance(decoded, m.Invalid)
    assert isinstance(decoded.error, ParseError)


def test_cancel_target_extraction() -> None:
    assert m.cancel_target({"requestId": 5}) == (True, 5)
    assert m.cancel_target({"requestId": "abc"}) == (True, "abc")
    assert m.cancel_target({"requestId": True}) == (False, None)
    assert m.cancel_target({"id": 5}) == (False, None)
    assert m.cancel_target([5]) == (False, None)
    assert m.CANCEL_METHOD == "$/cancel_request"
    assert RequestCancelled().code == -32800
    assert RequestCancelled().message == "Request cancelled"


class _Params(BaseModel):
    field_name: int
    optional: int | None = None


def test_outgoing_frames_serialize_typed_objects_and_omit_missing_params() -> None:
    assert orjson.loads(m.encode_request(1, "a", None)) == {"jsonrpc": "2.0", "id": 1, "method": "a"}
    assert orjson.loads(m.encode_notification("n", _Params(field_name=1))) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": {"field_name": 1},  # unset fields omitted
    }
    with pytest.raises(TypeError):
        m.encode_request(1, "a", {"x": object()})


def test_error_frame_with_unserializable_data_keeps_code_and_message() -> None:
    frame = orjson.loads(m.encode_error(None, InvalidRequest({"x": object()})))
    assert frame == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}
