"""ConfinedFiles: fs/read_text_file and fs/write_text_file inside one directory, and nowhere else."""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from acpio.errors import InternalError, InvalidParams, RequestError, ResourceNotFound
from acpio.oneshot.files import MAX_FILE_SIZE, ConfinedFiles, select_lines
from acpio.schema import ReadTextFileRequest, WriteTextFileRequest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    return project


def read(files: ConfinedFiles, path: Path | str, line: int | None = None, limit: int | None = None) -> str:
    return files.read(ReadTextFileRequest(session_id="s", path=str(path), line=line, limit=limit)).content


def write(files: ConfinedFiles, path: Path | str, content: str) -> None:
    files.write(WriteTextFileRequest(session_id="s", path=str(path), content=content))


def test_reads_a_file_inside_the_root(root: Path) -> None:
    assert read(ConfinedFiles(root), root / "notes.txt") == "one\ntwo\nthree\n"


def test_line_and_limit_select_lines_with_their_endings(root: Path) -> None:
    files = ConfinedFiles(root)
    assert read(files, root / "notes.txt", line=2) == "two\nthree\n"
    assert read(files, root / "notes.txt", line=2, limit=1) == "two\n"
    assert read(files, root / "notes.txt", limit=2) == "one\ntwo\n"
    assert read(files, root / "notes.txt", line=9) == ""


def test_crlf_line_endings_are_kept(root: Path) -> None:
    (root / "dos.txt").write_bytes(b"a\r\nb\r\nc")
    files = ConfinedFiles(root)
    assert read(files, root / "dos.txt") == "a\r\nb\r\nc"
    assert read(files, root / "dos.txt", line=2, limit=1) == "b\r\n"


@pytest.mark.parametrize(
    ("text", "line", "limit", "expected"),
    [
        ("a\nb\nc", None, None, "a\nb\nc"),
        ("a\nb\nc", 3, None, "c"),
        ("a\nb\nc", 0, 1, "a\n"),  # 0 is taken as the first line
        ("a\nb\nc\n", 3, 5, "c\n"),
        ("a\nb", 1, 0, ""),
        ("", 1, 1, ""),
    ],
)
def test_select_lines(text: str, line: int | None, limit: int | None, expected: str) -> None:
    assert select_lines(text, line, limit) == expected


def test_a_path_outside_the_root_is_refused_naming_the_path_and_the_root(root: Path) -> None:
    files = ConfinedFiles(root)
    with pytest.raises(InvalidParams) as caught:
        read(files, "/etc/hostname")
    assert caught.value.code == -32602
    assert "/etc/hostname" in caught.value.message
    assert str(root) in caught.value.message
    assert caught.value.data == {"path": "/etc/hostname", "root": str(root)}


def test_dot_dot_cannot_climb_out_of_the_root(root: Path) -> None:
    (root.parent / "secret.txt").write_text("secret")
    with pytest.raises(InvalidParams, match="outside"):
        read(ConfinedFiles(root), f"{root}/../secret.txt")


def test_a_symlink_pointing_out_of_the_root_is_refused(root: Path) -> None:
    (root.parent / "secret.txt").write_text("secret")
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    files = ConfinedFiles(root)
    with pytest.raises(InvalidParams) as caught:
        read(files, root / "link.txt")
    assert f"the symbolic link {root}/link.txt -> {root.parent}/secret.txt leads outside {root}" in (
        caught.value.message
    )
    with pytest.raises(InvalidParams, match="outside"):
        write(files, root / "link.txt", "overwritten")
    assert (root.parent / "secret.txt").read_text() == "secret"


def test_a_symlink_inside_the_root_is_followed(root: Path) -> None:
    os.symlink(root / "notes.txt", root / "alias.txt")
    assert read(ConfinedFiles(root), root / "alias.txt") == "one\ntwo\nthree\n"


def test_the_root_given_through_a_symlink_still_contains_its_files(root: Path) -> None:
    link = root.parent / "link-to-project"
    os.symlink(root, link)
    assert read(ConfinedFiles(link), link / "notes.txt").startswith("one")


def test_a_relative_path_is_refused(root: Path) -> None:
    with pytest.raises(InvalidParams, match="absolute"):
        read(ConfinedFiles(root), "notes.txt")


def test_a_missing_file_is_resource_not_found(root: Path) -> None:
    with pytest.raises(ResourceNotFound, match="no such file"):
        read(ConfinedFiles(root), root / "missing.txt")


def test_a_directory_or_binary_or_huge_file_is_refused(root: Path) -> None:
    files = ConfinedFiles(root)
    with pytest.raises(InvalidParams, match="directory"):
        read(files, root)
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InvalidParams, match="not UTF-8"):
        read(files, root / "blob.bin")
    with open(root / "huge.txt", "wb") as huge:
        huge.truncate(MAX_FILE_SIZE + 1)
    with pytest.raises(InvalidParams, match="bytes"):
        read(files, root / "huge.txt")


def test_an_unreadable_file_says_why(root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their permissions")
    (root / "locked.txt").write_text("x")
    (root / "locked.txt").chmod(0)
    with pytest.raises(InternalError, match="ermission denied"):
        read(ConfinedFiles(root), root / "locked.txt")


def test_write_replaces_the_file_and_creates_missing_directories(root: Path) -> None:
    files = ConfinedFiles(root)
    write(files, root / "notes.txt", "new\r\ntext")
    assert (root / "notes.txt").read_bytes() == b"new\r\ntext"
    write(files, root / "sub" / "dir" / "new.txt", "héllo")
    assert (root / "sub" / "dir" / "new.txt").read_text(encoding="utf-8") == "héllo"


def test_write_outside_the_root_is_refused_and_writes_nothing(root: Path) -> None:
    target = root.parent / "escaped.txt"
    with pytest.raises(InvalidParams, match="outside"):
        write(ConfinedFiles(root), target, "x")
    assert not target.exists()


def test_the_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="directory"):
        ConfinedFiles(tmp_path / "nope")


# --- confinement under a changing tree, special files, sizes ------------------------------------------

# Swaps ``dir`` (a real directory inside the root) and ``dir.link`` (a link to a directory outside)
# atomically, as fast as it can (renameat2 with RENAME_EXCHANGE), until it is killed.
SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
root, outside = sys.argv[1], sys.argv[2]
real, link = os.path.join(root, "dir").encode(), os.path.join(root, "dir.link").encode()
os.symlink(outside, link)
print("swapping", flush=True)
while True:
    if libc.renameat2(-100, real, -100, link, 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
"""


def _has_rename_exchange() -> bool:
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "renameat2")


@pytest.mark.skipif(not _has_rename_exchange(), reason="needs Linux renameat2 (RENAME_EXCHANGE)")
def test_a_directory_swapped_for_a_link_meanwhile_never_leads_out(root: Path) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text("SECRET")
    (root / "dir").mkdir()
    (root / "dir" / "file.txt").write_text("inside")
    files = ConfinedFiles(root)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root), str(outside)], stdout=subprocess.PIPE, text=True
    )
    seen: list[str] = []
    try:
        assert swapper.stdout is not None
        assert swapper.stdout.readline() == "swapping\n"
        for attempt in range(3000):
            try:
                seen.append(read(files, root / "dir" / "file.txt"))
            except RequestError:  # refused, or the path changed while it was opened: both fine
                seen.append("refused")
            with contextlib.suppress(RequestError):
                write(files, root / "dir" / f"new-{attempt}.txt", "x")
    finally:
        swapper.kill()
        swapper.wait()
    assert swapper.returncode == -9, "the swapper stopped on its own"
    assert "inside" in seen
    assert "refused" in seen  # the race did happen
    assert seen.count("SECRET") == 0, f"{seen.count('SECRET')} reads returned the file outside the root"
    assert sorted(p.name for p in outside.iterdir()) == ["file.txt"], "a write landed outside the root"


def test_links_inside_the_root_are_followed_step_by_step(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.txt").write_text("deep")
    os.symlink("a/b", root / "ab")  # relative
    os.symlink("../notes.txt", root / "a" / "up.txt")  # relative, with ..
    os.symlink(root / "ab", root / "chain")  # absolute, to another link
    files = ConfinedFiles(root)
    assert read(files, root / "chain" / "deep.txt") == "deep"
    assert read(files, root / "a" / "up.txt") == "one\ntwo\nthree\n"
    assert read(files, f"{root}/a/b/../../notes.txt").startswith("one")
    write(files, root / "chain" / "made" / "new.txt", "made")  # directories created behind a link
    assert (root / "a" / "b" / "made" / "new.txt").read_text() == "made"


def test_a_dangling_link_is_written_through_only_inside_the_root(root: Path) -> None:
    os.symlink("created.txt", root / "dangling")
    files = ConfinedFiles(root)
    write(files, root / "dangling", "through the link")
    assert (root / "created.txt").read_text() == "through the link"
    os.symlink(root.parent / "escaped.txt", root / "dangling-out")
    with pytest.raises(InvalidParams, match="outside"):
        write(files, root / "dangling-out", "x")
    assert not (root.parent / "escaped.txt").exists()


def test_a_loop_of_links_is_an_error_not_a_hang(root: Path) -> None:
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    with pytest.raises((InvalidParams, InternalError)):
        read(ConfinedFiles(root), root / "loop-a")


def _in_a_thread(call: Callable[[], object], unblock: Callable[[], object]) -> BaseException | None:
    """Run ``call()`` in a thread; fail if it is still running after 10 s (``unblock()`` frees it then)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        unblock()
        thread.join(10)
        pytest.fail("the call hung on a special file")
    return outcome[0]


def test_a_fifo_is_refused_at_once_for_reading_and_writing(root: Path) -> None:
    fifo = root / "pipe"
    os.mkfifo(fifo)
    files = ConfinedFiles(root)

    def open_other_end(flags: int) -> None:
        fd = os.open(fifo, flags | os.O_NONBLOCK)
        os.close(fd)

    error = _in_a_thread(lambda: read(files, fifo), lambda: open_other_end(os.O_RDWR))
    assert isinstance(error, InvalidParams)
    assert "FIFO" in error.message
    assert "regular file" in error.message
    error = _in_a_thread(lambda: write(files, fifo, "x"), lambda: open_other_end(os.O_RDWR))
    assert isinstance(error, InvalidParams)
    assert "regular file" in error.message


def test_a_device_is_refused_without_reading_it(root: Path) -> None:
    zero = root / "zero"
    try:
        os.mknod(zero, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # what /dev/zero is
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    files = ConfinedFiles(root, max_file_size=1024)
    error = _in_a_thread(lambda: read(files, zero), lambda: None)
    assert isinstance(error, InvalidParams)
    assert "character device" in error.message


def test_the_size_limit_applies_to_reads_and_writes(root: Path) -> None:
    files = ConfinedFiles(root, max_file_size=8)
    assert files.max_file_size == 8
    (root / "small.txt").write_text("12345678")
    assert read(files, root / "small.txt") == "12345678"
    (root / "big.txt").write_text("123456789")
    with pytest.raises(InvalidParams, match="9 bytes") as caught:
        read(files, root / "big.txt")
    assert caught.value.data == {"path": str(root / "big.txt"), "size": 9, "limit": 8}
    with pytest.raises(InvalidParams, match="up to 8 bytes"):
        write(files, root / "out.txt", "123456789")
    assert not (root / "out.txt").exists()


def test_a_write_keeps_the_file_and_its_permissions(root: Path) -> None:
    target = root / "script.sh"
    target.write_text("old content that is longer")
    target.chmod(0o750)
    write(ConfinedFiles(root), target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


# --- long paths: refused at once past the limit, followed in linear time below it -------------------


def test_a_path_of_thousands_of_components_is_refused_at_once_with_a_short_message(root: Path) -> None:
    files = ConfinedFiles(root)
    path = f"{root}{'/a' * 2000}/x.txt"
    components = path.count("/")
    for attempt in (lambda: read(files, path), lambda: write(files, path, "x"), lambda: files.resolve(path)):
        with pytest.raises(InvalidParams) as caught:
            attempt()
        assert caught.value.code == -32602
        assert caught.value.data == {"path": path, "components": components, "limit": 1024}
        assert f"it has {components} components" in caught.value.message
        assert "up to 1024 components" in caught.value.message
        assert len(caught.value.message) < 400  # the 4 KB path is shown shortened
    assert list(root.iterdir()) == [root / "notes.txt"]  # nothing was created


def _deep_tree(top: Path, depth: int) -> Path:
    """``depth`` nested directories ``a`` under ``top`` (made one at a time: deeper than PATH_MAX allows)."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=fd)
        inner = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    made = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(made, b"deep")
    os.close(made)
    os.close(fd)
    return Path(f"{top}{'/a' * depth}/deep.txt")


@pytest.mark.parametrize("through_a_link", [False, True])
def test_following_a_deep_path_takes_system_calls_linear_in_its_depth(
    root: Path, monkeypatch: pytest.MonkeyPatch, through_a_link: bool
) -> None:
    depth = 600
    deep = _deep_tree(root, depth)
    files = ConfinedFiles(root)
    if through_a_link:  # the agent names the root through a link to it, found by comparing each prefix
        os.symlink(root, root.parent / "link")
        deep = root.parent / "link" / deep.relative_to(root)
    calls = 0

    def counting(call: Callable[..., object]) -> Callable[..., object]:
        def counted(*args: object, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            return call(*args, **kwargs)

        return counted

    for name in ("open", "stat", "lstat", "fstat", "readlink"):
        monkeypatch.setattr(os, name, counting(getattr(os, name)))
    assert read(files, deep) == "deep"
    assert files.resolve(str(deep.parent)) == root.joinpath(*["a"] * depth)
    monkeypatch.undo()
    # Each component is opened (and compared with the root) a bounded number of times.
    assert calls < 8 * depth, f"{calls} system calls for a path of {depth} components"
