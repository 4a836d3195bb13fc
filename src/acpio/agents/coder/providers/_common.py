"""What the HTTP providers share: their base class, retries with a bounded, jittered backoff, options.

A call is retried only while it has yielded nothing (the request was refused, or the stream failed
before its first event): once text has reached the agent, a retry would repeat it. Retried are rate
limits (:class:`~acpio.agents.coder.model.ModelRateLimited`) and server errors (status 500 and up,
529 "overloaded" included); anything else fails at once.
"""

from __future__ import annotations

import abc
import asyncio
import email.utils
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from acpio.agents.coder.model import (
    ModelError,
    ModelEvent,
    ModelProvider,
    ModelRateLimited,
    ModelRequest,
    ProviderConfig,
)
from acpio.agents.coder.providers import ProviderUnavailable

__all__ = ["HttpProvider", "RetryPolicy", "option", "retry_after", "retrying"]

log = logging.getLogger("acpio.agents.coder")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry: ``attempts`` in all, waits doubling from ``base_delay``.

    A wait is ``base_delay * 2**n`` capped at ``max_delay``, times a random factor in [0.5, 1]
    (so that clients limited together do not come back together). A ``retry-after`` the server
    sent is waited for as given, unless it exceeds ``max_delay``: then the call fails at once,
    saying how long the server asked to wait.
    """

    attempts: int = 4
    base_delay: float = 1.0
    max_delay: float = 20.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RetryPolicy:
        """The policy of a provider's settings: ``max_retries``, ``retry_base_delay``, ``retry_max_delay``."""
        default = cls()
        return cls(
            attempts=1 + max(0, int(option(options, "max_retries", int, default.attempts - 1))),
            base_delay=float(option(options, "retry_base_delay", float, default.base_delay)),
            max_delay=float(option(options, "retry_max_delay", float, default.max_delay)),
        )

    def wait(self, error: ModelError, failures: int) -> float | None:
        """Seconds to wait before trying again after ``failures`` failed attempts; ``None``: give up."""
        if not _retryable(error) or failures >= self.attempts:
            return None
        asked = error.retry_after if isinstance(error, ModelRateLimited) else None
        if asked is not None:
            return asked if asked <= self.max_delay else None
        backoff: float = min(self.max_delay, self.base_delay * 2 ** (failures - 1))
        return backoff * random.uniform(0.5, 1.0)


class _Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Closable)


class HttpProvider(ModelProvider, Generic[ClientT]):
    """A provider on an official HTTP client package: one client made on first use, calls retried.

    A subclass makes its client in :meth:`make_client` (importing its package there, so that the
    module loads without the extra) and makes one attempt at a call in :meth:`attempt`;
    :meth:`stream` retries that attempt by :attr:`policy`, from the ``max_retries``,
    ``retry_base_delay`` and ``retry_max_delay`` options.
    """

    def __init__(self, config: ProviderConfig) -> None:
        super().__init__(config)
        self.policy = RetryPolicy.from_options(config.options)
        self._client: ClientT | None = None

    @abc.abstractmethod
    def make_client(self) -> ClientT:
        """A new client, its own retries off; raises :class:`ProviderUnavailable` without its package."""

    @abc.abstractmethod
    def attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """One try at the call, not retried; raises :class:`~acpio.agents.coder.model.ModelError`."""

    def client(self) -> ClientT:
        """The client, made on first use."""
        if self._client is None:
            self._client = self.make_client()
        return self._client

    def missing_package(self, exc: ImportError) -> ProviderUnavailable:
        """The error for a client package that cannot be imported: it names the extra to install."""
        extra = self.spec.extra or self.spec.name
        return ProviderUnavailable(
            f"the {extra} package is missing ({exc}): pip install 'acpio[{extra}]'",
            provider=self.spec.name,
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one call, retried while it fails before its first event."""
        return retrying(lambda: self.attempt(request), self.policy)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def option(options: Mapping[str, Any], name: str, kind: type[Any], default: Any) -> Any:
    """``options[name]`` if it is a ``kind`` (an int is a float, a bool no number), else ``default``."""
    value = options.get(name, default)
    if isinstance(value, bool) and kind is not bool:
        return default
    if kind is float and isinstance(value, int):
        return float(value)
    return value if isinstance(value, kind) else default


async def retrying(
    start: Callable[[], AsyncIterator[ModelEvent]], policy: RetryPolicy
) -> AsyncIterator[ModelEvent]:
    """The events of ``start()``, started again (after a wait) while it fails before its first event.

    When the policy gives up, the last error is raised with what was tried added to its message.
    Closing this iterator (or cancelling its task) closes the attempt in progress, and so its HTTP
    stream, at once.
    """
    failures = 0
    while True:
        stream = start()
        started = False
        try:
            async for event in stream:
                started = True
                yield event
            return
        except ModelError as error:
            if started:
                raise
            failures += 1
            delay = policy.wait(error, failures)
            if delay is None:
                final = _given_up(error, failures)
                if final is error:
                    raise
                raise final from error
            log.warning(
                "%s; trying again in %.1f s (attempt %d of %d)", error, delay, failures + 1, policy.attempts
            )
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        await asyncio.sleep(delay)


def _retryable(error: ModelError) -> bool:
    return isinstance(error, ModelRateLimited) or (error.status or 0) >= 500


def _given_up(error: ModelError, failures: int) -> ModelError:
    if not _retryable(error):
        return error
    if isinstance(error, ModelRateLimited):
        asked = error.retry_after
        if failures == 1 and asked is not None:
            said = f"{error} The server asks to wait {asked:g} s: try again later."
        else:
            said = f"{error} Still limited after {failures} attempts: wait a little, then try again."
        return ModelRateLimited(said, provider=error.provider, status=error.status, retry_after=asked)
    return ModelError(
        f"{error} Still failing after {failures} attempts.", provider=error.provider, status=error.status
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 answer asks to wait: ``retry-after-ms``, or ``retry-after`` (seconds or a date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
