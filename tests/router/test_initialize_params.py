"""The router's check of a client's ``initialize``: plain shapes without the models, the same verdicts.

A client's first message is checked before the connection is routed; the shapes every client
sends are taken without pydantic (importing it and creating the models of ``initialize`` is most of
a v2 app's start-up). The verdict must be the models' for every input, which hypothesis explores;
and if a regenerated schema makes more of ``initialize`` required, the test of the models' fields
says where the shortcut must learn it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import schema as acp
from acpio.errors import InvalidParams
from acpio.jsonrpc.typed import parse_params
from acpio.schema import v2
from acpio.version_router import _check_params

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_text_or_not = st.text(max_size=5) | _json
_info = st.one_of(
    _json,
    st.fixed_dictionaries(
        {},
        optional={
            "name": _text_or_not,
            "version": _text_or_not,
            "title": _text_or_not,
            "_meta": _json,
            "meta": _json,
            "extra": _json,
        },
    ),
)
_params = st.fixed_dictionaries(
    {"protocolVersion": st.sampled_from([1, 2])},
    optional={
        "info": _info,
        "capabilities": _json,
        "clientCapabilities": _json,
        "clientInfo": _info,
        "_meta": _json,
        "meta": _json,
        "protocol_version": _json,
        "other": _json,
    },
)


def _models_verdict(version: int, params: dict[str, Any]) -> bool:
    model = acp.InitializeRequest if version == 1 else v2.InitializeRequest
    try:
        parse_params(model, "initialize", params)
    except InvalidParams:
        return False
    return True


def _router_verdict(version: int, params: dict[str, Any]) -> bool:
    try:
        _check_params(version, params)
    except InvalidParams:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(params=_params)
def test_the_router_takes_what_the_models_take_and_refuses_what_they_refuse(params: dict[str, Any]) -> None:
    version = params["protocolVersion"]
    assert _router_verdict(version, params) == _models_verdict(version, params)


@pytest.mark.parametrize(
    ("version", "params"),
    [
        (2, {"protocolVersion": 2}),
        (2, {"protocolVersion": 2, "info": {"name": "zed"}}),
        (2, {"protocolVersion": 2, "info": {"name": "zed", "version": 1}}),
        (2, {"protocolVersion": 2, "info": ["zed", "1"]}),
    ],
)
def test_a_v2_initialize_without_a_proper_info_is_refused_with_the_models_error(
    version: int, params: dict[str, Any]
) -> None:
    with pytest.raises(InvalidParams) as refused:
        _check_params(version, params)
    with pytest.raises(InvalidParams) as by_the_model:
        parse_params(v2.InitializeRequest, "initialize", params)
    assert refused.value.data == by_the_model.value.data


def _required(model: Any) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items() if field.is_required()}


def test_what_the_shortcut_knows_of_the_models_is_still_so() -> None:
    """v1 requires the version alone, v2 the version and a ``{name, version}`` of strings."""
    assert _required(acp.InitializeRequest) == {"protocolVersion"}
    assert _required(v2.InitializeRequest) == {"protocolVersion", "info"}
    assert _required(v2.Implementation) == {"name", "version"}
    for field in ("name", "version"):
        assert v2.Implementation.model_fields[field].annotation is str
