"""The agent API for elicitation, notices, usage, titles and compactions, on the wire."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest

from acpio.app import AgentApp, Ask, FormError, StopReasonName, Turn
from acpio.app.forms import form_schema, form_value
from acpio.capabilities import CapabilityNotAdvertised
from acpio.testing import WirePeer, serving


@dataclass
class Release:
    version: Annotated[str, Ask("Version", pattern=r"^\d+\.\d+\.\d+$")]
    retries: Annotated[int, Ask("Retries", minimum=0, maximum=5)]
    notes: Annotated[bool, Ask("Write release notes?")] = True
    channel: Annotated[Literal["stable", "beta"], Ask(choices={"stable": "Stable", "beta": "Beta"})] = (
        "stable"
    )
    targets: list[Literal["pypi", "docs"]] = field(default_factory=list)
    ratio: float | None = None


def test_a_dataclass_becomes_a_schema_of_every_field_kind() -> None:
    schema = form_schema(Release).to_wire()
    assert schema == {
        "type": "object",
        "properties": {
            "version": {"type": "string", "title": "Version", "pattern": r"^\d+\.\d+\.\d+$"},
            "retries": {"type": "integer", "title": "Retries", "minimum": 0, "maximum": 5},
            "notes": {"type": "boolean", "title": "Write release notes?", "default": True},
            "channel": {
                "type": "string", "title": "channel", "default": "stable",
                "oneOf": [{"const": "stable", "title": "Stable"}, {"const": "beta", "title": "Beta"}],
            },
            "targets": {
                "type": "array", "title": "targets", "items": {"type": "string", "enum": ["pypi", "docs"]},
            },
            "ratio": {"type": "number", "title": "ratio"},
        },
        "required": ["version", "retries"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"retries": 1}, "no value for the required field 'version'"),
        ({"version": "1.0", "retries": 1}, "'1.0' does not match"),
        ({"version": "1.0.0", "retries": 9}, "above the maximum 5"),
        ({"version": "1.0.0", "retries": 1.5}, "a whole number expected"),
        ({"version": "1.0.0", "retries": 1, "channel": "nightly"}, "one of stable, beta expected"),
        ({"version": "1.0.0", "retries": 1, "targets": ["pypi", "tv"]}, "a list of pypi, docs expected"),
        ({"version": "1.0.0", "retries": 1, "notes": "yes"}, "true or false expected"),
    ],
)
def test_an_answer_that_does_not_fit_is_refused(content: dict[str, Any], says: str) -> None:
    with pytest.raises(FormError, match=says):
        form_value(Release, content)


def test_a_form_with_a_field_that_cannot_be_asked_is_refused() -> None:
    @dataclass
    class Bad:
        when: list[int]

    with pytest.raises(FormError, match=r"Bad\.when"):
        form_schema(Bad)


def _app(seen: list[Any]) -> AgentApp:
    app = AgentApp("asker")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        if turn.text == "form":
            answer = await turn.elicit("How should I release?", Release)
            seen.append(answer)
        elif turn.text == "url":
            link = await turn.elicit_url("Log in", "https://example.com/login", elicitation_id="e-1")
            seen.append(link)
            if link.accepted and link.elicitation_id is not None:
                await turn.complete_elicitation(link.elicitation_id)
        elif turn.text == "extras":
            await turn.notice("Disk almost full", severity="warning", description="3% left")
            await turn.report_usage(1200, 200000, cost=0.25)
            await turn.set_title("Release 1.2.3")
            seen.append(await turn.compact(["We released ", "1.2.3."], compaction_id="c-1"))
        else:
            try:
                await turn.elicit("?", Release)
            except CapabilityNotAdvertised as error:
                seen.append(str(error))
            await turn.notice("plain", description="as a message")
        return "end_turn"

    return app


@pytest.fixture
async def wire(tmp_path: Path) -> AsyncIterator[tuple[WirePeer, list[Any], str]]:
    seen: list[Any] = []
    async with serving(_app(seen).builder()) as peer:
        caps = {"elicitation": {"form": {}, "url": {}}, "session": {"notices": {}, "compaction": {}}}
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        await peer.response_to(1)
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        yield peer, seen, new["result"]["sessionId"]


def _prompt(peer: WirePeer, sid: str, text: str) -> Any:
    return peer.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})


async def test_elicit_sends_the_form_and_returns_the_typed_answer(
    wire: tuple[WirePeer, list[Any], str],
) -> None:
    peer, seen, sid = wire
    prompt = _prompt(peer, sid, "form")
    request = await peer.message_for("elicitation/create")
    assert request["params"]["mode"] == "form"
    assert request["params"]["sessionId"] == sid
    assert request["params"]["requestedSchema"]["required"] == ["version", "retries"]
    peer.respond(
        request, {"action": "accept", "content": {"version": "1.2.3", "retries": 2, "targets": ["docs"]}}
    )
    await peer.response_to(prompt)
    (answer,) = seen
    assert answer.accepted
    assert answer.value == Release(version="1.2.3", retries=2, targets=["docs"])

    prompt = _prompt(peer, sid, "form")
    peer.respond(await peer.message_for("elicitation/create"), {"action": "decline"})
    await peer.response_to(prompt)
    assert (seen[1].action, seen[1].value) == ("decline", None)


async def test_elicit_url_and_complete(wire: tuple[WirePeer, list[Any], str]) -> None:
    peer, seen, sid = wire
    prompt = _prompt(peer, sid, "url")
    request = await peer.message_for("elicitation/create")
    assert {k: request["params"][k] for k in ("mode", "url", "elicitationId")} == {
        "mode": "url", "url": "https://example.com/login", "elicitationId": "e-1",
    }  # fmt: skip
    peer.respond(request, {"action": "accept"})
    complete = await peer.message_for("elicitation/complete")
    assert complete["params"] == {"elicitationId": "e-1"}
    await peer.response_to(prompt)
    assert (seen[0].action, seen[0].elicitation_id) == ("accept", "e-1")


async def test_notice_usage_title_and_compaction(wire: tuple[WirePeer, list[Any], str]) -> None:
    peer, seen, sid = wire
    frames: list[Any] = []
    await peer.response_to(_prompt(peer, sid, "extras"), frames)
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    chunk = {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c-1"}
    assert updates == [
        {"sessionUpdate": "notice", "severity": "warning", "title": "Disk almost full",
         "description": "3% left"},
        {"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
         "cost": {"amount": 0.25, "currency": "USD"}},
        {"sessionUpdate": "session_info_update", "title": "Release 1.2.3"},
        {"sessionUpdate": "compaction_update", "compactionId": "c-1", "status": "in_progress"},
        chunk | {"content": {"type": "text", "text": "We released "}},
        chunk | {"content": {"type": "text", "text": "1.2.3."}},
        {"sessionUpdate": "compaction_update", "compactionId": "c-1", "status": "completed"},
    ]  # fmt: skip
    assert seen == ["c-1"]


async def test_a_client_without_the_capabilities_gets_no_elicitation_and_notices_as_text(
    tmp_path: Path,
) -> None:
    seen: list[Any] = []
    async with serving(_app(seen).builder()) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await peer.response_to(1)
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        frames: list[Any] = []
        await peer.response_to(_prompt(peer, new["result"]["sessionId"], "none"), frames)
    assert "clientCapabilities.elicitation.form" in seen[0]
    assert not [f for f in frames if f.get("method") == "elicitation/create"]
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    assert updates == [
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "info: plain: as a message\n"},
        }
    ]


async def test_run_command_kills_a_command_past_kill_after(tmp_path: Path) -> None:
    app = AgentApp("killer")
    results: list[Any] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        results.append(await turn.run_command("sleep", "60", kill_after=0.1))
        return "end_turn"

    async with serving(app.builder()) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": True}})
        await peer.response_to(1)
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        sid = new["result"]["sessionId"]
        prompt_id = _prompt(peer, sid, "go")
        peer.respond(await peer.message_for("terminal/create"), {"terminalId": "t-1"})
        await peer.message_for("terminal/wait_for_exit")  # left unanswered: the limit passes
        kill = await peer.message_for("terminal/kill")
        assert kill["params"] == {"sessionId": sid, "terminalId": "t-1"}
        peer.respond(kill, {})
        peer.respond(
            await peer.message_for("terminal/wait_for_exit"), {"exitCode": None, "signal": "SIGTERM"}
        )
        peer.respond(await peer.message_for("terminal/output"), {"output": "", "truncated": False})
        peer.respond(await peer.message_for("terminal/release"), {})
        await peer.response_to(prompt_id)
    (result,) = results
    assert (result.timed_out, result.signal, result.exit_code) == (True, "SIGTERM", None)
