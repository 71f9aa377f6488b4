"""A Harbor task's Dockerfile built into an e2b template (``CreateSandbox.build``).

Against the fake of E2B (``fakes/e2b_templates.py``), through the real e2b SDK's
template API: one build per environment, shared by concurrent asks; another
Dockerfile, another template; a failed or overlong build an error naming the task,
the step and the log's tail, with no sandbox made; sandboxes made from the built
template's id. Then the same through the manager's handlers, on a real NATS.
"""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.e2b import E2BBackend
from benchwright_sandbox_manager.backends.e2b.templates import template_name
from benchwright_sandbox_manager.ports import ImageBuildError
from benchwright_shared.contracts import (
    CreateSandbox,
    EnvironmentBuild,
    KillSandbox,
    SandboxCommandFailed,
    SandboxCreated,
)
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conftest import SandboxService, new_id
from tests.sandbox_manager.fakes.e2b_api import FakeE2B

API_KEY = "e2b_fake_key_for_template_builds"
DOCKERFILE = (
    "FROM python:3.12-slim\n"
    "WORKDIR /app\n"
    "COPY hello.txt /app/hello.txt\n"
    "RUN pip install --no-cache-dir pytest\n"
)


def a_build(
    dockerfile: str = DOCKERFILE, *, task: str = "hello", **more: object
) -> EnvironmentBuild:
    context = {"Dockerfile": dockerfile, "hello.txt": "hello\n"}
    return EnvironmentBuild.model_validate(
        {"task": task, "dockerfile": dockerfile, "context": context, **more}
    )


@pytest.fixture(autouse=True)
def no_e2b_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads ``E2B_*`` variables for what it is not given: none here."""
    for name in ("E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake(tmp_path: Path) -> AsyncIterator[FakeE2B]:
    fake = await FakeE2B(tmp_path / "fake-e2b", API_KEY, vm_dirs=("/app", "/logs")).start()
    yield fake
    await fake.close()


def e2b_settings(fake: FakeE2B) -> dict[str, object]:
    return {
        "e2b_api_key": API_KEY,
        "e2b_api_url": fake.url,
        "e2b_sandbox_url": fake.url,
        "e2b_egress_proxy_url": "http://127.0.0.1:9",
    }


@pytest.fixture
async def backend(fake: FakeE2B, tmp_path: Path) -> AsyncIterator[E2BBackend]:
    settings = Settings.model_validate({"data_dir": tmp_path / "data", **e2b_settings(fake)})
    made = get_backend("e2b", tmp_path / "sandboxes", settings)
    assert isinstance(made, E2BBackend)
    await made.start()
    yield made
    await made.close()


# -- the backend ----------------------------------------------------------------------
async def test_one_environment_is_built_once_and_its_sandboxes_start_from_it(
    backend: E2BBackend, fake: FakeE2B
) -> None:
    fake.templates.build_s = 1.0  # long enough for the two asks to overlap
    build = a_build()
    first, second = await asyncio.gather(backend.build_image(build), backend.build_image(build))
    assert first == second
    ((name, made),) = fake.templates.started
    assert name == template_name(build) and fake.templates.by_name[name] == first
    # The Dockerfile's steps, as the SDK turned them into template steps.
    assert made.from_image == "python:3.12-slim"
    kinds = [(step["type"], step["args"][0]) for step in made.steps]
    assert ("COPY", "hello.txt") in kinds
    assert ("RUN", "pip install --no-cache-dir pytest") in kinds
    # The context went up, by its hash.
    (files_hash,) = fake.templates.uploads
    assert fake.templates.uploaded_names(files_hash) == ["hello.txt"]
    # Asked again, later: the same template, no new build.
    assert await backend.build_image(a_build(task="another task, same folder")) == first
    assert len(fake.templates.started) == 1 and backend.templates.started == 1
    for sandbox_id in ("sbx_a", "sbx_b"):
        await backend.create(sandbox_id, dirs=("/app",), image=first)
    templates = {
        box.metadata["benchwright_sandbox_id"]: box.template for box in fake.sandboxes.values()
    }
    assert templates == {"sbx_a": first, "sbx_b": first}
    # Each holds what the Dockerfile's COPY put there (the fake lays it in).
    for sandbox_id in ("sbx_a", "sbx_b"):
        assert await backend.get_file(sandbox_id, "/app/hello.txt") == b"hello\n"
    for sandbox_id in ("sbx_a", "sbx_b"):
        await backend.kill(sandbox_id)


async def test_another_dockerfile_builds_another_template(
    backend: E2BBackend, fake: FakeE2B
) -> None:
    one = await backend.build_image(a_build())
    other_build = a_build(DOCKERFILE.replace("pytest", "pytest==8.3.3"))
    other = await backend.build_image(other_build)
    assert one != other
    names = [name for name, _ in fake.templates.started]
    assert names == [template_name(a_build()), template_name(other_build)]
    # Resources are part of what an environment is made of.
    assert a_build(memory_mb=4096).digest != a_build().digest
    assert a_build(timeout_s=60).digest == a_build().digest


async def test_a_failed_build_names_the_task_the_step_and_the_log(
    backend: E2BBackend, fake: FakeE2B
) -> None:
    broken = a_build("FROM python:3.12-slim\nRUN echo fetching\nRUN exit 3\n", task="broken")
    with pytest.raises(ImageBuildError) as failed:
        await backend.build_image(broken)
    said = str(failed.value)
    assert said.startswith(f"task 'broken': its environment (e2b template {template_name(broken)})")
    # The SDK's own steps (USER root, WORKDIR /) come first: RUN exit 3 is the fourth.
    assert "step 4 (RUN exit 3)" in said and "exit status 3" in said, said
    assert "the build log ends:" in said and "[3] RUN echo fetching" in said
    # Not built again for a while: the next ask (another task of the same folder,
    # say) fails at once, the same way, naming its own task.
    sibling = broken.model_copy(update={"task": "sibling"})
    with pytest.raises(ImageBuildError, match=r"^task 'sibling': .*exit status 3"):
        await backend.build_image(sibling)
    assert len(fake.templates.started) == 1
    # And nothing can start from it.
    (template_id,) = fake.templates.by_id
    with pytest.raises(Exception, match="no ready build"):
        await backend.create("sbx_never", image=template_id)
    assert fake.created == []


async def test_a_build_past_its_bound_is_an_error(backend: E2BBackend, fake: FakeE2B) -> None:
    fake.templates.build_s = 60.0
    with pytest.raises(ImageBuildError, match=r"task 'slow'.* did not build within 1 s"):
        await backend.build_image(a_build(task="slow", timeout_s=1))


async def test_a_dockerfile_the_sdk_cannot_read_is_an_error_naming_the_task(
    backend: E2BBackend, fake: FakeE2B
) -> None:
    two_stages = a_build("FROM python:3.12 AS one\nFROM debian:12\n", task="staged")
    with pytest.raises(ImageBuildError, match=r"task 'staged'.*Multi-stage"):
        await backend.build_image(two_stages)
    assert fake.templates.started == []


# -- through the manager ----------------------------------------------------------------
@pytest.fixture
async def e2b_sandboxes(
    nats_url: str, tmp_path: Path, fake: FakeE2B
) -> AsyncIterator[SandboxService]:
    settings = Settings.model_validate(
        {"data_dir": tmp_path / "data", "nats_url": nats_url, **e2b_settings(fake)}
    )
    service = SandboxService(settings)
    await service.start()
    yield service
    await service.close()


def create_command(build: EnvironmentBuild, backend: str = "e2b") -> CreateSandbox:
    return CreateSandbox(
        command_id=new_id(),
        run_id="run_test",
        role="harbor_task_env",
        backend=backend,
        dirs=["/app", "/logs"],
        build=build,
    )


@pytest.mark.connected
async def test_two_sandboxes_of_one_task_share_one_build(
    e2b_sandboxes: SandboxService, fake: FakeE2B
) -> None:
    fake.templates.build_s = 1.0
    first, second = await asyncio.gather(
        e2b_sandboxes.send(create_command(a_build())),
        e2b_sandboxes.send(create_command(a_build())),
    )
    assert isinstance(first, SandboxCreated) and isinstance(second, SandboxCreated), (first, second)
    ((name, _),) = fake.templates.started
    template_id = fake.templates.by_name[name]
    assert {box.template for box in fake.sandboxes.values()} == {template_id}
    assert first.metadata["image"] == template_id
    assert first.metadata["build_digest"] == a_build().digest
    for made in (first, second):
        await e2b_sandboxes.send(
            KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=made.sandbox_id)
        )


@pytest.mark.connected
async def test_a_failed_build_answers_with_its_log_and_leaves_no_sandbox(
    e2b_sandboxes: SandboxService, fake: FakeE2B
) -> None:
    broken = a_build("FROM debian:12\nRUN false\n", task="broken")
    refused = await e2b_sandboxes.send(create_command(broken))
    assert isinstance(refused, SandboxCommandFailed), refused
    assert refused.error_type == "image_build_failed"
    assert "task 'broken'" in refused.detail and "(RUN false)" in refused.detail
    assert fake.created == []


@pytest.mark.connected
async def test_a_backend_that_builds_nothing_refuses_a_build(
    e2b_sandboxes: SandboxService, fake: FakeE2B
) -> None:
    refused = await e2b_sandboxes.send(create_command(a_build(), backend="local"))
    assert isinstance(refused, SandboxCommandFailed), refused
    assert refused.error_type == "build_unsupported" and "task 'hello'" in refused.detail
    both = create_command(a_build()).model_copy(update={"image": "python:3.12"})
    refused = await e2b_sandboxes.send(both)
    assert isinstance(refused, SandboxCommandFailed) and refused.error_type == "build_unsupported"
    assert fake.templates.started == []
