"""A ``null`` result answers a request whose result model has no required field (spec #227/#228)."""

from __future__ import annotations

from typing import Any

import pytest

from acpio.errors import ParseError
from acpio.jsonrpc.typed import result_parser
from acpio.schema import NewSessionResponse, WriteTextFileResponse


def test_null_reads_as_an_empty_result() -> None:
    assert result_parser(WriteTextFileResponse, "fs/write_text_file")(None) == WriteTextFileResponse()


def test_null_is_still_refused_where_the_result_has_required_fields() -> None:
    parse: Any = result_parser(NewSessionResponse, "session/new")
    with pytest.raises(ParseError, match="does not match NewSessionResponse"):
        parse(None)


def test_null_stays_null_for_a_result_of_any_json() -> None:
    from acpio.schema import AcpJson

    class Anything(AcpJson):
        pass

    assert result_parser(Anything, "_x/anything")(None).root is None
