"""A task's Dockerfile read as a plan for a sandbox without Docker."""

import pytest

from benchwright_shared.agentic import (
    AgenticTask,
    environment_plan,
    kubernetes_image,
    load_dataset,
    parse_dockerfile,
)
from benchwright_shared.agentic.dockerfile import substitute
from benchwright_shared.agentic.environment import base_problem
from benchwright_shared.refusal import Refused

TOML = '[environment]\nnetwork_mode = "no-network"\n'


def task(dockerfile: str | None, toml: str = TOML, **environment: str) -> AgenticTask:
    files: dict[str, str] = {
        "t/task.toml": toml,
        "t/instruction.md": "do it\n",
        "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
        **{f"t/environment/{path}": content for path, content in environment.items()},
    }
    if dockerfile is not None:
        files["t/environment/Dockerfile"] = dockerfile
    return load_dataset(files, dataset="d").tasks["t"]


def refused(dockerfile: str, **environment: str) -> Refused:
    with pytest.raises(Refused) as caught:
        environment_plan(task(dockerfile, **environment))
    assert caught.value.status == 422
    assert caught.value.field == 'metadata.harbor_harness.files["t/environment/Dockerfile"]'
    return caught.value


def test_parsing_joins_continuations_and_drops_comments() -> None:
    text = (
        "# syntax=docker/dockerfile:1\n"
        "FROM python:3.12-slim\n"
        "\n"
        "# a comment\n"
        "ENV A=1 \\\n"
        "    # a comment inside the continuation\n"
        "\n"
        "    B=2\n"
        "run echo hi\n"
        'CMD ["python", "app.py"]\n'
    )
    steps = parse_dockerfile(text)
    assert [(s.line, s.keyword) for s in steps] == [
        (2, "FROM"),
        (5, "ENV"),
        (9, "RUN"),
        (10, "CMD"),
    ]
    assert steps[1].args == "A=1     B=2"
    tabbed = parse_dockerfile("FROM\tdebian:12\ncopy\ta.txt  /x\n")
    assert [(s.keyword, s.args) for s in tabbed] == [("FROM", "debian:12"), ("COPY", "a.txt  /x")]
    backtick = parse_dockerfile("# escape=`\nFROM debian\nENV A=1 `\n  B=2\n")
    assert backtick[1].args == "A=1   B=2"


def test_substitution_follows_docker() -> None:
    variables = {"HOME": "/root", "EMPTY": ""}
    assert substitute("$HOME/x ${HOME}/y", variables) == "/root/x /root/y"
    assert (
        substitute("${MISSING:-fallback} ${EMPTY:-d} ${HOME:+set}", variables) == "fallback d set"
    )
    assert substitute("${MISSING:+set}|$MISSING|\\$HOME", variables) == "||$HOME"


def test_a_plan_honours_workdir_env_copy_user_and_notes_the_rest() -> None:
    dockerfile = """\
ARG PY=3.12
FROM python:${PY}-slim-bookworm AS base
ARG APP_DIR=/srv
ENV APP=$APP_DIR/app \\
    PATH="/opt/tools:$PATH"
WORKDIR $APP
COPY --chown=app:app main.py ./
COPY ["lib/util.py", "lib/more.py", "lib/"]
ADD data /data
COPY conf/*.ini /etc/myapp/
COPY . /snapshot
USER app
LABEL maintainer="x"
EXPOSE 8000
ENTRYPOINT ["python"]
CMD ["main.py"]
"""
    plan = environment_plan(
        task(
            dockerfile,
            **{
                "main.py": "print(1)\n",
                "lib/util.py": "u\n",
                "lib/more.py": "m\n",
                "data/a.csv": "a\n",
                "data/deep/b.csv": "b\n",
                "conf/one.ini": "1\n",
                "conf/two.ini": "2\n",
                "conf/skip.txt": "no\n",
            },
        )
    )
    assert plan.base == "python:3.12-slim-bookworm"
    assert plan.workdir == "/srv/app"
    assert plan.env == {
        "APP": "/srv/app",
        "PATH": "/opt/tools:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }
    assert plan.user == "app"
    files = dict(plan.files)
    assert files["/srv/app/main.py"] == b"print(1)\n"
    assert files["/srv/app/lib/util.py"] == b"u\n" and files["/srv/app/lib/more.py"] == b"m\n"
    assert files["/data/a.csv"] == b"a\n" and files["/data/deep/b.csv"] == b"b\n"
    assert files["/etc/myapp/one.ini"] == b"1\n" and "/etc/myapp/skip.txt" not in files
    assert files["/snapshot/Dockerfile"] == dockerfile.encode()
    assert files["/snapshot/conf/skip.txt"] == b"no\n"
    assert plan.directories[0] == "/srv/app" and "/data" in plan.directories
    notes = " ".join(plan.notes)
    for ignored in ("LABEL", "EXPOSE", "ENTRYPOINT", "CMD", "--chown"):
        assert ignored in notes


def test_a_file_copied_onto_a_workdir_lands_inside_it() -> None:
    plan = environment_plan(
        task("FROM debian:bookworm\nWORKDIR /app\nCOPY a.txt /app\n", **{"a.txt": "x"})
    )
    assert dict(plan.files) == {"/app/a.txt": b"x"}
    plan = environment_plan(
        task("FROM ubuntu:24.04\nCOPY a.txt /opt/renamed.txt\n", **{"a.txt": "x"})
    )
    assert dict(plan.files) == {"/opt/renamed.txt": b"x"} and plan.workdir == "/"


def test_task_toml_workdir_overrides_and_host_env_is_never_passed() -> None:
    toml = '[environment]\nworkdir = "/work/here"\nenv = { TOKEN = "${HOST_TOKEN}" }\n'
    plan = environment_plan(task("FROM python:3.12\nWORKDIR /app\n", toml))
    assert plan.workdir == "/work/here"
    assert "TOKEN" not in plan.env and any("never enter" in note for note in plan.notes)


def test_run_is_refused_naming_the_task_the_line_and_the_step() -> None:
    caught = refused(
        "FROM python:3.12-slim\nWORKDIR /app\nRUN apt-get update && \\\n  apt-get install -y curl\n"
    )
    assert caught.code == "unsupported_dockerfile_step"
    detail = caught.detail or ""
    assert "task 't'" in detail and "line 3" in detail
    assert "apt-get install -y curl" in detail and "RUN" in detail


@pytest.mark.parametrize(
    "image",
    ["node:20", "python:3.12-alpine", "python:2.7", "ghcr.io/org/python:3.12", "alpine", "x/y/z"],
)
def test_a_base_image_the_local_backend_lacks_is_refused(image: str) -> None:
    caught = refused(f"FROM {image}\n")
    assert caught.code == "unsupported_base_image" and "line 1" in (caught.detail or "")


@pytest.mark.parametrize(
    "image",
    [
        "python",
        "python:3",
        "python:3.12-slim",
        "python:3.11.9-bookworm",
        "python:3.13.0rc1-slim-trixie",
        "python:slim",
        "docker.io/library/python:3.12",
        "library/debian:12",
        "ubuntu:22.04",
        "debian@sha256:abc",
    ],
)
def test_python_debian_and_ubuntu_bases_stand_for_the_local_base(image: str) -> None:
    assert base_problem(image) is None


@pytest.mark.parametrize(
    ("dockerfile", "code", "words"),
    [
        ("FROM python:3.12\nFROM debian\n", "unsupported_dockerfile_step", "multi-stage"),
        ("FROM python:3.12\nCOPY --from=build /x /y\n", "unsupported_dockerfile_step", "--from"),
        (
            "FROM python:3.12\nADD https://example.com/x.tar /x\n",
            "unsupported_dockerfile_step",
            "URL",
        ),
        ("FROM python:3.12\nADD pack.tar.gz /x/\n", "unsupported_dockerfile_step", "archive"),
        ("FROM python:3.12\nCOPY <<EOF /x\nhi\nEOF\n", "unsupported_dockerfile_step", "heredoc"),
        ("FROM python:3.12\nCOPY missing.py /app/\n", "copy_source_missing", "missing.py"),
        ("FROM python:3.12\nCOPY ../secret /app/\n", "copy_source_missing", "outside"),
        ("FROM python:3.12\nCOPY a.txt /proc/self/x\n", "unsafe_destination", "/proc"),
        ("FROM python:3.12\nWORKDIR /sys/x\n", "unsafe_destination", "/sys"),
        ("WORKDIR /app\nFROM python:3.12\n", "unsupported_dockerfile_step", "starts with FROM"),
        ("# only a comment\n", "dockerfile_syntax", "no FROM"),
        ("FROM python:3.12\nFROBNICATE x\n", "unsupported_dockerfile_step", "FROBNICATE"),
        (
            "FROM python:3.12\nCOPY --exclude=*.md . /app\n",
            "unsupported_dockerfile_step",
            "--exclude",
        ),
    ],
)
def test_steps_that_cannot_be_honoured_are_refused(dockerfile: str, code: str, words: str) -> None:
    caught = refused(dockerfile, **{"a.txt": "a", "pack.tar.gz": "p"})
    assert caught.code == code
    assert words in (caught.detail or "")


def test_an_image_only_task_plans_from_its_image_and_kubernetes_runs_it() -> None:
    with_image = task(None, '[environment]\ndocker_image = "python:3.12-slim"\n')
    plan = environment_plan(with_image)
    assert plan.base == "python:3.12-slim" and not plan.files
    assert kubernetes_image(with_image) == "python:3.12-slim"
    foreign = task(None, '[environment]\ndocker_image = "ghcr.io/org/img:1"\n')
    with pytest.raises(Refused) as caught:
        environment_plan(foreign)
    assert caught.value.code == "unsupported_base_image"
    assert caught.value.field == 'metadata.harbor_harness.files["t/task.toml"]'
    assert kubernetes_image(foreign) == "ghcr.io/org/img:1"


def test_kubernetes_says_a_build_is_needed_for_a_dockerfile_only_task() -> None:
    with pytest.raises(Refused) as caught:
        kubernetes_image(task("FROM python:3.12\n"))
    assert (caught.value.status, caught.value.code) == (422, "image_build_needed")
    assert caught.value.field == 'metadata.harbor_harness.files["t/task.toml"]'


def test_an_environment_folder_without_a_dockerfile_is_refused_locally() -> None:
    bare = task(None, **{"docker-compose.yaml": "services: {}\n"})
    with pytest.raises(Refused) as caught:
        environment_plan(bare)
    assert caught.value.code == "missing_dockerfile"
