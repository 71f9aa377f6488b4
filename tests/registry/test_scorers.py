"""The built-in catalog's scorers (``benchwright_shared.scorers``), loaded the way a work
sandbox loads them: from their files, with only the sandbox runtime (``bench_task``) on
the path. No model is called."""

import importlib.util
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchwright_registry.catalog import builtin_catalog, impl_code

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "services/sandbox-manager/benchwright_sandbox_manager/runtime"
SCORERS = ROOT / "shared/benchwright_shared/scorers"
SANDBOX_MODULES = ("bench_task", "bench_runner", "task_impl")

Loader = Callable[[str], ModuleType]


def _rows(name: str) -> list[dict[str, Any]]:
    benchmark = next(b for b in builtin_catalog() if b.name == name)
    return benchmark.subsets[0].load_rows()


@pytest.fixture(scope="module")
def gsm8k_rows() -> list[dict[str, Any]]:
    return _rows("GSM8K")


@pytest.fixture(scope="module")
def humaneval_rows() -> list[dict[str, Any]]:
    return _rows("HumanEval")


@pytest.fixture
def load_module() -> Iterator[Loader]:
    """Import a file from the scorer or runtime directory; undo every trace afterwards."""
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.get(name) for name in SANDBOX_MODULES}
    loaded: list[str] = []
    sys.path.insert(0, str(RUNTIME))

    def load(path: str) -> ModuleType:
        file = Path(path) if Path(path).is_absolute() else SCORERS / f"{path}.py"
        name = f"bw_test_scorer_{file.stem}"
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loaded.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    sys.path[:] = saved_path
    for name in loaded:
        sys.modules.pop(name, None)
    for name, module in saved_modules.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


@pytest.fixture
def gsm8k(load_module: Loader) -> ModuleType:
    return load_module("math")


@pytest.fixture
def humaneval(load_module: Loader) -> ModuleType:
    return load_module("code")


@pytest.fixture
def humaneval_data(humaneval_rows: list[dict[str, Any]], tmp_path: Path) -> Path:
    """The HumanEval rows as the dataset file a sandbox holds."""
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in humaneval_rows), encoding="utf-8")
    return data


@pytest.fixture
def humaneval_task(humaneval: ModuleType, humaneval_data: Path) -> Any:
    """A HumanEval ``Task`` whose rows ``extract`` has loaded, as the runner's always are:
    the tests are in each row's input, which ``score`` reads from them."""
    task = humaneval.Task()
    task.extract(str(humaneval_data), 0)
    return task


def _fenced(code: str) -> str:
    return f"Here is the completed function:\n```python\n{code}```\nIt passes the examples."


# -- GSM8K ----------------------------------------------------------------------


def test_gsm8k_reference_answers_score_full(
    gsm8k: ModuleType, gsm8k_rows: list[dict[str, Any]]
) -> None:
    task = gsm8k.Task()
    for index, row in enumerate(gsm8k_rows[:20]):
        reply = f"Let me work it out step by step. 2 + 3 = 5. The answer is {row['expected']}."
        assert task.score(index, reply, row["expected"]) == {
            "score": 1.0,
            "parsed": row["expected"],
        }


def test_gsm8k_wrong_answers_score_zero(
    gsm8k: ModuleType, gsm8k_rows: list[dict[str, Any]]
) -> None:
    task = gsm8k.Task()
    for index, row in enumerate(gsm8k_rows[:20]):
        wrong = str(int(row["expected"]) + 1)
        result = task.score(index, f"The answer is {wrong}.", row["expected"])
        assert result == {"score": 0.0, "parsed": wrong}


@pytest.mark.parametrize(
    ("reply", "expected", "parsed"),
    [
        ("She spends $1,234.00 in total. The answer is $1,234.00.", "1234", "1234"),
        ("Janet sells 9 eggs at $2 each.\n#### 18", "18", "18"),
        ("She has 16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars", "18", "18"),
        ("The answer is: **42** apples", "42", "42"),
        ("The final answer is 7.5 hours.", "7.5", "7.5"),
        ("It was - 10 degrees. So the answer is - 10.", "-10", "-10"),
        ("So 10 - 13 = -3. The answer is -3", "-3", "-3"),
        ("The answer is 50%.", "50", "50"),
        (
            "The answer is 6.\nQuestion: Tom has 3 cats and 4 dogs.\nAnswer: The answer is 7.",
            "6",
            "6",
        ),
        ("The answer is 5. Oh wait, I made an error: The answer is 4.", "4", "4"),
    ],
)
def test_gsm8k_parses_common_answer_formats(
    gsm8k: ModuleType, reply: str, expected: str, parsed: str
) -> None:
    assert gsm8k.Task().score(0, reply, expected) == {"score": 1.0, "parsed": parsed}


@pytest.mark.parametrize("reply", ["", "I don't know.", "The answer is eighteen."])
def test_gsm8k_reply_without_a_number_scores_zero(gsm8k: ModuleType, reply: str) -> None:
    assert gsm8k.Task().score(0, reply, "18") == {"score": 0.0, "parsed": None}


def test_gsm8k_does_not_read_subtraction_as_a_sign(gsm8k: ModuleType) -> None:
    assert gsm8k.extract_answer("so 5-3 leaves 2") == "2"
    assert gsm8k.extract_answer("5-3") == "3"


def test_gsm8k_solve_prompts_for_the_answer_format(
    gsm8k: ModuleType, gsm8k_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = gsm8k.Task()
    calls: list[tuple[str, dict[str, Any]]] = []

    def complete(prompt: str, **params: Any) -> str:
        calls.append((prompt, params))
        return "16 - 3 - 4 = 9 eggs; 9 * 2 = 18. The answer is 18."

    monkeypatch.setattr(task, "complete", complete)
    row = gsm8k_rows[0]
    output = task.solve(0, row["input"])
    assert task.score(0, output, row["expected"])["score"] == 1.0
    [(prompt, params)] = calls
    assert prompt.rstrip().endswith(f"Question: {row['input']['question']}\nAnswer:")
    assert "The answer is" in prompt
    # The prompt must leave room to answer in a 2048-token context.
    assert len(prompt) < 2000
    assert params["temperature"] == 0 and params["max_tokens"] <= 256


def test_gsm8k_solve_goes_through_chat(
    gsm8k: ModuleType, gsm8k_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = gsm8k.Task()
    sent: list[list[dict[str, Any]]] = []

    def chat(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        sent.append(messages)
        return {"choices": [{"message": {"role": "assistant", "content": "The answer is 3."}}]}

    monkeypatch.setattr(task, "chat", chat)
    assert task.solve(1, gsm8k_rows[1]["input"]) == "The answer is 3."
    assert sent[0][0]["role"] == "user"
    assert gsm8k_rows[1]["input"]["question"] in sent[0][0]["content"]


# -- HumanEval ------------------------------------------------------------------


def test_humaneval_canonical_solutions_pass(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]]
) -> None:
    task = humaneval_task
    for index, row in enumerate(humaneval_rows[:10]):
        reply = _fenced(row["input"]["prompt"] + row["expected"]["canonical_solution"])
        result = task.score(index, reply, row["expected"])
        assert result["score"] == 1.0, result
        assert result["exit_code"] == 0 and result["timeout"] is False


def test_humaneval_broken_solution_fails(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]]
) -> None:
    row = humaneval_rows[0]
    reply = _fenced(row["input"]["prompt"] + "    return not True\n")
    result = humaneval_task.score(0, reply, row["expected"])
    assert result["score"] == 0.0
    assert result["exit_code"] != 0 and result["timeout"] is False
    assert "AssertionError" in result["stderr_tail"]


def test_humaneval_syntax_error_fails(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]]
) -> None:
    row = humaneval_rows[2]
    result = humaneval_task.score(2, "def truncate_number(:\n  pass", row["expected"])
    assert result["score"] == 0.0 and "SyntaxError" in result["stderr_tail"]


def _loop_forever(row: dict[str, Any]) -> str:
    return _fenced(row["input"]["prompt"] + "    while True:\n        pass\n")


@pytest.mark.slow
def test_humaneval_infinite_loop_times_out(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]]
) -> None:
    row = humaneval_rows[0]
    started = time.monotonic()
    result = humaneval_task.score(0, _loop_forever(row), row["expected"])
    assert time.monotonic() - started < 15
    assert result["score"] == 0.0 and result["timeout"] is True


def test_humaneval_short_timeout_kills_the_candidate(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]]
) -> None:
    task = humaneval_task
    task.timeout_s = 0.5
    started = time.monotonic()
    result = task.score(0, _loop_forever(humaneval_rows[0]), humaneval_rows[0]["expected"])
    assert time.monotonic() - started < 5
    assert result["score"] == 0.0 and result["timeout"] is True


def test_humaneval_candidate_cannot_see_the_model_key(
    humaneval_task: Any, humaneval_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_MODEL_PROXY_KEY", "secret")
    row = humaneval_rows[0]
    leak_check = "import os\nassert 'BW_MODEL_PROXY_KEY' not in os.environ\n"
    reply = _fenced(leak_check + row["input"]["prompt"] + row["expected"]["canonical_solution"])
    assert humaneval_task.score(0, reply, row["expected"])["score"] == 1.0


def test_humaneval_solve_then_body_only_reply(
    humaneval: ModuleType, humaneval_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # HumanEval/10 calls a helper defined only in the prompt, so the scorer must
    # put the prompt back in front of a reply that is just the function body.
    row = humaneval_rows[10]
    task = humaneval.Task()
    calls: list[tuple[str, dict[str, Any]]] = []

    def complete(prompt: str, **params: Any) -> str:
        calls.append((prompt, params))
        return str(row["expected"]["canonical_solution"])

    monkeypatch.setattr(task, "complete", complete)
    output = task.solve(10, row["input"])
    [(prompt, params)] = calls
    assert row["input"]["prompt"].rstrip() in prompt and "```python" in prompt
    assert params["temperature"] == 0
    assert task.score(10, output, row["expected"])["score"] == 1.0


def test_humaneval_reads_the_tests_from_expected_too(
    humaneval: ModuleType, humaneval_rows: list[dict[str, Any]]
) -> None:
    """Rows shaped as the catalog shipped them before decision 0028 (the tests in
    ``expected``) still score, with no rows loaded; rows with no tests cannot."""
    row = humaneval_rows[0]
    earlier = {**row["expected"], "test": row["input"]["test"]}
    reply = _fenced(row["input"]["prompt"] + row["expected"]["canonical_solution"])
    assert humaneval.Task().score(0, reply, earlier)["score"] == 1.0
    with pytest.raises(ValueError, match="no tests"):
        humaneval.Task().score(0, reply, row["expected"])


def test_humaneval_extract_code_prefers_the_defining_block(humaneval: ModuleType) -> None:
    reply = "```python\nprint('usage')\n```\nand\n```py\ndef f(x):\n    return x\n```"
    assert humaneval.extract_code(reply, "f") == "def f(x):\n    return x\n"
    unclosed = "```python\ndef f(x):\n    return x\n"
    assert humaneval.extract_code(unclosed, "f") == "def f(x):\n    return x\n"
    prose = "Sure, here it is:\ndef f(x):\n    return x\n"
    assert humaneval.extract_code(prose, "f") == "def f(x):\n    return x\n"


def test_runner_scores_catalog_rows_end_to_end(
    load_module: Loader,
    humaneval_rows: list[dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """impl_code() text, written out as task_impl.py and run by bench_runner."""
    impl = tmp_path / "task_impl.py"
    impl.write_text(impl_code("code"), encoding="utf-8")
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in humaneval_rows), encoding="utf-8")
    runner = load_module(str(RUNTIME / "bench_runner.py"))
    task = runner.load_task(str(impl))
    row = humaneval_rows[10]

    def complete(prompt: str, **params: Any) -> str:
        return str(row["expected"]["canonical_solution"])

    monkeypatch.setattr(task, "complete", complete)

    result = runner.run_one(task, str(data), 10, 0)
    assert result["task_id"] == "HumanEval/10"
    assert result["outcome"] == "pass" and result["score"] == 1.0
    assert result["score_meta"]["exit_code"] == 0

    # A re-score without solve() still finds the prompt in the loaded rows.
    fresh = runner.load_task(str(impl))
    fresh.extract(str(data), 10)
    assert fresh.score(10, row["expected"]["canonical_solution"], row["expected"])["score"] == 1.0
