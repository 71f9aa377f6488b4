"""The run fingerprint: which fields of which artifacts make two runs comparable.

One rule per artifact type, here and nowhere else. Only load-bearing fields
count: a proxy's port or a sandbox path would make identical experiments look
different.
"""

from collections.abc import Iterable
from typing import Any

from benchwright_shared.hashing import canonical_json, fingerprint_records

LOAD_BEARING_FIELDS: dict[str, tuple[str, ...]] = {
    "FetchArtifact": ("source", "content_sha256"),
    "AnalyzeArtifact": ("schema_sha256", "subsets"),
    "DatasetTasksArtifact": ("benchmark_id", "subset_id", "content_sha256", "selection"),
    "SetupArtifact": ("impl_id", "impl_sha256"),
    "AtomizeArtifact": ("impl_id",),
    "ModelProxyArtifact": ("model_id", "litellm_config_yaml"),
}


def is_artifact(event_type: str) -> bool:
    return event_type.endswith("Artifact")


def load_bearing(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """The part of an artifact that feeds the fingerprint."""
    fields = LOAD_BEARING_FIELDS.get(event_type)
    if fields is None:
        # An artifact type without a rule is a bug: hashing all of it would
        # silently fold noise into the fingerprint.
        raise KeyError(f"no fingerprint rule for {event_type}")
    return {"type": event_type, **{f: data.get(f) for f in fields}}


def run_fingerprint(events: Iterable[tuple[str, dict[str, Any]]]) -> tuple[str, list[str]]:
    """Fingerprint of a run from its ``(type, data)`` events, in log order.

    Returns the 12-hex fingerprint and the canonical records it was derived from.
    """
    records = [load_bearing(t, d) for t, d in events if is_artifact(t)]
    return fingerprint_records(records), [canonical_json(r) for r in records]
