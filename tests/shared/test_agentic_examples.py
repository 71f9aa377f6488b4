"""The benchwright-starter dataset: valid Harbor tasks, oracle scores 1, doing nothing 0.

Each task's environment is laid out from its local plan into temporary folders,
bound under bubblewrap at the paths Harbor uses (/app, /logs, /solution, /tests),
with no network; ``solution/solve.sh`` runs (the oracle) or nothing does (nop),
then ``tests/test.sh``, and the reward file is read as the platform reads it.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchwright_shared.agentic import (
    AgenticTask,
    EnvironmentPlan,
    environment_plan,
    load_dataset,
    parse_reward,
)

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "benchwright-starter"
TASKS = ["csv-top-region", "fix-median", "json-active-users", "organize-logs", "write-greeting"]
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def dataset_files() -> dict[str, bytes]:
    return {
        path.relative_to(DATASET).as_posix(): path.read_bytes()
        for path in sorted(DATASET.rglob("*"))
        if path.is_file()
    }


def bwrap_usable() -> bool:
    found = shutil.which("bwrap")
    if not found:
        return False
    probe = subprocess.run(
        [found, "--unshare-all", "--die-with-parent", *system_mounts(), "true"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


def system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = Path(f"/{name}")
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def test_the_starter_dataset_loads_and_every_environment_plans_locally() -> None:
    dataset = load_dataset(dataset_files(), dataset="benchwright-starter")
    assert sorted(dataset.tasks) == TASKS
    for name, task in dataset.tasks.items():
        assert task.has_solution, name
        assert task.config.environment.network_mode == "no-network"
        plan = environment_plan(task)
        assert plan.base == "python:3.12-slim" and plan.workdir == "/app", name
        assert all(path.startswith("/app/") for path in plan.files), name
    planned = environment_plan(dataset.tasks["organize-logs"]).files
    assert sorted(planned) == [
        f"/app/inbox/{name}"
        for name in ("access.log", "catalog.txt", "draft.md", "notes.txt", "server.log")
    ]
    assert environment_plan(dataset.tasks["json-active-users"]).env == {"DATA_DIR": "/app"}


def lay_out(plan: EnvironmentPlan, root: Path) -> list[str]:
    """Write the plan's files under ``root``; the bubblewrap binds that show them."""
    tops: set[str] = set()
    for directory in plan.directories:
        (root / directory.lstrip("/")).mkdir(parents=True, exist_ok=True)
        tops.add(directory.strip("/").split("/")[0])
    for path, content in plan.files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        tops.add(path.strip("/").split("/")[0])
    binds: list[str] = []
    for top in sorted(tops):
        binds += ["--bind", str(root / top), f"/{top}"]
    return binds


def copy_folder(task: AgenticTask, folder: str, target: Path) -> None:
    for path, content in task.under(folder).items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_bytes(content)


def run(binds: list[str], plan: EnvironmentPlan, script: str) -> None:
    env = {"PATH": BASE_PATH, "HOME": "/tmp", **plan.env}
    setenv = [arg for key, value in env.items() for arg in ("--setenv", key, value)]
    subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--clearenv",
            *setenv,
            *system_mounts(),
            *binds,
            "--chdir",
            plan.workdir,
            "bash",
            script,
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )


def score(task: AgenticTask, tmp: Path, *, solve: bool) -> float:
    plan = environment_plan(task)
    binds = lay_out(plan, tmp / "root")
    logs, solution, tests = tmp / "logs", tmp / "solution", tmp / "tests"
    for folder in (logs / "verifier", logs / "agent", solution, tests):
        folder.mkdir(parents=True)
    logs_bind = ["--bind", str(logs), "/logs"]
    if solve:
        # The agent phase: Harbor's oracle copies solution/ to /solution and runs solve.sh.
        copy_folder(task, "solution", solution)
        run(
            [*binds, *logs_bind, "--ro-bind", str(solution), "/solution"],
            plan,
            "/solution/solve.sh",
        )
    # The verifier: tests/ arrives only now, at /tests.
    copy_folder(task, "tests", tests)
    run([*binds, *logs_bind, "--ro-bind", str(tests), "/tests"], plan, "/tests/test.sh")
    found = {
        name: (logs / "verifier" / name).read_bytes()
        for name in ("reward.txt", "reward.json")
        if (logs / "verifier" / name).is_file()
    }
    return parse_reward(found).score


@pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox here")
@pytest.mark.parametrize("name", TASKS)
def test_oracle_scores_one_and_nop_scores_zero(name: str, tmp_path: Path) -> None:
    task = load_dataset(dataset_files(), dataset="benchwright-starter", only=name).tasks[name]
    assert score(task, tmp_path / "oracle", solve=True) == 1.0
    assert score(task, tmp_path / "nop", solve=False) == 0.0
