"""A provider that needs a key, for the auth tests: declared in a settings file with ``class = ...``.

It answers every call with the key's last four characters, so a test sees which key was used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from acpio.agents.coder.model import (
    Finish,
    ModelAuthError,
    ModelEvent,
    ModelInfo,
    ModelProvider,
    ModelRequest,
    ProviderSpec,
    TextDelta,
)


class KeyedProvider(ModelProvider):
    spec = ProviderSpec("keyed", "Keyed", key_env="ACPIO_TEST_KEYED_KEY")

    async def models(self) -> list[ModelInfo]:
        return [*self.config.models, ModelInfo("keyed", "big", "Keyed big", context_window=1000)]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.config.api_key == "bad":
            raise ModelAuthError("the key was refused (401)", provider="keyed", status=401)
        yield TextDelta(f"keyed {request.model} with ...{(self.config.api_key or '')[-4:]}")
        yield Finish("end_turn")
