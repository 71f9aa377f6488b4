"""The pipeline's phases: plain functions over a ``PhaseContext``, looked up by name.

Each reads what earlier phases recorded on the run (``run.dataset``,
``run.artifacts.analysis``, ``run.scorer`` ...) rather than anything held in memory, so it
runs the same after a restart, in a replay or in a fork. ``pipeline.py``
brackets and orders them.
"""

from collections.abc import Awaitable, Callable

from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.phases.discovery import after_cache_hit, analyze, fetch, find, fork
from benchwright_orchestrator.phases.materialize import materialize
from benchwright_orchestrator.phases.preparation import atomize, attach, report, setup

Phase = Callable[[PhaseContext], Awaitable[None]]

PHASES: dict[str, Phase] = {
    "fork": fork,
    "find": find,
    "fetch": fetch,
    "analyze": analyze,
    "setup": setup,
    "attach": attach,
    "atomize": atomize,
    "materialize": materialize,
    "report": report,
}

__all__ = ["PHASES", "Phase", "PhaseContext", "after_cache_hit"]
