"""``LineRecorder``: the recorders' file, which stops at the first write error and never raises it."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio.trace import CassetteRecorder, TapRecorder
from acpio.trace.line_recorder import LineRecorder
from acpio.transports.tap import Direction

FULL_DISK = Path("/dev/full")  # every write fails with ENOSPC, as on a full disk


def test_lines_are_flushed_as_written_and_stamped_with_the_time_since_opening(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    with LineRecorder(path) as recorder:
        first = recorder.elapsed()
        recorder.write(b'{"a":1}\n')
        assert path.read_bytes() == b'{"a":1}\n'  # flushed, not held until close
        assert 0 <= first <= recorder.elapsed()
        assert recorder.recording
    assert not recorder.recording
    recorder.write(b'{"b":2}\n')  # after close: dropped, no error
    recorder.close()  # closing again does nothing
    assert path.read_bytes() == b'{"a":1}\n'


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full (Linux) to fail a write for real")
def test_the_first_write_error_is_reported_once_and_recording_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder = LineRecorder(FULL_DISK)
    recorder.write(b'{"a":1}\n')
    recorder.write(b'{"b":2}\n')
    assert not recorder.recording
    err = capsys.readouterr().err
    assert err.count("acpio: recording to /dev/full stopped:") == 1
    assert "No space left on device" in err


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full (Linux) to fail a write for real")
@pytest.mark.parametrize("recorder_class", [TapRecorder, CassetteRecorder])
def test_both_recorders_survive_a_full_disk(
    recorder_class: type[TapRecorder | CassetteRecorder], capsys: pytest.CaptureFixture[str]
) -> None:
    with recorder_class(FULL_DISK) as record:
        for _ in range(3):
            record(Direction.OUTGOING, b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
        assert not record.recording
    assert capsys.readouterr().err.count("stopped:") == 1


def test_a_file_that_cannot_be_opened_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        LineRecorder(tmp_path / "no" / "such" / "dir.jsonl")
