"""Identifiers.

Run ids are random UUIDs. Catalog ids that must be the same on every install
(the built-in benchmarks) are UUID5s of their names, so a run recorded on one
machine names the same benchmark on another.
"""

import secrets
import uuid

from benchwright_shared.hashing import fingerprint12

NAMESPACE = uuid.UUID("6f1f1b3e-8f7a-4f3c-9a59-4e0d8c7b2a10")
PAT_PREFIX = "bw_live_pat_"


def new_run_id() -> str:
    """A fresh run id (a bare UUID, as the API shows it)."""
    return str(uuid.uuid4())


def new_command_id() -> str:
    """A fresh command id; JetStream drops a re-send with the same one."""
    return str(uuid.uuid4())


def stable_uuid(*parts: str) -> uuid.UUID:
    """A UUID5 derived from ``parts``: the same inputs give the same id everywhere."""
    return uuid.uuid5(NAMESPACE, "\x1f".join(parts))


def benchmark_id_for(name: str) -> str:
    """The catalog id of a built-in benchmark, derived from its name."""
    return f"bm_{stable_uuid('benchmark', name.lower())}"


def impl_id_for(scope_id: str, code: str) -> str:
    """``<benchmark_id>:<12 hex of sha256(task_impl.py)>``."""
    return f"{scope_id}:{fingerprint12(code)}"


def new_pat() -> str:
    """A personal access token; shown once, stored only as a hash."""
    return PAT_PREFIX + secrets.token_urlsafe(32)
