"""The product-starter dataset: three tasks that drive ``product_server.py``, and the
scripted model that answers two of them right.

Each task's environment COPYs the product to ``/srv/product/server.py``; the product
asks the model for the answer and writes it to ``/app/answer.txt``, which the task's
verifier compares with ``tests/expected.txt``. The model (``product_book``) answers
``capital-city`` and ``prime-sum`` right and ``reverse-word`` wrong, so a run scores
exactly ``PRODUCT_SOLVED`` whatever the machine.
"""

from pathlib import Path
from typing import Any

from tests.support.scripted_agent_model import ScriptBook, final

PRODUCT_DATASET = "product-starter"
SERVER_SOURCE = (Path(__file__).parent / "product_server.py").read_text()
PORT = 8765
PRODUCT_ARGS: dict[str, Any] = {
    "command": ["python3", "/srv/product/server.py", "--port", str(PORT)],
    "ready_url": f"http://127.0.0.1:{PORT}/health",
    "ready_timeout_s": 30.0,
    "drive_url": f"http://127.0.0.1:{PORT}/task",
    "requires": ["python3"],
}
# (task, instruction, expected answer, what the scripted model says)
PRODUCT_TASKS = (
    ("capital-city", "What is the capital city of France? Answer with the name only.", "Paris"),
    ("prime-sum", "What is the sum of the prime numbers below 10? Answer with a number.", "17"),
    ("reverse-word", "Spell the word 'benchwright' backwards, in lower case.", "thgirwhcneb"),
)
MODEL_ANSWERS = {
    "capital city of France": "Paris",
    "prime numbers below 10": "17",
    "'benchwright' backwards": "thgirhcneb",  # one letter missing: a failed task
}
PRODUCT_SOLVED = frozenset({"capital-city", "prime-sum"})

TASK_TOML = """schema_version = "1.1"

[metadata]
author_name = "Benchwright"
category = "product"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 60.0

[environment]
network_mode = "no-network"
"""
DOCKERFILE = """FROM python:3.12-slim

WORKDIR /app
COPY server.py /srv/product/server.py
"""
TEST_SH = """#!/bin/bash
# The product wrote the model's answer to /app/answer.txt: it must be the expected one.
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat /tests/expected.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def product_files() -> dict[str, str]:
    """The dataset as a launch carries it: ``{relative path: text}``."""
    files: dict[str, str] = {}
    for name, instruction, expected in PRODUCT_TASKS:
        files |= {
            f"{name}/task.toml": TASK_TOML,
            f"{name}/instruction.md": instruction + "\n",
            f"{name}/environment/Dockerfile": DOCKERFILE,
            f"{name}/environment/server.py": SERVER_SOURCE,
            f"{name}/tests/test.sh": TEST_SH,
            f"{name}/tests/expected.txt": expected + "\n",
        }
    return files


def product_book() -> ScriptBook:
    return ScriptBook({key: [final(answer)] for key, answer in MODEL_ANSWERS.items()})
