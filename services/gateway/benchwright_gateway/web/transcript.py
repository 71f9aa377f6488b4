"""An agent's attempts at one task, as a conversation, from the run log's agent events.

The task page reads the run's log (``GetRunEvents`` of the agent event types, see
``contracts.agent_events``) and keeps the entries of its task. Each attempt of each
trial is drawn on its own: a rerun after a crash (attempt + 1) does not hide the
attempt it replaced, it labels it superseded.

Every element the page draws (an attempt's header, a turn with its tool calls and
their results, the attempt's ending) remembers the log position that last changed
it, so the live stream sends only what changed since the page, or its last message,
was drawn (``Transcript.changed``), never the whole conversation again.

A page shows ``TURNS_SHOWN`` turns of an attempt from ``from_turn`` on, and links to
the turns before and after; the texts in the events are capped already (``TEXT_CAP``).
"""

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.contracts.agent_events import (
    AGENT_EVENT_TYPES,
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolCall,
    AgentToolResult,
    VerifierFinished,
)
from benchwright_shared.contracts.run_events import RunEvent
from benchwright_shared.run_log import parse_run_event, run_event_type

AGENT_EVENTS = sorted(run_event_type(kind) for kind in AGENT_EVENT_TYPES)
TURNS_SHOWN = 50
# The run log is read this many entries a request, and at most ``LOG_BUDGET`` entries
# for one page: past that the page says the transcript is cut.
LOG_PAGE = 500
LOG_BUDGET = 20_000

ATTEMPT_EVENTS = (
    AgentAttemptStarted, AgentModelTurn, AgentToolResult, AgentAttemptEnded, VerifierFinished,
)  # fmt: skip

Fetch = Callable[[GetRunEvents], Awaitable[RunEventsPage]]


@dataclass
class ToolStep:
    """One call a turn asked for, and what it returned once it has."""

    call: AgentToolCall
    result: AgentToolResult | None = None

    @property
    def arguments(self) -> str:
        """The arguments as the page shows them: indented JSON, or the raw text sent."""
        if self.call.raw_arguments is not None:
            return self.call.raw_arguments
        return json.dumps(self.call.arguments, indent=2, sort_keys=True, ensure_ascii=False)


@dataclass
class Turn:
    model: AgentModelTurn
    steps: list[ToolStep]
    seq: int


@dataclass
class Attempt:
    trial: int
    attempt: int
    # Where it came into the log, and where its header, its ending and its
    # "later turns" link last changed.
    created_seq: int
    head_seq: int
    end_seq: int = -1
    more_seq: int = -1
    started: AgentAttemptStarted | None = None
    turns: dict[int, Turn] = field(default_factory=dict)
    ended: AgentAttemptEnded | None = None
    verdict: VerifierFinished | None = None
    superseded: bool = False

    @property
    def key(self) -> str:
        """The id of its element on the page."""
        return f"attempt-{self.trial}-{self.attempt}"

    @property
    def running(self) -> bool:
        return self.ended is None and not self.superseded


@dataclass(frozen=True)
class Fragment:
    """An element to put in place on a live page: replace ``id``, or add it to ``parent``."""

    parent: str
    id: str
    part: str
    attempt: Attempt
    turn: Turn | None = None


class Transcript:
    """One task's attempts, built up entry by entry from the run's log."""

    def __init__(self, index: int, *, from_turn: int = 1, turns_shown: int = TURNS_SHOWN) -> None:
        self.index = index
        self.from_turn = from_turn
        self.turns_shown = turns_shown
        self.attempts: dict[tuple[int, int], Attempt] = {}
        self.task_id: str | None = None
        # The log position read up to, and whether the log was longer than one page reads.
        self.seq = -1
        self.cut = False

    # -- reading -----------------------------------------------------------------------
    def apply(self, event: RunEvent) -> None:
        self.seq = max(self.seq, event.seq)
        if event.type not in AGENT_EVENTS or event.data.get("index") != self.index:
            return
        entry = parse_run_event(event)  # the log's reader: an older entry never fails
        data = entry.data if entry is not None else None
        if not isinstance(data, ATTEMPT_EVENTS):
            return
        attempt = self._attempt(data.trial, data.attempt, event.seq)
        self.task_id = self.task_id or data.task_id
        if isinstance(data, AgentAttemptStarted):
            attempt.started, attempt.head_seq = data, event.seq
        elif isinstance(data, AgentModelTurn):
            steps = [ToolStep(call) for call in data.tool_calls]
            attempt.turns[data.turn] = Turn(data, steps, event.seq)
            if data.turn >= self.from_turn + self.turns_shown:
                attempt.more_seq = event.seq
        elif isinstance(data, AgentToolResult):
            self._result(attempt, data, event.seq)
        elif isinstance(data, AgentAttemptEnded):
            attempt.ended, attempt.end_seq = data, event.seq
        elif isinstance(data, VerifierFinished):
            attempt.verdict, attempt.end_seq = data, event.seq

    def _attempt(self, trial: int, number: int, seq: int) -> Attempt:
        found = self.attempts.get((trial, number))
        if found is None:
            found = self.attempts[(trial, number)] = Attempt(trial, number, seq, seq)
            for (other_trial, other), earlier in self.attempts.items():
                if other_trial == trial and other < number and not earlier.superseded:
                    earlier.superseded, earlier.head_seq = True, seq
        return found

    @staticmethod
    def _result(attempt: Attempt, result: AgentToolResult, seq: int) -> None:
        turn = attempt.turns.get(result.turn)
        if turn is None:  # a result without its turn: shown on a turn of its own
            placeholder = AgentModelTurn(
                task_id=result.task_id, index=result.index, trial=result.trial,
                attempt=result.attempt, turn=result.turn, messages_in_count=0,
            )  # fmt: skip
            turn = attempt.turns[result.turn] = Turn(placeholder, [], seq)
        step = next((s for s in turn.steps if s.call.id == result.call_id), None)
        if step is None:
            step = ToolStep(AgentToolCall(id=result.call_id, name=result.name))
            turn.steps.append(step)
        step.result, turn.seq = result, seq

    # -- drawing -----------------------------------------------------------------------
    def ordered(self) -> list[Attempt]:
        return [self.attempts[key] for key in sorted(self.attempts)]

    def shown(self, attempt: Attempt) -> list[Turn]:
        """The attempt's turns this page shows, in order."""
        return [attempt.turns[n] for n in sorted(attempt.turns) if self.in_window(n)]

    def in_window(self, turn: int) -> bool:
        return self.from_turn <= turn < self.from_turn + self.turns_shown

    def later(self, attempt: Attempt) -> int:
        """How many of its turns come after this page's."""
        return sum(1 for n in attempt.turns if n >= self.from_turn + self.turns_shown)

    def earlier(self, attempt: Attempt) -> int:
        return sum(1 for n in attempt.turns if n < self.from_turn)

    @property
    def running(self) -> bool:
        return any(a.running for a in self.attempts.values())

    def changed(self, since: int) -> list[Fragment]:
        """The elements changed after log position ``since``, each once, in page order."""
        found: list[Fragment] = []
        for attempt in self.ordered():
            key = attempt.key
            if attempt.created_seq > since:
                found.append(Fragment("transcript", key, "attempt", attempt))
                continue
            if attempt.head_seq > since:
                found.append(Fragment(key, f"{key}-head", "head", attempt))
            for turn in self.shown(attempt):
                if turn.seq > since:
                    number = turn.model.turn
                    found.append(
                        Fragment(f"{key}-turns", f"{key}-turn-{number}", "turn", attempt, turn)
                    )
            if attempt.more_seq > since:
                found.append(Fragment(key, f"{key}-more", "more", attempt))
            if attempt.end_seq > since:
                found.append(Fragment(key, f"{key}-end", "end", attempt))
        return found


async def read(
    fetch: Fetch, run_id: str, transcript: Transcript, *, budget: int = LOG_BUDGET
) -> bool:
    """Apply the log's agent entries after ``transcript.seq`` to it; False when the log
    could not be read. Stops after ``budget`` entries and marks the transcript cut."""
    while budget > 0:
        query = GetRunEvents(
            run_id=run_id,
            after_seq=transcript.seq if transcript.seq >= 0 else None,
            types=AGENT_EVENTS,
            limit=min(LOG_PAGE, budget),
            task_index=transcript.index,
        )
        page = await fetch(query)
        if page.problem is not None:
            return False
        apply_all(transcript, page.events)
        if page.scanned_seq is not None:  # past the other tasks' steps, not sent
            transcript.seq = max(transcript.seq, page.scanned_seq)
        budget -= len(page.events)
        if not page.has_more:
            return True
    transcript.cut = True
    return True


def apply_all(transcript: Transcript, events: Iterable[RunEvent]) -> None:
    for event in events:
        transcript.apply(event)
