"""The requirements of the ACP test kit (acp-tck, v1), in our words, by the kit's ids and tiers.

The kit (github.com/agentclientprotocol/acp-tck) is not a dependency: ``_exchange.py`` checks the
same requirements against an agent command, the way the kit drives one (a client on the agent's
stdin and stdout). Tiers: ``mandatory`` (every agent), ``capability`` (an agent that advertises the
capability), ``advisory`` (a SHOULD; acpio's agents meet these too). The kit's informational probes
(stderr size, a malformed line, an unknown session) record behaviour and assert nothing, so they
are not listed. ``ACP-AUTH-003`` and ``ACP-AUTH-004`` need a real credential or a logout the kit
only runs when told to; none of them applies to an agent run offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

Tier: TypeAlias = Literal["mandatory", "capability", "advisory"]

REQUIREMENTS: Final[dict[str, tuple[Tier, str]]] = {
    "ACP-TRANSPORT-001": ("mandatory", "each stdout line is one JSON-RPC 2.0 message"),
    "ACP-TRANSPORT-002": ("mandatory", "stdout is UTF-8"),
    "ACP-JSONRPC-001": ("mandatory", "a response carries its request's id, integer or string, as sent"),
    "ACP-JSONRPC-002": ("mandatory", "a response has result or error, not both; an error a code and message"),
    "ACP-JSONRPC-003": ("mandatory", "a notification is never answered"),
    "ACP-JSONRPC-004": ("advisory", "an unknown method is answered -32601"),
    "ACP-JSONRPC-005": ("advisory", "requests after a failed one still succeed"),
    "ACP-INIT-001": ("mandatory", "initialize succeeds with a valid answer and an integer protocolVersion"),
    "ACP-INIT-002": ("mandatory", "a client asking for version 1 gets 1"),
    "ACP-INIT-003": ("mandatory", "a client asking for 65535 gets a supported version, not 65535 echoed"),
    "ACP-INIT-004": ("advisory", "initialize names the agent: agentInfo with name and version"),
    "ACP-SCHEMA-001": ("mandatory", "every message the agent sends is valid against the v1 schema"),
    "ACP-SCHEMA-002": ("advisory", "no object the agent sends has a root key its type does not define"),
    "ACP-SESSION-001": ("mandatory", "session/new with an absolute cwd answers a non-empty sessionId"),
    "ACP-SESSION-002": ("mandatory", "two session/new answer two different ids"),
    "ACP-PROMPT-001": ("mandatory", "a text prompt ends with a result carrying a defined stopReason"),
    "ACP-PROMPT-002": ("mandatory", "each update of a turn is valid and names the prompted session"),
    "ACP-PROMPT-003": ("advisory", "a prompt with a resource_link block is accepted"),
    "ACP-CANCEL-001": ("mandatory", "session/cancel during a turn ends it with stopReason cancelled"),
    "ACP-CANCEL-002": ("mandatory", "no update of the cancelled session follows the prompt's answer"),
    "ACP-LOAD-001": ("capability", "session/load of a session succeeds with a valid answer"),
    "ACP-LOAD-002": ("capability", "the replay comes before the session/load answer; nothing after it"),
    "ACP-LOAD-003": ("advisory", "the session/load answer is an object, not null"),
    "ACP-RESUME-001": ("capability", "session/resume succeeds with a valid answer"),
    "ACP-RESUME-002": ("capability", "session/resume replays no history before its answer"),
    "ACP-LIST-001": ("capability", "session/list with {} answers a valid sessions array"),
    "ACP-LIST-002": ("capability", "session/list of a cwd without sessions answers sessions: []"),
    "ACP-DELETE-001": ("capability", "session/delete of a session succeeds with a valid answer"),
    "ACP-DELETE-002": ("advisory", "session/delete of an unknown session succeeds"),
    "ACP-CLOSE-001": ("capability", "session/close of an idle session succeeds with a valid answer"),
    "ACP-CLOSE-002": ("capability", "session/close during a turn ends the turn cancelled"),
    "ACP-ADDDIRS-001": ("capability", "session/new with additionalDirectories is accepted"),
    "ACP-MODES-001": ("capability", "session modes are valid and the current mode is one of them"),
    "ACP-MODES-002": ("capability", "session/set_mode to another mode succeeds"),
    "ACP-CONFIG-001": ("capability", "each config option's current value is valid for its type"),
    "ACP-CONFIG-002": ("capability", "session/set_config_option answers every option, the new value set"),
    "ACP-CONFIG-003": ("mandatory", "no boolean config option unless the client advertised them"),
    "ACP-PROMPTCAP-001": ("capability", "an image prompt is accepted when image is advertised"),
    "ACP-PROMPTCAP-002": ("capability", "an audio prompt is accepted when audio is advertised"),
    "ACP-PROMPTCAP-003": (
        "capability",
        "an embedded resource is accepted when embeddedContext is advertised",
    ),
    "ACP-AUTH-001": ("advisory", "the authMethods ids are unique"),
    "ACP-AUTH-002": ("mandatory", "no terminal auth method unless the client advertised auth.terminal"),
    "ACP-AUTH-005": ("advisory", "an agent with no authMethods does not refuse session/new with -32000"),
    "ACP-CLIENTCAP-001": ("mandatory", "no fs/* request unless the client advertised that fs method"),
    "ACP-CLIENTCAP-002": ("mandatory", "no terminal/* request unless the client advertised terminal"),
    "ACP-CLIENTCAP-003": ("mandatory", "no elicitation/create unless the client advertised elicitation"),
    "ACP-EXT-001": ("mandatory", "a request for an unknown _-prefixed method is answered"),
    "ACP-META-001": ("advisory", "a prompt carrying _meta (traceparent) ends normally"),
    "ACP-ERROR-001": ("advisory", "each error message is a non-empty single line"),
    "ACP-SHUTDOWN-001": ("advisory", "the agent exits by itself when its stdin closes"),
    # Not the kit's: the spec's rule for params that fail validation (spec-conformance.md, item 27).
    "ACPIO-PARAMS-001": ("mandatory", "a request with invalid params is answered -32602"),
}


@dataclass
class Verdicts:
    """Per requirement id: the failures seen, or why it was not exercised."""

    failures: dict[str, list[str]] = field(default_factory=dict)
    passed: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)

    def check(self, requirement: str, ok: bool, detail: str) -> None:
        """Record one check of ``requirement``; ``detail`` says what was sent and what came back."""
        assert requirement in REQUIREMENTS, requirement
        if ok:
            self.passed.add(requirement)
        else:
            self.failures.setdefault(requirement, []).append(detail)

    def skip(self, requirement: str, reason: str) -> None:
        """``requirement`` does not apply to this agent (it advertises nothing of it)."""
        assert requirement in REQUIREMENTS, requirement
        self.skipped.setdefault(requirement, reason)

    def unjudged(self) -> set[str]:
        """The requirements neither checked nor skipped (the exchange stopped before them)."""
        return set(REQUIREMENTS) - self.passed - set(self.failures) - set(self.skipped)

    def report(self) -> str:
        """The failures, one requirement a paragraph (its tier and wording first)."""
        lines = []
        for requirement in sorted(self.failures):
            tier, text = REQUIREMENTS[requirement]
            lines.append(f"{requirement} ({tier}: {text})")
            lines += [f"    {detail}" for detail in self.failures[requirement][:3]]
        return "\n".join(lines)


def clip(value: Any, limit: int = 400) -> str:
    """``repr(value)``, cut at ``limit`` characters (a failure names what came back, not all of it)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
