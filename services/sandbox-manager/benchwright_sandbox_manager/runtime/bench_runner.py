"""Runs a scorer over tasks named on stdin and reports results on stdout.

Input: one JSON object per line, ``{"index": i, "trial": t}``. Output: one JSON
object per finished task. The runner never dies with a task: an exception in
``extract``/``solve``/``score`` becomes an ``err`` row naming its class.

``--check`` proves a scorer without a model: input lines are
``{"index": i, "output": "<a reply>"}`` and each runs ``extract`` and ``score``
only (no ``solve``), printing the same result rows. A Driver runs it over
reference answers before a sweep: they should all pass.

A rescore's line carries the output another run recorded, ``{"index": i, "trial": t,
"given_output": "..."}``: that task is extracted and scored like any other (its model
calls, a judge's, metered to it), but ``solve`` never runs, so the model under test is
never called (decision 0062).
"""

import argparse
import importlib.util
import json
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

OUTPUT_LIMIT = 65536


def load_task(impl_path: str) -> Any:
    # The runner starts with -E (no PYTHON* variables): the libraries scorers may
    # import (``requests``...) are named by the sandbox in BW_SCORER_PATH instead.
    for place in os.environ.get("BW_SCORER_PATH", "").split(os.pathsep):
        if place and place not in sys.path:
            sys.path.append(place)
    spec = importlib.util.spec_from_file_location("task_impl", impl_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {impl_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["task_impl"] = module
    spec.loader.exec_module(module)
    from bench_task import BenchTask, patch_requests

    if "requests" in sys.modules:
        patch_requests()  # model calls through requests retry like BenchTask.chat's

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


def run_one(
    task: Any,
    data_path: str,
    index: int,
    trial: int,
    deadline: float | None = None,
    given: str | None = None,
) -> dict[str, Any]:
    """Extract, solve (one model call or more), score; with ``given`` (a rescore), score
    that output instead of solving: the scorer's own calls (a judge's) are still metered."""
    if given is None:
        stage, produce = "solve", lambda row: task.solve(index, row.get("input"))
    else:
        stage, produce = "rescore", lambda _row: given
    return _attributed(
        index, trial, deadline, lambda: _run(task, data_path, index, trial, stage, produce)
    )


def check_one(
    task: Any, data_path: str, index: int, trial: int, given: Any, deadline: float | None = None
) -> dict[str, Any]:
    """Extract and score an output given in advance (``--check``): no model call. A
    scorer's judge calls are the task's all the same (its call ids and spend)."""

    def output(_row: dict[str, Any]) -> Any:
        if given is None:
            raise ValueError(f"no output given for index {index}")
        return given

    return _attributed(
        index, trial, deadline, lambda: _run(task, data_path, index, trial, "check", output)
    )


def _attributed(
    index: int, trial: int, deadline: float | None, work: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """``work()``'s result row, its calls attributed to the task (their ids, the retry
    deadline) and their spend added to it."""
    from bench_task import begin_task, end_task, task_spend

    begin_task(index, trial, deadline)
    try:
        result = work()
        spend, over = task_spend()
        if spend is not None:
            result |= spend
        if over is not None and result["outcome"] != "err":
            # The proxy metered the task past its ceiling on the last call it let through.
            result |= {
                "outcome": "err",
                "error_type": f"limit_exceeded:{over}",
                "error": f"the task's model calls went over its {over} ceiling",
            }
            result.pop("score", None)
        return result
    finally:
        end_task()


def _run(
    task: Any,
    data_path: str,
    index: int,
    trial: int,
    produce_stage: str,
    produce: Callable[[dict[str, Any]], Any],
) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {"index": index, "trial": trial, "task_id": str(index)}
    stage = "extract"
    try:
        row = task.extract(data_path, index)
        result["task_id"] = str(row.get("task_id", index))
        if isinstance(row.get("category"), str):
            result["group"] = row["category"]
        stage = produce_stage
        output = produce(row)
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
        # A failure of the platform (the proxy unreachable) is named as such, not as the
        # scorer's (benchwright_shared.outcomes).
        result["error_type"] = (
            getattr(exc, "infra_error", None)
            or getattr(exc, "task_error_type", None)
            or f"{stage}:{type(exc).__name__}"
        )
        result["error"] = "".join(traceback.format_exception_only(exc)).strip()[:2000]
    result["duration_ms"] = int((time.perf_counter() - started) * 1000)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", default="task_impl.py")
    parser.add_argument("--data", default="tasks.jsonl")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--task-timeout",
        type=float,
        default=None,
        help="seconds one task may take; past it the task is reported as an err row",
    )
    parser.add_argument(
        "--announce",
        action="store_true",
        help='print {"started": [index, trial]} as each task begins (for live views)',
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help='score given outputs: stdin lines {"index": i, "output": "..."}; no model call',
    )
    args = parser.parse_args()

    task = load_task(args.impl)
    out_lock = threading.Lock()
    runner_pid = os.getpid()

    reported: set[int] = set()

    def report(item: int, result: dict[str, Any]) -> None:
        if os.getpid() != runner_pid:
            # A copy the scorer forked (a fork bomb, say) never reports a row: it ends.
            os._exit(0)
        # Exactly one row per input line: a task that overran its ceiling was
        # already reported as an err row, and its late result is dropped.
        with out_lock:
            if item in reported:
                return
            reported.add(item)
            sys.stdout.write(json.dumps(result) + "\n")
            sys.stdout.flush()

    def announce(index: int, trial: int) -> None:
        if args.announce:
            with out_lock:
                sys.stdout.write(json.dumps({"started": [index, trial]}) + "\n")
                sys.stdout.flush()

    def overran(item: int, index: int, trial: int, started: float) -> None:
        report(
            item,
            {
                "index": index,
                "trial": trial,
                "task_id": str(index),
                "outcome": "err",
                "error_type": "timeout",
                "error": f"the task overran its {args.task_timeout:g}s ceiling",
                "duration_ms": int((time.perf_counter() - started) * 1000),
            },
        )

    def work(item: int, index: int, trial: int, spec: dict[str, Any]) -> None:
        announce(index, trial)
        watchdog = None
        if args.task_timeout:
            # Threads cannot be killed: the row is written at the ceiling, and the
            # model call itself is bounded by BW_MODEL_TIMEOUT.
            watchdog = threading.Timer(
                args.task_timeout, overran, (item, index, trial, time.perf_counter())
            )
            watchdog.daemon = True
            try:
                watchdog.start()
            except RuntimeError:  # no thread to spare (the sandbox's process limit)
                watchdog = None
        try:
            deadline = time.monotonic() + args.task_timeout if args.task_timeout else None
            if args.check:
                result = check_one(task, args.data, index, trial, spec.get("output"), deadline)
            else:
                given = spec.get("given_output")
                result = run_one(task, args.data, index, trial, deadline, given)
        finally:
            if watchdog is not None:
                watchdog.cancel()
        report(item, result)

    # Every worker starts before any task runs: a scorer that exhausts the
    # sandbox's process limit (a fork bomb) cannot stop the others being served.
    jobs: queue.SimpleQueue[tuple[int, int, int, dict[str, Any]] | None] = queue.SimpleQueue()

    def worker() -> None:
        while (job := jobs.get()) is not None:
            try:
                work(*job)
            except Exception:
                traceback.print_exc()

    workers = [threading.Thread(target=worker) for _ in range(max(1, args.concurrency))]
    for thread in workers:
        thread.start()
    for item, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        spec = json.loads(line)
        jobs.put((item, int(spec["index"]), int(spec.get("trial", 0)), spec))
    for _ in workers:
        jobs.put(None)
    for thread in workers:
        thread.join()


if __name__ == "__main__":
    main()
