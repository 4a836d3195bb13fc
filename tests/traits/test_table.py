"""The trait classes cover the method table exactly, with its types and official-SDK names."""

from __future__ import annotations

import inspect

import pytest

import acpio.traits
from acpio.schema import METHODS, MethodSpec, PromptRequest
from acpio.traits import (
    AGENT_METHODS,
    CLIENT_METHODS,
    AgentSideConnection,
    AgentTrait,
    ClientSideConnection,
    ClientTrait,
)
from acpio.traits.table import TraitMethod, trait_methods

#: Handled by the engine on every connection, not by the traits.
ENGINE = {"$/cancel_request"}

#: Names the official Python SDK (``acp``, 0.7-0.12) uses for these methods, kept as they are.
OFFICIAL_AGENT = {
    "initialize", "authenticate", "new_session", "load_session", "list_sessions", "set_session_mode",
    "prompt", "fork_session", "resume_session", "close_session", "cancel", "ext_method", "ext_notification",
}  # fmt: skip
OFFICIAL_CLIENT = {
    "request_permission", "session_update", "write_text_file", "read_text_file", "create_terminal",
    "terminal_output", "release_terminal", "wait_for_terminal_exit", "kill_terminal",
    "create_elicitation", "complete_elicitation", "ext_method", "ext_notification",
}  # fmt: skip


def specs(*directions: str) -> set[tuple[str, str, type, type | None]]:
    return {
        (m.method, m.kind, m.params, m.result)
        for m in METHODS
        if m.direction in directions and m.method not in ENGINE
    }


def rows(methods: tuple[TraitMethod, ...]) -> set[tuple[str, str, type, type | None]]:
    return {(m.method, m.kind, m.params, m.result) for m in methods}


def test_agent_has_every_client_to_agent_method_with_its_types() -> None:
    assert rows(AGENT_METHODS) == specs("client_to_agent", "both")


def test_client_has_every_agent_to_client_method_with_its_types() -> None:
    assert rows(CLIENT_METHODS) == specs("agent_to_client", "both")


def test_python_names_are_unique_and_official_where_the_official_sdk_has_one() -> None:
    for methods, official, trait in (
        (AGENT_METHODS, OFFICIAL_AGENT, AgentTrait),
        (CLIENT_METHODS, OFFICIAL_CLIENT, ClientTrait),
    ):
        names = [m.name for m in methods]
        assert len(names) == len(set(names))
        assert official <= {*names, "ext_method", "ext_notification"}
        for name in official:
            assert inspect.iscoroutinefunction(getattr(trait, name))


def test_each_connection_is_the_other_trait() -> None:
    assert issubclass(ClientSideConnection, AgentTrait)
    assert issubclass(AgentSideConnection, ClientTrait)


def test_a_trait_method_without_a_params_model_is_refused_at_definition() -> None:
    class Broken(AgentTrait):
        async def prompt(self, params: PromptRequest) -> None:  # type: ignore[override]
            pass

        async def helper(self, value: int) -> int:
            return value

    with pytest.raises(TypeError, match=r"Broken.helper is not a protocol method"):
        trait_methods(Broken)


@pytest.mark.parametrize("name", acpio.traits.__all__)
def test_every_public_name_is_documented(name: str) -> None:
    value = getattr(acpio.traits, name)
    if isinstance(value, tuple):
        return  # the tables are documented in the module docstring
    assert inspect.getdoc(value), name
    if isinstance(value, type):
        for attr, member in vars(value).items():
            if not attr.startswith("_") and callable(member):
                assert inspect.getdoc(member), f"{name}.{attr}"


def test_spec_rows_are_method_specs() -> None:
    assert all(isinstance(m, MethodSpec) for m in METHODS)
