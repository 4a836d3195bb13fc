"""v2's classes are created on first use, and nothing of v2 is loaded by ``import acpio.schema``.

Counts are taken in fresh interpreters (``python -c``): this test process has created many
classes already. The v2 stub (``_models.pyi``) is also run as a module of its own: every lazily
created class must equal its plain definition there, which is what type checkers read.
"""

from __future__ import annotations

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

from acpio.schema import v2
from acpio.schema.v2 import _models  # noqa: F401  (the package reads the names without importing it)

from ..test_lazy_models import describe

MODELS = Path(v2.__file__).parent / "_models.py"
CREATED = "sorted(__import__('acpio.schema.v2._models', fromlist=['_lazy'])._lazy.created())"
V1_CREATED = "sorted(__import__('acpio.schema._models', fromlist=['_lazy'])._lazy.created())"


def fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter; it prints one JSON value, which is returned."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_acpio_and_its_v1_schema_do_not_load_v2() -> None:
    found = fresh(
        """
        import json, sys
        import acpio, acpio.schema
        from acpio.schema import METHODS, PromptRequest
        METHODS[0].params
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("acpio.schema.v2"))))
        """
    )
    assert found == []


def test_importing_v2_creates_no_class_of_either_version() -> None:
    found = fresh(
        f"""
        import json
        import acpio.schema.v2 as v2
        rows = [(m.method, m.direction, m.capability) for m in v2.METHODS]
        print(json.dumps({{"v2": {CREATED}, "v1": {V1_CREATED}, "rows": len(rows)}}))
        """
    )
    assert found == {"v2": [], "v1": [], "rows": len(v2.METHODS)}


EXCHANGE = """
import json
from acpio.schema import v2
from acpio.schema.v2 import _models  # noqa: F401  (the package reads the names without importing it)
v2.InitializeRequest.model_validate({"protocolVersion": 2, "info": {"name": "c", "version": "1"}})
v2.InitializeResponse(protocol_version=2, info=v2.Implementation(name="a", version="1")).to_wire()
v2.NewSessionRequest.model_validate({"cwd": "/p", "mcpServers": []})
v2.NewSessionResponse(session_id="s").to_wire()
v2.PromptRequest.model_validate({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]})
v2.PromptResponse(message_id="m").to_wire()
for update in [
    {"sessionUpdate": "state_update", "state": "running"},
    {"sessionUpdate": "agent_message_chunk", "messageId": "m2", "content": {"type": "text", "text": "x"}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
]:
    v2.UpdateSessionNotification.model_validate({"sessionId": "s", "update": update}).to_wire()
"""


def test_an_initialize_new_prompt_exchange_creates_a_part_of_the_models() -> None:
    created = fresh(EXCHANGE + f"print(json.dumps({CREATED}))")
    handshake = fresh(EXCHANGE.partition("for update")[0] + f"print(json.dumps({CREATED}))")
    total = len(v2._models._lazy._entries)  # type: ignore[attr-defined]
    assert total > 230
    # initialize, session/new, session/prompt and their responses: 69 of 239 when written
    assert "PromptResponse" in handshake
    assert len(handshake) <= 80, len(handshake)
    # session/update brings SessionUpdate's closure (every update kind, diffs, plans...): 135
    assert "UpdateSessionNotification" in created
    assert "ListSessionsRequest" not in created
    assert len(created) <= 150, len(created)


def test_every_public_name_resolves_and_unknown_names_raise() -> None:
    found = fresh(
        """
        import json
        import acpio.schema.v2 as v2
        from acpio.schema.v2._names import NAMES
        missing = [n for n in v2.__all__ if n not in dir(v2)]
        import acpio.schema.v2._models  # the package reads the names without importing it
        same = all(getattr(v2, n) is getattr(v2._models, n) for n in v2._models.__all__)
        same = same and list(NAMES) == v2._models.__all__
        try:
            v2.NoSuchModel
        except AttributeError as e:
            error = str(e)
        print(json.dumps({"missing": missing, "same": same, "error": error}))
        """
    )
    assert found == {
        "missing": [],
        "same": True,
        "error": "module 'acpio.schema.v2' has no attribute 'NoSuchModel'",
    }


def test_a_v2_model_and_a_method_row_pickle() -> None:
    note = v2.UpdateSessionNotification(session_id="s", update=v2.RunningStateUpdate())
    data = pickle.dumps(note).hex()
    found = fresh(
        f"""
        import json, pickle
        value = pickle.loads(bytes.fromhex({data!r}))
        print(json.dumps([type(value).__module__, type(value).__qualname__, value.to_wire()]))
        """
    )
    assert found == ["acpio.schema.v2._models", "UpdateSessionNotification", note.to_wire()]
    row = v2.REQUESTS["session/prompt"]
    assert pickle.loads(pickle.dumps(row)) == row


@pytest.fixture(scope="module")
def eager() -> ModuleType:
    """v2's ``_models.pyi`` run as a module: every class defined at once."""
    module = ModuleType("acpio_v2_eager_models")
    module.__file__ = str(MODELS.with_suffix(".pyi"))
    sys.modules["acpio_v2_eager_models"] = module
    try:
        exec(compile(MODELS.with_suffix(".pyi").read_text(), module.__file__, "exec"), module.__dict__)
    finally:
        del sys.modules["acpio_v2_eager_models"]
    return module


def test_every_class_matches_its_eager_definition(eager: ModuleType) -> None:
    def text(value: Any, module: str) -> str:
        return re.sub(r" at 0x[0-9a-f]+", "", json.dumps(describe(value), default=str).replace(module, "M."))

    different = [
        name
        for name in v2._models.__all__
        if text(getattr(v2, name), "acpio.schema.v2._models.")
        != text(getattr(eager, name), "acpio_v2_eager_models.")
    ]
    assert different == []


def test_every_request_class_gets_the_response_of_its_method() -> None:
    classes = [getattr(v2, n) for n in v2._models.__all__]
    requests = [c for c in classes if isinstance(c, type) and issubclass(c, v2.AcpRequest)]
    assert len(requests) == len(v2.REQUESTS)
    assert {c.__name__: c.RESPONSE.METHOD for c in requests} == {c.__name__: c.METHOD for c in requests}
