"""The viewer draws an ACP v2 trace as readably as a v1 one, in headless chromium.

The trace is ``data/v2_chain.jsons``: a real run of a raw v2 client through a conductor (the arrow
proxy in front of ``acpio testy --protocol 2``), made by ``tests/conductor/test_v2_chain.py``'s
chain with a script that has text, a structured diff, an agent terminal, a tool call cancelled by
``tool_call/cancel``, a plan and an ``agent_message`` upsert. Every row's label is the one
``acpio trace show`` prints (:func:`acpio.trace.show.label_of`), so both read v2 alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpio.trace import TraceViewer, read_trace
from acpio.trace.show import build_rows
from tests.trace.test_viewer_features import open_page, rows, shoot

pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")

V2_CHAIN = Path(__file__).parent / "data" / "v2_chain.jsons"


def test_v2_rows_are_labelled_by_state_ids_and_terminals_as_trace_show_does(driver: Any) -> None:
    with TraceViewer(V2_CHAIN).start() as viewer:
        open_page(driver, viewer, "?collapse=0")
        shown = {(row["method"], row["preview"]) for row in rows(driver)}
        shoot(driver, "v2-labels")
    expected = {(row.method, row.label) for row in build_rows(read_trace(V2_CHAIN), collapse=False)}
    assert shown == expected
    assert ("session/update", "state_update running") in shown
    assert ("session/update", "state_update idle end_turn") in shown
    assert ("session/update", 'agent_message agent-1 "all done"') in shown  # the upsert, by its id
    assert ("session/update", "tool_call_update a long task cancelled") in shown
    assert ("tool_call/cancel", "tool-3 a long task") in shown
    assert ("session/update", 'terminal_output_chunk terminal-1 $ echo out "out\\n"') in shown
    assert ("session/update", "plan_update plan 1/2 done") in shown
    assert ("initialize", "protocol v2 v2-test-client") in shown
    assert ("session/prompt", "accepted user-0") in shown


def test_v2_chunk_runs_are_one_row_per_message(driver: Any) -> None:
    with TraceViewer(V2_CHAIN).start() as viewer:
        open_page(driver, viewer)
        runs = [(row["count"], row["preview"]) for row in rows(driver) if " run" in row["classes"]]
    python_runs = [row for row in build_rows(read_trace(V2_CHAIN)) if row.count > 1]
    assert len(runs) == len(python_runs) > 0
    assert all(count.startswith("agent_message_chunk agent-1 ×") for count, _ in runs)  # noqa: RUF001
