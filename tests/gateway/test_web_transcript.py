"""A task's transcript on its page: an agent's attempts read from the run's log, drawn
as a conversation (escaped: agent output is hostile), a rerun attempt apart from the
one it superseded, long attempts paged, and the live stream's changed elements."""

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from faststream.nats import NatsBroker
from nats.aio.msg import Msg

from benchwright_gateway.app import GatewayService
from benchwright_gateway.web import tasks
from benchwright_gateway.web.templating import environment
from benchwright_gateway.web.transcript import AGENT_EVENTS, Transcript, apply_all, read
from benchwright_shared import subjects
from benchwright_shared.contracts import GetRunEvents, RunEventsPage, SubsetRows
from benchwright_shared.contracts.run_events import RunEvent
from benchwright_shared.settings import Settings
from tests.gateway.test_web import PASSWORD, RUN, SCRIPT, browser, run_log, session_of

pytestmark = pytest.mark.connected

HOSTILE_OUTPUT = f"total 0\n{SCRIPT}\n<img src=x onerror=alert(1)>"
COMMAND = "ls -la && cat notes.txt"


def entry(seq: int, kind: str, index: int = 0, **data: Any) -> RunEvent:
    return RunEvent(run_id=RUN, seq=seq, type=kind, ts=f"2026-12-01T00:01:{seq % 60:02d}Z",
                    data={"task_id": f"t-{index}", "index": index, **data})  # fmt: skip


def crashed_then_solved() -> list[RunEvent]:
    """Task 0: attempt 1 crashes after one turn, attempt 2 solves it; task 1 in between."""
    shell = {"id": "call_1", "name": "shell", "arguments": {"command": COMMAND}}
    return [
        entry(100, "AgentAttemptStarted", agent="benchwright", model="scripted@openai_compatible",
              instruction="Fix <b>median</b>", instruction_chars=16, system_prompt="be brief",
              tools=["shell", "write_file"]),
        entry(101, "AgentModelTurn", turn=1, messages_in_count=2, tool_calls=[shell],
              input_tokens=20, output_tokens=20, cost_micros=150, latency_ms=40,
              finish_reason="tool_calls"),
        entry(102, "AgentToolResult", turn=1, call_id="call_1", name="shell", exit_code=0,
              output=HOSTILE_OUTPUT, truncated=True, output_chars=20_000, duration_ms=12),
        entry(103, "AgentAttemptStarted", index=1, agent="benchwright", instruction="other"),
        entry(104, "AgentAttemptEnded", reason="crashed", turns=1, detail="sandbox lost"),
        entry(105, "AgentAttemptStarted", attempt=2, agent="benchwright", instruction="Fix it"),
        entry(106, "AgentModelTurn", attempt=2, turn=1, messages_in_count=2,
              tool_calls=[{"id": "call_9", "name": "write_file", "raw_arguments": "{not json"}],
              input_tokens=20, output_tokens=20),
        entry(107, "AgentToolResult", attempt=2, turn=1, call_id="call_9", name="write_file",
              is_error=True, output="arguments are not JSON"),
        entry(108, "AgentModelTurn", attempt=2, turn=2, messages_in_count=4, text="median fixed",
              input_tokens=40, output_tokens=20, cost_micros=150, finish_reason="stop"),
        entry(109, "AgentAttemptEnded", attempt=2, reason="done", turns=2, tokens=100),
        entry(110, "VerifierFinished", attempt=2, reward=1.0, metadata={"tests": 3}),
    ]  # fmt: skip


def test_a_rerun_attempt_supersedes_the_crashed_one_and_keeps_it() -> None:
    transcript = Transcript(0)
    apply_all(transcript, crashed_then_solved())
    first, second = transcript.ordered()
    assert (first.attempt, first.superseded, first.ended and first.ended.reason) == (
        1, True, "crashed"
    )  # fmt: skip
    assert (second.attempt, second.superseded, second.running) == (2, False, False)
    assert transcript.task_id == "t-0" and transcript.seq == 110
    [turn] = transcript.shown(first)
    [step] = turn.steps
    assert step.result is not None and step.result.output == HOSTILE_OUTPUT
    assert json.loads(step.arguments) == {"command": COMMAND}
    assert transcript.shown(second)[0].steps[0].arguments == "{not json"
    assert second.verdict is not None and second.verdict.reward == 1.0
    # Task 1's attempt is not this page's.
    assert [(a.trial, a.attempt) for a in transcript.ordered()] == [(0, 1), (0, 2)]


def test_the_live_stream_sends_what_changed_after_the_page_each_once() -> None:
    log = crashed_then_solved()
    transcript = Transcript(0)
    apply_all(transcript, log[:5])  # the page was drawn here: attempt 1 ended
    drawn = transcript.seq
    apply_all(transcript, log[5:7])
    assert [f.id for f in transcript.changed(drawn)] == [
        "attempt-0-1-head",  # now labelled superseded
        "attempt-0-2",  # a new attempt comes whole, its first turn inside
    ]
    since = transcript.seq
    apply_all(transcript, log[7:])
    assert [(f.parent, f.id) for f in transcript.changed(since)] == [
        ("attempt-0-2-turns", "attempt-0-2-turn-1"),  # its tool's result came in
        ("attempt-0-2-turns", "attempt-0-2-turn-2"),
        ("attempt-0-2", "attempt-0-2-end"),
    ]
    assert transcript.changed(transcript.seq) == []


def test_a_long_attempt_shows_a_page_of_turns_and_links_to_the_rest() -> None:
    log = [entry(1, "AgentAttemptStarted", agent="benchwright", instruction="go")]
    log += [
        entry(1 + n, "AgentModelTurn", turn=n, messages_in_count=n, text=f"step {n}")
        for n in range(1, 8)
    ]
    section = environment().get_template("_transcript.html").module.section  # type: ignore[attr-defined]
    first = Transcript(0, turns_shown=3)
    apply_all(first, log)
    page_one = str(section(first, None, {}))
    assert [t.model.turn for t in first.shown(first.ordered()[0])] == [1, 2, 3]
    assert "step 3" in page_one and "step 4" not in page_one
    assert 'href="?from_turn=4#attempt-0-1">4 later turns' in page_one
    assert "instruction" in page_one
    middle = Transcript(0, from_turn=4, turns_shown=3)
    apply_all(middle, log)
    page_two = str(section(middle, None, {}))
    assert "step 4" in page_two and "step 6" in page_two and "step 7" not in page_two
    assert re.search(r'href="\?from_turn=1#attempt-0-1">\W+3 earlier turns<', page_two)
    assert re.search(r'href="\?from_turn=7#attempt-0-1">1 later turn\W+</a>', page_two)
    # A turn past the page while it is live updates the link, not the list.
    live = Transcript(0, turns_shown=3)
    apply_all(live, log[:4])
    since = live.seq
    apply_all(live, log[4:5])
    assert [f.id for f in live.changed(since)] == ["attempt-0-1-more"]


class FakeLog:
    """The orchestrator's ``GetRunEvents`` over NATS, answering from a list."""

    def __init__(self, events: list[RunEvent]) -> None:
        self.events = events
        self.asked: list[GetRunEvents] = []

    async def fetch(self, query: GetRunEvents) -> RunEventsPage:
        self.asked.append(query)
        after = -1 if query.after_seq is None else query.after_seq
        later = [e for e in self.events if e.seq > after]
        found = [
            e
            for e in later
            if (not query.types or e.type in query.types)
            and (query.task_index is None or e.data.get("index") == query.task_index)
        ]
        page, more = found[: query.limit], len(found) > query.limit
        # Looked through: the last entry sent when more match, else the whole log.
        scanned = page[-1].seq if more else max((e.seq for e in later), default=None)
        return RunEventsPage(events=page, has_more=more, scanned_seq=scanned)

    async def respond(self, msg: Msg) -> None:
        query = GetRunEvents.model_validate_json(msg.data)
        await msg.respond((await self.fetch(query)).model_dump_json().encode())


async def test_reading_the_log_pages_through_it_within_a_budget() -> None:
    log = FakeLog(crashed_then_solved())
    transcript = Transcript(0)
    assert await read(log.fetch, RUN, transcript, budget=4)
    # Four of task 0's entries, read past the other task's at 103 (never sent).
    assert transcript.cut and transcript.seq == 104
    assert [(q.types, q.task_index) for q in log.asked] == [(AGENT_EVENTS, 0)]
    transcript.cut = False
    assert await read(log.fetch, RUN, transcript)
    assert not transcript.cut and transcript.seq == 110 and log.asked[-1].after_seq == 104


@pytest.fixture
async def gateway(
    tmp_path: Path, embedded_nats: str
) -> AsyncIterator[tuple[GatewayService, FakeLog]]:
    service = GatewayService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None)
    await broker.connect()
    service.ctx.broker = broker
    log = FakeLog(crashed_then_solved())

    async def subset_rows(msg: Msg) -> None:
        rows = [{"task_id": "t-0", "input": {"question": "q"}, "expected": "e"}]
        await msg.respond(SubsetRows(subset_id="sub_1", rows=rows).model_dump_json().encode())

    subs = [
        await broker.connection.subscribe(subjects.GET_SUBSET_ROWS, cb=subset_rows),
        await broker.connection.subscribe(subjects.GET_RUN_EVENTS, cb=log.respond),
    ]
    service.app.create_login("alice", PASSWORD, account="acct_alice")
    service.views.store.apply_many(
        "runs", [(i + 1, m) for i, m in enumerate(run_log("acct_alice"))]
    )
    yield service, log
    for sub in subs:
        await sub.unsubscribe()
    await broker.stop()
    service.app.close()
    service.views.close()


async def test_the_task_page_draws_the_conversation_as_text(
    gateway: tuple[GatewayService, FakeLog],
) -> None:
    service, _ = gateway
    async with browser(service, session_of(service, "alice")) as client:
        response = await client.get(f"/runs/{RUN}/tasks/t1_0")
    assert response.status_code == 200, response.text
    page = response.text
    assert "<script>document" not in page and "<img src=x" not in page and "<b>median" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert "Fix &lt;b&gt;median&lt;/b&gt;" in page
    assert '<code class="tool-name">shell</code>' in page
    assert "&#34;command&#34;: &#34;ls -la &amp;&amp; cat notes.txt&#34;" in page
    assert "truncated: the first" in page and "of 20000 characters" in page
    assert "superseded" in page and 'class="end-reason">crashed' in page
    assert 'class="end-reason">done' in page and "the call failed" in page
    assert "{not json" in page and "median fixed" in page
    assert re.search(r'class="reward">1.0</strong>\s*<span class="outcome o-pass">pass<', page)
    assert "$0.000150" in page  # a turn's cost
    assert 'role="log"' in page
    # The run is running: the page follows its log from where it was drawn.
    assert f'data-src="/runs/{RUN}/tasks/t1_0/live?from_turn=1&amp;since=110"' in page
    assert "style=" not in page


async def test_a_task_an_agent_is_still_on_has_a_page_before_its_row(
    gateway: tuple[GatewayService, FakeLog],
) -> None:
    service, log = gateway
    log.events.append(entry(111, "AgentModelTurn", index=3, turn=1, messages_in_count=2,
                            text=SCRIPT))  # fmt: skip
    async with browser(service, session_of(service, "alice")) as client:
        waiting = await client.get(f"/runs/{RUN}/tasks/t1_3")
        nothing_yet = await client.get(f"/runs/{RUN}/tasks/t1_2")  # a row, no agent steps
        bad = await client.get(f"/runs/{RUN}/tasks/t1_0", params={"from_turn": 0})
    assert waiting.status_code == 200, waiting.text
    assert "<code>t-3</code>" in waiting.text and 'o-running">running' in waiting.text
    assert "&lt;script&gt;" in waiting.text and "<script>document" not in waiting.text
    assert 'data-live="yes"' in waiting.text
    # A row no agent worked on (a task of a run without agents) has no transcript.
    assert nothing_yet.status_code == 200 and "Transcript" not in nothing_yet.text
    assert "/live" not in nothing_yet.text
    assert bad.status_code == 400 and "from_turn" in bad.text


async def test_the_stream_sends_new_turns_then_ends_with_the_run() -> None:
    log = FakeLog(crashed_then_solved())
    held = log.events[5:]
    log.events[5:] = []
    rows: list[dict[str, Any] | None] = [{"status": "running", "last_seq": 1}]

    async def read_run() -> dict[str, Any] | None:
        return rows[-1]

    asked: list[int] = []

    async def outcomes() -> dict[int, str]:
        asked.append(1)
        return {0: "pass"}

    stream = tasks.follow(
        read_run, log.fetch, RUN, Transcript(0), since=104, outcomes=outcomes, poll_s=0.01
    )
    log.events += held[:2]
    rows.append({"status": "running", "last_seq": 2})
    parts = [json.loads((await anext(stream))["data"]) for _ in range(2)]
    assert [p["id"] for p in parts] == ["attempt-0-1-head", "attempt-0-2"]
    assert "superseded" in parts[0]["html"] and parts[1]["parent"] == "transcript"
    assert "{not json" in parts[1]["html"] and 'id="attempt-0-2-turn-1"' in parts[1]["html"]
    log.events += held[2:]
    rows.append({"status": "ok", "last_seq": 3})
    rest = [await anext(stream) for _ in range(4)]
    assert [json.loads(e["data"]).get("id") for e in rest[:3]] == [
        "attempt-0-2-turn-1", "attempt-0-2-turn-2", "attempt-0-2-end",
    ]  # fmt: skip
    assert rest[3] == {"event": "end", "data": json.dumps({"status": "ok"})}
    # The verdict is drawn with the outcome the platform scored, read once for it.
    assert re.search(r'o-pass">pass<', json.loads(rest[2]["data"])["html"]) and asked == [1]
