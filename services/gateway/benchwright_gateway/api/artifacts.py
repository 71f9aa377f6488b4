"""A run's artifacts, its HTML report and a plain-words narration, all read from its log.

Artifacts are the log's ``*Artifact`` entries (plus snapshots and report files):
``art_<seq>`` names one by its place in the log, so an id never changes. A phase
that ran twice (a restart, a fork) has several versions of its artifact; the
listing shows the latest of each kind unless ``include_versions`` is set.
"""

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import HTMLResponse, Response

from benchwright_gateway import projections as views
from benchwright_gateway.api import lookup
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.guard import MAX_POSITION
from benchwright_gateway.api.narration import narrate
from benchwright_gateway.api.report import render_report
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_shared import subjects
from benchwright_shared.api.artifacts import ArtifactDetail, ArtifactList
from benchwright_shared.api.runs import Narration
from benchwright_shared.bus import ask, jetstream
from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.contracts.run_events import (
    AnalyzeArtifact,
    AtomizeArtifact,
    DatasetTasksArtifact,
    FetchArtifact,
    HarnessLogArtifact,
    ModelProxyArtifact,
    ReportFile,
    SetupArtifact,
    SnapshotCreated,
)
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused
from benchwright_shared.run_log import parse_run_event, run_event_table

QUERY_TIMEOUT_S = 10.0
PAGE = 5000

# Log entry type -> (artifact kind, phase, media type of its content, field holding it).
KINDS: dict[str, tuple[str, str, str, str | None]] = run_event_table(
    {
        FetchArtifact: ("fetch", "fetch", "application/json", None),
        AnalyzeArtifact: ("analyze", "analyze", "application/json", None),
        DatasetTasksArtifact: ("dataset_tasks", "setup", "application/json", None),
        SetupArtifact: ("setup", "setup", "text/x-python", "code"),
        AtomizeArtifact: ("atomize", "atomize", "text/x-python", "code"),
        ModelProxyArtifact: ("model_proxy", "attach", "application/yaml", "litellm_config_yaml"),
        SnapshotCreated: ("snapshot", "", "application/json", None),
        # The content lies in the object store (an Inspect .eval log): read on download.
        HarnessLogArtifact: ("inspect_log", "materialize", "application/zip", None),
        ReportFile: ("report", "report", "", "content"),
    }
)
BY_KIND = {kind: name for name, (kind, *_rest) in KINDS.items()}


def artifact_id(seq: int) -> str:
    return f"art_{seq}"


def _content(event: dict[str, Any]) -> tuple[str, bytes]:
    """(media type, bytes) of one artifact entry."""
    _, _, media_type, field = KINDS[event["type"]]
    data = event["data"]
    entry = parse_run_event(event)
    if entry is not None and isinstance(entry.data, ReportFile):
        report = entry.data
        return report.media_type or "application/octet-stream", report.content.encode()
    if field and data.get(field) is not None:
        return media_type, str(data[field]).encode()
    return "application/json", json.dumps(data, indent=2, sort_keys=True).encode()


def _describe(event: dict[str, Any], version: int, latest: bool) -> dict[str, Any]:
    kind, phase, _, _ = KINDS[event["type"]]
    data = event["data"]
    if event["type"] == "HarnessLogArtifact":  # described by its log entry, not fetched
        media_type, size, digest = data["media_type"], data["size_bytes"], data["sha256"]
    else:
        media_type, content = _content(event)
        size, digest = len(content), sha256_hex(content)
    return {
        "id": artifact_id(event["seq"]),
        "object": "artifact",
        "type": kind,
        "event_type": event["type"],
        "phase": data.get("phase") or phase,
        "version": version,
        "latest": latest,
        "created_at": event["ts"],
        "media_type": media_type,
        "size_bytes": size,
        "sha256": digest,
        **({"name": data["name"]} if event["type"] == "HarnessLogArtifact" else {}),
        "inherited_from": data.get("inherited_from"),
    }


router = APIRouter(prefix="/v1/runs", tags=["artifacts"])


async def log_of(
    ctx: GatewayContext, run_id: str, types: list[str] | None = None
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    after: int | None = None
    while True:
        page = await ask(
            ctx.bus(),
            GetRunEvents(run_id=run_id, after_seq=after, types=types, limit=PAGE),
            RunEventsPage,
            timeout=QUERY_TIMEOUT_S,
        )
        raise_for(page.problem)
        events += [e.model_dump(mode="json") for e in page.events]
        if not page.has_more or not page.events:
            return events
        after = events[-1]["seq"]


async def artifacts_of(ctx: GatewayContext, run_id: str) -> list[dict[str, Any]]:
    return versioned(await log_of(ctx, run_id, list(KINDS)))


async def one(ctx: GatewayContext, caller: Principal, run_id: str, art_id: str) -> dict[str, Any]:
    await lookup.load_run(ctx, caller, run_id, reading=True)
    for event in await artifacts_of(ctx, run_id):
        if artifact_id(event["seq"]) == art_id:
            return event
    raise Refused(
        404, "artifact not found", f"run {run_id} has no artifact {art_id!r}", field="art_id"
    )


@router.get("/{run_id}/artifacts", response_model=ArtifactList, response_model_exclude_unset=True)
async def list_artifacts(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    type: Annotated[str | None, Query(max_length=40)] = None,
    include_versions: bool = False,
) -> ArtifactList:
    """What each phase produced, latest version of each kind unless ``include_versions``."""
    caller.require("artifacts:read")
    await lookup.load_run(ctx, caller, run_id, reading=True)
    if type is not None and type not in BY_KIND and type not in KINDS:
        known = ", ".join(sorted(BY_KIND))
        raise Refused(400, "unknown artifact type", f"one of {known}", field="type")
    wanted = KINDS[type][0] if type in KINDS else type
    data = [
        _describe(e, e["_version"], e["_latest"])
        for e in await artifacts_of(ctx, run_id)
        if (include_versions or e["_latest"]) and wanted in (None, KINDS[e["type"]][0])
    ]
    return ArtifactList.model_validate({"object": "list", "data": data})


@router.get(
    "/{run_id}/artifacts/{art_id}",
    response_model=ArtifactDetail,
    response_model_exclude_unset=True,
)
async def get_artifact(run_id: str, art_id: str, ctx: Ctx, caller: Caller) -> ArtifactDetail:
    """One artifact's description and its recorded fields."""
    caller.require("artifacts:read")
    event = await one(ctx, caller, run_id, art_id)
    described = _describe(event, event["_version"], event["_latest"])
    return ArtifactDetail.model_validate({**described, "data": event["data"]})


@router.get(
    "/{run_id}/artifacts/{art_id}/content",
    response_class=Response,
    responses={
        200: {
            "description": "The artifact's bytes, in its own media type.",
            "content": {
                "text/x-python": {"schema": {"type": "string"}},
                "application/x-yaml": {"schema": {"type": "string"}},
                # A phase's JSON document as recorded: a file, free-form by kind.
                "application/json": {"schema": {"type": "string", "format": "binary"}},
                "*/*": {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
async def artifact_content(run_id: str, art_id: str, ctx: Ctx, caller: Caller) -> Response:
    """The artifact itself: the scorer's code, the LiteLLM config, the report file."""
    caller.require("artifacts:read")
    event = await one(ctx, caller, run_id, art_id)
    if event["type"] == "HarnessLogArtifact":
        data = event["data"]
        store = await jetstream(ctx.bus()).object_store(data["bucket"])
        found = await store.get(data["object_name"])
        disposition = f'attachment; filename="{data["name"]}"'
        return Response(
            found.data or b"",
            media_type=data["media_type"],
            headers={"content-disposition": disposition},
        )
    media_type, content = _content(event)
    return Response(content, media_type=media_type)


@router.get(
    "/{run_id}/tool-outputs/{seq}",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def tool_output(
    run_id: str, seq: Annotated[int, Path(ge=0, le=MAX_POSITION)], ctx: Ctx, caller: Caller
) -> Response:
    """The whole output of the agent's tool call recorded at ``seq``, where its
    ``AgentToolResult`` was cut (``truncated``); the event holds the first 8 KiB."""
    caller.require("artifacts:read")
    await lookup.load_run(ctx, caller, run_id, reading=True)
    query = GetRunEvents(run_id=run_id, after_seq=seq - 1, types=["AgentToolResult"], limit=1)
    page = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
    raise_for(page.problem)
    found = [e for e in page.events if e.seq == seq]
    name = found[0].data.get("output_object") if found else None
    if not name:
        raise Refused(
            404,
            "no kept tool output",
            f"run {run_id} has no tool result at {seq} whose output was cut",
            field="seq",
        )
    store = await jetstream(ctx.bus()).object_store(subjects.ARTIFACTS_BUCKET)
    kept = await store.get(name)
    return Response(kept.data or b"", media_type="text/plain; charset=utf-8")


@router.get(
    "/{run_id}/report",
    response_class=HTMLResponse,
    responses={
        200: {
            "description": "The run's report, one self-contained HTML page.",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    },
)
async def report(run_id: str, ctx: Ctx, caller: Caller) -> HTMLResponse:
    """A self-contained HTML page: summary, cost, per-task outcomes, fingerprint."""
    caller.require("artifacts:read")
    row = await lookup.load_run(ctx, caller, run_id, reading=True)
    run = await lookup.show(ctx, row)
    tasks = await ctx.read(
        lambda cur: views.list_tasks(cur, run_id, outcomes=None, after=None, limit=10_000)
    )
    return HTMLResponse(render_report(run, tasks))


@router.get("/{run_id}/narrate", response_model=Narration, response_model_exclude_unset=True)
async def narration(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    slice: Literal["recent", "all"] = "recent",
) -> Narration:
    """What the run has been doing, in plain words, from its log."""
    caller.require("runs:read")
    await lookup.load_run(ctx, caller, run_id, reading=True)
    events = await log_of(ctx, run_id)
    told = narrate(events, slice)
    return Narration.model_validate(
        {"object": "narration", "run_id": run_id, "slice": slice, **told}
    )


def versioned(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Artifact entries (log order) marked with their version (1-based within their
    kind) as ``_version`` and whether they are the latest of it as ``_latest``."""
    counts: dict[str, int] = {}
    last: dict[str, int] = {}
    for event in events:
        key = _version_key(event)
        counts[key] = counts.get(key, 0) + 1
        event["_version"] = counts[key]
        last[key] = event["seq"]
    for event in events:
        event["_latest"] = last[_version_key(event)] == event["seq"]
    return events


def latest_described(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest artifact of each kind among ``events``, as ``GET .../artifacts`` shows it."""
    return [_describe(e, e["_version"], True) for e in versioned(events) if e["_latest"]]


def _version_key(event: dict[str, Any]) -> str:
    kind = KINDS[event["type"]][0]
    # Snapshots are versioned per phase: each phase keeps its own.
    return f"{kind}:{event['data'].get('phase', '')}" if kind == "snapshot" else kind
