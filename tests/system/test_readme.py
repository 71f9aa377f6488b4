"""The README's Python example runs as written, against a live platform."""

import asyncio
import importlib.util
import re
from pathlib import Path

import pytest

from tests.conftest import Platform

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = [pytest.mark.slow, pytest.mark.connected]


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="the example scores the local model (scripts/bootstrap.sh --model)",
)
async def test_readme_python_example(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    if platform.settings.database_url:
        pytest.skip("one run of the example is enough")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README lost its Python example"
    assert platform.client is not None
    # The example relies on what `benchwright up` saved; point it at this platform.
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    namespace: dict[str, object] = {}
    for block in blocks:  # in order, in one namespace, as a reader would
        await asyncio.to_thread(exec, compile(block, "README.md", "exec"), namespace)
    # The platform shares this event loop: block it with a sync call and it cannot answer.
    bw, run = namespace["bw"], namespace["run"]
    tasks = await asyncio.to_thread(bw.runs.tasks, run.id)  # type: ignore[attr-defined]
    assert tasks.summary.total == 2
    anchor, fix, again = namespace["anchor"], namespace["fix"], namespace["again"]
    assert anchor.status == "ok" and fix.derived_from == anchor.id  # type: ignore[attr-defined]
    assert again.derived_from == fix.id  # type: ignore[attr-defined]
