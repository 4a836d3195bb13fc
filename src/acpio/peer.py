"""The counterpart as ``initialize`` described it, kept once per connection: :class:`PeerState`.

ACP opens every connection with ``initialize``: the client sends its capabilities, the agent
answers with the protocol version both will speak and its own capabilities. What a side may send
afterwards depends on that exchange, so both APIs keep it in one :class:`PeerState` and check
against it before sending:

* the builder style: every :class:`~acpio.session.SessionConnection` has one for the agent
  (:attr:`~acpio.session.SessionConnection.peer_state`), filled from the answer to a typed
  ``initialize`` sent on it;
* the trait style: :class:`~acpio.traits.ClientSideConnection` uses that same object of its
  connection, and :class:`~acpio.traits.AgentSideConnection` keeps one for the client, filled from
  the ``initialize`` request it receives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeAlias, TypeVar

from acpio.capabilities import (
    AgentFeatures,
    ClientFeatures,
    UnsupportedProtocolVersion,
    check_absolute_paths,
    check_agent_version,
    checks_params,
    fill_required_fields,
)
from acpio.versions import is_v2_shaped

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue, SentRequest
    from acpio.schema import InitializeRequest, InitializeResponse, v2

__all__ = ["InitializeFirst", "PeerState"]

T = TypeVar("T")
_Answer = TypeVar("_Answer", "InitializeResponse", "v2.InitializeResponse")

#: Which methods :meth:`PeerState.check` refuses before the agent answered ``initialize``:
#: ``"session"`` the ``session/*`` methods (the builder style), ``"all"`` every method but
#: ``initialize`` and ``authenticate`` (the trait style with ``require_capabilities=True``),
#: ``None`` none.
InitializeFirst: TypeAlias = Literal["session", "all"] | None

_BEFORE_INITIALIZE = frozenset({"initialize", "authenticate"})

#: A check :meth:`PeerState.check` remembers: the method and the two options it was made with.
_CheckKey: TypeAlias = tuple[str, bool, InitializeFirst]
#: How many passed checks a state remembers (methods sent are few; extension names are not bounded).
_PASSED_LIMIT = 256


class PeerState:
    """What the counterpart said at ``initialize``, and the check of what is sent to it.

    For an agent: :attr:`protocol_version` and :attr:`agent_features`, recorded from its answer
    (:meth:`record_response`, or :meth:`follow` for an answer read by whoever awaits it). For a
    client: :attr:`client_features`, recorded from its request (:meth:`record_request`); until
    then the client counts as having advertised nothing. :meth:`check` is what every send to the
    counterpart goes through.
    """

    __slots__ = (
        "_agent_features",
        "_client_features",
        "_client_params",
        "_initializing",
        "_offered",
        "_passed",
        "_protocol_version",
        "counterpart",
    )

    def __init__(self, counterpart: Literal["agent", "client"]) -> None:
        #: Whose state this is: the ``"agent"`` (for a client, or a proxy's successor) or the ``"client"``.
        self.counterpart = counterpart
        self._protocol_version: int | None = None
        self._agent_features: AgentFeatures | None = None
        self._client_features: ClientFeatures | None = None
        #: The ``initialize`` params a client sent this agent, read again once the version is answered.
        self._client_params: JsonValue = None
        #: The version this client asked for in its ``initialize`` (a v2 answer needs 2 or more).
        self._offered = 1
        #: The ``initialize`` being answered (see :meth:`follow`), until its answer is read.
        self._initializing: SentRequest[InitializeResponse] | None = None
        #: The checks of methods whose params are not read (:func:`~acpio.capabilities.checks_params`)
        #: that passed since the state last changed: every typed request sent is checked, most of
        #: them with a method that passed before. Emptied by each ``record_*``.
        self._passed: set[_CheckKey] = set()

    def __repr__(self) -> str:
        state = "initialized" if self._agent_features or self._client_features else "not initialized"
        return f"<PeerState {self.counterpart} {state}>"

    # --- what was said ----------------------------------------------------------------------------

    @property
    def protocol_version(self) -> int | None:
        """The protocol version the agent answered ``initialize`` with; ``None`` before that.

        Both sides know it: a client's state once the answer arrived, an agent's once it answered.
        """
        if self._initializing is not None:
            self._read_answer()
        return self._protocol_version

    @property
    def agent_features(self) -> AgentFeatures | None:
        """What the agent advertised in its ``initialize`` answer; ``None`` before it was read."""
        if self._initializing is not None:
            self._read_answer()
        return self._agent_features

    @property
    def client_features(self) -> ClientFeatures | None:
        """What the client advertised in its ``initialize`` request; ``None`` before it arrived."""
        return self._client_features

    def record_response(self, response: _Answer) -> _Answer:
        """Record the agent's answer to ``initialize`` (a v1 or a v2 one); return it.

        Raises :class:`~acpio.capabilities.UnsupportedProtocolVersion`, recording nothing, when this
        side does not speak the version the agent answered with (the spec then wants the connection
        closed: the caller's part).
        """
        check_agent_version(response.protocol_version, self._answerable())
        self._passed.clear()
        self._protocol_version = response.protocol_version
        self._agent_features = AgentFeatures.from_response(response)
        return response

    def _answerable(self) -> tuple[int, ...]:
        """The versions this client may be answered: v1, and v2 when it asked for 2 or more."""
        return (1, 2) if self._offered >= 2 else (1,)

    def record_request(self, request: InitializeRequest | v2.InitializeRequest) -> None:
        """Record the ``initialize`` request this client sent (its capabilities, the version it asked for)."""
        self._passed.clear()
        self._client_features = ClientFeatures.from_request(request)
        self._offered = request.protocol_version

    def record_client_params(self, params: JsonValue) -> None:
        """Record the params of the client's ``initialize`` as this agent received them.

        Its capabilities are read in the shape it is written in (:func:`acpio.versions.is_v2_shaped`)
        until :meth:`record_answer` says which version the agent answered with.
        """
        self._passed.clear()
        self._client_params = params
        version = 2 if isinstance(params, dict) and is_v2_shaped(params) else 1
        self._client_features = ClientFeatures.from_params(params, version)

    def record_answer(self, version: int) -> None:
        """Record that this agent answered ``initialize`` with ``version``: the connection speaks it.

        The client's capabilities are read again in that version's shape (a v2 request answered
        with 1 is read as a v1 client with no ``fs`` nor ``terminal``).
        """
        self._passed.clear()
        self._protocol_version = version
        self._client_features = ClientFeatures.from_params(self._client_params, version)

    def follow(
        self, sent: SentRequest[InitializeResponse], on_unsupported: Callable[[], object]
    ) -> SentRequest[InitializeResponse]:
        """The view of ``sent`` (an ``initialize`` to the agent) whose answer is recorded when read.

        Whoever awaits the returned request reads the answer, and :meth:`record_response` records
        it; an unsupported version calls ``on_unsupported()`` (close the connection) and raises. The
        answer is read by whoever comes first: the awaiting task, or a check or a look at the state
        after the response arrived (a handler reacting to the next message may run before the
        awaiting task resumes).
        """

        def record(response: InitializeResponse) -> InitializeResponse:
            try:
                return self.record_response(response)
            except UnsupportedProtocolVersion:
                on_unsupported()
                raise

        initializing = self._initializing = sent.map(record)
        return initializing

    # --- the check before sending -----------------------------------------------------------------

    def check(
        self,
        method: str,
        params: T,
        *,
        require_capabilities: bool = True,
        initialize_first: InitializeFirst = None,
    ) -> T:
        """``params`` (a typed request or notification) as they may be sent to the counterpart.

        * Before the agent answered ``initialize``, a method ``initialize_first`` names raises
          ``RuntimeError`` (ACP requires initialization first).
        * What ACP's prose requires but the schema leaves optional is filled in (``mcpServers`` of
          ``session/resume`` and ``session/fork``), and a relative ``cwd`` or
          ``additionalDirectories`` entry raises ``ValueError``.
        * With ``require_capabilities``, a method or content the counterpart did not advertise
          raises :class:`~acpio.capabilities.CapabilityNotAdvertised`. The agent's advertisement
          is checked once known; a client that did not send ``initialize`` yet advertised nothing.

        A method whose params are not read is checked once per state: a check that passed passes
        again until something is recorded (or while an ``initialize`` answer may be read).
        """
        key = (method, require_capabilities, initialize_first)
        if key in self._passed and self._initializing is None:
            return params
        if (
            initialize_first is not None
            and self.agent_features is None
            and _needs_initialize(method, initialize_first)
        ):
            raise RuntimeError(
                f"{method} was sent before initialize was answered: ACP requires the client to "
                "initialize the connection (and read the agent's capabilities) first. Send "
                "initialize and await its answer first: await conn.initialize(InitializeRequest(...)) "
                "on a ClientSideConnection, await cx.send_request(InitializeRequest(protocol_version=1, "
                "...)) on a builder's connection."
            )
        params = fill_required_fields(method, params)
        check_absolute_paths(method, params)
        if require_capabilities:
            if self.counterpart == "agent":
                features = self.agent_features
                if features is not None:
                    features.require_params(method, params)
            else:
                (self._client_features or ClientFeatures({})).require(method)
        if not checks_params(method) and len(self._passed) < _PASSED_LIMIT:
            self._passed.add(key)
        return params

    def _read_answer(self) -> None:
        """Record the answer to the followed ``initialize`` if it arrived and nobody read it yet."""
        initializing = self._initializing
        if initializing is None or not initializing.done:
            return
        self._initializing = None
        try:
            initializing.result()  # the answer is mapped through recording it, once
        except Exception:  # whoever awaits a failed initialize gets its error
            return


def _needs_initialize(method: str, initialize_first: InitializeFirst) -> bool:
    if initialize_first == "session":
        return method.startswith("session/")
    return method not in _BEFORE_INITIALIZE
