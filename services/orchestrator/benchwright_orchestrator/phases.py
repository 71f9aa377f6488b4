"""What each phase does. Mixed into ``RunPipeline``, which brackets and orders them.

A phase reads what earlier phases recorded on the run (``run.dataset``,
``run.analysis``, ``run.scorer`` ...) rather than anything held in memory, so
it runs the same after a restart, in a replay or in a fork.
"""

import json
from typing import TYPE_CHECKING, Any

from benchwright_orchestrator.driver.base import Analysis, Driver, RowSample
from benchwright_orchestrator.plan import replay_selection, scope_selection, selected_indices
from benchwright_orchestrator.sweep import Sweep
from benchwright_orchestrator.tools import PipelineTools
from benchwright_orchestrator.workspace import PhaseError
from benchwright_shared.contracts import SandboxFile
from benchwright_shared.hashing import canonical_json, fingerprint12, sha256_hex
from benchwright_shared.ids import impl_id_for

if TYPE_CHECKING:
    from benchwright_orchestrator.domain import Run
    from benchwright_orchestrator.workspace import Workspace
    from benchwright_shared.settings import Settings


class Phases(Sweep):
    run: "Run"
    work: "Workspace"
    driver: Driver
    settings: "Settings"

    async def save(self) -> None: ...

    async def inherit_scorer(self) -> None: ...

    def tools(self, phase: str) -> PipelineTools:
        return PipelineTools(self.run, self.work, phase, self.save)

    # -- Fork -----------------------------------------------------------------------
    async def _fork(self) -> None:
        """Record what the fork starts from; the description reaches the Driver as guidance."""
        fork = self.run.fork or {}
        self.run.agent_text(
            phase="fork",
            text=(
                f"forked from run {self.run.parent_run_id}, rewinding to {fork.get('from_phase')}; "
                f"guidance: {fork.get('description')}"
            ),
        )

    # -- Find -----------------------------------------------------------------------
    async def _find(self) -> None:
        if not self.run.request:
            raise PhaseError("no_request", "a natural-language launch needs 'request'")
        found = await self.driver.find(self.run.request, self.tools("find"))
        sut = self.run.sut or found.sut
        self.run.benchmark_resolved(
            benchmark_id=found.benchmark_id,
            benchmark_name=found.benchmark_name,
            subset_id=found.subset_id,
            subset_slug=found.subset_slug,
            scope=found.scope,
            sut=None if self.run.sut else found.sut,
            notes=found.notes,
        )
        if sut is None:
            raise PhaseError(
                "no_model",
                "the request names no model to evaluate: add '... on <provider>/<model>' "
                "or pass 'sut'",
            )

    # -- Fetch ----------------------------------------------------------------------
    async def _fetch(self) -> None:
        if not self.run.subset_id:
            raise PhaseError("no_dataset", "no benchmark subset to fetch")
        rows = await self.work.subset_rows(self.run.subset_id)
        self.run.fetch_done(
            source=f"registry:{self.run.subset_id}",
            content_sha256=rows.content_sha256 or "",
            total_tasks=rows.total,
            bucket=rows.bucket,
            object_name=rows.object_name,
        )
        await self.work.ensure_sandbox()
        await self.work.snapshot("fetch")
        self.after_cache_hit("fetch")

    def after_cache_hit(self, phase: str) -> None:
        """What a phase decides beyond its cached work: without Analyze, the selection.

        A replay fetching a newer snapshot takes all of it, or the slice it names.
        """
        if phase == "fetch" and "analyze" not in self.run.plan:
            if self.run.mode != "replay":
                self._select(scope_selection({"kind": "all"}, cap=self.run.limit))
                return
            replay = self.run.replay or {}
            self._select(
                replay_selection(
                    scope_selection({"kind": "all"}),
                    int(self.run.dataset["total_tasks"]),
                    replay.get("indices"),
                    self.run.limit,
                )
            )

    def _select(self, selection: dict[str, Any]) -> None:
        total = int(self.run.dataset["total_tasks"])
        self.run.dataset_tasks(
            benchmark_id=self.run.benchmark_id or "",
            subset_id=self.run.subset_id or "",
            total_tasks=total,
            selected_tasks=len(selected_indices(selection, total)),
            content_sha256=str(self.run.dataset["content_sha256"]),
            selection=selection,
        )

    # -- Analyze --------------------------------------------------------------------
    async def _sample(self, tools: PipelineTools) -> RowSample:
        scope = self.run.scope or {}
        per = int(scope.get("n") or 1) if scope.get("kind") == "per_category" else 1
        return await tools.sample_rows(per_category=per)

    async def _analyze(self) -> None:
        tools = self.tools("analyze")
        sample = await self._sample(tools)
        analysis = await self.driver.analyze(sample, tools)
        self.run.analyze_done(
            kind=analysis.kind,
            schema=analysis.schema,
            schema_sha256=sha256_hex(canonical_json(analysis.schema)),
            subsets=[self.run.subset_id or ""],
            fields=analysis.fields,
            candidates=analysis.candidates,
            evidence=analysis.evidence,
        )
        selection = scope_selection(
            self.run.scope or {"kind": "all"},
            category_indices=sample.category_indices,
            cap=self.run.limit,
        )
        if selection["kind"] == "indices":
            self.run.synthetic_subset(
                subset_id="sub_"
                + fingerprint12(f"{self.run.dataset['content_sha256']}:{selection['indices']}"),
                parent_subset_id=self.run.subset_id or "",
                selection=selection,
                task_count=len(selection["indices"]),
            )
        self._select(selection)

    # -- Setup ----------------------------------------------------------------------
    async def _setup(self) -> None:
        """Install the scorer a pin names (if any) and prove the runtime works."""
        code = await self.work.scorer_code() if self.run.impl_id else None
        files = [SandboxFile(path="task_impl.py", content=code)] if code else []
        probe = await self.work.exec(
            ["python", "-c", "import bench_task, bench_runner, json; print('ok')"], files=files
        )
        if probe.exit_code != 0:
            raise PhaseError("runtime_broken", (probe.stderr or probe.stdout)[-2000:])
        self.run.setup_done(
            impl_id=self.run.impl_id if code else None,
            impl_sha256=sha256_hex(code) if code else None,
            code=code,
        )
        await self.work.snapshot("setup")

    # -- Attach ---------------------------------------------------------------------
    async def _attach(self) -> None:
        self.work.model = None
        reply = await self.work.attach()
        self.run.model_proxy(
            model_id=reply.model_id,
            litellm_config_yaml=reply.litellm_config_yaml,
            proxy_url=reply.proxy_url,
        )
        if self.run.mode == "replay" and self.run.scorer is None:
            await self.inherit_scorer()
            # On a newer snapshot the work sandbox is already up (Fetch, Setup): the
            # inherited scorer joins it. Otherwise Materialize creates it with the scorer.
            await self.work.install_scorer()

    # -- Atomize --------------------------------------------------------------------
    async def _atomize(self) -> None:
        if self.run.analysis is None:
            raise PhaseError("no_analysis", "Atomize needs Analyze's findings")
        tools = self.tools("atomize")
        sample = await self._sample(tools)
        analysis = Analysis(
            kind=str(self.run.analysis["kind"]),
            schema=dict(self.run.analysis["schema"]),
            fields=dict(self.run.analysis["fields"]),
            candidates=list(self.run.analysis["candidates"]),
            evidence=list(self.run.analysis["evidence"]),
        )
        invocation = self.run.invocations["atomize"]
        # Attempts count since the last person looked (a review answer resets them).
        scorer = await self.driver.atomize(
            analysis,
            sample,
            attempt=self.run.restarts + 1,
            guidance=list(self.run.guidance),
            tools=tools,
        )
        scope = self.run.benchmark_id or "bm_unknown"
        await tools.write_file("task_impl.py", scorer.code)
        self.run.atomize_done(
            impl_id=impl_id_for(scope, scorer.code),
            impl_sha256=sha256_hex(scorer.code),
            invocation=invocation,
            kind=scorer.kind,
            code=scorer.code,
            check=scorer.check,
            guidance=list(self.run.guidance),
        )
        await self.work.snapshot("atomize")

    # -- Report ---------------------------------------------------------------------
    async def _report(self) -> None:
        from benchwright_orchestrator.domain import summarize

        report: dict[str, Any] = {
            "run_id": self.run.run_id,
            "benchmark_id": self.run.benchmark_id,
            "subset_id": self.run.subset_id,
            "impl_id": self.run.impl_id,
            "model": self.run.sut,
            "selection": self.run.selection,
            "trials": self.run.trials,
            "summary": summarize(list(self.outcomes.values())),
        }
        content = json.dumps(report, indent=2, sort_keys=True)
        self.run.report_file(
            name="report.json",
            media_type="application/json",
            content=content,
            sha256=sha256_hex(canonical_json(report)),
        )
