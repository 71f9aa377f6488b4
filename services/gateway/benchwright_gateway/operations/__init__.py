"""The gateway's service layer: what a request asks, done without HTTP or the bus.

Routes (``api/``) parse, authorize and call one operation; an operation checks,
resolves and sends over the ports in ``benchwright_gateway.ports``, and raises
``Refused`` for what it turns down. ``launch`` starts runs (pinned, natural
language, replay, harness, fork), ``funds`` checks the money a launch needs,
``replay`` slices a parent's tasks, ``snapshots`` finds the rows a replay runs on,
``rescore`` scores a finished run's outputs again with another scorer,
``steering`` resumes, answers, changes and deletes runs, ``estimate`` prices a
launch before it runs, and ``runs`` finds the caller's run for them.
"""

from benchwright_shared.contracts.base import Problem
from benchwright_shared.refusal import Refused


def raise_for(problem: Problem | None, *, code: str | None = None) -> None:
    """Raise a service's answered problem as the caller's refusal; ``code`` is the one
    it gets when the service named none."""
    if problem is None:
        return
    refusal = Refused.from_problem(problem)
    refusal.code = refusal.code or code
    raise refusal


def key_reused() -> Refused:
    """409: an idempotency key came before with another body (launches, and the
    operations ``api.idempotency`` answers once)."""
    return Refused(
        409,
        "idempotency key reused",
        "this Idempotency-Key was used for a different request body",
        field="Idempotency-Key",
        code="idempotency_key_reused",
    )
