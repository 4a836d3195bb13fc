"""A role subclass written in the official SDKs' idiom is refused at once, saying what to write."""

from __future__ import annotations

import pytest

import acpio
from acpio.jsonrpc import ParkingLimits
from acpio.roles import Client


def test_an_agent_role_with_async_prompt_is_refused_with_what_to_write() -> None:
    with pytest.raises(TypeError) as caught:

        class MyAgent(acpio.Agent):
            async def initialize(self, params: object) -> None: ...

            async def prompt(self, params: object) -> None: ...

    message = str(caught.value)
    assert "class MyAgent(Agent) defines async initialize, prompt()" in message
    assert "AgentApp" in message
    assert "acpio.traits.AgentTrait" in message


def test_a_client_role_with_async_session_update_points_to_the_client_trait() -> None:
    with pytest.raises(TypeError, match=r"MyClient\(Client\) defines async session_update\(\).*ClientTrait"):

        class MyClient(acpio.Client):
            async def session_update(self, params: object) -> None: ...


def test_a_subclass_of_a_subclass_names_the_acp_role() -> None:
    class Quiet(Client):
        NAME = "quiet"

    with pytest.raises(TypeError, match=r"class Louder\(Client\)"):

        class Louder(Quiet):
            async def request_permission(self, params: object) -> None: ...


def test_a_role_subclass_that_only_adjusts_the_role_is_fine() -> None:
    class Patient(Client):
        NAME = "patient"

        def parking_limits(self) -> ParkingLimits:
            return ParkingLimits(total=5)

    assert Patient().parking_limits().total == 5
