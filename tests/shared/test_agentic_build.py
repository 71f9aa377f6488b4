"""A task's Dockerfile on a backend that builds it (e2b): read for what a command needs,
the rest handed to the build whole (decision 0058)."""

import pytest

from benchwright_shared.agentic import environment_build, template_plan
from benchwright_shared.refusal import Refused
from tests.shared.test_agentic_dockerfile import TOML, task

BUILT = (
    "ARG PY=3.12\n"
    "FROM ghcr.io/acme/base:${PY}\n"
    "ENV VENV=/opt/venv\n"
    "ENV PATH=$VENV/bin:$PATH\n"
    "WORKDIR /srv/task\n"
    "COPY requirements.txt ./\n"
    "RUN apt-get update && apt-get install -y jq && pip install -r requirements.txt\n"
    "USER agent\n"
    'CMD ["sleep", "infinity"]\n'
)


def test_what_the_local_plan_refuses_is_built_and_what_commands_need_is_read() -> None:
    plan = template_plan(task(BUILT, **{"requirements.txt": "pytest\n"}))
    assert plan.base == "ghcr.io/acme/base:3.12"
    assert plan.workdir == "/srv/task" and plan.directories == ("/srv/task",)
    assert dict(plan.env) == {
        "VENV": "/opt/venv",
        "PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }
    # Nothing is laid in: the build copies the files.
    assert dict(plan.files) == {}


def test_harbors_working_directory_when_the_dockerfile_names_none() -> None:
    assert template_plan(task("FROM debian:12\nRUN true\n")).workdir == "/app"
    toml = TOML + 'workdir = "sub"\n'
    assert template_plan(task("FROM debian:12\n", toml)).workdir == "/app/sub"


@pytest.mark.parametrize(
    ("dockerfile", "said"),
    [
        ("FROM a AS one\nFROM b\n", "line 2: `FROM b`: multi-stage"),
        ("FROM a\nCOPY --from=build /x /y\n", "line 2: `COPY --from=build /x /y`: COPY --from"),
        ("FROM a\nCOPY missing.txt /app/\n", "line 2: `COPY missing.txt /app/`: missing.txt"),
        ("FROM a\nADD https://example.com/x /x\n", "ADD of a URL"),
        ("RUN true\n", "starts with FROM"),
    ],
)
def test_what_no_build_takes_is_refused_naming_the_task_and_line(
    dockerfile: str, said: str
) -> None:
    with pytest.raises(Refused) as caught:
        template_plan(task(dockerfile))
    assert caught.value.status == 422
    assert caught.value.field == 'metadata.harbor_harness.files["t/environment/Dockerfile"]'
    assert caught.value.detail is not None
    assert caught.value.detail.startswith("task 't': environment/Dockerfile")
    assert said in caught.value.detail


def test_a_task_without_a_dockerfile_has_nothing_to_build() -> None:
    with pytest.raises(Refused) as caught:
        template_plan(task(None, **{"x.txt": "x"}))
    assert caught.value.code == "missing_dockerfile"


def test_the_build_carries_the_folder_and_the_tasks_bound_and_resources() -> None:
    toml = "[environment]\nbuild_timeout_sec = 900\ncpus = 1.5\nmemory_mb = 2048\n"
    built = environment_build(task(BUILT, toml, **{"requirements.txt": "pytest\n"}))
    assert built.task == "t" and built.dockerfile == BUILT
    assert built.context == {"Dockerfile": BUILT, "requirements.txt": "pytest\n"}
    assert (built.timeout_s, built.cpu_count, built.memory_mb) == (900, 2, 2048)
    # The same folder is the same build; a changed file is another.
    again = environment_build(task(BUILT, toml, **{"requirements.txt": "pytest\n"}))
    changed = environment_build(task(BUILT, toml, **{"requirements.txt": "pytest==8\n"}))
    assert again.digest == built.digest != changed.digest
    assert environment_build(task(BUILT, **{"requirements.txt": "pytest\n"})).timeout_s == 600
