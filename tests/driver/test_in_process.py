"""AgentClient on an in-process AgentApp (v1 and v2) and on an agent served over WebSocket and HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.client import AgentClient, Outcome
from acpio.client.permissions import pick_option
from acpio.schema import CancelledPermissionOutcome, RequestPermissionRequest, SelectedPermissionOutcome


def editor_app(protocols: tuple[int, ...]) -> AgentApp:
    """An agent that reports an edit, then asks permission for it (AgentApp asks with no ``kind``)."""
    app = AgentApp("editor", protocols=protocols)

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call(
            "Edit a.txt", kind="edit", locations=["a.txt"], raw_input={"path": "a.txt"}
        ) as call:
            allowed = await turn.ask_permission(call, allow="Edit", deny="Leave it")
            await turn.say("edited" if allowed else "left alone")
        return "end_turn"

    return app


class EditsOnly:
    """A policy on the tool call's kind: allow edits, refuse the rest; it records what it was shown."""

    def __init__(self) -> None:
        self.kinds: list[str | None] = []

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        self.kinds.append(request.tool_call.kind)
        kinds = ("allow_once",) if request.tool_call.kind == "edit" else ("reject_once",)
        option = pick_option(request.options, kinds)
        return (
            SelectedPermissionOutcome(option_id=option.option_id) if option else CancelledPermissionOutcome()
        )


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_permission_request_without_kind_keeps_the_kind_of_its_tool_call(
    tmp_path: Path, protocol: int
) -> None:
    policy = EditsOnly()
    async with AgentClient(editor_app((protocol,)), cwd=tmp_path, permissions=policy) as client:
        session = await client.new_session()
        result = await session.prompt("edit please")

    assert policy.kinds == ["edit"]  # the request came without one; the client gave the call's
    assert result.text == "edited"
    [ask] = result.permissions
    assert ask.allowed
    assert (ask.tool_call.kind, ask.tool_call.title) == ("edit", "Edit a.txt")
    assert ask.tool_call.locations == [str(tmp_path / "a.txt")]
    assert ask.tool_call.raw_input == {"path": "a.txt"}
    [call] = result.tool_calls
    assert (call.kind, call.status) == ("edit", "completed")


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_an_agent_served_over_the_network_is_driven_by_its_url(tmp_path: Path, scheme: str) -> None:
    pytest.importorskip("uvicorn", reason="acpio[remote] is needed to serve over HTTP and WebSocket")
    from acpio.agents.testy import testy_agent
    from acpio.remote import RemoteServer

    async with RemoteServer(testy_agent(), port=0, insecure=True) as server:
        url = f"{scheme}://127.0.0.1:{server.port}"
        async with AgentClient(url, cwd=tmp_path, permissions="allow") as client:
            session = await client.new_session()
            result = await session.prompt("permission Go\necho over the network")
    assert client.process is None
    assert result.ok
    assert result.text == "permission: allow-once\nover the network\n"
    assert json.loads(result.to_json())["permissions"][0]["allowed"] is True


async def test_something_that_is_no_agent_is_refused_saying_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"pass a command .* a ws:// or http:// URL, or an agent served"):
        async with AgentClient([1, 2], cwd=tmp_path):  # type: ignore[list-item]
            pass


async def test_a_session_prompted_after_its_client_closed_says_how_to_go_on(tmp_path: Path) -> None:
    async with AgentClient(editor_app((1,)), cwd=tmp_path) as client:
        session = await client.new_session()
    with pytest.raises(RuntimeError) as raised:
        await session.prompt("edit please")
    message = str(raised.value)
    assert f"Session {session.session_id!r} is closed: its AgentClient was closed" in message
    assert f"load_session({session.session_id!r})" in message
    assert "attach_session" not in message  # the session layer's advice, not an AgentClient's


def configurable_app(protocols: tuple[int, ...] = (1,)) -> AgentApp:
    """An agent with two modes and a model option, that says which are in force."""
    app = AgentApp("configurable", protocols=protocols)
    app.mode("ask", "Ask")
    app.mode("code", "Code")
    app.select_option("model", "Model", {"small": "Small", "large": "Large"}, default="small")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await turn.say(f"{turn.mode} {turn.options['model']}")
        return "end_turn"

    return app


async def test_a_session_switches_mode_and_sets_options_before_its_turns(tmp_path: Path) -> None:
    async with AgentClient(configurable_app(), cwd=tmp_path) as client:
        session = await client.new_session()
        assert (await session.prompt("hi")).text == "ask small"
        await session.set_mode("code")
        options = await session.set_option("model", "Large")  # a value, or its name
        assert {o.id: o.current_value for o in options}["model"] == "large"
        assert (await session.prompt("hi")).text == "code large"

        with pytest.raises(ValueError, match="mode 'review': the agent's modes are ask, code"):
            await session.set_mode("review")
        with pytest.raises(ValueError, match="option 'model' takes one of small, large, not 'huge'"):
            await session.set_option("model", "huge")
        with pytest.raises(ValueError, match=r"option 'speed': the agent's config options are .*model"):
            await session.set_option("speed", "fast")


async def test_modes_and_options_on_v2_say_to_speak_v1(tmp_path: Path) -> None:
    async with AgentClient(configurable_app((1, 2)), cwd=tmp_path) as client:
        session = await client.new_session()
        assert client.protocol_version == 2
        with pytest.raises(NotImplementedError, match=r"speaks ACP v2.*AgentClient\(\.\.\., protocol=1\)"):
            await session.set_mode("code")


async def test_a_session_directory_that_does_not_exist_is_named_with_what_set_it(tmp_path: Path) -> None:
    async with AgentClient(editor_app((1,)), cwd=tmp_path / "missing") as client:
        with pytest.raises(ValueError) as raised:
            await client.new_session()
    assert str(raised.value) == (
        "The root of the agent's file access (set by AgentClient(cwd=...) or the session's cwd) must be "
        f"an existing directory; {tmp_path / 'missing'} is not one: create it first, or give a directory "
        "that exists"
    )
