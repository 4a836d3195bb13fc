"""Fixtures of the trace viewer's browser tests: one headless chromium per test module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    "--window-size=1440,900",
]


def _find(name: str, *fallbacks: str) -> str | None:
    for candidate in (name, *fallbacks):
        found = shutil.which(candidate)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    chromium = _find("chromium", "chromium-browser")
    chromedriver = _find("chromedriver")
    if chromium is None or chromedriver is None:
        missing = "chromium" if chromium is None else "chromedriver"
        pytest.skip(
            f"{missing} not found: run scripts/install_browser.sh (apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed (pip install selenium)"
    )
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="acpio-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    try:
        browser = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    except WebDriverException as error:
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"chromium did not start: {error.msg}")
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
