"""The cross-run phase cache: what each cacheable phase's work depends on.

A phase's fingerprint is a hash of its inputs, nothing else. Fetch, Analyze
and Setup run before the model is attached and hash to model-free values, so a
sweep of models over one benchmark fetches and sets it up once; Atomize folds
in the model's configuration, because a Driver may write a different scorer
for a different model. A phase whose fingerprint matches a cell another run
recorded copies that run's artifacts and snapshot instead of working.
"""

from typing import Any

from benchwright_orchestrator.domain import Run
from benchwright_shared.hashing import canonical_json, fingerprint12, sha256_hex

CACHEABLE_PHASES = ("fetch", "analyze", "setup", "atomize")
# Bump when what a phase produces changes for the same inputs.
PHASE_LOGIC_VERSION = {"fetch": 1, "analyze": 1, "setup": 1, "atomize": 1}

# The events a cache hit copies from the run that recorded the cell, by phase.
CELL_EVENTS = {
    "fetch": ("FetchArtifact",),
    "analyze": ("AnalyzeArtifact", "SyntheticSubsetCreated", "DatasetTasksArtifact"),
    "setup": ("SetupArtifact",),
    "atomize": ("AtomizeArtifact",),
}


def cacheable(phase: str, run: Run) -> bool:
    """Whether ``phase`` of ``run`` may be copied from a cell. A harness run's Setup
    is not: it lays the run's own task files and lists their samples (seconds)."""
    return phase in CACHEABLE_PHASES and run.harness_name is None


def phase_inputs(phase: str, run: Run, driver: str, driver_model: str | None) -> dict[str, Any]:
    """The inputs of ``phase`` for ``run`` as it stands when the phase starts."""
    common = {"phase": phase, "version": PHASE_LOGIC_VERSION[phase]}
    if phase == "fetch":
        # Subsets are content-addressed: the id names the rows.
        return {**common, "subset_id": run.subset_id}
    content = run.dataset.get("content_sha256")
    if phase == "analyze":
        return {
            **common,
            "content_sha256": content,
            "scope": run.scope,
            "cap": run.limit,
            "driver": [driver, driver_model],
        }
    if phase == "setup":
        return {**common, "content_sha256": content, "impl_id": run.impl_id}
    if phase == "atomize":
        analysis = run.artifacts.analysis or {}
        return {
            **common,
            "content_sha256": content,
            "schema_sha256": sha256_hex(canonical_json(analysis.get("schema") or {})),
            "kind": analysis.get("kind"),
            "candidates": analysis.get("candidates"),
            "driver": [driver, driver_model],
            "guidance": run.guidance,
            "model_config_sha256": run.artifacts.model_config_sha256,
        }
    raise KeyError(phase)


def phase_fingerprint(inputs: dict[str, Any]) -> str:
    return fingerprint12(canonical_json(inputs))
