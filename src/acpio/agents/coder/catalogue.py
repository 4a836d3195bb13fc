"""The model catalogue: which providers can be used now, and their models.

A provider is usable when its key is known (its environment variable, or the credential file),
when it has no key at all, or when it is pointed at an endpoint of one's own (``base_url`` in the
settings, or its ``base_url_env`` variable: a local server). The offline provider is used only when
asked for (``--offline``, an ``offline/`` model, or a ``[providers.offline]`` table): an agent with
no real model says so instead of answering with a scripted one.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from acpio.agents.coder.model import ModelError, ModelInfo, ModelProvider, ProviderConfig, ProviderSpec
from acpio.agents.coder.providers import PROVIDERS, ProviderUnavailable, provider_class
from acpio.agents.coder.settings import CredentialFile, Settings

__all__ = ["Catalogue", "build_catalogue", "provider_classes"]

_log = logging.getLogger("acpio.agents.coder")

#: How long a provider may take to list its models before the declared ones are used.
DISCOVERY_TIMEOUT = 10.0


@dataclass
class Catalogue:
    """The usable providers and their models (the default model first), and what went wrong with others."""

    providers: dict[str, ModelProvider] = field(default_factory=dict[str, ModelProvider])
    models: list[ModelInfo] = field(default_factory=list[ModelInfo])
    #: Every known provider's spec, usable or not (for the auth methods and error messages).
    specs: dict[str, ProviderSpec] = field(default_factory=dict[str, ProviderSpec])
    #: One line per provider that could not be used although configured.
    problems: list[str] = field(default_factory=list[str])

    def find(self, qualified_id: str) -> ModelInfo | None:
        """The model ``provider/id``, if available."""
        return next((m for m in self.models if m.qualified_id == qualified_id), None)

    def missing_model_message(self) -> str:
        """What to do when no model is usable: the variables to set, the methods to authenticate with."""
        keyed = [s for s in self.specs.values() if s.key_env]
        ways = [f"set {s.key_env} (or authenticate with the {s.name!r} method)" for s in keyed]
        ways.append("point a provider at a local server in the settings ([providers.openai] base_url = ...)")
        ways.append("run `acpio agent --offline` for the scripted offline model")
        # What went wrong with a configured provider is what its user is looking for: it comes first.
        if self.problems:
            return f"No usable model. {'; '.join(self.problems)}. Otherwise: " + "; or ".join(ways)
        return "No usable model: " + "; or ".join(ways)

    async def aclose(self) -> None:
        """Close every provider's client."""
        for provider in self.providers.values():
            await provider.aclose()


def provider_classes(settings: Settings) -> dict[str, type[ModelProvider]]:
    """The provider classes that import: acpio's and the settings' own (``class = "module:Class"``)."""
    found: dict[str, type[ModelProvider]] = {}
    for name in {*PROVIDERS, *settings.providers}:
        table = settings.providers.get(name)
        try:
            found[name] = _own_class(name, table.cls) if table and table.cls else provider_class(name)
        except ProviderUnavailable as exc:
            _log.debug("provider %s: %s", name, exc)
    return found


def _own_class(name: str, target: str) -> type[ModelProvider]:
    module_name, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ProviderUnavailable(
            f"provider {name!r}: cannot import {target} ({exc})", provider=name
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, ModelProvider)):
        raise ProviderUnavailable(
            f"provider {name!r}: {target} is not a ModelProvider subclass", provider=name
        )
    return cls


async def build_catalogue(
    settings: Settings,
    credentials: CredentialFile,
    environ: Mapping[str, str],
    *,
    offline: bool = False,
) -> Catalogue:
    """Build the usable providers and list their models (discovery bounded by :data:`DISCOVERY_TIMEOUT`)."""
    catalogue = Catalogue()
    wants_offline = (
        offline or "offline" in settings.providers or (settings.model or "").startswith("offline/")
    )
    for name, cls in sorted(
        provider_classes(settings).items(), key=lambda item: (item[0] == "offline", item[0])
    ):
        spec = cls.spec
        catalogue.specs[name] = spec
        table = settings.providers.get(name)
        key = (environ.get(spec.key_env) if spec.key_env else None) or credentials.get(name)
        base_url = (table.base_url if table else None) or (
            environ.get(spec.base_url_env) if spec.base_url_env else None
        )
        if name == "offline":
            usable = wants_offline
        else:  # a key, or an endpoint of one's own (a local server needs no key)
            usable = key is not None or spec.key_env is None or base_url is not None
        if not usable:
            continue
        config = ProviderConfig(
            api_key=key,
            base_url=base_url,
            models=table.models if table else (),
            options=table.options if table else {},
        )
        try:
            provider = cls(config)
        except (ModelError, ImportError, ValueError) as exc:
            catalogue.problems.append(f"{spec.title}: {exc}")
            continue
        try:
            models = await asyncio.wait_for(provider.models(), DISCOVERY_TIMEOUT)
        except (ModelError, TimeoutError) as exc:
            reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
            catalogue.problems.append(f"{spec.title}: listing the models failed ({reason})")
            models = list(config.models)
        if not models:
            await provider.aclose()
            continue
        catalogue.providers[name] = provider
        catalogue.models.extend(m for m in models if catalogue.find(m.qualified_id) is None)
    default = catalogue.find(settings.model) if settings.model else None
    if default is not None:
        catalogue.models.remove(default)
        catalogue.models.insert(0, default)
    elif settings.model and "," not in settings.model:
        catalogue.problems.append(f"the settings' model {settings.model!r} is not available")
    return catalogue
