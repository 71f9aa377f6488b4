"""Per-task spend: what each task (and each trial of it) has cost, against its ceilings.

The scorer runtime names the task and trial of every call (``X-Benchwright-Task``,
``X-Benchwright-Trial``). The proxy meters each call anyway; here it also sums the
cost by task, so that it can

* stamp every answer with the call's cost and the task's spend so far (the runtime
  adds them up into the task's row), and
* refuse a task's next call once the task reached ``limits.task.cost`` (over all its
  trials) or the trial reached ``limits.attempt.cost``: the task ends ``err`` with
  ``limit_exceeded:task.cost`` and the run goes on. The call that crosses a ceiling
  finishes (its cost is only known once it has); the runtime fails the task then.

Spend is held in this copy's memory, for as long as the run is bound. A run whose
calls reach several copies has each copy hold its own part (a task can overshoot by
one call per copy), and a copy that restarted has forgotten what was spent before:
the run's own ceiling (``limits.run.cost``, from the ledger) still bounds the total.
"""

from dataclasses import dataclass

# A task index or trial outside these is not one a run could have: the call is
# metered to the run, not to a task.
MAX_TASK_INDEX = 10_000_000
MAX_TRIAL = 1000


@dataclass(frozen=True)
class Attribution:
    """The task and trial a call says it belongs to."""

    task: int
    trial: int


def attribution(task: str | None, trial: str | None) -> Attribution | None:
    """The call's task and trial from its headers; None when absent or not plausible."""
    if task is None or trial is None:
        return None
    try:
        index, attempt = int(task), int(trial)
    except ValueError:
        return None
    if not (0 <= index < MAX_TASK_INDEX and 0 <= attempt < MAX_TRIAL):
        return None
    return Attribution(index, attempt)


@dataclass(frozen=True)
class Spent:
    """A task's spend after a call: the task's over all trials, and this trial's."""

    task_micros: int
    attempt_micros: int


class TaskSpend:
    def __init__(self) -> None:
        # run id -> task index -> trial -> micro-dollars
        self._spent: dict[str, dict[int, dict[int, int]]] = {}

    def spent(self, run_id: str, at: Attribution) -> Spent:
        trials = self._spent.get(run_id, {}).get(at.task, {})
        return Spent(sum(trials.values()), trials.get(at.trial, 0))

    def add(self, run_id: str, at: Attribution, micros: int) -> Spent:
        trials = self._spent.setdefault(run_id, {}).setdefault(at.task, {})
        trials[at.trial] = trials.get(at.trial, 0) + micros
        return self.spent(run_id, at)

    def forget(self, run_id: str) -> None:
        self._spent.pop(run_id, None)


def reached(
    spent: Spent, ceilings: tuple[int | None, int | None], *, passed: bool = False
) -> str | None:
    """The ceiling ``spent`` has reached (``task.cost`` or ``attempt.cost``), if any; with
    ``passed``, only one it went over (a task at exactly its ceiling is within it)."""
    task_ceiling, attempt_ceiling = ceilings

    def beyond(amount: int, ceiling: int | None) -> bool:
        return ceiling is not None and (amount > ceiling if passed else amount >= ceiling)

    if beyond(spent.task_micros, task_ceiling):
        return "task.cost"
    if beyond(spent.attempt_micros, attempt_ceiling):
        return "attempt.cost"
    return None


def stamp(
    call_micros: int, usage: dict[str, int], spent: Spent | None, over: str | None
) -> dict[str, str]:
    """The headers an answer carries about what it cost (the runtime sums them per task)."""
    headers = {
        "x-benchwright-call-cost-micros": str(call_micros),
        "x-benchwright-call-prompt-tokens": str(int(usage.get("prompt_tokens") or 0)),
        "x-benchwright-call-completion-tokens": str(int(usage.get("completion_tokens") or 0)),
    }
    if spent is not None:
        headers["x-benchwright-task-cost-micros"] = str(spent.task_micros)
    if over is not None:
        headers["x-benchwright-limit-exceeded"] = over
    return headers
