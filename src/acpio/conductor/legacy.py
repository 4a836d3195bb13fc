"""Proxies built before the rename: what the conductor answers them, and how it initializes them.

A proxy that sends ``proxy/initialize`` downstream is answered here (:func:`initialize_downstream`);
a proxy that refuses ``proxy/initialize`` is initialized again as an older one with
``_proxy/initialize`` (:func:`retry_as_legacy`). See "Older proxies" in :mod:`acpio.conductor.chain`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acpio.errors import InvalidRequest, MethodNotFound, RequestError
from acpio.jsonrpc import RequestDispatch, SentRequest
from acpio.roles import LEGACY_PROXY_METHODS, PROXY_INITIALIZE_METHOD, ProxyMethods

if TYPE_CHECKING:
    from .links import Link

__all__ = ["initialize_downstream", "retry_as_legacy"]

_log = logging.getLogger("acpio.conductor")


def initialize_downstream(names: ProxyMethods, method: str) -> RequestError:
    """The answer to a proxy that sends ``proxy/initialize`` (either name) to its successor."""
    if names.legacy and method == PROXY_INITIALIZE_METHOD:
        # An older proxy passes on the `proxy/initialize` it does not know, as it would any
        # unknown request: answered as a successor that does not know it would, so the proxy
        # answers -32601 and the conductor initializes it again with `_proxy/initialize`.
        return MethodNotFound(
            f"`{method}` is not a method of the successor; an older proxy is initialized with "
            f"`{LEGACY_PROXY_METHODS.initialize}`",
            message=f"Method not found: {method}",
        )
    return InvalidRequest(
        f"`{method}` requests are only sent by the conductor: a proxy sends `initialize` to its successor"
    )


def retry_as_legacy(
    sent: SentRequest[Any],
    request: RequestDispatch,
    link: Link,
    broken: Callable[[], bool],
    resend: Callable[[], object],
) -> None:
    """Answer ``request`` with what ``sent`` (``proxy/initialize`` to ``link``) gets, unless the proxy is old.

    An older proxy answers ``-32601`` (or, having passed the request on in ``_proxy/successor``,
    the error it got back): unless the chain is ``broken()`` by then, the link is marked legacy
    and ``resend()`` sends the same ``initialize`` again, as ``_proxy/initialize``, whose answer goes
    upstream.
    """
    responder = request.responder
    sent.forward_cancellation_from(responder)

    async def answered(result: Any) -> None:
        if (
            isinstance(result, RequestError)
            and (result.code == MethodNotFound.CODE or link.methods is LEGACY_PROXY_METHODS)
            and not responder.done
            and not responder.cancelled
            and not broken()
        ):
            _log.debug(
                "%s refused `%s`: trying `%s`", link.lane, sent.method, LEGACY_PROXY_METHODS.initialize
            )
            link.methods = LEGACY_PROXY_METHODS
            resend()
            return
        responder.respond_with_result(result)

    sent.on_receiving_result(answered)
