"""Which providers the agent uses: one with its key (environment or credential file), one pointed at an
endpoint of one's own, the offline one only when asked for; the settings' model first."""

from __future__ import annotations

import socket
from pathlib import Path

from acpio.agents.coder.catalogue import build_catalogue
from acpio.agents.coder.settings import CredentialFile, load_settings

from .keyed_provider import KeyedProvider

KEYED = f'[providers.keyed]\nclass = "{KeyedProvider.__module__}:KeyedProvider"\n'


async def test_a_provider_is_used_with_its_key_or_an_endpoint_of_ones_own(tmp_path: Path) -> None:
    settings_file = tmp_path / "agent.toml"
    settings_file.write_text(KEYED)
    settings = load_settings(None, user=settings_file)
    keys = CredentialFile(tmp_path / "keys.json")

    nothing = await build_catalogue(settings, keys, {})
    assert "keyed" in nothing.specs
    assert "keyed" not in nothing.providers  # no key, no endpoint
    assert nothing.models == []  # and no offline model unless asked for
    assert "set ACPIO_TEST_KEYED_KEY" in nothing.missing_model_message()

    from_env = await build_catalogue(settings, keys, {"ACPIO_TEST_KEYED_KEY": "k-env"})
    assert from_env.providers["keyed"].config.api_key == "k-env"
    keys.set("keyed", "k-file")
    from_file = await build_catalogue(settings, keys, {})
    assert from_file.providers["keyed"].config.api_key == "k-file"
    keys.clear()

    settings_file.write_text(KEYED + 'base_url = "http://127.0.0.1:9/v1"\nmodels = [{ id = "local" }]\n')
    local = await build_catalogue(load_settings(None, user=settings_file), keys, {}, offline=True)
    provider = local.providers["keyed"]
    assert (provider.config.api_key, provider.config.base_url) == (None, "http://127.0.0.1:9/v1")
    assert [m.qualified_id for m in local.models] == [
        "keyed/local",
        "keyed/big",
        "offline/coder",
        "offline/text",
    ]


async def test_the_settings_model_comes_first_and_an_unknown_one_is_reported(tmp_path: Path) -> None:
    settings_file = tmp_path / "agent.toml"
    settings_file.write_text('model = "offline/text"\n')
    catalogue = await build_catalogue(
        load_settings(None, user=settings_file), CredentialFile(tmp_path / "k"), {}
    )
    assert [m.qualified_id for m in catalogue.models] == ["offline/text", "offline/coder"]

    settings_file.write_text('model = "offline/nope"\n[providers.offline]\n')
    catalogue = await build_catalogue(
        load_settings(None, user=settings_file), CredentialFile(tmp_path / "k"), {}
    )
    assert [m.qualified_id for m in catalogue.models] == ["offline/coder", "offline/text"]
    assert catalogue.problems == ["the settings' model 'offline/nope' is not available"]


async def test_an_unreachable_local_server_is_named_first_in_the_message(tmp_path: Path) -> None:
    # OPENAI_BASE_URL at a port that refuses connections: bound, held, never listening
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        settings = load_settings(None, user=tmp_path / "none.toml")
        catalogue = await build_catalogue(settings, CredentialFile(tmp_path / "k"), {"OPENAI_BASE_URL": url})
    assert catalogue.models == []
    message = catalogue.missing_model_message()
    first = f"No usable model. OpenAI-compatible: listing the models failed (cannot reach {url}"
    assert message.startswith(first)
    assert "is the server running" in message
    assert message.endswith("; or run `acpio agent --offline` for the scripted offline model")
