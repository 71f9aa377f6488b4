"""``harness: "harbor"`` launches resolved by the gateway's operations, without HTTP or
NATS: the dataset, the agent and each task's environment checked before anything is
sent, and the harness spec the orchestrator reads."""

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchwright_gateway.operations import estimate as estimating
from benchwright_gateway.operations import launch as launching
from tests.gateway.test_launch_operations import ACCOUNT, SUT, FakePorts, body, refused
from tests.support.product_tasks import PRODUCT_ARGS

DATASET = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "benchwright-starter"
TASKS = ["csv-top-region", "fix-median", "json-active-users", "organize-logs", "write-greeting"]
FILES = "metadata.harbor_harness.files"


def starter_files() -> dict[str, str]:
    return {
        path.relative_to(DATASET).as_posix(): path.read_text()
        for path in sorted(DATASET.rglob("*"))
        if path.is_file()
    }


def harbor_body(
    files: dict[str, str] | None = None,
    harness: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A harbor launch of the starter dataset; ``harness`` overrides its harness fields,
    ``fields`` the body's (``metadata`` merged)."""
    spec = {"dataset": "benchwright-starter", "files": files or starter_files(), **(harness or {})}
    metadata = {"harbor_harness": spec, **fields.pop("metadata", {})}
    return {"harness": "harbor", "sut": SUT, "metadata": metadata, **fields}


def product_body(**changes: Any) -> dict[str, Any]:
    """A product launch of the starter dataset; a change to None drops that argument."""
    args = {k: v for k, v in {**PRODUCT_ARGS, **changes}.items() if v is not None}
    return harbor_body(harness={"agent": "product", "agent_args": args})


def nothing_written(ports: FakePorts) -> bool:
    return ports.sent == [] and ports.records == {}


# -- accepted ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("agent", "agent_args"),
    [
        ("benchwright", {"max_turns": 30, "wall_time_s": 120, "system_prompt": "Be brief."}),
        ("oracle", {}),
        ("nop", {}),
        ("product", PRODUCT_ARGS),
        ("product", {**PRODUCT_ARGS, "body": "text", "cwd": "/app", "env": {"MODE": "eval"}}),
    ],
)
async def test_the_starter_dataset_launches_with_each_agent(
    agent: str, agent_args: dict[str, Any]
) -> None:
    files = starter_files()
    ports = FakePorts()
    harness = {"agent": agent, "agent_args": agent_args}
    await launching.launch(ports, ACCOUNT, body(**harbor_body(files, harness)), "k1")
    (command,) = ports.launched()
    assert command.harness == {
        "name": "harbor",
        "dataset": "benchwright-starter",
        "files": files,
        "agent": agent,
        "agent_args": agent_args,
        "task": None,
    }
    assert (command.mode, command.benchmark_name) == (
        "natural_language",
        "harbor:benchwright-starter",
    )
    assert command.request == "Harbor dataset benchwright-starter"
    # The run keeps the files' names and digest, never their contents.
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    assert command.metadata == {
        "harbor_harness": {
            "dataset": "benchwright-starter",
            "agent": agent,
            "agent_args": agent_args,
            "files": sorted(files),
            "files_sha256": digest,
            "tasks": TASKS,
        }
    }


async def test_harbor_task_narrows_to_one_task_by_folder_or_toml_name() -> None:
    ports = FakePorts()
    launch = harbor_body(metadata={"harbor_task": "fix-median"}, request="fix the median")
    await launching.launch(ports, ACCOUNT, body(**launch), None)
    (command,) = ports.launched()
    assert command.harness is not None and command.harness["task"] == "fix-median"
    assert command.harness["agent"] == "benchwright"  # the default
    assert command.metadata["harbor_harness"]["tasks"] == ["fix-median"]
    assert command.metadata["harbor_task"] == "fix-median"
    assert command.request == "fix the median"


async def test_a_task_s_own_image_runs_on_the_kubernetes_backend_only() -> None:
    files = starter_files()
    files["fix-median/task.toml"] += '\ndocker_image = "ghcr.io/acme/median:1"\n'
    on_local = FakePorts()
    refusal = await refused(
        launching.launch(on_local, ACCOUNT, body(**harbor_body(files, compute="local")), "k")
    )
    assert (refusal.status, refusal.field, refusal.code) == (
        422,
        f'{FILES}["fix-median/task.toml"]',
        "image_needs_kubernetes",
    )
    assert refusal.detail is not None and "Kubernetes backend" in refusal.detail
    assert nothing_written(on_local)
    # Left to the deployment (no compute named) is refused too: it may be local.
    unnamed = FakePorts()
    assert (
        await refused(launching.launch(unnamed, ACCOUNT, body(**harbor_body(files)), None))
    ).status == 422
    # The launch's compute, or the account's default.
    named = FakePorts()
    await launching.launch(named, ACCOUNT, body(**harbor_body(files, compute="sandbox0")), None)
    defaulted = FakePorts(settings={ACCOUNT: {"default_compute": "sandbox0"}})
    await launching.launch(defaulted, ACCOUNT, body(**harbor_body(files)), None)
    assert len(named.launched()) == len(defaulted.launched()) == 1


# -- refused -------------------------------------------------------------------------------
def without(path: str) -> dict[str, str]:
    files = starter_files()
    del files[path]
    return files


def with_file(path: str, text: str) -> dict[str, str]:
    return {**starter_files(), path: text}


BIG = "x" * (512 * 1024 + 1)
APT = "FROM python:3.12-slim\nWORKDIR /app\nRUN apt-get update && apt-get install -y jq\n"


@pytest.mark.parametrize(
    ("launch", "status", "field", "code"),
    [
        pytest.param(
            harbor_body(without("fix-median/instruction.md")),
            400,
            f'{FILES}["fix-median/instruction.md"]',
            "missing_instruction",
            id="missing-instruction",
        ),
        pytest.param(
            harbor_body(with_file("../x", "escape")),
            400,
            f'{FILES}["../x"]',
            "unsafe_path",
            id="parent-path",
        ),
        pytest.param(
            harbor_body(with_file("/etc/passwd", "root")),
            400,
            f'{FILES}["/etc/passwd"]',
            "unsafe_path",
            id="absolute-path",
        ),
        pytest.param(
            harbor_body(with_file("fix-median/environment/big.txt", BIG)),
            413,
            f'{FILES}["fix-median/environment/big.txt"]',
            "file_too_large",
            id="oversized-file",
        ),
        pytest.param(
            harbor_body(with_file("fix-median/environment/Dockerfile", APT)),
            422,
            f'{FILES}["fix-median/environment/Dockerfile"]',
            "unsupported_dockerfile_step",
            id="run-apt-get",
        ),
        pytest.param(
            harbor_body(harness={"agent": "terminus-2"}),
            400,
            "metadata.harbor_harness.agent",
            "unknown_agent",
            id="unknown-agent",
        ),
        pytest.param(
            harbor_body(harness={"agent_args": {"max_turns": 5, "temperature": 0.2}}),
            400,
            "metadata.harbor_harness.agent_args.temperature",
            "unknown_agent_arg",
            id="unknown-agent-arg",
        ),
        pytest.param(
            harbor_body(harness={"agent": "nop", "agent_args": {"max_turns": 5}}),
            400,
            "metadata.harbor_harness.agent_args.max_turns",
            "unknown_agent_arg",
            id="nop-takes-no-args",
        ),
        pytest.param(
            harbor_body(harness={"agent_args": {"max_turns": 501}}),
            400,
            "metadata.harbor_harness.agent_args.max_turns",
            None,
            id="too-many-turns",
        ),
        pytest.param(
            harbor_body(harness={"agent_args": {"max_tokens": True}}),
            400,
            "metadata.harbor_harness.agent_args.max_tokens",
            None,
            id="tokens-not-a-number",
        ),
        pytest.param(
            harbor_body(harness={"agent_args": {"system_prompt": "x" * 20_001}}),
            400,
            "metadata.harbor_harness.agent_args.system_prompt",
            None,
            id="long-system-prompt",
        ),
        pytest.param(
            product_body(command=None),
            400,
            "metadata.harbor_harness.agent_args.command",
            None,
            id="product-without-command",
        ),
        pytest.param(
            product_body(command=[]),
            400,
            "metadata.harbor_harness.agent_args.command",
            None,
            id="product-empty-command",
        ),
        pytest.param(
            product_body(ready_url="http://example.com:8765/health"),
            400,
            "metadata.harbor_harness.agent_args.ready_url",
            None,
            id="product-ready-url-outside-the-sandbox",
        ),
        pytest.param(
            product_body(drive_url="https://127.0.0.1/task"),
            400,
            "metadata.harbor_harness.agent_args.drive_url",
            None,
            id="product-drive-url-without-port",
        ),
        pytest.param(
            product_body(ready_timeout_s=3600),
            400,
            "metadata.harbor_harness.agent_args.ready_timeout_s",
            None,
            id="product-boot-too-long",
        ),
        pytest.param(
            product_body(env={"OPENAI_API_KEY": "sk-real"}),
            400,
            "metadata.harbor_harness.agent_args.env",
            None,
            id="product-provider-key",
        ),
        pytest.param(
            product_body(body="xml"),
            400,
            "metadata.harbor_harness.agent_args.body",
            None,
            id="product-unknown-body",
        ),
        pytest.param(
            product_body(port=8765),
            400,
            "metadata.harbor_harness.agent_args.port",
            "unknown_agent_arg",
            id="product-unknown-arg",
        ),
        pytest.param(
            harbor_body(without("write-greeting/solution/solve.sh"), {"agent": "oracle"}),
            400,
            f'{FILES}["write-greeting/solution/solve.sh"]',
            "missing_solution",
            id="oracle-without-solution",
        ),
        pytest.param(
            harbor_body(metadata={"harbor_task": "no-such-task"}),
            400,
            "metadata.harbor_task",
            "unknown_task",
            id="unknown-harbor-task",
        ),
        pytest.param(
            {"harness": "harbor", "sut": SUT, "request": "run my agents"},
            400,
            "metadata.harbor_harness",
            None,
            id="no-harness",
        ),
        pytest.param(
            harbor_body(harness={"dataset": "my tasks"}),
            400,
            "metadata.harbor_harness.dataset",
            "bad_dataset_name",
            id="bad-dataset-name",
        ),
        pytest.param(
            harbor_body(harness={"model": "gpt"}),
            400,
            "metadata.harbor_harness.model",
            None,
            id="unknown-harness-field",
        ),
        pytest.param(
            {**harbor_body(), "sut": None},
            400,
            "sut",
            None,
            id="no-model",
        ),
    ],
)
async def test_a_bad_harbor_launch_is_refused_before_anything_is_asked_or_written(
    launch: dict[str, Any], status: int, field: str, code: str | None
) -> None:
    ports = FakePorts()
    refusal = await refused(launching.launch(ports, ACCOUNT, body(**launch), "k1"))
    assert (refusal.status, refusal.field) == (status, field), refusal.detail
    if code is not None:
        assert refusal.code == code
    assert ports.asked == [] and nothing_written(ports)


async def test_an_unsupported_step_names_the_task_and_the_step() -> None:
    launch = harbor_body(with_file("fix-median/environment/Dockerfile", APT))
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**launch), None))
    assert refusal.detail is not None
    assert "'fix-median'" in refusal.detail and "line 3" in refusal.detail
    assert "RUN apt-get update" in refusal.detail


async def test_an_unknown_agent_is_named_with_the_ones_there_are() -> None:
    launch = harbor_body(harness={"agent": "claude-code"})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**launch), None))
    assert refusal.detail is not None
    agents = ("benchwright", "oracle", "nop", "product")
    assert all(f"'{agent}'" in refusal.detail for agent in agents)


async def test_a_product_argument_refusal_says_what_is_wrong() -> None:
    launch = product_body(env={"OPENAI_API_KEY": "sk-real"})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**launch), None))
    assert refusal.detail is not None and "OPENAI_API_KEY is set by the platform" in refusal.detail
    outside = product_body(ready_url="http://10.0.0.1:80/")
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**outside), None))
    assert refusal.detail is not None and "inside its sandbox" in refusal.detail


# -- estimate ------------------------------------------------------------------------------
async def test_an_estimate_checks_the_dataset_then_says_agents_are_not_estimated() -> None:
    ports = FakePorts()
    refusal = await refused(estimating.estimate(ports, ACCOUNT, body(**harbor_body())))
    assert (refusal.status, refusal.field, refusal.code) == (400, "harness", "not_estimable")
    bad = harbor_body(without("fix-median/instruction.md"))
    invalid = await refused(estimating.estimate(ports, ACCOUNT, body(**bad)))
    assert invalid.field == f'{FILES}["fix-median/instruction.md"]'
    assert ports.sent == []


async def test_a_dockerfile_is_built_where_the_backend_builds_it() -> None:
    """On e2b a task's Dockerfile is built, RUN steps and all (decision 0058); a launch
    that leaves the backend open is checked as the local plan, as before."""
    files = with_file("fix-median/environment/Dockerfile", APT)
    on_e2b = FakePorts()
    await launching.launch(on_e2b, ACCOUNT, body(**harbor_body(files, compute="e2b")), None)
    (command,) = on_e2b.launched()
    assert command.harness is not None and command.harness["files"] == files
    on_local = FakePorts()
    refusal = await refused(
        launching.launch(on_local, ACCOUNT, body(**harbor_body(files, compute="local")), None)
    )
    assert refusal.code == "unsupported_dockerfile_step" and nothing_written(on_local)
    # What no builder takes is refused on e2b too, naming the task and the line.
    staged = with_file("fix-median/environment/Dockerfile", "FROM a AS one\nFROM b\n")
    refusal = await refused(
        launching.launch(FakePorts(), ACCOUNT, body(**harbor_body(staged, compute="e2b")), None)
    )
    assert refusal.field == f'{FILES}["fix-median/environment/Dockerfile"]'
    assert refusal.detail is not None and "'fix-median'" in refusal.detail
    assert "line 2" in refusal.detail and "multi-stage" in refusal.detail
