"""The reference agent's settings files and credential file, and the ``acpio agent`` command line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acpio.agents.coder.settings import DEFAULT_MODES, CredentialFile, SettingsError, load_settings

from .keyed_provider import KeyedProvider

#: The repository root: the provider's module is ``tests.agents.coder.keyed_provider``.
ROOT = Path(__file__).resolve().parents[3]


def test_settings_merge_user_project_and_extra_files(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(
        'model = "openai/gpt-4o"\nreasoning_effort = "low"\n'
        '[providers.openai]\nbase_url = "http://localhost:11434/v1"\n'
        'models = [{ id = "llama3.2", context_window = 128000 }, { id = "llava", image = true }]\n'
        '[[modes]]\nid = "ask"\nname = "Ask"\n[[modes]]\nid = "fast"\nname = "Fast"\nedit = "allow"\n'
    )
    project = tmp_path / "project"
    (project / ".acpio").mkdir(parents=True)
    (project / ".acpio" / "agent.toml").write_text(
        'reasoning_effort = "high"\n[[modes]]\nid = "fast"\nname = "Faster"\nexecute = "deny"\n'
    )
    extra = tmp_path / "extra.toml"
    extra.write_text("max_turn_requests = 7\n")

    settings = load_settings(project, extra, user=user)
    assert settings.model == "openai/gpt-4o"
    assert settings.reasoning_effort == "high"  # the project's wins
    assert settings.max_turn_requests == 7
    assert [(m.id, m.name, m.edit, m.execute) for m in settings.modes] == [
        ("ask", "Ask", "ask", "ask"),
        ("fast", "Faster", "ask", "deny"),  # replaced by id
    ]
    openai = settings.providers["openai"]
    assert openai.base_url == "http://localhost:11434/v1"
    assert [(m.qualified_id, m.image, m.context_window) for m in openai.models] == [
        ("openai/llama3.2", False, 128000),
        ("openai/llava", True, None),
    ]
    assert load_settings(None, user=tmp_path / "absent.toml").modes == DEFAULT_MODES


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("model = ", "Invalid value"),
        ("colour = 'blue'", "unknown settings ['colour']"),
        ("reasoning_effort = 'max'", "reasoning_effort is 'max': one of ['low', 'medium', 'high']"),
        ("max_turn_requests = 0", "max_turn_requests is 0: a positive integer"),
        ("[[modes]]\nid = 'x'\nedit = 'sometimes'", "mode 'x': edit is 'sometimes': allow, ask or deny"),
        ("[providers]\nopenai = 3", "providers.openai is 3: a table"),
        ("[providers.openai]\nmodels = [{ id = 'm', context_window = 'big' }]", "context_window is 'big'"),
    ],
)
def test_a_bad_settings_file_is_refused_naming_the_file_and_the_mistake(
    tmp_path: Path, text: str, said: str
) -> None:
    user = tmp_path / "agent.toml"
    user.write_text(text)
    with pytest.raises(SettingsError) as caught:
        load_settings(None, user=user)
    assert str(caught.value).startswith(f"{user}: ")
    assert said in str(caught.value)


def test_the_credential_file_is_private_to_its_owner(tmp_path: Path) -> None:
    keys = CredentialFile(tmp_path / "config" / "credentials.json")
    assert keys.get("openai") is None
    keys.set("openai", "sk-1")
    keys.set("anthropic", "sk-2")
    assert stat.S_IMODE(keys.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.path.parent.stat().st_mode) == 0o700
    assert (keys.get("openai"), keys.get("anthropic")) == ("sk-1", "sk-2")
    assert keys.clear() == ["anthropic", "openai"]
    assert keys.get("openai") is None


def _acpio(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)]))
    env = {**os.environ, "PYTHONPATH": path, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return subprocess.run(
        [sys.executable, "-m", "acpio", "agent", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        start_new_session=True,  # no controlling terminal: getpass reads stdin
    )


def test_login_asks_for_a_key_and_keeps_it_privately(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text(f'[providers.keyed]\nclass = "{KeyedProvider.__module__}:KeyedProvider"\n')
    credentials = tmp_path / "keys.json"
    base = ["--settings", str(settings), "--credentials", str(credentials)]

    done = _acpio(tmp_path, *base, "--login", "keyed", stdin="sk-typed-5678\n")
    assert done.returncode == 0, done.stderr
    assert f"Stored the Keyed key in {credentials} (readable by you only)." in done.stderr
    assert CredentialFile(credentials).get("keyed") == "sk-typed-5678"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600

    empty = _acpio(tmp_path, *base, "--login", "keyed", stdin="\n")
    assert empty.returncode == 1
    assert "No key given; nothing stored." in empty.stderr

    unknown = _acpio(tmp_path, *base, "--login", "nope")
    assert unknown.returncode == 2
    assert "acpio: error: no provider 'nope' takes a key here; these do:" in unknown.stderr
    assert "keyed" in unknown.stderr.splitlines()[-1]


def test_a_missing_settings_file_is_a_usage_error(tmp_path: Path) -> None:
    done = _acpio(tmp_path, "--settings", str(tmp_path / "nope.toml"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"acpio: error: the settings file {tmp_path / 'nope.toml'} does not exist"
