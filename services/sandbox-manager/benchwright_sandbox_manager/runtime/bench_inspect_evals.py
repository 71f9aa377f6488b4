"""inspect_evals tasks fed offline: the rows the catalog holds instead of the hub's.

``mmlu_0_shot`` and ``gsm8k`` from ``inspect_evals`` load their data from the Hugging
Face hub, which a sandbox cannot reach. Here the module-level ``hf_dataset`` each
task calls is replaced by one that reads the run's own rows (``tasks.jsonl``, which
Fetch laid from the registry's copy of the same dataset) in the hub's record shape,
then hands them to the task's own ``record_to_sample``: prompts, ids, solvers and
scorers stay inspect_evals' own. ``bench_inspect`` runs this file
(``bench_inspect_evals.py@mmlu_0_shot``).

What cannot be had offline is refused by name: another MMLU language (MMMLU), and
GSM8K's few-shot examples (its train split is not in the catalog): GSM8K runs zero-shot.
"""

import importlib
import json
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Dataset, json_dataset

ROWS = Path(__file__).parent / "tasks.jsonl"
LETTERS = "ABCD"

mmlu_module: Any = importlib.import_module("inspect_evals.mmlu.mmlu")
gsm8k_module: Any = importlib.import_module("inspect_evals.gsm8k.gsm8k")


def _mmlu_record(row: dict[str, Any]) -> dict[str, Any]:
    given = row["input"]
    return {
        "question": given["question"],
        "subject": given["subject"],
        "choices": given["choices"],
        "answer": LETTERS.index(str(row["expected"])),
    }


def _gsm8k_record(row: dict[str, Any]) -> dict[str, Any]:
    # The hub's answer is worked reasoning ending "#### <number>"; the task keeps
    # the number as the target and the rest as metadata.
    return {"question": row["input"]["question"], "answer": f"#### {row['expected']}"}


# (hub path, split) -> how one of our rows reads as the hub's record.
RECORDS = {
    ("cais/mmlu", "test"): _mmlu_record,
    ("openai/gsm8k", "test"): _gsm8k_record,
}


def local_hf_dataset(
    path: str,
    split: str,
    *args: Any,
    sample_fields: Any = None,
    shuffle: bool = False,
    seed: int | None = None,
    limit: int | None = None,
    **_: Any,
) -> Dataset:
    """What ``hf_dataset(path, split=...)`` would give, from ``tasks.jsonl``."""
    to_record = RECORDS.get((path, split))
    if to_record is None:
        raise RuntimeError(
            f"{path} ({split}) is not available offline: only the catalog's copies of "
            + ", ".join(f"{p} ({s})" for p, s in RECORDS)
        )
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    local = Path(tempfile.mkdtemp(prefix="bw-inspect-")) / f"{path.replace('/', '_')}.jsonl"
    local.write_text("\n".join(json.dumps(to_record(r)) for r in rows))
    return json_dataset(
        str(local),
        sample_fields=sample_fields,
        shuffle=shuffle,
        seed=seed,
        limit=limit,
        name=path.split("/")[-1],
    )


mmlu_module.hf_dataset = local_hf_dataset
gsm8k_module.hf_dataset = local_hf_dataset


@task
def mmlu_0_shot(
    language: str = "EN_US",
    subjects: str | list[str] = [],  # noqa: B006 (inspect_evals' own signature)
    cot: bool = False,
    shuffle: bool = True,
    max_non_cot_tokens: int = mmlu_module.GPT_5_MIN_TOKENS,
) -> Task:
    if language != "EN_US":
        raise RuntimeError(f"MMLU in {language} (openai/MMMLU) is not available offline")
    task_: Task = mmlu_module.mmlu_0_shot(
        language=language,
        subjects=subjects,
        cot=cot,
        shuffle=shuffle,
        max_non_cot_tokens=max_non_cot_tokens,
    )
    return task_


@task
def gsm8k(fewshot: int = 0, fewshot_seed: int = 42, shuffle_fewshot: bool = True) -> Task:
    if fewshot:
        raise RuntimeError(
            "GSM8K's few-shot examples come from its train split, which is not available "
            "offline: run it with fewshot=0"
        )
    task_: Task = gsm8k_module.gsm8k(
        fewshot=0, fewshot_seed=fewshot_seed, shuffle_fewshot=shuffle_fewshot
    )
    return task_
