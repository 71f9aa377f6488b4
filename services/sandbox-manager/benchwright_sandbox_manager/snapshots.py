"""Snapshots: a sandbox's files as a deterministic, content-addressed tar.gz.

The same files give the same archive byte for byte (entries sorted, mtimes,
owners and gzip header zeroed, modes reduced to 0644/0755), so the same files
give the same ``snap_<12 hex of sha256>`` id. Archives live under the
sandbox-manager's data directory and outlive the service and the sandbox.
``__pycache__`` directories are left out: they are derived, and they carry
timestamps that would make every snapshot unique.
"""

import contextlib
import gzip
import hashlib
import os
import re
import stat
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchwright_sandbox_manager.ports import BackendError

SNAPSHOT_ID = re.compile(r"^snap_[0-9a-f]{12}$")
# ``.bw`` holds what the platform hands a command (the egress CA), not its work.
SKIPPED_DIRS = frozenset({"__pycache__", ".bw"})


class SnapshotNotFoundError(BackendError):
    """No archive is stored under that snapshot id."""


def _entries(top: Path, prefix: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    with os.scandir(top) as it:
        children = sorted(it, key=lambda e: e.name)
    for entry in children:
        name = f"{prefix}{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            if entry.name in SKIPPED_DIRS:
                continue
            yield name, entry
            yield from _entries(Path(entry.path), f"{name}/")
        else:
            yield name, entry


def pack(directory: Path, dest: Path) -> None:
    """Archive ``directory``'s regular files, directories and symlinks into ``dest``.

    Anything else (sockets, fifos, devices) is left out.
    """
    with (
        open(dest, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, entry in _entries(directory):
            st = entry.stat(follow_symlinks=False)
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(entry.path)
                info.mode = 0o777
                tar.addfile(info)
            elif stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
                info.size = st.st_size
                with open(entry.path, "rb") as f:
                    tar.addfile(info, f)


def _restore_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    if not (member.isreg() or member.isdir() or member.issym()):
        raise tarfile.SpecialFileError(member)
    # ``tar_filter`` refuses absolute names and anything landing outside ``dest``
    # (through ``..`` or through a symlink unpacked earlier).
    member = tarfile.tar_filter(member, dest)
    # Restored files are new files: owned by us, stamped now. ``None`` means "leave
    # as is" to ``extractall`` (documented, though typeshed does not say so).
    unset: dict[str, Any] = dict.fromkeys(("mtime", "uid", "gid", "uname", "gname"))
    return member.replace(**unset, deep=False)


def unpack(archive: Path, directory: Path) -> None:
    """Unpack an archive written by ``pack`` into ``directory``."""
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            tar.extractall(directory, filter=_restore_filter)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BackendError(f"cannot restore snapshot {archive.name}: {exc}") from exc


class SnapshotStore:
    """Content-addressed snapshot archives in one directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, snapshot_id: str) -> Path:
        """Where ``snapshot_id``'s archive is; ``SnapshotNotFoundError`` if it is not."""
        if SNAPSHOT_ID.match(snapshot_id):
            path = self.root / f"{snapshot_id}.tar.gz"
            if path.is_file():
                return path
        raise SnapshotNotFoundError(f"no snapshot {snapshot_id!r}")

    def exists(self, snapshot_id: str) -> bool:
        try:
            self.path(snapshot_id)
        except SnapshotNotFoundError:
            return False
        return True

    def scratch(self) -> Path:
        """A fresh temporary path beside the archives, for ``add`` to adopt."""
        return self.root / f".tmp-{uuid.uuid4().hex}.tar.gz"

    def add(self, scratch: Path) -> tuple[str, int]:
        """Adopt a finished archive under its content id: ``(snapshot_id, size_bytes)``.

        An archive already stored under the same id is kept and ``scratch`` dropped.
        """
        digest = hashlib.sha256()
        size = 0
        with open(scratch, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        snapshot_id = f"snap_{digest.hexdigest()[:12]}"
        target = self.root / f"{snapshot_id}.tar.gz"
        if target.exists():
            scratch.unlink()
        else:
            with open(scratch, "rb") as f:
                os.fsync(f.fileno())
            os.replace(scratch, target)
        return snapshot_id, size

    def discard(self, scratch: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            scratch.unlink()
