"""The built-in catalog, built once per installation and kept on disk.

Building it reads and re-serialises ~31,000 rows from the data packages (about
0.8 s of CPU, most of a registry's start). The result depends only on the
registry's own catalog code and on the data files it read, so it is kept in a
file named after a hash of that code, beside a list of the data files with their
sizes and modification times. A later start whose code hash and data files
match loads the file instead (tens of milliseconds); anything else, a changed
file, a different package version, a damaged or foreign cache file, builds it
again. The file is pickled: it is written and read only by this user's own
registry, in this user's own cache directory.
"""

import contextlib
import hashlib
import logging
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchwright_registry.catalog.base import recording_data_files
from benchwright_registry.domain import Catalog
from benchwright_shared.scorers import SCORERS, scorer_source

log = logging.getLogger(__name__)

# Bump when the cached file's layout changes in a way the code hash would not show.
FORMAT = 1
# The registry code a built catalog depends on (relative to the package root); the
# scorers it ships (``benchwright_shared.scorers``) are hashed too.
CODE = ("catalog", "domain", "application/__init__.py")

type Manifest = list[tuple[str, int, int]]


def code_hash() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"format {FORMAT}".encode())
    for part in CODE:
        path = root / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            h.update(str(file.relative_to(root)).encode())
            h.update(file.read_bytes())
    for scorer in SCORERS:
        h.update(f"scorer {scorer}".encode())
        h.update(scorer_source(scorer).encode())
    return h.hexdigest()[:16]


def _manifest(paths: list[Path]) -> Manifest:
    out: Manifest = []
    for path in sorted(set(paths)):
        st = path.stat()
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return out


def _still_true(manifest: Manifest) -> bool:
    try:
        return _manifest([Path(p) for p, _, _ in manifest]) == manifest
    except OSError:
        return False


def cached_catalog(cache_dir: Path | None, build: Callable[[], Catalog]) -> Catalog:
    """``build()``'s catalog, from ``cache_dir`` when a valid copy is there."""
    if cache_dir is None:
        return build()
    file = cache_dir / f"catalog-{code_hash()}.pickle"
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError):
        with file.open("rb") as f:
            manifest, catalog = pickle.load(f)
        if isinstance(catalog, Catalog) and _still_true(manifest):
            return catalog
        log.info("catalog cache %s is stale; building the catalog again", file)
    with recording_data_files() as read:
        catalog = build()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Another registry may be writing the same file: each writes its own and renames.
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".catalog-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump((_manifest(read), catalog), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, file)
    except OSError as exc:  # a read-only home, a full disk: run without the cache
        log.warning("could not keep the catalog in %s: %s", cache_dir, exc)
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)
    return catalog
