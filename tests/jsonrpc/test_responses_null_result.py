"""A ``null`` result answers a request whose result model has no required field (spec #227/#228)."""

from __future__ import annotations

from typing import Any

import pytest

from acpio.errors import ParseError
from acpio.jsonrpc.responses import _parse_with
from acpio.schema import NewSessionResponse, WriteTextFileResponse


def test_null_reads_as_an_empty_result() -> None:
    assert _parse_with(WriteTextFileResponse, "fs/write_text_file")(None) == WriteTextFileResponse()


def test_null_is_still_refused_where_the_result_has_required_fields() -> None:
    parse: Any = _parse_with(NewSessionResponse, "session/new")
    with pytest.raises(ParseError, match="does not match NewSessionResponse"):
        parse(None)


def test_null_stays_null_for_a_result_of_any_json() -> None:
    from acpio.schema import AcpJson

    class Anything(AcpJson):
        pass

    assert _parse_with(Anything, "_x/anything")(None).root is None
