"""The ``builtin`` Driver: deterministic, offline, no model of its own.

It reads requests with rules, recognises five kinds of dataset, and writes a
scorer from a template for the kind. What keeps it honest is the proof before
Materialize: the scorer must give full marks to the reference answers of a few
rows and withhold them from wrong answers. When the proof fails, the Driver
asks for Atomize to start over and tries the next most likely kind; the
pipeline's restart cap parks the run for a person when none fits.
"""

import dataclasses

from benchwright_orchestrator.driver import builtin
from benchwright_orchestrator.driver.base import (
    Analysis,
    DriverError,
    DriverTools,
    DriverUsage,
    RequestReview,
    Resolution,
    RestartPhase,
    RowSample,
    Scorer,
)

CHECK_ROWS = 5


class BuiltinDriver:
    name = "builtin"
    model: str | None = None

    def __init__(self, note: str | None = None) -> None:
        self.note = note
        self.phase_models: dict[str, str] = {}  # no model of its own, in any phase

    def usage(self) -> DriverUsage:
        return DriverUsage()  # no model: nothing to pay for

    async def find(self, request: str, tools: DriverTools) -> Resolution:
        listing = await tools.list_catalog()
        try:
            parsed = builtin.parse_request(request, listing.benchmarks)
        except builtin.RequestNotUnderstood as exc:
            raise DriverError("request_not_understood", str(exc)) from None
        for note in parsed.notes:
            tools.say(note)
        sut = (
            {"model": parsed.model, "provider": parsed.provider}
            if parsed.model and parsed.provider
            else None
        )
        if parsed.model and not parsed.provider:
            tools.say(
                f"the request names model {parsed.model!r} but no provider; "
                "pass 'sut' to say where it is served"
            )
        return Resolution(
            benchmark_id=parsed.benchmark_id,
            benchmark_name=parsed.benchmark_name,
            subset_id=parsed.subset_id,
            subset_slug=parsed.subset_slug,
            scope={"kind": parsed.scope.kind, "n": parsed.scope.n},
            sut=sut,
            notes=list(parsed.notes),
            substituted_for=parsed.substituted_for,
        )

    async def analyze(self, sample: RowSample, tools: DriverTools) -> Analysis:
        try:
            found = builtin.analyze_rows(sample.rows)
        except builtin.UnrecognizedDataset as exc:
            raise DriverError("unrecognized_dataset", str(exc)) from None
        for line in found.evidence:
            tools.say(line)
        return Analysis(
            kind=found.kind,
            schema=dict(found.schema),
            fields=dict(found.fields),
            candidates=list(found.candidates),
            evidence=list(found.evidence),
        )

    async def atomize(
        self,
        analysis: Analysis,
        sample: RowSample,
        *,
        attempt: int,
        guidance: list[str],
        tools: DriverTools,
    ) -> Scorer:
        candidates = analysis.candidates or [analysis.kind]
        if attempt > len(candidates):
            raise DriverError(
                "no_scorer", f"no scorer template passed its proof; tried {', '.join(candidates)}"
            )
        found = builtin.analyze_rows(sample.rows)
        kinds = [k for k in found.candidates if k in candidates] or list(found.candidates)
        if attempt > len(kinds):
            raise DriverError("no_scorer", f"no scorer template passed its proof: {kinds}")
        kind = kinds[attempt - 1]
        chosen = dataclasses.replace(found, kind=kind)
        code = builtin.write_scorer(chosen, "\n\n".join(guidance) or None)
        rows = sample.rows[:CHECK_ROWS]
        indices = sample.indices[:CHECK_ROWS]
        try:
            references = builtin.reference_outputs(chosen, rows)
            wrongs = builtin.wrong_outputs(chosen, rows)
        except builtin.ReferenceUnavailable as exc:
            # Without reference answers the scorer cannot be proven: a person decides.
            raise RequestReview(f"cannot prove a {kind} scorer: {exc}") from None
        right = await tools.score_outputs(code, list(zip(indices, references, strict=True)))
        wrong = await tools.score_outputs(code, list(zip(indices, wrongs, strict=True)))
        check = {
            "rows": indices,
            "reference_scores": [r.get("score") for r in right],
            "wrong_scores": [r.get("score") for r in wrong],
            "errors": [r.get("error") for r in right + wrong if r.get("error")],
        }
        proven = all(r.get("score") == 1.0 for r in right) and all(
            (r.get("score") or 0.0) < 1.0 for r in wrong
        )
        if not proven:
            tools.say(f"the {kind} scorer failed its proof on reference answers: {check}")
            raise RestartPhase(f"{kind} scorer failed its proof on reference answers")
        tools.say(
            f"wrote a {kind} scorer; it gives full marks to the reference answers of "
            f"{len(rows)} rows and none to wrong answers"
        )
        return Scorer(kind=kind, code=code, check=check)
