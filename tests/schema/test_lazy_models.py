"""The model classes are created on first use: what an agent creates, and that nothing else changes.

Counts are taken in fresh interpreters (``python -c``), since the test process has created every
class long ago. ``acpio.schema._models`` is the lazily creating module; ``_models.pyi`` holds the
same definitions as plain classes, which type checkers read and which these tests run as a module
of their own to compare against.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

import acpio.schema as acp
import acpio.schema._models  # noqa: F401  (the package reads the names without importing it)
from acpio.schema import METHODS, REQUESTS, MethodSpec

from .._stdio_script import answer_on_stdio, initialize_and_new_session

MODELS = Path(acp.__file__).parent / "_models.py"


def fresh(code: str, *, stdin: str | None = None) -> Any:
    """Run ``code`` in a new interpreter; it prints one JSON value, which is returned."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


CREATED = "sorted(__import__('acpio.schema._models', fromlist=['_lazy'])._lazy.created())"


def test_importing_acpio_and_building_an_agent_creates_no_model() -> None:
    created = fresh(
        f"""
        import json
        import acpio
        from acpio import Agent, Connection
        from acpio import schema
        import acpio.capabilities, acpio.jsonrpc, acpio.roles, acpio.transports
        Agent.builder(name="a")
        print(json.dumps({CREATED}))
        """
    )
    assert created == []


def test_reading_the_method_table_creates_only_the_models_read() -> None:
    found = fresh(
        f"""
        import json
        from acpio.schema import METHODS, NOTIFICATIONS, REQUESTS
        from acpio.roles import unstable_methods
        rows = [(m.method, m.direction, m.kind, m.stable, m.capability) for m in METHODS]
        unstable_methods()
        before = {CREATED}
        spec = REQUESTS["session/cancel"] if "session/cancel" in REQUESTS else NOTIFICATIONS["session/cancel"]
        spec.params
        print(json.dumps({{"rows": len(rows), "before": before, "after": {CREATED}}}))
        """
    )
    assert found["rows"] == len(METHODS)
    assert found["before"] == []
    assert found["after"] == ["CancelNotification"]


AGENT = """
import asyncio, sys
from acpio import Agent, Connection
from acpio import schema as acp
from acpio.transports import Stdio

app = Agent.builder(name="lazy-agent")


@app.on_request
async def initialize(req: acp.InitializeRequest, responder: object, cx: Connection) -> acp.InitializeResponse:
    return acp.InitializeResponse(protocol_version=1)


@app.on_request
async def new_session(
    req: acp.NewSessionRequest, responder: object, cx: Connection
) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id="s1")


asyncio.run(app.serve(Stdio()))
import acpio.schema._models as models
print(len(models._lazy.created()), file=sys.stderr)
"""


def test_an_agent_that_answered_initialize_and_session_new_created_a_third_of_the_models(
    tmp_path: Path,
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    answers, report = answer_on_stdio(script, initialize_and_new_session(tmp_path))
    assert answers == [
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}},
    ]
    created = int(report)
    # the closure of InitializeRequest/Response and NewSessionRequest/Response: 60-odd of 228
    assert 40 <= created <= 80, created


def test_every_public_name_resolves_and_unknown_names_raise() -> None:
    found = fresh(
        """
        import json
        import acpio.schema as acp
        from acpio.schema._names import NAMES
        listed = dir(acp)
        missing = [n for n in acp.__all__ if n not in listed]
        import acpio.schema._models  # the package reads the names without importing it
        models = acp._models.__all__
        values = {n: getattr(acp, n) is getattr(acp._models, n) for n in acp.__all__ if n in models}
        errors = []
        for module in (acp, acp._models):
            try:
                module.NoSuchModel
            except AttributeError as e:
                errors.append(str(e))
        same = all(values.values())
        named = list(NAMES) == models
        found = {"missing": missing, "same": same, "count": len(values), "errors": errors}
        print(json.dumps({**found, "named": named}))
        """
    )
    assert found["named"] is True
    assert found["missing"] == []
    assert found["same"] is True
    assert found["count"] == len(acp._models.__all__)
    assert found["errors"] == [
        "module 'acpio.schema' has no attribute 'NoSuchModel'",
        "module 'acpio.schema._models' has no attribute 'NoSuchModel'",
    ]


def test_star_import_gives_every_name() -> None:
    found = fresh(
        """
        import json
        from acpio.schema import *
        import acpio.schema as acp
        print(json.dumps(sorted(n for n in acp.__all__ if n not in globals())))
        """
    )
    assert found == []


def test_a_model_pickled_here_unpickles_where_its_class_was_never_created() -> None:
    update = acp.SessionNotification(
        session_id="s", update=acp.AgentMessageChunk(content=acp.TextContent(text="hi"))
    )
    data = pickle.dumps(update).hex()
    found = fresh(
        f"""
        import json, pickle
        value = pickle.loads(bytes.fromhex({data!r}))
        print(json.dumps([type(value).__qualname__, value.to_wire()]))
        """
    )
    assert found == ["SessionNotification", update.to_wire()]
    assert copy.deepcopy(update) == update
    assert pickle.loads(pickle.dumps(update)) == update


def test_threads_reading_a_name_first_get_one_class() -> None:
    found = fresh(
        """
        import json, threading
        import acpio.schema as acp
        barrier = threading.Barrier(8)
        seen = []
        def read():
            barrier.wait()
            seen.append(acp.SessionNotification)
        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps(len({id(c) for c in seen})))
        """
    )
    assert found == 1


def test_method_table_rows_read_as_before() -> None:
    row = REQUESTS["session/prompt"]
    assert row.params is acp.PromptRequest
    assert row.result is acp.PromptResponse
    assert isinstance(row, MethodSpec)
    plain = MethodSpec(
        "session/prompt", "client_to_agent", "request", acp.PromptRequest, acp.PromptResponse, True, None
    )
    assert row == plain
    assert plain == row
    assert hash(row) == hash(plain)
    assert repr(row) == repr(plain)
    assert copy.copy(row) == row
    assert pickle.loads(pickle.dumps(row)) == row
    assert all(m.params is getattr(acp, m.params.__name__) for m in METHODS)


def eager_module() -> ModuleType:
    """``_models.pyi`` run as a module: every class defined at once, as before."""
    module = ModuleType("acpio_eager_models")
    module.__file__ = str(MODELS.with_suffix(".pyi"))
    sys.modules["acpio_eager_models"] = module
    try:
        exec(compile(MODELS.with_suffix(".pyi").read_text(), module.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules["acpio_eager_models"]
    return module


@pytest.fixture(scope="module")
def eager() -> ModuleType:
    """The eager definitions (:func:`eager_module`)."""
    return eager_module()


def describe(value: Any) -> Any:
    """What a definition amounts to, with the module's name taken out."""
    if isinstance(value, type) and issubclass(value, BaseModel):
        fields = {
            name: (repr(f.annotation), repr(f.default), f.alias, f.is_required(), repr(f.metadata))
            for name, f in value.model_fields.items()
        }
        bases = [b.__name__ for b in value.__mro__]
        validators = sorted(value.__pydantic_decorators__.model_validators)
        return [value.__name__, bases, fields, getattr(value, "METHOD", None), validators]
    if isinstance(value, frozenset):  # UNSTABLE_TYPES: the order of a set is not its value
        return sorted(value)
    return repr(value)


def differences_from_eager() -> dict[str, tuple[str, str]]:
    """Each class whose lazy definition differs from its eager one: its two descriptions."""
    eager = eager_module()

    def text(value: Any, module: str) -> str:
        # function objects in validators print their address: the same function, another object
        return re.sub(r" at 0x[0-9a-f]+", "", json.dumps(describe(value), default=str).replace(module, "M."))

    return {
        name: (lazy, text(getattr(eager, name), "acpio_eager_models."))
        for name in acp._models.__all__
        if (lazy := text(getattr(acp, name), "acpio.schema._models."))
        != text(getattr(eager, name), "acpio_eager_models.")
    }


def test_every_class_matches_its_eager_definition() -> None:
    # In a new interpreter, as a user's process creates them: a test worker has run other tests'
    # code on these classes first (once, in a full run, a class read differently there).
    root = str(Path(__file__).resolve().parents[2])
    different = fresh(
        f"""
        import json, sys
        sys.path.insert(0, {root!r})
        from tests.schema.test_lazy_models import differences_from_eager
        print(json.dumps(differences_from_eager()))
        """
    )
    assert different == {}, "\n".join(f"{n}:\n  lazy  {a}\n  eager {b}" for n, (a, b) in different.items())


def test_every_request_class_gets_the_response_of_its_method() -> None:
    requests = [getattr(acp, n) for n in acp._models.__all__]
    requests = [c for c in requests if isinstance(c, type) and issubclass(c, acp.AcpRequest)]
    assert len(requests) == len(REQUESTS)
    assert {c.__name__: c.RESPONSE.METHOD for c in requests} == {c.__name__: c.METHOD for c in requests}


def test_a_class_validates_as_its_eager_definition(eager: ModuleType) -> None:
    data = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "content": [{"type": "content", "content": {"type": "text", "text": "a"}}],
        },
    }
    lazy = acp.SessionNotification.model_validate(data)
    plain = eager.SessionNotification.model_validate(data)
    assert lazy.to_wire() == plain.to_wire() == data
    assert acp.SessionNotification.model_json_schema() == eager.SessionNotification.model_json_schema()


@pytest.fixture(scope="module")
def generator() -> Any:
    """``scripts/generate_schema.py``'s ``Generator`` class, loaded by path."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "generate_schema.py"
    spec = importlib.util.spec_from_file_location("acpio_generate_schema", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the script runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.Generator


def test_the_generator_refuses_names_that_need_themselves_to_be_created(generator: Any) -> None:
    generator.check_acyclic({"A": ["B"], "B": [], "C": ["A"]})
    with pytest.raises(SystemExit, match="creation cycle: A -> B -> A"):
        generator.check_acyclic({"A": ["B"], "B": ["A"]})


def test_the_generator_reads_what_a_definition_needs_before_and_after(generator: Any) -> None:
    source = [
        "class Tree(Node):",
        "    children: 'list[Tree] | None' = None",
        "    leaf: Leaf",
        "    def grow(self) -> 'Forest':",
        "        return Seed()",
    ]
    names = {n: [] for n in ("Tree", "Node", "Leaf", "Forest", "Seed", "Unused")}
    gen = generator.__new__(generator)
    gen.models = {}
    assert gen.references("Tree", source, names) == (["Node", "Leaf"], ["Forest", "Seed"])
