"""Runs a team's Inspect AI task in the sandbox and reports each sample as a task result.

``list``: load the task (``arith.py`` or ``arith.py@arith``, with its arguments),
write its sample ids in dataset order to ``--samples`` (index ``i`` of the run is
the ``i``-th id) and print how many there are, their SHA-256 and the first few.

``run``: read ``{"index": i, "trial": t}`` lines on stdin, evaluate those samples with
Inspect (``inspect_ai.eval``: what ``inspect eval`` runs) against the run's model
proxy as an OpenAI-compatible provider, and print one result row per (index, trial)
on stdout, the shape ``bench_runner`` prints. Trials are Inspect's epochs (trial
``t`` is epoch ``t + 1``). Samples go to Inspect a chunk at a time, so results
stream and a halt loses one chunk at most; each chunk leaves its ``.eval`` log in
``--log-dir``.

A sample's score is Inspect's first scorer's value mapped to [0, 1] by Inspect's own
``value_to_float`` (C 1, P 0.5, I and N 0; numbers as they are; clamped), and it
passes when that is 1. The raw value, the scorer and the rule go in ``score_meta``.
A sample Inspect could not finish is ``err`` with Inspect's message.

The model is reached only through the proxy: ``BW_MODEL_PROXY_URL``,
``BW_MODEL_PROXY_KEY`` (the run's fake key), ``BW_MODEL_MODEL``.
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

OUTPUT_LIMIT = 65536
# Samples per Inspect evaluation: a chunk's results leave when it ends.
CHUNK = 25
PROVIDER = "bwproxy"
SCORE_RULE = "inspect_ai.scorer.value_to_float, clamped to [0, 1]; pass when 1.0"


def _library_path() -> None:
    # Started with -E (no PYTHON* variables): the sandbox names the libraries here,
    # Inspect's among them (BW_HARNESS_PATH, the harness's read-only site-packages).
    for variable in ("BW_SCORER_PATH", "BW_HARNESS_PATH"):
        for place in os.environ.get(variable, "").split(os.pathsep):
            if place and place not in sys.path:
                sys.path.append(place)


def _offline() -> None:
    # Nothing in a sandbox reaches the Hugging Face hub: fail at once, not after retries.
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("INSPECT_DISPLAY", "none")


def load_task(spec: str, task_args: dict[str, Any]) -> Any:
    """The ``Task`` that ``spec`` (``file.py`` or ``file.py@name``) names, built with its args."""
    from inspect_ai._eval.loader import load_tasks

    tasks = load_tasks([spec], task_args=task_args)
    if len(tasks) != 1:
        names = ", ".join(t.name for t in tasks) or "none"
        raise SystemExit(f"{spec} holds {len(tasks)} tasks ({names}): name one as file.py@name")
    return tasks[0]


def sample_ids(spec: str, task_args: dict[str, Any]) -> list[str]:
    """The task's sample ids in dataset order; Inspect numbers unnamed samples from 1."""
    task = load_task(spec, task_args)
    return [str(s.id if s.id is not None else n) for n, s in enumerate(task.dataset, start=1)]


def score_of(sample: Any) -> tuple[float | None, dict[str, Any]]:
    """The first scorer's value as a score in [0, 1], with what it was made from."""
    from inspect_ai.scorer import value_to_float

    if not sample.scores:
        return None, {}
    name, found = next(iter(sample.scores.items()))
    value = found.value
    score = min(1.0, max(0.0, float(value_to_float()(value))))
    meta = {
        "inspect_scorer": name,
        "inspect_value": value if isinstance(value, str | int | float | bool) else str(value),
        "inspect_answer": found.answer,
        "inspect_explanation": (found.explanation or "")[:2000] or None,
        "score_rule": SCORE_RULE,
    }
    return score, meta


def result_row(index: int, trial: int, sample: Any) -> dict[str, Any]:
    """One (index, trial) as ``bench_runner`` reports it."""
    row: dict[str, Any] = {"index": index, "trial": trial, "task_id": str(sample.id)}
    completion = sample.output.completion if sample.output is not None else ""
    row["output"] = (completion or "")[:OUTPUT_LIMIT]
    seconds = sample.total_time or sample.working_time
    row["duration_ms"] = int((seconds or 0) * 1000)
    subject = (sample.metadata or {}).get("subject")
    if isinstance(subject, str):
        row["group"] = subject
    if sample.error is not None:
        row |= {"outcome": "err", "error_type": "inspect:sample_error"}
        row["error"] = sample.error.message[:2000]
        return row
    score, meta = score_of(sample)
    if score is None:
        row |= {"outcome": "err", "error_type": "inspect:no_score", "error": "no scorer ran"}
        return row
    row |= {"score": score, "score_meta": meta, "outcome": "pass" if score >= 1.0 else "fail"}
    return row


def evaluate(
    spec: str,
    task_args: dict[str, Any],
    ids: list[str],
    epochs: int,
    *,
    concurrency: int,
    timeout_s: float,
    log_dir: str,
    max_retries: int,
) -> Any:
    """One Inspect evaluation of ``ids`` for ``epochs`` epochs; its log."""
    from inspect_ai import eval as inspect_eval

    base = os.environ["BW_MODEL_PROXY_URL"].rstrip("/")
    [log] = inspect_eval(
        spec,
        model=f"openai-api/{PROVIDER}/{os.environ.get('BW_MODEL_MODEL') or 'model'}",
        model_base_url=f"{base}/v1",
        model_args={"api_key": os.environ.get("BW_MODEL_PROXY_KEY") or "none"},
        task_args=task_args,
        sample_id=ids,
        epochs=epochs,
        log_dir=log_dir,
        log_format="eval",
        display="none",
        fail_on_error=False,
        max_retries=max_retries,
        timeout=int(timeout_s),
        max_connections=concurrency,
        max_samples=concurrency,
    )
    return log


def run(args: argparse.Namespace, task_args: dict[str, Any]) -> int:
    listing = Path(args.samples)
    if not listing.exists():  # a sandbox rebuilt from the task files, not a snapshot
        listing.write_text(json.dumps(sample_ids(args.task, task_args)))
    ids = json.loads(listing.read_text())
    wanted: dict[tuple[str, int], int] = {}
    for line in sys.stdin:
        if line.strip():
            pair = json.loads(line)
            wanted[(ids[int(pair["index"])], int(pair["trial"]))] = int(pair["index"])
    # Dataset order; a position map, since ids.index per id is quadratic (MMLU: 14k ids).
    position = {sample_id: i for i, sample_id in enumerate(ids)}
    todo = sorted({sample_id for sample_id, _ in wanted}, key=position.__getitem__)
    epochs = 1 + max((trial for _, trial in wanted), default=0)
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        members = set(chunk)
        if args.announce:  # Inspect takes the whole chunk in hand at once
            for (sample_id, trial), index in wanted.items():
                if sample_id in members:
                    print(json.dumps({"started": [index, trial]}), flush=True)
        log = evaluate(
            args.task,
            task_args,
            chunk,
            epochs,
            concurrency=args.concurrency,
            timeout_s=args.task_timeout,
            log_dir=args.log_dir,
            max_retries=args.max_retries,
        )
        seen = set()
        for sample in log.samples or []:
            key = (str(sample.id), int(sample.epoch) - 1)
            if key in wanted:
                seen.add(key)
                print(json.dumps(result_row(wanted[key], key[1], sample)), flush=True)
        if log.status != "success" or len(seen) < sum(1 for s, _ in wanted if s in members):
            # The evaluation failed as a whole (the proxy unreachable, a task that
            # raises): the chunk's unreported trials are errors, with Inspect's reason.
            reason = log.error.message if log.error is not None else f"status {log.status}"
            for (sample_id, trial), index in wanted.items():
                if sample_id in members and (sample_id, trial) not in seen:
                    row = {"index": index, "trial": trial, "task_id": sample_id}
                    row |= {"outcome": "err", "error_type": "inspect:eval_failed"}
                    print(json.dumps(row | {"error": reason[:2000]}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_inspect")
    parser.add_argument("mode", choices=("list", "run"))
    parser.add_argument("--task", required=True, help="file.py or file.py@name, relative")
    parser.add_argument("--args", default="{}", help="the task's arguments, as JSON")
    parser.add_argument("--samples", default="inspect_samples.json")
    parser.add_argument("--log-dir", default="inspect_logs")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--task-timeout", type=float, default=300.0)
    parser.add_argument("--announce", action="store_true", help="print started markers")
    # Inspect retries a failing model call with backoff; unbounded, a dead proxy stalls.
    parser.add_argument("--max-retries", type=int, default=2)
    args = parser.parse_args(argv)
    _library_path()
    _offline()
    task_args = json.loads(args.args)
    if args.mode == "list":
        ids = sample_ids(args.task, task_args)
        listing = json.dumps(ids)
        Path(args.samples).write_text(listing)
        digest = hashlib.sha256(listing.encode()).hexdigest()
        print(json.dumps({"samples": len(ids), "sha256": digest, "first": ids[:5]}))
        return 0
    return run(args, task_args)


if __name__ == "__main__":
    sys.exit(main())
