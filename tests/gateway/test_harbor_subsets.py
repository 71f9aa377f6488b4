"""Harbor datasets stored as agentic subsets (decision 0050), without HTTP or NATS: the
store's checks are a launch's, the rows are content-addressed tasks, and a pinned
``harness: "harbor"`` launch of the subset sends what a file launch of the same tasks
would, with the subset pinned; a Harbor run is replayable once its Setup is done."""

import json
from typing import Any

import pytest

from benchwright_gateway.harbor import check_dataset
from benchwright_gateway.operations import launch as launching
from benchwright_shared.agentic import dataset_rows, files_from_rows, is_agentic_row, load_dataset
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused
from tests.gateway.test_harbor_launch import TASKS, starter_files, with_file, without
from tests.gateway.test_launch_operations import (
    ACCOUNT,
    SUT,
    FakePorts,
    Subset,
    body,
    gsm8k,
    refused,
    run_row,
)

SNAPSHOT = "sub_0123456789ab"
APT_STEP = "FROM python:3.12-slim\nRUN apt-get install -y jq\n"
PIN = {"benchmark": "Harbor tasks", "subset": "starter"}


def stored_rows(files: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return dataset_rows(check_dataset(files or starter_files(), "starter", where=""))


def harbor_ports(rows: list[dict[str, Any]] | None = None) -> FakePorts:
    resolution = gsm8k(
        benchmark_id="bm_h",
        benchmark_name="Harbor tasks",
        subset_id=SNAPSHOT,
        subset_slug="starter",
        impl_id=None,
    )
    subset = Subset("bm_h", "starter", SNAPSHOT, rows if rows is not None else stored_rows())
    return FakePorts(benchmarks={"Harbor tasks": resolution}, subsets={SNAPSHOT: subset})


def pinned_body(harness: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    metadata = {"harbor_harness": harness or {"agent": "oracle"}, **fields.pop("metadata", {})}
    return {"harness": "harbor", "sut": SUT, **PIN, "metadata": metadata, **fields}


# -- storing -------------------------------------------------------------------------------
def test_a_dataset_is_one_row_a_task_whose_files_make_the_same_dataset() -> None:
    rows = stored_rows()
    assert [r["task_id"] for r in rows] == TASKS
    assert all(is_agentic_row(r) for r in rows)
    assert "task.toml" in rows[0]["input"]["harbor_files"]
    files = files_from_rows(rows)
    assert files is not None
    # The same tasks: the digest a run records at Setup is the file launch's.
    original = load_dataset(starter_files(), dataset="benchwright-starter")
    assert load_dataset(files, dataset="starter").digest == original.digest


def test_the_rows_are_a_content_address_of_the_tasks() -> None:
    def address(files: dict[str, str]) -> str:
        return sha256_hex("".join(json.dumps(r, sort_keys=True) + "\n" for r in stored_rows(files)))

    files = starter_files()
    assert address(files) == address(dict(reversed(list(files.items()))))
    changed = with_file("fix-median/instruction.md", files["fix-median/instruction.md"] + "\n.")
    assert address(changed) != address(files)
    # A file outside every task decides nothing, so it changes nothing.
    assert address({**files, "README.md": "notes"}) == address(files)


def test_a_one_task_dataset_is_stored_as_its_task() -> None:
    files = {
        p.removeprefix("fix-median/"): t
        for p, t in starter_files().items()
        if p.startswith("fix-median/")
    }
    rows = dataset_rows(check_dataset(files, "fix-median", where=""))
    assert [r["task_id"] for r in rows] == ["fix-median"]
    assert files_from_rows(rows) == {f"fix-median/{p}": t for p, t in files.items()}


@pytest.mark.parametrize(
    ("files", "field", "code"),
    [
        (
            without("fix-median/instruction.md"),
            'files["fix-median/instruction.md"]',
            "missing_instruction",
        ),
        (with_file("../escape.txt", "x"), 'files["../escape.txt"]', "unsafe_path"),
        (
            with_file("fix-median/big.txt", "x" * (600 * 1024)),
            'files["fix-median/big.txt"]',
            "file_too_large",
        ),
        (
            with_file("fix-median/environment/Dockerfile", APT_STEP),
            'files["fix-median/environment/Dockerfile"]',
            None,
        ),
    ],
)
def test_a_bad_dataset_is_refused_at_store_time_naming_the_file(
    files: dict[str, str], field: str, code: str | None
) -> None:
    with pytest.raises(Refused) as caught:
        check_dataset(files, "starter", where="")
    assert caught.value.field == field
    if code is not None:
        assert caught.value.code == code


def test_a_bad_slug_as_a_dataset_name_names_the_dataset() -> None:
    with pytest.raises(Refused) as caught:
        check_dataset(starter_files(), "no spaces", where="")
    assert caught.value.field == "dataset"


# -- launching a stored dataset ------------------------------------------------------------
@pytest.mark.parametrize("agent", ["oracle", "nop", "benchwright"])
async def test_a_pinned_launch_sends_the_subsets_tasks_as_a_file_launch_would(agent: str) -> None:
    ports = harbor_ports()
    await launching.launch(ports, ACCOUNT, body(**pinned_body({"agent": agent})), "k1")
    (command,) = ports.launched()
    files = files_from_rows(stored_rows())
    assert command.harness == {
        "name": "harbor",
        "dataset": "starter",
        "files": files,
        "agent": agent,
        "agent_args": {},
        "task": None,
    }
    assert (command.mode, command.benchmark_id, command.subset_id, command.subset_slug) == (
        "pinned",
        "bm_h",
        SNAPSHOT,
        "starter",
    )
    assert command.impl_id is None and command.benchmark_name == "Harbor tasks"
    kept = command.metadata["harbor_harness"]
    assert kept["tasks"] == TASKS and kept["agent"] == agent and "files" in kept
    assert all(not isinstance(v, dict) for v in kept.values() if v is not kept["agent_args"])


async def test_a_pinned_launch_narrows_to_one_task() -> None:
    ports = harbor_ports()
    launch = pinned_body(metadata={"harbor_task": "write-greeting"})
    await launching.launch(ports, ACCOUNT, body(**launch), None)
    (command,) = ports.launched()
    assert command.harness is not None and command.harness["task"] == "write-greeting"
    assert command.request == "Harbor subset starter, task write-greeting"


async def test_a_subset_of_other_rows_is_not_a_harbor_dataset() -> None:
    ports = harbor_ports(rows=[{"task_id": "q1", "input": "2+2", "expected": "4"}])
    found = await refused(launching.launch(ports, ACCOUNT, body(**pinned_body()), None))
    assert (found.field, found.code) == ("subset", "not_an_agentic_subset")
    assert ports.sent == []


@pytest.mark.parametrize(
    ("launch", "field"),
    [
        (pinned_body({"agent": "oracle", "files": {"a": "b"}}), "metadata.harbor_harness.files"),
        (pinned_body({"agent": "oracle", "dataset": "x"}), "metadata.harbor_harness.dataset"),
        (pinned_body(impl="bm_h:0123456789ab"), "impl"),
        (pinned_body({"agent": "claude"}), "metadata.harbor_harness.agent"),
        (
            pinned_body({"agent": "nop", "agent_args": {"x": 1}}),
            "metadata.harbor_harness.agent_args.x",
        ),
        (pinned_body({"agent": "oracle", "extra": 1}), "metadata.harbor_harness.extra"),
        (pinned_body(metadata={"harbor_task": "nope"}), "metadata.harbor_task"),
    ],
)
async def test_a_bad_pinned_launch_is_refused_naming_the_field(
    launch: dict[str, Any], field: str
) -> None:
    ports = harbor_ports()
    found = await refused(launching.launch(ports, ACCOUNT, body(**launch), None))
    assert found.field == field
    assert ports.sent == []


async def test_a_pin_without_the_harbor_harness_is_refused_naming_the_harness() -> None:
    ports = harbor_ports()
    ports.benchmarks["Harbor tasks"] = gsm8k(
        benchmark_id="bm_h", subset_id=SNAPSHOT, subset_slug="starter", agentic=True
    )
    launch = body(benchmark="Harbor tasks", subset="starter", sut=SUT)
    found = await refused(launching.launch(ports, ACCOUNT, launch, None))
    assert (found.field, found.code) == ("harness", "agentic_subset_needs_harbor")
    assert ports.sent == []


async def test_the_oracle_needs_each_stored_task_s_solution() -> None:
    ports = harbor_ports(stored_rows(without("fix-median/solution/solve.sh")))
    found = await refused(launching.launch(ports, ACCOUNT, body(**pinned_body()), None))
    assert found.code == "missing_solution"
    assert found.field == 'metadata.harbor_harness.files["fix-median/solution/solve.sh"]'


# -- replaying -----------------------------------------------------------------------------
def harbor_parent(**columns: Any) -> FakePorts:
    metadata = {"harbor_harness": {"dataset": "starter", "agent": "oracle", "tasks": TASKS}}
    set_up = {"selected_tasks": 5, "phase": None}  # finished: the view forgets its phase
    row = run_row(
        impl_id=None, subset_id=SNAPSHOT, metadata=json.dumps(metadata), **(set_up | columns)
    )
    return FakePorts(runs={"run_parent": row})


async def test_a_harbor_run_replays_once_its_setup_recorded_the_tasks() -> None:
    ports = harbor_parent()
    await launching.launch(ports, ACCOUNT, body(replay={"from_run": "run_parent"}, sut=SUT), None)
    (command,) = ports.launched()
    assert (command.mode, command.parent_run_id, command.harness) == ("replay", "run_parent", None)


@pytest.mark.parametrize("columns", [{"phase": "setup"}, {"selected_tasks": None}])
async def test_a_harbor_run_still_in_setup_is_not_replayable_yet(columns: dict[str, Any]) -> None:
    ports = harbor_parent(**columns)
    found = await refused(
        launching.launch(ports, ACCOUNT, body(replay={"from_run": "run_parent"}), None)
    )
    assert found.code == "replay_source_not_ready"
