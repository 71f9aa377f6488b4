"""Which phases a run executes, and which tasks it sweeps. Pure rules, no I/O.

The skip rules (concepts section 2): Find runs only when the benchmark is not
resolved yet (natural-language launches); Analyze and Atomize run only when
there is no scorer to reuse; a replay rewinds to Materialize, so it runs only
Attach (the new model), Materialize and Report, unless its rolling subset grew
since the parent ran: then it fetches and sets up the current snapshot first
(the scorer is still the parent's); a fork starts with the Fork phase and then
runs its parent's plan from the rewind point on; a rescore inherits its parent's
dataset and selection, sets up its own scorer, and sweeps the parent's recorded
outputs through it (Attach only for a scorer's own calls: the model is never asked).
"""

from typing import Any

ALL_PHASES = (
    "fork",
    "find",
    "fetch",
    "analyze",
    "setup",
    "attach",
    "atomize",
    "materialize",
    "report",
)
# A fork may rewind to any phase after Find: the benchmark identity is inherited.
FORKABLE_PHASES = ("fetch", "analyze", "setup", "attach", "atomize", "materialize")
# Phases after which the work sandbox is snapshotted.
SNAPSHOT_PHASES = ("fetch", "setup", "atomize")
# Halts a run can wait out; every other halt ends it.
RESUMABLE_HALTS = ("agent_review", "operator_pause", "restart_cap_exceeded")
MAX_RESTARTS = 2


class PlanError(ValueError):
    """A launch asks for a shape the pipeline cannot run."""


BRIDGE_HARNESSES = ("inspect", "lmeval", "lighteval", "harbor")


def plan_phases(
    mode: str,
    *,
    has_impl: bool,
    from_phase: str | None = None,
    harness: str | None = None,
    new_snapshot: bool = False,
) -> list[str]:
    """The phases a run of ``mode`` executes, in order.

    ``new_snapshot``: a replay runs on a newer snapshot of its parent's rolling
    subset, whose rows it must fetch and set up itself.
    """
    if harness in BRIDGE_HARNESSES and mode in ("natural_language", "pinned"):
        # The harness brings its scorer, and its task names the benchmark. A task file
        # brings its data too; a pinned one (an inspect_evals task) is fed a catalog
        # subset, which Fetch lays into the sandbox. A pinned Harbor run's tasks are in
        # its harness already (the gateway read them from the registry, decision 0050).
        fetch = ["fetch"] if mode == "pinned" and harness != "harbor" else []
        return [*fetch, "setup", "attach", "materialize", "report"]
    if mode == "natural_language":
        return ["find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report"]
    if mode == "pinned":
        authoring = [] if has_impl else ["analyze"]
        atomize = [] if has_impl else ["atomize"]
        return ["fetch", *authoring, "setup", "attach", *atomize, "materialize", "report"]
    if mode == "replay":
        if new_snapshot:
            return ["fetch", "setup", "attach", "materialize", "report"]
        return ["attach", "materialize", "report"]
    if mode == "rescore":
        return ["setup", "attach", "materialize", "report"]
    if mode == "fork":
        if from_phase not in FORKABLE_PHASES:
            raise PlanError(
                f"cannot fork from {from_phase!r}; choose one of {', '.join(FORKABLE_PHASES)}"
            )
        full = plan_phases("pinned", has_impl=False)
        return ["fork", *full[full.index(from_phase) :]]
    raise PlanError(f"unknown launch mode {mode!r}")


def inherited_phases(from_phase: str) -> list[str]:
    """The phases whose artifacts a fork from ``from_phase`` takes from its parent."""
    order = [p for p in ALL_PHASES if p not in ("fork", "find")]
    return order[: order.index(from_phase)]


def is_resumable_halt(halt_reason: str | None) -> bool:
    """Whether a halt parks the run (waiting for a person) rather than ending it."""
    return bool(halt_reason) and any(
        halt_reason == r or halt_reason.startswith(f"{r}:")  # type: ignore[union-attr]
        for r in RESUMABLE_HALTS
    )


def selected_indices(selection: dict[str, Any], total: int) -> list[int]:
    """The row indices a selection names, in sweep order."""
    kind = selection.get("kind", "all")
    if kind == "all":
        return list(range(total))
    if kind == "first_n":
        limit = selection.get("limit")
        return list(range(total if limit is None else min(total, int(limit))))
    if kind == "indices":
        return [int(i) for i in selection["indices"] if 0 <= int(i) < total]
    raise PlanError(f"unknown selection kind {kind!r}")


def scope_selection(
    scope: dict[str, Any],
    *,
    category_indices: dict[str, list[int]] | None = None,
    cap: int | None = None,
) -> dict[str, Any]:
    """Turn a request's scope ("first 20", "one per category") and the launch cap
    into a selection. The narrowest of scope and cap wins."""
    kind = scope.get("kind", "all")
    if kind == "per_category":
        per = int(scope.get("n") or 1)
        if not category_indices:
            raise PlanError("the request asks for samples per category, but rows have none")
        picked = sorted(i for idx in category_indices.values() for i in idx[:per])
        if cap is not None:
            picked = picked[:cap]
        return {"kind": "indices", "indices": picked, "reason": f"{per} per category"}
    limits = [c for c in (scope.get("n") if kind == "first_n" else None, cap) if c is not None]
    if limits:
        return {"kind": "first_n", "limit": min(int(c) for c in limits)}
    return {"kind": "first_n", "limit": None}


def narrow_selection(
    parent: dict[str, Any], total: int, indices: list[int] | None
) -> dict[str, Any]:
    """A replay's selection: the parent's, optionally cut down to ``indices``."""
    if indices is None:
        return parent
    allowed = set(selected_indices(parent, total))
    kept = [i for i in indices if i in allowed]
    return {"kind": "indices", "indices": kept, "reason": "replay slice"}


def replay_selection(
    base: dict[str, Any], total: int, indices: list[int] | None, limit: int | None
) -> dict[str, Any]:
    """A replay's selection: ``base`` (the parent's, or the whole of a newer
    snapshot) cut to ``indices``, then to the first ``limit`` of what is left."""
    selection = narrow_selection(base, total, indices)
    if limit:
        chosen = selected_indices(selection, total)[:limit]
        selection = {"kind": "indices", "indices": chosen, "reason": "replay slice"}
    return selection


def resolve_backend(compute: str | None, default: str, configured_remote: list[str]) -> str:
    """The sandbox backend a launch's ``compute`` names.

    ``default`` (or nothing) is the deployment's default; ``auto`` is the first
    remote backend the deployment has configured, else ``local``; anything else
    is already a backend's name (the launch contract admits only known ones).
    """
    if compute in (None, "default"):
        return default
    if compute == "auto":
        return configured_remote[0] if configured_remote else "local"
    return compute
