"""The answers of ``/v1/runs`` launches and run changes: a run and a deleted run.

They are the runs area's types (``benchwright_shared.api.runs``), named here for
the launch routes, their operations and the estimate: a launch answers the same
``Run`` that ``GET /v1/runs/{id}`` does, declared once. Routes answer a run with
``response_model_exclude_unset``, so a repeated launch whose run is not read yet
says its identity and status only.
"""

from benchwright_shared.api.runs import (
    BenchmarkRef,
    DeletedRun,
    LLMSpend,
    Money,
    Run,
    RunCost,
    RunLinks,
    SubsetRef,
)

__all__ = [
    "BenchmarkRef",
    "DeletedRun",
    "LLMSpend",
    "Money",
    "Run",
    "RunCost",
    "RunLinks",
    "SubsetRef",
]
