"""The viewer's features, each in headless chromium, each with a screenshot kept in the test artifacts.

Chunk runs, the time axis, the client edge, labels, full-text search, filters in the URL, export, stderr
lines and the ``acpio prompt --json`` log format. The trace is ``data/prompt_chain.jsons``: a real run of
``acpio prompt`` through a conductor (the arrow proxy in front of testy, which writes on its stderr).
Screenshots go to ``$ACPIO_TEST_ARTIFACTS`` (default ``.cache/test-artifacts``, ignored by git).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acpio.trace import LanesEvent, TraceViewer, read_trace

pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

DATA = Path(__file__).parent / "data"
CHAIN = DATA / "prompt_chain.jsons"
JSON_LOG = DATA / "prompt_json.jsonl"
MESSAGES = [event for event in read_trace(CHAIN) if not isinstance(event, LanesEvent)]
REPO = Path(__file__).resolve().parents[2]


def artifacts_dir() -> Path:
    directory = Path(os.environ.get("ACPIO_TEST_ARTIFACTS") or REPO / ".cache" / "test-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def shoot(driver: Any, name: str, index: int | None = None) -> None:
    """Save a screenshot of the page (scrolled to the row of event ``index``, if given)."""
    if index is not None:
        row = driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{index}"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    shot = artifacts_dir() / f"trace-viewer-{name}.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def wait_until(driver: Any, condition: Callable[[], object], timeout: float = 15) -> None:
    WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda _: condition())


def rows(driver: Any) -> list[dict[str, Any]]:
    """Each row in the page: its event index, classes, method, preview and time, read in one go."""
    script = """return [...document.querySelectorAll('#rows .msg')].map((row) => ({
        index: Number(row.dataset.index), classes: row.className,
        method: row.querySelector('.method').textContent,
        preview: (row.querySelector('.preview') || {}).textContent || '',
        count: (row.querySelector('.count') || {}).textContent || '',
        ts: row.querySelector('.ts').textContent}));"""
    return list(driver.execute_script(script))


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "prompt_chain.jsons"
    shutil.copy(CHAIN, path)
    return path


@pytest.fixture
def viewer(trace: Path) -> Iterator[TraceViewer]:
    with TraceViewer(trace).start() as served:
        yield served


def open_page(driver: Any, viewer: TraceViewer, query: str = "") -> None:
    driver.get(viewer.url + "/" + query)
    wait_until(driver, lambda: len(rows(driver)) > 0 and "live" in driver.find_element(By.ID, "status").text)


def test_a_run_of_chunks_is_one_row_that_expands(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer)
    runs = [r for r in rows(driver) if " run" in r["classes"]]
    assert [(r["count"], r["preview"]) for r in runs] == [
        ("agent_message_chunk ×7", '"All done, the notes are rewritten.\\n"'),  # noqa: RUF001
        ("agent_message_chunk ×7", '"> All done, the notes are rewritten.\\n"'),  # noqa: RUF001
    ]
    assert driver.find_element(By.ID, "count").text == "81 messages · 1 session"  # a run counts its chunks
    before = len(rows(driver))
    toggle = driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{runs[1]["index"]}"] .toggle')
    toggle.click()
    wait_until(driver, lambda: len(rows(driver)) == before + 6)
    members = [r for r in rows(driver) if " member" in r["classes"]]
    assert [r["preview"] for r in members] == [
        f'agent_message_chunk "{word}"' for word in ("done, ", "the ", "notes ", "are ", "rewritten.", "\\n")
    ]
    shoot(driver, "chunk-run-expanded", runs[1]["index"])
    driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{runs[1]["index"]}"] .toggle').click()
    wait_until(driver, lambda: len(rows(driver)) == before)
    driver.find_element(By.ID, "collapse").click()  # no runs: one row per chunk
    wait_until(driver, lambda: len(rows(driver)) == len(MESSAGES))


def test_request_durations_are_drawn_on_a_time_axis(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer)
    assert driver.find_element(By.ID, "axis-start").text == "0.0549 s"
    assert driver.find_element(By.ID, "axis-end").text == "3.1199 s"
    prompt = next(i for i, e in enumerate(MESSAGES) if e.type == "request" and e.method == "session/prompt")
    bar = driver.execute_script(
        "const bar = document.querySelector(arguments[0]);"
        " return [bar.style.left, bar.style.width, bar.title];",
        f'#rows .msg[data-index="{prompt}"] .timeline .bar',
    )
    span = 3.119950 - 0.054904
    assert float(bar[0].rstrip("%")) == pytest.approx((2.541929 - 0.054904) / span * 100, abs=0.01)
    assert float(bar[1].rstrip("%")) == pytest.approx((3.119950 - 2.541929) / span * 100, abs=0.01)
    assert bar[2] == "2.5419 s → 3.1199 s (578.0 ms)"
    notification = next(i for i, e in enumerate(MESSAGES) if e.type == "notification")
    assert driver.find_elements(By.CSS_SELECTOR, f'#rows .msg[data-index="{notification}"] .timeline .tick')
    shoot(driver, "time-axis")


def test_the_client_edge_shows_each_logical_message_once(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer)
    driver.find_element(By.ID, "edge").click()
    wait_until(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#lanes .lane-box")) == 2)
    lanes = [
        box.get_attribute("data-lane") for box in driver.find_elements(By.CSS_SELECTOR, "#lanes .lane-box")
    ]
    assert lanes == ["Client", "Agent"]
    shown = rows(driver)
    assert [r["method"] for r in shown].count("session/prompt") == 2  # the request and its answer, once
    assert shown[0]["method"] == "initialize"  # what the client sent (the proxy got proxy/initialize)
    for row in shown:
        event = MESSAGES[row["index"]]
        assert event.type == "stderr" or "Client" in (event.from_lane, event.to_lane)
    shoot(driver, "client-edge")


def test_labels_say_what_happened(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer, "?collapse=0")
    labels = {(r["method"], r["preview"]) for r in rows(driver)}
    assert ("terminal/create", "$ echo built ok") in labels
    assert ("fs/write_text_file", "/home/dev/notes-project/notes.txt") in labels
    assert ("session/update", "tool_call_update Write notes.txt completed") in labels  # title by id
    assert ("session/request_permission", "Rewrite notes.txt?") in labels
    assert ("terminal/wait_for_exit", "exit 0") in labels
    create = next(i for i, e in enumerate(MESSAGES) if e.raw.get("method") == "terminal/create")
    shoot(driver, "labels", create)


def test_stderr_lines_are_rows_on_their_lane(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer)
    stderr = [r for r in rows(driver) if " stderr" in r["classes"]]
    assert [(r["method"], r["preview"], r["ts"]) for r in stderr] == [
        ("stderr", "noisy agent starting", "0.2296")
    ]
    line = driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{stderr[0]["index"]}"]')
    assert "self" in line.find_element(By.CSS_SELECTOR, ".arrow").get_attribute("class")
    line.click()
    wait_until(driver, lambda: driver.find_element(By.ID, "detail-title").text == "stderr")
    assert json.loads(driver.find_element(By.ID, "detail-json").text)["line"] == "noisy agent starting"
    shoot(driver, "stderr")
    driver.find_element(By.CSS_SELECTOR, "#kinds .kind.stderr").click()
    wait_until(driver, lambda: not [r for r in rows(driver) if " stderr" in r["classes"]])


def test_full_text_search_looks_in_every_field(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer, "?collapse=0")
    box = driver.find_element(By.ID, "search")
    box.send_keys("HELLO NOTES")
    expected = [i for i, e in enumerate(MESSAGES) if "hello notes" in json.dumps(e.raw).lower()]
    wait_until(driver, lambda: [r["index"] for r in rows(driver)] == expected)
    # The two reads' answers, the read tool call's content and the write's diff, each on two hops.
    assert len(expected) == 8
    shoot(driver, "search")


def test_filters_live_in_the_url(driver: Any, viewer: TraceViewer) -> None:
    open_page(driver, viewer, "?session=testy-1&method=terminal&kinds=request,response&q=term-1&edge=client")
    assert driver.find_element(By.ID, "method-filter").get_attribute("value") == "terminal"
    assert driver.find_element(By.ID, "search").get_attribute("value") == "term-1"
    assert driver.find_element(By.ID, "edge").is_selected()
    assert driver.find_element(By.ID, "session-filter").get_attribute("value") == "testy-1"
    # term-1 is in the answer to terminal/create and in the requests that name the terminal.
    wait_until(driver, lambda: len(rows(driver)) == 4)
    assert {r["method"] for r in rows(driver)} == {
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    }
    shoot(driver, "url-filters")
    box = driver.find_element(By.ID, "method-filter")
    box.clear()
    box.send_keys("output")
    wait_until(driver, lambda: "method=output" in driver.current_url)
    assert "q=term-1" in driver.current_url
    link = driver.current_url
    driver.get("about:blank")
    driver.get(link)  # the link reopens the same view
    wait_until(driver, lambda: [r["method"] for r in rows(driver)] == ["terminal/output"])


def test_export_downloads_the_filtered_events(driver: Any, viewer: TraceViewer, tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    open_page(driver, viewer, "?q=rewritten&edge=client")
    # On the client's edge: the prompt that asks for it, and the run of chunks that says it.
    assert [r["method"] for r in rows(driver)] == ["session/prompt", "session/update"]
    driver.find_element(By.ID, "export").click()
    exported = downloads / "prompt_chain-filtered.jsons"
    deadline = time.monotonic() + 15
    while not exported.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert lines[0]["type"] == "lanes"
    to_client = [e.raw for e in MESSAGES if e.type == "notification" and e.to_lane == "Client"]
    prompt = next(
        e.raw for e in MESSAGES if e.type == "request" and getattr(e, "method", "") == "session/prompt"
    )
    assert lines[1:] == [prompt, *to_client[-7:]]  # the run, exported chunk by chunk, as written
    assert read_trace(exported)  # a trace file like any other
    shoot(driver, "export")


def test_a_prompt_json_log_is_drawn_without_times(driver: Any, tmp_path: Path) -> None:
    log = tmp_path / "prompt.jsonl"
    shutil.copy(JSON_LOG, log)
    with TraceViewer(log).start() as viewer:
        open_page(driver, viewer)
        shown = rows(driver)
        assert shown[0]["method"] == "initialize"
        assert {r["ts"] for r in shown} == {"—"}
        assert "untimed" in driver.find_element(By.TAG_NAME, "body").get_attribute("class")
        lanes = [
            b.get_attribute("data-lane") for b in driver.find_elements(By.CSS_SELECTOR, "#lanes .lane-box")
        ]
        assert lanes == ["Client", "Agent"]
        assert ("terminal/create", "$ echo built ok") in {(r["method"], r["preview"]) for r in shown}
        shoot(driver, "prompt-json-log")
