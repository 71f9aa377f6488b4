"""``bw.runs`` and ``bw.admin`` against the fake gateway."""

from __future__ import annotations

import json

import httpx
import pytest

from benchwright import APIConnectionError, Benchwright, NotFoundError, WaitTimeoutError

from .fakes import (
    RUN_ID,
    SUMMARY,
    BrokenStream,
    FakeGateway,
    event,
    run_body,
    run_events,
    sse_frames,
    sse_response,
)

RUN = f"/v1/runs/{RUN_ID}"


def test_get_parses_the_run_and_keeps_unknown_fields(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", RUN, httpx.Response(200, json=run_body("ok")))
    run = bw.runs.get(RUN_ID)
    assert run.status == "ok" and run.is_terminal
    assert run.model is not None and run.model.provider == "openrouter"
    assert run.cost.billed is not None and run.cost.billed.amount_cents == 15
    assert run.links.dashboard == f"http://127.0.0.1:8765/runs/{RUN_ID}"
    assert run.links.self_ == RUN
    assert run.backend == "local"  # type: ignore[attr-defined]  # an extra field


def test_launch_forwards_passthrough_fields_untouched(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/runs", httpx.Response(201, json=run_body()))
    bw.runs.launch(
        replay={"from_run": "r0"},
        sut={"model": "m", "provider": "together"},
        harness="inspect",
        limits={"run": {"cost": 15.0}},
        trials={"plan": {"k": 3}},
        future_field=[1, 2],
    )
    body = json.loads(gateway.seen("POST", "/v1/runs")[0].content)
    assert body == {
        "replay": {"from_run": "r0"},
        "sut": {"model": "m", "provider": "together"},
        "harness": "inspect",
        "limits": {"run": {"cost": 15.0}},
        "trials": {"plan": {"k": 3}},
        "future_field": [1, 2],
    }


def test_launch_sends_hints_and_phase_models_and_bounds_only_its_request(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/runs", httpx.Response(201, json=run_body()))
    bw.runs.launch(
        request="Run GSM8K on local/smollm2",
        hints=("the answer is the last number", "ignore units"),
        phase_models={"atomize": "openai://gpt-4o"},
        timeout=7.5,
    )
    sent = gateway.seen("POST", "/v1/runs")[0]
    assert json.loads(sent.content) == {
        "request": "Run GSM8K on local/smollm2",
        "hints": ["the answer is the last number", "ignore units"],
        "phase_models": {"atomize": "openai://gpt-4o"},
    }
    assert sent.extensions["timeout"] == dict.fromkeys(("connect", "read", "write", "pool"), 7.5)
    gateway.on("GET", RUN, httpx.Response(200, json=run_body()))
    bw.runs.get(RUN_ID)  # the next call is back on the client's own timeout
    assert gateway.seen("GET", RUN)[0].extensions["timeout"]["read"] != 7.5


def test_list_sends_filters_and_parses_the_page(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        "/v1/runs",
        httpx.Response(200, json={"object": "list", "data": [run_body()], "next_page_token": "p2"}),
    )
    page = bw.runs.list(limit=10, status="running")
    assert [r.id for r in page.data] == [RUN_ID] and page.next_page_token == "p2"
    params = gateway.requests[0].url.params
    assert dict(params) == {"limit": "10", "status": "running"}


def test_wait_polls_until_the_run_is_terminal(
    bw: Benchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on(
        "GET",
        RUN,
        httpx.Response(200, json=run_body("running")),
        httpx.Response(200, json=run_body("running")),
        httpx.Response(200, json=run_body("error")),
    )
    run = bw.runs.wait(RUN_ID, poll_interval=0.25)
    assert run.status == "error"
    assert sleeps == [0.25, 0.25]


def test_wait_times_out_with_a_timeout_error(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", RUN, httpx.Response(200, json=run_body("running")))
    with pytest.raises(TimeoutError) as info:
        bw.runs.wait(RUN_ID, timeout=0.0)
    assert isinstance(info.value, WaitTimeoutError)
    assert info.value.last_status == "running"


def test_stream_yields_events_with_attribute_access(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"{RUN}/stream", sse_response(run_events(total=2)))
    events = list(bw.runs.stream(RUN_ID))
    assert [e.seq for e in events] == list(range(10))
    assert events[2].type == "PhaseStarted" and events[2].data.phase == "fetch"
    assert events[3].data.selected_tasks == 2
    assert events[-1].type == "PipelineFinished" and events[-1].data.status == "ok"
    request = gateway.seen("GET", f"{RUN}/stream")[0]
    assert request.headers["accept"] == "text/event-stream"


def test_stream_resumes_after_a_dropped_connection_without_duplicates(
    bw: Benchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    log = run_events(total=2)
    # The first connection dies after 4 events; the server then replays from the start.
    broken = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, stream=BrokenStream(sse_frames(log[:4]))
    )
    gateway.on("GET", f"{RUN}/stream", broken, sse_response(log))
    seqs = [e.seq for e in bw.runs.stream(RUN_ID)]
    assert seqs == list(range(len(log)))
    second = gateway.seen("GET", f"{RUN}/stream")[1]
    assert second.headers["last-event-id"] == "3"
    assert len(sleeps) == 1


def test_stream_gives_up_after_repeated_drops(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        f"{RUN}/stream",
        lambda request: httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=BrokenStream(b""),
        ),
    )
    with pytest.raises(APIConnectionError):
        list(bw.runs.stream(RUN_ID))
    assert len(gateway.requests) == 3


def test_stream_of_unknown_run_raises_not_found(bw: Benchwright, gateway: FakeGateway) -> None:
    with pytest.raises(NotFoundError):
        next(bw.runs.stream("nope"))


def test_events_sends_paging_and_type_filters(bw: Benchwright, gateway: FakeGateway) -> None:
    page = {
        "object": "list",
        "data": [event(7, "PhaseStarted", phase="report")],
        "has_more": True,
        "next_after_seq": 7,
    }
    gateway.on("GET", f"{RUN}/events", httpx.Response(200, json=page))
    events = bw.runs.events(RUN_ID, after_seq=6, types=["PhaseStarted", "PhaseCompleted"])
    assert events.has_more and events.next_after_seq == 7
    assert events.data[0].data.phase == "report"
    assert dict(gateway.requests[0].url.params) == {
        "after_seq": "6",
        "types": "PhaseStarted,PhaseCompleted",
        "limit": "500",
    }


def task_row(i: int, outcome: str) -> dict[str, object]:
    return {
        "id": f"{RUN_ID}:1:{i}",
        "task_id": f"gsm8k/test/{i}",
        "index": i,
        "invocation": 1,
        "score": 1.0 if outcome == "pass" else 0.0,
        "outcome": outcome,
        "output_preview": f"answer {i}",
        "error_type": "Timeout" if outcome == "err" else None,
        "duration_ms": 700,
    }


def test_tasks_pages_and_fetches_payloads(bw: Benchwright, gateway: FakeGateway) -> None:
    def tasks_page(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("page_token") == "p2":
            body = {"object": "list", "summary": SUMMARY, "data": [task_row(2, "err")]}
            return httpx.Response(200, json={**body, "next_page_token": None})
        rows = [task_row(0, "pass"), task_row(1, "fail")]
        body = {"object": "list", "summary": SUMMARY, "data": rows, "next_page_token": "p2"}
        return httpx.Response(200, json=body)

    row_id = f"{RUN_ID}:1:1"
    gateway.on("GET", f"{RUN}/tasks", tasks_page)
    gateway.on(
        "GET",
        f"{RUN}/tasks/{row_id}/payload",
        httpx.Response(
            200,
            json={
                "id": row_id,
                "task_id": "gsm8k/test/1",
                "input": {"question": "2+2?"},
                "expected": "4",
                "output": "5",
                "score": 0.0,
                "score_meta": {"parsed": 5},
                "error": None,
            },
        ),
    )
    first = bw.runs.tasks(RUN_ID, passed=False, limit=2)
    assert first.summary.total == 3 and first.summary.pass_rate == pytest.approx(1 / 3)
    assert [t.outcome for t in first.data] == ["pass", "fail"]
    assert first.next_page_token == "p2"
    second = bw.runs.tasks(RUN_ID, page_token=first.next_page_token)
    assert [t.task_id for t in second.data] == ["gsm8k/test/2"] and not second.next_page_token
    assert dict(gateway.requests[0].url.params) == {"passed": "false", "limit": "2"}

    payload = first.payload(first.data[1].id)
    assert payload.output == "5" and payload.input == {"question": "2+2?"}
    assert payload.score_meta.parsed == 5

    assert [t.index for t in bw.runs.iter_tasks(RUN_ID, page_size=2)] == [0, 1, 2]


def test_tasks_asks_for_a_version_and_an_order_and_reads_trials(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    trial = {"trial": 1, "score": 1.0, "outcome": "pass", "output_preview": "4"}
    row = {**task_row(0, "pass"), "version": 2, "trials": [trial]}
    body = {"object": "list", "summary": SUMMARY, "data": [row], "next_page_token": None,
            "version": 2, "versions": [1, 2], "sort": "-score"}  # fmt: skip
    gateway.on("GET", f"{RUN}/tasks", httpx.Response(200, json=body))
    page = bw.runs.tasks(RUN_ID, version=2, sort="-score")
    assert dict(gateway.requests[0].url.params) == {
        "version": "2",
        "sort": "-score",
        "limit": "100",
    }
    assert (page.version, page.versions, page.sort) == (2, [1, 2], "-score")
    assert page.data[0].trials[0].outcome == "pass" and page.data[0].trials[0].trial == 1


def test_admin_rebuild_reports_digests(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/admin/projections/runs/rebuild",
        httpx.Response(
            200,
            json={"projection": "runs", "applied": 42, "digest": "abc", "before_digest": "abc"},
        ),
    )
    result = bw.admin.rebuild("runs")
    assert result.applied == 42 and result.unchanged
