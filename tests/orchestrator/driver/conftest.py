"""Load generated scorers the way a work sandbox does: from a file, beside ``bench_task``."""

import importlib.util
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import Analysis, analyze_rows, write_scorer
from tests.orchestrator.driver.data import ROWS_BY_KIND

ROOT = Path(__file__).resolve().parents[3]
BENCH_TASK = ROOT / "services/sandbox-manager/benchwright_sandbox_manager/runtime/bench_task.py"

Loader = Callable[[str], ModuleType]


@pytest.fixture
def sandbox_dir(tmp_path: Path) -> Path:
    """A directory holding a copy of the sandbox runtime's ``bench_task.py``."""
    shutil.copy(BENCH_TASK, tmp_path / "bench_task.py")
    return tmp_path


@pytest.fixture
def load_scorer(sandbox_dir: Path) -> Iterator[Loader]:
    """Import scorer source as a fresh module beside ``bench_task``; undo it afterwards."""
    saved_path = list(sys.path)
    saved_bench_task = sys.modules.pop("bench_task", None)
    sys.path.insert(0, str(sandbox_dir))
    loaded: list[str] = []

    def load(code: str) -> ModuleType:
        name = f"bw_driver_scorer_{len(loaded)}"
        path = sandbox_dir / f"{name}.py"
        path.write_text(code, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
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
    sys.modules.pop("bench_task", None)
    if saved_bench_task is not None:
        sys.modules["bench_task"] = saved_bench_task


def analysis_for(kind: str) -> Analysis:
    return analyze_rows(ROWS_BY_KIND[kind])


@pytest.fixture
def scorer_for(load_scorer: Loader) -> Callable[..., Any]:
    """``scorer_for(kind, guidance=None)``: a ``Task`` instance of that kind's scorer."""

    def make(kind: str, guidance: str | None = None) -> Any:
        return load_scorer(write_scorer(analysis_for(kind), guidance)).Task()

    return make


class FakeChat:
    """Stands in for ``BenchTask.chat``: records each request, answers from a script."""

    def __init__(self, *replies: dict[str, Any] | str) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        self.requests.append({"messages": messages, **params})
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        message = {"role": "assistant", "content": reply} if isinstance(reply, str) else reply
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    @property
    def prompt(self) -> str:
        return str(self.requests[-1]["messages"][-1]["content"])
