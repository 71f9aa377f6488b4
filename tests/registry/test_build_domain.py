"""BUILT subsets on their own: recipe rules, the generated code, sample edits, the
aggregate's history, and the runner the code ends in. No store, no bus."""

import importlib.util
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchwright_registry.catalog import impl_code
from benchwright_registry.domain.build import (
    RECIPE_DEFAULTS,
    BuiltIndex,
    BuiltSubset,
    built_impl_id,
    check_recipe,
    default_trials,
    edit_entry,
    edit_rows,
    generate_code,
    merge_recipe,
    recipe_changes,
)
from benchwright_shared.refusal import Refused

RUNNER = impl_code("built_runner")
RUNTIME = Path(__file__).resolve().parents[2] / (
    "services/sandbox-manager/benchwright_sandbox_manager/runtime"
)
NOW = datetime(2026, 4, 1, tzinfo=UTC)
SUB = "sub_0123456789ab"
SUMS = {"prompt_template": "What is {input.a} + {input.b}?", "extraction": "last_number"}


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"task_id": i, "input": {"q": i}, "expected": i.upper()} for i in ids]


def refusal(config: dict[str, Any]) -> tuple[str | None, str]:
    with pytest.raises(Refused) as exc:
        check_recipe(config)
    assert exc.value.status == 400 and exc.value.code == "invalid_argument"
    return exc.value.field, exc.value.detail


# -- the recipe -------------------------------------------------------------------------------
def test_a_recipe_is_complete_and_has_one_spelling() -> None:
    recipe = check_recipe({})
    assert recipe == RECIPE_DEFAULTS
    assert set(check_recipe(SUMS)) == set(RECIPE_DEFAULTS)
    # Whole-number temperatures and tolerances are the same recipe as their floats.
    assert check_recipe({"temperature": 0, "tolerance": 1}) == check_recipe(
        {"temperature": 0.0, "tolerance": 1.0}
    )
    assert check_recipe({"system_prompt": ""})["system_prompt"] is None
    # Naming a pattern means extracting with it.
    assert check_recipe({"answer_pattern": r"ANSWER: (\d+)"})["extraction"] == "pattern"


@pytest.mark.parametrize(
    ("config", "field", "says"),
    [
        ({"colour": "blue"}, "config.colour", "unknown knob"),
        ({"run_timeout": 0}, "config.run_timeout", "from 1 to 86,400"),
        ({"run_timeout": "900"}, "config.run_timeout", "whole number"),
        ({"trials": 101}, "config.trials", "from 1 to 100"),
        ({"trials": True}, "config.trials", "whole number"),
        ({"temperature": 3}, "config.temperature", "from 0 to 2"),
        ({"max_tokens": 0}, "config.max_tokens", "or null"),
        ({"aggregator": "best_of"}, "config.aggregator", "any_pass, all_pass, mean, majority_on"),
        ({"grading": "fuzzy"}, "config.grading", "exact, numeric, contains, regex, judge"),
        ({"grading": "judge"}, "config.rubric", "non-empty list"),
        (
            {"grading": "judge", "rubric": [{"criterion": "cites", "weight": -1}]},
            "config.rubric[0].weight",
            ">= 0",
        ),
        (
            {
                "grading": "judge",
                "rubric": [{"criterion": "a", "weight": 0}, {"criterion": "b", "weight": 0.0}],
            },
            "config.rubric",
            "sum to 0",
        ),
        (
            {"grading": "judge", "rubric": [{"criterion": "a"}, {"criterion": "b", "weight": "2"}]},
            "config.rubric[1].weight",
            "must be a number",
        ),
        ({"rubric": [{"criterion": "a"}]}, "config.rubric", "only with grading 'judge'"),
        ({"extraction": "pattern"}, "config.answer_pattern", "needs an answer_pattern"),
        (
            {"extraction": "full", "answer_pattern": "x"},
            "config.answer_pattern",
            "only with extraction 'pattern'",
        ),
        ({"answer_pattern": "("}, "config.answer_pattern", "not a regular expression"),
        ({"answer_pattern": "(a)(b)"}, "config.answer_pattern", "at most one capturing group"),
        ({"prompt_template": "Solve {question}"}, "config.prompt_template", "{input.field}"),
        ({"prompt_template": "no input here"}, "config.prompt_template", "must use the row"),
        ({"prompt_template": "  "}, "config.prompt_template", "must not be empty"),
        ({"case_sensitive": "yes"}, "config.case_sensitive", "true or false"),
    ],
)
def test_recipe_refusals_name_the_knob(config: dict[str, Any], field: str, says: str) -> None:
    got_field, detail = refusal(config)
    assert got_field == field and says in detail, detail


def test_literal_braces_and_nested_fields_are_fine() -> None:
    template = "Return {{json}} for {input.item.name} given {input}"
    assert check_recipe({"prompt_template": template})["prompt_template"] == template


def test_merging_changes_only_the_named_knobs() -> None:
    current = check_recipe(SUMS)
    merged = merge_recipe(current, {"run_timeout": 900, "trials": 3})
    assert recipe_changes(current, merged) == {"run_timeout": [300, 900], "trials": [1, 3]}
    # A pattern switches extraction to it; dropping the pattern switches back.
    patterned = merge_recipe(current, {"answer_pattern": r"= (\d+)"})
    assert patterned["extraction"] == "pattern"
    assert merge_recipe(patterned, {"answer_pattern": None})["extraction"] == "full"
    with pytest.raises(Refused) as exc:
        merge_recipe(current, {})
    assert exc.value.field == "config"
    with pytest.raises(Refused) as bad:
        merge_recipe(current, {"trials": 0})
    assert bad.value.field == "config.trials"


def test_default_trials_follow_the_recipe() -> None:
    assert default_trials(check_recipe({})) == {
        "plan": {"k": 1},
        "aggregator": {"name": "any_pass"},
    }
    voted = default_trials(check_recipe({"trials": 5, "aggregator": "majority_on"}))
    assert voted == {"plan": {"k": 5}, "aggregator": {"name": "majority_on", "field": "answer"}}


RUBRIC = [{"criterion": "States the sum", "weight": 2}, {"criterion": "Shows the working"}]


def test_a_judge_graded_recipe_holds_its_rubric_and_moves_its_impl_when_it_changes() -> None:
    plain = check_recipe(SUMS)
    assert "rubric" not in plain  # a recipe that does not use it keeps its code
    judged = check_recipe({**SUMS, "grading": "judge", "rubric": RUBRIC})
    assert judged["rubric"] == [
        {"criterion": "States the sum", "weight": 2.0},
        {"criterion": "Shows the working", "weight": 1.0},
    ]
    impl = built_impl_id(SUB, generate_code(judged, RUNNER))
    heavier = merge_recipe(judged, {"rubric": [{**RUBRIC[0], "weight": 3}, RUBRIC[1]]})
    assert recipe_changes(judged, heavier) == {
        "rubric": [judged["rubric"], [{**judged["rubric"][0], "weight": 3.0}, judged["rubric"][1]]]
    }
    assert built_impl_id(SUB, generate_code(heavier, RUNNER)) != impl  # never a silent re-grade
    # Graded exactly again: the rubric goes with the judge.
    exact = merge_recipe(judged, {"grading": "exact"})
    assert "rubric" not in exact
    assert recipe_changes(judged, exact)["rubric"] == [judged["rubric"], None]


def test_only_a_judge_graded_recipe_needs_a_judge() -> None:
    from benchwright_shared.judging import uses_judge

    assert not uses_judge(generate_code(check_recipe(SUMS), RUNNER))
    judged = check_recipe({**SUMS, "grading": "judge", "rubric": RUBRIC})
    assert uses_judge(generate_code(judged, RUNNER))


# -- the generated code -----------------------------------------------------------------------
def test_generated_code_is_the_recipe_then_the_runner() -> None:
    recipe = check_recipe(SUMS)
    code = generate_code(recipe, RUNNER)
    assert code == generate_code(dict(reversed(list(recipe.items()))), RUNNER)  # order-free
    assert code.endswith(RUNNER) and code.startswith("# task_impl.py of a BUILT subset")
    assert "'prompt_template': 'What is {input.a} + {input.b}?'," in code
    compile(code, "task_impl.py", "exec")
    namespace: dict[str, Any] = {}
    header = code[: code.index(RUNNER)]
    exec(header, namespace)
    assert namespace["RECIPE"] == recipe


def test_the_impl_id_moves_iff_the_recipe_moves() -> None:
    recipe = check_recipe(SUMS)
    impl = built_impl_id(SUB, generate_code(recipe, RUNNER))
    assert impl.startswith(f"{SUB}:") and len(impl.split(":")[1]) == 12
    same = built_impl_id(SUB, generate_code(check_recipe(dict(SUMS)), RUNNER))
    assert same == impl
    for knob, value in [("run_timeout", 900), ("trials", 2), ("temperature", 0.5)]:
        moved = built_impl_id(SUB, generate_code({**recipe, knob: value}, RUNNER))
        assert moved != impl, knob
    # Scoped by subset: the same recipe on forked samples is another impl.
    assert built_impl_id("sub_ba9876543210", generate_code(recipe, RUNNER)) != impl


# -- samples ----------------------------------------------------------------------------------
def test_sample_edits_replace_in_place_append_and_remove() -> None:
    current = rows("a", "b", "c")
    fixed = {"task_id": "b", "input": {"q": "b"}, "expected": "B2"}
    edited, upserted, removed = edit_rows(
        current, [fixed, {"task_id": "d", "input": {}, "expected": "D"}], ["a"]
    )
    assert [r["task_id"] for r in edited] == ["b", "c", "d"]
    assert edited[0] == fixed and (upserted, removed) == (2, 1)
    # An upsert equal to the row it replaces moves nothing.
    same, upserted, removed = edit_rows(current, [current[0]], [])
    assert same == current and (upserted, removed) == (0, 0)


@pytest.mark.parametrize(
    ("upsert", "remove", "field"),
    [
        ([], [], "upsert"),
        ([{"input": 1}], [], "upsert[0].task_id"),
        ([{"task_id": "x"}, {"task_id": "x"}], [], "upsert[1].task_id"),
        ([], ["zz"], "remove[0]"),
        ([{"task_id": "a"}], ["a"], "remove[0]"),
        ([], ["a", "b"], "remove"),
    ],
)
def test_sample_edit_refusals(upsert: list[Any], remove: list[str], field: str) -> None:
    with pytest.raises(Refused) as exc:
        edit_rows(rows("a", "b"), upsert, remove)
    assert exc.value.status == 400 and exc.value.field == field


# -- the aggregates ---------------------------------------------------------------------------
def built(recipe: dict[str, Any]) -> BuiltSubset:
    impl = built_impl_id(SUB, generate_code(recipe, RUNNER))
    return BuiltSubset(
        id=BuiltSubset.create_id(SUB),
        subset_id=SUB,
        benchmark_id="bm_x",
        account="acct_a",
        slug="sums",
        recipe=recipe,
        impl_id=impl,
        predecessor_id=None,
        history=[edit_entry("created", at=NOW, note="", by="acct_a", subset_id=SUB, impl_id=impl)],
        at=NOW,
    )


def test_recipe_edits_are_history_and_retirement_is_final() -> None:
    recipe = check_recipe(SUMS)
    subset = built(recipe)
    first_impl = subset.impl_id
    assert not subset.change_recipe(recipe, first_impl, note="noop", by="acct_a", at=NOW)
    slower = merge_recipe(recipe, {"run_timeout": 900})
    new_impl = built_impl_id(SUB, generate_code(slower, RUNNER))
    later = NOW + timedelta(minutes=1)
    assert subset.change_recipe(slower, new_impl, note="boots slowly", by="acct_a", at=later)
    assert subset.impl_id == new_impl and subset.recipe == slower
    assert [h["kind"] for h in subset.history] == ["created", "recipe"]
    assert subset.history[1]["changes"] == {"run_timeout": [300, 900]}
    assert subset.history[1]["note"] == "boots slowly"

    entry = edit_entry("samples", at=later, note="fix", by="acct_a", subset_id="sub_n", impl_id="i")
    subset.retire("sub_n", entry)
    assert subset.retired and subset.successor_id == "sub_n"
    with pytest.raises(Refused) as exc:
        subset.change_recipe(recipe, first_impl, note="", by="acct_a", at=later)
    assert exc.value.status == 409 and exc.value.code == "subset_retired"
    assert "sub_n" in exc.value.detail
    # Replaying the events rebuilds the same state: handlers only assign.
    events = subset.collect_events()
    copy: BuiltSubset | None = None
    for e in events:
        copy = e.mutate(copy)
    assert copy is not None and copy.history == subset.history and copy.retired


def test_the_index_points_each_slug_at_its_current_subset() -> None:
    index = BuiltIndex(id=BuiltIndex.create_id("acct_a"), account="acct_a")
    index.point("sums", "bm_1", "sub_a")
    index.point("sums", "bm_1", "sub_b")
    index.point("sums", "bm_2", "sub_c")
    index.point("sums", "bm_2", "sub_c")  # no event
    assert index.lookup("sums") == ["sub_b", "sub_c"] and index.lookup("other") == []
    assert len(index.collect_events()) == 4


# -- the runner the generated code ends in ----------------------------------------------------
@pytest.fixture
def load_task(tmp_path: Path) -> Iterator[Any]:
    """Import a generated ``task_impl.py`` the way the sandbox does (bench_task on the path)."""
    saved = list(sys.path)
    sys.path.insert(0, str(RUNTIME))
    names: list[str] = []

    def load(config: dict[str, Any]) -> ModuleType:
        path = tmp_path / f"task_impl_{len(names)}.py"
        path.write_text(generate_code(check_recipe(config), RUNNER))
        name = f"bw_test_built_{len(names)}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        names.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    sys.path[:] = saved
    for name in names:
        sys.modules.pop(name, None)


def test_the_runner_prompts_from_the_template(load_task: Any) -> None:
    module = load_task({**SUMS, "system_prompt": "Be brief.", "max_tokens": 8})
    task = module.Task()
    sent: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def chat(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        sent.append((messages, params))
        return {"choices": [{"message": {"content": "It is 12."}}]}

    task.chat = chat
    assert task.solve(0, {"a": 5, "b": 7}) == "It is 12."
    messages, params = sent[0]
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 5 + 7?"},
    ]
    assert params == {"temperature": 0.0, "max_tokens": 8}
    with pytest.raises(KeyError):
        task.solve(1, {"a": 1})
    assert module.render("{{x}} {input}", {"k": [1]}) == '{x} {"k": [1]}'
    assert module.render("{input.k.0}", {"k": ["first"]}) == "first"


@pytest.mark.parametrize(
    ("config", "output", "expected", "score", "answer"),
    [
        ({}, "  Paris \n", "paris", 1.0, "Paris"),
        ({"case_sensitive": True}, "Paris", "paris", 0.0, "Paris"),
        ({"extraction": "last_line"}, "thinking\nParis\n", ["Lyon", "Paris"], 1.0, "Paris"),
        ({"extraction": "last_number", "grading": "numeric"}, "1,234.0 is it", 1234, 1.0, "1234.0"),
        (
            {"extraction": "last_number", "grading": "numeric", "tolerance": 0.01},
            "3.141",
            "3.14",
            1.0,
            "3.141",
        ),
        ({"extraction": "last_number", "grading": "numeric"}, "no number", "3", 0.0, None),
        ({"answer_pattern": r"ANSWER:\s*(\w+)"}, "ANSWER: b ... ANSWER: C", "c", 1.0, "C"),
        ({"grading": "contains"}, "The capital is Paris, France.", "paris", 1.0, None),
        ({"grading": "regex"}, "colour", "colou?r", 1.0, "colour"),
    ],
)
def test_the_runner_extracts_and_grades(
    load_task: Any,
    config: dict[str, Any],
    output: str,
    expected: Any,
    score: float,
    answer: str | None,
) -> None:
    task = load_task(config).Task()
    result = task.score(0, output, expected)
    assert result["score"] == score
    if answer is not None or score == 0.0:
        assert result["answer"] == answer
    with pytest.raises(ValueError):
        task.score(0, output, None)


def test_a_judge_graded_runner_asks_the_judge_with_the_rubric(load_task: Any) -> None:
    task = load_task({**SUMS, "grading": "judge", "rubric": RUBRIC}).Task()
    task._rows = [{"task_id": "s", "input": {"a": 5, "b": 7}, "expected": "12"}]
    asked: list[str] = []

    def judge(prompt: str, **params: Any) -> str:
        # A scripted judge: the first criterion met, the second not.
        asked.append(prompt)
        return "It states 12 but shows nothing.\nCRITERION 1: YES\nCRITERION 2: NO"

    task.judge = judge
    result = task.score(0, "It is 12.", "12")
    (prompt,) = asked
    assert "What is 5 + 7?" in prompt and "It is 12." in prompt and "reference answer: 12" in prompt
    assert "1. States the sum" in prompt and "2. Shows the working" in prompt
    assert result["score"] == pytest.approx(2 / 3) and result["met"] == [True, False]
