"""The editor profiles: their data (each behaviour with a public source) and the guard that acts on them.

:class:`~acpio.profiles.ProfileGuard` sees a connection as the editor would: Zed drops a
``session/update`` that comes before the ``session/new`` answer, JetBrains IDEs keep it (and hang),
CodeCompanion.nvim refuses a terminal. Each time it issues :class:`acpio.AcpSpecificationWarning`.
"""

from __future__ import annotations

import warnings

import orjson
import pytest

import acpio
from acpio.profiles import PROFILE_NAMES, GuardedTransport, ProfileGuard, load_profile
from acpio.schema import ClientCapabilities, Implementation
from acpio.transports import Channel

NEW = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}
ANSWER = {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s-1"}}
COMMANDS = {"sessionUpdate": "available_commands_update", "availableCommands": []}
EARLY = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": COMMANDS}}


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_each_profile_is_what_the_editor_sends_with_a_public_source_for_each_behaviour(name: str) -> None:
    profile = load_profile(name)
    assert profile.profile == name
    assert profile.profile_version == 1  # bump it (and this test) when the data changes meaning
    ClientCapabilities.model_validate(profile.client_capabilities)
    assert Implementation.model_validate(profile.client_info).name
    assert profile.initialize["protocolVersion"] == 1
    sources = [*profile.initialize_sources, *(s for b in profile.behaviours for s in b.sources)]
    assert sources
    assert all(source.startswith("https://") for source in sources)
    assert all(b.summary and b.effect in {"drop", "hang", "refuse", "accept"} for b in profile.behaviours)


def test_an_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match="no editor profile 'vscode': acpio knows zed, jetbrains, codecompanion"
    ):
        load_profile("vscode")


def test_zed_drops_an_update_before_the_session_new_answer_and_warns_with_the_issue() -> None:
    guard = ProfileGuard(load_profile("zed"))
    guard.outgoing(NEW)
    with pytest.warns(acpio.AcpSpecificationWarning, match=r"Zed drops .*zed-industries/zed/issues/60199"):
        assert guard.incoming(EARLY) is False
    assert guard.incoming(ANSWER) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert guard.incoming(EARLY) is True  # the session is known now: shown, no warning
    assert {kind: len(texts) for kind, texts in guard.by_kind.items()} == {"early-session-update": 1}


def test_jetbrains_keeps_the_early_update_but_warns_that_it_hangs_on_it() -> None:
    guard = ProfileGuard(load_profile("jetbrains"))
    guard.outgoing(NEW)
    with pytest.warns(acpio.AcpSpecificationWarning, match="hangs on"):
        assert guard.incoming(EARLY) is True


def test_a_loaded_session_is_registered_before_its_replay() -> None:
    guard = ProfileGuard(load_profile("zed"))
    guard.outgoing(NEW)  # a session/new still pending elsewhere
    guard.outgoing({"jsonrpc": "2.0", "id": 3, "method": "session/load", "params": {"sessionId": "s-1"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert guard.incoming(EARLY) is True


def test_codecompanion_refuses_a_terminal_it_never_advertised_and_takes_files() -> None:
    guard = ProfileGuard(load_profile("codecompanion"))
    read = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "fs/read_text_file",
        "params": {"sessionId": "s", "path": "/a"},
    }
    terminal = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "terminal/create",
        "params": {"sessionId": "s", "command": "ls"},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert guard.incoming(read) is True
    with pytest.warns(acpio.AcpSpecificationWarning, match="sent terminal/create, which CodeCompanion.nvim"):
        guard.incoming(terminal)
    assert list(guard.by_kind) == ["not-advertised"]


async def test_a_guarded_transport_hands_on_only_what_the_editor_would_see() -> None:
    client_end, agent_end = Channel.duplex()
    guarded = GuardedTransport(client_end, ProfileGuard(load_profile("zed"), warn=False))
    guarded.send(orjson.dumps(NEW))
    assert orjson.loads(await agent_end.receive() or b"") == NEW  # type: ignore[arg-type]
    for message in (EARLY, ANSWER, EARLY):
        agent_end.send(orjson.dumps(message))
    assert orjson.loads(await guarded.receive() or b"") == ANSWER  # type: ignore[arg-type]
    assert orjson.loads(await guarded.receive() or b"") == EARLY  # type: ignore[arg-type]
    assert guarded.guard.problems[0].startswith("Zed drops this session/update of session 's-1'")
