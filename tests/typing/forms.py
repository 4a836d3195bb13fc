"""User code the type checkers must accept: what ``AgentClient(forms=...)`` and ``AgentPool(forms=...)``
take, and what a turn's result records of each form (not run)."""

from typing import Literal, assert_type

from acpio import AgentClient
from acpio.client import AgentPool, FormAsk, FormPolicy, FormValue, TurnResult
from acpio.schema import CreateElicitationRequest


async def declines_secrets(request: CreateElicitationRequest) -> dict[str, object] | Literal["decline"]:
    if "secret" in request.message:
        return "decline"
    return {"name": "Ada", "age": 36, "tags": ["python"], "subscribe": True}


def clients() -> list[AgentClient]:
    ints: dict[str, int] = {"age": 36}
    return [
        AgentClient("acpio testy", forms={"name": "Ada", "age": 36}),
        AgentClient("acpio testy", forms=ints),
        AgentClient("acpio testy", forms="decline"),
        AgentClient("acpio testy", forms="cancel"),
        AgentClient("acpio testy", forms=declines_secrets),
        AgentClient("acpio testy", forms=FormPolicy(declines_secrets)),
        AgentClient("acpio testy", forms=None),
    ]


def pool() -> AgentPool:
    return AgentPool("acpio testy", forms={"name": "Ada"})


def recorded(result: TurnResult) -> None:
    for form in result.forms:
        assert_type(form, FormAsk)
        assert_type(form.content, dict[str, FormValue] | None)
        assert_type(form.error, str | None)
