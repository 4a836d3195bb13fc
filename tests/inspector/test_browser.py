"""The inspector's page in headless chromium, driving a real ``acpio testy`` and a misbehaving agent.

Needs chromium and chromedriver (``scripts/install_browser.sh``) and selenium; skipped with the reason
otherwise. Screenshots are kept in ``$ACPIO_TEST_ARTIFACTS`` (default ``.cache/test-artifacts``).
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.inspector.conftest import StartInspect, artifacts_dir

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (pip install selenium)"
)
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

AGENT = Path(__file__).with_name("misbehaving_agent.py")
ONE_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def wait_until(driver: Any, condition: Callable[[], object], timeout: float = 30) -> Any:
    return WebDriverWait(
        driver, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    ).until(lambda _: condition())


def text_of(driver: Any, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def prompt(driver: Any, text: str) -> None:
    field = driver.find_element(By.ID, "prompt-text")
    field.clear()
    field.send_keys(text)
    driver.find_element(By.ID, "send-prompt").click()


def stop_reasons(driver: Any) -> list[str]:
    return [node.text for node in driver.find_elements(By.CSS_SELECTOR, "#conversation .stop")]


def held_card(driver: Any, method: str) -> Any:
    cards = driver.find_elements(By.CSS_SELECTOR, f'#pending .card[data-method="{method}"]')
    return cards[0] if cards else None


@pytest.mark.slow
def test_a_person_drives_testy_from_the_page(
    driver: Any, start_inspect: StartInspect, tmp_path: Path
) -> None:
    url = start_inspect(
        "--capture", str(tmp_path / "run.sqlite"), "--", sys.executable, "-m", "acpio", "testy"
    )
    driver.get(url)
    wait_until(driver, lambda: text_of(driver, "status-text") == "live")
    assert str(tmp_path / "run.sqlite") in text_of(driver, "capture")

    driver.find_element(By.ID, "init").click()
    driver.find_element(By.ID, "new-session").click()
    wait_until(driver, lambda: text_of(driver, "current-session") == "testy-1")
    # what testy offers: its modes and slash commands
    wait_until(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#mode option"))

    prompt(driver, "echo hello from the page")
    wait_until(driver, lambda: stop_reasons(driver) == ["stop reason: end_turn"])
    agent_text = [n.text for n in driver.find_elements(By.CSS_SELECTOR, "#conversation .msg.agent")]
    assert agent_text == ["hello from the page"]
    assert [n.text for n in driver.find_elements(By.CSS_SELECTOR, "#conversation .msg.user")] == [
        "echo hello from the page"
    ]

    # an image with the text
    image = tmp_path / "dot.png"
    image.write_bytes(base64.b64decode(ONE_PIXEL_PNG))
    driver.find_element(By.ID, "prompt-image").send_keys(str(image))
    prompt(driver, "echo look")
    wait_until(driver, lambda: len(stop_reasons(driver)) == 2)
    users = [n.text for n in driver.find_elements(By.CSS_SELECTOR, "#conversation .msg.user")]
    assert users[-1] == "echo look\n[image]"
    driver.execute_script("document.getElementById('prompt-image').value = '';")

    # a permission, answered by hand
    prompt(driver, "permission Rewrite notes.txt?")
    card = wait_until(driver, lambda: held_card(driver, "session/request_permission"))
    assert text_of(driver, "pending-count") == "1"
    card.find_element(By.CSS_SELECTOR, 'button[data-option="allow-once"]').click()
    wait_until(driver, lambda: len(stop_reasons(driver)) == 3)
    assert held_card(driver, "session/request_permission") is None
    assert "permission: allow-once" in text_of(driver, "conversation")

    # an elicitation form, filled in by hand
    prompt(driver, "elicit Who are you?")
    card = wait_until(driver, lambda: held_card(driver, "elicitation/create"))
    card.find_element(By.CSS_SELECTOR, 'input[name="name"]').send_keys("Ada")
    driver.save_screenshot(str(artifacts_dir() / "inspect-elicitation.png"))
    card.find_element(By.CSS_SELECTOR, 'button[data-action="accept"]').click()
    wait_until(driver, lambda: len(stop_reasons(driver)) == 4)
    assert "elicitation: accept" in text_of(driver, "conversation")
    assert '"name":"Ada"' in text_of(driver, "conversation")

    # a cancel while the turn sleeps
    prompt(driver, "sleep 30\necho never")
    wait_until(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#conversation .msg.user")) == 5)
    driver.find_element(By.ID, "cancel").click()
    wait_until(driver, lambda: len(stop_reasons(driver)) == 5)
    assert stop_reasons(driver)[-1] == "stop reason: cancelled"
    assert "never" not in "".join(n.text for n in driver.find_elements(By.CSS_SELECTOR, ".msg.agent"))

    # a file write allowed by the policy: the tool call shows its diff
    Select(driver.find_element(By.ID, "policy-files")).select_by_visible_text("allow")
    prompt(driver, "write notes.txt new words")
    wait_until(driver, lambda: len(stop_reasons(driver)) == 6)
    assert (tmp_path / "notes.txt").read_text() == "new words"
    diff = driver.find_element(By.CSS_SELECTOR, "#conversation .tool .diff")
    assert diff.find_element(By.CSS_SELECTOR, ".add").text == "+ new words"

    # a command the agent wants to run, consented to by hand
    prompt(driver, "run echo from-a-terminal")
    card = wait_until(driver, lambda: held_card(driver, "terminal/create"))
    assert "echo from-a-terminal" in card.text
    card.find_element(By.CSS_SELECTOR, 'button[data-action="perform"]').click()
    wait_until(driver, lambda: len(stop_reasons(driver)) == 7)
    assert "exit status 0" in text_of(driver, "conversation")
    assert "from-a-terminal" in text_of(driver, "conversation")

    # every frame, in the trace viewer's sequence
    driver.switch_to.frame(driver.find_element(By.ID, "viewer"))
    try:
        methods = (
            "initialize",
            "session/new",
            "session/request_permission",
            "elicitation/create",
            "terminal/create",
            "terminal/release",
        )
        # the viewer polls the run's events: the last frames may come a poll later
        wait_until(driver, lambda: all(m in driver.find_element(By.ID, "rows").text for m in methods))
    finally:
        driver.switch_to.default_content()
    assert text_of(driver, "warning-count") == "0"
    driver.save_screenshot(str(artifacts_dir() / "inspect.png"))


def test_a_misbehaving_agent_raises_a_warning_on_the_page(
    driver: Any, start_inspect: StartInspect, tmp_path: Path
) -> None:
    url = start_inspect("--capture", str(tmp_path / "run.sqlite"), "--", sys.executable, str(AGENT), "noise")
    driver.get(url)
    wait_until(driver, lambda: text_of(driver, "status-text") == "live")
    driver.find_element(By.ID, "init").click()
    warning = wait_until(
        driver, lambda: driver.find_elements(By.CSS_SELECTOR, '#warnings li[data-rule="stdout-noise"]')
    )[0]
    assert "Starting my agent, please wait..." in warning.text
    link = warning.find_element(By.TAG_NAME, "a")
    assert link.get_attribute("href") == "https://agentclientprotocol.com/protocol/v1/transports#stdio"
    assert text_of(driver, "warning-count") == "1"
    driver.save_screenshot(str(artifacts_dir() / "inspect-warning.png"))
