"""``benchwright_shared.judging``: whether a scorer calls the judge, and whether its rubric
holds up, read from its code before any run."""

import math
from typing import Any

import pytest

from benchwright_shared.judging import (
    RubricError,
    RubricProblem,
    check_rubric,
    require_rubric,
    scorer_rubric_problems,
    uses_judge,
)
from benchwright_shared.scorers import JUDGE_SCORERS, SCORERS, read_settings, scorer_source

HEAD = "from bench_task import BenchTask\n\n\nclass Task(BenchTask):\n"


@pytest.mark.parametrize(
    "code",
    [
        "import bench_judge\n",
        "from bench_judge import grade_qa\n",
        HEAD
        + "    def score(self, i, o, e):\n        import bench_judge as j\n        return 1.0\n",
        HEAD + "    def score(self, i, o, e):\n        return float(self.judge(o) == 'yes')\n",
        HEAD + "    def score(self, i, o, e):\n        r = self.judge_chat([], judge='j/a')\n",
        HEAD + "    def score(self, i, o, e):\n        return super().judge(o)\n",
        "import os\nKEY = os.environ['BW_JUDGE_PROXY_KEY']\n",
    ],
)
def test_code_that_calls_the_judge_is_seen(code: str) -> None:
    assert uses_judge(code)


@pytest.mark.parametrize(
    "code",
    [
        HEAD + "    def score(self, i, o, e):\n        return 1.0\n",
        # Mentions are not calls: a comment, a docstring, another object's method.
        HEAD + '    """Could use self.judge(...) and bench_judge."""\n    # self.judge(o)\n',
        HEAD + "    def score(self, i, o, e):\n        return court.judge(o)\n",
        HEAD + "    def score(self, i, o, e):\n        return self.judge\n",
        "import bench_judgement\n",
        "def broken(:\n    self.judge()\n",
    ],
)
def test_code_that_does_not_call_the_judge_is_not(code: str) -> None:
    assert not uses_judge(code)


@pytest.mark.parametrize("name", SCORERS)
def test_the_shipped_judge_scorers_use_the_judge_and_no_other_does(name: str) -> None:
    assert uses_judge(scorer_source(name)) == (name in JUDGE_SCORERS)


def test_a_sound_rubric_has_no_problem() -> None:
    assert check_rubric([{"criterion": "a", "weight": 0}, {"criterion": "b", "weight": 2.5}]) == []
    assert check_rubric(({"criterion": "a"},)) == []  # the weight defaults to 1
    require_rubric([{"criterion": "a", "weight": 1}])


@pytest.mark.parametrize(
    ("criteria", "problems"),
    [
        (None, [("rubric", "a rubric is a non-empty list of criteria")]),
        ([], [("rubric", "a rubric is a non-empty list of criteria")]),
        (
            [{"criterion": "a", "weight": -0.5}],
            [("rubric[0].weight", "must be finite and >= 0, not -0.5")],
        ),
        (
            [{"criterion": "a", "weight": math.nan}],
            [("rubric[0].weight", "must be finite and >= 0, not nan")],
        ),
        (
            [{"criterion": "a", "weight": 0}, {"criterion": "b", "weight": 0.0}],
            [("rubric", "the weights sum to 0; at least one must be positive")],
        ),
        ([{"criterion": "a", "weight": "1"}], [("rubric[0].weight", "must be a number, not '1'")]),
        (
            [{"criterion": "a", "weight": False}],
            [("rubric[0].weight", "must be a number, not False")],
        ),
        (
            # Every problem, each criterion's in order.
            [{"criterion": "ok", "weight": 1}, {"weight": -1, "note": 2}, 3],
            [
                ("rubric[1].note", "not a field of a criterion"),
                ("rubric[1].criterion", "must be a non-empty text"),
                ("rubric[1].weight", "must be finite and >= 0, not -1"),
                ("rubric[2]", "a criterion is {'criterion': text, 'weight': n}"),
            ],
        ),
    ],
)
def test_each_problem_of_a_rubric_names_its_field(
    criteria: Any, problems: list[tuple[str, str]]
) -> None:
    assert check_rubric(criteria) == [RubricProblem(f, d) for f, d in problems]
    with pytest.raises(RubricError) as caught:
        require_rubric(criteria, "recipe.rubric")
    assert caught.value.field == "recipe." + problems[0][0]
    assert len(caught.value.problems) == len(problems)


def test_a_judge_scorer_s_settings_hold_its_prompt_and_rubric() -> None:
    settings = read_settings(scorer_source("judge_rubric"))
    rubric = settings["RUBRIC"]
    assert isinstance(rubric, list) and [c["weight"] for c in rubric] == [2.0, 3.0, 1.0, 1.0]
    assert isinstance(settings["TEMPLATE"], str) and "{criteria}" in settings["TEMPLATE"]
    assert settings["MAX_TOKENS"] == 512
    assert read_settings(scorer_source("judge_panel"))["PANEL_MODE"] == "majority"
    assert scorer_rubric_problems(scorer_source("judge_rubric")) == []


def test_a_bad_rubric_in_a_scorer_s_settings_is_found() -> None:
    source = scorer_source("judge_rubric").replace('"weight": 3.0', '"weight": -3.0')
    assert scorer_rubric_problems(source) == [
        RubricProblem("RUBRIC[1].weight", "must be finite and >= 0, not -3.0")
    ]
    # No settings block, or none with a rubric: nothing to check.
    assert scorer_rubric_problems("print(1)\n") == []
    assert scorer_rubric_problems(scorer_source("judge_qa")) == []
