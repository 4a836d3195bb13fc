"""The frame of a typed request: the same bytes as the envelope written by orjson around pydantic's params.

``encode_request`` writes the envelope of a request with an integer id (every id this side
allocates) directly; these tests hold it to the bytes of the generic path, for each request the
library commonly sends, with awkward values (quotes, escapes, control characters, non-ASCII,
explicit nulls, unknown fields, large numbers).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import schema as acp
from acpio.errors import RequestError
from acpio.jsonrpc.messages import (
    Response,
    decode,
    decode_response,
    encode_request,
    encode_result,
    notification_from_bytes,
)

AWKWARD = 'quote " backslash \\ newline \n tab \t nul \x00 \x1f del \x7f \u2028 é 漢 😀 </script>'
META = {"k": AWKWARD, "n": [1, -2, 1.5, 1e300, 2**63 - 1], "nested": {"none": None, "t": True}}


def requests() -> list[Any]:
    """One of each request the library sends commonly, filled with awkward values."""
    text = acp.TextContent(text=AWKWARD)
    image = acp.ImageContent(data="aGk=", mime_type="image/png")
    link = acp.ResourceLink(name=AWKWARD, uri="file:///tmp/é x.txt", size=2**40)
    server = acp.McpServerStdio(
        name="srv", command="/bin/é", args=["-c", AWKWARD], env=[acp.EnvVariable(name="A", value=AWKWARD)]
    )
    tool = acp.ToolCallUpdate(tool_call_id="call-1", title=AWKWARD, kind=acp.ToolKind.EDIT, raw_input=META)
    allow = acp.PermissionOption(option_id="allow", name=AWKWARD, kind=acp.PermissionOptionKind.ALLOW_ONCE)
    reject = acp.PermissionOption(option_id="no", name="No", kind="reject_once")
    return [
        acp.InitializeRequest(protocol_version=1),
        acp.InitializeRequest(
            protocol_version=1,
            client_capabilities=acp.ClientCapabilities(terminal=True),
            client_info=acp.Implementation(name=AWKWARD, version="1.0"),
            meta=META,
        ),
        acp.InitializeRequest(protocol_version=1, client_info=None),  # a nullable field set to null
        acp.NewSessionRequest(cwd="/tmp/é", mcp_servers=[]),
        acp.NewSessionRequest(cwd="/tmp", mcp_servers=[server], meta=META),
        acp.PromptRequest(session_id="s", prompt=[text]),
        acp.PromptRequest(session_id=AWKWARD, prompt=[text, image, link], meta=META),
        acp.SetSessionModeRequest(session_id="s", mode_id="bench"),
        acp.SetSessionModeRequest(session_id=AWKWARD, mode_id=AWKWARD, meta=META),
        acp.SetSessionModeRequest(session_id="s", mode_id="m", unknown_field={"kept": [AWKWARD, None]}),
        acp.SetSessionConfigOptionRequest(session_id="s", config_id="model", value="fast"),
        acp.SetSessionConfigOptionRequest(session_id="s", config_id="flag", type="boolean", value=True),
        acp.ReadTextFileRequest(session_id="s", path="/tmp/é.txt"),
        acp.ReadTextFileRequest(session_id="s", path=AWKWARD, line=1, limit=2**32 - 1),
        acp.WriteTextFileRequest(session_id="s", path="/tmp/a", content=AWKWARD * 100),
        acp.CreateTerminalRequest(session_id="s", command="ls"),
        acp.CreateTerminalRequest(
            session_id="s",
            command=AWKWARD,
            args=["-la", AWKWARD],
            env=[acp.EnvVariable(name="X", value=AWKWARD)],
            cwd="/tmp",
            output_byte_limit=2**53,
        ),
        acp.TerminalOutputRequest(session_id="s", terminal_id="t-1"),
        acp.ReleaseTerminalRequest(session_id="s", terminal_id=AWKWARD),
        acp.WaitForTerminalExitRequest(session_id="s", terminal_id="t-1", meta=META),
        acp.KillTerminalRequest(session_id="s", terminal_id="t-1"),
        acp.RequestPermissionRequest(session_id="s", tool_call=tool, options=[allow, reject]),
    ]


def generic_frame(request_id: int | str, method: str, params: Any) -> bytes:
    """The frame as orjson writes the envelope, around the params as pydantic writes them."""
    params_json = params.__pydantic_serializer__.to_json(params, by_alias=True, exclude_unset=True)
    envelope = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": orjson.Fragment(params_json)}
    return orjson.dumps(envelope)


@pytest.mark.parametrize("request_id", [1, 7, 2**40, -3])
@pytest.mark.parametrize("params", requests(), ids=lambda r: type(r).__name__)
def test_a_typed_request_frame_has_the_generic_paths_bytes(params: Any, request_id: int) -> None:
    frame = encode_request(request_id, params.METHOD, params)
    assert frame == generic_frame(request_id, params.METHOD, params)
    # and it is the JSON of the model's wire form
    assert orjson.loads(frame) == {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": params.METHOD,
        "params": params.to_wire(),
    }


def test_a_method_name_that_needs_escaping_is_written_as_orjson_writes_it() -> None:
    class Typed:
        """A user's typed request whose method needs escaping in JSON."""

        METHOD = '_vendor/"quoted"\\é\u2028'

        def to_wire_json(self) -> bytes:
            return b'{"text":"x"}'

    for request_id in (1, 2):  # the second time from the cache of method names
        frame = encode_request(request_id, Typed.METHOD, Typed())
        expected = {"jsonrpc": "2.0", "id": request_id, "method": Typed.METHOD, "params": {"text": "x"}}
        assert frame == orjson.dumps(expected)


def test_each_class_is_written_by_its_own_writer_however_often_and_in_whatever_order() -> None:
    # The engine reads each class's to_wire_json once, and each model class's serializer once.
    class Wired:
        METHOD = "_vendor/wired"

        def to_wire_json(self) -> bytes:
            return b'{"wired":true}'

    class Dumped:  # no to_wire_json: written through to_wire by the generic path
        METHOD = "_vendor/dumped"

        def to_wire(self) -> dict[str, bool]:
            return {"dumped": True}

    mode = acp.SetSessionModeRequest(session_id="s", mode_id="m")
    cancel = acp.CancelNotification(session_id="s")
    for request_id in range(1, 4):
        for params, wire in (
            (Wired(), {"wired": True}),
            (Dumped(), {"dumped": True}),
            (mode, {"sessionId": "s", "modeId": "m"}),
            (cancel, {"sessionId": "s"}),
            ({"plain": 1}, {"plain": 1}),
        ):
            method = getattr(params, "METHOD", "_vendor/plain")
            expected = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": wire}
            assert encode_request(request_id, method, params) == orjson.dumps(expected)


def test_a_string_id_gets_the_same_frame_as_before() -> None:
    params = acp.SetSessionModeRequest(session_id="s", mode_id="m")
    assert encode_request("abc", params.METHOD, params) == generic_frame("abc", params.METHOD, params)


def results() -> list[Any]:
    """Typed results an agent answers with, empty and filled with awkward values."""
    return [
        acp.SetSessionModeResponse(),
        acp.SetSessionModeResponse(meta=META),
        acp.NewSessionResponse(session_id=AWKWARD),
        acp.InitializeResponse(protocol_version=1, agent_info=acp.Implementation(name=AWKWARD, version="1")),
        acp.PromptResponse(stop_reason=acp.StopReason.END_TURN, meta=META),
    ]


@pytest.mark.parametrize("request_id", [0, 1, -3, 2**63 - 1, -(2**63), 2**64 - 1, "abc", None])
@pytest.mark.parametrize("result", results(), ids=lambda r: type(r).__name__)
def test_a_typed_result_frame_has_the_generic_paths_bytes(result: Any, request_id: int | str | None) -> None:
    """The answer's envelope, written directly for an integer id, is the one orjson writes."""
    result_json = result.__pydantic_serializer__.to_json(result, by_alias=True, exclude_unset=True)
    expected = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": orjson.Fragment(result_json)})
    assert encode_result(request_id, result) == expected


@pytest.mark.parametrize("request_id", [2**64, -(2**63) - 1])
def test_a_result_for_an_id_orjson_cannot_write_is_refused_as_before(request_id: int) -> None:
    with pytest.raises(TypeError):
        encode_result(request_id, acp.SetSessionModeResponse())


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{}}',
        b'{"result":null,"id":-1,"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":"7","result":{"a":[1]}}',
        b'{"jsonrpc":"2.0","id":null,"result":1}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","id":1.0,"result":{}}',
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}',
        b'{"jsonrpc":"1.0","id":7,"result":{}}',
        b'{"id":7,"result":{},"extra":1}',
        b'{"jsonrpc":"2.0","id":7,"result":{},"extra":1}',
        b'{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}',
        b'{"jsonrpc":"2.0","result":{}}',
        b'{"jsonrpc":"2.0","id":7,"method":"a"}',
        b'{"jsonrpc":"2.0","method":"a","params":{}}',
        b'[{"jsonrpc":"2.0","id":7,"result":{}}]',
        b'{"jsonrpc":"2.0","id":7,"result":',
        b"7",
    ],
)
def test_decode_response_gives_what_decode_gives_for_a_response_and_none_otherwise(frame: bytes) -> None:
    decoded, response = decode(frame), decode_response(frame)
    if type(decoded) is not Response:
        assert response is None
        return
    assert response is not None
    assert settled(response) == settled(decoded)


def settled(found: Any) -> object:
    """What a pending request sees of a response: the id and its type, the result or the error.

    ``found`` is what :func:`decode` reads (a ``Response``) or :func:`decode_response` (the id and
    the outcome: the result, or the error); ``None`` for anything else.
    """
    if type(found) is Response:
        request_id, outcome = found.id, found.error if found.error is not None else found.result
    elif type(found) is tuple:
        request_id, outcome = found
    else:
        return None
    if isinstance(outcome, RequestError):
        return request_id, type(request_id), (type(outcome), outcome.to_wire())
    return request_id, type(request_id), outcome


def outcome(write: Any, *args: Any) -> object:
    """What ``write(*args)`` gives: its bytes, or the type and message of what it raised."""
    try:
        return write(*args)
    except Exception as exc:
        return type(exc), str(exc)


def generic_or_error(request_id: Any, method: str, params: Any) -> object:
    """The generic path: the same request with its params as the dict of their wire form."""
    return outcome(encode_request, request_id, method, orjson.loads(params.to_wire_json()))


ids = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64]),
)


@settings(max_examples=150, deadline=None)
@given(request_id=ids, method=st.text(), session_id=st.text(), mode_id=st.text())
def test_a_typed_request_frame_is_the_generic_paths_for_any_integer_id_and_method(
    request_id: int, method: str, session_id: str, mode_id: str
) -> None:
    params = acp.SetSessionModeRequest(session_id=session_id, mode_id=mode_id)
    # before: an id orjson cannot write (wider than 64 bits) was written where the generic path raised
    assert outcome(encode_request, request_id, method, params) == generic_or_error(request_id, method, params)
    assert outcome(encode_result, request_id, params) == outcome(
        encode_result, request_id, orjson.loads(params.to_wire_json())
    )


json_scalars = st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64) | st.text()
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
#: Member values a peer may send, awkward ones included (written as JSON text, not encoded here).
members = {
    "jsonrpc": st.just('"2.0"') | st.sampled_from(['"1.0"', "2.0", "null", '"2.0 "', '"2\\u002e0"']),
    "id": st.one_of(
        st.sampled_from(["1", "-1", "0", "1.0", "1e2", "true", "null", '"1"', "18446744073709551616", "-0"]),
        st.integers(min_value=-(2**65), max_value=2**65).map(str),
    ),
    "result": json_values.map(json.dumps),
    "error": st.one_of(
        st.sampled_from(['{"code":-32601,"message":"m"}', '{"code":"x"}', "5", "null", '{"code":1}']),
        json_values.map(json.dumps),
    ),
    "method": st.sampled_from(['"a"', "5", '"method"']),
    "params": st.sampled_from(["{}", "[]", "null", "5"]),
    "x": json_values.map(json.dumps),
}
spaces = st.sampled_from(["", " ", "\t", "\n", "\r\n", "  "])


@st.composite
def response_frames(draw: st.DrawFn) -> bytes:
    """A frame shaped like a response: members in any order, repeated, spaced, with or without a BOM."""
    names = draw(st.lists(st.sampled_from(list(members)), max_size=2))
    if draw(st.integers(0, 4)):  # mostly a response, with something more or less
        names = [
            *draw(st.permutations(["jsonrpc", "id", draw(st.sampled_from(["result", "error"]))])),
            *names,
        ]
    pairs = [f'{draw(spaces)}"{name}"{draw(spaces)}:{draw(spaces)}{draw(members[name])}' for name in names]
    text = "{" + ",".join(pairs) + draw(spaces) + "}"
    before, after = draw(st.sampled_from(["", "\ufeff", " "])), draw(st.sampled_from(["", " ", "\t"]))
    return (before + text + after).encode()


@settings(max_examples=200, deadline=None)
@given(frame=response_frames())
def test_decode_response_reads_any_response_shaped_frame_as_decode_does(frame: bytes) -> None:
    assert settled(decode_response(frame)) == settled(decode(frame))


head = b'{"jsonrpc":"2.0","method":"session/update","params":'


@st.composite
def notification_frames(draw: st.DrawFn) -> bytes:
    """A ``session/update`` frame starting as peers write them: params of any kind, then anything."""
    params = draw(
        st.one_of(
            json_values.map(lambda v: json.dumps(v).encode()),
            st.sampled_from([b"", b"NaN", b"1e400", b'{"a":1', b'"}', b"{}}", b'{},"id":1', b'{}, "x":{}']),
        )
    )
    tail = draw(st.sampled_from([b"}", b" }", b"} ", b"}\n", b'"}', b"", b',"params":{}}', b',"id":7}']))
    return head + draw(spaces).encode() + params + draw(spaces).encode() + tail


@settings(max_examples=200, deadline=None)
@given(frame=notification_frames())
def test_a_notification_read_from_its_params_bytes_is_what_decode_reads(frame: bytes) -> None:
    read = notification_from_bytes(frame, head, "session/update")
    if read is not None:  # else decode reads it, as before
        assert read == decode(frame)
