"""Canonical JSON and SHA-256 fingerprints.

Canonical JSON (sorted keys, no insignificant whitespace, UTF-8) is what every
hash in Benchwright is taken over, so a hash recorded on one machine is the hash
recomputed on another.
"""

import hashlib
import json
from collections.abc import Iterable
from typing import Any

RECORD_SEPARATOR = "\x1e"


def canonical_json(value: Any) -> str:
    """Serialise ``value`` deterministically."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: str | bytes) -> str:
    """Full hex SHA-256 of text (UTF-8) or bytes."""
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def fingerprint12(data: str | bytes) -> str:
    """The 12-hex-character prefix used for impl ids and run fingerprints."""
    return sha256_hex(data)[:12]


def fingerprint_records(records: Iterable[Any]) -> str:
    """Hash a sequence of JSON values: canonicalised, joined by a record separator."""
    return fingerprint12(RECORD_SEPARATOR.join(canonical_json(r) for r in records))
