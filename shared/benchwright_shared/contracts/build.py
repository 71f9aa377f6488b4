"""BUILT subsets: authored subsets whose scorer the registry generates from a recipe.

A BUILT subset holds task rows (its samples) and a recipe (the knobs of a fixed
product runner: prompt, extraction, grading, trials, timeout). Its
``task_impl.py`` is generated, the runner with the recipe as a header constant,
so its impl id (``<subset_id>:<12 hex>``) moves exactly when the recipe does.
Editing the samples forks a new content-addressed subset that carries the
recipe forward and retires the old one for new launches (decision 0020).

Asked of the registry over request/reply, like the rest of authoring
(``contracts.registry``). ``subset`` is a subset id or, within the caller's own
account, a slug. Owner only (``admin`` lifts that); anything else answers 404
exactly like something that does not exist.
"""

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem
from benchwright_shared.contracts.registry import TasksUpload

EditKind = Literal["created", "recipe", "samples"]


class CreateBuiltSubset(Contract):
    """A BUILT subset of ``benchmark_id``: rows, a recipe, and the impl generated from it."""

    subject: ClassVar[str] = subjects.CREATE_BUILT_SUBSET

    account: str
    benchmark_id: str
    slug: str
    name: str = ""
    description: str = ""
    # Recipe knobs; missing ones take their defaults (``GET .../recipe`` shows all).
    recipe: dict[str, Any] = Field(default_factory=dict)
    note: str = ""
    tasks: TasksUpload | None = None


class ReadRecipe(Contract):
    """A BUILT subset's recipe, current impl and edit history."""

    subject: ClassVar[str] = subjects.READ_RECIPE

    account: str
    admin: bool = False
    subset: str


class UpdateRecipe(Contract):
    """Change recipe knobs (the others stay): a new generated impl, the same subset."""

    subject: ClassVar[str] = subjects.UPDATE_RECIPE

    account: str
    admin: bool = False
    subset: str
    config: dict[str, Any]
    note: str = ""


class UpdateSamples(Contract):
    """Upsert rows by ``task_id`` and remove others: a new subset; the old one retires."""

    subject: ClassVar[str] = subjects.UPDATE_SAMPLES

    account: str
    admin: bool = False
    subset: str
    upsert: TasksUpload | None = None
    remove: list[str] = Field(default_factory=list)
    note: str = ""


class RecipeEdit(BaseModel):
    """One entry of a BUILT subset's history: what changed, why, and the ids it made."""

    model_config = ConfigDict(extra="ignore")

    at: datetime
    kind: EditKind
    note: str = ""
    # The account that made the edit (an admin may edit another account's subset).
    by: str
    subset_id: str
    impl_id: str
    # kind "recipe": {knob: [old, new]}; kind "created": the whole recipe.
    changes: dict[str, Any] = Field(default_factory=dict)
    # kind "samples": the subset it forked from and how many rows moved.
    from_subset_id: str | None = None
    upserted: int = 0
    removed: int = 0


class BuiltSubsetView(BaseModel):
    """A BUILT subset as ``GET /v1/build/subsets/{slug_or_id}/recipe`` shows it."""

    model_config = ConfigDict(extra="ignore")

    subset_id: str
    benchmark_id: str
    slug: str
    name: str = ""
    owner: str
    task_count: int = 0
    content_sha256: str = ""
    config: dict[str, Any]
    # The generated impl a pin of this subset runs when it names none.
    impl_id: str
    default_trials: dict[str, Any]
    # A retired subset no longer resolves for new launches; its successor does.
    retired: bool = False
    successor_id: str | None = None
    predecessor_id: str | None = None
    history: list[RecipeEdit] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class BuildAnswer(BaseModel):
    """The registry's answer to a BUILT request: a problem, or the subset as it now is.

    ``changed`` is False when the request changed nothing (the same recipe, the
    same rows, a repeated create).
    """

    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    changed: bool = False
    built: BuiltSubsetView | None = None
