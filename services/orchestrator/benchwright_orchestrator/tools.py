"""The tools the pipeline lends its Driver, each call written into the run's log.

Every tool call becomes a ``ToolCallEvent`` and its answer a
``ToolResultEvent``, so what the Driver did to reach its decision can be read
back from the log. Nothing here can reach the model under test or its key:
sandbox commands run without the proxy's environment.
"""

import json
from collections.abc import Awaitable, Callable
from typing import Any

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.driver.base import RowSample
from benchwright_orchestrator.ports import PhaseError, Workspace
from benchwright_shared.contracts import CatalogListing, SandboxFile

RESULT_PREVIEW = 4000

# Runs in the work sandbox (standard library only): a spread of rows, and the
# first indices of each category, from tasks.jsonl.
SAMPLE_SCRIPT = r"""
import json, sys
per = int(sys.argv[1]); spread = int(sys.argv[2])
rows, cats = [], {}
with open("tasks.jsonl", encoding="utf-8") as f:
    for i, line in enumerate(f):
        if not line.strip():
            continue
        row = json.loads(line)
        rows.append(i)
        c = row.get("category")
        if isinstance(c, str):
            seen = cats.setdefault(c, [])
            if len(seen) < per:
                seen.append(i)
total = len(rows)
step = max(1, total // spread) if total else 1
picked = sorted(set(list(range(min(3, total))) + list(range(0, total, step))[:spread]))
print(json.dumps({"total": total, "indices": picked, "categories": cats}))
"""

READ_SCRIPT = r"""
import json, sys
want = set(json.loads(sys.stdin.read()))
out = {}
with open("tasks.jsonl", encoding="utf-8") as f:
    for i, line in enumerate(f):
        if i in want:
            out[i] = json.loads(line)
print(json.dumps([out[i] for i in sorted(out)]))
"""


class PipelineTools:
    """``DriverTools`` for one phase of one run."""

    def __init__(
        self,
        run: Run,
        work: Workspace,
        phase: str,
        save: Callable[[], Awaitable[None]],
    ) -> None:
        self.run = run
        self.work = work
        self.phase = phase
        self._save = save
        self._calls = 0

    def say(self, text: str) -> None:
        self.run.agent_text(phase=self.phase, text=text)

    async def _logged(
        self, tool: str, arguments: dict[str, Any], call: Callable[[], Awaitable[Any]]
    ) -> Any:
        call_id = self._open_call(tool, arguments)
        try:
            result = await call()
        except PhaseError as exc:
            await self._close_call(call_id, tool, f"{exc.error_type}: {exc.detail}", True)
            raise
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        await self._close_call(call_id, tool, text, False)
        return result

    def _open_call(self, tool: str, arguments: dict[str, Any]) -> str:
        self._calls += 1
        call_id = f"{self.phase}-{self.run.progress.invocations.get(self.phase, 1)}-{self._calls}"
        self.run.tool_call(phase=self.phase, call_id=call_id, tool=tool, arguments=arguments)
        return call_id

    async def _close_call(self, call_id: str, tool: str, result: str, is_error: bool) -> None:
        self.run.tool_result(
            phase=self.phase,
            call_id=call_id,
            tool=tool,
            result=result[:RESULT_PREVIEW],
            is_error=is_error,
        )
        await self._save()

    async def log_call(
        self, tool: str, arguments: dict[str, Any], result: str, is_error: bool = False
    ) -> None:
        call_id = self._open_call(tool, arguments)
        await self._close_call(call_id, tool, result, is_error)

    async def list_catalog(self) -> CatalogListing:
        listing: CatalogListing = await self._logged("list_catalog", {}, self.work.list_catalog)
        return listing

    async def sample_rows(self, per_category: int) -> RowSample:
        async def call() -> dict[str, Any]:
            found: dict[str, Any] = await self.work.run_python(
                SAMPLE_SCRIPT, [str(per_category), "8"]
            )
            return found

        found = await self._logged("sample_rows", {"per_category": per_category}, call)
        indices = [int(i) for i in found["indices"]]
        rows = await self.read_rows(indices)
        return RowSample(
            total=int(found["total"]),
            rows=rows,
            indices=indices,
            category_indices={str(k): [int(i) for i in v] for k, v in found["categories"].items()},
        )

    async def read_rows(self, indices: list[int]) -> list[dict[str, Any]]:
        async def call() -> list[dict[str, Any]]:
            rows: list[dict[str, Any]] = await self.work.run_python(
                READ_SCRIPT, [], stdin=json.dumps(indices)
            )
            return rows

        rows: list[dict[str, Any]] = await self._logged("read_rows", {"indices": indices}, call)
        return rows

    async def write_file(self, path: str, content: str) -> None:
        async def call() -> str:
            result = await self.work.exec(
                ["python", "-c", "pass"], files=[SandboxFile(path=path, content=content)]
            )
            if result.exit_code != 0:
                raise PhaseError("write_failed", result.stderr[-2000:])
            return f"wrote {len(content)} characters to {path}"

        await self._logged("write_file", {"path": path, "chars": len(content)}, call)

    async def run_command(self, argv: list[str], stdin: str | None = None) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            result = await self.work.exec(argv, stdin=stdin)
            return {
                "exit_code": result.exit_code,
                "stdout": result.stdout[-RESULT_PREVIEW:],
                "stderr": result.stderr[-RESULT_PREVIEW:],
                "timed_out": result.timed_out,
            }

        answer: dict[str, Any] = await self._logged("run_command", {"argv": argv}, call)
        return answer

    async def score_outputs(
        self, code: str, outputs: list[tuple[int, str]]
    ) -> list[dict[str, Any]]:
        stdin = "".join(json.dumps({"index": i, "output": o}) + "\n" for i, o in outputs)

        async def call() -> list[dict[str, Any]]:
            result = await self.work.exec(
                ["python", "-m", "bench_runner", "--check", "--impl", "candidate_impl.py"],
                files=[SandboxFile(path="candidate_impl.py", content=code)],
                stdin=stdin,
            )
            if result.exit_code != 0:
                raise PhaseError("scorer_check_failed", (result.stderr or result.stdout)[-2000:])
            return [json.loads(line) for line in result.stdout.split("\n") if line.strip()]

        results: list[dict[str, Any]] = await self._logged(
            "score_outputs", {"outputs": len(outputs)}, call
        )
        return sorted(results, key=lambda r: int(r.get("index", 0)))
