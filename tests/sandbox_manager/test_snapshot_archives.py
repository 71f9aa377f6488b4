"""Snapshot archives without a server: deterministic, content-addressed, safe to unpack."""

import io
import os
import tarfile
from pathlib import Path

import pytest

from benchwright_sandbox_manager.ports import BackendError, UnsafePathError, safe_relative_path
from benchwright_sandbox_manager.snapshots import (
    SnapshotNotFoundError,
    SnapshotStore,
    pack,
    unpack,
)


def make_tree(root: Path, mtime: int) -> None:
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "sub" / "__pycache__" / "m.cpython-312.pyc").write_bytes(os.urandom(16))
    (root / "b.txt").write_text("b")
    (root / "sub" / "a.sh").write_text("#!/bin/sh\n")
    (root / "sub" / "a.sh").chmod(0o700)
    (root / "link").symlink_to("b.txt")
    for path in [root / "b.txt", root / "sub" / "a.sh", root / "sub"]:
        os.utime(path, (mtime, mtime))


def test_the_same_files_give_the_same_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    ids = []
    for name, mtime in [("one", 1_000_000), ("two", 2_000_000)]:
        make_tree(tmp_path / name, mtime)
        scratch = store.scratch()
        pack(tmp_path / name, scratch)
        ids.append(store.add(scratch))
    assert ids[0] == ids[1]
    assert sorted(p.name for p in store.root.iterdir()) == [f"{ids[0][0]}.tar.gz"]
    with tarfile.open(store.path(ids[0][0])) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == ["b.txt", "link", "sub", "sub/a.sh"]  # no bytecode caches
    assert {(m.mtime, m.uid, m.uname) for m in members.values()} == {(0, 0, "")}
    assert members["sub/a.sh"].mode == 0o755 and members["b.txt"].mode == 0o644

    restored = tmp_path / "restored"
    restored.mkdir()
    unpack(store.path(ids[0][0]), restored)
    assert (restored / "sub" / "a.sh").read_text() == "#!/bin/sh\n"
    assert os.access(restored / "sub" / "a.sh", os.X_OK)
    assert os.readlink(restored / "link") == "b.txt"


def test_an_archive_reaching_outside_is_refused(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"no"))
    target = tmp_path / "sandbox"
    target.mkdir()
    with pytest.raises(BackendError, match="outside"):
        unpack(evil, target)
    assert not (tmp_path / "outside.txt").exists()


def test_snapshot_ids_are_checked_before_they_name_a_file(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    (tmp_path.parent / "x.tar.gz").write_bytes(b"")
    for bad in ["../x", "snap_../../x", "snap_0123456789ab"]:
        assert not store.exists(bad)
        with pytest.raises(SnapshotNotFoundError):
            store.path(bad)


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../b", "", ".", "a\\..\\b"])
def test_unsafe_paths_are_named(path: str) -> None:
    with pytest.raises(UnsafePathError, match="path"):
        safe_relative_path(path)


def test_plain_paths_pass() -> None:
    assert safe_relative_path("data/./tasks.jsonl") == "data/tasks.jsonl"
