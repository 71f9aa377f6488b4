"""What a run's phases produced: the dataset, its analysis, the selection, the
scorer, the sandbox snapshots, and the ordered record the run fingerprint covers.

Later phases (and resumes, replays, forks) rebuild their state from this part of
the run. ``Run`` applies the artifact events and calls in; this class knows
nothing of events.
"""

from dataclasses import dataclass, field
from typing import Any

from benchwright_orchestrator.domain.errors import NoSelectionError
from benchwright_orchestrator.plan import SNAPSHOT_PHASES, selected_indices
from benchwright_shared.fingerprint import load_bearing, run_fingerprint
from benchwright_shared.hashing import sha256_hex

__all__ = ["Artifacts"]


@dataclass
class Artifacts:
    """The run's artifacts so far. State is plain JSON: snapshots store it as such."""

    # [type, load-bearing data] of every artifact in log order: what the fingerprint
    # covers. A replay or fork copies its parent's under the same type, so its
    # fingerprint covers them alike.
    record: list[list[Any]] = field(default_factory=list)
    dataset: dict[str, Any] = field(default_factory=dict)
    analysis: dict[str, Any] | None = None
    selection: dict[str, Any] | None = None
    selected_tasks: int | None = None
    scorer: dict[str, Any] | None = None  # impl_id, impl_sha256, code
    snapshots: dict[str, str] = field(default_factory=dict)  # phase -> snapshot id
    model_config_sha256: str | None = None
    phase_fingerprints: dict[str, str] = field(default_factory=dict)
    # [name, sha256] of each log a third-party harness wrote that the run keeps; kept
    # outside the fingerprint (they hold timestamps).
    harness_logs: list[list[str]] = field(default_factory=list)

    def add(self, event_type: str, data: dict[str, Any]) -> None:
        """Put an artifact's load-bearing part on the fingerprint's record."""
        self.record.append([event_type, load_bearing(event_type, data)])

    def fetched(
        self,
        source: str,
        content_sha256: str,
        total_tasks: int,
        bucket: str | None,
        object_name: str | None,
    ) -> None:
        self.dataset = {
            "source": source,
            "content_sha256": content_sha256,
            "total_tasks": total_tasks,
            "bucket": bucket,
            "object_name": object_name,
        }
        self.add("FetchArtifact", {"source": source, "content_sha256": content_sha256})

    def analyzed(
        self,
        kind: str,
        schema: dict[str, Any],
        schema_sha256: str,
        subsets: list[str],
        fields: dict[str, Any],
        candidates: list[str],
        evidence: list[str],
    ) -> None:
        """What Analyze made of the dataset; its schema's hash and subsets are load-bearing."""
        self.analysis = {
            "kind": kind,
            "schema": schema,
            "fields": fields,
            "candidates": candidates,
            "evidence": evidence,
        }
        self.add("AnalyzeArtifact", {"schema_sha256": schema_sha256, "subsets": subsets})

    def tasks_selected(
        self,
        benchmark_id: str,
        subset_id: str,
        total_tasks: int,
        selected_tasks: int,
        content_sha256: str,
        selection: dict[str, Any],
    ) -> None:
        """The sweep's tasks; a dataset not fetched by this run (a replay's) takes its
        size and hash from here."""
        self.selected_tasks = selected_tasks
        self.selection = selection
        self.dataset.setdefault("total_tasks", total_tasks)
        self.dataset.setdefault("content_sha256", content_sha256)
        self.add(
            "DatasetTasksArtifact",
            {
                "benchmark_id": benchmark_id,
                "subset_id": subset_id,
                "content_sha256": content_sha256,
                "selection": selection,
            },
        )

    def scorer_chosen(self, impl_id: str, impl_sha256: str | None, code: str | None) -> None:
        self.scorer = {"impl_id": impl_id, "impl_sha256": impl_sha256, "code": code}

    def model_configured(self, model_id: str, litellm_config_yaml: str) -> None:
        self.add(
            "ModelProxyArtifact", {"model_id": model_id, "litellm_config_yaml": litellm_config_yaml}
        )
        self.model_config_sha256 = sha256_hex(f"{model_id}\x1e{litellm_config_yaml}")

    def selected(self) -> list[int]:
        """The task indices the run sweeps, in order."""
        if self.selection is None:
            raise NoSelectionError("no tasks were selected for this run")
        total = int(self.dataset.get("total_tasks") or self.selected_tasks or 0)
        return selected_indices(self.selection, total)

    def fingerprint(self) -> str | None:
        """The run fingerprint over the artifacts recorded so far (None before any)."""
        if not self.record:
            return None
        return run_fingerprint((t, d) for t, d in self.record)[0]

    def latest_snapshot(self) -> str | None:
        """The snapshot of the furthest phase on record: what a new work sandbox restores."""
        for phase in reversed(SNAPSHOT_PHASES):
            if phase in self.snapshots:
                return self.snapshots[phase]
        return None
