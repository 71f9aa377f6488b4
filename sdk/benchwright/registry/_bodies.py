"""Request bodies and query parameters the registry resources send."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._models import (
    Benchmark,
    BenchmarkList,
)

# How many rows ``find`` scans, as the guide documents.
FIND_SCAN = 100
JSON_ONLY = {"Accept": "application/json"}


# -- request bodies ------------------------------------------------------------------------
def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _rows(tasks: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(row) for row in tasks]


def _benchmark_body(
    name: str | None,
    description: str | None,
    category: str | None,
    tags: Iterable[str] | None,
) -> dict[str, Any]:
    return _present(
        name=name,
        description=description,
        category=category,
        tags=list(tags) if tags is not None else None,
    )


def _subset_body(
    slug: str,
    name: str,
    description: str,
    tasks: Iterable[Mapping[str, Any]],
    rolling: bool,
    grader: Mapping[str, Any] | None,
    default_trials: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return {
        "slug": slug,
        "name": name,
        "description": description,
        "tasks": _rows(tasks),
        "rolling": rolling,
        **_present(
            grader=dict(grader) if grader is not None else None,
            default_trials=dict(default_trials) if default_trials is not None else None,
        ),
    }


def _impl_body(
    subset: str | None,
    benchmark: str | None,
    label: str,
    code: str,
    description: str,
    language: str | None,
    official: bool,
) -> dict[str, Any]:
    body = {
        "label": label,
        "code": code,
        "description": description,
        **_present(subset=subset, benchmark=benchmark, language=language),
    }
    if official:
        body["official"] = True
    return body


def _list_params(
    tag: str | None, sort: str | None, limit: int, page_token: str | None
) -> dict[str, Any]:
    return {"tag": tag, "sort": sort, "limit": limit, "page_token": page_token}


def _best_match(name: str, page: BenchmarkList) -> Benchmark | None:
    """The first exact name match, else the first exact alias match, else the first name
    or alias containing ``name``; all case-insensitive."""
    wanted = name.strip().lower()

    def names(b: Benchmark) -> list[str]:
        return [b.name.lower(), *(a.lower() for a in b.aliases)]

    exact = [b for b in page.data if b.name.lower() == wanted]
    alias = [b for b in page.data if wanted in names(b)[1:]]
    partial = [b for b in page.data if any(wanted in n for n in names(b))]
    found = exact or alias or partial
    return found[0] if found else None


def _runs_params(model: str | None, limit: int, page_token: str | None) -> dict[str, Any]:
    return {"model": model, "limit": limit, "page_token": page_token}


def _range_params(
    start: int, end: int, subset: str | None, limit: int, page_token: str | None
) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "subset": subset,
        "limit": limit,
        "page_token": page_token,
    }


def _from_run_body(
    from_run: str, benchmark: str | None, subset: str | None, label: str, description: str
) -> dict[str, Any]:
    return {
        "from_run": from_run,
        "label": label,
        "description": description,
        **_present(benchmark=benchmark, subset=subset),
    }
