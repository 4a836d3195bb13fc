"""The sans-I/O line splitter: framing rules, the size limit, and any chunking giving the same frames."""

from __future__ import annotations

import doctest
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio.transports import lines
from acpio.transports.base import OversizedFrame
from acpio.transports.lines import HEAD_SIZE, LineSplitter, encode_frame


def feed_all(splitter: LineSplitter, *chunks: bytes) -> list[bytes | OversizedFrame]:
    out: list[bytes | OversizedFrame] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    return out


def reference(data: bytes, max_line: int) -> list[bytes | OversizedFrame]:
    """The framing rules written the obvious way, over the whole stream at once."""
    out: list[bytes | OversizedFrame] = []
    for line in data.split(b"\n")[:-1]:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > max_line:
            out.append(OversizedFrame(len(line), line[:HEAD_SIZE]))
        elif line and not line.isspace():
            out.append(line)
    return out


def test_module_doctest() -> None:
    assert doctest.testmod(lines).failed == 0


def test_complete_lines_in_one_chunk() -> None:
    assert LineSplitter().feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']


def test_line_split_across_chunks_at_every_position() -> None:
    data = b'{"jsonrpc":"2.0","id":1}\n{"x":"y"}\n'
    for cut in range(len(data) + 1):
        splitter = LineSplitter()
        assert feed_all(splitter, data[:cut], data[cut:]) == [b'{"jsonrpc":"2.0","id":1}', b'{"x":"y"}']
        assert splitter.buffered == 0


def test_byte_by_byte() -> None:
    data = b'{"a":1}\r\n\n{"b":2}\n'
    splitter = LineSplitter()
    assert feed_all(splitter, *(data[i : i + 1] for i in range(len(data)))) == [b'{"a":1}', b'{"b":2}']


def test_crlf_is_tolerated() -> None:
    assert LineSplitter().feed(b'{"a":1}\r\n{"b":2}\r\n') == [b'{"a":1}', b'{"b":2}']


def test_crlf_split_between_chunks() -> None:
    assert feed_all(LineSplitter(), b'{"a":1}\r', b'\n{"b":2}\r', b"\n") == [b'{"a":1}', b'{"b":2}']


def test_blank_lines_lone_cr_and_whitespace_lines_are_skipped() -> None:
    assert LineSplitter().feed(b'\n\n\r\n\r\n  \t \n{"a":1}\n\n') == [b'{"a":1}']


def test_inner_cr_is_kept() -> None:
    assert LineSplitter().feed(b'{"a":"\r"}\n') == [b'{"a":"\r"}']


def test_unfinished_line_is_kept_for_the_next_chunk_and_returned_by_finish() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert splitter.buffered == 4
    assert splitter.finish() == b'{"b"'
    assert splitter.finish() is None
    assert splitter.buffered == 0


def test_finish_ignores_trailing_blank() -> None:
    splitter = LineSplitter()
    splitter.feed(b'{"a":1}\n \r')
    assert splitter.finish() is None


def test_exact_limit_is_accepted_one_more_byte_is_not() -> None:
    splitter = LineSplitter(max_line=10)
    assert splitter.feed(b"0123456789\n") == [b"0123456789"]
    assert splitter.feed(b"0123456789\r\n") == [b"0123456789"]
    assert splitter.feed(b"0123456789A\n") == [OversizedFrame(11, b"0123456789A")]


def test_exact_limit_across_chunks() -> None:
    splitter = LineSplitter(max_line=10)
    assert feed_all(splitter, b"01234", b"56789", b"\r", b"\n") == [b"0123456789"]
    assert feed_all(splitter, b"01234", b"56789", b"A", b"\n") == [OversizedFrame(11, b"0123456789A")]


def test_oversized_line_is_reported_once_with_size_and_head_then_parsing_goes_on() -> None:
    splitter = LineSplitter(max_line=1000)
    big = b'{"blob":"' + b"x" * 5000 + b'"}'
    chunks = [b'{"before":1}\n' + big[:700], big[700:3000], big[3000:] + b'\r\n{"after":2}\n']
    out = feed_all(splitter, *chunks)
    assert out == [b'{"before":1}', OversizedFrame(len(big), big[:HEAD_SIZE]), b'{"after":2}']
    assert splitter.buffered == 0


def test_oversized_line_in_a_single_chunk() -> None:
    big = b"y" * 300
    assert LineSplitter(max_line=100).feed(big + b"\nok\n") == [OversizedFrame(300, big[:HEAD_SIZE]), b"ok"]


def test_oversized_line_unfinished_at_the_end() -> None:
    splitter = LineSplitter(max_line=10)
    splitter.feed(b"z" * 50)
    rest = splitter.finish()
    assert isinstance(rest, OversizedFrame)
    assert rest.size == 50
    assert splitter.feed(b"ok\n") == [b"ok"]


def test_huge_line_is_skipped_with_memory_bounded() -> None:
    max_line = 1024 * 1024
    splitter = LineSplitter(max_line=max_line)
    chunk = b"a" * (64 * 1024)
    total = 64 * 1024 * 1024  # 64 MiB, fed 64 KiB at a time: never held whole
    tracemalloc.start()
    try:
        splitter.feed(b'{"huge":"')
        for _ in range(total // len(chunk)):
            assert splitter.feed(chunk) == []
            assert splitter.buffered <= max_line + 1
        out = splitter.feed(b'"}\n{"next":1}\n')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out[1] == b'{"next":1}'
    oversized = out[0]
    assert isinstance(oversized, OversizedFrame)
    assert oversized.size == total + len(b'{"huge":"') + 2
    assert oversized.head.startswith(b'{"huge":"aaa')
    assert len(oversized.head) == HEAD_SIZE
    assert peak < 4 * max_line


def test_max_line_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_line"):
        LineSplitter(max_line=0)


def test_encode_frame() -> None:
    assert encode_frame(b'{"a":1}') == b'{"a":1}\n'
    assert LineSplitter().feed(encode_frame(b'{"a":1}')) == [b'{"a":1}']


stream_bytes = st.lists(st.sampled_from([b"a", b"{}", b"\n", b"\r", b" ", b"\r\n", b"xyz"]), max_size=60).map(
    b"".join
)


@settings(max_examples=400, deadline=None)
@given(
    data=stream_bytes,
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    max_line=st.integers(1, 12),
)
def test_any_chunking_gives_the_same_frames(data: bytes, cuts: list[int], max_line: int) -> None:
    points = sorted({min(cut, len(data)) for cut in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    splitter = LineSplitter(max_line=max_line)
    assert feed_all(splitter, *chunks) == reference(data, max_line)
    assert splitter.buffered <= max_line + 1
