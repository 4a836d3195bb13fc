"""ConfinedFiles: fs/read_text_file and fs/write_text_file inside one directory, and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpio.errors import InternalError, InvalidParams, ResourceNotFound
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
    with pytest.raises(InvalidParams, match="resolves to"):
        read(files, root / "link.txt")
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
