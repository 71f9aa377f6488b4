"""Snapshots of an e2b sandbox, on this side of the wire.

The sandbox's ``tar`` is not deterministic (mtimes, owners, order), so its
archive is unpacked here into scratch space and packed again by ``snapshots.pack``:
the same files give the same archive, and the same snapshot id, as on ``local``.
"""

import gzip
import shutil
import tarfile
from pathlib import Path
from typing import Any

from benchwright_sandbox_manager.ports import BackendError
from benchwright_sandbox_manager.snapshots import pack


def _keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    # What ``pack`` would leave out (fifos, sockets, devices) is skipped, not refused.
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return None
    # Absolute names and anything landing outside ``dest`` are refused.
    member = tarfile.tar_filter(member, dest)
    # Only the exec bit survives ``pack``; ours to read, whoever owned it inside.
    owner_rw = 0o700 if member.isdir() else 0o600
    unset: dict[str, Any] = dict.fromkeys(("uid", "gid", "uname", "gname"))
    return member.replace(mode=(member.mode or 0) | owner_rw, **unset, deep=False)


def repack(sandbox_tar: Path, dest: Path, scratch: Path) -> None:
    """Turn a plain tar made in the sandbox into a deterministic ``pack`` archive."""
    scratch.mkdir(parents=True)
    try:
        with tarfile.open(sandbox_tar, mode="r:") as tar:
            tar.extractall(scratch, filter=_keep)
        pack(scratch, dest)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BackendError(f"cannot snapshot the sandbox's files: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gunzip(archive: Path, dest: Path) -> None:
    """Write ``archive`` (a ``pack`` tar.gz) uncompressed to ``dest``, for the sandbox's tar."""
    try:
        with gzip.open(archive, "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (OSError, EOFError) as exc:
        raise BackendError(f"cannot read snapshot {archive.name}: {exc}") from exc
