"""Runs a scorer over tasks named on stdin and reports results on stdout.

Input: one JSON object per line, ``{"index": i, "trial": t}``. Output: one JSON
object per finished task. The runner never dies with a task: an exception in
``extract``/``solve``/``score`` becomes an ``err`` row naming its class.
"""

import argparse
import importlib.util
import json
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

OUTPUT_LIMIT = 65536


def load_task(impl_path: str) -> Any:
    spec = importlib.util.spec_from_file_location("task_impl", impl_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {impl_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["task_impl"] = module
    spec.loader.exec_module(module)
    from bench_task import BenchTask

    task_cls = getattr(module, "Task", None)
    if task_cls is None:
        candidates = [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, BenchTask) and v is not BenchTask
        ]
        if not candidates:
            raise ImportError("task_impl.py defines no BenchTask subclass")
        task_cls = candidates[0]
    return task_cls()


def run_one(task: Any, data_path: str, index: int, trial: int) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {"index": index, "trial": trial, "task_id": str(index)}
    stage = "extract"
    try:
        row = task.extract(data_path, index)
        result["task_id"] = str(row.get("task_id", index))
        stage = "solve"
        output = task.solve(index, row.get("input"))
        output = output if isinstance(output, str) else json.dumps(output)
        result["output"] = output[:OUTPUT_LIMIT]
        stage = "score"
        scored = task.score(index, output, row.get("expected"))
        if isinstance(scored, dict):
            score = float(scored["score"])
            result["score_meta"] = {k: v for k, v in scored.items() if k != "score"}
        else:
            score = float(scored)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"score {score} is outside [0, 1]")
        result["score"] = score
        result["outcome"] = "pass" if score >= 1.0 else "fail"
    except Exception as exc:
        result["outcome"] = "err"
        result["error_type"] = f"{stage}:{type(exc).__name__}"
        result["error"] = "".join(traceback.format_exception_only(exc)).strip()[:2000]
    result["duration_ms"] = int((time.perf_counter() - started) * 1000)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", default="task_impl.py")
    parser.add_argument("--data", default="tasks.jsonl")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    task = load_task(args.impl)
    out_lock = threading.Lock()

    def work(index: int, trial: int) -> None:
        result = run_one(task, args.data, index, trial)
        line = json.dumps(result)
        with out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    with ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
        for line in sys.stdin:
            if not line.strip():
                continue
            spec = json.loads(line)
            pool.submit(work, int(spec["index"]), int(spec.get("trial", 0)))


if __name__ == "__main__":
    main()
