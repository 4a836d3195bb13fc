"""The viewer page in a real headless browser (Debian's chromium, driven by selenium).

Skips with the reason when selenium, chromium or chromedriver is missing (``scripts/install_browser.sh``
installs the browser; selenium comes with the dev dependencies). A screenshot of the page is kept in
``$ACPIO_TEST_ARTIFACTS`` (default ``.cache/test-artifacts``) as ``trace-viewer.png``.
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

from acpio.trace import LanesEvent, ResponseEvent, TraceViewer, read_trace

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (pip install selenium)"
)
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "proxy_chain.jsons"
EVENTS = read_trace(FIXTURE)
MESSAGES = [event for event in EVENTS if not isinstance(event, LanesEvent)]
S1, S2 = "testy-session-1", "testy-session-2"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "proxy_chain.jsons"
    shutil.copy(FIXTURE, path)
    return path


@pytest.fixture
def page(driver: Any, trace: Path) -> Iterator[Any]:
    """The viewer page for a copy of the fixture trace, loaded and drawn."""
    with TraceViewer(trace).start() as viewer:
        driver.get(viewer.url + "/?collapse=0")  # one row per message (runs of chunks: test_viewer_features)
        wait_until(driver, lambda: len(arrows(driver)) == len(MESSAGES))
        yield driver


def wait_until(driver: Any, condition: Callable[[], object], timeout: float = 15) -> None:
    """Wait for ``condition``; rows redrawn while it looks (as scrolling does) just mean another look."""
    WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda _: condition())


def drawn_indices(driver: Any) -> list[int]:
    """The event index of each row in the page, read in one go."""
    script = "return [...document.querySelectorAll('#rows .msg')].map((row) => Number(row.dataset.index));"
    return list(driver.execute_script(script))


def arrows(driver: Any) -> list[Any]:
    return list(driver.find_elements(By.CSS_SELECTOR, "#rows .msg"))


def arrow_for(driver: Any, *, method: str, from_lane: str, to_lane: str, kind: str = "request") -> Any:
    """The row of the first message with this method and direction (rows carry their event's index)."""
    index = next(
        i
        for i, e in enumerate(MESSAGES)
        if e.type == kind and e.method == method and (e.from_lane, e.to_lane) == (from_lane, to_lane)
    )
    return driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{index}"]')


def set_method_filter(driver: Any, text: str) -> None:
    box = driver.find_element(By.ID, "method-filter")
    box.clear()
    if text:
        box.send_keys(text)


def detail_text(driver: Any) -> str:
    return str(driver.find_element(By.ID, "detail-json").text)


def artifacts_dir() -> Path:
    directory = Path(os.environ.get("ACPIO_TEST_ARTIFACTS") or REPO / ".cache" / "test-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_one_lane_per_component_named_by_the_lanes_event(page: Any) -> None:
    boxes = page.find_elements(By.CSS_SELECTOR, "#lanes .lane-box")
    lanes = [
        (box.find_element(By.CLASS_NAME, "lane-id").text, box.find_element(By.CLASS_NAME, "lane-name").text)
        for box in boxes
    ]
    assert lanes == [
        ("Client", "client"),
        ("Proxy(0)", "python examples/arrow_proxy.py"),
        ("Agent", "acpio testy"),
    ]
    assert len(page.find_elements(By.CSS_SELECTOR, "#lifelines .lifeline")) == 3
    assert "proxy_chain.jsons" in page.title


def test_one_arrow_per_message_in_time_order_coloured_by_kind(page: Any) -> None:
    rows = arrows(page)
    assert [row.get_attribute("data-method") for row in rows] == [
        e.method or "" for e in MESSAGES
    ]  # responses carry their request's method in this format
    kinds = [
        next(k for k in ("request", "response", "notification") if k in row.get_attribute("class"))
        for row in rows
    ]
    assert kinds == [e.type for e in MESSAGES]
    colours = {
        kind: rows[kinds.index(kind)].find_element(By.CLASS_NAME, "line").value_of_css_property("color")
        for kind in ("request", "response", "notification")
    }
    assert len(set(colours.values())) == 3
    # Left to right for Client -> Proxy(0), right to left for the answer.
    first = rows[0].find_element(By.CLASS_NAME, "arrow")
    assert "ltr" in first.get_attribute("class")
    answer = arrow_for(
        page, method="_proxy/initialize", from_lane="Proxy(0)", to_lane="Client", kind="response"
    )
    assert "rtl" in answer.find_element(By.CLASS_NAME, "arrow").get_attribute("class")


def test_error_responses_are_marked(page: Any) -> None:
    failed = page.find_elements(By.CSS_SELECTOR, "#rows .msg.failed")
    expected = [e for e in MESSAGES if isinstance(e, ResponseEvent) and e.is_error]
    assert len(failed) == len(expected) == 2
    for row in failed:
        assert row.find_element(By.CLASS_NAME, "badge").text == "✕ -32602"
        assert row.get_attribute("data-method") == "session/set_mode"


def test_clicking_an_arrow_shows_its_json(page: Any) -> None:
    assert not page.find_element(By.ID, "detail").is_displayed()
    prompt = arrow_for(page, method="session/prompt", from_lane="Client", to_lane="Proxy(0)")
    prompt.find_element(By.CLASS_NAME, "arrow").click()
    wait_until(page, lambda: page.find_element(By.ID, "detail").is_displayed())
    assert page.find_element(By.ID, "detail-title").text == "session/prompt"
    assert "selected" in prompt.get_attribute("class")
    shown = detail_text(page)
    assert json.loads(shown) == MESSAGES[int(prompt.get_attribute("data-index"))].raw
    assert '"method": "session/prompt"' in shown
    assert '"text": "echo hello world"' in shown
    meta = page.find_element(By.ID, "detail-meta").text
    assert "Client (client)" in meta
    assert "Proxy(0) (python examples/arrow_proxy.py)" in meta
    assert S1 in meta
    shot = artifacts_dir() / "trace-viewer.png"
    assert page.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The request links to its response on the same hop.
    page.find_element(By.CSS_SELECTOR, "#detail-meta a").click()
    wait_until(page, lambda: '"stopReason": "end_turn"' in detail_text(page))
    assert json.loads(detail_text(page))["type"] == "response"
    page.find_element(By.ID, "detail-close").click()
    assert not page.find_element(By.ID, "detail").is_displayed()


def test_filters_by_session_and_method(page: Any) -> None:
    sessions = Select(page.find_element(By.ID, "session-filter"))
    values = [option.get_attribute("value") for option in sessions.options]
    assert values == ["*", "", S1, S2]

    sessions.select_by_value(S2)
    # Its messages, and the session/new requests whose answers created it.
    created = [
        e for e in MESSAGES if isinstance(e, ResponseEvent) and e.method == "session/new" and e.session == S2
    ]
    in_s2 = [e for e in MESSAGES if e.session == S2]
    wait_until(page, lambda: len(arrows(page)) == len(in_s2) + len(created))
    assert len(arrows(page)) < len(MESSAGES)
    assert "showing" in page.find_element(By.ID, "count").text

    set_method_filter(page, "session/update")
    updates_s2 = [e for e in in_s2 if e.method == "session/update"]
    wait_until(page, lambda: len(arrows(page)) == len(updates_s2))
    assert {row.get_attribute("data-method") for row in arrows(page)} == {"session/update"}

    sessions.select_by_value("*")
    updates = [e for e in MESSAGES if e.method == "session/update"]
    wait_until(page, lambda: len(arrows(page)) == len(updates))

    set_method_filter(page, "-session/update")
    wait_until(page, lambda: len(arrows(page)) == len(MESSAGES) - len(updates))

    set_method_filter(page, "initialize prompt")
    wanted = [e for e in MESSAGES if "initialize" in (e.method or "") or "prompt" in (e.method or "")]
    wait_until(page, lambda: len(arrows(page)) == len(wanted))

    set_method_filter(page, "")
    page.find_element(By.CSS_SELECTOR, ".kind.notification").click()
    notifications = [e for e in MESSAGES if e.type == "notification"]
    wait_until(page, lambda: len(arrows(page)) == len(MESSAGES) - len(notifications))

    # No session: the initialize exchange (session/new requests belong to the session they created).
    sessions.select_by_value("")
    no_session = [e for e in MESSAGES if e.session is None and e.method != "session/new"]
    wait_until(page, lambda: len(arrows(page)) == len(no_session))
    assert {row.get_attribute("data-method") for row in arrows(page)} == {"_proxy/initialize", "initialize"}


def test_follows_a_trace_being_written(page: Any, trace: Path) -> None:
    extra = [
        {
            "type": "request",
            "ts": 2.0,
            "protocol": "acp",
            "from": "Client",
            "to": "Proxy(0)",
            "id": 6,
            "method": "session/prompt",
            "params": {"sessionId": "testy-session-3", "prompt": []},
            "session": "testy-session-3",
        },
        {
            "type": "notification",
            "ts": 2.1,
            "protocol": "acp",
            "from": "Agent",
            "to": "Proxy(0)",
            "method": "session/update",
            "session": "testy-session-3",
            "params": {
                "sessionId": "testy-session-3",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "late"},
                },
            },
        },
    ]
    second = json.dumps(extra[1]) + "\n"
    with trace.open("a") as file:
        file.write(json.dumps(extra[0]) + "\n")
        file.flush()
        wait_until(page, lambda: len(arrows(page)) == len(MESSAGES) + 1)
        file.write(second[:40])  # a line still being written is not drawn...
        file.flush()
        time.sleep(1.2)  # (two polls)
        assert len(arrows(page)) == len(MESSAGES) + 1
        file.write(second[40:])  # ...until it is complete
    wait_until(page, lambda: len(arrows(page)) == len(MESSAGES) + 2)
    assert arrows(page)[-1].find_element(By.CLASS_NAME, "preview").text == 'agent_message_chunk "late"'
    wait_until(
        page,
        lambda: (
            "testy-session-3"
            in [o.get_attribute("value") for o in Select(page.find_element(By.ID, "session-filter")).options]
        ),
    )
    # A new conductor run truncates the file: the page starts over with the new trace.
    trace.write_text(json.dumps(EVENTS[0].raw) + "\n" + json.dumps(extra[0]) + "\n")
    wait_until(page, lambda: len(arrows(page)) == 1)
    assert arrows(page)[0].get_attribute("data-method") == "session/prompt"


def test_the_arrow_keys_move_the_selection(page: Any) -> None:
    arrows(page)[0].click()
    wait_until(page, lambda: page.find_element(By.ID, "detail-title").text == "_proxy/initialize")
    page.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_DOWN)
    wait_until(page, lambda: page.find_element(By.ID, "detail-title").text == "initialize")
    assert "selected" in arrows(page)[1].get_attribute("class")
    page.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    wait_until(page, lambda: not page.find_element(By.ID, "detail").is_displayed())


def test_a_long_trace_draws_only_the_rows_in_view(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "long.jsons"
    count = 5000
    with path.open("w") as file:
        for n in range(count):
            event = {
                "type": "notification",
                "ts": n / 100,
                "protocol": "acp",
                "from": "Agent",
                "to": "Client",
            }
            file.write(json.dumps(event | {"method": "session/update", "params": {"n": n}}) + "\n")
    with TraceViewer(path).start() as viewer:
        driver.get(viewer.url)
        count_text = lambda: driver.find_element(By.ID, "count").text  # noqa: E731
        wait_until(driver, lambda: count_text() == f"{count} messages")
        drawn = drawn_indices(driver)
        assert 0 < len(drawn) < 500
        assert drawn[0] == 0
        driver.execute_script("const d = document.getElementById('diagram'); d.scrollTop = d.scrollHeight;")
        wait_until(driver, lambda: drawn_indices(driver)[-1] == count - 1)
        assert len(drawn_indices(driver)) < 500

        def click_last() -> bool:
            driver.find_element(By.CSS_SELECTOR, f'#rows .msg[data-index="{count - 1}"]').click()
            return True

        wait_until(driver, click_last)
        wait_until(driver, lambda: json.loads(detail_text(driver))["params"] == {"n": count - 1})


def test_the_page_says_when_the_viewer_is_gone(driver: Any, trace: Path) -> None:
    viewer = TraceViewer(trace).start()
    try:
        driver.get(viewer.url)
        wait_until(driver, lambda: driver.find_element(By.ID, "status-text").text == "live")
    finally:
        viewer.close()
    wait_until(driver, lambda: "disconnected" in driver.find_element(By.ID, "status-text").text)


def write_trace(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def lane_headers(driver: Any) -> list[tuple[str, str, str]]:
    script = """return [...document.querySelectorAll('#lanes .lane-box')].map((box) => [
        box.querySelector('.lane-id').textContent, box.querySelector('.lane-name').textContent,
        box.querySelector('.lane-name').title]);"""
    return [tuple(lane) for lane in driver.execute_script(script)]


def test_a_rust_sdk_trace_without_lanes_event_or_response_methods(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "rust.jsons"
    request = {
        "type": "request",
        "ts": 0.01,
        "protocol": "acp",
        "from": "Client",
        "to": "Proxy(0)",
        "id": "6f1c",
    }
    update = {"type": "notification", "ts": 0.02, "protocol": "acp", "from": "Proxy(1)", "to": "Proxy(0)"}
    response = {
        "type": "response",
        "ts": 0.03,
        "from": "Proxy(0)",
        "to": "Client",
        "id": "6f1c",
        "is_error": False,
    }
    write_trace(
        path,
        [
            request | {"method": "session/prompt", "params": {}},
            update | {"method": "session/update", "params": {}},
            response | {"payload": {"stopReason": "end_turn"}},
        ],
    )
    with TraceViewer(path).start() as viewer:
        driver.get(viewer.url)
        wait_until(driver, lambda: len(drawn_indices(driver)) == 3)
        assert [lane[0] for lane in lane_headers(driver)] == ["Client", "Proxy(0)", "Proxy(1)"]
        # The response is paired with its request by id on the same hop, and named after it.
        assert arrows(driver)[2].get_attribute("data-method") == "session/prompt"
        assert "stopReason: end_turn" in arrows(driver)[2].text


def test_lane_names_show_commands_short_and_in_full_on_hover(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "named.jsons"
    lanes = [
        {"lane": "Client", "name": "client"},
        {"lane": "Proxy(0)", "name": "/usr/bin/python3 /home/me/proxies/arrow.py --quiet"},
        {"lane": "Agent", "name": "npx @zed-industries/claude-code-acp"},
    ]
    write_trace(path, [{"type": "lanes", "ts": 0.0, "lanes": lanes}])
    with TraceViewer(path).start() as viewer:
        driver.get(viewer.url)
        wait_until(driver, lambda: len(lane_headers(driver)) == 3)
        assert lane_headers(driver) == [
            ("Client", "client", "client"),
            ("Proxy(0)", "python3 arrow.py --quiet", "/usr/bin/python3 /home/me/proxies/arrow.py --quiet"),
            ("Agent", "npx @zed-industries/claude-code-acp", "npx @zed-industries/claude-code-acp"),
        ]
        assert "No messages yet" in driver.find_element(By.ID, "empty").text


def page_range(driver: Any) -> str:
    return str(driver.find_element(By.ID, "page-range").text)


def events_range(first: str, last: str, total: str) -> str:
    """The pager's text for events ``first`` to ``last`` (numbers as the page writes them)."""
    return f"events {first}\N{EN DASH}{last} of {total}"


@pytest.mark.slow
def test_a_trace_bigger_than_the_window_is_paged(driver: Any, tmp_path: Path) -> None:
    """The page holds 10,000 events at most: it pages through the rest and follows the end."""
    path = tmp_path / "big.jsons"
    lanes = {"type": "lanes", "ts": 0.0, "lanes": [{"lane": "Client", "name": "client"}]}

    def update(n: int) -> str:
        event = {"type": "notification", "ts": n / 100, "protocol": "acp", "from": "Agent", "to": "Client"}
        return json.dumps(event | {"method": "session/update", "params": {"n": n}}) + "\n"

    path.write_text(json.dumps(lanes) + "\n" + "".join(update(n) for n in range(25_000)))
    with TraceViewer(path).start() as viewer:
        driver.get(viewer.url)
        # Event 1 is the lanes event: message n is event n + 2.
        wait_until(driver, lambda: page_range(driver) == events_range("1", "10,000", "25,001"))
        assert driver.find_element(By.ID, "count").text == "9999 messages"
        info = driver.find_element(By.ID, "file-info")
        size = path.stat().st_size
        assert info.text == f"{size / (1 << 20):.2f} MB · 25,001 events"
        assert info.get_attribute("title") == f"{size:,} bytes"

        def first_message() -> dict[str, Any]:
            arrows(driver)[0].click()
            return dict(json.loads(detail_text(driver)))

        driver.find_element(By.ID, "page-next").click()
        wait_until(driver, lambda: page_range(driver) == events_range("10,001", "20,000", "25,001"))
        assert first_message()["params"] == {"n": 9999}
        assert "Event\n#10,001" in driver.find_element(By.ID, "detail-meta").text
        assert drawn_indices(driver)[0] == 0

        # A filter applies to the window.
        set_method_filter(driver, "nothing-is-called-this")
        wait_until(driver, lambda: driver.find_element(By.ID, "count").text == "showing 0 of 10000 messages")
        set_method_filter(driver, "")

        goto = driver.find_element(By.ID, "goto")
        goto.send_keys("12345", Keys.ENTER)
        wait_until(driver, lambda: '"n": 12343' in detail_text(driver))
        assert "Event\n#12,345" in driver.find_element(By.ID, "detail-meta").text

        driver.find_element(By.ID, "page-first").click()
        wait_until(driver, lambda: page_range(driver) == events_range("1", "10,000", "25,001"))

        # The last events, then following the file as it grows: the oldest leave the window.
        driver.find_element(By.ID, "page-last").click()
        wait_until(driver, lambda: page_range(driver) == events_range("15,002", "25,001", "25,001"))
        assert driver.find_element(By.ID, "page-next").get_attribute("disabled") == "true"
        with path.open("a") as file:
            file.writelines(update(n) for n in range(25_000, 26_500))
        wait_until(driver, lambda: page_range(driver).endswith("\N{EN DASH}26,501 of 26,501"))
        shown = page_range(driver).removeprefix("events ").split(" of ")[0]
        first, last = (int(n.replace(",", "")) for n in shown.split("\N{EN DASH}"))
        assert last - first < 10_000
        driver.execute_script("const d = document.getElementById('diagram'); d.scrollTop = d.scrollHeight;")
        wait_until(driver, lambda: drawn_indices(driver)[-1] == last - first)


def test_deeply_nested_events_are_drawn_and_so_are_later_ones(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "deep.jsons"
    head = '{"type":"request","ts":0.1,"protocol":"acp","from":"Client","to":"Agent"'
    deep = "[" * 300 + '"bottom"' + "]" * 300  # deeper than orjson writes
    deeper = "[" * 1100 + "]" * 1100  # deeper than orjson reads
    path.write_text(
        f'{head},"id":1,"method":"x/deep","params":{{"a":{deep}}}}}\n'
        f'{head},"id":2,"method":"x/deeper","params":{{"a":{deeper}}}}}\n'
        + '{"type":"notification","ts":0.3,"from":"Agent","to":"Client","method":"x/after"}\n'
    )
    with TraceViewer(path).start() as viewer:
        driver.get(viewer.url)
        wait_until(driver, lambda: len(drawn_indices(driver)) == 3)
        methods = [row.get_attribute("data-method") for row in arrows(driver)]
        assert methods == ["x/deep", "x/deeper", "x/after"]
        placeholder = arrows(driver)[1]
        assert placeholder.find_element(By.CSS_SELECTOR, ".badge.omitted").text == "omitted"
        reason = placeholder.find_element(By.CLASS_NAME, "preview").text
        assert "nested deeper than the viewer reads" in reason
        arrows(driver)[0].click()
        wait_until(driver, lambda: json.loads(detail_text(driver))["params"]["a"] == json.loads(deep))
