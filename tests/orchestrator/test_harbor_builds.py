"""A Harbor run on e2b asks for each task's Dockerfile to be built (decision 0058):
every sandbox of the task carries the same ``EnvironmentBuild`` (the manager builds
it once), nothing is laid in but Harbor's places, and the Dockerfile's ENV and
WORKDIR reach the commands. On the local backend nothing changes: no build, the
plan's files. Here bubblewrap's host tree stands in for the built image."""

import textwrap

import pytest

from benchwright_shared.agentic import environment_build, load_dataset
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept

pytestmark = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox")

DOCKERFILE = textwrap.dedent(
    """\
    FROM python:3.12-slim
    ENV GREETING=built
    WORKDIR /app
    COPY seed.txt /app/seed.txt
    RUN apt-get update && apt-get install -y jq
    """
)
FILES = {
    "built/task.toml": "[environment]\nbuild_timeout_sec = 1200\n",
    "built/instruction.md": "Write the greeting to answer.txt.\n",
    "built/environment/Dockerfile": DOCKERFILE,
    "built/environment/seed.txt": "seed\n",
    "built/solution/solve.sh": '#!/bin/bash\necho "$GREETING" > answer.txt\n',
    "built/tests/test.sh": textwrap.dedent(
        """\
        #!/bin/bash
        mkdir -p /logs/verifier
        [ "$(cat /app/answer.txt)" = built ] && echo 1 > /logs/verifier/reward.txt \\
          || echo 0 > /logs/verifier/reward.txt
        """
    ),
}


async def test_on_e2b_every_sandbox_of_a_task_asks_for_its_one_build() -> None:
    run = harbor_run("oracle", k=2)
    assert run.harness is not None
    run.harness = {**run.harness, "dataset": "builds", "files": FILES}
    run.backend = "e2b"
    ctx = context(run)
    rows = await swept(ctx)
    # Solved where the Dockerfile put it (WORKDIR /app) with its ENV: the plan read both.
    assert [rows["built"][trial].outcome for trial in (0, 1)] == ["pass", "pass"]
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    expected = environment_build(load_dataset(FILES, dataset="builds").tasks["built"])
    assert work.builds == [expected, expected] and work.images == [None, None]
    assert expected.timeout_s == 1200 and expected.context["seed.txt"] == "seed\n"
    # Nothing laid in: the image has the task's files (seed.txt is the build's to copy).
    assert work.laid == [[], []]


async def test_on_the_local_backend_nothing_is_built() -> None:
    files = {**FILES, "built/environment/Dockerfile": DOCKERFILE.replace("RUN", "# RUN")}
    run = harbor_run("oracle")
    assert run.harness is not None
    run.harness = {**run.harness, "dataset": "builds", "files": files}
    ctx = context(run)
    rows = await swept(ctx)
    assert rows["built"][0].outcome == "pass", rows["built"][0]
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    assert work.builds == [None]
    # The local plan laid the COPY'd file in, as it always has.
    assert work.laid == [["/app/seed.txt"]]
