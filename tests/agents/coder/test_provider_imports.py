"""Provider modules load without their client packages: the agent lists them and names the extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent(
    """
    import asyncio, sys

    for blocked in ("openai", "anthropic"):
        sys.modules[blocked] = None  # as if the extra were not installed: importing it fails

    import acpio
    from acpio.agents.coder.model import ModelRequest, ProviderConfig, TextPart, UserMessage
    from acpio.agents.coder.providers import ProviderUnavailable, provider_class

    async def main() -> None:
        for name in ("openai", "anthropic"):
            cls = provider_class(name)
            print(name, cls.spec.key_env)
            provider = cls(ProviderConfig(api_key="k", base_url="http://127.0.0.1:9/v1"))
            try:
                await provider.models()
            except ProviderUnavailable as exc:
                print("models:", exc)
            try:
                async for _ in provider.stream(ModelRequest("m", [UserMessage((TextPart("hi"),))])):
                    pass
            except ProviderUnavailable as exc:
                print("stream:", exc)

    asyncio.run(main())
    """
)


def test_providers_load_without_their_packages_and_name_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "openai OPENAI_API_KEY"
    assert lines[1].startswith("models: the openai package is missing")
    assert lines[1].endswith("pip install 'acpio[openai]'")
    assert lines[2].startswith("stream: the openai package is missing")
    assert lines[3] == "anthropic ANTHROPIC_API_KEY"
    assert lines[4].endswith("pip install 'acpio[anthropic]'")
    assert lines[5].endswith("pip install 'acpio[anthropic]'")


def test_importing_a_provider_module_does_not_import_its_package() -> None:
    program = (
        "import sys, acpio.agents.coder.providers.openai, acpio.agents.coder.providers.anthropic\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
