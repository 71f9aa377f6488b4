"""The agents' attempts on a Run: the ``Agents`` part's rules, and the agent loop
recording through ``RunTrajectory`` into a real run log read back by ``run_log``."""

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from benchwright_orchestrator.agents.loop import AgentLimits, AttemptRef, run_agent
from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import (
    MAX_ATTEMPTS,
    AgentAttemptRefusedError,
    AgentRunEvent,
    Agents,
    Run,
    RunAlreadyFinishedError,
)
from benchwright_orchestrator.phases.trajectory import RunTrajectory
from benchwright_shared.api.runs import EventList
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolCall,
    AgentToolResult,
    VerifierFinished,
)
from benchwright_shared.contracts.run_events import RunLaunched
from benchwright_shared.run_log import parse_run_event
from tests.orchestrator.test_agent_loop import DirSandbox
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentModel, call, final

IDS: dict[str, Any] = {"task_id": "t0", "index": 0, "trial": 1}


def new_run() -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="pinned",
        benchmark_id="bm_x",
        benchmark_name="X",
        subset_id="sub_x",
        subset_slug="test",
        impl_id=None,
        sut={"model": "m", "provider": "p"},
        limit=None,
        metadata={},
        idempotency_key=None,
    )


def started(attempt: int = 1) -> AgentAttemptStarted:
    return AgentAttemptStarted(**IDS, attempt=attempt, agent="benchwright")


def turn(number: int, attempt: int = 1) -> AgentModelTurn:
    return AgentModelTurn(
        **IDS, attempt=attempt, turn=number, messages_in_count=2, input_tokens=30, output_tokens=5
    )


def ended(attempt: int = 1, reason: Any = "done") -> AgentAttemptEnded:
    return AgentAttemptEnded(**IDS, attempt=attempt, reason=reason, turns=1)


def verdict(attempt: int = 1, reward: float | None = 1.0) -> VerifierFinished:
    error = None if reward is not None else "verifier_timeout"
    return VerifierFinished(**IDS, attempt=attempt, reward=reward, error_type=error)


def record(run: Run, *steps: AgentRunEvent) -> list[bool]:
    return [run.record_agent_event(step) for step in steps]


def test_an_attempt_counts_its_turns_and_tokens_and_keeps_the_verdict() -> None:
    run = new_run()
    assert record(run, started(), turn(1), turn(2), ended(), verdict(reward=0.5)) == [True] * 5
    assert run.agents.attempt(0, 1) == {
        "attempt": 1,
        "turns": 2,
        "tokens": 70,
        "ended": "done",
        "verified": True,
        "reward": 0.5,
        "verifier_error": None,
    }
    assert not run.agents.is_error(0, 1) and run.agents.attempt(0, 0) is None
    names = [type(e).__name__ for e in run.collect_events()]
    assert names[1:] == [
        "AgentAttemptStarted",
        "AgentModelTurn",
        "AgentModelTurn",
        "AgentAttemptEnded",
        "VerifierFinished",
    ]


def test_a_crash_reruns_the_trial_and_past_the_cap_it_is_an_error() -> None:
    run = new_run()
    record(run, started(1), turn(1))  # crashed: its process died before any end
    assert record(run, started(2), turn(1, attempt=2), ended(2, "crashed")) == [True] * 3
    assert run.agents.attempt(0, 1)["attempt"] == 2  # type: ignore[index]
    assert not run.agents.is_error(0, 1)
    record(run, started(3), ended(3, "crashed"))
    assert MAX_ATTEMPTS == 3 and run.agents.is_error(0, 1)
    with pytest.raises(AgentAttemptRefusedError, match="past the 3 attempts"):
        run.record_agent_event(started(4))


def test_an_older_attempts_late_step_is_ignored_not_recorded() -> None:
    run = new_run()
    record(run, started(1), started(2))
    run.collect_events()
    # Late or redelivered: work already thrown away, nothing for its sender to fix.
    assert (
        record(run, turn(3, attempt=1), ended(1), verdict(1), started(1), started(2)) == [False] * 5
    )
    assert run.collect_events() == []
    assert run.agents.attempt(0, 1)["turns"] == 0  # type: ignore[index]


def test_steps_the_attempt_does_not_allow_are_refused() -> None:
    run = new_run()
    with pytest.raises(AgentAttemptRefusedError, match="has not started"):
        run.record_agent_event(turn(1))
    with pytest.raises(AgentAttemptRefusedError, match="attempt 2 after 0"):
        run.record_agent_event(started(2))
    record(run, started(), turn(1))
    with pytest.raises(AgentAttemptRefusedError, match="did not end"):
        run.record_agent_event(verdict())
    record(run, ended())
    with pytest.raises(AgentAttemptRefusedError, match=r"ended \(done\)"):
        run.record_agent_event(turn(2))
    with pytest.raises(AgentAttemptRefusedError, match="ended"):
        run.record_agent_event(ended())
    record(run, verdict(reward=None))
    assert run.agents.is_error(0, 1)  # no reward: an error, not a 0
    with pytest.raises(AgentAttemptRefusedError, match="verified already"):
        run.record_agent_event(verdict())
    with pytest.raises(AgentAttemptRefusedError, match=r"decided \(done\)"):
        run.record_agent_event(started(2))  # a verdict decides the trial


def test_an_attempt_that_ended_but_was_never_verified_reruns() -> None:
    # The orchestrator died between the agent's end and the verifier: the sandbox the
    # agent left went with it, so the trial starts again from the task's initial state.
    run = new_run()
    record(run, started(1), turn(1), ended(1))
    assert record(run, started(2)) == [True]
    assert run.agents.attempt(0, 1)["ended"] is None  # type: ignore[index]


def test_a_finished_run_takes_no_agent_step() -> None:
    run = new_run()
    run.finish(status="ok", duration_ms=1, summary={})
    with pytest.raises(RunAlreadyFinishedError):
        run.record_agent_event(started())


def test_the_agents_part_round_trips_through_a_snapshot() -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    record(run, started(), turn(1))
    app.save(run)
    app.take_snapshot(run.id)
    loaded: Run = app.repository.get(run.id)
    assert isinstance(loaded.agents, Agents) and loaded.agents == run.agents


# -- the agent loop writing the run's log ----------------------------------------------


class AppStore:
    """The ``RunStore`` port straight over an in-memory ``RunsApplication``."""

    def __init__(self, app: RunsApplication) -> None:
        self.app = app
        self.saves = 0

    async def save(self, run: Run) -> None:
        self.saves += 1
        self.app.save(run)

    async def copy_cell(self, run: Run, source_id: str, phase: str, types: tuple[str, ...]) -> bool:
        return False

    async def inherit_scorer(self, run: Run) -> None:
        return None

    async def recorded_outputs(self, run: Run) -> dict[tuple[int, int], Any]:
        return {}


SOLVE = ScriptBook(
    {
        "hello": [
            call("write_file", path="hello.txt", content="hi\n"),
            call("shell", command="cat hello.txt"),
            final("wrote hello.txt"),
        ]
    }
)


async def test_the_agent_loop_writes_its_attempt_into_the_run_log(tmp_path: Path) -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    app.save(run)
    store = AppStore(app)
    trajectory = RunTrajectory(run, store)
    end = await run_agent(
        "Write hello.txt saying hi",
        attempt=AttemptRef(task_id="t0", index=0, trial=1, model="m@fake"),
        model=ScriptedAgentModel(SOLVE),
        sandbox=DirSandbox(tmp_path),
        trajectory=trajectory,
        limits=AgentLimits(max_turns=10),
    )
    assert end.reason == "done" and end.turns == 3
    await trajectory.record(VerifierFinished(**IDS, reward=1.0, duration_ms=5))
    assert (tmp_path / "app" / "hello.txt").read_text() == "hi\n"

    page, more, _ = app.run_events(run.run_id)
    assert not more
    entries = [parse_run_event(e) for e in page]
    log = [(e.seq, type(e.data)) for e in entries if e is not None]
    assert log == [
        (0, RunLaunched),
        (1, AgentAttemptStarted),
        (2, AgentModelTurn),
        (3, AgentToolResult),
        (4, AgentModelTurn),
        (5, AgentToolResult),
        (6, AgentModelTurn),
        (7, AgentAttemptEnded),
        (8, VerifierFinished),
    ]
    # The start; each turn with its tool results (the last with the end); the verdict.
    assert store.saves == 5
    typed = [e.data for e in entries if e is not None]
    first_turn = typed[2]
    assert isinstance(first_turn, AgentModelTurn)
    (write,) = first_turn.tool_calls
    assert isinstance(write, AgentToolCall)  # built from the stored dict
    assert (write.name, write.arguments) == ("write_file", {"path": "hello.txt", "content": "hi\n"})
    shell = typed[5]
    assert isinstance(shell, AgentToolResult) and shell.exit_code == 0 and "hi" in shell.output
    last = typed[7]
    assert isinstance(last, AgentAttemptEnded) and (last.reason, last.turns) == ("done", 3)
    assert last.tokens == end.tokens
    loaded: Run = app.repository.get(run.id)
    assert loaded.agents.attempt(0, 1) == {
        "attempt": 1,
        "turns": 3,
        "tokens": end.tokens,
        "ended": "done",
        "verified": True,
        "reward": 1.0,
        "verifier_error": None,
    }
    # The typed listing a reader asks for (``types=AgentModelTurn``) holds only the turns.
    turns, _, _ = app.run_events(run.run_id, types=["AgentModelTurn"])
    assert [e.seq for e in turns] == [2, 4, 6]
    # As the gateway answers it (``EventList``, JSON) and a client reads it back, typed.
    listing = EventList.model_validate_json(
        EventList.model_validate(
            {"data": [e.model_dump(mode="json") for e in turns]}
        ).model_dump_json()
    )
    read = [parse_run_event(e.model_dump(mode="json")) for e in listing.data]
    assert [type(e.data) for e in read if e is not None] == [AgentModelTurn] * 3
    again = read[0]
    assert again is not None and isinstance(again.data, AgentModelTurn)
    assert again.data.tool_calls == [write]


async def test_a_late_step_of_a_superseded_attempt_is_not_saved(tmp_path: Path) -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    app.save(run)
    store = AppStore(app)
    trajectory = RunTrajectory(run, store)
    await trajectory.record(started(1))
    await trajectory.record(started(2))
    await trajectory.record(turn(1, attempt=1))
    assert store.saves == 2
    page, _, _ = app.run_events(run.run_id)
    assert [e.type for e in page] == ["RunLaunched", "AgentAttemptStarted", "AgentAttemptStarted"]


async def test_a_task_reads_its_own_steps_and_moves_past_the_others() -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    app.save(run)
    trajectory = RunTrajectory(run, AppStore(app))
    other = {**IDS, "task_id": "t1", "index": 1}
    await trajectory.record(started(1))  # seq 1
    await trajectory.record(AgentAttemptStarted(**other, agent="benchwright"))  # seq 2
    await trajectory.record(turn(1))  # seq 3
    await trajectory.record(AgentAttemptEnded(**other, reason="done", turns=0))  # seq 4
    await trajectory.record(AgentAttemptStarted(**{**other, "trial": 2}, agent="benchwright"))

    mine, more, scanned = app.run_events(run.run_id, task_index=0)
    assert [(e.seq, e.type) for e in mine] == [(1, "AgentAttemptStarted"), (3, "AgentModelTurn")]
    # Through the end of the log: a reader starts after seq 5 next time, not after 3.
    assert (more, scanned) == (False, 5)
    theirs, more, scanned = app.run_events(run.run_id, task_index=1, limit=1)
    assert [e.seq for e in theirs] == [2] and more and scanned == 3  # 3 is not its
    rest, more, scanned = app.run_events(run.run_id, after_seq=2, task_index=1)
    assert [e.seq for e in rest] == [4, 5] and not more and scanned == 5
    assert app.run_events(run.run_id, after_seq=5, task_index=0) == ([], False, None)


async def test_a_step_recorded_unsaved_goes_with_the_next_save_or_on_its_own() -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    app.save(run)
    store = AppStore(app)
    trajectory = RunTrajectory(run, store, unsaved_at_most_s=0.05)
    await trajectory.record(started(1))
    await trajectory.record(turn(1, attempt=1), save=False)
    assert store.saves == 1
    await trajectory.record(turn(2, attempt=1))  # saves the waiting step with it
    assert store.saves == 2
    await asyncio.sleep(0.1)
    assert store.saves == 2  # nothing was left waiting: no save of its own
    await trajectory.record(turn(3, attempt=1), save=False)
    page, _, _ = app.run_events(run.run_id)
    assert [e.type for e in page][-1] == "AgentModelTurn" and len(page) == 4
    await asyncio.sleep(0.1)  # a long tool call: the turn is saved on its own meanwhile
    assert store.saves == 3
    page, _, _ = app.run_events(run.run_id)
    assert [e.type for e in page] == [
        "RunLaunched",
        "AgentAttemptStarted",
        "AgentModelTurn",
        "AgentModelTurn",
        "AgentModelTurn",
    ]
