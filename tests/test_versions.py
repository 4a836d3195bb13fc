"""Which protocol version an agent answers: the TypeScript router's and the Rust SDK's rules."""

from __future__ import annotations

import pytest

from acpio import InvalidParams, RequestError, UnsupportedProtocolVersionError, select_version
from acpio.errors import error_from_wire
from acpio.versions import requested_version


@pytest.mark.parametrize(
    ("supported", "requested", "answer"),
    [
        ((1,), 0, 1),
        ((1,), 1, 1),
        ((1,), 2, 1),
        ((1,), 65535, 1),
        ((1, 2), 1, 1),
        ((1, 2), 2, 2),
        ((1, 2), 3, 2),
        ((2, 1), 7, 2),
        ((2,), 2, 2),
        ((2,), 9, 2),
    ],
)
def test_the_newest_supported_version_at_or_below_the_requested_one(
    supported: tuple[int, ...], requested: int, answer: int
) -> None:
    assert select_version(requested, supported) == answer


@pytest.mark.parametrize(("supported", "requested"), [((1, 2), 0), ((2,), 1), ((2,), 0)])
def test_no_fitting_version_is_error_32022_with_requested_and_supported(
    supported: tuple[int, ...], requested: int
) -> None:
    with pytest.raises(UnsupportedProtocolVersionError) as info:
        select_version(requested, supported)
    error = info.value
    assert error.code == -32022
    assert error.to_wire()["data"] == {"requested": requested, "supported": sorted(supported)}
    assert f"Unsupported protocol version {requested}" in error.message
    assert "send initialize again" in error.message
    assert (error.requested, error.supported) == (requested, tuple(sorted(supported)))


def test_a_received_32022_is_raised_as_the_same_class() -> None:
    sent = UnsupportedProtocolVersionError.for_versions(0, [2, 1])
    received = error_from_wire(sent.to_wire())
    assert isinstance(received, UnsupportedProtocolVersionError)
    assert isinstance(received, RequestError)
    assert (received.requested, received.supported) == (0, (1, 2))
    assert received.message == sent.message
    assert UnsupportedProtocolVersionError().supported == ()  # data missing: nothing to read


def test_no_supported_version_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least one supported protocol version"):
        select_version(1, ())


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {},
        {"protocolVersion": "1"},
        {"protocolVersion": -1},
        {"protocolVersion": 65536},
        {"protocolVersion": 1.0},
        {"protocolVersion": True},
    ],
)
def test_a_missing_or_malformed_requested_version_is_invalid_params(params: object) -> None:
    with pytest.raises(InvalidParams, match="integer from 0 to 65535"):
        requested_version(params)


def test_the_requested_version_is_read_from_the_params() -> None:
    assert requested_version({"protocolVersion": 0}) == 0
    assert requested_version({"protocolVersion": 65535, "info": {}}) == 65535
