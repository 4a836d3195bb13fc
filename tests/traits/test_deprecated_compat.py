"""``acpio.compat``, the trait style's old name, still imports for one more release, with a warning."""

from __future__ import annotations

import asyncio
import importlib
import sys

import pytest

import acpio.traits
from acpio.transports import Channel


def test_the_old_package_warns_and_maps_the_old_names() -> None:
    sys.modules.pop("acpio.compat", None)
    with pytest.warns(
        DeprecationWarning, match="acpio.compat is now acpio.traits.*AgentTrait and ClientTrait"
    ):
        compat = importlib.import_module("acpio.compat")
    assert compat.Agent is acpio.traits.AgentTrait
    assert compat.Client is acpio.traits.ClientTrait
    assert compat.AgentSideConnection is acpio.traits.AgentSideConnection
    assert compat.ClientSideConnection is acpio.traits.ClientSideConnection


def test_the_top_level_names_come_from_the_new_package() -> None:
    assert acpio.AgentTrait is acpio.traits.AgentTrait
    assert acpio.ClientSideConnection is acpio.traits.ClientSideConnection


async def test_listen_is_the_deprecated_name_of_serve() -> None:
    ours, theirs = Channel.duplex()
    connection = acpio.traits.AgentSideConnection(acpio.traits.AgentTrait(), ours)

    async def close_soon() -> None:
        await theirs.aclose()

    with pytest.warns(DeprecationWarning, match=r"listen\(\) is now serve\(\)"):
        await asyncio.wait_for(asyncio.gather(connection.listen(), close_soon()), 10)
    assert connection.closed
