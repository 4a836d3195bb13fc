"""What an :class:`~acpio.app.AgentApp` declares: :class:`AppDefinition`.

Its identity and prompt capabilities are kept as the user gave them: the ``agentInfo`` model is
built the first time it is read (:attr:`AppDefinition.info`), so that an app answering its
handshake from the raw params (:mod:`acpio.app.handshake`) never builds a model, nor imports
pydantic. :meth:`AppDefinition.info_wire` and :meth:`AppDefinition.prompt_wire` give the JSON the
models' ``to_wire()`` would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from acpio import schema as acp
from acpio.app.menu import Menu

if TYPE_CHECKING:
    from collections.abc import Callable

    from acpio.app.app_session import (
        ChangeFunction,
        CloseFunction,
        InitializeFunction,
        OpenFunction,
        PromptFunction,
    )
    from acpio.schema import Implementation, PromptCapabilities

__all__ = ["AppDefinition"]


@dataclass
class AppDefinition:
    """What an app declares: its identity, its prompt function and hooks, what it offers."""

    #: The ``agentInfo``'s ``name``, ``version`` and ``title`` (``None``: no title).
    name: str
    version: str
    title: str | None
    #: The prompt capabilities the user gave (``None``: the default, text only).
    given_prompt_capabilities: PromptCapabilities | None
    error_details: bool
    mcp: bool
    unstable: bool
    prompt: PromptFunction | None = None
    on_initialize: list[InitializeFunction] = field(default_factory=list["InitializeFunction"])
    on_open: list[OpenFunction] = field(default_factory=list["OpenFunction"])
    on_close: list[CloseFunction] = field(default_factory=list["CloseFunction"])
    on_change: list[ChangeFunction] = field(default_factory=list["ChangeFunction"])
    handlers: list[Callable[..., Any]] = field(default_factory=list["Callable[..., Any]"])
    menu: Menu = field(default_factory=Menu)

    @cached_property
    def info(self) -> Implementation:
        """The ``agentInfo`` the app answers ``initialize`` with (built when first read)."""
        titled = {} if self.title is None else {"title": self.title}
        return acp.Implementation(name=self.name, version=self.version, **titled)

    def info_wire(self) -> dict[str, Any]:
        """:attr:`info` as JSON, in the model's field order, without building it."""
        info: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            info["title"] = self.title
        info["version"] = self.version
        return info

    def prompt_wire(self) -> dict[str, Any]:
        """The ``promptCapabilities`` the app advertises, as JSON (``{}`` for the default: text only)."""
        given = self.given_prompt_capabilities
        return {} if given is None else given.to_wire()
