"""BUILT subsets: task rows plus a recipe, scored by code the registry generates.

Reach it as ``bw.registry.build``. A BUILT subset's ``task_impl.py`` is the
product runner with the recipe written in front of it, so you never register an
impl: change the recipe and the next run records a new impl id; change the rows
and they become a new subset (the old one retires for new launches, and every
run that used it keeps its ids and results).

>>> sub = bw.registry.build.create_subset(
...     bm.id, "sums", tasks=rows,
...     recipe={"prompt_template": "What is {input.a} + {input.b}?",
...             "extraction": "last_number", "grading": "numeric"})
>>> bw.registry.build.update_recipe("sums", {"run_timeout": 900, "trials": 3},
...                                 note="product boots slower than 240s")
>>> bw.registry.build.update_samples("sums", upsert=fixed_rows, note="q2 was wrong")

``subset`` is a subset id, or the slug of one of your own BUILT subsets. Edits are
the owner's (or an admin's); anyone else gets :class:`~benchwright.NotFoundError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchwright_shared.api import registry as answers

from ._async_http import AsyncHTTP
from ._http import SyncHTTP
from .resources._common import parse, path_id

__all__ = ["AsyncBuild", "Build", "BuiltSubset", "BuiltSubsetEdit", "RecipeEdit"]


# The gateway's answers (``benchwright_shared.api.registry``), read as they are.
RecipeEdit = answers.RecipeEdit
BuiltSubset = answers.BuiltSubset
# A BUILT subset after an edit; ``changed`` is False when the edit changed nothing.
BuiltSubsetEdit = answers.BuiltSubsetEdit


def _create_body(
    benchmark: str,
    slug: str,
    tasks: Iterable[Mapping[str, Any]],
    recipe: Mapping[str, Any] | None,
    name: str,
    description: str,
    note: str,
) -> dict[str, Any]:
    return {
        "benchmark": benchmark,
        "slug": slug,
        "name": name,
        "description": description,
        "tasks": [dict(row) for row in tasks],
        "recipe": dict(recipe or {}),
        "note": note,
    }


def _samples_body(
    upsert: Iterable[Mapping[str, Any]], remove: Iterable[str], note: str
) -> dict[str, Any]:
    return {"upsert": [dict(row) for row in upsert], "remove": list(remove), "note": note}


def _recipe_path(subset: str) -> str:
    return f"/v1/build/subsets/{path_id(subset)}/recipe"


def _samples_path(subset: str) -> str:
    return f"/v1/build/subsets/{path_id(subset)}/samples"


class Build:
    """``bw.registry.build``: create BUILT subsets, read and edit their recipes and samples."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create_subset(
        self,
        benchmark: str,
        slug: str,
        *,
        tasks: Iterable[Mapping[str, Any]],
        recipe: Mapping[str, Any] | None = None,
        name: str = "",
        description: str = "",
        note: str = "",
    ) -> BuiltSubset:
        """A BUILT subset of ``benchmark``: rows (at most 1,000) and a recipe.

        Knobs left out take their defaults (``recipe`` shows them all). The id is a
        content address of the rows, so the same call again answers the same subset
        and is safe to retry; the same rows with another recipe raise
        :class:`~benchwright.ConflictError` (``recipe_differs``): edit the recipe instead.
        """
        body = _create_body(benchmark, slug, tasks, recipe, name, description, note)
        data = self._http.request("POST", "/v1/build/subsets", json=body, retry_safe=True)
        return parse(BuiltSubset, data)

    def recipe(self, subset: str) -> BuiltSubset:
        """The recipe, the impl generated from it, and every edit with its note."""
        return parse(BuiltSubset, self._http.request("GET", _recipe_path(subset)))

    def update_recipe(
        self, subset: str, config: Mapping[str, Any], *, note: str = ""
    ) -> BuiltSubsetEdit:
        """Change the knobs in ``config`` (the rest stay). The subset keeps its id; the
        generated impl gets a new one, which the next run records. Idempotent: the same
        change again answers ``changed=False``."""
        data = self._http.request(
            "PATCH",
            _recipe_path(subset),
            json={"config": dict(config), "note": note},
            retry_safe=True,
        )
        return parse(BuiltSubsetEdit, data)

    def update_samples(
        self,
        subset: str,
        *,
        upsert: Iterable[Mapping[str, Any]] = (),
        remove: Iterable[str] = (),
        note: str = "",
    ) -> BuiltSubsetEdit:
        """Replace or add rows by ``task_id`` and remove others. The edited rows are a new
        subset (returned) carrying the recipe forward; the old one retires for new
        launches and keeps serving the runs that pinned it. Idempotent: rows that
        already read so answer ``changed=False``."""
        data = self._http.request(
            "PATCH",
            _samples_path(subset),
            json=_samples_body(upsert, remove, note),
            retry_safe=True,
        )
        return parse(BuiltSubsetEdit, data)


class AsyncBuild:
    """The async twin of :class:`Build`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create_subset(
        self,
        benchmark: str,
        slug: str,
        *,
        tasks: Iterable[Mapping[str, Any]],
        recipe: Mapping[str, Any] | None = None,
        name: str = "",
        description: str = "",
        note: str = "",
    ) -> BuiltSubset:
        """See :meth:`Build.create_subset`."""
        body = _create_body(benchmark, slug, tasks, recipe, name, description, note)
        data = await self._http.request("POST", "/v1/build/subsets", json=body, retry_safe=True)
        return parse(BuiltSubset, data)

    async def recipe(self, subset: str) -> BuiltSubset:
        """See :meth:`Build.recipe`."""
        return parse(BuiltSubset, await self._http.request("GET", _recipe_path(subset)))

    async def update_recipe(
        self, subset: str, config: Mapping[str, Any], *, note: str = ""
    ) -> BuiltSubsetEdit:
        """See :meth:`Build.update_recipe`."""
        data = await self._http.request(
            "PATCH",
            _recipe_path(subset),
            json={"config": dict(config), "note": note},
            retry_safe=True,
        )
        return parse(BuiltSubsetEdit, data)

    async def update_samples(
        self,
        subset: str,
        *,
        upsert: Iterable[Mapping[str, Any]] = (),
        remove: Iterable[str] = (),
        note: str = "",
    ) -> BuiltSubsetEdit:
        """See :meth:`Build.update_samples`."""
        data = await self._http.request(
            "PATCH",
            _samples_path(subset),
            json=_samples_body(upsert, remove, note),
            retry_safe=True,
        )
        return parse(BuiltSubsetEdit, data)
