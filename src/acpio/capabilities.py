"""What each side advertised at ``initialize``, and the protocol version both speak.

A client asks :class:`AgentFeatures` what the agent can do before calling an optional method
(``session/load``, ``session/list``...); an agent asks :class:`ClientFeatures` before calling
``fs/read_text_file`` or ``terminal/create``. Both read the capability paths of the method table
(``acpio.schema.METHODS``), so the rule "a boolean capability is on only when ``true``; an object
capability is on when present and not ``null``" lives in one place. Features know their protocol
version: on v2 they read v2's method table (``acpio.schema.v2.METHODS``) and its shapes (every
marker an object under ``capabilities``), and a method v2 does not have is refused with
:class:`~acpio.errors.NotInProtocolVersion`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from acpio.errors import AcpError, NotInProtocolVersion
from acpio.versions import is_v2_shaped, v1_initialize_params

if TYPE_CHECKING:
    from acpio.schema import AcpModel, InitializeRequest, InitializeResponse, v2

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AgentFeatures",
    "CapabilityNotAdvertised",
    "ClientFeatures",
    "UnsupportedProtocolVersion",
    "check_absolute_paths",
    "check_agent_version",
    "checks_params",
    "fill_required_fields",
]

T = TypeVar("T")

#: The protocol versions acpio speaks.
SUPPORTED_PROTOCOL_VERSIONS: tuple[int, ...] = (1,)
#: The newest of them: what a client puts in ``initialize`` and an agent answers by default.
LATEST_PROTOCOL_VERSION = max(SUPPORTED_PROTOCOL_VERSIONS)


class UnsupportedProtocolVersion(AcpError):
    """The agent answered ``initialize`` with a protocol version this client does not speak.

    The spec says the client should close the connection and tell the user: upgrade acpio or the
    agent so that both share a version.
    """

    def __init__(self, version: int, supported: tuple[int, ...] = SUPPORTED_PROTOCOL_VERSIONS) -> None:
        self.version = version
        self.supported = supported
        spoken = ", ".join(str(v) for v in supported)
        super().__init__(
            f"The agent speaks ACP protocol version {version}, but this client speaks only {spoken}. "
            "Upgrade acpio or the agent so that both share a version."
        )


class CapabilityNotAdvertised(AcpError):
    """A method was called that the peer did not advertise at ``initialize``.

    ``method`` is the method, ``capability`` the capability path it needs (``A.loadSession`` is the
    agent's ``agentCapabilities.loadSession``, ``C.terminal`` the client's
    ``clientCapabilities.terminal``). Check the peer's features before calling, or do without.
    """

    def __init__(
        self, method: str, capability: str, *, what: str | None = None, protocol_version: int = 1
    ) -> None:
        self.method = method
        self.capability = capability
        side, _, path = capability.partition(".")
        if protocol_version >= 2:
            owner = "capabilities"
        else:
            owner = "agentCapabilities" if side == "A" else "clientCapabilities"
        peer = "agent" if side == "A" else "client"
        subject = method if what is None else f"{what} in {method}"
        super().__init__(
            f"{subject} needs the {peer} to advertise {owner}.{path} at initialize, and it did not. "
            f"Check the {peer}'s features before sending {subject}."
        )


def check_agent_version(version: int, supported: tuple[int, ...] = SUPPORTED_PROTOCOL_VERSIONS) -> None:
    """Raise :class:`UnsupportedProtocolVersion` when a client cannot speak the agent's answer."""
    if version not in supported:
        raise UnsupportedProtocolVersion(version, supported)


#: The ``type`` of a prompt content block -> the ``promptCapabilities`` flag it needs.
_PROMPT_CONTENT_CAPABILITY: dict[str, str] = {
    "image": "image",
    "audio": "audio",
    "resource": "embeddedContext",
}
#: The ``type`` of an MCP server declaration -> the ``mcpCapabilities`` flag it needs (stdio: none).
_MCP_TRANSPORT_CAPABILITY: dict[str, str] = {"http": "http", "sse": "sse", "acp": "acp"}

#: The methods a check before sending reads the params of: each check registers the methods it
#: covers (:func:`_reads_params`), and :func:`checks_params` answers from here.
_PARAMS_CHECKED: set[str] = set()


def _reads_params(*methods: str) -> frozenset[str]:
    """Register the ``methods`` whose params a check before sending reads: the set the check tests.

    A check that reads params tests ``method in`` the set this returns, so it cannot cover a
    method that :class:`~acpio.peer.PeerState` would check only once.
    """
    _PARAMS_CHECKED.update(methods)
    return frozenset(methods)


#: The session-setup requests whose ``cwd`` and ``additionalDirectories`` must be absolute paths
#: (:func:`check_absolute_paths`), and whose MCP servers and additional directories need
#: capabilities (:meth:`AgentFeatures.require_session_setup`).
_PATH_METHODS = _reads_params("session/new", "session/load", "session/resume", "session/list", "session/fork")
#: The requests whose content blocks need capabilities (:meth:`AgentFeatures.require_prompt`).
_PROMPT_METHODS = _reads_params("session/prompt")


def check_absolute_paths(method: str, params: object) -> None:
    """Raise ``ValueError`` when ``params`` of a session-setup ``method`` carry a relative path.

    ACP requires ``cwd`` (of ``session/new``, ``session/load``, ``session/resume``, the
    ``session/list`` filter), every ``additionalDirectories`` entry and the ``command`` of a stdio
    MCP server to be absolute. ``params`` is the typed request; other methods pass unchecked.
    """
    if method not in _PATH_METHODS:
        return
    cwd = getattr(params, "cwd", None)
    if isinstance(cwd, str) and not os.path.isabs(cwd):
        raise ValueError(
            f"{method}: cwd {cwd!r} is a relative path, and ACP requires an absolute one. "
            "Pass an absolute directory (for example str(Path(cwd).absolute()))."
        )
    for server in getattr(params, "mcp_servers", None) or ():
        command = getattr(server, "command", None)
        if _wire_type(server) is None and isinstance(command, str) and not os.path.isabs(command):
            raise ValueError(
                f"{method}: the stdio MCP server {getattr(server, 'name', '?')!r} has command "
                f"{command!r}, and ACP requires an absolute path to the executable. Resolve it first "
                "(for example with shutil.which)."
            )
    for directory in getattr(params, "additional_directories", None) or ():
        if isinstance(directory, str) and not os.path.isabs(directory):
            raise ValueError(
                f"{method}: additionalDirectories entry {directory!r} is a relative path, and ACP "
                "requires absolute ones. Make it absolute before sending."
            )


#: The session-setup requests whose ``mcpServers`` the schema leaves optional but ACP requires
#: (:func:`fill_required_fields`).
_MCP_SERVERS_OPTIONAL = _reads_params("session/resume", "session/fork")


def fill_required_fields(method: str, params: T) -> T:
    """``params`` with what ACP's prose requires but the schema leaves optional filled in.

    ``session/resume`` and ``session/fork``: session-setup.mdx says the client MUST send
    ``mcpServers``, but the schema makes it optional; a request without it (``mcp_servers=None``)
    is sent with ``[]``. ``params`` is the typed request; it is never changed: a copy is returned
    when something was filled in.
    """
    if method in _MCP_SERVERS_OPTIONAL and getattr(params, "mcp_servers", ()) is None:
        copy: T = params.model_copy(update={"mcp_servers": []})  # type: ignore[attr-defined]
        return copy
    return params


def checks_params(method: str) -> bool:
    """Whether sending ``method`` is checked against its params; the others pass or fail by method alone.

    For the others, whether a request may be sent depends only on the method and on what the peer
    advertised: :class:`~acpio.peer.PeerState` remembers the ones that passed.
    """
    return method in _PARAMS_CHECKED


def _wire_type(value: Any) -> str | None:
    """The ``type`` discriminator of a content block or MCP server model (or wire dict)."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    kind = getattr(kind, "value", kind)
    return kind if isinstance(kind, str) else None


def _capability_on(root: dict[str, Any], path: list[str]) -> bool:
    node: Any = root
    for part in path:
        if not isinstance(node, dict):
            return False
        node = node.get(part)
        if node is None or node is False:
            return False
    return node is True or isinstance(node, dict)


class _Features:
    """Shared reading of one side's capabilities (a wire-form dict) in one protocol version.

    ``protocol_version`` says which method table and which capability shapes apply: v1's
    (``agentCapabilities``/``clientCapabilities``, booleans and objects) or v2's
    (``capabilities``, every marker an object: ``{}`` is on).
    """

    _SIDE: str

    def __init__(self, capabilities: dict[str, Any], *, protocol_version: int = 1) -> None:
        self._caps = capabilities
        #: The ACP version whose methods and capability shapes these are.
        self.protocol_version = protocol_version

    def has(self, path: str) -> bool:
        """Whether the capability at ``path`` (``"loadSession"``, ``"fs.readTextFile"``...) is on."""
        return _capability_on(self._caps, path.split("."))

    def supports(self, method: str) -> bool:
        """Whether this side may be sent ``method``: it exists in the version, baseline or advertised."""
        known, capability = _capability_for(method, self.protocol_version)
        if not known:
            return False
        if capability is None or not capability.startswith(self._SIDE + "."):
            return True
        return self.has(capability.partition(".")[2])

    def require(self, method: str) -> None:
        """Raise unless :meth:`supports` ``method``.

        :class:`~acpio.errors.NotInProtocolVersion` for a method the version does not have (the
        client's ``fs/*`` and ``terminal/*`` on v2), :class:`CapabilityNotAdvertised` for one the
        peer did not advertise.
        """
        if self.supports(method):
            return
        known, capability = _capability_for(method, self.protocol_version)
        if not known:
            raise NotInProtocolVersion(method, self.protocol_version, _instead(method))
        assert capability is not None
        raise CapabilityNotAdvertised(method, capability, protocol_version=self.protocol_version)


def _capability_for(method: str, protocol_version: int = 1) -> tuple[bool, str | None]:
    """Whether ``method`` exists in ``protocol_version`` (extension methods always do), and its capability."""
    found = _CAPABILITIES.get((method, protocol_version))
    if found is not None:
        return found
    if protocol_version >= 2:
        from acpio.schema.v2 import NOTIFICATIONS, REQUESTS
    else:
        from acpio.schema import NOTIFICATIONS, REQUESTS

    spec = REQUESTS.get(method) or NOTIFICATIONS.get(method)
    if spec is None:
        found = (protocol_version < 2 or method.startswith("_"), None)
    else:
        found = (True, spec.capability)
    if len(_CAPABILITIES) < 1024:  # the methods sent are few; extension names never grow it without bound
        _CAPABILITIES[method, protocol_version] = found
    return found


#: :func:`_capability_for`'s answers (the method tables are fixed): every typed request sent is checked.
_CAPABILITIES: dict[tuple[str, int], tuple[bool, str | None]] = {}


#: What replaced each v1 method of the agent that v2 removed.
_REPLACED_AGENT_METHODS: Final = {
    "session/load": 'send session/resume with replayFrom {"type": "start"} to replay the session',
    "authenticate": "send auth/login",
    "logout": "send auth/logout",
    "session/set_mode": (
        "modes are config options in v2: send session/set_config_option for the agent's mode option"
    ),
}


def _instead(method: str) -> str:
    """What to do instead of calling a v1 method that v2 removed."""
    replaced = _REPLACED_AGENT_METHODS.get(method)
    if replaced is not None:
        return replaced
    if method.startswith("fs/"):
        return (
            "v2 clients expose no file system methods; read and write files in the agent, or use an "
            "MCP server the client passed in mcpServers"
        )
    if method.startswith("terminal/"):
        return (
            "v2 terminals belong to the agent: run the command yourself and show it to the client "
            "with terminal_update and terminal_output_chunk session updates"
        )
    return "see docs/v2.md for what replaced it"


class AgentFeatures(_Features):
    """What an agent advertised in its ``initialize`` response (``agentCapabilities``)."""

    _SIDE = "A"

    @classmethod
    def from_response(cls, response: InitializeResponse | v2.InitializeResponse) -> AgentFeatures:
        """The features of the agent that sent ``response`` (a v1 or a v2 answer)."""
        from acpio.schema import InitializeResponse

        caps: AcpModel | None
        if isinstance(response, InitializeResponse):
            caps, version = response.agent_capabilities, 1
        else:
            caps, version = response.capabilities, 2
        return cls(caps.to_wire() if caps is not None else {}, protocol_version=version)

    def _path(self, v1: str, v2: str) -> str:
        return v2 if self.protocol_version >= 2 else v1

    def require_prompt(self, blocks: Iterable[object]) -> None:
        """Raise :class:`CapabilityNotAdvertised` for a prompt content block the agent did not advertise.

        ``text`` and ``resource_link`` are always allowed; ``image``, ``audio`` and ``resource``
        (embedded context) need ``promptCapabilities.image``, ``.audio`` and ``.embeddedContext``.
        """
        for block in blocks:
            kind = _wire_type(block)
            flag = _PROMPT_CONTENT_CAPABILITY.get(kind or "")
            if flag is None:
                continue
            path = self._path(f"promptCapabilities.{flag}", f"session.prompt.{flag}")
            if not self.has(path):
                raise CapabilityNotAdvertised(
                    "session/prompt",
                    f"A.{path}",
                    what=f"a {kind} content block",
                    protocol_version=self.protocol_version,
                )

    def require_session_setup(self, method: str, params: object) -> None:
        """Raise :class:`CapabilityNotAdvertised` for what a session-setup request may not carry.

        HTTP, SSE (and ACP) MCP servers need ``mcpCapabilities.http``, ``.sse`` (``.acp``); a
        non-empty ``additionalDirectories`` needs ``sessionCapabilities.additionalDirectories``.
        Stdio MCP servers are always allowed.
        """
        version = self.protocol_version
        for server in getattr(params, "mcp_servers", None) or ():
            kind = _wire_type(server)
            flag = _MCP_TRANSPORT_CAPABILITY.get(kind or "")
            if flag is None:
                continue
            path = self._path(f"mcpCapabilities.{flag}", f"session.mcp.{flag}")
            if not self.has(path):
                raise CapabilityNotAdvertised(
                    method, f"A.{path}", what=f"a {kind} MCP server", protocol_version=version
                )
        path = self._path("sessionCapabilities.additionalDirectories", "session.additionalDirectories")
        if getattr(params, "additional_directories", None) and not self.has(path):
            raise CapabilityNotAdvertised(
                method, f"A.{path}", what="additionalDirectories", protocol_version=version
            )

    def require_params(self, method: str, params: object) -> None:
        """:meth:`require` ``method``, then check what its ``params`` carry (content, MCP servers...)."""
        self.require(method)
        if method in _PROMPT_METHODS:
            self.require_prompt(getattr(params, "prompt", None) or ())
        elif method in _PATH_METHODS:
            self.require_session_setup(method, params)

    @property
    def load_session(self) -> bool:
        """``session/load`` may be called."""
        return self.has("loadSession")

    @property
    def list_sessions(self) -> bool:
        """``session/list`` may be called."""
        return self.has("sessionCapabilities.list")

    @property
    def resume_session(self) -> bool:
        """``session/resume`` may be called."""
        return self.has("sessionCapabilities.resume")

    @property
    def close_session(self) -> bool:
        """``session/close`` may be called."""
        return self.has("sessionCapabilities.close")

    @property
    def delete_session(self) -> bool:
        """``session/delete`` may be called."""
        return self.has("sessionCapabilities.delete")

    @property
    def logout(self) -> bool:
        """``logout`` may be called."""
        return self.has("auth.logout")

    @property
    def prompt_image(self) -> bool:
        """Prompts may carry image content blocks."""
        return self.has("promptCapabilities.image")

    @property
    def prompt_audio(self) -> bool:
        """Prompts may carry audio content blocks."""
        return self.has("promptCapabilities.audio")

    @property
    def prompt_embedded_context(self) -> bool:
        """Prompts may carry embedded resources."""
        return self.has("promptCapabilities.embeddedContext")

    @property
    def mcp_http(self) -> bool:
        """Sessions may be given HTTP MCP servers."""
        return self.has("mcpCapabilities.http")

    @property
    def mcp_sse(self) -> bool:
        """Sessions may be given SSE MCP servers."""
        return self.has("mcpCapabilities.sse")

    @property
    def mcp_acp(self) -> bool:
        """Sessions may be given MCP servers over ACP (unstable)."""
        return self.has("mcpCapabilities.acp")


class ClientFeatures(_Features):
    """What a client advertised in its ``initialize`` request (``clientCapabilities``)."""

    _SIDE = "C"

    @classmethod
    def from_request(cls, request: InitializeRequest | v2.InitializeRequest) -> ClientFeatures:
        """The features of the client that sent ``request`` (a v1 or a v2 ``initialize``)."""
        from acpio.schema import InitializeRequest

        caps: AcpModel | None
        if isinstance(request, InitializeRequest):
            caps, version = request.client_capabilities, 1
        else:
            caps, version = request.capabilities, 2
        return cls(caps.to_wire() if caps is not None else {}, protocol_version=version)

    @classmethod
    def from_params(cls, params: object, protocol_version: int) -> ClientFeatures:
        """The features in raw ``initialize`` params, read as ``protocol_version`` reads them.

        A v2-shaped request (:func:`acpio.versions.is_v2_shaped`) read as v1 is converted first
        (:func:`acpio.versions.v1_initialize_params`): a v2 client has no ``fs`` nor ``terminal``.
        """
        wire = params if isinstance(params, dict) else {}
        if protocol_version >= 2:
            caps = wire.get("capabilities")
        else:
            if is_v2_shaped(wire):
                wire = v1_initialize_params(wire)
            caps = wire.get("clientCapabilities")
        return cls(caps if isinstance(caps, dict) else {}, protocol_version=protocol_version)

    @property
    def read_text_file(self) -> bool:
        """``fs/read_text_file`` may be called."""
        return self.has("fs.readTextFile")

    @property
    def write_text_file(self) -> bool:
        """``fs/write_text_file`` may be called."""
        return self.has("fs.writeTextFile")

    @property
    def terminal(self) -> bool:
        """The ``terminal/*`` methods may be called."""
        return self.has("terminal")

    @property
    def elicitation_form(self) -> bool:
        """Form-mode ``elicitation/create`` may be called."""
        return self.has("elicitation.form")

    @property
    def elicitation_url(self) -> bool:
        """URL-mode ``elicitation/create`` may be called."""
        return self.has("elicitation.url")

    @property
    def boolean_config_options(self) -> bool:
        """Boolean session config options may be sent."""
        return self.has("session.configOptions.boolean")

    @property
    def terminal_auth(self) -> bool:
        """Terminal auth methods may be advertised."""
        return self.has("auth.terminal")
