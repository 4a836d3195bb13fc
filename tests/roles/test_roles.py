"""The roles themselves: counterparts, peers, builders, envelopes, routing hooks (no I/O)."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from acpio.jsonrpc import CANCEL_METHOD, Builder, Role
from acpio.roles import (
    LEGACY_PROXY_INITIALIZE_METHOD,
    LEGACY_PROXY_METHODS,
    LEGACY_SUCCESSOR_METHOD,
    PROXY_INITIALIZE_METHOD,
    PROXY_METHODS,
    SUCCESSOR_METHOD,
    Agent,
    Client,
    Conductor,
    Proxy,
    SuccessorEnvelope,
    UntypedRole,
    proxy_methods_of,
)


@pytest.mark.parametrize(
    ("role", "counterpart"),
    [(Agent, Client), (Client, Agent), (Proxy, Conductor), (Conductor, Proxy), (UntypedRole, UntypedRole)],
)
def test_each_role_knows_its_counterpart(role: type[Role], counterpart: type[Role]) -> None:
    assert role().counterpart() == counterpart()
    assert role.COUNTERPART in (counterpart, None)


def test_peers_are_the_counterpart_except_for_a_proxy() -> None:
    assert Agent().peers() == (Client(),)
    assert Client().peers() == (Agent(),)
    assert Conductor().peers() == (Proxy(),)
    assert Proxy().peers() == (Client(), Agent())
    assert Proxy().counterpart() == Conductor()


def test_roles_compare_by_kind_and_print_plainly() -> None:
    assert Agent() == Agent()
    assert Agent() != Client()
    assert len({Agent(), Agent(), Client()}) == 2
    assert repr(Proxy()) == "Proxy()"


@pytest.mark.parametrize("role", [Agent, Client, Proxy, Conductor, UntypedRole])
def test_builder_plays_the_role_and_is_named_after_it(role: type[Role]) -> None:
    app = role.builder()
    assert isinstance(app, Builder)
    assert app.role == role()
    assert app.name == role.NAME
    assert role.builder(name="mine").name == "mine"


def test_default_handlers() -> None:
    assert Agent().default_handler() is not None  # answers initialize
    assert Conductor().default_handler() is None
    assert UntypedRole().default_handler() is None
    assert Client().default_handler() is not None
    assert Proxy().default_handler() is not None


def test_resolve_peer_takes_a_class_or_an_instance_and_names_the_valid_peers() -> None:
    assert Proxy().resolve_peer(Agent) == Agent()
    assert Proxy().resolve_peer(Client()) == Client()
    with pytest.raises(
        ValueError, match=r"Conductor is not a peer of a Proxy connection; its peers are: Client, Agent"
    ):
        Proxy().resolve_peer(Conductor)
    with pytest.raises(ValueError, match=r"Client cannot send to Client: .*its peers are: Agent"):
        Client().route_outgoing(Client, "m", {})


# --- outgoing -------------------------------------------------------------------------------------


def test_a_proxy_wraps_messages_for_its_successor_only() -> None:
    proxy = Proxy()
    params = {"sessionId": "s1", "prompt": []}
    assert proxy.route_outgoing(Agent, "session/prompt", params) == (
        SUCCESSOR_METHOD,
        {"method": "session/prompt", "params": params},
    )
    assert proxy.route_outgoing(Client, "session/update", params) == ("session/update", params)


def test_a_proxy_never_wraps_cancel_request_because_its_id_belongs_to_this_connection() -> None:
    params = {"requestId": 7}
    assert Proxy().route_outgoing(Agent, CANCEL_METHOD, params) == (CANCEL_METHOD, params)
    assert Proxy(LEGACY_PROXY_METHODS).route_outgoing(Agent, CANCEL_METHOD, params) == (CANCEL_METHOD, params)


def test_the_proxy_chain_method_names() -> None:
    assert (SUCCESSOR_METHOD, PROXY_INITIALIZE_METHOD) == ("proxy/successor", "proxy/initialize")
    assert (LEGACY_SUCCESSOR_METHOD, LEGACY_PROXY_INITIALIZE_METHOD) == (
        "_proxy/successor",
        "_proxy/initialize",
    )
    assert (PROXY_METHODS.initialize, PROXY_METHODS.successor, PROXY_METHODS.legacy) == (
        "proxy/initialize",
        "proxy/successor",
        False,
    )
    assert LEGACY_PROXY_METHODS.legacy
    assert (
        proxy_methods_of("_proxy/initialize") is proxy_methods_of("_proxy/successor") is LEGACY_PROXY_METHODS
    )
    assert proxy_methods_of("proxy/initialize") is proxy_methods_of("proxy/successor") is PROXY_METHODS
    assert proxy_methods_of("initialize") is None
    assert proxy_methods_of("_proxy/other") is None


def test_a_proxy_answers_in_the_names_its_conductor_last_used() -> None:
    proxy = Proxy()
    wrapped = {"method": "session/new", "params": {"cwd": "/"}}
    assert proxy.methods is PROXY_METHODS  # before the conductor said anything
    assert proxy.route_incoming(LEGACY_PROXY_INITIALIZE_METHOD, {"protocolVersion": 1}) == (
        Client(),
        PROXY_INITIALIZE_METHOD,  # handlers see the current name
        {"protocolVersion": 1},
    )
    assert proxy.route_outgoing(Agent, "session/new", {"cwd": "/"}) == (LEGACY_SUCCESSOR_METHOD, wrapped)
    assert proxy.route_incoming(PROXY_INITIALIZE_METHOD, {}) == (Client(), PROXY_INITIALIZE_METHOD, {})
    assert proxy.route_outgoing(Agent, "session/new", {"cwd": "/"}) == (SUCCESSOR_METHOD, wrapped)
    assert proxy.route_incoming(LEGACY_SUCCESSOR_METHOD, wrapped) == (Agent(), "session/new", {"cwd": "/"})
    assert proxy.methods is LEGACY_PROXY_METHODS
    # A malformed envelope says nothing about the names: it is left as it is.
    assert proxy.route_incoming(SUCCESSOR_METHOD, {"x": 1}) == (Client(), SUCCESSOR_METHOD, {"x": 1})
    assert proxy.methods is LEGACY_PROXY_METHODS


def test_each_connection_plays_its_own_copy_of_a_proxy_role() -> None:
    proxy = Proxy()
    copy = proxy.for_connection()
    assert copy == proxy
    assert copy is not proxy
    copy.route_incoming(LEGACY_PROXY_INITIALIZE_METHOD, {})
    assert (copy.methods, proxy.methods) == (LEGACY_PROXY_METHODS, PROXY_METHODS)
    agent = Agent()
    assert agent.for_connection() is agent  # stateless roles are shared


def test_other_roles_send_unchanged() -> None:
    assert Client().route_outgoing(Agent, "session/new", {"cwd": "/"}) == ("session/new", {"cwd": "/"})
    assert Agent().route_outgoing(Client(), "session/update", None) == ("session/update", None)


# --- incoming -------------------------------------------------------------------------------------


@pytest.mark.parametrize("envelope_method", [SUCCESSOR_METHOD, LEGACY_SUCCESSOR_METHOD])
def test_a_proxy_unwraps_envelopes_as_coming_from_the_agent(envelope_method: str) -> None:
    inner = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk"}, "extra": [1]}
    peer, method, params = Proxy().route_incoming(
        envelope_method, {"method": "session/update", "params": inner}
    )
    assert (peer, method, params) == (Agent(), "session/update", inner)
    assert params is inner  # not copied, not validated


def test_unwrapping_drops_the_envelopes_meta_and_keeps_the_inner_one() -> None:
    inner = {"sessionId": "s1", "_meta": {"inner": 1}}
    envelope = {"method": "session/cancel", "params": inner, "_meta": {"hop": 1}}
    assert Proxy().route_incoming(SUCCESSOR_METHOD, envelope) == (Agent(), "session/cancel", inner)
    assert inner == {"sessionId": "s1", "_meta": {"inner": 1}}
    no_params = {"method": "session/cancel", "params": None, "_meta": {"hop": 1}}
    assert Proxy().route_incoming(SUCCESSOR_METHOD, no_params) == (Agent(), "session/cancel", None)


def test_a_proxy_sees_plain_messages_as_coming_from_the_client() -> None:
    assert Proxy().route_incoming("session/new", {"cwd": "/"}) == (Client(), "session/new", {"cwd": "/"})
    assert Proxy().route_incoming(PROXY_INITIALIZE_METHOD, {}) == (Client(), PROXY_INITIALIZE_METHOD, {})


@pytest.mark.parametrize(
    "params",
    [None, [], {"params": {}}, {"method": 3}, {"method": "x", "params": "not an object"}],
)
def test_a_malformed_envelope_is_left_as_it_is(params: object) -> None:
    # A10.3: it reaches the handlers with method `proxy/successor` and its params intact.
    assert Proxy().route_incoming(SUCCESSOR_METHOD, params) == (Client(), SUCCESSOR_METHOD, params)
    assert Proxy().route_incoming(LEGACY_SUCCESSOR_METHOD, params) == (
        Client(),
        LEGACY_SUCCESSOR_METHOD,
        params,
    )


def test_other_roles_see_everything_from_their_counterpart() -> None:
    envelope = {"method": "x", "params": {}}
    assert Client().route_incoming(SUCCESSOR_METHOD, envelope) == (Agent(), SUCCESSOR_METHOD, envelope)
    assert Agent().route_incoming("session/new", None) == (Client(), "session/new", None)


# --- the envelope ---------------------------------------------------------------------------------


def test_envelope_wire_shape_matches_the_protocol_reference() -> None:
    envelope = SuccessorEnvelope("session/prompt", {"sessionId": "session-1", "prompt": []})
    assert envelope.to_params() == {
        "method": "session/prompt",
        "params": {"sessionId": "session-1", "prompt": []},
    }
    assert SuccessorEnvelope("session/cancel").to_params() == {"method": "session/cancel"}


def test_envelope_meta_is_written_as_underscore_meta_beside_the_inner_meta() -> None:
    # A12.2: the envelope's _meta at the envelope level, the inner message's inside params.
    inner = {"sessionId": "s", "prompt": [], "_meta": {"traceparent": "00-inner"}}
    envelope = SuccessorEnvelope("session/prompt", inner, meta={"traceparent": "00-outer"})
    wire = orjson.loads(orjson.dumps(envelope.to_params()))
    assert wire == {
        "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": [], "_meta": {"traceparent": "00-inner"}},
        "_meta": {"traceparent": "00-outer"},
    }
    assert "meta" not in wire
    assert SuccessorEnvelope.from_params(wire) == envelope


def test_envelope_accepts_the_legacy_meta_spelling() -> None:
    # A12.3
    read = SuccessorEnvelope.from_params({"method": "m", "params": {}, "meta": {"k": 1}})
    assert read == SuccessorEnvelope("m", {}, {"k": 1})
    assert read is not None
    assert read.to_params()["_meta"] == {"k": 1}


def test_nested_envelopes_peel_one_layer_at_a_time() -> None:
    inner = SuccessorEnvelope("session/update", {"sessionId": "s"})
    outer = SuccessorEnvelope(SUCCESSOR_METHOD, inner.to_params())
    peeled = SuccessorEnvelope.from_params(outer.to_params())
    assert peeled is not None
    assert peeled.method == SUCCESSOR_METHOD
    assert SuccessorEnvelope.from_params(peeled.params) == inner


def test_initialize_proxy_request_has_the_params_and_result_of_initialize() -> None:
    from acpio import roles, schema
    from acpio.schema import InitializeRequest, InitializeResponse

    cls = roles.InitializeProxyRequest
    assert cls is schema.InitializeProxyRequest  # the schema's, not a copy
    assert cls.METHOD == PROXY_INITIALIZE_METHOD == "proxy/initialize"
    assert issubclass(cls.RESPONSE, InitializeResponse)
    assert issubclass(cls, InitializeRequest)
    assert InitializeRequest.METHOD == "initialize"
    request = cls.model_validate({"protocolVersion": 1, "future": True})
    assert request.to_wire() == {"protocolVersion": 1, "future": True}
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        roles.Nope  # noqa: B018


def test_importing_the_roles_loads_no_schema_models() -> None:
    code = "import sys, acpio.roles; print('acpio.schema._models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
