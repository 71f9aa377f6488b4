"""The builtin Driver's judgement, as pure functions: deterministic, offline, no model.

* ``parse_request`` reads a plain-English request against the catalog;
* ``analyze_rows`` decides the kind of a dataset from sampled rows;
* ``write_scorer`` writes the kind's ``task_impl.py``, adjusted by a person's guidance;
* ``reference_outputs`` / ``wrong_outputs`` are replies the scorer must grade right
  and wrong, with which the pipeline proves a scorer before it runs.

Nothing here does I/O; the pipeline (``driver.offline``) supplies rows and runs code.
"""

from benchwright_orchestrator.driver.builtin.analyze import (
    KINDS,
    Analysis,
    Kind,
    UnrecognizedDataset,
    analyze_rows,
)
from benchwright_orchestrator.driver.builtin.guidance import Directives, parse_guidance
from benchwright_orchestrator.driver.builtin.reference import (
    ReferenceUnavailable,
    reference_outputs,
    wrong_outputs,
)
from benchwright_orchestrator.driver.builtin.request import (
    KNOWN_PROVIDERS,
    ParsedRequest,
    RequestNotUnderstood,
    Scope,
    parse_request,
)
from benchwright_orchestrator.driver.builtin.scorers import TEMPLATES, write_scorer

__all__ = [
    "KINDS",
    "KNOWN_PROVIDERS",
    "TEMPLATES",
    "Analysis",
    "Directives",
    "Kind",
    "ParsedRequest",
    "ReferenceUnavailable",
    "RequestNotUnderstood",
    "Scope",
    "UnrecognizedDataset",
    "analyze_rows",
    "parse_guidance",
    "parse_request",
    "reference_outputs",
    "write_scorer",
    "wrong_outputs",
]
