"""The SDK's response models match what the gateway answers, field for field.

The runs area is typed once: its answers are ``benchwright_shared.api``'s types, the
gateway's response models, and the SDK imports them (``benchwright._models``) or
subclasses them with behaviour only. ``test_no_answer_is_written_twice`` holds that.
The models not yet moved there (registry, build, webhooks) are held by hand, two
kinds of model, each to its source:

* **views**: the gateway answers with one of a service's views from
  ``benchwright_shared.contracts``, maybe renamed and wrapped (``rows`` -> ``data``,
  plus ``object``), or with a response model from ``benchwright_shared.api``. Most
  of these SDK models subclass the view; the wrappers and a few others stay
  separate. Names, types, optionality and defaults must match, but
  for the widenings every SDK model makes (``AttrDict`` for a free-form object, ``str``
  for an enumeration, the SDK's model for a nested view) and the few differences in
  ``DELIBERATE``, each with its reason.
* **rendered**: the gateway renders the answer itself (runs, task rows, webhooks):
  the model must declare every key the renderer writes and nothing it never writes,
  and accept what it writes, a full answer and a sparse one.

Every public model of the SDK is on a shared answer type or in one of the two tables,
keeps the fields a newer server adds (``extra="allow"``), has a docstring, and nests
only the SDK's models or answer types, ``AttrDict`` for free-form objects and open
``str`` for enumerations.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

import benchwright._models as run_models
import benchwright.build as build_models
import benchwright.registry._models as registry_models
import benchwright.resources.webhooks as webhook_models
from benchwright._models import AttrDict
from benchwright_gateway.api import runs as run_routes
from benchwright_gateway.api import webhooks as webhook_routes
from benchwright_gateway.render import render_cost, render_run, render_task, render_trial
from benchwright_gateway.webhooks.delivery import encode_event
from benchwright_gateway.webhooks.domain import Delivery, Endpoint, RetryPolicy
from benchwright_shared import judge_agreement, judge_correction
from benchwright_shared.api import labels as label_answers
from benchwright_shared.api import registry as registry_answers
from benchwright_shared.api.base import Answer
from benchwright_shared.contracts import registry as registry_views
from benchwright_shared.contracts import registry_reads as read_views
from benchwright_shared.contracts.queries import RunCost
from benchwright_shared.scoring import Settled, summarize

SDK_MODULES = (run_models, registry_models, build_models, webhook_models)


# -- views ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mirror:
    """An SDK model and the service view the gateway answers it from."""

    sdk: type[BaseModel]
    view: type[BaseModel]
    # What the gateway adds around the view (``object`` ...), by the SDK's names.
    added: frozenset[str] = frozenset()
    # The view's name -> the SDK's, where the gateway renames (``rows`` -> ``data``).
    renamed: Mapping[str, str] = field(default_factory=dict)
    # The view's fields the answer carries; None for all but ``problem`` (a view that
    # carries a problem is answered as problem+json instead).
    taken: frozenset[str] | None = None


OBJECT = frozenset({"object"})
MIRRORS = [
    # The agreement's figures: the statistics' models, as answers.
    Mirror(label_answers.KappaFigure, judge_agreement.Kappa),
    Mirror(label_answers.GraderLean, judge_agreement.JudgeLean),
    Mirror(label_answers.GraderAgreement, judge_agreement.JudgeAgreement),
    Mirror(label_answers.CorrectedFigure, judge_correction.CorrectedEstimate),
    Mirror(registry_models.Snapshot, registry_views.SnapshotView),
    Mirror(registry_models.Subset, registry_views.SubsetView, OBJECT),
    Mirror(registry_models.Impl, registry_views.ImplView, OBJECT),
    Mirror(registry_models.Benchmark, registry_views.BenchmarkView, OBJECT),
    Mirror(registry_models.SubsetAppend, registry_views.AppendView, OBJECT),
    Mirror(
        registry_models.BenchmarkList,
        registry_views.RegistryAnswer,
        OBJECT,
        {"benchmarks": "data"},
        frozenset({"benchmarks", "next_page_token"}),
    ),
    Mirror(registry_models.KindTally, read_views.KindTally),
    Mirror(registry_models.RegistryRun, read_views.RegistryRun, OBJECT),
    Mirror(registry_models.RangeRun, read_views.RangeRun, OBJECT),
    Mirror(registry_models.LeaderboardRow, read_views.LeaderboardRow),
    Mirror(registry_models.ComparisonRow, read_views.ComparisonRow),
    Mirror(registry_models.RegistryRunList, read_views.RegistryRunList, OBJECT, {"runs": "data"}),
    Mirror(registry_models.Leaderboard, read_views.Leaderboard, OBJECT, {"rows": "data"}),
    Mirror(registry_models.ImplComparison, read_views.Comparison, OBJECT, {"rows": "data"}),
    Mirror(registry_models.TaskRange, read_views.TaskRange, OBJECT, {"runs": "data"}),
    # Answers the gateway declares as response models (``benchwright_shared.api``).
    Mirror(registry_models.SubsetTasks, registry_answers.SubsetTasks),
    Mirror(registry_models.Deleted, registry_answers.Deleted),
]
# The SDK's model for each view, for the fields that nest one.
SDK_MODEL_OF: dict[type[BaseModel], type[BaseModel]] = {m.view: m.sdk for m in MIRRORS}

# (SDK model, field): why it differs from the view on purpose.
DELIBERATE: dict[tuple[str, str], str] = {}

# (SDK model, key): a key the gateway writes that the model still reads only as an
# extra, and who closes the gap. Keep it empty: an entry fails once it is closed.
UNDECLARED: dict[tuple[str, str], str] = {}

REQUIRED = object()


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _show(tp: Any) -> str:
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__ if tp.__module__ != "builtins" else tp.__name__
    return repr(tp).replace("typing.", "")


def same_type(sdk: Any, view: Any) -> bool:
    """Whether the SDK's annotation is the view's, up to the SDK's widenings."""
    if sdk == view:
        return True
    if sdk is AttrDict:
        return bool(view == dict[str, Any])
    if sdk is str and get_origin(view) is Literal:
        return all(isinstance(value, str) for value in get_args(view))
    if isinstance(view, type) and issubclass(view, BaseModel):
        return SDK_MODEL_OF.get(view) is sdk
    if _is_union(sdk) != _is_union(view):
        return False
    if not _is_union(sdk) and get_origin(sdk) is not get_origin(view):
        return False
    sdk_args, view_args = get_args(sdk), get_args(view)
    if not sdk_args or len(sdk_args) != len(view_args):
        return False
    return all(same_type(a, b) for a, b in zip(sdk_args, view_args, strict=True))


def default_of(info: FieldInfo) -> Any:
    return REQUIRED if info.is_required() else info.get_default(call_default_factory=True)


def field_drift(mirror: Mirror, name: str, sdk: FieldInfo, view_name: str) -> str | None:
    """What is wrong with the SDK's ``name`` against the view's ``view_name``, if anything."""
    view = mirror.view.model_fields[view_name]
    where = f"{mirror.view.__name__}.{view_name}"
    if not same_type(sdk.annotation, view.annotation):
        return f"is {_show(sdk.annotation)}, {where} is {_show(view.annotation)}"
    sdk_default, view_default = default_of(sdk), default_of(view)
    if sdk_default is REQUIRED and view_default is not REQUIRED:
        # A view that can carry a problem defaults the rest so that a problem alone
        # validates; the gateway answers 200 only without one, so all of it is there.
        if "problem" in mirror.view.model_fields:
            return None
        return f"is required, {where} defaults to {view_default!r}"
    if view_default is REQUIRED and sdk_default is not REQUIRED:
        return f"defaults to {sdk_default!r}, {where} is required"
    if sdk_default != view_default:
        return f"defaults to {sdk_default!r}, {where} to {view_default!r}"
    return None


def mirror_drift(mirror: Mirror) -> Iterator[str]:
    sdk_name, view_name = mirror.sdk.__name__, mirror.view.__name__
    taken = mirror.taken or set(mirror.view.model_fields) - {"problem"}
    answered = {mirror.renamed.get(name, name): name for name in taken}
    declared = mirror.sdk.model_fields
    for name in sorted(answered.keys() - declared.keys()):
        yield f"{sdk_name}.{name}: the gateway answers {view_name}.{answered[name]}, undeclared"
    for name in sorted(declared.keys() - answered.keys() - mirror.added):
        yield f"{sdk_name}.{name}: {view_name} has no such field and the gateway adds none"
    for name in sorted(mirror.added):
        if name not in declared:
            yield f"{sdk_name}.{name}: the gateway adds it, undeclared"
        elif declared[name].is_required():
            yield f"{sdk_name}.{name}: the gateway adds it to {view_name}: give it a default"
    for name in sorted(answered.keys() & declared.keys()):
        drift = field_drift(mirror, name, declared[name], answered[name])
        reason = DELIBERATE.get((sdk_name, name))
        if drift is not None and reason is None:
            yield f"{sdk_name}.{name}: {drift}"
        elif drift is None and reason is not None:
            yield f"{sdk_name}.{name}: matches {view_name} now: drop it from DELIBERATE"


@pytest.mark.parametrize("mirror", MIRRORS, ids=lambda m: m.sdk.__name__)
def test_a_model_matches_the_view_it_mirrors(mirror: Mirror) -> None:
    drift = list(mirror_drift(mirror))
    assert not drift, "\n".join(drift)


# -- rendered ------------------------------------------------------------------------------
NOW = "2025-01-02T03:04:05+00:00"
BASE_URL = "http://gw.test"


def run_row(**sparse: Any) -> dict[str, Any]:
    """A row of the gateway's runs view, every column set; ``sparse`` overrides."""
    row: dict[str, Any] = {
        "run_id": "run_1",
        "status": "ok",
        "halted": 1,
        "halt_reason": "operator_kill: done",
        "phase": "report",
        "model": json.dumps({"model": "m", "provider": "local", "api_base": None}),
        "mode": "pinned",
        "request": "gsm8k on m",
        "driver": "builtin",
        "visibility": "public",
        "last_seq": 41,
        "compute": "default",
        "backend": "local",
        "parent_run_id": "run_0",
        "trials": json.dumps({"plan": {"k": 3}, "aggregator": {"name": "any_pass"}}),
        "limits": json.dumps({"run": {"cost": 1.0}}),
        "benchmark_id": "gsm8k",
        "benchmark_name": "GSM8K",
        "substituted_for": "gsm-8k",
        "subset_id": "sub_1",
        "subset_slug": "main",
        "impl_id": "gsm8k:0123456789ab",
        "fingerprint": "abcdef012345",
        "metadata": json.dumps({"team": "a"}),
        "selected_tasks": 10,
        "created_at": NOW,
        "finished_at": NOW,
        "error_type": "driver_error",
        "detail": "it broke",
        "summary": json.dumps({"total": 10, "passed": 7, "infra_errored": 1}),
    }
    return {**row, **sparse}


SPARSE_RUN = {
    **{k: None for k in run_row() if k not in ("run_id", "status")},
    "status": "running",
}
COST = RunCost(run_id="run_1", model_micros=1_234_567, sandbox_micros=20_000, model_calls=3)


def rendered_runs() -> list[dict[str, Any]]:
    return [
        render_run(run_row(), COST, BASE_URL),
        render_run(run_row(**SPARSE_RUN), None, BASE_URL),
    ]


def task_row(**sparse: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "invocation": 1,
        "idx": 4,
        "task_id": "q4",
        "trial": 2,
        "score": 1.0,
        "outcome": "pass",
        "output": "42",
        "error_type": "timeout",
        "error": "took too long",
        "duration_ms": 1200,
        "score_meta": json.dumps({"extracted": "42"}),
        "cost_micros": 1500,
        "calls": 1,
        "prompt_tokens": 30,
        "completion_tokens": 4,
    }
    return {**row, **sparse}


SPARSE_TASK = {
    "score": None,
    "outcome": None,
    "output": None,
    "error_type": None,
    "cost_micros": None,
}


def rendered_trials() -> list[dict[str, Any]]:
    return [
        render_trial(row, full=full)
        for row in (task_row(), task_row(**SPARSE_TASK, duration_ms=None, score_meta=None))
        for full in (False, True)
    ]


def rendered_tasks() -> list[dict[str, Any]]:
    return [render_task(task_row(), [task_row()]), render_task(task_row(**SPARSE_TASK))]


def webhook_endpoint() -> Endpoint:
    return Endpoint(
        endpoint_id="wh_1",
        account="acct_1",
        url="https://hooks.example/bw",
        events=["run.finished"],
        description="ci",
        sealed_secret="sealed",
        created_at=1_700_000_000.0,
    )


def webhook_delivery(*, attempted: bool) -> Delivery:
    delivery = Delivery(
        delivery_id="whd_1",
        endpoint_id="wh_1",
        account="acct_1",
        event_id="evt_1",
        event_type="run.finished",
        run_id="run_1",
        body="{}",
        created_at=1_700_000_000.0,
        test=False,
    )
    if attempted:
        delivery.finish_attempt(
            at=1_700_000_001.0,
            status_code=500,
            duration_ms=30,
            error=None,
            policy=RetryPolicy(),
        )
    return delivery


def rendered_webhooks() -> list[dict[str, Any]]:
    return [
        webhook_routes.render_with_secret(webhook_endpoint(), "whsec_1").model_dump(mode="json"),
        webhook_routes.render_endpoint(webhook_endpoint()).model_dump(mode="json"),
    ]


def rendered_deliveries() -> list[dict[str, Any]]:
    return [
        webhook_routes.render_delivery(webhook_delivery(attempted=a)).model_dump(mode="json")
        for a in (True, False)
    ]


def rendered_events() -> list[dict[str, Any]]:
    encoded = encode_event("evt_1", "run.finished", 1_700_000_000.0, {"id": "run_1"}, test=True)
    return [json.loads(encoded)]


def nested(key: str, render: Callable[[], list[dict[str, Any]]]) -> Callable[[], list[Any]]:
    """The ``key`` of each rendered answer that has one (a nested object, or a list's items)."""

    def samples() -> list[Any]:
        found = [answer[key] for answer in render() if answer.get(key) is not None]
        return [item for value in found for item in (value if isinstance(value, list) else [value])]

    return samples


def costs(*keys: str) -> Callable[[], list[Any]]:
    def samples() -> list[Any]:
        cost = render_cost(COST)
        assert cost is not None
        return [cost[key] for key in keys]

    return samples


@dataclass(frozen=True)
class Rendered:
    """An SDK model and answers the gateway renders for it (its keys, its values)."""

    sdk: type[BaseModel]
    samples: Callable[[], list[Any]]
    # SDK fields that other calls fill (``runs.get(expand=...)``).
    elsewhere: frozenset[str] = frozenset()


# A summary of tasks in two groups, one of them tried twice: every key filled.
SUMMARY = summarize(
    [
        Settled("pass", 10, score=1.0, group="a", trial_scores=(1.0, 0.0), task_index=0),
        Settled("fail", 12, score=0.0, group="b", trial_scores=(0.0, 0.0), task_index=1),
        Settled("pass", 11, score=1.0, group="b", trial_scores=(1.0, 1.0), task_index=2),
    ]
)

RENDERED = [
    Rendered(
        run_models.Run,
        rendered_runs,
        # The expansions: each is another call's answer (``runs.get(expand=[...])``).
        frozenset(run_routes.EXPANSIONS),
    ),
    Rendered(run_models.BenchmarkRef, nested("benchmark", rendered_runs)),
    Rendered(run_models.SubsetRef, nested("subset", rendered_runs)),
    Rendered(run_models.RunLinks, nested("links", rendered_runs)),
    Rendered(run_models.RunCost, nested("cost", rendered_runs)),
    Rendered(run_models.Money, costs("sandbox", "driver", "incurred", "billed")),
    Rendered(
        run_models.LLMSpend,
        lambda: [
            *costs("model", "narration", "proxy_linger")(),
            *[t["cost"] for t in rendered_tasks() if t["cost"]],
        ],
    ),
    Rendered(run_models.TaskSummary, lambda: [summarize([("pass", 10), ("err", 5, True)])]),
    Rendered(run_models.SummaryIntervals, lambda: [SUMMARY["intervals"]]),
    Rendered(
        run_models.Interval,
        lambda: [SUMMARY["intervals"]["pass_rate"], SUMMARY["intervals"]["mean_score"]],
    ),
    Rendered(run_models.TrialVariance, lambda: [SUMMARY["trial_variance"]]),
    Rendered(run_models.TaskRow, rendered_tasks),
    Rendered(run_models.TrialResult, rendered_trials),
]


def key_of(name: str, info: FieldInfo) -> str:
    return info.alias or name


def key_drift(
    sdk: type[BaseModel], written: set[str], writer: str, elsewhere: frozenset[str] = frozenset()
) -> Iterator[str]:
    """The keys ``writer`` writes that ``sdk`` does not declare, and the reverse."""
    name = sdk.__name__
    declared = {key_of(n, f) for n, f in sdk.model_fields.items()}
    for key in sorted(written - declared):
        if (name, key) not in UNDECLARED:
            yield f"{name}.{key}: {writer} writes it, undeclared"
    for key in sorted(declared - written - elsewhere):
        yield f"{name}.{key}: {writer} never writes it"
    for model, key in UNDECLARED:
        if model == name and key in declared:
            yield f"{name}.{key}: declared now: drop it from UNDECLARED"


def extras(model: BaseModel, path: str) -> Iterator[str]:
    """Where a validated answer kept keys no model declares, nested models included."""
    for key in model.model_extra or {}:
        yield f"{path}.{key}"
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, dict):
            value = list(value.values())
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                yield from extras(item, f"{path}.{name}")


def rendered_drift(entry: Rendered) -> Iterator[str]:
    name = entry.sdk.__name__
    samples = entry.samples()
    assert samples, f"no sample answers for {name}"
    written = {key for sample in samples for key in sample}
    yield from key_drift(entry.sdk, written, "the gateway", entry.elsewhere)
    for sample in samples:
        try:
            model = entry.sdk.model_validate(sample)
        except ValidationError as exc:
            yield f"{name}: does not accept what the gateway writes: {exc}"
            continue
        for where in extras(model, name):
            if (name, where.removeprefix(f"{name}.")) not in UNDECLARED:
                yield f"{where}: the gateway writes it, undeclared"


@pytest.mark.parametrize("entry", RENDERED, ids=lambda r: r.sdk.__name__)
def test_a_model_matches_what_the_gateway_renders(entry: Rendered) -> None:
    drift = list(dict.fromkeys(rendered_drift(entry)))  # a key is found twice at the top
    assert not drift, "\n".join(drift)


# What the gateway writes, as the answer type passes it on (``response_model_exclude_unset``):
# (model, rendered answers, keys the type rewrites on purpose).
PASSED_ON = [
    (run_models.Run, rendered_runs, set()),
    (run_models.TaskRow, rendered_tasks, set()),
    (run_models.TrialResult, rendered_trials, set()),
]


@pytest.mark.parametrize(
    ("model", "render", "rewritten"), PASSED_ON, ids=[m.__name__ for m, _, _ in PASSED_ON]
)
def test_the_answer_type_passes_on_what_the_gateway_renders(
    model: type[BaseModel], render: Callable[[], list[dict[str, Any]]], rewritten: set[str]
) -> None:
    for rendered in render():
        wire = json.loads(json.dumps(rendered))
        answered = model.model_validate(rendered).model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )
        assert list(answered) == list(wire)  # the same keys, in the same order
        changed = {key for key in wire if answered[key] != wire[key]}
        assert changed <= rewritten, {key: (wire[key], answered[key]) for key in changed}


# -- every model --------------------------------------------------------------------------
SHARED_ANSWERS = "benchwright_shared.api."


def sdk_models() -> list[type[BaseModel]]:
    """Every public response model the SDK offers: defined in one of its modules or
    re-exported there from ``benchwright_shared.api``."""
    found: dict[type[BaseModel], None] = {}
    for module in SDK_MODULES:
        exported = set(getattr(module, "__all__", ()))
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and not name.startswith("_")
                and (
                    value.__module__ == module.__name__
                    or (name in exported and value.__module__.startswith(SHARED_ANSWERS))
                )
            ):
                found[value] = None
    return list(found)


def shared_answer(model: type[BaseModel]) -> type[BaseModel] | None:
    """The answer type of ``benchwright_shared.api`` that ``model`` is or derives from
    (not the root ``Answer``, which every answer has); None for a hand-written model."""
    for base in model.__mro__:
        if (
            isinstance(base, type)
            and issubclass(base, BaseModel)
            and base is not Answer
            and base.__module__.startswith(SHARED_ANSWERS)
        ):
            return base
    return None


def own_fields(model: type[BaseModel]) -> set[str]:
    """The fields ``model``'s own class body declares (not those it inherits)."""
    return set(vars(model).get("__annotations__", {})) & set(model.model_fields)


# SDK modules whose models still subclass an answer type and widen its fields (AttrDict,
# open str, the SDK's nested models): MIRRORS and RENDERED hold them until the answer
# types carry those widenings themselves, as ``benchwright_shared.api.runs`` does.
WIDENING = (registry_models,)


def typed_once(model: type[BaseModel]) -> bool:
    """Whether ``model`` is a shared answer type, or derives from one adding no field."""
    shared = shared_answer(model)
    return shared is model or (shared is not None and not own_fields(model))


@pytest.mark.parametrize(
    "sdk",
    [m for m in sdk_models() if not any(m.__module__ == w.__name__ for w in WIDENING)],
    ids=lambda m: m.__name__,
)
def test_no_answer_is_written_twice(sdk: type[BaseModel]) -> None:
    """Every model of the runs area is a shared answer type, or derives from one and
    adds behaviour only."""
    assert shared_answer(sdk) is not None, (
        f"{sdk.__name__} is written by hand: import it from benchwright_shared.api"
    )
    assert typed_once(sdk), (
        f"{sdk.__name__} redeclares {sorted(own_fields(sdk))} of "
        f"{shared_answer(sdk)!r}: an SDK subclass adds behaviour only"
    )


def annotations_in(tp: Any) -> Iterator[Any]:
    yield tp
    for arg in get_args(tp):
        yield from annotations_in(arg)


@pytest.mark.parametrize("sdk", sdk_models(), ids=lambda m: m.__name__)
def test_every_model_is_held_to_an_answer_and_keeps_what_it_does_not_know(
    sdk: type[BaseModel],
) -> None:
    covered = {m.sdk for m in MIRRORS} | {r.sdk for r in RENDERED}
    assert sdk in covered or typed_once(sdk), (
        f"{sdk.__name__} is held to no answer: derive it from benchwright_shared.api "
        "(or add it to MIRRORS or RENDERED)"
    )
    assert sdk.model_config.get("extra") == "allow", f"{sdk.__name__} drops unknown fields"
    assert (sdk.__doc__ or "").strip(), f"{sdk.__name__} has no docstring"
    for name, info in sdk.model_fields.items():
        for tp in annotations_in(info.annotation):
            where = f"{sdk.__name__}.{name}"
            assert tp != dict[str, Any], f"{where}: a free-form object reads as AttrDict"
            assert get_origin(tp) is not Literal, f"{where}: an enumeration stays an open str"
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                assert tp.__module__.startswith(("benchwright.", SHARED_ANSWERS)), (
                    f"{where}: nests {tp.__qualname__}, a service's view: nest an answer type"
                )


def test_a_nested_view_answers_as_the_sdk_model() -> None:
    subset = {"id": "s", "benchmark_id": "b", "slug": "v1", "snapshot_id": "s"}
    benchmark = registry_models.Benchmark.model_validate(
        {
            "id": "b",
            "object": "benchmark",
            "name": "B",
            # A value and a field a newer server may add.
            "visibility": "team",
            "released": True,
            "subsets": [{**subset, "grader": {"label": "exact"}, "new_field": 1}],
        }
    )
    (nested_subset,) = benchmark.subsets
    assert isinstance(nested_subset, registry_models.Subset) and nested_subset.frozen
    assert nested_subset.object == "subset" and nested_subset.grader is not None
    assert nested_subset.grader.label == "exact"
    assert nested_subset.model_extra == {"new_field": 1}
    assert benchmark.visibility == "team" and benchmark.model_extra == {"released": True}

    run = registry_models.RangeRun.model_validate(
        {
            "run_id": "r",
            "model": "m",
            "status": "ok",
            "visibility": "team",
            "trials": {"plan": {"k": 2}},
            "by_kind": {"qa": {"passed": 1}},
            "covered": 3,
        }
    )
    assert isinstance(run, registry_models.RegistryRun) and run.id == "r"
    assert run.object == "registry_run" and run.covered == 3
    assert run.trials is not None and run.trials.plan.k == 2
    assert run.by_kind is not None and isinstance(run.by_kind["qa"], registry_models.KindTally)
