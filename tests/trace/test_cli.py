"""``acpio trace view``: the URL it prints, user mistakes as one line, a clean stop on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from acpio.cli import main
from acpio.trace.viewer import TraceViewer

FIXTURE = Path(__file__).parent / "data" / "proxy_chain.jsons"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_missing_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsons"
    code, out, err = run(["trace", "view", str(missing)], capsys)
    assert code == 2
    assert err == f"acpio: error: trace file not found: {missing}\n"
    assert out == ""


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["trace", "view", str(tmp_path)], capsys)
    assert code == 2
    assert err.startswith(f"acpio: error: {tmp_path} is a directory")
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["view", "show"])
def test_view_and_show_refuse_the_same_mistakes_alike(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unreadable = tmp_path / "secret.jsons"
    unreadable.write_text("")
    unreadable.chmod(0)
    expected = {
        tmp_path / "nope.jsons": "trace file not found",
        tmp_path: "is a directory",
    }
    if not os.access(unreadable, os.R_OK):  # root reads anything
        expected[unreadable] = "permission denied"
    for path, error in expected.items():
        code, out, err = run(["trace", command, str(path)], capsys)
        assert (code, out) == (2, "")
        assert error in err
        assert err.startswith("acpio: error: ")
        assert err.count("\n") == 1


def test_a_public_host_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["trace", "view", str(FIXTURE), "--host", "0.0.0.0"], capsys)
    assert code == 2
    assert err.startswith("acpio: error: --host 0.0.0.0 is not a loopback address")
    assert "Traceback" not in err


def test_a_busy_port_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = run(["trace", "view", str(FIXTURE), "--port", str(port)], capsys)
    assert code == 2
    assert err == (
        f"acpio: error: port {port} is already in use on 127.0.0.1: choose another with --port, "
        "or leave it out to get a free one\n"
    )


def test_an_out_of_range_port_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["trace", "view", str(FIXTURE), "--port", "70000"], capsys)
    assert code == 2
    assert "--port must be between 0 and 65535" in err


@pytest.fixture
def stop_at_once(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make serving end as Ctrl-C would, at once; yields the URLs the browser was asked to open."""
    opened: list[str] = []

    def interrupted(self: TraceViewer) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(TraceViewer, "serve_forever", interrupted)
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    return opened


def test_open_opens_the_printed_url(stop_at_once: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["trace", "view", str(FIXTURE), "--open"], capsys)
    assert code == 0
    url = out.removeprefix("Trace viewer at ").strip()
    assert stop_at_once == [url]
    assert url.startswith("http://127.0.0.1:")
    assert "Stopped." in err


def test_without_open_no_browser_is_started(
    stop_at_once: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(["trace", "view", str(FIXTURE)], capsys)
    assert code == 0
    assert stop_at_once == []


def test_a_browser_that_cannot_start_is_a_note(
    stop_at_once: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("webbrowser.open", lambda url: False)
    code, out, err = run(["trace", "view", str(FIXTURE), "--open"], capsys)
    assert code == 0
    url = out.removeprefix("Trace viewer at ").strip()
    assert f"Could not open a web browser: open {url} yourself." in err


def test_serves_until_ctrl_c_then_exits_cleanly(tmp_path: Path) -> None:
    trace = tmp_path / "live.jsons"
    trace.write_text("")
    process = subprocess.Popen(
        [sys.executable, "-m", "acpio", "trace", "view", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Trace viewer at http://127.0.0.1:"), first
        url = first.removeprefix("Trace viewer at ").strip()
        with _OPENER.open(url + "/events", timeout=10) as response:
            assert json.load(response)["events"] == []
        trace.write_text(FIXTURE.read_text())
        with _OPENER.open(url + "/events", timeout=10) as response:
            assert len(json.load(response)["events"]) == len(FIXTURE.read_text().splitlines())
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert "Traceback" not in err
    assert "Stopped." in err


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["trace", "view", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for option in ("FILE", "--port", "--host", "--open"):
        assert option in out
