"""The answer of ``POST /v1/runs/estimate``: what a launch would cost, as ranges."""

from typing import Literal

from pydantic import BaseModel

from benchwright_shared.api.launch import Money
from benchwright_shared.contracts.run_events import SutRef


class CountRange(BaseModel):
    """A count bounded below and above, with the figure expected."""

    low: int
    expected: int
    high: int


class CostRange(BaseModel):
    """The cost, bounded below and above, with the figure expected."""

    low: Money
    expected: Money
    high: Money


class JudgeEstimate(BaseModel):
    """The judge calls a model-graded scorer would make, priced at the judges' rates."""

    judges: list[SutRef]
    calls: CountRange
    prompt_tokens: CountRange
    completion_tokens: CountRange
    cost: CostRange
    priced_by: str
    derivation: list[str]


class RunEstimate(BaseModel):
    """The model calls, tokens and spend a launch would take; nothing is launched."""

    object: Literal["run_estimate"] = "run_estimate"
    tasks: int
    trials: int
    model: SutRef
    calls: CountRange
    prompt_tokens: CountRange
    completion_tokens: CountRange
    cost: CostRange
    # ``operator`` (the deployment's prices), ``provider`` or ``unpriced`` (all zero).
    priced_by: str
    # How the figures were reached, a line a step.
    derivation: list[str]
    excludes: str
    # A model-graded scorer's judge calls (``cost.judge`` once it runs); None when the
    # scorer calls no judge.
    judge: JudgeEstimate | None = None
