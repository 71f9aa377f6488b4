"""Fanout Materialize: which mode a run gets (``phases/materialize.py`` runs it).

Sequential Materialize runs every task in the shared work sandbox; fanout gives
each task its own ephemeral task sandbox, restored from the run's latest
snapshot (normally Atomize's, so ``task_impl.py`` is already there) and killed
when the task finishes. The scorer does not choose: ``materialize_mode`` picks
from the run's infrastructure alone (concepts §4), and an operator's
``BW_MATERIALIZE_MODE`` overrides it.
"""

from typing import Literal

MaterializeMode = Literal["sequential", "fanout"]

MODE_OVERRIDES = ("auto", "sequential", "fanout")
# The harness that runs our own Driver-authored scorer; any other is a bridge.
OWN_HARNESS = "benchwright"


def explain_materialize_mode(
    *, backend: str, harness: str | None, product_snapshot: bool, override: str
) -> tuple[MaterializeMode, str]:
    """``materialize_mode`` and the reason for it, in words for the run's log."""
    if override not in MODE_OVERRIDES:
        raise ValueError(f"materialize mode override must be one of {MODE_OVERRIDES}: {override!r}")
    if override == "sequential":
        return "sequential", "set by BW_MATERIALIZE_MODE"
    if override == "fanout":
        return "fanout", "set by BW_MATERIALIZE_MODE"
    if product_snapshot:
        return "fanout", "a product-sandbox run restores its snapshot into a sandbox per task"
    if harness is not None and harness != OWN_HARNESS:
        return "sequential", f"the {harness} harness bridge runs in the work sandbox"
    if backend == "e2b":
        return "fanout", "e2b spawns fast enough for a sandbox per task"
    return "sequential", f"the {backend} backend runs every task in the work sandbox"


def materialize_mode(
    *, backend: str, harness: str | None, product_snapshot: bool, override: str
) -> MaterializeMode:
    """How Materialize runs, from the run's infrastructure alone (concepts §4).

    In order: a product-sandbox run with a snapshot to restore gets fanout; a
    harness-bridge run (any harness but ``benchwright``) gets sequential; an
    e2b run gets fanout; everything else gets sequential. ``override``
    (``auto`` | ``sequential`` | ``fanout``) wins unless it is ``auto``.
    """
    mode, _ = explain_materialize_mode(
        backend=backend, harness=harness, product_snapshot=product_snapshot, override=override
    )
    return mode
