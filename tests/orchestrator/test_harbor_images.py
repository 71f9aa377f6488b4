"""A Harbor task that names its own image (``[environment] docker_image``) asks for a
sandbox started from that image, with nothing laid in but Harbor's places; the
gateway sends such a task to sandbox0 only, and the other backends refuse an image
(``tests/sandbox_manager/test_task_dirs.py``). Here bubblewrap's host tree stands in
for the image: what is checked is the ask, and that the task then runs as any."""

import textwrap

import pytest

from benchwright_shared.agentic import image_plan, load_dataset
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept

pytestmark = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox")

IMAGE = "python:3.12-slim"
FILES = {
    "own-image/task.toml": textwrap.dedent(
        f"""
        schema_version = "1.1"
        [environment]
        docker_image = "{IMAGE}"
        """
    ),
    "own-image/instruction.md": "Write ok to answer.txt.\n",
    "own-image/solution/solve.sh": "#!/bin/bash\necho ok > /app/answer.txt\n",
    "own-image/tests/test.sh": textwrap.dedent(
        """\
        #!/bin/bash
        mkdir -p /logs/verifier
        [ "$(cat /app/answer.txt)" = ok ] && echo 1 > /logs/verifier/reward.txt \\
          || echo 0 > /logs/verifier/reward.txt
        """
    ),
}


def test_an_image_is_the_environment_and_nothing_is_laid_in() -> None:
    task = load_dataset(FILES, dataset="images").tasks["own-image"]
    plan = image_plan(task)
    assert (plan.base, plan.workdir, dict(plan.files)) == (IMAGE, "/app", {})


async def test_a_task_with_its_own_image_asks_for_it() -> None:
    run = harbor_run("oracle")
    assert run.harness is not None
    run.harness = {**run.harness, "dataset": "images", "files": FILES}
    ctx = context(run)
    rows = await swept(ctx)
    assert rows["own-image"][0].outcome == "pass", rows["own-image"][0]
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    assert work.images == [IMAGE]
