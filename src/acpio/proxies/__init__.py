"""Ready-made proxies for a conductor chain, and the hook they are written with.

* :func:`transform_agent_text`: a per-session text-stream hook with lookahead on a
  ``Proxy.builder()``: the agent's message and thought chunks go through a
  :class:`~acpio.redaction.TextTransform` (:mod:`acpio.proxies.transforms`);
* :func:`redacting_proxy`: a proxy that redacts the agent's text (``acpio proxy redact REGEX``);
* :func:`policy_proxy`: a proxy that answers the agent's permission requests by a
  :class:`~acpio.client.RulePolicy` and forwards what it asks to the client
  (``acpio proxy policy FILE``; :mod:`acpio.proxies.policy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.proxies.policy import policy_proxy
    from acpio.proxies.transforms import redacting_proxy, transform_agent_text

__all__ = ["policy_proxy", "redacting_proxy", "transform_agent_text"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(globals())
