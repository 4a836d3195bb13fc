"""The model providers of the reference agent, named here and imported only when used.

:data:`PROVIDERS` maps a provider's name to ``"module:Class"``, a
:class:`~acpio.agents.coder.model.ModelProvider` subclass. Adding a provider is one module and one
line here. A provider module imports its client package (``openai``, ``anthropic``) inside its
methods, not at the top, so that its class and :class:`~acpio.agents.coder.model.ProviderSpec`
load without the extra installed: the agent lists every provider's ``authenticate`` method and
tells the user which extra to install.
"""

from __future__ import annotations

import importlib

from acpio.agents.coder.model import ModelError, ModelProvider

__all__ = ["PROVIDERS", "ProviderUnavailable", "provider_class"]

PROVIDERS: dict[str, str] = {
    "offline": "acpio.agents.coder.providers.offline:OfflineProvider",
    "openai": "acpio.agents.coder.providers.openai:OpenAIProvider",
    "anthropic": "acpio.agents.coder.providers.anthropic:AnthropicProvider",
}
"""Provider name -> ``"module:Class"`` of its :class:`~acpio.agents.coder.model.ModelProvider`."""


class ProviderUnavailable(ModelError):
    """A provider that is not known, or whose module cannot be imported (its extra is missing)."""


def provider_class(name: str) -> type[ModelProvider]:
    """The provider class named ``name`` in :data:`PROVIDERS`, imported now.

    Raises :class:`ProviderUnavailable` for an unknown name (listing the known ones) or a module
    that fails to import (naming the error).
    """
    target = PROVIDERS.get(name)
    if target is None:
        known = ", ".join(sorted(PROVIDERS))
        message = f"unknown model provider {name!r}: known providers are {known}"
        raise ProviderUnavailable(message, provider=name)
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProviderUnavailable(
            f"the {name!r} model provider cannot be loaded ({exc}); install acpio with its extra: "
            f"pip install 'acpio[{name}]'",
            provider=name,
        ) from exc
    cls = getattr(module, attribute, None)
    if not (isinstance(cls, type) and issubclass(cls, ModelProvider)):
        raise ProviderUnavailable(f"{target} is not a ModelProvider subclass", provider=name)
    return cls
