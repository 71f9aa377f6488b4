"""The agents' attempts at a run's tasks: per (task index, trial) the current attempt,
its turns and tokens, whether and why it ended, and what the verifier said.

The rules (``Run`` asks before it records an agent event; this class knows nothing
of events):

* An attempt starts from the task's initial state. A crash mid-attempt (the sandbox
  lost, the orchestrator gone) reruns the trial as attempt + 1, at most
  ``MAX_ATTEMPTS`` in all; a trial whose last allowed attempt crashed is an error.
  The crashed attempt may have ended with ``reason="crashed"`` or not at all (its
  process died first), or ended but never reached its verifier (whose sandbox went
  with the crash): the next start supersedes it in every case. Only a verdict
  decides a trial.
* An event of an older attempt once a newer one has started is *ignored*, not
  refused: it is a late or redelivered message of work already thrown away, so its
  sender has nothing to fix; the log keeps the current attempt only.
* An event of an attempt not started, a turn or tool result after the attempt
  ended, a second end or verdict, a verdict before the end, or a start past the cap
  or after the trial was decided is *refused* (``AgentAttemptRefusedError``): its
  sender is wrong.
"""

from dataclasses import dataclass, field
from typing import Any

from benchwright_orchestrator.domain.errors import RunError

__all__ = ["MAX_ATTEMPTS", "AgentAttemptRefusedError", "Agents"]

# Attempts per trial: the first and two reruns after a crash.
MAX_ATTEMPTS = 3

# Why an attempt stopped when the platform, not the agent, failed: the trial reruns.
CRASHED = "crashed"


class AgentAttemptRefusedError(RunError):
    """An agent event the trial's attempts do not allow (``Agents``' rules)."""


@dataclass
class Agents:
    """Each trial's current attempt. State is plain JSON: snapshots store it as such.

    ``attempts`` maps ``"<index>:<trial>"`` to ``{attempt, turns, tokens, ended,
    reward, verifier_error}`` (``ended``: the end's reason, None while under way).
    """

    attempts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def attempt(self, index: int, trial: int) -> dict[str, Any] | None:
        """The trial's current attempt, None before its first."""
        return self.attempts.get(_key(index, trial))

    def is_current(self, index: int, trial: int, attempt: int) -> bool:
        """Whether an event of ``attempt`` is to be recorded: False for an older
        attempt's (ignored); refused when ``attempt`` has not started."""
        current = self.attempt(index, trial)
        number = current["attempt"] if current else 0
        if attempt < number:
            return False
        if attempt > number:
            raise AgentAttemptRefusedError(
                f"task {index} trial {trial}: attempt {attempt} has not started"
            )
        return True

    def check_start(self, index: int, trial: int, attempt: int) -> bool:
        """Whether ``attempt`` may start: True, False for an older or the same one
        (ignored: a redelivery), or refused (past the cap, or the trial verified)."""
        current = self.attempt(index, trial)
        number = current["attempt"] if current else 0
        if attempt <= number:
            return False
        where = f"task {index} trial {trial}"
        if attempt != number + 1:
            raise AgentAttemptRefusedError(f"{where}: attempt {attempt} after {number}")
        if attempt > MAX_ATTEMPTS:
            raise AgentAttemptRefusedError(f"{where}: past the {MAX_ATTEMPTS} attempts allowed")
        if current and current["verified"]:
            raise AgentAttemptRefusedError(f"{where}: decided ({current['ended']})")
        return True

    def check_turn(self, index: int, trial: int, attempt: int) -> bool:
        """A turn or tool result: recorded while the attempt is under way."""
        if not self.is_current(index, trial, attempt):
            return False
        current = self.attempts[_key(index, trial)]
        if current["ended"] is not None:
            raise AgentAttemptRefusedError(
                f"task {index} trial {trial}: attempt {attempt} ended ({current['ended']})"
            )
        return True

    def check_verdict(self, index: int, trial: int, attempt: int) -> bool:
        """The verifier's verdict: once, after the attempt ended (not crashed)."""
        if not self.is_current(index, trial, attempt):
            return False
        current = self.attempts[_key(index, trial)]
        where = f"task {index} trial {trial} attempt {attempt}"
        if current["ended"] in (None, CRASHED):
            raise AgentAttemptRefusedError(f"{where}: no verdict on an attempt that did not end")
        if current["verified"]:
            raise AgentAttemptRefusedError(f"{where}: verified already")
        return True

    # -- applying (the run's events call these once the checks passed) --------------
    def started(self, index: int, trial: int, attempt: int) -> None:
        self.attempts[_key(index, trial)] = {
            "attempt": attempt,
            "turns": 0,
            "tokens": 0,
            "ended": None,
            "verified": False,
            "reward": None,
            "verifier_error": None,
        }

    def turned(self, index: int, trial: int, turn: int, tokens: int) -> None:
        current = self.attempts[_key(index, trial)]
        current["turns"] = max(current["turns"], turn)
        current["tokens"] += tokens

    def ended(self, index: int, trial: int, reason: str) -> None:
        self.attempts[_key(index, trial)]["ended"] = reason

    def verified(
        self, index: int, trial: int, reward: float | None, error_type: str | None
    ) -> None:
        current = self.attempts[_key(index, trial)]
        current.update(verified=True, reward=reward, verifier_error=error_type)

    # -- reading --------------------------------------------------------------------
    def is_error(self, index: int, trial: int) -> bool:
        """The trial is an error: its last allowed attempt crashed, or the verifier
        could not score it."""
        current = self.attempt(index, trial)
        if current is None:
            return False
        exhausted = current["attempt"] >= MAX_ATTEMPTS and current["ended"] == CRASHED
        return exhausted or current["verifier_error"] is not None


def _key(index: int, trial: int) -> str:
    # JSON objects key by text: the snapshot stores this dictionary as it is.
    return f"{index}:{trial}"
