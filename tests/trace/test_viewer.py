"""The viewer's HTTP server, over real HTTP on loopback: the page, /events and following a growing file."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from acpio.trace import TraceViewer

FIXTURE = Path(__file__).parent / "data" / "proxy_chain.jsons"

# No proxy, whatever the environment says: the viewer is on loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Message, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def events(viewer: TraceViewer, query: str = "") -> dict[str, Any]:
    status, headers, body = get(f"{viewer.url}/events{query}")
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    answer: dict[str, Any] = json.loads(body)
    return answer


def event_line(n: int, **fields: Any) -> str:
    event = {"type": "notification", "ts": n / 10, "protocol": "acp", "from": "Agent", "to": "Client"}
    event |= {"method": "session/update", "params": {"n": n}, "session": "s-1"} | fields
    return json.dumps(event) + "\n"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.jsons"
    shutil.copy(FIXTURE, path)
    return path


@pytest.fixture
def viewer(trace: Path) -> Iterator[TraceViewer]:
    with TraceViewer(trace).start() as running:
        yield running


def fixture_objects() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def test_the_page_is_served_self_contained(viewer: TraceViewer) -> None:
    status, headers, body = get(viewer.url + "/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    page = body.decode()
    assert "<title>acpio trace</title>" in page
    assert "/events?" in page
    # No external scripts, styles, fonts or images: every asset is inline.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", page)


def test_events_returns_every_event_as_written(viewer: TraceViewer) -> None:
    answer = events(viewer)
    expected = fixture_objects()
    assert answer["file"] == "trace.jsons"
    assert (answer["epoch"], answer["start"], answer["next"]) == (0, 0, len(expected))
    assert answer["events"] == expected


def test_since_returns_only_the_newer_events(viewer: TraceViewer) -> None:
    expected = fixture_objects()
    answer = events(viewer, "?since=40&epoch=0")
    assert (answer["start"], answer["next"]) == (40, len(expected))
    assert answer["events"] == expected[40:]
    assert events(viewer, f"?since={len(expected)}&epoch=0")["events"] == []


def test_a_growing_file_is_followed(viewer: TraceViewer, trace: Path) -> None:
    first = events(viewer)
    with trace.open("a") as file:
        file.write(event_line(1) + "\n" + "garbage\n" + event_line(2) + event_line(3)[:30])
    answer = events(viewer, f"?since={first['next']}&epoch=0")
    assert [event["params"]["n"] for event in answer["events"]] == [1, 2]
    assert answer["start"] == first["next"]
    with trace.open("a") as file:
        file.write(event_line(3)[30:])
    answer = events(viewer, f"?since={answer['next']}&epoch=0")
    assert [event["params"]["n"] for event in answer["events"]] == [3]


def test_an_empty_file_is_served_and_fills_as_lines_arrive(tmp_path: Path) -> None:
    path = tmp_path / "live.jsons"
    path.write_text("")
    with TraceViewer(path).start() as viewer:
        assert events(viewer)["events"] == []
        with path.open("a") as file:
            file.write(event_line(1))
        answer = events(viewer, "?since=0&epoch=0")
        assert [event["params"]["n"] for event in answer["events"]] == [1]
        assert answer["next"] == 1


def test_a_restarted_trace_bumps_the_epoch(viewer: TraceViewer, trace: Path) -> None:
    before = events(viewer)
    trace.write_text(event_line(7))  # a new conductor run truncates the file
    answer = events(viewer, f"?since={before['next']}&epoch=0")
    assert answer["epoch"] == 1
    assert answer["start"] == 0
    assert [event["params"]["n"] for event in answer["events"]] == [7]
    # A client still on the old epoch gets everything again, from the start.
    assert events(viewer, "?since=1&epoch=0")["start"] == 0
    assert events(viewer, "?since=1&epoch=1")["events"] == []


def test_since_past_the_end_starts_over(viewer: TraceViewer) -> None:
    answer = events(viewer, "?since=1000")
    assert answer["start"] == 0
    assert len(answer["events"]) == answer["next"] == len(fixture_objects())


@pytest.mark.parametrize(
    "query", ["?since=-1", "?since=abc", "?since=1&epoch=x", "?start=-2", "?limit=-1", "?limit=x"]
)
def test_a_malformed_query_is_400(viewer: TraceViewer, query: str) -> None:
    status, _, body = get(f"{viewer.url}/events{query}")
    assert status == 400
    assert b"must be non-negative integers" in body


def test_an_unreadable_file_is_503_with_the_reason_until_it_is_back(viewer: TraceViewer, trace: Path) -> None:
    trace.unlink()
    status, headers, body = get(f"{viewer.url}/events")
    assert status == 503
    assert headers["Content-Type"] == "application/json"
    assert "cannot read the trace file trace.jsons" in json.loads(body)["error"]
    trace.write_text(event_line(1))
    assert [event["params"]["n"] for event in events(viewer)["events"]] == [1]


@pytest.mark.parametrize("path", ["/nope", "/events/", "/viewer.html", "/../etc/passwd"])
def test_unknown_paths_are_404(viewer: TraceViewer, path: str) -> None:
    status, _, body = get(viewer.url + path)
    assert status == 404
    assert b"not found" in body


def test_a_foreign_host_header_is_refused(viewer: TraceViewer) -> None:
    # What a page on another site would send after pointing its DNS name at 127.0.0.1.
    status, _, _ = get(viewer.url + "/events", {"Host": f"attacker.example:{viewer.port}"})
    assert status == 403
    for host in (f"127.0.0.1:{viewer.port}", f"localhost:{viewer.port}"):
        assert get(viewer.url + "/events", {"Host": host})[0] == 200


def test_it_listens_on_loopback_only(viewer: TraceViewer) -> None:
    assert viewer.url == f"http://127.0.0.1:{viewer.port}"
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    for address in addresses - {"127.0.0.1", "127.0.1.1"}:
        with pytest.raises(OSError), socket.create_connection((address, viewer.port), timeout=2):
            pass


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_a_host_that_is_not_loopback_is_refused(trace: Path, host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        TraceViewer(trace, host=host)


def test_localhost_and_ipv6_loopback(trace: Path) -> None:
    with TraceViewer(trace, host="localhost").start() as viewer:
        assert viewer.url.startswith("http://127.0.0.1:")
        assert get(viewer.url + "/")[0] == 200
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        ipv6 = TraceViewer(trace, host="::1")
    except OSError as error:
        pytest.skip(f"cannot bind ::1 here: {error}")
    with ipv6.start():
        assert ipv6.url == f"http://[::1]:{ipv6.port}"
        assert get(ipv6.url + "/events")[0] == 200


def test_close_releases_the_port(trace: Path) -> None:
    viewer = TraceViewer(trace).start()
    port = viewer.port
    viewer.close()
    with pytest.raises(urllib.error.URLError):
        _OPENER.open(f"http://127.0.0.1:{port}/", timeout=2)
    with TraceViewer(trace, port=port).start() as again:
        assert get(again.url + "/")[0] == 200


def test_a_port_in_use_raises(viewer: TraceViewer, trace: Path) -> None:
    with pytest.raises(OSError):
        TraceViewer(trace, port=viewer.port)


# --- deeply nested events (finding: the feed broke on them) ---------------------------------------


def test_an_event_nested_deeper_than_orjson_writes_is_served_and_so_are_later_ones(trace: Path) -> None:
    deep = "[" * 300 + '"bottom"' + "]" * 300
    with trace.open("a") as file:
        file.write(event_line(1)[:-2] + f', "deep": {deep}}}\n')
        file.write(event_line(2))
    with TraceViewer(trace).start() as viewer:
        answer = events(viewer)
        *_, nested, after = answer["events"]
        assert nested["deep"] == json.loads(deep)
        assert after["params"] == {"n": 2}
        assert answer["next"] == answer["total"] == len(fixture_objects()) + 2
        later = events(viewer, f"?start={answer['next'] - 1}&epoch=0")
        assert [event["params"]["n"] for event in later["events"]] == [2]


# --- windows of a big trace -------------------------------------------------------------------------


def test_events_come_in_windows_with_the_size_of_the_file(viewer: TraceViewer, trace: Path) -> None:
    expected = fixture_objects()
    answer = events(viewer, "?start=10&limit=5")
    assert answer["events"] == expected[10:15]
    assert (answer["start"], answer["next"], answer["total"]) == (10, 15, len(expected))
    assert answer["size"] == answer["scanned"] == trace.stat().st_size
    assert answer["complete"] is True
    assert answer["lanes"] == expected[0]  # whatever the window, the lanes event comes with it
    status = events(viewer, "?start=40&limit=0")
    assert (status["events"], status["start"], status["next"], status["total"]) == ([], 40, 40, len(expected))


def test_an_answer_has_at_most_the_maximum_limit(viewer: TraceViewer, trace: Path) -> None:
    with trace.open("a") as file:
        file.writelines(event_line(n) for n in range(6000))
    answer = events(viewer, "?limit=100000")
    assert len(answer["events"]) == 5000
    assert events(viewer)["next"] == 1000  # the default


GENERATOR = r"""
import sys, orjson
path, size = sys.argv[1], int(sys.argv[2])
text = "x" * 300
with open(path, "wb") as file:
    lanes = [{"lane": "Client", "name": "client"}]
    file.write(orjson.dumps({"type": "lanes", "ts": 0.0, "lanes": lanes}) + b"\n")
    n = 0
    while file.tell() < size:
        file.write(b"".join(
            orjson.dumps({"type": "notification", "ts": i / 1000, "protocol": "acp", "from": "Agent",
                "to": "Client", "method": "session/update", "session": "s-1", "params": {"sessionId": "s-1",
                "n": i, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                "text": text}}}}) + b"\n"
            for i in range(n, n + 10000)))
        n += 10000
print(n + 1)
"""

SERVER = r"""
import sys
from acpio.trace import TraceViewer

def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

viewer = TraceViewer(sys.argv[1])
print(rss(), viewer.url, flush=True)  # before anything is read
viewer.start()
sys.stdin.read()
"""


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads memory use from /proc (Linux)")
@pytest.mark.slow
def test_a_200_mb_trace_is_served_in_windows_quickly_in_bounded_memory(tmp_path: Path) -> None:
    """The viewer used to read the whole file into memory (13 GB for 1 GB) and answer with all of it."""
    path = tmp_path / "big.jsons"
    made = subprocess.run(
        [sys.executable, "-c", GENERATOR, str(path), str(200_000_000)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    count = int(made.stdout)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        baseline, url = server.stdout.readline().split()
        started = time.monotonic()
        status, _, body = get(f"{url}/events?start=0&limit=1000")
        took = time.monotonic() - started
        assert status == 200
        first = json.loads(body)
        assert len(first["events"]) == 1000
        assert first["size"] == path.stat().st_size
        assert len(body) < 2_000_000, "the first answer is one window, not the file"
        assert took < 5, f"the first answer took {took:.1f} s"

        deadline = time.monotonic() + 120
        while not (answer := json.loads(get(f"{url}/events?limit=0")[2]))["complete"]:
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
        assert answer["total"] == count
        middle = json.loads(get(f"{url}/events?start={count // 2}&limit=3")[2])
        assert [event["params"]["n"] for event in middle["events"]] == [count // 2 - 1 + i for i in range(3)]
        last = json.loads(get(f"{url}/events?start={count - 1}&limit=10")[2])
        assert [event["params"]["n"] for event in last["events"]] == [count - 2]

        grown_mb = (peak_rss_kb(server.pid) - int(baseline)) / 1024
        assert grown_mb < 64, f"serving a 200 MB trace took {grown_mb:.0f} MB more memory"
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=30)
