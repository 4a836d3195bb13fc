"""AgentClient answers the agent's forms (``elicitation/create``): from data, by a callback, or not at all.

testy's ``elicit`` asks a form with a field of every kind and says what it was answered (the
content as JSON, as it came on the wire); an in-process AgentApp asks a form the client did not
advertise, to see the refusal.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import pytest

from acpio.agents.testy import testy_agent
from acpio.app import AgentApp, Ask, StopReasonName, Turn
from acpio.client import (
    AgentClient,
    AgentPool,
    FormAnswer,
    FormAnswered,
)
from acpio.schema import CreateElicitationRequest, ElicitationSchema
from tests.oneshot._agents import agent_script


def run_testy(protocol: int) -> list[str]:
    return [sys.executable, "-m", "acpio", "testy", "--protocol", str(protocol)]


def answered(text: str) -> tuple[str, object]:
    """What testy reported it was answered: the action, and the content it received."""
    line = next(line for line in text.splitlines() if line.startswith("elicitation: "))
    action, _, content = line.removeprefix("elicitation: ").partition(" ")
    return action, json.loads(content) if content else None


async def test_a_form_is_answered_from_field_values_and_its_defaults(tmp_path: Path) -> None:
    values = {"name": "Ada", "age": 36, "tags": ["python"], "unasked": "left out"}
    async with AgentClient(run_testy(1), cwd=tmp_path, forms=values) as client:
        session = await client.new_session()
        result = await session.prompt("elicit Who are you?")

    assert result.ok, result.error
    sent = {"name": "Ada", "age": 36, "tags": ["python"], "subscribe": False, "colour": "green"}
    assert answered(result.text) == ("accept", sent)
    [form] = result.forms
    assert (form.message, form.action, form.content, form.error) == ("Who are you?", "accept", sent, None)
    assert form.schema["required"] == ["name"]
    assert form.schema["properties"]["age"] == {
        "type": "integer",
        "title": "Age",
        "minimum": 0,
        "maximum": 150,
    }
    assert result.to_dict()["forms"][0]["content"] == sent


@dataclass
class Release:
    version: Annotated[str, Ask("Version", pattern=r"^\d+\.\d+\.\d+$")]
    channel: Literal["stable", "beta"] = "stable"
    notes: bool = True


def releaser_app() -> AgentApp:
    """An agent (v1 and v2) asking a dataclass form, as a graph's interrupt does; it says what it got."""
    app = AgentApp("releaser", protocols=(1, 2))

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        answer = await turn.elicit("How should I release?", Release)
        await turn.say(f"{answer.action} {answer.value}")
        return "end_turn"

    return app


@pytest.mark.parametrize("protocol", [1, 2])
async def test_an_agent_app_gets_its_form_filled_on_v1_and_v2(tmp_path: Path, protocol: int) -> None:
    answer = {"version": "1.2.3", "channel": "beta"}
    async with AgentClient(releaser_app(), cwd=tmp_path, protocol=protocol, forms=answer) as client:
        result = await (await client.new_session()).prompt("release")

    assert result.protocol_version == protocol
    assert result.text == "accept Release(version='1.2.3', channel='beta', notes=True)"
    [form] = result.forms
    assert form.content == {"version": "1.2.3", "channel": "beta", "notes": True}


async def test_a_value_breaking_a_fields_pattern_is_not_sent(tmp_path: Path) -> None:
    async with AgentClient(releaser_app(), cwd=tmp_path, forms={"version": "next"}) as client:
        result = await (await client.new_session()).prompt("release")

    assert result.text == "cancel None"
    [form] = result.forms
    assert form.error is not None
    assert "version must match the pattern" in form.error


async def test_a_callback_gets_the_typed_form_and_answers_each_its_own_way(tmp_path: Path) -> None:
    asked: list[CreateElicitationRequest] = []

    async def fill(request: CreateElicitationRequest) -> FormAnswer:
        asked.append(request)
        if len(asked) == 2:
            return "decline"
        return {"name": "Grace", "size": "m", "ratio": "0.5"}  # text is read as the field reads it

    async with AgentClient(testy_agent(), cwd=tmp_path, forms=fill) as client:
        session = await client.new_session()
        stream = session.stream("elicit First\nelicit Second")
        events = [event async for event in stream]
        result = await stream.result()

    assert [request.message for request in asked] == ["First", "Second"]
    assert all(isinstance(request.requested_schema, ElicitationSchema) for request in asked)
    assert asked[0].session_id == session.session_id
    sent = {"name": "Grace", "size": "m", "ratio": 0.5, "subscribe": False, "colour": "green"}
    assert [(form.action, form.content) for form in result.forms] == [("accept", sent), ("decline", None)]
    assert "elicitation: accept" in result.text
    assert "elicitation: decline\n" in result.text
    assert [event.ask for event in events if isinstance(event, FormAnswered)] == list(result.forms)


async def test_a_form_still_being_filled_when_the_turn_is_cancelled_is_answered_cancel(
    tmp_path: Path,
) -> None:
    asked = asyncio.Event()

    async def slow(request: CreateElicitationRequest) -> FormAnswer:
        asked.set()
        await asyncio.sleep(60)  # a person who never answers
        return {"name": "too late"}

    async with AgentClient(testy_agent(), cwd=tmp_path, forms=slow) as client:
        session = await client.new_session()
        stream = session.stream("elicit")
        reading = asyncio.create_task(stream.result())
        await asyncio.wait_for(asked.wait(), 5)
        stream.cancel()
        result = await asyncio.wait_for(reading, 5)

    assert result.stop_reason == "cancelled"
    assert [(form.action, form.content, form.error) for form in result.forms] == [("cancel", None, None)]


@pytest.mark.parametrize(
    ("values", "problems"),
    [
        (
            {"name": "Ada", "age": 200, "colour": "purple"},
            ["age must be at most 150", "colour 'purple' is not one of red, green, blue"],
        ),
        ({"age": 3}, ["name is required and has no default: give it a value"]),
        ({"name": "Ada", "subscribe": 1}, ["subscribe takes true or false"]),
    ],
)
async def test_values_that_do_not_fit_the_form_are_not_sent_and_the_result_says_which(
    tmp_path: Path, values: dict[str, object], problems: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    async with AgentClient(testy_agent(), cwd=tmp_path, forms=values) as client:
        session = await client.new_session()
        result = await session.prompt("elicit Who are you?")

    assert result.ok, result.error  # the agent was answered cancel, and went on
    assert answered(result.text) == ("cancel", None)
    [form] = result.forms
    assert (form.action, form.content) == ("cancel", None)
    assert form.error is not None
    for problem in problems:
        assert problem in form.error
    assert "AgentClient(forms=...)" in form.error
    assert "Fix the values" in form.error
    assert form.error in caplog.text


async def test_a_callback_answering_something_else_is_told_what_to_return(tmp_path: Path) -> None:
    async def wrong(request: CreateElicitationRequest) -> FormAnswer:
        return "accept"  # type: ignore[return-value]  # a user's mistake, as it happens at run time

    async with AgentClient(testy_agent(), cwd=tmp_path, forms=wrong) as client:
        result = await (await client.new_session()).prompt("elicit")

    [form] = result.forms
    assert form.action == "cancel"
    assert form.error is not None
    assert "return a mapping of field names to values" in form.error


async def test_a_sync_callback_is_told_to_be_async_and_the_agent_answered_cancel(tmp_path: Path) -> None:
    def not_async(request: CreateElicitationRequest) -> FormAnswer:
        return {"name": "Ada"}

    async with AgentClient(testy_agent(), cwd=tmp_path, forms=not_async) as client:  # type: ignore[arg-type]
        result = await (await client.new_session()).prompt("elicit")

    assert result.ok, result.error
    assert answered(result.text) == ("cancel", None)  # not -32603
    [form] = result.forms
    assert form.action == "cancel"
    assert form.error is not None
    assert "make it an async function (async def)" in form.error


async def test_a_callback_that_raises_is_recorded_and_the_agent_answered_cancel(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(request: CreateElicitationRequest) -> FormAnswer:
        raise KeyError("colour")

    async with AgentClient(testy_agent(), cwd=tmp_path, forms=broken) as client:
        result = await (await client.new_session()).prompt("elicit")

    assert result.ok, result.error
    assert answered(result.text) == ("cancel", None)
    [form] = result.forms
    assert (form.action, form.content) == ("cancel", None)
    assert form.error == "The forms callback raised KeyError('colour'); the agent was answered cancel"
    assert "KeyError: 'colour'" in caplog.text  # logged with its traceback


async def test_a_choice_whose_values_are_numbers_gets_the_value_given(tmp_path: Path) -> None:
    body = """
retries = acp.StringPropertySchema(enum=["0", "1", "2"])
form = acp.ElicitationSchema(properties={"retries": retries}, required=["retries"])
ask = acp.CreateElicitationRequest(session_id="s-1", mode="form", message="Retries?", requested_schema=form)
say(cx, f"{await cx.send_request(ask.METHOD, ask.to_wire())}")
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path, forms={"retries": "1"}) as client:
        result = await (await client.new_session()).prompt("go")

    assert result.text == "{'action': 'accept', 'content': {'retries': '1'}}"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_or_cancel_answers_every_form_so(tmp_path: Path, action: str) -> None:
    async with AgentClient(testy_agent(), cwd=tmp_path, forms=action) as client:  # type: ignore[arg-type]
        result = await (await client.new_session()).prompt("elicit")

    assert answered(result.text) == (action, None)
    assert [(form.action, form.content) for form in result.forms] == [(action, None)]


@pytest.mark.parametrize("wrong", ["accept", ["name", "Ada"]])
def test_an_answer_that_is_not_one_says_what_to_give(wrong: object) -> None:
    with pytest.raises(ValueError, match="give 'decline', 'cancel', a mapping of field names"):
        AgentClient("acpio testy", forms=wrong)  # type: ignore[arg-type]


async def test_by_default_forms_are_not_advertised_so_the_agent_asks_none(tmp_path: Path) -> None:
    async with AgentClient(testy_agent(), cwd=tmp_path) as client:
        assert client.forms is None
        result = await (await client.new_session()).prompt("elicit")

    assert "the client did not advertise clientCapabilities.elicitation.form" in result.text
    assert result.forms == ()


async def test_a_form_asked_though_not_advertised_is_refused_as_invalid_params(tmp_path: Path) -> None:
    # an agent process that asks a form whatever the client advertised, and says how it was answered
    body = """
form = acp.ElicitationSchema(properties={"name": acp.StringPropertySchema()}, required=["name"])
ask = acp.CreateElicitationRequest(session_id="s-1", mode="form", message="Name?", requested_schema=form)
try:
    await cx.send_request(ask.METHOD, ask.to_wire())  # raw: sent unchecked
except RequestError as error:
    say(cx, f"{error.code} {error.message}")
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path) as client:
        result = await (await client.new_session()).prompt("go")

    assert result.text == (
        "-32602 This client did not advertise form elicitations in its capabilities "
        "(pass AgentClient(forms=...) to answer forms)"
    )
    assert result.forms == ()


async def test_a_form_outside_a_session_is_answered_and_a_url_is_refused(tmp_path: Path) -> None:
    # an agent asking a form scoped to one of its requests (no session), then a URL (not advertised)
    body = """
form = acp.ElicitationSchema(properties={"label": acp.StringPropertySchema()}, required=["label"])
ask = acp.CreateElicitationRequest(request_id=7, mode="form", message="Name the token", requested_schema=form)
say(cx, f"outside: {await cx.send_request(ask.METHOD, ask.to_wire())}\\n")
url = acp.CreateElicitationRequest(
    session_id="s-1", mode="url", message="Log in", elicitation_id="e-1", url="https://example.com/login"
)
try:
    await cx.send_request(url.METHOD, url.to_wire())
except RequestError as error:
    say(cx, f"url: {error.code} {error.message}")
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path, forms={"label": "ci"}) as client:
        result = await (await client.new_session()).prompt("go")
        outside = list(client.forms_outside_sessions)
        # its handler is skipped, without a call, for every other message; responses skip the chain
        assert client.connection._chain.intercepts_responses is False

    assert result.text == (
        "outside: {'action': 'accept', 'content': {'label': 'ci'}}\n"
        "url: -32602 This client did not advertise url elicitations in its capabilities "
        "(AgentClient answers forms only)"
    )
    assert [(form.message, form.action, form.content) for form in outside] == [
        ("Name the token", "accept", {"label": "ci"})
    ]
    assert result.forms == ()  # neither was the session's form


async def test_the_pool_answers_forms_as_its_clients_do(tmp_path: Path) -> None:
    async with AgentPool(run_testy(1), size=1, cwd=tmp_path, forms={"name": "Ada"}) as pool:
        result = await pool.prompt("elicit")

    assert answered(result.text) == ("accept", {"name": "Ada", "subscribe": False, "colour": "green"})
    assert [form.action for form in result.forms] == ["accept"]
