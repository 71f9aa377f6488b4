"""Two runs over the same tasks, paired: what flipped, by how much, and whether it is real.

Pure rules over task results and run descriptions, no I/O. Tasks pair by ``task_id``
(a run's rows keep the dataset's ids, so two runs of one subset pair whatever order they
ran in). Of the shared tasks, those both runs scored (pass or fail) are the evidence:

* **flips**: ``fixed`` (fail in A, pass in B), ``regressed`` (pass in A, fail in B);
  McNemar's exact test asks whether the split between them could be chance;
* **the mean score difference** (B - A) with a paired bootstrap interval, clustered by
  the rows' group when both runs carry the same one: partial credit moves it where no
  task flips;
* an error on either side takes the task out of the evidence, and is reported
  (``errored``), never silently dropped; so are tasks only one run has.

The verdict reads both: B is worse when its regressions outnumber its fixes
significantly, or when the whole interval of the difference lies below zero.
"""

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchwright_shared.contracts.run_events import (
    AtomizeArtifact,
    DatasetTasksArtifact,
    ModelProxyArtifact,
    PhaseFingerprint,
    SetupArtifact,
)
from benchwright_shared.run_log import run_event_type
from benchwright_shared.stats import bootstrap_mean, mcnemar_exact

# How many task ids of each one-sided list the answer names; the counts are always whole.
NAMED_TASKS = 50
# How many changed tasks the answer lists; past it ``changes_truncated`` says so.
MAX_CHANGES = 2000
SCORED = ("pass", "fail")


@dataclass(frozen=True)
class TaskResult:
    """One task of a run's latest sweep."""

    task_id: str
    index: int
    outcome: str
    score: float | None = None
    group: str | None = None


def keyed(results: Iterable[TaskResult]) -> dict[str, TaskResult]:
    """Tasks by id; a repeated id is kept as ``id#2``, ``id#3``... in index order, so a
    dataset with duplicate ids still pairs occurrence by occurrence."""
    found: dict[str, TaskResult] = {}
    seen: dict[str, int] = {}
    for result in sorted(results, key=lambda r: r.index):
        n = seen[result.task_id] = seen.get(result.task_id, 0) + 1
        found[result.task_id if n == 1 else f"{result.task_id}#{n}"] = result
    return found


def compare(
    a: Sequence[TaskResult],
    b: Sequence[TaskResult],
    *,
    alpha: float = 0.05,
    labels: tuple[str, str] = ("A", "B"),
) -> dict[str, Any]:
    """The paired comparison of run B against run A (A is the reference)."""
    left, right = keyed(a), keyed(b)
    common = [k for k in left if k in right]
    only_a = [k for k in left if k not in right]
    only_b = [k for k in right if k not in left]

    fixed = regressed = same_pass = same_fail = 0
    errored = {"a_only": 0, "b_only": 0, "both": 0}
    diffs: list[float] = []
    groups: list[str | None] = []
    a_scores: list[float] = []
    b_scores: list[float] = []
    changes: list[dict[str, Any]] = []
    for key in common:
        x, y = left[key], right[key]
        change = _change(x, y)
        if x.outcome in SCORED and y.outcome in SCORED:
            fixed += change == "fixed"
            regressed += change == "regressed"
            same_pass += x.outcome == y.outcome == "pass"
            same_fail += x.outcome == y.outcome == "fail"
            if x.score is not None and y.score is not None:
                a_scores.append(x.score)
                b_scores.append(y.score)
                diffs.append(y.score - x.score)
                groups.append(x.group if x.group == y.group else None)
        else:
            side = "both" if x.outcome not in SCORED and y.outcome not in SCORED else None
            errored[side or ("a_only" if x.outcome not in SCORED else "b_only")] += 1
        if change != "unchanged":
            changes.append(_changed_row(key, x, y, change))

    judged = fixed + regressed + same_pass + same_fail
    p_value = mcnemar_exact(regressed, fixed)
    difference = bootstrap_mean(diffs, groups, level=1 - alpha) if diffs else None
    verdict = _verdict(labels, judged, fixed, regressed, p_value, difference, alpha, errored)
    return {
        "tasks": {
            "common": len(common),
            "judged": judged,
            "only_in_a": len(only_a),
            "only_in_b": len(only_b),
            "only_in_a_ids": only_a[:NAMED_TASKS],
            "only_in_b_ids": only_b[:NAMED_TASKS],
        },
        "flips": {
            "fixed": fixed,
            "regressed": regressed,
            "unchanged_pass": same_pass,
            "unchanged_fail": same_fail,
        },
        "errored": errored,
        "pass_rate": {
            "a": (same_pass + regressed) / judged if judged else None,
            "b": (same_pass + fixed) / judged if judged else None,
            "difference": (fixed - regressed) / judged if judged else None,
        },
        "mean_score": {
            "a": sum(a_scores) / len(a_scores) if a_scores else None,
            "b": sum(b_scores) / len(b_scores) if b_scores else None,
            "difference": difference["estimate"] if difference else None,
            "interval": (
                {k: difference[k] for k in ("low", "high", "level", "method", "resamples")}
                | {"clusters": difference["clusters"]}
                if difference
                else None
            ),
        },
        "mcnemar": {
            "regressed": regressed,
            "fixed": fixed,
            "p_value": p_value,
            "method": "exact (two-sided binomial on the discordant pairs)",
        },
        "verdict": verdict,
        "changes": changes[:MAX_CHANGES],
        "changes_truncated": len(changes) > MAX_CHANGES,
    }


def _change(x: TaskResult, y: TaskResult) -> str:
    if x.outcome in SCORED and y.outcome not in SCORED:
        return "newly_errored"
    if x.outcome not in SCORED and y.outcome in SCORED:
        return "recovered"
    if x.outcome not in SCORED:
        return "unchanged"
    if x.outcome == "fail" and y.outcome == "pass":
        return "fixed"
    if x.outcome == "pass" and y.outcome == "fail":
        return "regressed"
    if x.score is not None and y.score is not None and x.score != y.score:
        return "score_up" if y.score > x.score else "score_down"
    return "unchanged"


def _changed_row(key: str, x: TaskResult, y: TaskResult, change: str) -> dict[str, Any]:
    delta = y.score - x.score if x.score is not None and y.score is not None else None
    return {
        "task_id": key,
        "change": change,
        "a": {"index": x.index, "outcome": x.outcome, "score": x.score},
        "b": {"index": y.index, "outcome": y.outcome, "score": y.score},
        "delta": delta,
    }


def _p(p_value: float) -> str:
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.2g}"


def _verdict(
    labels: tuple[str, str],
    judged: int,
    fixed: int,
    regressed: int,
    p_value: float,
    difference: Mapping[str, Any] | None,
    alpha: float,
    errored: Mapping[str, int],
) -> dict[str, Any]:
    a, b = labels
    if judged == 0:
        return {
            "outcome": "no_common_tasks",
            "significant": False,
            "alpha": alpha,
            "text": f"{a} and {b} have no task that both scored: nothing to compare.",
        }
    flips = f"{regressed} regressions vs {fixed} fixes, {_p(p_value)}"
    outcome = "no_significant_difference"
    if p_value < alpha and regressed != fixed:
        outcome = "worse" if regressed > fixed else "better"
    elif difference is not None and (difference["high"] < 0 or difference["low"] > 0):
        outcome = "worse" if difference["high"] < 0 else "better"
    if difference is not None:
        level = f"{difference['level']:.0%}"
        flips += (
            f"; mean score {difference['estimate']:+.3f} "
            f"({level} interval {difference['low']:+.3f} to {difference['high']:+.3f})"
        )
    if outcome == "no_significant_difference":
        text = f"No significant difference between {b} and {a} on {judged} shared tasks: {flips}."
    else:
        text = f"{b} is {outcome} than {a}: {flips}."
    if errored["b_only"]:
        text += f" {b} errored on {errored['b_only']} task(s) {a} scored."
    if errored["a_only"]:
        text += f" {a} errored on {errored['a_only']} task(s) {b} scored."
    return {
        "outcome": outcome,
        "significant": outcome != "no_significant_difference",
        "alpha": alpha,
        "text": text,
    }


# The log entries that describe how a run was set up, and the part each one names.
PART_EVENTS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    run_event_type(PhaseFingerprint): lambda d: {f"fingerprint.{d['phase']}": d["fingerprint"]},
    # The tasks as they were run: a changed subset snapshot shows here.
    run_event_type(DatasetTasksArtifact): lambda d: {"tasks_sha256": d["content_sha256"]},
    # The scorer: a pinned impl's (Setup) or the one the Driver wrote (Atomize, later).
    run_event_type(SetupArtifact): lambda d: (
        {"impl_sha256": d["impl_sha256"]} if d.get("impl_sha256") else {}
    ),
    run_event_type(AtomizeArtifact): lambda d: {"impl_sha256": d["impl_sha256"]},
    # The proxy's config holds the sampling settings (temperature, max_tokens...).
    run_event_type(ModelProxyArtifact): lambda d: {
        "model_config_sha256": hashlib.sha256(d["litellm_config_yaml"].encode()).hexdigest()[:12]
    },
}


def run_parts(
    run: Mapping[str, Any], events: Iterable[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    """A run's parts by name, from its description (``render_run``'s) and its log's
    set-up entries (``PART_EVENTS``; a later entry of a part wins: the latest sweep's)."""
    parts: dict[str, Any] = {
        "benchmark": (run.get("benchmark") or {}).get("id"),
        "subset": (run.get("subset") or {}).get("id"),
        "impl_id": run.get("impl_id"),
        "trials": run.get("trials"),
        "driver": run.get("driver"),
        "backend": run.get("backend"),
        "selected_tasks": run.get("selected_tasks"),
        "fingerprint": run.get("fingerprint"),
    }
    for key, value in (run.get("model") or {}).items():
        parts[f"model.{key}"] = value
    for type_, data in events:
        if type_ in PART_EVENTS:
            parts |= PART_EVENTS[type_](data)
    return parts


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What sets the two runs apart, part by part: ``a`` and ``b`` map a part's name
    (``model``, ``impl_id``, ``fingerprint.atomize``...) to its value in each run. Parts
    the runs share are left out; a part only one run has is listed with None beside it."""
    return [
        {"part": name, "a": a.get(name), "b": b.get(name)}
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]
