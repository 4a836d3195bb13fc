"""The roles themselves: counterparts, peers, builders, envelopes, routing hooks (no I/O)."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from acpio.jsonrpc import CANCEL_METHOD, Builder, Role
from acpio.roles import (
    PROXY_INITIALIZE_METHOD,
    SUCCESSOR_METHOD,
    Agent,
    Client,
    Conductor,
    Proxy,
    SuccessorEnvelope,
    UntypedRole,
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
    assert Agent().default_handler() is None
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


def test_other_roles_send_unchanged() -> None:
    assert Client().route_outgoing(Agent, "session/new", {"cwd": "/"}) == ("session/new", {"cwd": "/"})
    assert Agent().route_outgoing(Client(), "session/update", None) == ("session/update", None)


# --- incoming -------------------------------------------------------------------------------------


def test_a_proxy_unwraps_envelopes_as_coming_from_the_agent() -> None:
    inner = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk"}, "extra": [1]}
    peer, method, params = Proxy().route_incoming(
        SUCCESSOR_METHOD, {"method": "session/update", "params": inner}
    )
    assert (peer, method, params) == (Agent(), "session/update", inner)
    assert params is inner  # not copied, not validated


def test_a_proxy_sees_plain_messages_as_coming_from_the_client() -> None:
    assert Proxy().route_incoming("session/new", {"cwd": "/"}) == (Client(), "session/new", {"cwd": "/"})
    assert Proxy().route_incoming(PROXY_INITIALIZE_METHOD, {}) == (Client(), PROXY_INITIALIZE_METHOD, {})


@pytest.mark.parametrize(
    "params",
    [None, [], {"params": {}}, {"method": 3}, {"method": "x", "params": "not an object"}],
)
def test_a_malformed_envelope_is_left_as_it_is(params: object) -> None:
    # A10.3: it reaches the handlers with method `_proxy/successor` and its params intact.
    assert Proxy().route_incoming(SUCCESSOR_METHOD, params) == (Client(), SUCCESSOR_METHOD, params)


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
    from acpio import roles
    from acpio.schema import InitializeRequest, InitializeResponse

    cls = roles.InitializeProxyRequest
    assert cls.METHOD == PROXY_INITIALIZE_METHOD == "_proxy/initialize"
    assert cls.RESPONSE is InitializeResponse
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
