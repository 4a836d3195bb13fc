"""Auth of the reference agent: methods per provider, a key kept in a file only its owner reads
(never in the store), every live session's model list refreshed on authenticate and logout, and
the error that names what would give a usable model."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from acpio.store import SqliteStore

from ._support import FS, editor, options
from .keyed_provider import KeyedProvider

KEY = "sk-test-secret-1234"


def keyed_settings(tmp_path: Path) -> None:
    (tmp_path / "user-settings.toml").write_text(
        f'[providers.keyed]\nclass = "{KeyedProvider.__module__}:KeyedProvider"\n'
    )


def keyed_methods(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The test provider's auth methods (acpio's own providers have theirs too)."""
    return [m for m in answer["authMethods"] if m["id"].startswith("keyed")]


def _is_option_update(message: dict[str, Any]) -> bool:
    return message.get("method") == "session/update" and (
        message["params"]["update"]["sessionUpdate"] == "config_option_update"
    )


def models_of(options: list[dict[str, Any]]) -> list[str]:
    model = next(o for o in options if o["id"] == "model")
    return [c["value"] for c in model["options"]]


async def test_authenticate_keeps_the_key_privately_and_refreshes_live_sessions(tmp_path: Path) -> None:
    keyed_settings(tmp_path)
    database = tmp_path / "sessions.db"
    async with editor(options(tmp_path, store=SqliteStore(database))) as client:
        answer = await client.initialize(FS)
        assert keyed_methods(answer) == [
            {
                "id": "keyed",
                "name": "Keyed API key",
                "description": "set ACPIO_TEST_KEYED_KEY, or send the key as _meta.apiKey",
            }
        ]
        created = (await client.new(tmp_path))["result"]
        session = created["sessionId"]
        assert models_of(created["configOptions"]) == ["offline/coder", "offline/text"]

        seen: list[Any] = []
        done = await client.call("authenticate", {"methodId": "keyed", "_meta": {"apiKey": KEY}}, seen)
        assert done["result"] == {}
        [refresh] = [m["params"] for m in seen if _is_option_update(m)]
        assert refresh["sessionId"] == session
        assert models_of(refresh["update"]["configOptions"]) == ["keyed/big", "offline/coder", "offline/text"]

        await client.call(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "keyed/big"}
        )
        assert (await client.prompt(session, "hello")).text == "keyed big with ...1234"

        credentials = tmp_path / "credentials.json"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        assert KEY in credentials.read_text()
        again = await client.initialize(FS)
        assert keyed_methods(again)[0]["description"] == "authenticated"

        seen.clear()
        assert (await client.call("logout", {}, seen))["result"] == {}
        [refresh] = [m["params"]["update"] for m in seen if _is_option_update(m)]
        assert models_of(refresh["configOptions"]) == ["offline/coder", "offline/text"]
        assert {o["id"]: o["currentValue"] for o in refresh["configOptions"]}["model"] == "offline/coder"
        assert KEY not in credentials.read_text()
    stored = [p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.name.startswith("sessions.db")]  # noqa: ASYNC240
    assert stored
    assert all(KEY.encode() not in data for data in stored)  # the key is in no part of the store


async def test_no_usable_model_names_the_variables_and_methods_that_would_fix_it(tmp_path: Path) -> None:
    keyed_settings(tmp_path)
    async with editor(options(tmp_path, offline=False)) as client:
        refused = await client.new(tmp_path)
        error = refused["error"]
        assert error["code"] == -32000
        assert "set ACPIO_TEST_KEYED_KEY (or authenticate with the 'keyed' method)" in error["message"]
        assert "acpio agent --offline" in error["message"]
        unknown = await client.call("authenticate", {"methodId": "nope"})
        assert unknown["error"]["code"] == -32602
        keyless = await client.call("authenticate", {"methodId": "keyed"})
        assert keyless["error"]["code"] == -32000
        assert keyless["error"]["message"] == (
            "No Keyed key: set ACPIO_TEST_KEYED_KEY, send the key in _meta.apiKey, or type it in a terminal "
            "with the keyed-login method (acpio agent --login keyed)"
        )

    # a key in the environment is enough, and is described as authenticated
    env = {"ACPIO_TEST_KEYED_KEY": "env-key-9876"}
    async with editor(options(tmp_path, offline=False, environ=env)) as client:
        answer = await client.initialize({**FS, "auth": {"terminal": True}})
        assert keyed_methods(answer) == [
            {"id": "keyed", "name": "Keyed API key", "description": "authenticated"},
            {
                "id": "keyed-login",
                "name": "Type the Keyed API key in a terminal",
                "type": "terminal",
                "args": ["--login", "keyed"],
            },
        ]
        session = await client.session(tmp_path)
        assert (await client.prompt(session, "hi")).text == "keyed big with ...9876"


async def test_a_refused_key_answers_the_turn_with_auth_required(tmp_path: Path) -> None:
    keyed_settings(tmp_path)
    async with editor(options(tmp_path, offline=False, environ={"ACPIO_TEST_KEYED_KEY": "bad"})) as client:
        session = await client.session(tmp_path)
        answer = (await client.prompt(session, "hi")).answer
    assert answer["error"]["code"] == -32000
    assert answer["error"]["message"] == "keyed/big: the key was refused (401)"


async def test_with_unstable_methods_auth_status_is_served_and_its_changes_sent(tmp_path: Path) -> None:
    keyed_settings(tmp_path)
    async with editor(options(tmp_path, unstable=True)) as client:
        answer = await client.initialize(FS)
        assert answer["agentCapabilities"]["auth"] == {"logout": {}, "status": {}}
        assert set(answer["agentCapabilities"]["sessionCapabilities"]) >= {"fork", "archive", "status"}
        status = await client.call("auth/status", {})
        assert status["result"] == {"state": "not_required"}  # the offline model needs no key

        seen: list[Any] = []
        await client.call("authenticate", {"methodId": "keyed", "_meta": {"apiKey": KEY}}, seen)
        [update] = [m["params"] for m in seen if m.get("method") == "auth/status_update"]
        assert update == {"state": "authenticated", "accounts": [{"label": "Keyed API key", "active": True}]}
        seen.clear()
        await client.call("authenticate", {"methodId": "keyed"}, seen)  # nothing changed: nothing sent
        assert [m for m in seen if m.get("method") == "auth/status_update"] == []

        await client.call("logout", {}, seen)
        [update] = [m["params"] for m in seen if m.get("method") == "auth/status_update"]
        assert update == {"state": "not_required"}
